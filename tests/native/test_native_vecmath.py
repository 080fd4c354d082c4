"""plait's own float32 vector math (``plait/lax/_vecmath_c.py``): every helper, routed to
kernels or not, on a dense sample (about 2^20 inputs, the special values included)
within the maximum ulp error that the exhaustive sweep (``benchmarks/vecmath_sweep.py``)
documents in ``docs/numpy-differences.md``, with NumPy's NaN/inf/zero/sign results
exactly; the routed ones also through ``plait.jit`` kernels, and the OpenCL prelude
keeps OpenCL's builtins."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import subprocess

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.codegen import toolchain
from plait.codegen.c_expr import arith, op_prelude
from plait.codegen.opencl_c import prelude as opencl_prelude
from plait.lax import _vecmath_c

# the documented maxima over all 2^32 float32 inputs (docs/numpy-differences.md)
MAX_ULP = {"exp": 1.05, "expm1": 1.6, "log": 0.85, "log1p": 0.85, "tanh": 2.58}

F32 = np.finfo(np.float32)
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 2.0, 0.5,
                     F32.max, -F32.max, F32.tiny, -F32.tiny, F32.smallest_subnormal,
                     -F32.smallest_subnormal, 88.37626, 88.72283, 88.72284, 89.0,
                     -87.33654, -103.972, -103.973, -104.0, -17.32868, -30.0, -31.0,
                     0.55, -0.55, 9.01, 9.02, -0.99999994, -1.0000001, 1e-8, -1e-8,
                     16777216.0, 16777218.0], np.float32)


def _sample() -> np.ndarray:
    rng = np.random.default_rng(20)
    bits = rng.integers(0, 2 ** 32, 2 ** 18, dtype=np.uint64).astype(np.uint32)
    dense = np.linspace(-110, 95, 2 ** 18, dtype=np.float32)
    small = np.geomspace(1e-45, 2.0, 2 ** 18).astype(np.float32)
    near_one = (1 + np.linspace(-0.5, 0.5, 2 ** 18)).astype(np.float32)
    return np.concatenate([SPECIALS, bits.view(np.float32), dense, small, -small, near_one,
                           near_one - 2])


def _ulp32(ref: np.ndarray) -> np.ndarray:
    """float32 spacing at |ref| (subnormal spacing below the smallest normal)."""
    e = np.frexp(ref)[1].astype(np.int64) - 1
    return np.ldexp(1.0, np.maximum(e, -126) - 23)


def _check(name: str, x: np.ndarray, y: np.ndarray) -> None:
    assert y.dtype == np.float32
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
        npy = getattr(np, name)(x)
    special = np.isnan(ref) | np.isinf(ref32) | (ref32 == 0)
    # NaN, infinities and zeros exactly as NumPy (zeros and infinities with their signs;
    # a NaN's sign bit is not part of NumPy's semantics)
    np.testing.assert_array_equal(y[special], npy[special], err_msg=name)
    signed = special & ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(y[signed]), np.signbit(npy[signed]),
                                  err_msg=name)
    fin = ~special
    err = np.abs(y[fin].astype(np.float64) - ref[fin]) / _ulp32(ref[fin])
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP[name], (name, x[fin][worst], err[worst])


def _helpers_source() -> str:
    """Every helper behind a loop ``plait_vm_<name>(x, y, n)``, as a kernel loop calls it."""
    chunks = dict.fromkeys(c for fn in _vecmath_c.HELPERS for c in _vecmath_c.HELPERS[fn])
    loops = "".join(f"void plait_vm_{fn}(const float *restrict x, float *restrict y, long n)"
                    f" {{ for (long i = 0; i < n; i++) y[i] = plait_{fn}f(x[i]); }}\n"
                    for fn in _vecmath_c.HELPERS)
    return "#include <math.h>\n#include <stdint.h>\n" + "".join(chunks) + loops


@pytest.fixture(scope="module")
def helpers_lib(tmp_path_factory):
    """Every helper compiled as the native backend compiles kernels, behind a loop
    ``plait_vm_<name>(x, y, n)`` the compiler auto-vectorizes like a kernel loop."""
    tc = toolchain.find_toolchain()
    if tc is None:
        pytest.skip("no C compiler on this machine: the helpers are C, compiled as the "
                    "native backend compiles kernels (CI installs gcc)")
    src = _helpers_source()
    d = tmp_path_factory.mktemp("vecmath")
    so = os.path.join(d, "vecmath.so")
    toolchain.build_shared_object(src, so, tc)
    return ctypes.CDLL(so)


@pytest.mark.parametrize("name", sorted(_vecmath_c.HELPERS))
def test_helper_within_documented_ulp_and_numpy_specials(helpers_lib, name):
    x = _sample()
    y = np.empty_like(x)
    fn = getattr(helpers_lib, f"plait_vm_{name}")
    fn(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
       ctypes.c_long(x.size))
    _check(name, x, y)


def test_tanh_without_fma_within_documented_ulp(x86_gcc, tmp_path):
    """tanh built for x86-64-v2 (SSE4.2, no fused multiply-add): it keeps Cody-Waite's
    two-step reduction there (a lone ``n * ln2/2`` would round), within its bound too."""
    flags = tuple(f for f in x86_gcc.flags if not f.startswith("-march=")) + ("-march=x86-64-v2",)
    so = str(tmp_path / "vecmath.so")
    toolchain.build_shared_object(_helpers_source(), so, dataclasses.replace(x86_gcc, flags=flags))
    x = _sample()
    y = np.empty_like(x)
    ctypes.CDLL(so).plait_vm_tanh(x.ctypes.data_as(ctypes.c_void_p),
                                  y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    _check("tanh", x, y)


def test_routed_functions_in_kernels():
    x = _sample()
    names = sorted(_vecmath_c.ROUTED)
    f = plait.jit(lambda v: [getattr(pnp, n)(v) for n in names], backend="native")
    for name, y in zip(names, f(x)):
        _check(name, x, np.asarray(y))


def test_cpu_routes_to_own_helpers_opencl_keeps_builtins():
    cpu, cl = op_prelude(), opencl_prelude()
    for name in _vecmath_c.ROUTED:
        assert f"plait_{name}f(" in arith(name, ["x"], "f32", cpu=True)
        assert arith(name, ["x"], "f32") == f"{name}f(x)"
        assert f"float plait_{name}f(" in cpu and f"plait_{name}f" not in cl


def _vectorized_lines(tc, src: str, march: str, tmp_path, drop=()) -> set[int]:
    """Source lines of the loops GCC reports vectorized with 256-bit vectors (512-bit in
    the kernels that are only elementwise maps, which ask for the full width) when it
    compiles ``src`` with the kernels' flags for ``-march=march`` (minus ``drop``)."""
    c = tmp_path / f"vm_{march}.c"
    c.write_text(src)
    flags = [f for f in tc.flags if not f.startswith("-march=") and f not in drop]
    r = subprocess.run([tc.cc, *flags, f"-march={march}", "-mprefer-vector-width=256",
                        "-fopt-info-vec-optimized", str(c), "-o", str(tmp_path / "vm.so")],
                       capture_output=True, text=True, check=True)
    return {int(row[len(str(c)) + 1:].split(":")[0]) for row in r.stderr.splitlines()
            if row.startswith(f"{c}:") and re.search(r"loop vectorized using (32|64) byte", row)}


