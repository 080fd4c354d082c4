"""Index helpers: unravel_index, ravel_multi_index, indices, diag/tril/triu_indices(_from),
choose, select, compress, extract, isin.

Index arrays whose values depend only on static shapes (``tril_indices`` ...)
are computed with NumPy and returned as constants; everything that reads array
values is built from ``plait.lax``. ``compress``/``extract`` have data-dependent
result shapes: eager only, or ``size=`` under ``jit``.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import PlaitValueError, PlaitTypeError
from plait.numpy import _promote
from plait.numpy.indexing import nonzero, take


def _int_array(x, name: str):
    x = _promote.arg(x, name)
    x = _promote.asarray_strong(x) if _promote.is_python_scalar(x) else x
    if not dtypes.is_integer(get_aval(x).dtype):
        raise PlaitTypeError(f"{name}: only int indices permitted, got {get_aval(x).dtype}")
    return lax.convert_element_type(x, dtypes.int64)


def _const(v) -> object:
    return _promote.wrap(np.asarray(v, np.int64))


def unravel_index(indices, shape, order: str = "C") -> tuple:
    """Flat indices -> one int64 index array per dimension of ``shape``."""
    shape = _promote.static_shape(shape, "unravel_index")
    if order not in ("C", "F"):
        raise PlaitValueError("unravel_index: order must be 'C' or 'F'")
    i = _int_array(indices, "unravel_index")
    size = int(np.prod(shape))
    if not isinstance(i, Tracer):
        v = concrete_value(i)
        if v.size and (v.min() < 0 or v.max() >= size):
            bad = v[(v < 0) | (v >= size)].flat[0]
            raise PlaitValueError(f"index {bad} is out of bounds for array with size {size}")
    dims = list(enumerate(shape))
    out = [None] * len(shape)
    for d, n in (reversed(dims) if order == "C" else dims):
        out[d] = lax.rem(i, n) if n else i
        i = lax.div(i, n) if n else i
    return tuple(out)


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    """One int64 flat index per element of the index arrays in ``multi_index``."""
    dims = _promote.static_shape(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise PlaitValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = mode if isinstance(mode, (tuple, list)) else [mode] * len(dims)
    idx = [_int_array(m, "ravel_multi_index") for m in multi_index]
    shape = _promote.broadcast_shapes(*[get_aval(i).shape for i in idx])
    strides, s = [0] * len(dims), 1
    for d in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        strides[d], s = s, s * dims[d]
    total = None
    for i, n, st, m in zip(idx, dims, strides, modes):
        if m == "raise":
            if not isinstance(i, Tracer):
                v = concrete_value(i)
                if v.size and (v.min() < 0 or v.max() >= n):
                    raise PlaitValueError("invalid entry in coordinates array")
        elif m == "wrap":
            r = lax.rem(i, n)
            i = lax.select(lax.lt(r, 0), lax.add(r, n), r)
        elif m == "clip":
            i = lax.clamp(0, i, n - 1)
        else:
            raise PlaitValueError(f"ravel_multi_index: clipmode must be 'raise', 'wrap' or "
                                  f"'clip', got {m!r}")
        term = _promote.broadcast_to_shape(lax.mul(i, st), shape)
        total = term if total is None else lax.add(total, term)
    return total


def indices(dimensions, dtype=int, sparse: bool = False):
    """Grid of indices: shape ``(len(dimensions), *dimensions)`` (or open grids if sparse)."""
    dims = _promote.static_shape(dimensions, "indices")
    dt = dtypes.canonical_dtype(dtype)
    if sparse:
        out = []
        for k, n in enumerate(dims):
            shp = [1] * len(dims)
            shp[k] = n
            out.append(lax.reshape(lax.iota(dt, n), tuple(shp)))
        return tuple(out)
    if not dims:
        return _promote.wrap(np.zeros((0,), dt))
    grids = [lax.reshape(lax.broadcasted_iota(dt, dims, k), (1,) + dims)
             for k in range(len(dims))]
    return lax.concatenate(grids, 0)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """Indices of the main diagonal of an ``(n,) * ndim`` array."""
    i = _const(np.arange(_promote.static_int(n, "diag_indices", "n")))
    return (i,) * _promote.static_int(ndim, "diag_indices", "ndim")


def diag_indices_from(arr) -> tuple:
    """Indices of the main diagonal of ``arr`` (all dimensions of equal length)."""
    shape = get_aval(_promote.arg(arr, "diag_indices_from")).shape
    if len(shape) < 2:
        raise PlaitValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise PlaitValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the lower triangle of an ``(n, m)`` matrix."""
    return tuple(_const(i) for i in np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the upper triangle of an ``(n, m)`` matrix."""
    return tuple(_const(i) for i in np.triu_indices(n, k, m))


def _matrix_shape(arr, name):
    shape = get_aval(_promote.arg(arr, name)).shape
    if len(shape) != 2:
        raise PlaitValueError("input array must be 2-d")
    return shape


def tril_indices_from(arr, k: int = 0) -> tuple:
    """``tril_indices`` for the shape of the 2-D ``arr``."""
    n, m = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr, k: int = 0) -> tuple:
    """``triu_indices`` for the shape of the 2-D ``arr``."""
    n, m = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def choose(a, choices, mode: str = "raise"):
    """``choices[a[i]][i]`` for every ``i``, all arguments broadcast together."""
    idx = _int_array(a, "choose")
    ch = _promote.promote_dtypes("choose", *choices)
    shape = _promote.broadcast_shapes(get_aval(idx).shape, *[get_aval(c).shape for c in ch])
    n = len(ch)
    if mode == "raise":
        if not isinstance(idx, Tracer):
            v = concrete_value(idx)
            if v.size and (v.min() < 0 or v.max() >= n):
                raise PlaitValueError("invalid entry in choice array")
    elif mode == "wrap":
        r = lax.rem(idx, n)
        idx = lax.select(lax.lt(r, 0), lax.add(r, n), r)
    elif mode == "clip":
        idx = lax.clamp(0, idx, n - 1)
    else:
        raise PlaitValueError(f"choose: clipmode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    idx = _promote.broadcast_to_shape(idx, shape)
    out = _promote.broadcast_to_shape(ch[-1], shape)
    for j in range(n - 2, -1, -1):
        out = lax.select(lax.eq(idx, j), _promote.broadcast_to_shape(ch[j], shape), out)
    return out


def select(condlist, choicelist, default=0):
    """Elements of the first ``choicelist`` entry whose condition holds, else ``default``."""
    if len(condlist) != len(choicelist):
        raise PlaitValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise PlaitValueError("select with an empty condition list is not possible")
    conds = [_promote.arg(c, "select") for c in condlist]
    for c in conds:
        if _promote.is_python_scalar(c) or not dtypes.is_bool(get_aval(c).dtype):
            raise PlaitTypeError("select: invalid entry in condlist: should be boolean ndarray")
    vals = _promote.promote_dtypes("select", *choicelist, default)
    shape = _promote.broadcast_shapes(*[get_aval(v).shape for v in vals + conds])
    out = _promote.broadcast_to_shape(vals[-1], shape)
    for c, v in zip(reversed(conds), reversed(vals[:-1])):
        out = lax.select(_promote.broadcast_to_shape(c, shape),
                         _promote.broadcast_to_shape(v, shape), out)
    return out


def compress(condition, a, axis: int | None = None, *, size: int | None = None,
             fill_value=None):
    """Slices of ``a`` along ``axis`` where the 1-D ``condition`` is true (eager, or
    ``size=`` under jit: the first ``size`` slices, padded with ``fill_value``, default 0)."""
    c = _promote.arg(condition, "compress")
    if _promote.is_python_scalar(c) or get_aval(c).ndim != 1:
        raise PlaitValueError("condition must be a 1-d array")
    x = _promote.arg(a, "compress")
    if axis is None:
        x, axis = lax.reshape(x, (get_aval(x).size,)), 0
    n = get_aval(x).shape[_promote.normalize_axis(axis, get_aval(x).ndim, "compress")]
    k = get_aval(c).shape[0]
    if k > n:
        raise PlaitValueError(f"compress: condition of length {k} is longer than axis "
                              f"{axis} of size {n}")
    if size is None:
        return take(x, nonzero(c)[0], axis=axis)
    sel = nonzero(c, size=size, fill_value=n)[0]
    fill = 0 if fill_value is None else fill_value
    return take(x, sel, axis=axis, mode="fill", fill_value=fill)


def extract(condition, arr, *, size: int | None = None, fill_value=None):
    """``ravel(arr)[ravel(condition) != 0]`` (eager, or ``size=`` under jit)."""
    c = _promote.arg(condition, "extract")
    x = _promote.arg(arr, "extract")
    c = lax.reshape(_promote.cast(c, dtypes.bool_), (get_aval(c).size,))
    return compress(c, lax.reshape(x, (get_aval(x).size,)), size=size, fill_value=fill_value)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         kind=None):
    """Whether each element of ``element`` occurs in ``test_elements`` (bool array)."""
    e, t = _promote.promote_dtypes("isin", _promote.asarray_strong(element, name="isin"),
                                   _promote.asarray_strong(test_elements, name="isin"))
    shape = get_aval(e).shape
    m = get_aval(t).size
    tf = lax.reshape(t, (m,))
    full = shape + (m,)
    hit = lax.eq(lax.broadcast_in_dim(e, full, tuple(range(len(shape)))),
                 lax.broadcast_in_dim(tf, full, (len(shape),)))
    found = lax.reduce_or(hit, (len(shape),))
    return lax.bitwise_not(found) if invert else found


__all__ = ["unravel_index", "ravel_multi_index", "indices", "diag_indices",
           "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "choose", "select", "compress", "extract", "isin"]
