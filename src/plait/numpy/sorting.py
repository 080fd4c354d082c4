"""Sorting and searching: sort, argsort, lexsort, partition, argpartition, sort_complex,
searchsorted, digitize, unique (and the ``unique_*`` family), bincount, histogram.

Everything sorts with the stable multi-operand ``lax.sort`` (NaNs last, complex
by real then imaginary part, as NumPy). ``searchsorted`` compares every query
with every element (``O(len(a) * len(v))`` work, no data-dependent shapes) in
NumPy's total order. Functions whose result shape depends on the data
(``unique``, ``bincount`` without ``length``, ``histogram``) run eagerly on
concrete arrays; under ``jit`` they raise a ``ConcretizationError`` that
points to the ``size=``/``length=`` arguments that fix the shape.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.array_methods import install_methods
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import ConcretizationError, PlaitValueError, PlaitTypeError
from plait.numpy import _promote


def _arr(a, name: str):
    x = _promote.arg(a, name)
    return _promote.asarray_strong(x) if _promote.is_python_scalar(x) else x


def _axis_operand(a, axis, name: str):
    """``(x, axis)``: flattened with axis 0 when ``axis`` is None."""
    x = _arr(a, name)
    if axis is None:
        return lax.reshape(x, (get_aval(x).size,)), 0
    return x, _promote.normalize_axis(axis, get_aval(x).ndim, name)


def _iota_like(x, axis: int):
    return lax.broadcasted_iota(dtypes.int64, get_aval(x).shape, axis)


def sort(a, axis: int | None = -1, kind=None, order=None, *, stable=None,
         descending: bool = False):
    """Sorted copy of ``a`` along ``axis`` (flattened when None); NaNs sort last.

    ``kind``/``stable`` are accepted for compatibility (the sort is always
    stable); ``descending=True`` sorts largest first.
    """
    if order is not None:
        raise PlaitValueError("sort: 'order' (structured arrays) is not supported")
    x, axis = _axis_operand(a, axis, "sort")
    if descending:
        return lax.rev(lax.sort(lax.rev(x, (axis,)), axis), (axis,))
    return lax.sort(x, axis)


def argsort(a, axis: int | None = -1, kind=None, order=None, *, stable=None,
            descending: bool = False):
    """Indices (int64) that sort ``a`` along ``axis``; stable: ties keep their order."""
    if order is not None:
        raise PlaitValueError("argsort: 'order' (structured arrays) is not supported")
    x, axis = _axis_operand(a, axis, "argsort")
    idx = _iota_like(x, axis)
    if descending:
        n = get_aval(x).shape[axis]
        _, perm = lax.sort((lax.rev(x, (axis,)), lax.rev(idx, (axis,))), axis, True, 1)
        return lax.rev(perm, (axis,)) if n else perm
    return lax.sort((x, idx), axis, True, 1)[1]


def lexsort(keys, axis: int = -1):
    """Indices that sort by several keys; the LAST key is the primary one (NumPy)."""
    if isinstance(keys, (list, tuple)):
        ks = list(_promote.promote_args("lexsort", *[_arr(k, "lexsort") for k in keys])) \
            if len(keys) > 1 else [_arr(keys[0], "lexsort")]
    else:
        k = _arr(keys, "lexsort")
        if get_aval(k).ndim == 0:
            raise PlaitValueError("lexsort: need sequence of keys with len > 0 in lexsort")
        ks = [_row(k, i) for i in range(get_aval(k).shape[0])]
    if not ks:
        raise PlaitTypeError("lexsort: need sequence of keys with len > 0 in lexsort")
    nd = get_aval(ks[0]).ndim
    if nd == 0:
        raise PlaitValueError("lexsort: keys must be at least 1-dimensional")
    axis = _promote.normalize_axis(axis, nd, "lexsort")
    ops = ks[::-1] + [_iota_like(ks[0], axis)]
    return lax.sort(tuple(ops), axis, True, len(ks))[-1]


def _row(k, i: int):
    a = get_aval(k)
    x = lax.slice(k, (i,) + (0,) * (a.ndim - 1), (i + 1,) + a.shape[1:])
    return lax.reshape(x, a.shape[1:])


def _check_kth(kth, n: int, name: str):
    ks = kth if isinstance(kth, (list, tuple)) else [kth]
    for k in ks:
        k = _promote.static_int(k, name, "kth")
        if not -n <= k < n:
            raise PlaitValueError(f"{name}: kth(={k}) out of bounds ({n})")


def partition(a, kth, axis: int | None = -1, kind=None, order=None):
    """A partition of ``a`` around ``kth`` (here: the fully sorted array, which is one)."""
    x, ax = _axis_operand(a, axis, "partition")
    _check_kth(kth, get_aval(x).shape[ax], "partition")
    return sort(x, ax)


def argpartition(a, kth, axis: int | None = -1, kind=None, order=None):
    """Indices that partition ``a`` around ``kth`` (here: a full stable argsort)."""
    x, ax = _axis_operand(a, axis, "argpartition")
    _check_kth(kth, get_aval(x).shape[ax], "argpartition")
    return argsort(x, ax)


def sort_complex(a):
    """Sort along the last axis (real part, then imaginary) and return a complex array."""
    x = _arr(a, "sort_complex")
    dt = get_aval(x).dtype
    small_int = dt in (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16)
    cdt = dt if dtypes.is_complex(dt) else dtypes.complex64 if small_int else dtypes.complex128
    return _promote.cast(sort(x), cdt)


# --- searching -----------------------------------------------------------------------
def _total_less(a, v, or_equal: bool):
    """NumPy's sort order comparison ``a < v`` (``<=``): NaN is the largest value."""
    dt = get_aval(a).dtype
    if dtypes.is_complex(dt):
        ar, ai, vr, vi = lax.real(a), lax.imag(a), lax.real(v), lax.imag(v)
        tie = lax.le(ai, vi) if or_equal else lax.lt(ai, vi)
        return lax.bitwise_or(lax.lt(ar, vr), lax.bitwise_and(lax.eq(ar, vr), tie))
    base = lax.le(a, v) if or_equal else lax.lt(a, v)
    if not dtypes.is_float(dt):
        return base
    v_nan = lax.ne(v, v)
    if or_equal:
        return lax.bitwise_or(base, v_nan)
    return lax.bitwise_or(base, lax.bitwise_and(v_nan, lax.eq(a, a)))


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str | None = None):
    """Insertion points of ``v`` into the sorted 1-D ``a`` (int64, shape of ``v``).

    ``side="left"`` gives the first suitable index, ``"right"`` the last. NaNs are
    ordered last, as in NumPy's sort. ``method``: ``"compare_all"`` (every query
    against every element; best for small inputs), ``"sort"`` (one stable sort of
    both arrays, ``O((n + m) log(n + m))``) or None to choose by size.
    """
    if side not in ("left", "right"):
        raise PlaitValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in (None, "compare_all", "sort"):
        raise PlaitValueError(f"searchsorted: method must be None, 'compare_all' or 'sort', "
                              f"got {method!r}")
    a = _arr(a, "searchsorted")
    if get_aval(a).ndim != 1:
        raise PlaitValueError("searchsorted: object too deep for desired array (a must be "
                              "1-dimensional)")
    if sorter is not None:
        from plait.numpy.indexing import take
        a = take(a, sorter)
    a, v = _promote.promote_dtypes("searchsorted", a, _promote.arg(v, "searchsorted"))
    v = _arr(v, "searchsorted")
    n, m = get_aval(a).shape[0], get_aval(v).size
    if method == "sort" or (method is None and n * m > 1 << 16):
        return _searchsorted_by_sort(a, v, side == "right")
    vs = get_aval(v).shape
    full = vs + (n,)
    ab = lax.broadcast_in_dim(a, full, (len(vs),))
    vb = lax.broadcast_in_dim(v, full, tuple(range(len(vs))))
    hits = _total_less(ab, vb, side == "right")
    return lax.reduce_sum(lax.convert_element_type(hits, dtypes.int64), (len(vs),))


