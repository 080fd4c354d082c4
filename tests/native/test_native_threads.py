"""Threads of the native backend beside other libraries: libgomp's waiting defaults are in
force whichever plait library loads libgomp first, and the GEMM library's own pool
(plait/codegen/c_pool.py) computes right when several threads call it at once and in a
forked child. The oracle is NumPy in float64."""
import concurrent.futures
import ctypes
import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest

from plait.backends.native import gemm
from v16_source import branch

_SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def _gemm(A, B, threads=None):
    """``A @ B`` (float32, 2-d, C-contiguous) by ``plait_gemm_s``."""
    f = gemm.library("s").plait_gemm_s
    f.restype = ctypes.c_int64
    f.argtypes = [ctypes.c_int64] * 4 + ([ctypes.c_void_p] + [ctypes.c_int64] * 3) * 3
    (M, K), N = A.shape, B.shape[1]
    C = np.full((M, N), np.nan, np.float32)
    assert f(1, M, N, K, A.ctypes.data, 0, K, 1, B.ctypes.data, 0, N, 1,
             C.ctypes.data, 0, N, 1) == 0
    return C


def _close(C, A, B):
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    bound = 2 * A.shape[1] * np.finfo(np.float32).eps * (np.abs(A64) @ np.abs(B64))
    return bool((np.abs(C - A64 @ B64) <= bound).all())


_PROBE = """
import ctypes, sys
from plait.backends.native import gemm
gemm.library("s")                      # the GEMM library loads libgomp first
ctypes.CDLL("libgomp.so.1").omp_display_env(1)
"""


def test_openmp_wait_defaults_hold_when_the_gemm_library_loads_libgomp_first():
    """libgomp reads GOMP_SPINCOUNT once, when it loads; the GEMM library (built or loaded
    on a background thread, often before any program) must not load it with libgomp's
    300k-round spin, which made the W1 step 20x slower on 2 shared cores."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["PYTHONPATH"] = os.path.abspath(_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "GOMP_SPINCOUNT = '2000'" in r.stderr, r.stderr
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in r.stderr, r.stderr


def test_openmp_wait_defaults_are_set_when_plait_is_imported():
    """A library imported after plait that brings libgomp (torch's bundled libgomp.so.1)
    loads the one libgomp every plait kernel then uses: its wait policy must already be
    plait's when ``import plait`` returns, before any plait library loads."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["PYTHONPATH"] = os.path.abspath(_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    probe = ("import os, plait; "
             "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))")
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["PASSIVE", "2000"], r.stdout


_OPENBLAS_BURN = """
import os, sys, threading, time
if sys.argv[1] == "plait-first":
    import plait
import numpy as np
a = np.random.default_rng(0).standard_normal((512, 512))
if sys.argv[1] == "numpy-then-plait":
    a @ a                   # OpenBLAS loaded and its workers started before plait
    import plait
def ticks():    # CPU ticks of every thread but this one (OpenBLAS's workers, if any)
    out = 0
    for t in os.listdir("/proc/self/task"):
        if int(t) != threading.get_native_id():
            f = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
            out += int(f[11]) + int(f[12])
    return out
burn = 0
for _ in range(5):
    for _ in range(4):
        a @ a
    t0 = ticks()
    time.sleep(0.15)        # idle: OpenBLAS's workers spin ~0.1 s here by default
    burn += ticks() - t0
print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), burn)
"""


