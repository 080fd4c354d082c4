"""plait's own float32 tanh (``plait/lax/_vecmath_c.py``) in native kernels: a
dense sample (about 2^20 inputs, all special values included) within the maximum ulp
error that the exhaustive sweep (``benchmarks/vecmath_sweep.py``) documents in
``docs/numpy-differences.md``, and NumPy's NaN/inf/zero/sign results exactly."""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp

# the documented maxima over all 2^32 float32 inputs (docs/numpy-differences.md)
MAX_ULP = {"tanh": 1.47}

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0,
                     np.finfo(np.float32).max, -np.finfo(np.float32).max,
                     np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal,
                     -np.finfo(np.float32).smallest_subnormal, 88.72283, 88.72284, 89.0,
                     -87.33654, -103.972, -103.973, -104.0, 0.55, -0.55, 9.01, 9.02],
                    np.float32)


def _sample() -> np.ndarray:
    rng = np.random.default_rng(20)
    bits = rng.integers(0, 2 ** 32, 2 ** 18, dtype=np.uint64).astype(np.uint32)
    dense = np.linspace(-110, 95, 2 ** 18, dtype=np.float32)
    small = np.geomspace(1e-45, 2.0, 2 ** 18).astype(np.float32)
    near_one = (1 + np.linspace(-0.5, 0.5, 2 ** 18)).astype(np.float32)
    return np.concatenate([SPECIALS, bits.view(np.float32), dense, small, -small, near_one])


def _ulp32(ref: np.ndarray) -> np.ndarray:
    """float32 spacing at |ref| (subnormal spacing below the smallest normal)."""
    e = np.frexp(ref)[1].astype(np.int64) - 1
    return np.ldexp(1.0, np.maximum(e, -126) - 23)


def test_tanh_float32_within_documented_ulp_and_numpy_specials():
    x = _sample()
    f = plait.jit(pnp.tanh, backend="native")
    got = {"tanh": np.asarray(f(x))}
    for name, y in got.items():
        assert y.dtype == np.float32
        with np.errstate(all="ignore"):
            ref = getattr(np, name)(x.astype(np.float64))
            ref32 = ref.astype(np.float32)
            npy = getattr(np, name)(x)
        special = np.isnan(ref) | np.isinf(ref32) | (ref32 == 0)
        # NaN, infinities and zeros exactly as NumPy (zeros and infinities with their
        # signs; a NaN's sign bit is not part of NumPy's semantics)
        np.testing.assert_array_equal(y[special], npy[special], err_msg=name)
        signed = special & ~np.isnan(ref)
        np.testing.assert_array_equal(np.signbit(y[signed]), np.signbit(npy[signed]),
                                      err_msg=name)
        fin = ~special
        err = np.abs(y[fin].astype(np.float64) - ref[fin]) / _ulp32(ref[fin])
        worst = int(np.argmax(err))
        assert err[worst] <= MAX_ULP[name], (name, x[fin][worst], err[worst])
