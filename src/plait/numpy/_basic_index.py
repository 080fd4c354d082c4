"""Basic indexing: integers, slices, ``None`` and ``Ellipsis`` (NumPy's "basic" indexing).

Static integers and slices become one ``lax.slice`` (plus ``lax.rev`` for negative
steps) and one ``lax.reshape``; a traced integer scalar index becomes a
``lax.dynamic_slice`` (negative values wrap once, as in NumPy; out-of-range
traced indices are clamped, as in JAX). Integer-array and boolean indexing
live in ``plait.numpy.indexing``.
"""
from __future__ import annotations

import operator

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval
from plait.errors import PlaitIndexError

_ADVANCED_MSG = ("only integers, slices (`:`), ellipsis (`...`), None (`numpy.newaxis`) "
                 "and integer or boolean arrays are valid indices")


def _is_int_index(i) -> bool:
    if isinstance(i, (bool, np.bool_)):
        return False
    if isinstance(i, (int, np.integer)):
        return True
    if hasattr(i, "_value") and not isinstance(i, Tracer):   # concrete 0-d integer array
        return i._value.ndim == 0 and i._value.dtype.kind in "iu"
    return False


def _is_traced_int_scalar(i) -> bool:
    if not isinstance(i, Tracer):
        return False
    a = i.aval
    return a.ndim == 0 and dtypes.is_integer(a.dtype)


def is_basic(idx) -> bool:
    """Whether ``idx`` (already a tuple) only contains basic index items."""
    return all(i is None or i is Ellipsis or isinstance(i, slice) or _is_int_index(i)
               or _is_traced_int_scalar(i) for i in idx)


def normalize_index(idx, ndim: int) -> tuple:
    """``idx`` as a tuple with the Ellipsis expanded into full slices."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise PlaitIndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if consumed > ndim:
        raise PlaitIndexError(f"too many indices for array: array is {ndim}-dimensional, "
                              f"but {consumed} were indexed")
    fill = (slice(None),) * (ndim - consumed)
    if n_ell:
        k = next(j for j, i in enumerate(idx) if i is Ellipsis)
        return idx[:k] + fill + idx[k + 1:]
    return idx + fill


def slice_axis(x, axis: int, s: slice):
    """``x[..., s, ...]`` along ``axis`` for a static slice ``s`` (any step)."""
    a = get_aval(x)
    n = a.shape[axis]
    start, stop, step = s.indices(n)
    count = len(range(start, stop, step))
    lo, hi, st = [0] * a.ndim, list(a.shape), [1] * a.ndim
    if count == 0:
        hi[axis] = 0
        return lax.slice(x, lo, hi, st)
    if step > 0:
        lo[axis], hi[axis], st[axis] = start, start + (count - 1) * step + 1, step
        return lax.slice(x, lo, hi, st)
    last = start + (count - 1) * step
    lo[axis], hi[axis], st[axis] = last, start + 1, -step
    return lax.rev(lax.slice(x, lo, hi, st), (axis,))


def getitem(x, idx):
    """``x[idx]`` for basic indices (ints, slices, None, Ellipsis, traced int scalars)."""
    a = get_aval(x)
    idx = normalize_index(idx, a.ndim)
    if not is_basic(idx):
        raise PlaitIndexError(_ADVANCED_MSG + "; integer-array and boolean indexing need "
                              "plait.numpy.indexing")
    out_shape = []
    dim = 0
    dyn = []
    for i in idx:
        if i is None:
            out_shape.append(1)
            continue
        n = get_aval(x).shape[dim]
        if isinstance(i, slice):
            x = slice_axis(x, dim, i)
            out_shape.append(get_aval(x).shape[dim])
        elif _is_int_index(i):
            j = operator.index(i)
            if not -n <= j < n:
                raise PlaitIndexError(f"index {j} is out of bounds for axis {dim} with size {n}")
            x = slice_axis(x, dim, slice(j % n, j % n + 1))
        else:
            dyn.append((dim, i))
        dim += 1
    if dyn:
        x = _dynamic_pick(x, dyn)
    return lax.reshape(x, tuple(out_shape))


def _dynamic_pick(x, picks):
    """Size-1 dynamic slices at traced integer positions ``picks = [(axis, index)]``."""
    a = get_aval(x)
    starts = [0] * a.ndim
    sizes = list(a.shape)
    for ax, i in picks:
        n = a.shape[ax]
        if n == 0:
            raise PlaitIndexError(f"index is out of bounds for axis {ax} with size 0")
        i = lax.convert_element_type(i, dtypes.int64)
        starts[ax] = lax.select(lax.lt(i, 0), lax.add(i, n), i)
        sizes[ax] = 1
    return lax.dynamic_slice(x, starts, sizes)