@pytest.mark.parametrize("march", ["x86-64-v3", "x86-64-v4"])   # AVX2+FMA; AVX-512
def test_every_helper_loop_vectorizes(x86_gcc, tmp_path, march):
    """Each helper's loop auto-vectorizes with 256-bit vectors on AVX2 (no masked vector
    instructions: GCC cannot if-convert a possibly-trapping operation it moved into a
    branch) as well as on AVX-512, even without -fno-trapping-math (the helpers are
    branch-free by themselves)."""
    src = _helpers_source()
    lines = {i for i, line in enumerate(src.splitlines(), 1) if line.startswith("void plait_vm_")}
    got = _vectorized_lines(x86_gcc, src, march, tmp_path, drop=("-fno-trapping-math",))
    assert lines <= got, (march, sorted(lines - got))


@pytest.mark.parametrize("march", ["x86-64-v3", "x86-64-v4"])
def test_select_kernels_vectorize(x86_gcc, tmp_path, march):
    """Kernels whose selects hold float arithmetic in an arm (where, maximum then a
    multiply, clip, logaddexp, pow's fix-up of the bases where GCC's sqrt for a constant
    exponent of 0.5 is not pow) vectorize on AVX2 too: the native flags tell GCC that
    float operations do not trap, so it may compute both arms."""
    from plait import lax
    x = np.ones(4096, np.float32)
    for f in (lambda v: pnp.where(v > 0, v * 2.0, v * 0.1) + 1.0,
              lambda v: pnp.maximum(v, 0.0) * 3.0 + 1.0,
              lambda v: pnp.clip(v, -1.0, 1.0) * 2.0,
              lambda v: pnp.logaddexp(v, 0.0),
              lambda v: lax.pow(v, 0.5) + 1.0,
              lambda v: lax.pow(v, v)):
        src = plait.jit(f, backend="native").lower(x).as_text("c")
        loop = [i for i, line in enumerate(src.splitlines(), 1) if "for (int64_t" in line]
        assert loop and set(loop) <= _vectorized_lines(x86_gcc, src, march, tmp_path), march
