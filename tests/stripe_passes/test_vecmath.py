"""Vectorized transcendentals (glibc's libmvec via SIMD declarations) against NumPy.

The generated loops call the SIMD variants (no -ffast-math); this checks values over
the whole float range, with NaN, +-inf, +-0 and denormals, in float32 and float64.
"""
import numpy as np
import pytest

import plait
import plait.numpy as pnp

FUNCS = ["exp", "log", "tanh", "sin", "cos", "expm1", "log1p", "arctan", "sinh", "cosh",
         "log2", "log10", "exp2", "arcsinh", "cbrt"]


def _values(dtype):
    fi = np.finfo(dtype)
    rng = np.random.default_rng(1)
    mags = np.exp(rng.uniform(np.log(fi.tiny) / 1.01, np.log(fi.max) / 1.01, 3000))
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, fi.tiny / 4, -fi.tiny / 4, fi.max, -fi.max,
               1.0, -1.0, 88.7, -103.9, 709.7]
    x = np.concatenate([mags, -mags, rng.uniform(-20, 20, 3000), special]).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_math_matches_numpy(dtype):
    x = _values(dtype)
    names = [n for n in FUNCS if hasattr(pnp, n)]

    def f(v):
        return [getattr(pnp, n)(v) for n in names]

    with np.errstate(all="ignore"):
        got = plait.jit(f, backend="native")(x)
        for n, g in zip(names, got):
            want = getattr(np, n)(x)
            g = np.asarray(g)
            # NaN and infinities exactly where NumPy has them
            np.testing.assert_array_equal(np.isnan(g), np.isnan(want), err_msg=n)
            np.testing.assert_array_equal(g[np.isinf(want)], want[np.isinf(want)], err_msg=n)
            fin = np.isfinite(want) & (np.abs(want) >= np.finfo(dtype).tiny)
            # a few ulp (glibc documents libmvec's bounds at <= 4 ulp)
            ulp = np.spacing(np.abs(want[fin]).astype(dtype))
            err = np.abs(g[fin].astype(np.float64) - want[fin].astype(np.float64)) / ulp
            assert err.max() <= 4, (n, float(err.max()))
