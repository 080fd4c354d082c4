"""NumPy indexing for plait arrays: ``x[idx]``, ``x.at[idx].set/add/...``, ``take``,
``take_along_axis``, ``put_along_axis``, ``nonzero``/``argwhere``/``flatnonzero``
(with ``size=``), ``diagonal`` and ``ix_``.

``x[idx]`` follows NumPy exactly (see :mod:`plait.numpy._index_plan` for the
normalisation). Basic indices become ``lax.slice``/``lax.rev``/``lax.reshape``;
a traced integer scalar becomes a ``lax.dynamic_slice``; integer-array
(advanced) indices become one ``lax.gather`` whose batch dimensions land where
NumPy puts them, so no transpose is needed. Static out-of-range indices raise
``IndexError`` like NumPy; traced ones are clamped (gather) or dropped
(``.at`` updates, scatter). ``x.at[idx]`` updates lower to ``lax.scatter*``
with the same index plan, or to ``lax.dynamic_update_slice`` for unit-stride
basic indices.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.array_methods import install_methods
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import (PlaitIndexError, PlaitValueError, PlaitTypeError,
                          NonConcreteBooleanIndexError)
from plait.numpy import _promote
from plait.numpy._index_plan import IndexPlan, Item, make_plan


# --- helpers ---------------------------------------------------------------------------
def _as_array(x, name: str):
    x = _promote.arg(x, name)
    if _promote.is_python_scalar(x):
        x = _promote.asarray_strong(x)
    return x


def _slice_dims(x, specs: dict):
    """``x`` sliced by ``{dim: (start, stop, step)}`` (normalised) with one ``lax.slice``
    and, for negative steps, one ``lax.rev``."""
    a = get_aval(x)
    lo, hi, st = [0] * a.ndim, list(a.shape), [1] * a.ndim
    flip = []
    for dim, (start, stop, step) in specs.items():
        count = len(range(start, stop, step))
        if count == 0:
            lo[dim], hi[dim] = 0, 0
        elif step > 0:
            lo[dim], hi[dim], st[dim] = start, start + (count - 1) * step + 1, step
        else:
            last = start + (count - 1) * step
            lo[dim], hi[dim], st[dim] = last, start + 1, -step
            if count > 1:
                flip.append(dim)
    x = lax.slice(x, lo, hi, st)
    return lax.rev(x, flip) if flip else x


def _normalise_traced(i, n: int):
    """A traced integer index as int64 with negative values wrapped once."""
    i = lax.convert_element_type(i, dtypes.int64)
    if dtypes.is_unsigned(get_aval(i).dtype):
        return i
    return lax.select(lax.lt(i, 0), lax.add(i, n), i)


def _full_window(plan: IndexPlan, k: int) -> bool:
    it = plan.items[k]
    return it.kind == "slice" and it.value == (0, plan.shape[it.dim], 1)


def _index_array(plan: IndexPlan, windows: set):
    """Gather/scatter index array for ``plan``.

    Dimensions of items in ``windows`` (full slices) stay as windows; every other
    consumed dimension becomes one entry of the index vector. Returns
    ``(indices or None, index dims, window positions, result shape)``; the
    indices' batch shape is the result shape without the window positions.
    """
    items = plan.items
    batch_shape: list[int] = []
    window_pos: list[int] = []
    slice_pos: dict[int, int] = {}
    adv_pos: list[int] = []
    pos = 0
    for t in plan.tokens:
        if t[0] == "adv":
            adv_pos = list(range(len(batch_shape), len(batch_shape) + len(plan.adv_shape)))
            batch_shape.extend(plan.adv_shape)
            pos += len(plan.adv_shape)
            continue
        k = t[1]
        if items[k].kind == "none":
            batch_shape.append(1)
        elif k in windows:
            window_pos.append(pos)
        else:
            slice_pos[k] = len(batch_shape)
            batch_shape.append(plan.slice_len(k))
        pos += 1
    bshape = tuple(batch_shape)
    comps, dims = [], []
    for k, it in enumerate(items):
        if it.kind in ("none", "ghost") or k in windows:
            continue
        if it.kind == "int":
            c = lax.broadcast_in_dim(_promote.wrap(np.asarray(it.value, np.int64)), bshape, ())
        elif it.kind == "slice":
            start, _, step = it.value
            c = lax.broadcasted_iota(dtypes.int64, bshape, slice_pos[k])
            if step != 1:
                c = lax.mul(c, step)
            if start:
                c = lax.add(c, start)
        else:
            v = it.value
            v = _promote.wrap(v) if isinstance(v, np.ndarray) else \
                _normalise_traced(v, plan.shape[it.dim])
            nd = get_aval(v).ndim
            c = lax.broadcast_in_dim(v, bshape, adv_pos[len(adv_pos) - nd:])
        comps.append(lax.reshape(c, bshape + (1,)))
        dims.append(it.dim)
    indices = lax.concatenate(comps, len(bshape)) if comps else None
    return indices, tuple(dims), tuple(window_pos), plan.result_shape()


# --- x[idx] ----------------------------------------------------------------------------
def getitem(x, idx, mode: str | None = None, fill_value=None):
    """``x[idx]`` with NumPy's semantics (basic, advanced, mixed and boolean indices).

    ``mode=None`` follows NumPy (static out-of-range indices raise
    ``IndexError``; traced ones are clamped); ``"clip"`` clamps every index;
    ``"fill"`` returns ``fill_value`` (default NaN / the integer minimum) for
    out-of-range indices.
    """
    x = _as_array(x, "getitem")
    if mode not in (None, "clip", "fill"):
        raise PlaitValueError(f"indexing mode must be None, 'clip' or 'fill', got {mode!r}")
    plan = make_plan(get_aval(x).shape, idx, check=mode is None)
    items = plan.items
    ghosts = any(it.kind == "ghost" for it in items)
    basic = mode is None and not ghosts and plan.adv_shape == ()
    specs = {it.dim: it.value for it in items if it.kind == "slice"}
    if basic:   # only static ints and traced integer scalars besides slices/newaxis
        specs.update({it.dim: (it.value, it.value + 1, 1) for it in items if it.kind == "int"})
    x = _slice_dims(x, specs)
    shape = get_aval(x).shape
    if basic:
        starts, sizes, dyn = [0] * len(shape), list(shape), False
        for it in items:
            if it.kind == "int":
                sizes[it.dim] = 1
            elif it.kind == "array":
                if shape[it.dim] == 0:
                    raise PlaitIndexError(f"index is out of bounds for axis {it.dim} with "
                                          f"size 0")
                starts[it.dim] = _normalise_traced(it.value, shape[it.dim])
                sizes[it.dim], dyn = 1, True
        if dyn:
            x = lax.dynamic_slice(x, starts, sizes)
        return lax.reshape(x, plan.result_shape())
    sliced = IndexPlan(shape, [_resliced(it, shape) for it in items])
    rshape = sliced.result_shape()
    if 0 in rshape:
        return lax.broadcast_in_dim(_promote.cast(0, get_aval(x).dtype), rshape, ())
    _check_nonempty_dims(sliced)
    windows = {k for k, it in enumerate(sliced.items) if it.kind == "slice"}
    indices, dims, window_pos, rshape = _index_array(sliced, windows)
    if indices is None:
        return lax.broadcast_in_dim(x, rshape, window_pos)
    sizes = tuple(1 if d in dims else s for d, s in enumerate(shape))
    dn = lax.GatherDimensionNumbers(window_pos, dims, dims)
    return lax.gather(x, indices, dn, sizes, mode="fill" if mode == "fill" else "clip",
                      fill_value=fill_value)


def _check_nonempty_dims(plan: IndexPlan) -> None:
    """Indexing into an empty dimension is out of bounds whenever the result is not empty."""
    for it in plan.items:
        if it.kind in ("int", "array") and plan.shape[it.dim] == 0:
            raise PlaitIndexError(f"index is out of bounds for axis {it.dim} with size 0")


def _resliced(it, shape):
    """An item of a plan after its slice was applied: a full slice of the new size."""
    if it.kind != "slice":
        return it
    return Item("slice", (0, shape[it.dim], 1), it.dim)


# --- x.at[idx] ------------------------------------------------------------------------
def _combine(op: str, x, v):
    bool_ = dtypes.is_bool(get_aval(x).dtype)
    if op == "add":
        return lax.bitwise_or(x, v) if bool_ else lax.add(x, v)
    if op == "mul":
        return lax.bitwise_and(x, v) if bool_ else lax.mul(x, v)
    return lax.min(x, v) if op == "min" else lax.max(x, v)


_SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
             "min": lax.scatter_min, "max": lax.scatter_max}


def scatter_update(x, idx, values, op: str, mode: str | None = None):
    """``x`` with ``x[idx]`` combined with ``values`` by ``op`` (set/add/mul/min/max).

    Duplicate indices accumulate (add/mul/min/max) or the last one wins (set).
    ``mode=None`` raises ``IndexError`` for static out-of-range indices and drops
    traced ones; ``"drop"`` drops, ``"clip"`` clamps.
    """
    x = _as_array(x, "at")
    if mode not in (None, "drop", "clip"):
        raise PlaitValueError(f"update mode must be None, 'drop' or 'clip', got {mode!r}")
    a = get_aval(x)
    plan = make_plan(a.shape, idx, check=mode is None)
    rshape = plan.result_shape()
    v = _promote.arg(values, "at")
    v = _promote.broadcast_to_shape(_promote.cast(v, a.dtype, a.weak_type), rshape)
    if 0 in rshape:
        return x
    _check_nonempty_dims(plan)
    unit_basic = (not plan.advanced and mode is None and
                  all(it.kind in ("none", "int") or (it.kind == "slice" and it.value[2] == 1)
                      for it in plan.items))
    if unit_basic:
        starts = [0] * a.ndim
        wshape = list(a.shape)
        for it in plan.items:
            if it.kind == "int":
                starts[it.dim], wshape[it.dim] = it.value, 1
            elif it.kind == "slice":
                starts[it.dim] = it.value[0]
                wshape[it.dim] = len(range(*it.value))
        vw = lax.reshape(v, tuple(wshape))
        if op != "set":
            cur = lax.slice(x, starts, [s + w for s, w in zip(starts, wshape)])
            vw = _combine(op, cur, vw)
        return lax.dynamic_update_slice(x, vw, starts)
    windows = {k for k in range(len(plan.items)) if _full_window(plan, k)}
    indices, dims, window_pos, _ = _index_array(plan, windows)
    if indices is None:
        bshape = tuple(s for j, s in enumerate(rshape) if j not in window_pos)
        indices = lax.broadcast_in_dim(_promote.wrap(np.zeros((0,), np.int64)),
                                       bshape + (0,), (len(bshape),))
    dn = lax.ScatterDimensionNumbers(window_pos, dims, dims)
    return _SCATTERS[op](x, indices, v, dn, mode="clip" if mode == "clip" else "drop")


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates of the elements ``x[idx]``."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, mode: str | None = None, fill_value=None):
        """``x[idx]`` (``mode``: None, ``"clip"`` or ``"fill"``)."""
        return getitem(self.array, self.index, mode, fill_value)

    def set(self, values, mode: str | None = None):
        """``x`` with ``x[idx] = values`` (the last duplicate index wins)."""
        return scatter_update(self.array, self.index, values, "set", mode)

    def add(self, values, mode: str | None = None):
        """``x`` with ``values`` added at ``idx`` (duplicates accumulate, like ``np.add.at``)."""
        return scatter_update(self.array, self.index, values, "add", mode)

    def subtract(self, values, mode: str | None = None):
        """``x`` with ``values`` subtracted at ``idx`` (duplicates accumulate)."""
        a = get_aval(_as_array(self.array, "at"))
        if dtypes.is_bool(a.dtype):
            raise PlaitTypeError("at[...].subtract is not supported for bool arrays")
        v = _promote.cast(_promote.arg(values, "at"), a.dtype, a.weak_type)
        return scatter_update(self.array, self.index, lax.neg(v), "add", mode)

    def multiply(self, values, mode: str | None = None):
        """``x`` with ``x[idx]`` multiplied by ``values`` (duplicates accumulate)."""
        return scatter_update(self.array, self.index, values, "mul", mode)

    mul = multiply

    def min(self, values, mode: str | None = None):
        """``x`` with ``x[idx] = minimum(x[idx], values)`` (duplicates accumulate)."""
        return scatter_update(self.array, self.index, values, "min", mode)

    def max(self, values, mode: str | None = None):
        """``x`` with ``x[idx] = maximum(x[idx], values)`` (duplicates accumulate)."""
        return scatter_update(self.array, self.index, values, "max", mode)


class _IndexUpdateHelper:
    """The ``x.at`` property: ``x.at[idx].set(v)`` and friends."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


