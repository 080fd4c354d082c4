"""The native backend as a system: fusion, stages, the disk cache, fallbacks, memory."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plait
from plait import lax

SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805


def _native(f, *args):
    return plait.jit(f, backend="native").lower(*args).compile()


def test_chain_of_ten_elementwise_ops_is_one_kernel():
    def f(x):
        y = x
        for op in (lax.sin, lax.exp, lax.tanh, lax.neg, lax.abs):
            y = op(y)
        y = lax.add(y, 1.0)
        y = lax.mul(y, x)
        y = lax.sub(y, 0.5)
        y = lax.max(y, x)
        return lax.sqrt(lax.abs(y))
    x = np.linspace(-2, 2, 1000).astype(np.float32)
    c = _native(f, x)
    assert c.executable.kernel_count() == 1
    ref = np.abs(np.tanh(np.exp(np.sin(x))))
    ref = np.sqrt(np.abs(np.maximum((ref + 1) * x - 0.5, x)))
    np.testing.assert_allclose(np.asarray(c(x)), ref, rtol=2e-6, atol=2e-6)


def test_matmul_bias_selu_is_one_kernel():
    def f(x, w, b):
        y = lax.add(lax.dot_general(x, w, (((1,), (0,)), ((), ()))),
                    lax.broadcast_in_dim(b, (x.shape[0], w.shape[1]), (1,)))
        neg = lax.mul(lax.expm1(y), SELU_A)
        return lax.mul(lax.select(lax.gt(y, 0.0), y, neg), SELU_S)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((16, 32), (32, 8), (8,)))
    c = _native(f, x, w, b)
    assert c.executable.kernel_count() == 1
    y = x @ w + b
    ref = SELU_S * np.where(y > 0, y, SELU_A * np.expm1(y))
    np.testing.assert_allclose(np.asarray(c(x, w, b)), ref, rtol=1e-5, atol=1e-5)


def test_operand_read_twice_and_output_read_again():
    """Regression: two refinements of one parent view (x . x), and an output reread."""
    def f(a, b):
        t = lax.sub(a, b)
        return t, lax.dot(t, t), lax.dot(a, a)
    a, b = np.arange(5.0), np.ones(5)
    t, tt, aa = plait.jit(f, backend="native")(a, b)
    np.testing.assert_allclose(np.asarray(t), a - b)
    assert float(tt) == (a - b) @ (a - b) and float(aa) == a @ a


@pytest.mark.parametrize("axis", [0, 1])
def test_an_output_divided_by_its_own_sums(axis):
    """Regression: t = exp(x) (an output) and t / t.mean(axis): the sum over t's rows
    fused into one loop with the division, which read partial column sums (errors up
    to 60x for axis 0; axis 1, a sum within each row, was right)."""
    import plait.numpy as pnp

    def f(x):
        t = pnp.exp(x)
        return t / (t.mean(axis=0) if axis == 0 else t.mean(axis=1)[:, None]), t
    x = np.random.default_rng(3).standard_normal((64, 48)).astype(np.float32)
    y, t = plait.jit(f, backend="native")(x)
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(t), e, rtol=2e-6)
    np.testing.assert_allclose(np.asarray(y), e / e.mean(axis=axis, keepdims=True), rtol=2e-5)


def test_every_stage_prints():
    x = np.ones((4, 4), np.float32)
    c = _native(lambda x: lax.tanh(lax.add(x, x)), x)
    for stage, needle in (("graph", "tanh"), ("kernels", "k0: add, tanh"),
                          ("tile", "tanh(add("), ("stripe", "block ["),
                          ("stripe-opt", "block ["), ("c", "int64_t k0(void **bufs)")):
        assert needle in c.as_text(stage), stage


def test_dump_dir_gets_every_stage_and_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(plait.config, "dump_dir", str(tmp_path))
    x = np.ones((8, 8), np.float32)
    plait.jit(lambda x: lax.tanh(lax.add(x, x)), backend="native")(x)
    (d,) = list(tmp_path.iterdir())
    names = sorted(p.name for p in d.iterdir())
    for stage in ("graph.txt", "kernels.txt", "tile.txt", "kernels.c", "k0_00_lowered.txt"):
        assert stage in names
    from plait.backends.native.target import host_target
    for n, (p, _) in enumerate(host_target().passes, start=1):
        assert f"k0_{n:02d}_{p}.txt" in names


def test_host_steps_and_memory_analysis():
    def f(x):
        s = lax.sort(lax.mul(x, 2.0), dimension=0)
        return lax.exp(s[0] if isinstance(s, (list, tuple)) else s)
    x = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    c = _native(f, x)
    assert c.as_text("kernels").splitlines() == ["k0: broadcast_in_dim, mul", "host: sort",
                                                 "k2: exp"]
    np.testing.assert_allclose(np.asarray(c(x)), np.exp(np.sort(2 * x)), rtol=1e-6)
    ma = c.memory_analysis()
    assert ma["argument_bytes"] == 1024 and ma["output_bytes"] == 1024
    assert ma["peak_temp_bytes"] == 2048        # 2x and its sort alive together, then freed


_CHILD = textwrap.dedent("""
    import numpy as np, plait
    from plait import lax
    f = plait.jit(lambda x: lax.tanh(lax.mul(x, 3.0)), backend="native")
    x = np.linspace(-1, 1, 9).astype(np.float32)
    assert np.allclose(np.asarray(f(x)), np.tanh(3 * x), atol=1e-6)
    print("CC", int(plait.metrics.get("cc_invocations")))
