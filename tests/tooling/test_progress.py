"""Progress on long work: a compile's status line on a terminal only, per-kernel compile
times under PLAIT_LOG_COMPILES, the progress bar, the digits example's pictures."""
import logging
import os
import pty
import subprocess
import sys

import numpy as np

import plait
import plait.numpy as pnp
from plait.runtime import progress

import headless_chromium

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import numpy as np, plait, plait.numpy as pnp
from plait.runtime import progress
progress.DELAY = 0.0            # show at once (a real compile shows after 1 s)
def f(x):
    for i in range(4):
        x = pnp.sort(pnp.tanh(x @ x.T), axis=-1)   # kernels between host steps
    return x
plait.jit(f)(np.ones((4, 4)))
"""


def _run_child(tmp_path, tty: bool) -> bytes:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + ROOT, PLAIT_CACHE_DIR=str(tmp_path / "cache"))
    if not tty:
        r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, env=env,
                           cwd=ROOT, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-c", CHILD], stderr=slave,
                         stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:                   # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(timeout=120) == 0, out
    return out


def test_compile_progress_on_a_terminal_only(tmp_path):
    shown = _run_child(tmp_path, tty=True).decode()
    assert "plait: compiling f: " in shown
    assert "kernels 4/4" in shown and "C compiler" in shown
    assert "plait: compiled f: 4 kernels in" in shown
    quiet = _run_child(tmp_path, tty=False).decode()
    assert "plait: compil" not in quiet and "\r" not in quiet


def test_log_compiles_reports_each_kernel(caplog, tmp_path):
    def g(x):
        y = pnp.sort(pnp.exp(x) * 3.0)
        return pnp.sum(pnp.sin(y) + 1.0)
    old = plait.config.log_compiles, plait.config.cache_dir
    plait.config.log_compiles, plait.config.cache_dir = True, str(tmp_path)   # a cold cache
    try:
        with caplog.at_level(logging.WARNING, logger="plait"):
            plait.jit(g)(np.linspace(0, 1, 7))
    finally:
        plait.config.log_compiles, plait.config.cache_dir = old
    kernel_lines = [r.getMessage() for r in caplog.records
                    if r.getMessage().startswith("plait: kernel ")]
    assert len(kernel_lines) == 2
    assert kernel_lines[0].startswith("plait: kernel k0 (exp, broadcast_in_dim, mul): "
                                      "lowered, optimized and rendered in ")
    assert kernel_lines[0].endswith(" ms")
    assert any(r.getMessage().startswith("plait: C compiler built ") for r in caplog.records)


def test_bar(capsys):
    progress.bar(3, 10, "w3", force=True)
    progress.bar(10, 10, "done", force=True)
    err = capsys.readouterr().err
    assert "[#########.....................] 3/10 w3" in err
    assert err.endswith("[##############################] 10/10 done\n")
    progress.bar(1, 2)                    # not a terminal: nothing
    assert capsys.readouterr().err == ""


def _result():
    rng = np.random.default_rng(0)
    return {"accuracy": 0.9, "curve": [(1, 2.3), (11, 1.2), (21, 0.4)],
            "misclassified": (rng.random((7, 8, 8)), np.arange(7), (np.arange(7) + 1) % 10)}


def test_digits_pictures(tmp_path, capsys, monkeypatch):
    from plait.examples.digits import write_pictures
    paths = write_pictures(_result(), str(tmp_path / "out"))
    assert [os.path.basename(p) for p in paths] == ["training_curve.png", "misclassified.png"]
    for p in paths:
        with open(p, "rb") as f:
            img = headless_chromium.read_png(f.read())
        assert img.shape[0] > 200 and img.shape[1] > 300
        assert (img[..., :3] < 100).any()              # something is drawn
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # as if not installed
    assert write_pictures(_result(), str(tmp_path / "none")) == []
    assert "pip install matplotlib" in capsys.readouterr().out
    assert not os.path.exists(tmp_path / "none")
