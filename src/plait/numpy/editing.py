"""Building and editing arrays: delete, insert, put, place, putmask, fill_diagonal,
trim_zeros, block, row_stack.

plait arrays are immutable (as in JAX). NumPy's ``put``, ``place``, ``putmask`` and
``fill_diagonal`` change their argument in place and return None; here they take
``inplace=False`` and return the updated array. Called the NumPy way (without
``inplace=False``) they raise a plait error saying so, rather than silently leaving
the argument unchanged.

``delete``/``insert`` need static positions (Python ints, slices, lists or
concrete arrays): the result shape depends on them. ``trim_zeros`` finds the
first and last non-zero values, so its result shape depends on the data: it
runs eagerly and raises a plait error under ``jit``.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import ConcretizationError, PlaitIndexError, PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import shapes as sh
from plait.numpy import ufuncs as uf
from plait.numpy.indexing import take, scatter_update


def _immutable(name: str):
    raise PlaitValueError(
        f"{name}: plait arrays are immutable, so {name} cannot change its argument in place "
        f"(NumPy's {name} returns None). Call {name}(..., inplace=False) and use the "
        f"returned array.")


def _static_positions(obj, name: str):
    """``obj`` (int, slice, sequence or concrete array) as a NumPy index; traced is an error."""
    if isinstance(obj, slice):
        return obj
    if isinstance(obj, Tracer) or (isinstance(obj, (list, tuple))
                                   and any(isinstance(o, Tracer) for o in obj)):
        raise ConcretizationError(
            f"{name}: the positions must be static (Python ints, slices, lists or concrete "
            f"arrays) because they decide the result's shape; got a traced value. Compute "
            f"them outside jit, or pass them as a static argument "
            f"(jit(..., static_argnums=...)).")
    if _promote.is_array(obj):
        return np.asarray(concrete_value(obj))
    return np.asarray(obj)


def _axis_and_array(arr, axis, name: str):
    x = _promote.asarray_strong(arr, name=name)
    if axis is None:
        return lax.reshape(x, (get_aval(x).size,)), 0
    return x, _promote.normalize_axis(axis, get_aval(x).ndim, name)


def delete(arr, obj, axis: int | None = None):
    """``arr`` without the entries at ``obj`` (int, slice, int list or bool mask) along
    ``axis`` (the flattened array when ``axis`` is None)."""
    x, axis = _axis_and_array(arr, axis, "delete")
    n = get_aval(x).shape[axis]
    pos = _static_positions(obj, "delete")
    keep = np.ones(n, bool)
    if isinstance(pos, slice):
        keep[pos] = False
    elif pos.dtype == np.bool_:
        if pos.shape != (n,):
            raise PlaitValueError(f"boolean array argument obj to delete must be one "
                                  f"dimensional and match the axis length of {n}")
        keep = ~pos
    else:
        if pos.dtype.kind not in "iu" and pos.size:
            raise PlaitIndexError("arrays used as indices must be of integer (or boolean) type")
        pos = pos.astype(np.int64).reshape(-1)
        bad = (pos < -n) | (pos >= n)
        if bad.any():
            raise PlaitIndexError(f"index {pos[bad][0]} is out of bounds for axis {axis} "
                                  f"with size {n}")
        keep[pos] = False
    return sh.take_static(x, np.nonzero(keep)[0], axis)


def insert(arr, obj, values, axis: int | None = None):
    """``arr`` with ``values`` inserted before the positions ``obj`` along ``axis``."""
    x, axis = _axis_and_array(arr, axis, "insert")
    shape = get_aval(x).shape
    nd, n = len(shape), shape[axis]
    dt = get_aval(x).dtype
    pos = _static_positions(obj, "insert")
    if isinstance(pos, slice):
        pos = np.arange(*pos.indices(n))
    if pos.dtype == np.bool_:
        raise PlaitTypeError("insert: obj must be integer positions, not a boolean mask")
    if pos.dtype.kind not in "iu" and pos.size:
        raise PlaitTypeError("index array argument obj to insert must be one dimensional or "
                             "scalar")
    pos = pos.astype(np.int64)
    if pos.ndim > 1:
        raise PlaitValueError("index array argument obj to insert must be one dimensional or "
                              "scalar")
    bad = (pos < -n) | (pos > n)
    if bad.any():
        raise PlaitIndexError(f"index {pos[bad].flat[0]} is out of bounds for axis {axis} "
                              f"with size {n}")
    v = _promote.cast(_promote.asarray_strong(values, name="insert"), dt)
    vshape = get_aval(v).shape
    if len(vshape) < nd:
        v = lax.reshape(v, (1,) * (nd - len(vshape)) + vshape)
    pos = np.where(pos < 0, pos + n, pos)   # NumPy: a negative position counts from the end
    if pos.size == 1:
        if pos.ndim == 0:
            v = sh.moveaxis(v, 0, axis)
        numnew = get_aval(v).shape[axis]
        where = np.full(numnew, int(pos.reshape(-1)[0]))
    else:
        numnew = pos.size
        where = pos
    target = list(shape)
    target[axis] = numnew
    v = _promote.broadcast_to_shape(v, tuple(target))
    src = np.insert(np.arange(n), where, np.arange(n, n + numnew))
    return sh.take_static(lax.concatenate([x, v], axis), src, axis)


def _flat_values(values, dt, name: str):
    v = _promote.cast(_promote.asarray_strong(values, name=name), dt)
    return lax.reshape(v, (get_aval(v).size,))


def _cycled(v, count_index, name: str):
    """``v[count_index % len(v)]`` for a flat ``v`` (NumPy repeats short value lists)."""
    k = get_aval(v).shape[0]
    if k == 0:
        raise PlaitValueError(f"{name}: cannot take values from an empty array")
    return take(v, uf.remainder(count_index, k))


def put(a, ind, v, mode: str = "raise", *, inplace: bool = True):
    """``a`` with the flat positions ``ind`` set to ``v`` (repeated as needed); returns
    the new array (pass ``inplace=False``)."""
    if inplace:
        _immutable("put")
    x = _promote.asarray_strong(a, name="put")
    shape, dt = get_aval(x).shape, get_aval(x).dtype
    size = get_aval(x).size
    flat = lax.reshape(x, (size,))
    i = _promote.asarray_strong(ind, name="put")
    if not dtypes.is_integer(get_aval(i).dtype):
        raise PlaitTypeError("put: indices must be integers")
    i = lax.reshape(lax.convert_element_type(i, dtypes.int64), (get_aval(i).size,))
    m = get_aval(i).shape[0]
    if m == 0:
        return x
    if mode == "raise":
        if not isinstance(i, Tracer):
            iv = concrete_value(i)
            if iv.min() < -size or iv.max() >= size:
                raise PlaitIndexError(f"index {iv[(iv < -size) | (iv >= size)][0]} is out of "
                                      f"bounds for axis 0 with size {size}")
        i = uf.where(uf.less(i, 0), uf.add(i, size), i)
    elif mode == "wrap":
        i = uf.remainder(i, size)
    elif mode == "clip":
        i = uf.clip(i, 0, size - 1)
    else:
        raise PlaitValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    vals = _cycled(_flat_values(v, dt, "put"), lax.iota(dtypes.int64, m), "put")
    return lax.reshape(scatter_update(flat, (i,), vals, "set"), shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with its ``mask`` positions set to the successive ``vals`` (repeated as
    needed); returns the new array (pass ``inplace=False``)."""
    if inplace:
        _immutable("place")
    x = _promote.asarray_strong(arr, name="place")
    shape, dt = get_aval(x).shape, get_aval(x).dtype
    m = _promote.cast(_promote.asarray_strong(mask, name="place"), dtypes.bool_)
    if get_aval(m).size != get_aval(x).size:
        raise PlaitValueError("place: mask and data must be the same size")
    m = lax.reshape(m, shape)
    v = _flat_values(vals, dt, "place")
    if get_aval(v).shape[0] == 0:
        if isinstance(m, Tracer) or concrete_value(m).any():
            raise PlaitValueError("Cannot insert from an empty array!")
        return x
    n = get_aval(x).size
    order = uf.subtract(lax.cumsum(lax.convert_element_type(lax.reshape(m, (n,)),
                                                            dtypes.int64), 0), 1)
    order = uf.maximum(order, 0)
    filled = lax.reshape(_cycled(v, order, "place"), shape)
    return lax.select(m, filled, x)