""")


def _child(cache: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PLAIT_CACHE_DIR=cache, **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=120)


def test_second_process_reuses_kernels_and_broken_entries_are_rebuilt(tmp_path):
    cache = str(tmp_path / "cache")
    first = _child(cache)
    assert first.returncode == 0, first.stderr
    assert "CC 1" in first.stdout
    second = _child(cache)
    assert "CC 0" in second.stdout, second.stdout + second.stderr
    (so,) = glob.glob(os.path.join(cache, "*.so"))
    with open(so, "r+b") as fh:          # truncate the object: it must not be trusted
        fh.truncate(100)
    third = _child(cache)
    assert third.returncode == 0, third.stderr
    assert "CC 1" in third.stdout
    assert oct(os.stat(cache).st_mode & 0o777) == "0o700"


def test_two_processes_compiling_at_once_both_succeed(tmp_path):
    cache = str(tmp_path / "cache")
    env = dict(os.environ, PLAIT_CACHE_DIR=cache)
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err


def test_no_compiler_falls_back_to_interp_with_one_warning(tmp_path):
    code = textwrap.dedent("""
        import warnings, numpy as np, plait
        from plait import lax
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            f = plait.jit(lambda x: lax.exp(x))
            f(np.ones(3)); f(np.ones(4))
        msgs = [str(x.message) for x in w if "C compiler" in str(x.message)]
        assert len(msgs) == 1 and "install gcc" in msgs[0].lower() or "Install gcc" in msgs[0], msgs
        print(plait.config.resolved_backend())
    """)
    env = dict(os.environ, PATH=str(tmp_path), CC="")
    env.pop("PLAIT_BACKEND", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "interp"


def test_doctor_reports_the_toolchain():
    r = subprocess.run([sys.executable, "-m", "plait", "doctor"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    assert "C compiler" in r.stdout and "OpenMP" in r.stdout and "SIMD" in r.stdout


@pytest.mark.slow
def test_generated_code_is_clean_under_address_sanitizer(tmp_path):
    lib = subprocess.run(["cc", "-print-file-name=libasan.so"], capture_output=True,
                         text=True).stdout.strip()
    assert os.path.exists(lib), "gcc's AddressSanitizer runtime is required for this test"
    here = os.path.dirname(__file__)
    env = dict(os.environ, PLAIT_CACHE_DIR=str(tmp_path), LD_PRELOAD=lib,
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
               PLAIT_EXTRA_CFLAGS="-fsanitize=address -fno-omit-frame-pointer")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist",
                        os.path.join(here, "test_native_sweep.py"),
                        # asynchronous launches: buffers kept alive while the worker runs
                        os.path.join(here, "..", "lazy", "test_lazy_native.py")],
                       env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_large_matrix_vector_products_call_the_library():
    """Big matvecs call plait's GEMM library (a native call step, not a host step);
    small ones stay in fused kernels."""
    rng = np.random.default_rng(5)
    w, x = rng.standard_normal((1024, 2048)).astype(np.float32), rng.standard_normal((1, 1024)).astype(np.float32)
    f = plait.jit(lambda x, w: lax.tanh(lax.dot(x, w)), backend="native")
    assert f.lower(x, w).compile().as_text("kernels").splitlines()[0].endswith(
        ": native dot_general")
    # float64 oracle: plait's summation order is not BLAS's
    want = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
    np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=2e-5, atol=2e-5)
    small = f.lower(x[:, :8], w[:8, :16]).compile().as_text("kernels")
    assert "host" not in small and "native dot_general" not in small


def test_block_profiler_times_every_kernel_block(monkeypatch):
    monkeypatch.setattr(plait.config, "profile", True)
    # small enough to stay a fused kernel (bigger products call the GEMM library)
    a = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    c = plait.jit(lambda a: lax.reduce_sum(lax.tanh(lax.dot(a, a)), (0,)),
                  backend="native").lower(a).compile()
    prof = c.executable.profile_blocks(a)
    assert prof and all(t >= 0 for _, _, t in prof)
    assert any("+(in0" in what for _, what, _ in prof)      # the matmul's Tile statement
    np.testing.assert_allclose(np.asarray(c(a)), np.tanh(a @ a).sum(0), rtol=1e-4)


def test_launch_runs_the_whole_program_on_the_worker_thread():
    # outputs: a kernel result, the same result again, an input passed through, a literal
    def f(x, y):
        z = lax.tanh(lax.add(lax.mul(x, 2.0), y))
        return z, z, y, np.float32(3.0)
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    y = np.cos(x)
    c = _native(f, x, y)
    exe = c.executable
    outs, job = exe.launch(x, y)
    job.wait()
    for got, want in zip(outs, exe(x, y)):
        np.testing.assert_array_equal(got, np.asarray(want))
    np.testing.assert_allclose(outs[0], np.tanh(2 * x + y), rtol=1e-6)
    sorted_ = _native(lambda x: lax.exp(lax.sort(x, dimension=0)), x).executable
    assert sorted_.launch(x) is None            # a host step: the caller runs it


def test_without_python_headers_kernels_and_launches_go_through_ctypes(monkeypatch):
    import dataclasses
    from plait.backends.native import compile as native_compile
    from plait.codegen.toolchain import require_toolchain
    tc = dataclasses.replace(require_toolchain(), python_include=None)
    monkeypatch.setattr(native_compile, "require_toolchain", lambda: tc)
    x = np.linspace(-1, 1, 777).astype(np.float32)
    exe = native_compile.compile_native(
        plait.make_graph(lambda x: (lax.tanh(lax.mul(x, 3.0)), lax.exp(x)))(x))
    assert exe.pymod is None
    want = [np.tanh(3 * x), np.exp(x)]
    for got, w in zip(exe(x), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    outs, job = exe.launch(x)
    job.wait()
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