# --- take / take_along_axis / put_along_axis -----------------------------------------
def _is_empty_sequence(x) -> bool:
    """A (nested) list/tuple with no elements at all, e.g. ``[]`` or ``[[], []]``."""
    return isinstance(x, (list, tuple)) and all(_is_empty_sequence(e) for e in x)


def _index_arg(indices, name: str):
    if _is_empty_sequence(indices):   # NumPy reads an empty list as integer indices
        indices = np.asarray(indices, np.int64)
    i = _promote.arg(indices, name)
    if _promote.is_python_scalar(i):
        if isinstance(i, bool) or not isinstance(i, int):
            raise PlaitIndexError(f"{name}: indices must be integers, got {i!r}")
        return _promote.wrap(np.asarray(i, np.int64))
    if not dtypes.is_integer(get_aval(i).dtype):
        raise PlaitTypeError(f"{name}: indices must be an integer array, got "
                             f"{get_aval(i).dtype}")
    return i


def _apply_mode(i, n: int, mode: str):
    """Indices for ``take``'s ``wrap``/``clip`` modes (already in range afterwards)."""
    if isinstance(i, Tracer):
        i = lax.convert_element_type(i, dtypes.int64)
        if mode == "clip":
            return lax.clamp(0, i, max(n - 1, 0))
        r = lax.rem(i, n)
        return lax.select(lax.lt(r, 0), lax.add(r, n), r)
    v = concrete_value(i).astype(np.int64)
    return _promote.wrap(np.clip(v, 0, max(n - 1, 0)) if mode == "clip" else np.mod(v, n))


