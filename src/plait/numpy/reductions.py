"""Reductions: sum, prod, mean, var, std, max, min, argmax, argmin, any, all, ptp,
cumsum, cumprod, average, count_nonzero, the nan* variants, median/quantile/percentile.

``axis`` is None, an int or a tuple of ints (negative allowed, static);
``keepdims``, ``dtype`` and ``where=`` follow NumPy 2: sums and products of bool
and small integers accumulate in int64 (uint64 for unsigned), means of integers
are float64, float16 means accumulate in float32.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, concrete_value, get_aval
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy._promote import (arg, asarray_strong, cast, broadcast_to_shape, scalar_array,
                                  static_axes, normalize_axis, is_python_scalar)
from plait.numpy import ufuncs as uf, _complex_order


def _x(a, name):
    return asarray_strong(a, name=name)


def _keep(y, shape: tuple, axes: tuple, keepdims: bool):
    if not keepdims:
        return y
    return lax.reshape(y, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _sum_dtype(dt: np.dtype) -> np.dtype:
    """NumPy's default accumulator of add/multiply reductions."""
    if dt == dtypes.bool_ or (dtypes.is_integer(dt) and not dtypes.is_unsigned(dt)):
        return dtypes.int64 if dt.itemsize < 8 or dt == dtypes.bool_ else dt
    if dtypes.is_unsigned(dt):
        return dtypes.uint64
    return dt


def _full(shape, v, dt):
    return broadcast_to_shape(scalar_array(v, dt, False), shape)


def _mask(where, shape):
    w = cast(arg(where, "where"), dtypes.bool_)
    if is_python_scalar(w):
        w = scalar_array(bool(w), dtypes.bool_, False)
    return broadcast_to_shape(w, shape)


def _apply_where(x, where, fill):
    if where is None or where is True:
        return x
    a = get_aval(x)
    return lax.select(_mask(where, a.shape), x, _full(a.shape, fill, a.dtype))


def _sumlike(a, axis, dtype, keepdims, initial, where, name, reducer, ident):
    x = _x(a, name)
    s = get_aval(x).shape
    axes = static_axes(axis, len(s), name)
    dt = _sum_dtype(get_aval(x).dtype) if dtype is None else dtypes.canonical_dtype(dtype)
    if dt == dtypes.bool_:
        x = cast(_apply_where(cast(x, dt), where, ident == 1), dt)
        y = (lax.reduce_or if ident == 0 else lax.reduce_and)(x, axes)
    else:
        x = _apply_where(cast(x, dt), where, ident)
        y = reducer(x, axes)
    if initial is not None:
        y = (uf.add if ident == 0 else uf.multiply)(y, cast(arg(initial), dt))
        y = cast(y, dt)
    return _keep(y, s, axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Sum of elements over ``axis``."""
    _no_out(out)
    return _sumlike(a, axis, dtype, keepdims, initial, where, "sum", lax.reduce_sum, 0)


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Product of elements over ``axis``."""
    _no_out(out)
    return _sumlike(a, axis, dtype, keepdims, initial, where, "prod", lax.reduce_prod, 1)


def _no_out(out):
    if out is not None:
        raise PlaitTypeError("plait arrays are immutable: the out= argument is not supported; "
                             "use the return value")


def _count(shape, axes, where):
    """Number of elements reduced (a Python int, or an array when ``where`` is given)."""
    if where is None or where is True:
        n = 1
        for i in axes:
            n *= shape[i]
        return n
    m = cast(_mask(where, shape), dtypes.int64)
    return lax.reduce_sum(m, axes)


def _mean_dtypes(dt: np.dtype, dtype):
    """(accumulation dtype, result dtype) of mean/var for input dtype ``dt``."""
    if dtype is not None:
        out = dtypes.canonical_dtype(dtype)
        return (dtypes.float32 if out == dtypes.float16 else out), out
    if not dtypes.is_inexact(dt):
        return dtypes.float64, dtypes.float64
    if dt == dtypes.float16:
        return dtypes.float32, dt
    return dt, dt


def _div_count(total, n, dt):
    if isinstance(n, (int, float)):
        return lax.div(total, scalar_array(n, dt) if get_aval(total).shape == () else
                       broadcast_to_shape(scalar_array(n, dt), get_aval(total).shape))
    return lax.div(total, cast(n, dt))


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean over ``axis`` (float64 for integer input)."""
    _no_out(out)
    x = _x(a, "mean")
    s = get_aval(x).shape
    axes = static_axes(axis, len(s), "mean")
    acc, res = _mean_dtypes(get_aval(x).dtype, dtype)
    xs = _apply_where(cast(x, acc), where, 0)
    total = lax.reduce_sum(xs, axes)
    m = cast(_div_count(total, _count(s, axes, where), acc), res)
    return _keep(m, s, axes, keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None,
        mean=None, correction=None):
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom."""
    _no_out(out)
    if correction is not None:
        ddof = correction
    x = _x(a, "var")
    s = get_aval(x).shape
    axes = static_axes(axis, len(s), "var")
    acc, res = _mean_dtypes(get_aval(x).dtype, dtype)
    xs = cast(x, acc)
    n = _count(s, axes, where)
    if mean is None:
        mu = _div_count(lax.reduce_sum(_apply_where(xs, where, 0), axes), n, acc)
    else:
        mu = cast(asarray_strong(mean), acc)
        mu = lax.reshape(mu, tuple(d for i, d in enumerate(get_aval(mu).shape) if i not in axes)) \
            if get_aval(mu).ndim == len(s) else mu
    mu_b = lax.broadcast_in_dim(mu, s, tuple(i for i in range(len(s)) if i not in axes))
    d = lax.sub(xs, mu_b)
    if dtypes.is_complex(acc):
        sq = lax.add(lax.mul(lax.real(d), lax.real(d)), lax.mul(lax.imag(d), lax.imag(d)))
    else:
        sq = lax.mul(d, d)
    rdt = dtypes.real_dtype(acc)
    total = lax.reduce_sum(_apply_where(sq, where, 0), axes)
    if isinstance(n, int):
        v = _div_count(total, builtins.max(n - ddof, 0), rdt)
    else:
        dd = cast(arg(ddof), rdt)
        v = lax.div(total, uf.maximum(uf.subtract(cast(n, rdt), dd), 0))
    return _keep(cast(v, dtypes.real_dtype(res)), s, axes, keepdims)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None,
        mean=None, correction=None):
    """Standard deviation over ``axis`` (square root of :func:`var`)."""
    return uf.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                       correction=correction))