def _searchsorted_by_sort(a, v, right: bool):
    """Sort ``a`` and the queries together (queries before equal elements of ``a`` for
    the left side, after them for the right side); a query's answer is the number
    of elements of ``a`` sorted before it."""
    shape = get_aval(v).shape
    n, m = get_aval(a).shape[0], get_aval(v).size
    vals = lax.concatenate([a, lax.reshape(v, (m,))], 0)
    is_query = np.concatenate([np.zeros(n, np.int8), np.ones(m, np.int8)])
    tie = _promote.wrap(is_query if right else 1 - is_query)
    _, _, pos = lax.sort((vals, tie, lax.iota(dtypes.int64, n + m)), 0, True, 2)
    from_a = lax.lt(pos, n)
    before = lax.cumsum(lax.convert_element_type(from_a, dtypes.int64), 0)
    target = lax.select(from_a, lax.broadcast_in_dim(_promote.wrap(np.asarray(m, np.int64)),
                                                     (n + m,), ()), lax.sub(pos, n))
    out = lax.scatter(lax.broadcast_in_dim(_promote.wrap(np.asarray(0, np.int64)), (m,), ()),
                      lax.reshape(target, (n + m, 1)), before,
                      lax.ScatterDimensionNumbers((), (0,), (0,)), mode="drop")
    return lax.reshape(out, shape)


