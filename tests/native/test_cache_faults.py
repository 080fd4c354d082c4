"""Fault injection for the kernel cache and the C toolchain (issue 21, defects 4, 5, 7).

Every test uses its own cache directory and checks results against NumPy. Faults:
broken entries (truncated, corrupt, unsealed, empty, a directory in place, a sealed
object that does not load), unusable cache directories (a file in place, an unusable
HOME, read-only, full, missing), real read-only, noexec and full filesystems (tmpfs in a
private mount namespace, where the machine allows one), a full temporary directory, a
compiler that fails for lack of space or on the code, a compiler without OpenMP, no
compiler, SIGINT during a compile, a writer/reader race across processes, and two
processes of eight threads compiling the same and different programs at once.
"""
from __future__ import annotations

import collections
import errno
import glob
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.codegen import toolchain
from plait.errors import BuildEnvironmentError, CacheFallbackWarning, CompileError
from plait.runtime import kernel_cache, metrics

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(toolchain.find_toolchain() is None,
                                reason="the native backend needs a C compiler")


def _fn(v):
    return pnp.tanh(v * 3.0) + 1.0


X = np.linspace(-2, 2, 7).astype(np.float32)


def _run_fresh(x=X) -> int:
    """Run a new jit of ``_fn`` on ``x`` natively, check it, return how many builds it took."""
    before = metrics.get("cc_invocations")
    fresh = lambda v: _fn(v)     # noqa: E731 - a new function object: jit's process-wide
    out = np.asarray(plait.jit(fresh, backend="native")(x))   # reuse of wrappers misses
    np.testing.assert_allclose(out, np.tanh(x * 3) + 1, rtol=1e-6, atol=1e-6)
    return int(metrics.get("cc_invocations") - before)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache directory and fresh kernel-cache state for this test, after every
    background build an earlier test started (its builds would count as this test's)."""
    from plait.backends.native.tiered import wait_all
    wait_all()
    monkeypatch.setattr(kernel_cache, "_FALLBACK", {})
    monkeypatch.setattr(kernel_cache, "_INDEX", collections.OrderedDict())
    monkeypatch.setattr(kernel_cache, "_SWEPT", set())
    d = tmp_path / "cache"
    monkeypatch.setattr(plait.config, "cache_dir", str(d))
    return d


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _directory(path: str) -> None:
    os.makedirs(os.path.join(path, "inside"))
    _write(os.path.join(path, "inside", "f"), b"x")


def _sealed_garbage(path: str) -> None:
    _write(path, b"not a shared object " * 50)
    kernel_cache.seal(path)            # its digest matches, yet it cannot be loaded


BREAKS = {
    "truncated": lambda good, p: _write(p, good[:len(good) // 2]),
    "corrupt": lambda good, p: _write(p, good[:200] + bytes([good[200] ^ 0xFF]) + good[201:]),
    "unsealed": lambda good, p: _write(p, good[:-(len(kernel_cache._MAGIC) + 64)]),
    "empty": lambda good, p: _write(p, b""),
    "directory": lambda good, p: _directory(p),
    "unloadable": lambda good, p: _sealed_garbage(p),
}


def test_broken_entries_are_rebuilt_and_builds_are_warning_free(cache, monkeypatch):
    stderr = []
    run = toolchain._run

    def recording_run(cmd, tmpdir=None):
        r = run(cmd, tmpdir)
        stderr.append(r.stderr)
        return r
    monkeypatch.setattr(toolchain, "_run", recording_run)
    assert _run_fresh() == 1
    assert stderr and all(s == "" for s in stderr), stderr      # no _POSIX_C_SOURCE noise
    (good_path,) = glob.glob(str(cache / "*.so"))
    with open(good_path, "rb") as f:
        good = f.read()
    assert _run_fresh() == 0                     # a new jit finds the entry
    for kind, brk in BREAKS.items():
        # a fresh directory per kind: a path this process has loaded stays loaded
        d = cache.parent / kind
        d.mkdir()
        monkeypatch.setattr(plait.config, "cache_dir", str(d))
        kernel_cache.clear_index()
        p = str(d / os.path.basename(good_path))
        brk(good, p)
        assert _run_fresh() == 1, kind
        assert os.path.isfile(p) and kernel_cache._sealed(p), kind
        entry = os.path.basename(p)              # the entry and its use record, nothing else
        assert sorted(os.listdir(d)) == [entry, entry[:-3] + ".use"], (kind, os.listdir(d))


def test_in_memory_index_is_bounded(cache, monkeypatch):
    monkeypatch.setattr(plait.config, "kernel_cache_size", 2)
    for n in range(3, 7):
        _run_fresh(np.linspace(-1, 1, n).astype(np.float32))
    assert kernel_cache.index_size() == 2
    assert not [m for m in sys.modules if m.startswith("plait_k_")]   # no second index
    assert _run_fresh(np.linspace(-1, 1, 6).astype(np.float32)) == 0   # recent: kept
    assert _run_fresh(np.linspace(-1, 1, 3).astype(np.float32)) == 0   # evicted: from disk


def _enospc_linker(real):
    def run(cmd, tmpdir=None):
        if tmpdir and "-O3" in cmd and tmpdir.startswith(str(plait.config.cache_dir)):
            return subprocess.CompletedProcess(cmd, 1, "", "/usr/bin/ld: final link failed: "
                                               "No space left on device\ncollect2: error: ld "
                                               "returned 1 exit status\n")
        return real(cmd, tmpdir)
    return run


def _fail_under(d: str, err: int, real):
    def f(*a, **kw):
        target = kw.get("dir") or (a[0] if a and isinstance(a[0], str) else "")
        if str(target).startswith(d):
            raise OSError(err, os.strerror(err), str(target))
        return real(*a, **kw)
    return f


def _case_file_in_place(cache, monkeypatch):
    cache.parent.mkdir(exist_ok=True)
    _write(str(cache), b"a file where the cache directory should be")
    return "exists", 1


def _case_home_unusable(cache, monkeypatch):
    home = cache.parent / "home-is-a-file"
    _write(str(home), b"")
    monkeypatch.setattr(plait.config, "cache_dir", None)
    monkeypatch.delenv("PLAIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    return "not a directory", 1


def _case_read_only(cache, monkeypatch):
    # we may be root (chmod does not stop root): the file system's answer is simulated
    monkeypatch.setattr(kernel_cache.tempfile, "mkdtemp",
                        _fail_under(str(cache), errno.EROFS, kernel_cache.tempfile.mkdtemp))
    return "read-only file system", 1


def _case_full_on_write(cache, monkeypatch):
    monkeypatch.setattr(kernel_cache, "seal", _fail_under(str(cache), errno.ENOSPC,
                                                          kernel_cache.seal))
    return "no space left on device", 2      # built, could not be kept: built again


def _case_full_linker(cache, monkeypatch):
    monkeypatch.setattr(toolchain, "_run", _enospc_linker(toolchain._run))
    return "no space left on device", 1


@pytest.mark.parametrize("case", [_case_file_in_place, _case_home_unusable, _case_read_only,
                                  _case_full_on_write, _case_full_linker],
                         ids=lambda c: c.__name__[6:])
def test_unusable_cache_dir_falls_back_to_a_temporary_one_with_one_warning(
        cache, monkeypatch, case):
    cause, builds = case(cache, monkeypatch)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert _run_fresh() == builds
        assert _run_fresh(X[:3]) == 1           # a second compile warns no more
    msgs = [str(m.message) for m in w if issubclass(m.category, CacheFallbackWarning)]
    assert len(msgs) == 1, msgs
    assert "PLAIT_CACHE_DIR" in msgs[0] and cause in msgs[0].lower(), msgs[0]
    (tmp,) = kernel_cache._FALLBACK.values()
    assert len(glob.glob(os.path.join(tmp, "*.so"))) == 2


def test_missing_cache_dir_is_created_private(cache):
    nested = cache / "a" / "b"
    plait.config.cache_dir = str(nested)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheFallbackWarning)
        assert _run_fresh() == 1
    assert oct(nested.stat().st_mode & 0o777) == "0o700"
    assert len(glob.glob(str(nested / "*.so"))) == 1


def test_failing_compiler_is_reported_as_what_it_is(cache, monkeypatch, tmp_path):
    # out of space everywhere: the linker's own line, no "plait bug", no raw OSError
    def full(cmd, tmpdir=None):
        return subprocess.CompletedProcess(cmd, 1, "", "cc1: warning: noise\n/usr/bin/ld: final "
                                           "link failed: No space left on device\n")
    monkeypatch.setattr(toolchain, "_run", full)
    with pytest.raises(BuildEnvironmentError) as e, pytest.warns(CacheFallbackWarning):
        plait.jit(_fn, backend="native")(X)
    msg = str(e.value)
    assert "final link failed: No space left on device" in msg and "plait bug" not in msg
    assert "PLAIT_CACHE_DIR" in msg and str(cache) in msg and "temporary directory" in msg
    # a compiler that rejects the code: a plait bug, its first error line up front
    monkeypatch.setattr(toolchain, "_run", lambda cmd, tmpdir=None: subprocess.CompletedProcess(
        cmd, 1, "", "In file included from k.c:1:\nk.c:9:3: error: 'x' undeclared\n"))
    monkeypatch.setattr(kernel_cache, "_FALLBACK", {})
    with pytest.raises(CompileError) as e:
        plait.jit(_fn, backend="native")(X[:2])
    assert not isinstance(e.value, BuildEnvironmentError)
    assert "plait bug" in str(e.value) and "rejected generated code" in str(e.value)
    assert str(e.value).splitlines()[0].endswith("k.c:9:3: error: 'x' undeclared")
    assert not kernel_cache._FALLBACK               # a code error is no reason to move


def test_the_compiler_probe_is_remembered_across_processes(cache, monkeypatch):
    """A conclusive probe's answer is kept in the cache directory: the next process's
    probe runs no compiler and finds the same toolchain; a compiler whose driver changed
    (another stamp) is probed again; a rejected build forgets every answer."""
    runs = []
    real = toolchain._run

    def counting(cmd, tmpdir=None):
        runs.append(cmd)
        return real(cmd, tmpdir)
    monkeypatch.setattr(toolchain, "_run", counting)
    first = toolchain._find()
    assert first is not None and len(runs) >= 2           # --version, then the probe
    assert (cache / toolchain.PROBE_FILE).exists()
    runs.clear()
    again = toolchain._find()                              # as a new process would
    assert runs == [] and again == first
    stamp = toolchain._stamp(first.cc)
    monkeypatch.setattr(toolchain, "_stamp", lambda cc: stamp + "-rebuilt")
    assert toolchain._find() == first and len(runs) >= 2
    monkeypatch.setattr(toolchain, "_run", lambda cmd, tmpdir=None: subprocess.CompletedProcess(
        cmd, 1, "", "k.c:1:1: error: 'x' undeclared\n"))
    with pytest.raises(CompileError):
        toolchain.build_shared_object("int f(void) { return x; }", str(cache / "k.so"), first)
    assert not (cache / toolchain.PROBE_FILE).exists()


def test_a_corrupt_probe_file_is_probed_over(cache):
    cache.mkdir(parents=True, exist_ok=True)
    _write(str(cache / toolchain.PROBE_FILE), b"{not json")
    tc = toolchain._find()
    assert tc is not None and tc == toolchain.find_toolchain()
    assert toolchain._read_probes()[toolchain._stamp(tc.cc)] == [tc.version, tc.openmp]


# -- child processes ---------------------------------------------------------------
_PRELUDE = textwrap.dedent("""
    import os, sys, warnings
    import numpy as np, plait, plait.numpy as pnp
    warnings.simplefilter("always")
    def fn(v):
        return pnp.tanh(v * 3.0) + 1.0
    X = np.linspace(-2, 2, 7).astype(np.float32)
    def check(n=7):
        x = X[:n]
        out = np.asarray(plait.jit(fn)(x))
        np.testing.assert_allclose(out, np.tanh(x * 3) + 1, rtol=1e-6, atol=1e-6)
""")


def _env(cache: str, **extra) -> dict:
    env = dict(os.environ, PLAIT_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join([os.path.join(REPO, "src"), os.environ.get("PYTHONPATH", "")]))
    env.pop("PLAIT_BACKEND", None)
    env.update(extra)
    return env


def _child(code: str, cache: str, timeout: float = 120, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
                          env=_env(cache, **extra), capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def _script(path, body: str) -> str:
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + textwrap.dedent(body))
    os.chmod(path, 0o755)
    return str(path)


def test_compiler_without_openmp_runs_serially_with_one_warning(tmp_path):
    cc = _script(tmp_path / "cc-no-openmp", f"""\
        for a in "$@"; do case "$a" in -fopenmp*)
          echo "cc: error: unsupported option '$a'" >&2; exit 1;; esac; done
        exec {shutil.which("cc") or shutil.which("gcc")} "$@"
    """)
    r = _child("""
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            check(); check(3)
        from plait.errors import ToolchainWarning
        msgs = [str(m.message) for m in w if issubclass(m.category, ToolchainWarning)]
        assert len(msgs) == 1 and "OpenMP" in msgs[0] and "serially" in msgs[0], msgs
        from plait.__main__ import doctor
        print(doctor())
    """,
               str(tmp_path / "cache"), CC=cc)
    assert r.returncode == 0, r.stderr
    assert "OpenMP     : no" in r.stdout


def test_unwritable_tmpdir_does_not_break_builds(tmp_path):
    bad = tmp_path / "tmp-is-a-file"
    _write(str(bad), b"")
    r = _child("""
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            check()
        assert not [m for m in w if "plait" in str(m.message)], [str(m.message) for m in w]
        from plait.codegen.toolchain import find_toolchain
        assert find_toolchain().openmp
        print("OK")
    """, str(tmp_path / "cache"), TMPDIR=str(bad))
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


def test_no_compiler_falls_back_to_interp_with_one_warning(tmp_path):
    r = _child("""
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            check(); check(3)
        msgs = [str(m.message) for m in w if "C compiler" in str(m.message)]
        assert len(msgs) == 1, msgs
        print(plait.config.resolved_backend())
    """, str(tmp_path / "cache"), PATH=str(tmp_path), CC="")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "interp"


def test_sigint_during_a_compile_leaves_the_cache_clean(tmp_path):
    """The first optimized compile holds until this test has sent SIGINT (or 60 s), so
    the signal always arrives during it. The child restores Python's SIGINT handler: a
    shell without job control starts background commands with SIGINT ignored, and the
    child inherits that (CI started as `... &` failed here with the compile never
    interrupted)."""
    started, sent = tmp_path / "started", tmp_path / "sent"
    cc = _script(tmp_path / "slow-cc", f"""\
        case "$*" in *-O3*) if [ ! -e {started} ]; then : > {started}; i=0
          while [ ! -e {sent} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; fi;; esac
        exec {shutil.which("cc") or shutil.which("gcc")} "$@"
    """)
    cache = tmp_path / "cache"
    code = _PRELUDE + textwrap.dedent("""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            check()
            print("NO INTERRUPT")
        except KeyboardInterrupt:
            print("INTERRUPTED")
        from plait.codegen.toolchain import PROBE_FILE   # the compiler's answer: kept
        d = os.environ["PLAIT_CACHE_DIR"]
        print("LEFT", sorted(n for n in os.listdir(d) if n != PROBE_FILE))
        check()
        print("OK", len([n for n in os.listdir(d) if n.endswith(".so")]))
    """)
    p = subprocess.Popen([sys.executable, "-c", code], env=_env(str(cache), CC=cc), cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not started.exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.02)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    sent.touch()            # an uninterrupted compile goes on (and the test then fails)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "INTERRUPTED" in out and "LEFT []" in out and "OK 1" in out, out + err


_RACE = """
    import time
    import plait.backends.native.compile as native
    marker = os.environ["RACE_MARKER"]
    real_replace, real_build = os.replace, native.build_shared_object
    if os.environ["RACE_ROLE"] == "writer":
        # hold the writer right after its publishing rename (in the old layout: between
        # renaming the object and renaming its digest) while the reader looks
        def slow_replace(src, dst):
            real_replace(src, dst)
            if dst.endswith(".so"):
                open(marker, "w").close()
                time.sleep(1.5)
        os.replace = slow_replace
    else:
        def slow_build(*a, **k):          # a reader that rebuilds takes longer than that
            time.sleep(3)
            return real_build(*a, **k)
        native.build_shared_object = slow_build
        while not os.path.exists(marker):
            time.sleep(0.01)
    check()
    print("OK", int(plait.metrics.get("cc_invocations")))
"""


def test_writer_reader_race_cannot_lose_an_entry(tmp_path):
    cache, marker = str(tmp_path / "cache"), str(tmp_path / "published")
    procs = [subprocess.Popen([sys.executable, "-c", _PRELUDE + textwrap.dedent(_RACE)],
                              env=_env(cache, RACE_ROLE=role, RACE_MARKER=marker), cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for role in ("writer", "reader")]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "OK" in out, err[-3000:]
        outs.append(out.split())
    assert outs == [["OK", "1"], ["OK", "0"]], outs     # the reader used the writer's entry


_THREADS = """
    import threading
    from plait.backends.native.compile import compile_native
    tag = float(os.environ["TAG"])
    fns = {"same": lambda v: pnp.tanh(v * 3.0) + 1.0,
           "mine": lambda v: pnp.exp(v * 0.5) - tag,
           "mine2": lambda v: pnp.sin(v) * tag}
    refs = {"same": lambda v: np.tanh(v * 3) + 1, "mine": lambda v: np.exp(v * 0.5) - tag,
            "mine2": lambda v: np.sin(v) * tag}
    graphs = {k: plait.jit(f).lower(X).closed for k, f in fns.items()}   # traced here
    errors, go = [], threading.Barrier(8)
    def work(i):
        try:
            go.wait()
            for k in (["same", "mine"] if i % 2 else ["mine2", "same"]):
                out = compile_native(graphs[k])(X)[0]
                np.testing.assert_allclose(out, refs[k](X), rtol=1e-6, atol=1e-6)
        except BaseException as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts: t.start()
    for t in ts: t.join()
    assert not errors, errors
    print("OK", int(plait.metrics.get("cc_invocations")))
"""


def test_two_processes_of_eight_threads_compile_at_once(tmp_path):
    cache = str(tmp_path / "cache")
    procs = [subprocess.Popen([sys.executable, "-c", _PRELUDE + textwrap.dedent(_THREADS)],
                              env=_env(cache, TAG=str(tag)), cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for tag in (2, 3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-3000:]
        assert out.split()[0] == "OK" and int(out.split()[1]) <= 3, out  # one build a key
    assert len(glob.glob(os.path.join(cache, "*.so"))) == 5


# -- real read-only and full file systems (a private mount namespace) ----------------
def _namespace_prefix() -> list[str] | None:
    """A command prefix that runs a shell in a private mount namespace, or None."""
    if not shutil.which("unshare"):
        return None
    for pre in (["unshare", "-m"], ["unshare", "-rm"]):
        try:
            r = subprocess.run(pre + ["sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"],
                               capture_output=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            continue
        if r.returncode == 0:
            return pre
    return None


def _in_namespace(pre, mounts: str, code: str, cache: str, **extra):
    cmd = pre + ["sh", "-c", mounts + ' && exec "$0" -c "$1"', sys.executable,
                 _PRELUDE + textwrap.dedent(code)]
    return subprocess.run(cmd, env=_env(cache, **extra), capture_output=True, text=True,
                          timeout=120, cwd=REPO)


_FALLBACK_CHECK = """
    from plait.errors import CacheFallbackWarning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        check()
    msgs = [str(m.message) for m in w if issubclass(m.category, CacheFallbackWarning)]
    assert len(msgs) == 1 and "PLAIT_CACHE_DIR" in msgs[0], msgs
    print(msgs[0])
"""


def test_real_read_only_noexec_and_full_cache_dirs_and_a_full_tmpdir(tmp_path):
    pre = _namespace_prefix()
    if pre is None:
        pytest.skip("no private mount namespace here (needs unshare and mount rights); the "
                    "simulated read-only and full cases above still ran")
    ro, full, tmp, nx = tmp_path / "ro", tmp_path / "full", tmp_path / "tmp", tmp_path / "nx"
    for d in (ro, full, tmp, nx):
        d.mkdir()
    fill = "head -c {n} /dev/zero > {d}/fill 2>/dev/null; true"
    r = _in_namespace(pre, f"mount -t tmpfs -o ro,size=1m tmpfs {ro}", _FALLBACK_CHECK, str(ro))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Read-only file system" in r.stdout, r.stdout
    # objects built on a noexec mount do not load: built again in a temporary directory
    r = _in_namespace(pre, f"mount -t tmpfs -o noexec,size=4m tmpfs {nx}", _FALLBACK_CHECK,
                      str(nx))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "failed to map segment" in r.stdout, r.stdout
    mounts = f"mount -t tmpfs -o size=64k tmpfs {full} && " + fill.format(n=1 << 20, d=full)
    r = _in_namespace(pre, mounts, _FALLBACK_CHECK, str(full))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "No space left on device" in r.stdout, r.stdout
    # a nearly full TMPDIR (room for Python's probe file, not for an object): builds
    # work in the cache directory; the OpenMP probe says the environment failed it
    mounts = f"mount -t tmpfs -o size=64k tmpfs {tmp} && " + fill.format(n=56 << 10, d=tmp)
    r = _in_namespace(pre, mounts, """
        from plait.errors import ToolchainWarning
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            check()
        msgs = [str(m.message) for m in w if issubclass(m.category, ToolchainWarning)]
        assert len(msgs) == 1 and "probe" in msgs[0] and "TMPDIR" in msgs[0], msgs
        print(msgs[0])
    """, str(tmp_path / "cache"), TMPDIR=str(tmp))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "No space left on device" in r.stdout, r.stdout
    # cache dir and TMPDIR both full: one clear error, not a raw OSError
    mounts = (f"mount -t tmpfs -o size=64k tmpfs {full} && " + fill.format(n=1 << 20, d=full)
              + f" && mount -t tmpfs -o size=64k tmpfs {tmp} && "
              + fill.format(n=56 << 10, d=tmp))
    r = _in_namespace(pre, mounts, """
        from plait.errors import BuildEnvironmentError
        try:
            check()
        except BuildEnvironmentError as e:
            print("CLEAR", e)
    """, str(full), TMPDIR=str(tmp))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "CLEAR" in r.stdout and "No space left on device" in r.stdout, r.stdout