def _extreme(a, axis, keepdims, initial, where, name, reducer, np_name, lowest: bool):
    x = _x(a, name)
    av = get_aval(x)
    s = av.shape
    axes = static_axes(axis, len(s), name)
    if initial is None and builtins.any(s[i] == 0 for i in axes) or (initial is None and not axes and
                                                            av.size == 0):
        raise PlaitValueError(f"zero-size array to reduction operation {np_name} which has "
                              f"no identity")
    if where is not None and where is not True:
        if initial is None:
            raise PlaitValueError(f"reduction operation '{np_name}' does not have an identity, "
                                  f"so to use a where mask one has to specify 'initial'")
        ident = _identity_extreme(av.dtype, lowest)
        if dtypes.is_complex(av.dtype):      # masked-out elements act as `initial`
            x = lax.select(_mask(where, s), x, broadcast_to_shape(
                lax.reshape(cast(arg(initial), av.dtype), ()), s))
        else:
            x = _apply_where(x, where, ident)
    if dtypes.is_complex(av.dtype):
        init = None if initial is None else lax.reshape(cast(arg(initial), av.dtype), ())
        y = _complex_order.extreme(x, axes, lowest, init) if axes else x
        return _keep(y, s, axes, keepdims)
    y = reducer(x, axes)
    if initial is not None:
        y = cast((uf.maximum if lowest else uf.minimum)(y, cast(arg(initial), av.dtype)),
                 av.dtype)
    return _keep(y, s, axes, keepdims)


def _identity_extreme(dt, lowest: bool):
    if dtypes.is_bool(dt):
        return not lowest
    if dtypes.is_integer(dt):
        info = np.iinfo(dt)
        return int(info.min) if lowest else int(info.max)
    return -math.inf if lowest else math.inf