def putmask(a, mask, values, *, inplace: bool = True):
    """``a`` with ``a.flat[i] = values.flat[i % len(values)]`` where ``mask`` holds;
    returns the new array (pass ``inplace=False``)."""
    if inplace:
        _immutable("putmask")
    x = _promote.asarray_strong(a, name="putmask")
    shape, dt = get_aval(x).shape, get_aval(x).dtype
    m = _promote.cast(_promote.asarray_strong(mask, name="putmask"), dtypes.bool_)
    if get_aval(m).size != get_aval(x).size:
        raise PlaitValueError("putmask: mask and data must be the same size")
    m = lax.reshape(m, shape)
    v = _flat_values(values, dt, "putmask")
    n = get_aval(x).size
    if get_aval(v).shape[0] == 0:
        return x
    filled = lax.reshape(_cycled(v, lax.iota(dtypes.int64, n), "putmask"), shape)
    return lax.select(m, filled, x)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """``a`` with its main diagonal set to ``val`` (repeated as needed; ``wrap`` continues
    below the first block of a tall matrix); returns the new array (pass ``inplace=False``)."""
    if inplace:
        _immutable("fill_diagonal")
    x = _promote.asarray_strong(a, name="fill_diagonal")
    shape, dt = get_aval(x).shape, get_aval(x).dtype
    if len(shape) < 2:
        raise PlaitValueError("array must be at least 2-d")
    size = get_aval(x).size
    if len(shape) == 2:
        step = shape[1] + 1
        end = size if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise PlaitValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = size
    pos = np.arange(0, min(end, size), step)
    if pos.size == 0:
        return x
    vals = _cycled(_flat_values(val, dt, "fill_diagonal"), _promote.wrap(
        np.arange(pos.size, dtype=np.int64)), "fill_diagonal")
    flat = lax.reshape(x, (size,))
    return lax.reshape(scatter_update(flat, (_promote.wrap(pos.astype(np.int64)),), vals,
                                      "set"), shape)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``filt`` without its leading (``'f'``) and/or trailing (``'b'``) zeros; with
    ``axis``, the zero hyper-slices at the edges of those axes (eager only)."""
    x = _promote.asarray_strong(filt, name="trim_zeros")
    if isinstance(x, Tracer):
        raise ConcretizationError(
            f"trim_zeros of a traced array {x.aval.str_short()}: the result's length depends "
            f"on where the zeros are, so it has no static shape under jit. Call trim_zeros "
            f"outside jit, or keep the array and mask the zeros with plait.numpy.where.")
    trim = trim.lower()
    if any(c not in "fb" for c in trim):
        raise PlaitValueError(f"unexpected character(s) in `trim`: {trim!r}")
    nd = get_aval(x).ndim
    axes = tuple(range(nd)) if axis is None else _promote.static_axes(axis, nd, "trim_zeros")
    nz = concrete_value(uf.not_equal(x, 0))
    for ax in axes:
        other = tuple(i for i in range(nd) if i != ax)
        hits = np.nonzero(nz.any(axis=other) if other else nz)[0]
        if hits.size == 0:
            start = stop = 0
        else:
            start = int(hits[0]) if "f" in trim else 0
            stop = int(hits[-1]) + 1 if "b" in trim else nz.shape[ax]
        lo, hi = [0] * nd, list(get_aval(x).shape)
        lo[ax], hi[ax] = start, stop
        x = lax.slice(x, tuple(lo), tuple(hi))
        nz = nz[tuple(slice(lo[i], hi[i]) for i in range(nd))]
    return x


def _block_depth(arrays, path=()) -> int:
    if isinstance(arrays, tuple):
        raise PlaitTypeError(f"block: arrays is a tuple at {list(path)}; only lists may be "
                             f"used to arrange blocks")
    if isinstance(arrays, list):
        if not arrays:
            raise PlaitValueError(f"List at arrays{''.join(f'[{i}]' for i in path)} cannot "
                                  f"be empty")
        depths = {_block_depth(a, path + (i,)) for i, a in enumerate(arrays)}
        if len(depths) != 1:
            raise PlaitValueError("block: list depths are mismatched; every entry must be "
                                  "nested as deeply as the others")
        return depths.pop() + 1
    return 0


def _block_ndim(arrays) -> int:
    if isinstance(arrays, list):
        return max(_block_ndim(a) for a in arrays)
    return get_aval(_promote.asarray_strong(arrays, name="block")).ndim


def _assemble(arrays, depth: int, ndim: int):
    if not isinstance(arrays, list):
        x = _promote.asarray_strong(arrays, name="block")
        s = get_aval(x).shape
        return lax.reshape(x, (1,) * (ndim - len(s)) + s)
    parts = [_assemble(a, depth - 1, ndim) for a in arrays]
    return sh.concatenate(parts, axis=ndim - depth)


def block(arrays):
    """Assemble an array from nested lists of blocks (innermost lists along the last axis)."""
    depth = _block_depth(arrays)
    if depth == 0:
        return _promote.asarray_strong(arrays, name="block")
    ndim = max(depth, _block_ndim(arrays))
    return _assemble(arrays, depth, ndim)


def row_stack(tup, *, dtype=None):
    """Alias of ``vstack`` (NumPy's deprecated name)."""
    return sh.vstack(tup, dtype=dtype)


__all__ = ["delete", "insert", "put", "place", "putmask", "fill_diagonal", "trim_zeros",
           "block", "row_stack"]
