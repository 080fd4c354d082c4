"""Set operations on flattened arrays: intersect1d, union1d, setdiff1d, setxor1d.

Each sorts its inputs with ``lax.sort``, marks the elements that belong to the
result, and compacts them by a stable sort on "not kept". The number of results
depends on the data: eagerly the result is cut to that count; under ``jit`` pass
``size=N`` (as in JAX) to get the first ``N`` results, padded with ``fill_value``
(default: the smallest result, or 0 when there is none). ``isin`` lives in
``index_tricks`` (its ``assume_unique`` is accepted and needs no special path).
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import ConcretizationError
from plait.numpy import _promote
from plait.numpy.index_tricks import isin
from plait.numpy.indexing import take
from plait.numpy.sorting import searchsorted


def _flat(x, name: str):
    x = _promote.asarray_strong(x, name=name)
    return lax.reshape(x, (get_aval(x).size,))


def _flat_pair(a, b, name: str):
    return _promote.promote_dtypes(name, _flat(a, name), _flat(b, name))


def _first_occurrence(s):
    """True where the sorted 1-D ``s`` starts a run of equal values (NaNs are equal)."""
    n = get_aval(s).shape[0]
    if n == 0:
        return _promote.wrap(np.zeros((0,), bool))
    cur, prev = lax.slice(s, (1,), (n,)), lax.slice(s, (0,), (n - 1,))
    differs = lax.ne(cur, prev)
    if dtypes.is_inexact(get_aval(s).dtype):
        differs = lax.bitwise_and(differs, lax.bitwise_not(
            lax.bitwise_and(lax.ne(cur, cur), lax.ne(prev, prev))))
    return lax.concatenate([_promote.wrap(np.ones((1,), bool)), differs], 0)


def _count_or_error(keep, size, name: str) -> int | None:
    if size is not None:
        return None
    if isinstance(keep, Tracer):
        raise ConcretizationError(
            f"{name} of traced arrays: the number of results depends on the data, so it has "
            f"no static shape under jit. Pass size=N (the first N results, padded with "
            f"fill_value), or call {name} outside jit.")
    return int(np.count_nonzero(concrete_value(keep)))


def _compact(vals, keep, size, fill_value, name: str, extra=()):
    """``vals[keep]`` (and each of ``extra[keep]``) in order: cut to the count eagerly, or
    the first ``size`` entries padded with ``fill_value`` (extras padded with 0)."""
    count = _count_or_error(keep, size, name)
    n = get_aval(vals).shape[0]
    key = lax.convert_element_type(lax.bitwise_not(keep), dtypes.int8)
    srt = lax.sort((key, vals) + tuple(extra), 0, True, 1)[1:]
    if count is not None:
        outs = [lax.slice(v, (0,), (count,)) for v in srt]
        return outs[0] if not extra else tuple(outs)
    size = _promote.static_int(size, name, "size")
    dt = get_aval(vals).dtype
    total = lax.reduce_sum(lax.convert_element_type(keep, dtypes.int64), (0,))
    valid = lax.lt(lax.iota(dtypes.int64, size), lax.broadcast_in_dim(total, (size,), ()))
    outs = []
    for k, v in enumerate(srt):
        if size <= n:
            v = lax.slice(v, (0,), (size,))
        else:
            v = lax.pad(v, _promote.cast(0, get_aval(v).dtype), [(0, size - n, 0)])
        if k == 0:
            if fill_value is not None:
                fill = _promote.cast(_promote.arg(fill_value, name), dt)
            elif n:
                fill = lax.select(lax.gt(total, 0), lax.reshape(lax.slice(v, (0,), (1,)), ()),
                                  _promote.cast(0, dt))
            else:
                fill = _promote.cast(0, dt)
        else:
            fill = _promote.cast(0, get_aval(v).dtype)
        outs.append(lax.select(valid, v, lax.broadcast_in_dim(fill, (size,), ())))
    return outs[0] if not extra else tuple(outs)


def union1d(ar1, ar2, *, size: int | None = None, fill_value=None):
    """Sorted unique values found in either input."""
    a, b = _flat_pair(ar1, ar2, "union1d")
    s = lax.sort(lax.concatenate([a, b], 0), 0)
    return _compact(s, _first_occurrence(s), size, fill_value, "union1d")


def _sorted_unique_mask(a, assume_unique: bool):
    s = lax.sort(a, 0)
    keep = _promote.wrap(np.ones((get_aval(a).shape[0],), bool)) if assume_unique \
        else _first_occurrence(s)
    return s, keep


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value=None):
    """Sorted unique values found in both inputs (and, with ``return_indices``, the
    index of each value's first occurrence in each flattened input)."""
    a, b = _flat_pair(ar1, ar2, "intersect1d")
    n = get_aval(a).shape[0]
    s, perm = lax.sort((a, lax.iota(dtypes.int64, n)), 0, True, 1)
    keep = _first_occurrence(s) if not assume_unique else \
        _promote.wrap(np.ones((n,), bool))
    keep = lax.bitwise_and(keep, isin(s, b))
    if not return_indices:
        return _compact(s, keep, size, fill_value, "intersect1d")
    m = get_aval(b).shape[0]
    sb, permb = lax.sort((b, lax.iota(dtypes.int64, m)), 0, True, 1)
    pos = lax.clamp(0, searchsorted(sb, s), max(m - 1, 0))
    idx2 = take(permb, pos) if m else lax.convert_element_type(perm, dtypes.int64)
    return _compact(s, keep, size, fill_value, "intersect1d", extra=(perm, idx2))


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
              fill_value=None):
    """Unique values of ``ar1`` not in ``ar2`` (sorted; with ``assume_unique`` the
    values of ``ar1`` keep their order, as in NumPy)."""
    a, b = _flat(ar1, "setdiff1d"), _flat(ar2, "setdiff1d")   # NumPy keeps ar1's dtype
    if assume_unique:
        s, keep = a, _promote.wrap(np.ones((get_aval(a).shape[0],), bool))
    else:
        s, keep = _sorted_unique_mask(a, False)
    keep = lax.bitwise_and(keep, isin(s, b, invert=True))
    return _compact(s, keep, size, fill_value, "setdiff1d")


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
             fill_value=None):
    """Sorted unique values found in exactly one of the inputs."""
    a, b = _flat_pair(ar1, ar2, "setxor1d")
    sa, ka = _sorted_unique_mask(a, assume_unique)
    sb, kb = _sorted_unique_mask(b, assume_unique)
    ka = lax.bitwise_and(ka, isin(sa, b, invert=True))
    kb = lax.bitwise_and(kb, isin(sb, a, invert=True))
    vals, keep = lax.sort((lax.concatenate([sa, sb], 0), lax.concatenate([ka, kb], 0)), 0,
                          True, 1)
    return _compact(vals, keep, size, fill_value, "setxor1d")


__all__ = ["union1d", "intersect1d", "setdiff1d", "setxor1d"]