def max(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Maximum over ``axis`` (NaN propagates)."""
    _no_out(out)
    return _extreme(a, axis, keepdims, initial, where, "max", lax.reduce_max, "maximum", True)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Minimum over ``axis`` (NaN propagates)."""
    _no_out(out)
    return _extreme(a, axis, keepdims, initial, where, "min", lax.reduce_min, "minimum", False)


amax = max
amin = min


def ptp(a, axis=None, out=None, keepdims: bool = False):
    """Range of values (maximum - minimum) over ``axis``."""
    _no_out(out)
    return uf.subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def _arg(a, axis, keepdims, name, fn):
    x = _x(a, name)
    s = get_aval(x).shape
    if dtypes.is_complex(get_aval(x).dtype):        # NumPy's lexicographic order
        largest = name == "argmax"
        fn = lambda v, ax: _complex_order.arg_extreme(v, ax, largest)  # noqa: E731
    if axis is None:
        if get_aval(x).size == 0:
            raise PlaitValueError(f"attempt to get {name} of an empty sequence")
        y = fn(lax.reshape(x, (get_aval(x).size,)), 0)
        return lax.reshape(y, (1,) * len(s)) if keepdims else y
    ax = normalize_axis(axis, len(s), name)
    if s[ax] == 0:
        raise PlaitValueError(f"attempt to get {name} of an empty sequence")
    y = fn(x, ax)
    return _keep(y, s, (ax,), keepdims)


def argmax(a, axis=None, out=None, *, keepdims: bool = False):
    """Index of the first maximum (the first NaN if any), along ``axis`` or flat."""
    _no_out(out)
    return _arg(a, axis, keepdims, "argmax", lax.argmax)


def argmin(a, axis=None, out=None, *, keepdims: bool = False):
    """Index of the first minimum (the first NaN if any), along ``axis`` or flat."""
    _no_out(out)
    return _arg(a, axis, keepdims, "argmin", lax.argmin)


def _boolred(a, axis, keepdims, where, name, reducer, fill):
    x = cast(_x(a, name), dtypes.bool_)
    s = get_aval(x).shape
    axes = static_axes(axis, len(s), name)
    y = reducer(_apply_where(x, where, fill), axes)
    return _keep(y, s, axes, keepdims)


def any(a, axis=None, out=None, keepdims: bool = False, *, where=None):
    """Whether any element along ``axis`` is true (non-zero)."""
    _no_out(out)
    return _boolred(a, axis, keepdims, where, "any", lax.reduce_or, False)


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None):
    """Whether all elements along ``axis`` are true (non-zero)."""
    _no_out(out)
    return _boolred(a, axis, keepdims, where, "all", lax.reduce_and, True)


def count_nonzero(a, axis=None, *, keepdims: bool = False):
    """Number of non-zero elements along ``axis`` (int64)."""
    x = cast(_x(a, "count_nonzero"), dtypes.bool_)
    s = get_aval(x).shape
    axes = static_axes(axis, len(s), "count_nonzero")
    return _keep(lax.reduce_sum(cast(x, dtypes.int64), axes), s, axes, keepdims)


def _cum(a, axis, dtype, name, fn):
    x = _x(a, name)
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        axis = 0
    ax = normalize_axis(axis, get_aval(x).ndim, name)
    dt = _sum_dtype(get_aval(x).dtype) if dtype is None else dtypes.canonical_dtype(dtype)
    return fn(cast(x, dt), ax)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened when None)."""
    _no_out(out)
    return _cum(a, axis, dtype, "cumsum", lax.cumsum)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (flattened when None)."""
    _no_out(out)
    return _cum(a, axis, dtype, "cumprod", lax.cumprod)


def _cumulative(fn, ident):
    def f(x, /, *, axis=None, dtype=None, out=None, include_initial: bool = False):
        _no_out(out)
        xa = _x(x, fn.__name__)
        if axis is None:
            if get_aval(xa).ndim > 1:
                raise PlaitValueError("axis must be specified for arrays of more than one "
                                      "dimension")
            axis = 0
        y = fn(xa, axis, dtype)
        if include_initial:
            ax = normalize_axis(axis, get_aval(y).ndim, fn.__name__)
            cfg = [(0, 0, 0)] * get_aval(y).ndim
            cfg[ax] = (1, 0, 0)
            y = lax.pad(y, scalar_array(ident, get_aval(y).dtype, False), cfg)
        return y
    return f


cumulative_sum = _cumulative(cumsum, 0)
cumulative_prod = _cumulative(cumprod, 1)


def average(a, axis=None, weights=None, returned: bool = False, *, keepdims: bool = False):
    """Weighted average along ``axis`` (``mean`` without weights)."""
    x = _x(a, "average")
    s = get_aval(x).shape
    if weights is None:
        avg = mean(x, axis, keepdims=keepdims)
        if returned:
            axes = static_axes(axis, len(s), "average")
            n = _count(s, axes, None)
            cnt = broadcast_to_shape(scalar_array(n, get_aval(avg).dtype, False),
                                     get_aval(avg).shape)
            return avg, cnt
        return avg
    w = _x(weights, "average")
    ws = get_aval(w).shape
    xd, wd = get_aval(x).dtype, get_aval(w).dtype
    if not dtypes.is_inexact(xd):
        rdt = np.result_type(xd, wd, dtypes.float64)
    else:
        rdt = np.result_type(xd, wd)
    if ws != s:
        if axis is None:
            raise PlaitTypeError("Axis must be specified when shapes of a and weights differ.")
        if len(ws) != 1:
            raise PlaitTypeError("1D weights expected when shapes of a and weights differ.")
        ax = normalize_axis(axis, len(s), "average")
        if ws[0] != s[ax]:
            raise PlaitValueError("Length of weights not compatible with specified axis.")
        w = lax.broadcast_in_dim(w, s, (ax,))
    scl = sum(w, axis, dtype=rdt, keepdims=keepdims)
    num = sum(uf.multiply(cast(x, rdt), cast(w, rdt)), axis, keepdims=keepdims)
    avg = uf.true_divide(num, scl)
    if returned:
        return avg, broadcast_to_shape(scl, get_aval(avg).shape)
    return avg


