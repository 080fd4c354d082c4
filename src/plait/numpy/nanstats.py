"""Order statistics that skip NaNs or take weights: nanmedian, nanquantile,
nanpercentile, and ``quantile``/``percentile`` with ``weights=`` (NumPy 2's
``method='inverted_cdf'``).

The data are sorted along the reduced axis (NaNs sort last); the number of
non-NaN values in each slice is traced, so the interpolation positions are
computed per slice and read with ``take_along_axis``. Everything works under
``jit``; a slice with no numbers gives NaN (NumPy also warns). ``q`` is static, as in
``plait.numpy.quantile``.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import reductions as red
from plait.numpy import shapes as sh
from plait.numpy import statistics as _stats
from plait.numpy.indexing import take_along_axis

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _prepare(a, axis, name: str):
    x = _promote.asarray_strong(a, name=name)
    av = get_aval(x)
    if dtypes.is_complex(av.dtype):
        raise PlaitTypeError("a must be an array of real numbers")
    axes = _promote.static_axes(axis, av.ndim, name)
    flat, rest = _stats._flatten_axes(x, axes)
    return x, av, axes, flat, rest


def _keep(res, av, axes, qshape: tuple, keepdims: bool):
    if not keepdims:
        return res
    kept = tuple(1 if i in axes else d for i, d in enumerate(av.shape))
    return lax.reshape(res, qshape + kept)


def _at(srt, idx):
    """``srt[..., idx]`` for a per-slice int index array ``idx`` of shape ``srt.shape[:-1]``."""
    return lax.squeeze(take_along_axis(srt, lax.expand_dims(idx, (get_aval(idx).ndim,)), -1),
                       (get_aval(idx).ndim,))


def _lerp(a, b, t, out_dt):
    """NumPy's ``_lerp`` with a traced ``t`` (exact at both ends); the difference is
    taken in the data dtype, the rest in ``out_dt``."""
    diff = _promote.cast(uf.subtract(b, a), out_dt)
    a, b = _promote.cast(a, out_dt), _promote.cast(b, out_dt)
    return uf.where(uf.greater_equal(t, 0.5), uf.subtract(b, uf.multiply(diff, uf.subtract(1, t))),
                    uf.add(a, uf.multiply(diff, t)))


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None,
                interpolation=None):
    """The ``q``-th quantiles along ``axis``, ignoring NaNs."""
    if weights is not None:
        return _weighted(a, q, axis, method, keepdims, weights, "nanquantile", nan_skip=True)
    method = interpolation or method
    if method not in _METHODS:
        raise PlaitValueError(f"nanquantile: method {method!r} is not supported; plait "
                              f"supports {', '.join(_METHODS)}")
    qa = _stats._static_q(q, "nanquantile")
    x, av, axes, flat, rest = _prepare(a, axis, "nanquantile")
    interpolates = method in ("linear", "midpoint")
    dt = av.dtype if dtypes.is_inexact(av.dtype) or not interpolates else dtypes.float64
    out_dt = dt if isinstance(q, (int, float)) or not interpolates else \
        np.promote_types(dt, dtypes.float64)
    n = get_aval(flat).shape[-1]
    if n == 0:
        raise PlaitValueError("nanquantile of an empty slice is not supported")
    srt = lax.sort(flat, dimension=len(rest))
    count = red.sum(uf.logical_not(uf.isnan(flat)), axis=-1)          # int64, shape rest
    last = uf.maximum(uf.subtract(count, 1), 0)
    outs = []
    for qv in qa.reshape(-1):
        v = uf.multiply(_promote.cast(last, dtypes.float64), float(qv))
        lo = uf.floor(v)
        lo_i = _promote.cast(lo, dtypes.int64)
        hi_i = uf.minimum(_promote.cast(uf.ceil(v), dtypes.int64), last)
        if method == "lower":
            r = _at(srt, lo_i)
        elif method == "higher":
            r = _at(srt, hi_i)
        elif method == "nearest":
            r = _at(srt, _promote.cast(uf.rint(v), dtypes.int64))
        else:
            a0 = _promote.cast(_at(srt, lo_i), dt)
            b0 = _promote.cast(_at(srt, hi_i), dt)
            if method == "midpoint":
                t = uf.where(uf.equal(hi_i, lo_i), 0.0, 0.5)
            else:
                t = uf.subtract(v, lo)
            r = _lerp(a0, b0, _promote.cast(t, out_dt), out_dt)
        if dtypes.is_inexact(av.dtype):
            r = uf.where(uf.equal(count, 0), np.nan, _promote.cast(r, out_dt))
        outs.append(_promote.cast(r, out_dt))
    res = outs[0] if qa.ndim == 0 else sh.stack(outs)
    return _keep(res, av, axes, tuple(qa.shape), keepdims)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None,
                  interpolation=None):
    """The ``q``-th percentiles (``q`` in [0, 100]) along ``axis``, ignoring NaNs."""
    return nanquantile(a, _as_fraction(q, "nanpercentile"), axis, method=method,
                       keepdims=keepdims, weights=weights, interpolation=interpolation)


def _as_fraction(q, name: str):
    if isinstance(q, Tracer):
        _stats._static_q(q, name)
    qa = np.true_divide(np.asarray(concrete_value(q) if _promote.is_array(q) else q,
                                   dtype=np.float64), 100)
    if np.any((qa < 0) | (qa > 1)):
        raise PlaitValueError("Percentiles must be in the range [0, 100]")
    return float(qa) if isinstance(q, (int, float)) else qa


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """Median along ``axis``, ignoring NaNs (the mean of the two middle numbers)."""
    x, av, axes, flat, rest = _prepare(a, axis, "nanmedian")
    if not dtypes.is_inexact(av.dtype):
        return _stats.median(a, axis, keepdims=keepdims)
    n = get_aval(flat).shape[-1]
    if n == 0:
        raise PlaitValueError("nanmedian of an empty slice is not supported")
    srt = lax.sort(flat, dimension=len(rest))
    count = red.sum(uf.logical_not(uf.isnan(flat)), axis=-1)
    hi = uf.minimum(uf.floor_divide(count, 2), n - 1)
    lo = uf.maximum(uf.subtract(uf.floor_divide(uf.add(count, 1), 2), 1), 0)
    r = _stats.midpoint(_at(srt, lo), _at(srt, hi), av.dtype)
    r = uf.where(uf.equal(count, 0), np.nan, r)
    return _keep(_promote.cast(r, av.dtype), av, axes, (), keepdims)


def _weighted(a, q, axis, method, keepdims, weights, name: str, nan_skip: bool = False):
    """``method='inverted_cdf'`` with weights: the first sorted value whose cumulative
    weight fraction reaches ``q``."""
    if method != "inverted_cdf":
        raise PlaitValueError("Only method 'inverted_cdf' supports weights. "
                              f"Got: {method}.")
    qa = _stats._static_q(q, name)
    x = _promote.asarray_strong(a, name=name)
    av = get_aval(x)
    if dtypes.is_complex(av.dtype):
        raise PlaitTypeError("a must be an array of real numbers")
    w = _promote.asarray_strong(weights, name=name)
    wshape = get_aval(w).shape
    if axis is None:
        if wshape != av.shape:
            raise PlaitValueError(f"{name}: weights must have the shape of a when axis=None")
        x, w = lax.reshape(x, (av.size,)), lax.reshape(w, (av.size,))
        ax = 0
    else:
        if isinstance(axis, (tuple, list)):
            if len(axis) != 1:
                raise PlaitValueError(f"{name}: weights need a single int axis")
            axis = axis[0]
        ax = _promote.normalize_axis(axis, av.ndim, name)
        if wshape == (av.shape[ax],):
            w = _promote.broadcast_to_shape(lax.reshape(w, tuple(
                av.shape[ax] if i == ax else 1 for i in range(av.ndim))), av.shape)
        elif wshape != av.shape:
            raise PlaitValueError("Shape of weights must be consistent with shape of a along "
                                  "specified axis.")
    if not isinstance(w, Tracer) and np.any(concrete_value(w) < 0):
        raise PlaitValueError("Weights must be non-negative.")
    xm = sh.moveaxis(x, ax, -1)
    wm = sh.moveaxis(w, ax, -1)
    n = get_aval(xm).shape[-1]
    if n == 0:
        raise PlaitValueError(f"{name} of an empty slice is not supported")
    last = get_aval(xm).ndim - 1
    srt, ws = lax.sort((xm, wm), last, True, 1)
    inexact = dtypes.is_inexact(av.dtype)
    if nan_skip and inexact:   # NaNs sort last; with zero weight they are never picked
        ws = uf.where(uf.isnan(srt), 0, ws)
    cdf = red.cumsum(_promote.cast(ws, dtypes.float64), axis=-1)
    cdf = uf.divide(cdf, cdf[..., n - 1:n])
    cdf = uf.where(uf.equal(cdf, 0), -1.0, cdf)
    if not inexact:
        has_nan = None
    elif nan_skip:   # all-NaN slices
        has_nan = uf.isnan(srt[..., 0])
    else:
        has_nan = uf.isnan(srt[..., n - 1])
    outs = []
    for qv in qa.reshape(-1):
        idx = red.sum(uf.less(cdf, float(qv)), axis=-1)
        idx = uf.minimum(idx, n - 1)
        r = _at(srt, idx)
        if has_nan is not None:
            r = uf.where(has_nan, np.nan, r)
        outs.append(_promote.cast(r, av.dtype))
    res = outs[0] if qa.ndim == 0 else sh.stack(outs)
    axes = tuple(range(av.ndim)) if axis is None else (ax,)
    return _keep(res, av, axes, tuple(qa.shape), keepdims)


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights=None,
             interpolation=None):
    """``plait.numpy.quantile``, plus ``weights=`` with ``method='inverted_cdf'``."""
    if weights is None:
        return _stats.quantile(a, q, axis, method=method, keepdims=keepdims,
                               interpolation=interpolation)
    return _weighted(a, q, axis, interpolation or method, keepdims, weights, "quantile")


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None,
               interpolation=None):
    """``plait.numpy.percentile``, plus ``weights=`` with ``method='inverted_cdf'``."""
    if weights is None:
        return _stats.percentile(a, q, axis, method=method, keepdims=keepdims,
                                 interpolation=interpolation)
    return _weighted(a, _as_fraction(q, "percentile"), axis, interpolation or method,
                     keepdims, weights, "percentile")


__all__ = ["nanquantile", "nanpercentile", "nanmedian", "quantile", "percentile"]