def _openblas_burn(order: str, **env_extra) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    env["PYTHONPATH"] = os.path.abspath(_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", _OPENBLAS_BURN, order], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    value, burn = r.stdout.split()
    return value, int(burn)


def test_openblas_workers_sleep_soon_when_plait_is_imported_before_numpy():
    """NumPy's OpenBLAS spins its idle workers ~0.1 s after each threaded call, holding a
    core plait's kernels need; ``import plait`` first shortens that to ~0.1 ms. The
    control (NumPy first) shows the spin in the idle windows; with plait first the
    workers take no CPU tick there. A user's own setting is kept."""
    value, burn = _openblas_burn("plait-first")
    assert value == "18"
    if (os.cpu_count() or 1) > 1 and "openblas" in str(np.show_config(mode="dicts")).lower():
        assert burn == 0, burn
        assert _openblas_burn("numpy-first")[1] >= 2
    assert _openblas_burn("plait-first", OPENBLAS_THREAD_TIMEOUT="24")[0] == "24"
    assert _openblas_burn("plait-first", GOTO_THREAD_TIMEOUT="24")[0] == "None"


def test_openblas_loaded_before_plait_restarts_its_workers_with_the_short_spin():
    """NumPy imported and used before plait: its OpenBLAS read the environment without
    plait's timeout, so ``import plait`` restarts the workers
    (``config.restart_loaded_openblas``) and they then sleep soon after each call; the
    control (no plait) spins in the same idle windows. A user's setting is left alone."""
    value, burn = _openblas_burn("numpy-then-plait")
    assert value == "18"
    if (os.cpu_count() or 1) > 1 and "openblas" in str(np.show_config(mode="dicts")).lower():
        assert burn == 0, burn
        assert _openblas_burn("numpy-first")[1] >= 2
    assert _openblas_burn("numpy-then-plait", OPENBLAS_THREAD_TIMEOUT="24")[0] == "24"


def test_restart_loaded_openblas_waits_for_the_only_python_thread():
    """With another Python thread alive (it could be inside a BLAS call) the workers are
    not restarted; alone, every loaded OpenBLAS with the entry points is."""
    import threading
    from plait.config import restart_loaded_openblas
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert restart_loaded_openblas() == []
    finally:
        stop.set()
        t.join()
    if threading.active_count() == 1 and "openblas" in str(np.show_config(mode="dicts")).lower():
        restarted = restart_loaded_openblas()
        assert restarted and all("openblas" in os.path.basename(p) for p in restarted)
        np.testing.assert_allclose(np.ones((64, 64)) @ np.ones((64, 64)), np.full((64, 64), 64.0))


def test_pool_with_concurrent_callers():
    """Four Python threads (ctypes drops the GIL) call parallel GEMMs at once: one job
    runs on the pool at a time, the others run serially on their own threads."""
    rng = np.random.default_rng(0)
    cases = [(rng.standard_normal((m, k)).astype(np.float32),
              rng.standard_normal((k, n)).astype(np.float32))
             for m, n, k in ((300, 200, 500), (128, 512, 784), (64, 8, 900), (1, 700, 300),
                             (700, 1, 300), (200, 300, 400))]
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        for _ in range(3):
            outs = list(ex.map(lambda ab: _gemm(*ab), cases))
            assert all(_close(C, A, B) for C, (A, B) in zip(outs, cases))


def _child(seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((256, 300)).astype(np.float32)
    B = rng.standard_normal((300, 400)).astype(np.float32)
    return _close(_gemm(A, B), A, B)


@pytest.mark.skipif(sys.platform != "linux",
                    reason="needs the fork start method, which only Linux offers safely "
                           "(Windows has none; macOS forbids fork after threads start)")
def test_pool_in_a_forked_child():
    """A child forked after the pool's helpers started has none; it starts its own."""
    assert _child(1)                              # the parent's helpers are running
    with multiprocessing.get_context("fork").Pool(1) as p:
        assert p.map(_child, [2, 3]) == [True, True]


def test_parallel_blocks_of_one_kernel_share_one_team():
    """Two large maps with a small one between them, fused into one kernel, start the
    OpenMP threads once: one ``parallel`` region, a ``for`` per large map and the small
    map on one thread (``single``); the values are NumPy's."""
    import plait
    import plait.numpy as pnp

    def f(x, y, z):
        return x * 2.0 + 1.0, pnp.tanh(y) * 3.0, z - pnp.exp(z * 0.5)
    rng = np.random.default_rng(0)
    x, z = (rng.standard_normal((2048, 1024)).astype(np.float32) for _ in range(2))
    y = rng.standard_normal(8).astype(np.float32)
    c = plait.jit(f, backend="native").lower(x, y, z).compile()
    assert c.as_text("kernels").count("\n") == 0          # one kernel
    src = c.as_text("c")
    for v16 in (False, True):     # the exp map's loop is also rendered with 16 lanes
        body = branch(src, v16)
        body = body[body.index("int64_t k0(void **bufs)"):]
        body = body[:body.index("\n}\n")]
        assert [ln.strip() for ln in body.splitlines() if "#pragma omp" in ln] == [
            "#pragma omp parallel", "#pragma omp for schedule(static)", "#pragma omp single",
            "#pragma omp for schedule(static)"]
    got = c(x, y, z)
    want = (x.astype(np.float64) * 2 + 1, np.tanh(y.astype(np.float64)) * 3,
            z.astype(np.float64) - np.exp(z.astype(np.float64) * 0.5))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-6, atol=1e-6)