# --- nan-aware reductions -------------------------------------------------------------
def _nan_filled(a, name, fill):
    x = _x(a, name)
    if not dtypes.is_inexact(get_aval(x).dtype):
        return x, None
    nanmask = uf.isnan(x)
    fillv = broadcast_to_shape(scalar_array(fill, get_aval(x).dtype, False), get_aval(x).shape)
    return lax.select(nanmask, fillv, x), nanmask


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Sum treating NaN as zero."""
    x, _ = _nan_filled(a, "nansum", 0)
    return sum(x, axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
            where=None):
    """Product treating NaN as one."""
    x, _ = _nan_filled(a, "nanprod", 1)
    return prod(x, axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """Mean ignoring NaN (NaN for all-NaN slices)."""
    x, nanmask = _nan_filled(a, "nanmean", 0)
    if nanmask is None:
        return mean(x, axis, dtype, out, keepdims, where=where)
    keep = lax.bitwise_not(nanmask)
    if where is not None and where is not True:
        keep = lax.bitwise_and(keep, _mask(where, get_aval(x).shape))
    return mean(x, axis, dtype, out, keepdims, where=keep)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None):
    """Variance ignoring NaN."""
    x, nanmask = _nan_filled(a, "nanvar", 0)
    if nanmask is None:
        return var(x, axis, dtype, out, ddof, keepdims, where=where)
    keep = lax.bitwise_not(nanmask)
    if where is not None and where is not True:
        keep = lax.bitwise_and(keep, _mask(where, get_aval(x).shape))
    return var(x, axis, dtype, out, ddof, keepdims, where=keep)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None):
    """Standard deviation ignoring NaN."""
    return uf.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where))


def _nanext(a, axis, keepdims, name, red, lowest):
    x = _x(a, name)
    if not dtypes.is_float(get_aval(x).dtype):
        return red(x, axis, keepdims=keepdims)
    filled, nanmask = _nan_filled(x, name, -math.inf if lowest else math.inf)
    y = red(filled, axis, keepdims=keepdims)
    allnan = all(nanmask, axis, keepdims=keepdims)
    return uf.where(allnan, math.nan, y)


def nanmax(a, axis=None, out=None, keepdims: bool = False):
    """Maximum ignoring NaN (NaN for all-NaN slices)."""
    _no_out(out)
    return _nanext(a, axis, keepdims, "nanmax", max, True)


def nanmin(a, axis=None, out=None, keepdims: bool = False):
    """Minimum ignoring NaN (NaN for all-NaN slices)."""
    _no_out(out)
    return _nanext(a, axis, keepdims, "nanmin", min, False)


def _nanarg(a, axis, keepdims, name, fill, arg_fn):
    """``arg_fn`` of ``a`` with NaN replaced by ``fill``; an all-NaN slice raises
    ValueError eagerly (as NumPy) and gives -1 under a transformation, where the
    values are unknown (as JAX: never a valid-looking index)."""
    x, nanmask = _nan_filled(a, name, fill)
    idx = arg_fn(x, axis, keepdims=keepdims)
    if nanmask is None:
        return idx
    all_nan = all(nanmask, axis, keepdims=keepdims)
    if not isinstance(all_nan, Tracer):
        if np.any(concrete_value(all_nan)):
            raise PlaitValueError(f"{name}: All-NaN slice encountered")
        return idx
    a_idx = get_aval(idx)
    minus1 = broadcast_to_shape(scalar_array(-1, a_idx.dtype, False), a_idx.shape)
    return lax.select(all_nan, minus1, idx)


def nanargmax(a, axis=None, out=None, *, keepdims: bool = False):
    """Index of the maximum ignoring NaN. An all-NaN slice raises ValueError eagerly
    (as NumPy) and gives -1 under ``jit``/``vmap``/``grad`` (as JAX)."""
    _no_out(out)
    return _nanarg(a, axis, keepdims, "nanargmax", -math.inf, argmax)


def nanargmin(a, axis=None, out=None, *, keepdims: bool = False):
    """Index of the minimum ignoring NaN. An all-NaN slice raises ValueError eagerly
    (as NumPy) and gives -1 under ``jit``/``vmap``/``grad`` (as JAX)."""
    _no_out(out)
    return _nanarg(a, axis, keepdims, "nanargmin", math.inf, argmin)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as zero."""
    x, _ = _nan_filled(a, "nancumsum", 0)
    return cumsum(x, axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as one."""
    x, _ = _nan_filled(a, "nancumprod", 1)
    return cumprod(x, axis, dtype, out)
