"""Comparison helpers for the indexing / linalg / sorting tests: plait vs NumPy, eager and
under ``plait.jit``, with exact dtype equality."""
import numpy as np

import plait

RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12,
        np.dtype(np.complex64): 2e-5, np.dtype(np.complex128): 1e-12}


def assert_same(got, want, rtol=None):
    """``got`` (plait value or tuple) equals NumPy's ``want`` in dtype, shape and value."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"dtype {g.dtype} != NumPy's {w.dtype}"
    assert g.shape == w.shape, f"shape {g.shape} != NumPy's {w.shape}"
    if w.dtype.kind in "fc":
        tol = RTOL[w.dtype] if rtol is None else rtol
        scale = max(1.0, float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def check(fn_plait, fn_numpy, *args, jit=True, rtol=None):
    """Run ``fn_plait`` eagerly and (optionally) under ``plait.jit`` on ``args`` (as plait
    arrays) and compare both with ``fn_numpy(*args)``.

    ``jit`` uses the reference ``interp`` backend: these tests check how plait.numpy
    lowers to primitives; the native code generator has its own sweep.
    """
    want = fn_numpy(*args)
    pargs = [plait.device_put(a) for a in args]
    assert_same(fn_plait(*pargs), want, rtol)
    if jit:
        assert_same(plait.jit(fn_plait, backend="interp")(*pargs), want, rtol)


def rand(shape, dtype, seed=0):
    """Random values of ``dtype`` (small ints, floats in [-2, 2), complex)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "u":
        return rng.integers(0, 5, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-4, 5, shape).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dt)
    return rng.uniform(-2, 2, shape).astype(dt)


def ijit(fn, **kwargs):
    """``plait.jit`` on the reference backend (see :func:`check`)."""
    return plait.jit(fn, backend="interp", **kwargs)
