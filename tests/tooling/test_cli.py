"""The ``plait`` command line, run in subprocesses: exit codes, ``show``, ``cache``."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = textwrap.dedent("""
    import plait.numpy as pnp

    def loss(w, x):
        return pnp.sum(pnp.tanh(x @ w) ** 2)

    def other(x):
        return pnp.exp(x) + 1.0

    NOT_A_FUNCTION = 3
""")


def plait_cli(*args, cache=None, env=None):
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + ROOT)
    if cache is not None:
        e["PLAIT_CACHE_DIR"] = str(cache)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "plait", *args], capture_output=True,
                          text=True, env=e, cwd=ROOT, timeout=120)


@pytest.fixture
def program(tmp_path):
    p = tmp_path / "prog.py"
    p.write_text(PROGRAM)
    return p


def test_help_and_usage_errors(program):
    r = plait_cli("--help")
    assert r.returncode == 0
    for cmd in ("doctor", "show", "cache", "bench", "explore", "exit status"):
        assert cmd in r.stdout
    assert plait_cli().returncode == 2                       # no command
    assert plait_cli("frobnicate").returncode == 2
    r = plait_cli("show", f"{program}:nope", "--args", "f32[3]")
    assert r.returncode == 2 and "loss" in r.stderr and "other" in r.stderr
    r = plait_cli("show", f"{program}:NOT_A_FUNCTION")
    assert r.returncode == 2 and "not a function" in r.stderr
    r = plait_cli("show", "missing.py:f")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = plait_cli("show", f"{program}:loss", "--args", "f32[8,4], q32[2]")
    assert r.returncode == 2 and "bad argument spec" in r.stderr
    r = plait_cli("show", f"{program}:loss", "--args", "f32[8,4]", "--stage", "bogus")
    assert r.returncode == 2
    r = plait_cli("cache", "prune", "--max-size", "lots")
    assert r.returncode == 2 and "--max-size" in r.stderr


def test_show_stages_and_failures(program, tmp_path):
    r = plait_cli("show", f"{program}:loss", "--args", "f32[8,4], f32[2,8]",
                  "--stage", "kernels", cache=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("k0: dot_general, tanh")
    r = plait_cli("show", f"{program}:loss", "--args", "f32[8,4], f32[2,8]", "--grad",
                  "--stage", "all", cache=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    for stage in ("graph", "kernels", "tile", "stripe", "stripe-opt", "c"):
        assert f"==== {stage} ====" in r.stdout
    assert "graph(a:f32[8,4], b:f32[2,8])" in r.stdout and "int64_t k0(void **bufs)" in r.stdout
    # the user's program fails (shapes do not match): status 1, one line naming the line
    r = plait_cli("show", f"{program}:loss", "--args", "f32[8,4], f32[3,3]")
    assert r.returncode == 1
    assert "prog.py:5" in r.stderr and "Traceback" not in r.stderr


def test_cache_info_hits_prune_clear(tmp_path, monkeypatch):
    import numpy as np

    import plait
    import plait.numpy as pnp
    from plait.runtime import kernel_cache
    cache = tmp_path / "cache"
    monkeypatch.setattr(plait.config, "cache_dir", str(cache))

    def run(scale):
        """A fresh jit of a program per scale; the in-memory index is forgotten first, so
        an existing entry is loaded from disk (a hit), as by a new process."""
        kernel_cache.clear_index()
        f = plait.jit(lambda x: pnp.sin(x) * scale)
        x = np.arange(5.0)
        np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * scale)

    def info():
        r = plait_cli("cache", "info", "--entries", cache=cache)
        assert r.returncode == 0, r.stderr
        return {k.strip(): v.strip() for k, v in (line.split(" : ", 1) for line in
                r.stdout.splitlines() if " : " in line)}

    assert info()["entries"] == "0"
    run(2.0)                       # builds the entry
    run(2.0)                       # loads it from disk: a hit
    run(2.0)
    run(3.0)                       # a second program: a second entry
    i = info()
    assert i["entries"] == "2" and i["hits"].startswith("2 ")
    # the size cap: building a third entry prunes the least recently used ones
    monkeypatch.setattr(plait.config, "cache_max_size", 1)
    run(4.0)
    assert len([n for n in os.listdir(cache) if n.endswith(".so")]) == 1
    monkeypatch.setattr(plait.config, "cache_max_size", 1 << 30)
    run(4.0)
    i = info()
    assert i["entries"] == "1" and i["hits"].startswith("1 ")   # the newest was kept
    r = plait_cli("cache", "prune", "--max-size", "1G", cache=cache)
    assert r.returncode == 0 and r.stdout.startswith("removed 0 entries")
    r = plait_cli("cache", "prune", "--max-size", "0", cache=cache)
    assert r.returncode == 0 and r.stdout.startswith("removed 1 entries")
    run(5.0)
    r = plait_cli("cache", "clear", cache=cache)
    assert r.returncode == 0 and r.stdout.startswith("removed 1 entries")
    assert not [n for n in os.listdir(cache) if n.endswith((".so", ".use"))]


def test_bench_passes_options_and_status():
    r = plait_cli("bench", "--only", "nonsense")
    assert r.returncode == 2 and "unknown workload" in r.stderr
    r = plait_cli("bench", "--only", "w7", "--without", "numpy")
    assert r.returncode == 2 and "--without takes jax and torch" in r.stderr


def test_doctor_config_and_console_script_entry():
    r = plait_cli("doctor")
    assert r.returncode == 0 and "C compiler" in r.stdout
    r = plait_cli("config", env={"PLAIT_CACHE_MAX_SIZE": "3M", "PLAIT_LOG_COMPILES": "1"})
    assert r.returncode == 0
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()}
    assert lines["PLAIT_CACHE_MAX_SIZE"].endswith(f"= {3 << 20}")
    assert "plait.config.log_compiles" in lines["PLAIT_LOG_COMPILES"]
    assert lines["PLAIT_LOG_COMPILES"].endswith("= True")
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        assert tomllib.load(f)["project"]["scripts"]["plait"] == "plait.cli:main"