def take(a, indices, axis: int | None = None, out=None, mode: str | None = None,
         fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when ``axis`` is None).

    ``mode``: ``None``/``"raise"`` (NumPy: out-of-range static indices raise;
    traced ones are clamped), ``"wrap"``, ``"clip"`` or ``"fill"`` (``fill_value``).
    """
    if out is not None:
        raise PlaitValueError("take: the 'out' argument is not supported (plait arrays are "
                              "immutable)")
    x = _as_array(a, "take")
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        axis = 0
    nd = get_aval(x).ndim
    axis = _promote.normalize_axis(axis, nd, "take")
    i = _index_arg(indices, "take")
    n = get_aval(x).shape[axis]
    if mode in ("wrap", "clip"):
        if n == 0:
            raise PlaitIndexError("cannot do a non-empty take from an empty axes.")
        i, gmode = _apply_mode(i, n, mode), "clip"
    elif mode in (None, "raise"):
        gmode = None
    elif mode == "fill":
        gmode = "fill"
    else:
        raise PlaitValueError(f"take: mode must be 'raise', 'wrap', 'clip' or 'fill', got "
                              f"{mode!r}")
    return getitem(x, (slice(None),) * axis + (i,), gmode, fill_value)


def _along_axis_index(x, i, axis, name: str):
    """Broadcast ``x`` and ``i`` (except along ``axis``) and build the full index tuple."""
    sx, si = get_aval(x).shape, get_aval(i).shape
    if len(sx) != len(si):
        raise PlaitValueError(f"{name}: `indices` and `arr` must have the same number of "
                              f"dimensions")
    rest = _promote.broadcast_shapes(tuple(s for d, s in enumerate(sx) if d != axis),
                                     tuple(s for d, s in enumerate(si) if d != axis))
    rest = list(rest)
    x = _promote.broadcast_to_shape(x, tuple(rest[:axis]) + (sx[axis],) + tuple(rest[axis:]))
    ishape = tuple(rest[:axis]) + (si[axis],) + tuple(rest[axis:])
    i = _promote.broadcast_to_shape(i, ishape)
    idx = []
    for d in range(len(ishape)):
        if d == axis:
            idx.append(i)
        else:
            shp = [1] * len(ishape)
            shp[d] = ishape[d]
            idx.append(np.arange(ishape[d], dtype=np.int64).reshape(shp))
    return x, tuple(idx)


def take_along_axis(arr, indices, axis: int | None = -1, mode: str | None = None,
                    fill_value=None):
    """``arr`` indexed by ``indices`` along ``axis`` with matching other dimensions
    (``numpy.take_along_axis``; ``axis=None`` works on the flattened array)."""
    x = _as_array(arr, "take_along_axis")
    i = _index_arg(indices, "take_along_axis")
    if axis is None:
        if get_aval(i).ndim != 1:
            raise PlaitValueError("take_along_axis: when axis=None, `indices` must have a "
                                  "single dimension.")
        x, axis = lax.reshape(x, (get_aval(x).size,)), 0
    axis = _promote.normalize_axis(axis, get_aval(x).ndim, "take_along_axis")
    x, idx = _along_axis_index(x, i, axis, "take_along_axis")
    return getitem(x, idx, mode, fill_value)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True,
                   mode: str | None = None):
    """``arr`` with ``values`` written at ``indices`` along ``axis``; returns the new
    array. Pass ``inplace=False`` (plait arrays are immutable, as in JAX)."""
    if inplace:
        raise PlaitValueError("put_along_axis: plait arrays are immutable, so the update "
                              "cannot happen in place; call it with inplace=False and use "
                              "the returned array")
    x = _as_array(arr, "put_along_axis")
    i = _index_arg(indices, "put_along_axis")
    shape = get_aval(x).shape
    if axis is None:
        if get_aval(i).ndim != 1:
            raise PlaitValueError("put_along_axis: when axis=None, `indices` must have a "
                                  "single dimension.")
        flat = lax.reshape(x, (get_aval(x).size,))
        return lax.reshape(put_along_axis(flat, i, values, 0, False, mode), shape)
    axis = _promote.normalize_axis(axis, len(shape), "put_along_axis")
    xb, idx = _along_axis_index(x, i, axis, "put_along_axis")
    if get_aval(xb).shape != shape:
        raise PlaitValueError(f"put_along_axis: indices of shape {get_aval(i).shape} do not "
                              f"broadcast against arr of shape {shape}")
    return scatter_update(x, idx, values, "set", mode)


# --- nonzero family ----------------------------------------------------------------------
def _nonzero_error(x, name):
    raise NonConcreteBooleanIndexError(
        f"{name} of a traced array {x.aval.str_short()}: the number of results depends on "
        f"the data, so the result has no static shape. Pass size=N (results beyond the "
        f"count are filled with fill_value), use plait.numpy.where(cond, x, y), or call "
        f"{name} outside jit.")


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple:
    """Indices of the non-zero elements, one int64 array per dimension.

    Without ``size`` the result shape depends on the data, so it works eagerly only;
    with ``size=N`` the first ``N`` indices are returned (padded with ``fill_value``,
    default 0, a scalar or one value per dimension) and it works under ``jit``.
    """
    x = _promote.arg(a, "nonzero")
    if _promote.is_python_scalar(x) or get_aval(x).ndim == 0:
        raise PlaitValueError("Calling nonzero on 0d arrays is not allowed. Use "
                              "atleast_1d(scalar).nonzero() instead.")
    shape = get_aval(x).shape
    if size is None:
        if isinstance(x, Tracer):
            _nonzero_error(x, "nonzero")
        return tuple(_promote.wrap(i.astype(np.int64)) for i in np.nonzero(concrete_value(x)))
    size = _promote.static_int(size, "nonzero", "size")
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * len(shape)
    if len(fills) != len(shape):
        raise PlaitValueError(f"nonzero: fill_value must be a scalar or a tuple of length "
                              f"{len(shape)}, got {fill_value!r}")
    n = get_aval(x).size
    mask = lax.reshape(_promote.cast(x, dtypes.bool_), (n,))
    count = lax.cumsum(lax.convert_element_type(mask, dtypes.int64), 0)
    target = lax.select(mask, lax.sub(count, 1), lax.broadcast_in_dim(
        _promote.wrap(np.asarray(size, np.int64)), (n,), ()))
    init = lax.broadcast_in_dim(_promote.wrap(np.asarray(-1, np.int64)), (size,), ())
    flat = lax.scatter(init, lax.reshape(target, (n, 1)), lax.iota(dtypes.int64, n),
                       lax.ScatterDimensionNumbers((), (0,), (0,)), mode="drop")
    valid = lax.ge(flat, 0)
    out, stride = [], n
    for d, fv in zip(shape, fills):
        stride //= max(d, 1)
        i = lax.div(flat, stride) if stride != 1 else flat
        i = lax.rem(i, d) if d else i
        f = 0 if fv is None else fv
        out.append(lax.select(valid, i, lax.broadcast_in_dim(
            _promote.cast(_promote.arg(f, "nonzero"), dtypes.int64), (size,), ())))
    return tuple(out)


def flatnonzero(a, *, size: int | None = None, fill_value=None):
    """Indices of the non-zero elements of the flattened array (``size=`` as in nonzero)."""
    x = _as_array(a, "flatnonzero")
    return nonzero(lax.reshape(x, (get_aval(x).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None):
    """Indices of the non-zero elements grouped by element: shape ``(N, a.ndim)``."""
    x = _as_array(a, "argwhere")
    a_ = get_aval(x)
    if a_.ndim == 0:
        if size is None:
            if isinstance(x, Tracer):
                _nonzero_error(x, "argwhere")
            return _promote.wrap(np.argwhere(concrete_value(x)).astype(np.int64))
        return _promote.wrap(np.zeros((_promote.static_int(size, "argwhere", "size"), 0),
                                      np.int64))
    if size is None and isinstance(x, Tracer):
        _nonzero_error(x, "argwhere")
    cols = nonzero(x, size=size, fill_value=fill_value)
    m = get_aval(cols[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (m, 1)) for c in cols], 1)


# --- diagonal / ix_ ---------------------------------------------------------------------
def diagonal_last2(x, offset: int):
    """The ``offset`` diagonal of the last two axes, as a new last axis (strided slice)."""
    a = get_aval(x)
    n, m = a.shape[-2:]
    batch = a.shape[:-2]
    if offset >= 0:
        length, start = max(0, min(n, m - offset)), offset
    else:
        length, start = max(0, min(n + offset, m)), -offset * m
    flat = lax.reshape(x, batch + (n * m,))
    zeros = [0] * len(batch)
    if length == 0:
        return lax.slice(flat, zeros + [0], list(batch) + [0])
    return lax.slice(flat, zeros + [start], list(batch) + [start + (length - 1) * (m + 1) + 1],
                     [1] * len(batch) + [m + 1])


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The diagonal of the ``axis1``/``axis2`` planes, appended as the last axis."""
    x = _as_array(a, "diagonal")
    nd = get_aval(x).ndim
    if nd < 2:
        raise PlaitValueError("diag requires an array of at least two dimensions")
    a1 = _promote.normalize_axis(axis1, nd, "diagonal")
    a2 = _promote.normalize_axis(axis2, nd, "diagonal")
    if a1 == a2:
        raise PlaitValueError("axis1 and axis2 cannot be the same")
    offset = _promote.static_int(offset, "diagonal", "offset")
    perm = [d for d in range(nd) if d not in (a1, a2)] + [a1, a2]
    return diagonal_last2(lax.transpose(x, perm), offset)