def digitize(x, bins, right: bool = False):
    """Index of the bin each ``x`` falls in (``numpy.digitize``; bins monotonic)."""
    b = _arr(bins, "digitize")
    if get_aval(b).ndim != 1:
        raise PlaitValueError("digitize: bins must be 1-dimensional")
    n = get_aval(b).shape[0]
    inc = searchsorted(b, x, "left" if right else "right")
    if n < 2:
        return inc
    rb = lax.rev(b, (0,))
    dec = lax.sub(n, searchsorted(rb, x, "left" if right else "right"))
    first, last = lax.slice(b, (0,), (1,)), lax.slice(b, (n - 1,), (n,))
    increasing = lax.reshape(lax.le(first, last), ())
    shape = get_aval(inc).shape
    return lax.select(lax.broadcast_in_dim(increasing, shape, ()), inc, dec)


# --- data-dependent shapes -------------------------------------------------------------
def _concrete_or_error(x, name: str, fix: str) -> np.ndarray:
    if isinstance(x, Tracer):
        raise ConcretizationError(
            f"{name} of a traced array {x.aval.str_short()}: the size of its result depends "
            f"on the data, so it has no static shape under jit. {fix}")
    return concrete_value(x)


def _wrap(v) -> object:
    v = np.asarray(v)
    return _promote.wrap(v.astype(dtypes.canonical_dtype(v.dtype)) if v.dtype.kind != "O" else v)


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value=None, sorted: bool = True):
    """Sorted unique elements of ``ar`` (and optional first indices, inverse, counts).

    Without ``size`` the result shape depends on the data, so it runs eagerly
    only. With ``size=N`` (flattened input only) it works under ``jit``: the
    first ``N`` unique values, padded with ``fill_value`` (default: the smallest
    value); padded indices are 0 and padded counts 0.
    """
    x = _arr(ar, "unique")
    if size is None:
        v = _concrete_or_error(
            x, "unique", "Pass size=N to get the first N unique values (padded with "
            "fill_value), or call unique outside jit.")
        res = np.unique(v, return_index, return_inverse, return_counts, axis=axis,
                        equal_nan=equal_nan)
        return tuple(_wrap(r) for r in res) if isinstance(res, tuple) else _wrap(res)
    if axis is not None:
        raise PlaitValueError("unique: size= is only supported with axis=None")
    return _unique_sized(x, _promote.static_int(size, "unique", "size"), fill_value,
                         return_index, return_inverse, return_counts, equal_nan)


def _unique_sized(x, size, fill_value, ret_index, ret_inverse, ret_counts, equal_nan):
    shape = get_aval(x).shape
    n = get_aval(x).size
    flat = lax.reshape(x, (n,))
    s, perm = lax.sort((flat, lax.iota(dtypes.int64, n)), 0, True, 1)
    dt = get_aval(s).dtype
    if n:
        cur, prev = lax.slice(s, (1,), (n,)), lax.slice(s, (0,), (n - 1,))
        differs = lax.ne(cur, prev)
        if equal_nan and dtypes.is_inexact(dt):
            both_nan = lax.bitwise_and(lax.ne(cur, cur), lax.ne(prev, prev))
            differs = lax.bitwise_and(differs, lax.bitwise_not(both_nan))
        is_new = lax.concatenate([_promote.wrap(np.ones((1,), bool)), differs], 0)
    else:
        is_new = _promote.wrap(np.zeros((0,), bool))
    group = lax.sub(lax.cumsum(lax.convert_element_type(is_new, dtypes.int64), 0), 1)
    target = lax.reshape(lax.select(is_new, group, lax.broadcast_in_dim(
        _promote.wrap(np.asarray(size, np.int64)), (n,), ())), (n, 1))
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    count = lax.reduce_sum(lax.convert_element_type(is_new, dtypes.int64), (0,))
    valid = lax.lt(lax.iota(dtypes.int64, size), lax.broadcast_in_dim(count, (size,), ()))

    def first_per_group(vals, fill):
        init = lax.broadcast_in_dim(fill, (size,), ())
        out = lax.scatter(init, target, vals, dn, mode="drop")
        return lax.select(valid, out, init)

    if fill_value is None:
        fill = lax.reshape(lax.slice(s, (0,), (1,)), ()) if n else \
            _promote.cast(0, dt)
    else:
        fill = _promote.cast(_promote.arg(fill_value, "unique"), dt)
    results = [first_per_group(s, fill)]
    if ret_index:
        results.append(first_per_group(perm, _promote.wrap(np.asarray(0, np.int64))))
    if ret_inverse:
        inv = lax.scatter(lax.broadcast_in_dim(_promote.wrap(np.asarray(0, np.int64)), (n,), ()),
                          lax.reshape(perm, (n, 1)), group, dn, mode="drop")
        results.append(lax.reshape(inv, shape))
    if ret_counts:
        zeros = lax.broadcast_in_dim(_promote.wrap(np.asarray(0, np.int64)), (size,), ())
        ones = lax.broadcast_in_dim(_promote.wrap(np.asarray(1, np.int64)), (n,), ())
        results.append(lax.scatter_add(zeros, lax.reshape(group, (n, 1)), ones, dn,
                                       mode="drop"))
    return results[0] if len(results) == 1 else tuple(results)


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result (Array API field names)."""
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result (Array API field names)."""
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result (Array API field names)."""
    values: Any
    inverse_indices: Any


# The Array API's unique_* treat every NaN as distinct (NumPy's unique_* do too).
def unique_values(x, /, *, size: int | None = None, fill_value=None):
    """Sorted unique values of the flattened ``x`` (array API; ``size=`` as in unique)."""
    return unique(x, size=size, fill_value=fill_value, equal_nan=False)


def unique_counts(x, /, *, size: int | None = None, fill_value=None) -> UniqueCountsResult:
    """``(values, counts)`` of the flattened ``x`` (array API)."""
    return UniqueCountsResult(*unique(x, return_counts=True, size=size, fill_value=fill_value,
                                      equal_nan=False))


def unique_inverse(x, /, *, size: int | None = None,
                   fill_value=None) -> UniqueInverseResult:
    """``(values, inverse_indices)``; the inverse has ``x``'s shape (array API)."""
    return UniqueInverseResult(*unique(x, return_inverse=True, size=size,
                                       fill_value=fill_value, equal_nan=False))


