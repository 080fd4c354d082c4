"""Array creation: array/asarray, zeros/ones/full/empty(_like), arange, linspace,
logspace, eye, identity, tri/tril/triu, meshgrid, diag/diagflat, copy, fromfunction.

Sizes are static Python ints. Arrays made from shapes (``zeros``, ``arange``,
``eye``, ...) are built with ``lax.iota``/``lax.broadcast_in_dim``, so under
``jit`` they are staged into the graph rather than baked in as constants.
"""
from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy.array_api import place
from plait.numpy._promote import (arg, asarray_strong, cast, is_array, is_python_scalar,
                                  scalar_array, static_int, static_shape, broadcast_to_shape,
                                  result_type_of, normalize_axis)


def _dt(dtype, default=dtypes.float64):
    return dtypes.canonical_dtype(default if dtype is None else dtype)


def _contains_array(x) -> bool:
    if is_array(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_array(e) for e in x)
    return False


def _build_nested(obj):
    """Stack a nested list that contains plait arrays/tracers (NumPy's promotion)."""
    if isinstance(obj, (list, tuple)):
        parts = [_build_nested(o) for o in obj]
        if not parts:
            return scalar_array(0.0, dtypes.float64, False)
        from plait.numpy.shapes import stack
        return stack(parts)
    return asarray_strong(obj, name="array")


def array(object, dtype=None, *, copy: bool = True, order: str = "K", ndmin: int = 0):
    """Create an array (a ``plait.Array``; nested lists may contain traced values)."""
    if isinstance(object, (list, tuple)) and _contains_array(object):
        x = _build_nested(object)
    else:
        x = asarray_strong(object, name="array")
    if dtype is not None:
        x = cast(x, dtypes.canonical_dtype(dtype), False)
    elif get_aval(x).weak_type:
        x = cast(x, get_aval(x).dtype, False)
    nd = get_aval(x).ndim
    ndmin = static_int(ndmin, "array", "ndmin")
    if ndmin > nd:
        x = lax.reshape(x, (1,) * (ndmin - nd) + get_aval(x).shape)
    return x


def _on_device(fn):
    """Let ``fn``'s ``device=`` keyword place its result (``plait.devices()``, ``"cpu"``,
    ``"lazy"``); None keeps the default device."""
    @functools.wraps(fn)
    def placed(*args, device=None, **kwargs):
        out = fn(*args, **kwargs)
        if device is None:
            return out
        if isinstance(out, tuple):          # linspace(..., retstep=True)
            return (place(out[0], device, fn.__name__),) + out[1:]
        return place(out, device, fn.__name__)
    return placed


@_on_device
def asarray(a, dtype=None, order: str | None = None, *, device=None, copy: bool | None = None):
    """Convert ``a`` to an array (no copy for plait arrays of the right dtype)."""
    return array(a, dtype)


asanyarray = asarray
ascontiguousarray = asarray


def copy(a, order: str = "K"):
    """A copy of ``a`` (plait arrays are immutable, so this is ``asarray``)."""
    return array(a)


def _filled(shape, value, dt):
    s = static_shape(shape, "full")
    if any(d < 0 for d in s):
        raise PlaitValueError("negative dimensions are not allowed")
    v = cast(value, dt, False)
    return broadcast_to_shape(v, s)


@_on_device
def zeros(shape, dtype=None, order: str = "C", *, device=None):
    """Array of ``shape`` filled with zeros (float64 by default)."""
    return _filled(shape, 0, _dt(dtype))


@_on_device
def ones(shape, dtype=None, order: str = "C", *, device=None):
    """Array of ``shape`` filled with ones (float64 by default)."""
    return _filled(shape, 1, _dt(dtype))


empty = zeros


@_on_device
def full(shape, fill_value, dtype=None, order: str = "C", *, device=None):
    """Array of ``shape`` filled with ``fill_value`` (whose dtype is the default)."""
    v = asarray_strong(fill_value, name="full")
    return _filled(shape, v, get_aval(v).dtype if dtype is None else _dt(dtype))


def _like(a, dtype, shape):
    x = asarray_strong(a, name="like")
    s = get_aval(x).shape if shape is None else shape
    return s, (get_aval(x).dtype if dtype is None else dtypes.canonical_dtype(dtype))


@_on_device
def zeros_like(a, dtype=None, order: str = "K", subok: bool = True, shape=None, *, device=None):
    """Zeros with the shape and dtype of ``a``."""
    s, dt = _like(a, dtype, shape)
    return _filled(s, 0, dt)


@_on_device
def ones_like(a, dtype=None, order: str = "K", subok: bool = True, shape=None, *, device=None):
    """Ones with the shape and dtype of ``a``."""
    s, dt = _like(a, dtype, shape)
    return _filled(s, 1, dt)


empty_like = zeros_like