def ix_(*args) -> tuple:
    """Open mesh from 1-D sequences: ``x[ix_(rows, cols)]`` selects a sub-grid."""
    out = []
    n = len(args)
    for k, s in enumerate(args):
        v = _promote.arg(s, "ix_")
        if _promote.is_python_scalar(v) or get_aval(v).ndim != 1:
            raise PlaitValueError("Cross index must be 1 dimensional")
        if dtypes.is_bool(get_aval(v).dtype):
            v = nonzero(v)[0]
        shp = [1] * n
        shp[k] = get_aval(v).shape[0]
        out.append(lax.reshape(v, tuple(shp)))
    return tuple(out)


def _getitem_method(self, idx):
    return getitem(self, idx)


def _take_method(self, indices, axis=None, out=None, mode=None, fill_value=None):
    return take(self, indices, axis, out, mode, fill_value)


def _nonzero_method(self, *, size=None, fill_value=None):
    return nonzero(self, size=size, fill_value=fill_value)


install_methods({"__getitem__": _getitem_method, "at": property(_IndexUpdateHelper),
                 "take": _take_method, "diagonal": diagonal, "nonzero": _nonzero_method})

__all__ = ["getitem", "scatter_update", "take", "take_along_axis", "put_along_axis",
           "nonzero", "flatnonzero", "argwhere", "diagonal", "ix_"]
