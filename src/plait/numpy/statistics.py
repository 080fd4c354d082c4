"""Order statistics over sorted values: quantile, percentile, median.

The data are sorted with ``lax.sort`` along the reduced axis (several axes are
first moved to the end and merged); the static ``q`` values pick fixed
positions, interpolated with NumPy's ``_lerp``. A slice containing NaN gives
NaN, as in NumPy.
"""
from __future__ import annotations

import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy._promote import (asarray_strong, broadcast_to_shape, cast, scalar_array,
                                  static_axes)
from plait.numpy._basic_index import slice_axis
from plait.numpy import ufuncs as uf

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _static_q(q, name: str) -> np.ndarray:
    if isinstance(q, Tracer):
        raise PlaitTypeError(f"{name}: q must be static (Python numbers or a list of them), "
                             f"got a traced value {q.aval.str_short()}")
    qa = np.asarray(q.__array__() if hasattr(q, "_value") else q, dtype=np.float64)
    if qa.ndim > 1:
        raise PlaitValueError(f"{name}: q must be a scalar or 1-D")
    if np.any((qa < 0) | (qa > 1)) or np.any(np.isnan(qa)):
        raise PlaitValueError("Quantiles must be in the range [0, 1]")
    return qa


def _lerp(a, b, t: float, out_dt=None):
    """NumPy's ``_lerp``; the difference is taken in the data dtype, the rest in ``out_dt``."""
    diff = uf.subtract(b, a)
    if out_dt is not None:
        a, b, diff = cast(a, out_dt), cast(b, out_dt), cast(diff, out_dt)
    if t >= 0.5:
        return uf.subtract(b, uf.multiply(diff, 1 - t))
    return uf.add(a, uf.multiply(diff, t))


def _flatten_axes(x, axes: tuple):
    """Move ``axes`` to the end and merge them into one trailing axis."""
    s = get_aval(x).shape
    rest = [i for i in range(len(s)) if i not in axes]
    x = lax.transpose(x, tuple(rest) + axes)
    n = 1
    for a in axes:
        n *= s[a]
    return lax.reshape(x, tuple(s[i] for i in rest) + (n,)), [s[i] for i in rest]


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights=None,
             interpolation=None):
    """The ``q``-th quantiles (``q`` static in [0, 1]) along ``axis``."""
    if weights is not None:
        raise PlaitValueError("quantile: weights are not supported")
    method = interpolation or method
    if method not in _METHODS:
        raise PlaitValueError(f"quantile: method {method!r} is not supported; plait supports "
                              f"{', '.join(_METHODS)}")
    qa = _static_q(q, "quantile")
    x = asarray_strong(a, name="quantile")
    av = get_aval(x)
    if dtypes.is_complex(av.dtype):
        raise PlaitTypeError("a must be an array of real numbers")
    axes = static_axes(axis, av.ndim, "quantile")
    dt = av.dtype if dtypes.is_inexact(av.dtype) else dtypes.float64
    out_dt = dt
    if not isinstance(q, (int, float)):   # NumPy: a q array is strong float64 (NEP 50)
        out_dt = np.promote_types(dt, dtypes.float64)
    flat, rest = _flatten_axes(x, axes)
    n = get_aval(flat).shape[-1]
    if n == 0:
        raise PlaitValueError("quantile of an empty slice is not supported")
    srt = lax.sort(flat, dimension=len(rest))
    last = len(rest)

    def at(i):
        return lax.reshape(slice_axis(srt, last, slice(i, i + 1)), tuple(rest))

    outs = []
    for qv in qa.reshape(-1):
        v = float(qv) * (n - 1)
        lo, hi = int(math.floor(v)), int(math.ceil(v))
        g = v - lo
        if method == "lower":
            r = cast(at(lo), dt)
        elif method == "higher":
            r = cast(at(hi), dt)
        elif method == "nearest":
            idx = int(np.around(v))
            r = cast(at(idx), dt)
        elif method == "midpoint":
            r = _lerp(cast(at(lo), dt), cast(at(hi), dt), 0.5 if hi != lo else 0.0, out_dt)
        else:
            r = _lerp(cast(at(lo), dt), cast(at(hi), dt), g, out_dt)
        r = cast(r, out_dt)
        if dtypes.is_float(av.dtype):
            r = uf.where(uf.isnan(at(n - 1)), math.nan, r)
            r = cast(r, out_dt)
        outs.append(r)
    res = cast(outs[0] if qa.ndim == 0 else _stack(outs), out_dt)
    if keepdims:
        s = av.shape
        kept = tuple(1 if i in axes else d for i, d in enumerate(s))
        res = lax.reshape(res, tuple(qa.shape) + kept)
    return res


def _stack(xs):
    from plait.numpy.shapes import stack
    return stack(xs)


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None,
               interpolation=None):
    """The ``q``-th percentiles (``q`` static in [0, 100]) along ``axis``."""
    if isinstance(q, Tracer):
        _static_q(q, "percentile")
    qa = np.true_divide(np.asarray(q.__array__() if hasattr(q, "_value") else q,
                                   dtype=np.float64), 100)
    if np.any((qa < 0) | (qa > 1)):
        raise PlaitValueError("Percentiles must be in the range [0, 100]")
    qarg = float(qa) if isinstance(q, (int, float)) else qa
    return quantile(a, qarg, axis, method=method, keepdims=keepdims, interpolation=interpolation)


def midpoint(lo, hi, dt: np.dtype):
    """The mean of the two middle values ``lo`` and ``hi`` as NumPy's median takes it:
    summed in the mean's accumulator (float32 for float16, so two values near the
    float16 maximum do not overflow) and returned in ``dt``."""
    acc = dtypes.float32 if dt == dtypes.float16 else dt
    return cast(uf.true_divide(uf.add(cast(lo, acc), cast(hi, acc)), 2), dt)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """Median along ``axis`` (the mean of the two middle values for even sizes)."""
    x = asarray_strong(a, name="median")
    av = get_aval(x)
    axes = static_axes(axis, av.ndim, "median")
    dt = av.dtype if dtypes.is_inexact(av.dtype) else dtypes.float64
    flat, rest = _flatten_axes(x, axes)
    n = get_aval(flat).shape[-1]
    if n == 0:   # nan, as NumPy (which also warns "Mean of empty slice")
        r = broadcast_to_shape(scalar_array(math.nan, dt, False), tuple(rest))
        if keepdims:
            r = lax.reshape(r, tuple(1 if i in axes else d for i, d in enumerate(av.shape)))
        return r
    srt = lax.sort(flat, dimension=len(rest))
    last = len(rest)

    def at(i):
        return cast(lax.reshape(slice_axis(srt, last, slice(i, i + 1)), tuple(rest)), dt)

    if n % 2:
        r = at(n // 2)
    else:
        r = midpoint(at(n // 2 - 1), at(n // 2), dt)
    if dtypes.is_float(av.dtype):
        r = cast(uf.where(uf.isnan(at(n - 1)), math.nan, r), dt)
    if keepdims:
        r = lax.reshape(r, tuple(1 if i in axes else d for i, d in enumerate(av.shape)))
    return r