@_on_device
def full_like(a, fill_value, dtype=None, order: str = "K", subok: bool = True, shape=None, *,
              device=None):
    """``fill_value`` with the shape and dtype of ``a``."""
    s, dt = _like(a, dtype, shape)
    return _filled(s, fill_value, dt)


def _static_number(x, name: str):
    if isinstance(x, Tracer):
        raise PlaitTypeError(f"{name}: arguments must be static numbers, got a traced value "
                             f"{x.aval.str_short()}; the result's size must be known "
                             f"while tracing")
    if is_array(x):
        return x.item()
    return x


@_on_device
def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in ``[start, stop)`` (static arguments)."""
    start, stop, step = (_static_number(v, "arange") for v in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise PlaitValueError("Maximum allowed size exceeded")
    given = [v for v in (start, stop, step)]
    dt = np.result_type(*given) if dtype is None else dtypes.canonical_dtype(dtype)
    dt = dtypes.canonical_dtype(dt)
    n = max(int(math.ceil((stop - start) / step)), 0) if not isinstance(
        start + stop + step, complex) else max(int(math.ceil(((stop - start) / step).real)), 0)
    if dtypes.is_integer(dt) and all(isinstance(v, (int, np.integer)) for v in given):
        r = lax.iota(dt, n)
        if step != 1:
            r = lax.mul(r, int(step))
        return lax.add(r, int(start)) if start else r
    work = dt if dtypes.is_inexact(dt) else dtypes.float64
    with np.errstate(all="ignore"):
        first = work.type(start)
        delta = work.type(work.type(start + step) - first)
    r = lax.iota(work, n)
    r = lax.add(lax.mul(r, _py(delta)), _py(first))
    return cast(r, dt) if work != dt else r


def _py(v):
    """A NumPy scalar as the equal Python scalar (a weak lax operand)."""
    return complex(v) if isinstance(v, complex) or np.iscomplexobj(v) else float(v)


@_on_device
def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
    """``num`` evenly spaced samples over ``[start, stop]`` (NumPy's algorithm)."""
    num = static_int(num, "linspace", "num")
    if num < 0:
        raise PlaitValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    s, e = arg(start, "linspace"), arg(stop, "linspace")   # Python scalars stay weak
    dt, _ = result_type_of(s, e)
    if not dtypes.is_inexact(dt):
        dt = dtypes.float64
    from plait.numpy.ufuncs import true_divide, multiply, add, subtract, equal, where, floor
    from plait.numpy.shapes import moveaxis, concatenate
    s, e = cast(s, dt), cast(e, dt)
    delta = subtract(e, s)
    nd = get_aval(delta).ndim
    shape = (num,) + get_aval(delta).shape
    y = lax.broadcasted_iota(dt, shape, 0) if num else broadcast_to_shape(
        scalar_array(0, dt, False), shape)
    delta_b = broadcast_to_shape(delta, shape)
    if div > 0:
        step = true_divide(delta, div)
        step_b = broadcast_to_shape(step, shape)
        y = where(equal(step_b, 0), multiply(true_divide(y, div), delta_b), multiply(y, step_b))
    else:
        step = scalar_array(math.nan, dt, False)
        y = multiply(y, delta_b)
    y = add(y, broadcast_to_shape(s, shape))
    if endpoint and num > 1:
        from plait.numpy._basic_index import slice_axis
        y = concatenate([slice_axis(y, 0, slice(0, num - 1)),
                         lax.reshape(broadcast_to_shape(e, shape[1:]), (1,) + shape[1:])], axis=0)
    if axis != 0:
        y = moveaxis(y, 0, normalize_axis(axis, nd + 1, "linspace"))
    if dtype is not None:
        out_dt = dtypes.canonical_dtype(dtype)
        if dtypes.is_integer(out_dt):
            y = floor(y)
        y = cast(y, out_dt)
    return (y, step) if retstep else y


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
    """``base ** linspace(start, stop, num)``."""
    from plait.numpy.ufuncs import power
    from plait.numpy.shapes import expand_dims
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    b = base if is_python_scalar(base) else asarray_strong(base, name="logspace")
    if not is_python_scalar(b) and get_aval(b).ndim:
        b = expand_dims(b, axis)
    out = power(b, y)
    return out if dtype is None else cast(out, dtypes.canonical_dtype(dtype))


def _tri_mask(n: int, m: int, k: int):
    """Bool mask ``j <= i + k`` of shape (n, m)."""
    i = lax.broadcasted_iota(dtypes.int64, (n, m), 0)
    j = lax.broadcasted_iota(dtypes.int64, (n, m), 1)
    return lax.le(j, lax.add(i, k) if k else i)


@_on_device
def eye(N: int, M: int | None = None, k: int = 0, dtype=float, order: str = "C", *,
        device=None):
    """2-D array with ones on the ``k``-th diagonal."""
    N = static_int(N, "eye", "N")
    M = N if M is None else static_int(M, "eye", "M")
    k = static_int(k, "eye", "k")
    i = lax.broadcasted_iota(dtypes.int64, (N, M), 0)
    j = lax.broadcasted_iota(dtypes.int64, (N, M), 1)
    return cast(lax.eq(j, lax.add(i, k) if k else i), _dt(dtype))


@_on_device
def identity(n: int, dtype=None, *, device=None):
    """The ``n x n`` identity matrix."""
    return eye(n, dtype=_dt(dtype))


def tri(N: int, M: int | None = None, k: int = 0, dtype=float):
    """Ones at and below the ``k``-th diagonal."""
    N = static_int(N, "tri", "N")
    M = N if M is None else static_int(M, "tri", "M")
    return cast(_tri_mask(N, M, static_int(k, "tri", "k")), _dt(dtype))


def _tri_select(m, k, lower: bool, name: str):
    x = asarray_strong(m, name=name)
    a = get_aval(x)
    if a.ndim < 2:
        from plait.numpy.shapes import broadcast_to
        x = broadcast_to(x, (a.shape[-1] if a.shape else 1,) * 2) if a.ndim == 1 else x
        a = get_aval(x)
    if a.ndim < 2:
        raise PlaitValueError(f"{name}: input must be at least 1-D")
    n, mm = a.shape[-2:]
    k = static_int(k, name, "k")
    mask = _tri_mask(n, mm, k if lower else k - 1)
    if not lower:
        mask = lax.bitwise_not(mask)
    mask = broadcast_to_shape(mask, a.shape)
    zero = broadcast_to_shape(scalar_array(0, a.dtype, False), a.shape)
    return lax.select(mask, x, zero)


def tril(m, k: int = 0):
    """Lower triangle of (the last two axes of) ``m``."""
    return _tri_select(m, k, True, "tril")


def triu(m, k: int = 0):
    """Upper triangle of (the last two axes of) ``m``."""
    return _tri_select(m, k, False, "triu")


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
    """Coordinate arrays from coordinate vectors (``indexing`` 'xy' or 'ij')."""
    if indexing not in ("xy", "ij"):
        raise PlaitValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    from plait.numpy.shapes import reshape, broadcast_arrays
    nd = len(xi)
    s0 = (1,) * nd
    out = [reshape(asarray_strong(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    return tuple(out)


def _diagonal_2d(x, k: int):
    """The ``k``-th diagonal of a 2-D array (static strided slice of the flat array)."""
    from plait.numpy._basic_index import slice_axis
    n, m = get_aval(x).shape
    sub = slice_axis(x, 1, slice(k, None)) if k >= 0 else slice_axis(x, 0, slice(-k, None))
    r, c = get_aval(sub).shape
    count = max(min(r, c), 0)
    if count == 0:
        return lax.reshape(slice_axis(lax.reshape(sub, (r * c,)), 0, slice(0, 0)), (0,))
    flat = lax.reshape(sub, (r * c,))
    return lax.slice(flat, (0,), ((count - 1) * (c + 1) + 1,), (c + 1,))


def diag(v, k: int = 0):
    """Extract a diagonal of a 2-D array, or build a 2-D array from a 1-D diagonal."""
    x = asarray_strong(v, name="diag")
    k = static_int(k, "diag", "k")
    a = get_aval(x)
    if a.ndim == 2:
        return _diagonal_2d(x, k)
    if a.ndim != 1:
        raise PlaitValueError("Input must be 1- or 2-d.")
    n = a.shape[0]
    N = n + abs(k)
    vp = lax.pad(x, scalar_array(0, a.dtype, False), [(0, abs(k), 0)])
    i = lax.broadcasted_iota(dtypes.int64, (N, N), 0)
    j = lax.broadcasted_iota(dtypes.int64, (N, N), 1)
    mask = lax.eq(j, lax.add(i, k) if k else i)
    vals = lax.broadcast_in_dim(vp, (N, N), (0,) if k >= 0 else (1,))
    zero = broadcast_to_shape(scalar_array(0, a.dtype, False), (N, N))
    return lax.select(mask, vals, zero)


def diagflat(v, k: int = 0):
    """2-D array with the flattened input on the ``k``-th diagonal."""
    from plait.numpy.shapes import ravel
    return diag(ravel(v), k)


def fromfunction(function: Callable, shape, *, dtype=float, **kwargs):
    """``function(*index_grids)`` where grid ``i`` holds the index along axis ``i``."""
    s = static_shape(shape, "fromfunction")
    dt = _dt(dtype)
    grids = [lax.broadcasted_iota(dt, s, i) for i in range(len(s))]
    return function(*grids, **kwargs)