def unique_all(x, /, *, size: int | None = None, fill_value=None) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)`` (array API)."""
    return UniqueAllResult(*unique(x, True, True, True, size=size, fill_value=fill_value,
                                   equal_nan=False))


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None):
    """Count occurrences of each non-negative int in the 1-D ``x`` (weighted sums with
    ``weights``). The result length is data-dependent unless ``length`` is given."""
    xv = _arr(x, "bincount")
    a = get_aval(xv)
    if a.ndim != 1 or not dtypes.is_integer(a.dtype) and not dtypes.is_bool(a.dtype):
        raise PlaitTypeError("bincount: x must be a 1-D array of non-negative integers")
    minlength = _promote.static_int(minlength, "bincount", "minlength")
    if length is None:
        v = _concrete_or_error(xv, "bincount", "Pass length=N to count values 0..N-1, or "
                               "call bincount outside jit.")
        if v.size and v.min() < 0:
            raise PlaitValueError("bincount: 'list' argument must have no negative elements")
        length = max(int(v.max()) + 1 if v.size else 0, minlength)
    length = _promote.static_int(length, "bincount", "length")
    n = a.shape[0]
    if weights is None:
        w = lax.broadcast_in_dim(_promote.wrap(np.asarray(1, np.int64)), (n,), ())
    else:
        w = _promote.cast(_arr(weights, "bincount"), dtypes.float64)
        if get_aval(w).shape != (n,):
            raise PlaitValueError("bincount: weights must have the same shape as x")
    zeros = lax.broadcast_in_dim(_promote.cast(0, get_aval(w).dtype), (length,), ())
    idx = lax.reshape(lax.convert_element_type(xv, dtypes.int64), (n, 1))
    return lax.scatter_add(zeros, idx, w, lax.ScatterDimensionNumbers((), (0,), (0,)),
                           mode="drop")


def histogram(a, bins=10, range=None, density=None, weights=None):
    """``(hist, bin_edges)`` like ``numpy.histogram``; eager only (concrete inputs)."""
    fix = "Compute it outside jit, or use bincount(..., length=N) on digitize(x, edges)."
    v = _concrete_or_error(_arr(a, "histogram"), "histogram", fix)
    if not isinstance(bins, (int, str, np.integer)):
        bins = _concrete_or_error(_arr(bins, "histogram"), "histogram", fix)
    w = None if weights is None else _concrete_or_error(_arr(weights, "histogram"),
                                                          "histogram", fix)
    hist, edges = np.histogram(v, bins, range, density, w)
    return _wrap(hist), _wrap(edges)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges ``histogram`` would use (eager only)."""
    return histogram(a, bins, range, None, weights)[1]


def _sort_method(self, axis: int = -1, kind=None, order=None, *, stable=None,
                 descending: bool = False):
    return sort(self, axis, kind, order, stable=stable, descending=descending)


def _argsort_method(self, axis: int = -1, kind=None, order=None, *, stable=None,
                    descending: bool = False):
    return argsort(self, axis, kind, order, stable=stable, descending=descending)


def _searchsorted_method(self, v, side: str = "left", sorter=None):
    return searchsorted(self, v, side, sorter)


install_methods({"sort": _sort_method, "argsort": _argsort_method,
                 "searchsorted": _searchsorted_method})

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "sort_complex",
           "searchsorted", "digitize", "unique", "unique_values", "unique_counts",
           "unique_inverse", "unique_all", "bincount", "histogram", "histogram_bin_edges"]
