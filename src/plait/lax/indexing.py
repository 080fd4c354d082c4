"""XLA-style ``gather`` and ``scatter`` (set, add, mul, min, max).

The index vector dimension is always the last dimension of the indices array.

``gather``: for each index vector ``S`` (the batch dimensions of the indices),
a slice of ``slice_sizes`` starting at ``S`` (placed in operand dimensions
``start_index_map``) is taken; ``collapsed_slice_dims`` (of size 1) are dropped
and the remaining slice dimensions go to output positions ``offset_dims``, the
batch dimensions fill the other positions in order. With ``mode="clip"`` (the
default) starts are clamped so the slice stays in bounds, as XLA does; with
``mode="fill"`` an out-of-bounds slice yields ``fill_value`` (default: NaN for
inexact dtypes, the minimum for signed, the maximum for unsigned, True for bool).

``scatter*``: the reverse; the update window of each index vector is combined
into the operand. With ``mode="drop"`` (the default, like JAX) a window that
does not fit entirely in bounds is dropped whole; ``mode="clip"`` clamps the
starts instead. Duplicate indices accumulate for add/mul/min/max; for
``scatter`` (set) the last update in row-major order of the indices wins.
The impls build index arrays by broadcasting and use ``ufunc.at``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import (standard_primitive, check_dtype, check_same_dtypes, as_operand,
                             ALL)
from plait.lax.reductions import ORDERED
from plait.lax._ad_helpers import (Zero, zeros, full, instantiate, add_tangents,
                                   tangent_aval, is_undefined_primal, aval_of_operand)
from plait.lax._batch_helpers import move_batch_dim, batch_size, index_as_int64
from plait.errors import PlaitTypeError, PlaitValueError


class GatherDimensionNumbers(NamedTuple):
    """How a gather's slices map to the output (see the module docstring)."""
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter's update windows map into the operand (see the module docstring)."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple


def _sorted_unique(name, what, dims, bound, bound_what):
    if list(dims) != sorted(set(dims)) or any(not 0 <= d < bound for d in dims):
        raise PlaitTypeError(f"{name}: {what} {tuple(dims)} must be sorted, distinct and in "
                             f"range for {bound_what} {bound}")


def _check_indices(name, idx: ShapedArray, n_index: int, what: str):
    if not dtypes.is_integer(idx.dtype):
        raise PlaitTypeError(f"{name}: indices must be integers, got {idx.dtype}")
    if idx.ndim < 1 or idx.shape[-1] != n_index:
        raise PlaitTypeError(f"{name}: the last dimension of the indices (shape {idx.shape}) "
                             f"is the index vector and must have size len({what}) = {n_index}")


def default_fill(dt: np.dtype):
    """Out-of-bounds value of ``gather(mode='fill')``: NaN, the int min/max, or True."""
    if dtypes.is_inexact(dt):
        return np.nan
    if dtypes.is_bool(dt):
        return True
    return np.iinfo(dt).max if dtypes.is_unsigned(dt) else np.iinfo(dt).min


def _starts(idx: np.ndarray, dims, shape, sizes, clip: bool):
    """``(n, rank)`` int64 window starts for flattened index vectors, and a validity mask."""
    flat = idx.reshape(int(np.prod(idx.shape[:-1])), idx.shape[-1])
    if flat.dtype == np.uint64:
        flat = np.minimum(flat, np.uint64(np.iinfo(np.int64).max))
    flat = flat.astype(np.int64, copy=False)
    hi = np.array([shape[d] - sizes[d] for d in dims], np.int64)
    valid = np.all((flat >= 0) & (flat <= hi), axis=1)
    if clip:
        flat = np.clip(flat, 0, np.maximum(hi, 0))
    starts = np.zeros((flat.shape[0], len(shape)), np.int64)
    starts[:, list(dims)] = flat
    return starts, valid


def _window_index(starts: np.ndarray, sizes, shape) -> tuple:
    """How to address every window element with NumPy advanced indexing.

    Dimensions the window covers entirely are moved last and sliced whole (fast);
    the others (at least one: the operand has rank >= 1) get broadcast index
    arrays. Returns ``(perm, index)``: ``operand.transpose(perm)[index]`` is
    ``(n, *partial sizes, *full sizes)``.
    """
    full = [d for d, (z, n) in enumerate(zip(sizes, shape)) if z == n][:len(shape) - 1]
    part = [d for d in range(len(shape)) if d not in full]
    r = len(part)
    index = []
    for j, d in enumerate(part):
        shp = [1] * (r + 1)
        shp[1 + j] = sizes[d]
        index.append(starts[:, d].reshape((-1,) + (1,) * r) + np.arange(sizes[d]).reshape(shp))
    return part + full, tuple(index)


def _to_window_order(a: np.ndarray, perm) -> np.ndarray:
    """``(n, *sizes in perm order)`` -> ``(n, *sizes in dimension order)``."""
    inv = [0] * len(perm)
    for j, d in enumerate(perm):
        inv[d] = j
    return np.transpose(a, [0] + [1 + j for j in inv])


def _from_window_order(a: np.ndarray, perm) -> np.ndarray:
    """``(n, *sizes in dimension order)`` -> ``(n, *sizes in perm order)``."""
    return np.transpose(a, [0] + [1 + d for d in perm])


def _rank1(x: np.ndarray, starts: np.ndarray, sizes) -> tuple:
    """A 0-d operand is addressed as a 1-element vector (a view: writes go through)."""
    if x.ndim:
        return x, starts, tuple(sizes)
    return x.reshape(1), np.zeros((starts.shape[0], 1), np.int64), (1,)


def _take_windows(x: np.ndarray, starts: np.ndarray, sizes) -> np.ndarray:
    """The windows of ``sizes`` at each row of ``starts``: shape ``(n, *sizes)``."""
    xr, st, sz = _rank1(x, starts, sizes)
    perm, index = _window_index(st, sz, xr.shape)
    vals = _to_window_order(np.transpose(xr, perm)[index], perm)
    return vals.reshape((starts.shape[0],) + tuple(sizes))


# --- gather --------------------------------------------------------------------------
def _gather_abstract(x: ShapedArray, idx: ShapedArray, *, dimension_numbers, slice_sizes,
                     mode, fill_value) -> ShapedArray:
    offset_dims, collapsed, start_map = dimension_numbers
    name = "gather"
    _check_indices(name, idx, len(start_map), "start_index_map")
    if mode not in ("clip", "fill"):
        raise PlaitValueError(f"gather: mode must be 'clip' or 'fill', got {mode!r}")
    if len(slice_sizes) != x.ndim:
        raise PlaitTypeError(f"gather: slice_sizes {slice_sizes} needs one entry per operand "
                             f"dimension (operand shape {x.shape})")
    for d, (s, n) in enumerate(zip(slice_sizes, x.shape)):
        if not 0 <= s <= n:
            raise PlaitTypeError(f"gather: slice size {s} of dimension {d} does not fit in "
                                 f"operand shape {x.shape}")
    _sorted_unique(name, "collapsed_slice_dims", collapsed, x.ndim, "operand rank")
    for d in collapsed:
        if slice_sizes[d] > 1:
            raise PlaitTypeError(f"gather: collapsed slice dimension {d} must have slice size "
                                 f"1, got {slice_sizes[d]}")
    if sorted(set(start_map)) != sorted(start_map) or any(not 0 <= d < x.ndim for d in start_map):
        raise PlaitTypeError(f"gather: start_index_map {start_map} must be distinct operand "
                             f"dimensions (rank {x.ndim})")
    kept = [slice_sizes[d] for d in range(x.ndim) if d not in collapsed]
    batch = list(idx.shape[:-1])
    out_rank = len(batch) + len(kept)
    if len(offset_dims) != len(kept):
        raise PlaitTypeError(f"gather: offset_dims {offset_dims} needs one entry per "
                             f"non-collapsed slice dimension ({len(kept)})")
    _sorted_unique(name, "offset_dims", offset_dims, out_rank, "output rank")
    shape, bi, oi = [], 0, 0
    for j in range(out_rank):
        if j in offset_dims:
            shape.append(kept[oi])
            oi += 1
        else:
            shape.append(batch[bi])
            bi += 1
    return ShapedArray(shape, x.dtype, x.weak_type)


def _gather_impl(x, idx, *, dimension_numbers, slice_sizes, mode, fill_value):
    offset_dims, collapsed, start_map = dimension_numbers
    batch = idx.shape[:-1]
    starts, valid = _starts(idx, start_map, x.shape, slice_sizes, clip=True)
    vals = _take_windows(x, starts, slice_sizes)             # (n, *slice_sizes)
    if mode == "fill":
        fill = default_fill(x.dtype) if fill_value is None else fill_value
        vals = np.where(valid.reshape((-1,) + (1,) * x.ndim), vals,
                        np.asarray(fill).astype(x.dtype))
    kept = [slice_sizes[d] for d in range(x.ndim) if d not in collapsed]
    vals = vals.reshape(tuple(batch) + tuple(kept))
    nb = len(batch)
    perm, bi, oi = [], 0, 0
    for j in range(nb + len(kept)):
        if j in offset_dims:
            perm.append(nb + oi)
            oi += 1
        else:
            perm.append(bi)
            bi += 1
    # advanced indexing made ``vals`` a fresh array: copy only if the transpose needs it
    return np.asarray(np.transpose(vals, perm), order="C")


gather_p = standard_primitive("gather", _gather_abstract, _gather_impl)


def _gather_transpose(ct, x, idx, *, dimension_numbers, slice_sizes, mode, fill_value):
    offset_dims, collapsed, start_map = dimension_numbers
    xa = aval_of_operand(x)
    dn = ScatterDimensionNumbers(offset_dims, collapsed, start_map)
    out = scatter_add_p.bind(zeros(xa.strip_weak()), idx, instantiate(ct),
                             dimension_numbers=dn, mode="clip" if mode == "clip" else "drop",
                             unique_indices=False)
    return [out, None]


def _gather_jvp(primals, tangents, **params):
    ans = gather_p.bind(*primals, **params)
    if isinstance(tangents[0], Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    p = dict(params, fill_value=0 if params["mode"] == "fill" else params["fill_value"])
    return ans, gather_p.bind(tangents[0], primals[1], **p)


def _with_batch_index(idx):
    """Indices batched at dim 0 with the batch element's number prepended to each
    index vector (the batch dim of the operand is then indexed like any other)."""
    from plait.lax.shape_ops import broadcasted_iota, concatenate
    idx = index_as_int64(idx)
    a = get_aval(idx)
    lane = broadcasted_iota(a.dtype, a.shape[:-1] + (1,), 0)
    return concatenate([lane, idx], a.ndim - 1)


def _plus1(dims) -> tuple:
    return tuple(d + 1 for d in dims)


def gather_batch(vals, dims, *, dimension_numbers, slice_sizes, mode, fill_value):
    """Batched operand: the batch dim is a full slice dim. Batched indices: a leading
    index batch dim. Both: the batch element's number joins each index vector."""
    (x, idx), (xd, id_) = vals, dims
    offset_dims, collapsed, start_map = dimension_numbers
    size = batch_size(vals, dims)
    params = dict(mode=mode, fill_value=fill_value)
    if id_ is None:
        dn = GatherDimensionNumbers((0,) + _plus1(offset_dims), _plus1(collapsed),
                                    _plus1(start_map))
        return gather_p.bind(move_batch_dim(x, xd, 0, size), idx, dimension_numbers=dn,
                             slice_sizes=(size,) + tuple(slice_sizes), **params), 0
    idx = move_batch_dim(idx, id_, 0, size)
    if xd is None:
        dn = GatherDimensionNumbers(_plus1(offset_dims), collapsed, start_map)
        return gather_p.bind(x, idx, dimension_numbers=dn, slice_sizes=slice_sizes,
                             **params), 0
    dn = GatherDimensionNumbers(_plus1(offset_dims), (0,) + _plus1(collapsed),
                                (0,) + _plus1(start_map))
    return gather_p.bind(move_batch_dim(x, xd, 0, size), _with_batch_index(idx),
                         dimension_numbers=dn, slice_sizes=(1,) + tuple(slice_sizes),
                         **params), 0


gather_p.def_rule("jvp", _gather_jvp)
gather_p.def_rule("transpose", _gather_transpose)
gather_p.def_rule("batch", gather_batch)


def _dnums(cls, dn, name):
    try:
        return cls(*(tuple(int(d) for d in part) for part in dn))
    except (TypeError, ValueError):
        raise PlaitTypeError(f"{name}: dimension_numbers must be a {cls.__name__} of three "
                             f"int tuples, got {dn!r}") from None


def _as_index(i):
    i = as_operand(i)
    a = get_aval(i)
    if not dtypes.is_integer(a.dtype):
        raise PlaitTypeError(f"indices must be integers, got {a.dtype}")
    return i


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes,
           mode: str = "clip", fill_value=None):
    """XLA gather; the last dimension of ``start_indices`` is the index vector.

    ``mode="clip"`` clamps starts so slices stay in bounds; ``mode="fill"`` returns
    ``fill_value`` for out-of-bounds slices.
    """
    dn = _dnums(GatherDimensionNumbers, dimension_numbers, "gather")
    sizes = tuple(int(s) for s in slice_sizes)
    fv = fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    return gather_p.bind(as_operand(operand), _as_index(start_indices), dimension_numbers=dn,
                         slice_sizes=sizes, mode=str(mode), fill_value=fv)


# --- scatter -------------------------------------------------------------------------
def _scatter_abstract(name, kinds):
    def rule(x: ShapedArray, idx: ShapedArray, upd: ShapedArray, *, dimension_numbers,
             mode, unique_indices) -> ShapedArray:
        window_dims, inserted, to_operand = dimension_numbers
        check_same_dtypes(name, (x, upd))
        check_dtype(name, x, kinds)
        _check_indices(name, idx, len(to_operand), "scatter_dims_to_operand_dims")
        if mode not in ("drop", "clip"):
            raise PlaitValueError(f"{name}: mode must be 'drop' or 'clip', got {mode!r}")
        _sorted_unique(name, "update_window_dims", window_dims, upd.ndim, "updates rank")
        _sorted_unique(name, "inserted_window_dims", inserted, x.ndim, "operand rank")
        if (sorted(set(to_operand)) != sorted(to_operand)
                or any(not 0 <= d < x.ndim for d in to_operand)):
            raise PlaitTypeError(f"{name}: scatter_dims_to_operand_dims {to_operand} must be "
                                 f"distinct operand dimensions (rank {x.ndim})")
        if len(window_dims) + len(inserted) != x.ndim:
            raise PlaitTypeError(f"{name}: update_window_dims ({len(window_dims)}) plus "
                                 f"inserted_window_dims ({len(inserted)}) must equal the "
                                 f"operand rank {x.ndim}")
        scatter_shape = tuple(d for i, d in enumerate(upd.shape) if i not in window_dims)
        if scatter_shape != tuple(idx.shape[:-1]):
            raise PlaitTypeError(f"{name}: updates of shape {upd.shape} have scatter "
                                 f"dimensions {scatter_shape}, which must equal the indices' "
                                 f"batch shape {tuple(idx.shape[:-1])}")
        free = [d for d in range(x.ndim) if d not in inserted]
        for w, d in zip(window_dims, free):
            if upd.shape[w] > x.shape[d]:
                raise PlaitTypeError(f"{name}: update window dimension {w} (size "
                                     f"{upd.shape[w]}) is larger than operand dimension {d} "
                                     f"(shape {x.shape})")
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return rule


def _scatter_impl(combine):
    def impl(x, idx, upd, *, dimension_numbers, mode, unique_indices):
        window_dims, inserted, to_operand = dimension_numbers
        scatter_dims = [i for i in range(upd.ndim) if i not in window_dims]
        u = np.transpose(upd, scatter_dims + list(window_dims))
        wsizes = [1] * x.ndim
        for w, d in zip(window_dims, [d for d in range(x.ndim) if d not in inserted]):
            wsizes[d] = upd.shape[w]
        u = u.reshape((int(np.prod(idx.shape[:-1])),) + tuple(wsizes))
        starts, valid = _starts(idx, to_operand, x.shape, wsizes, clip=(mode == "clip"))
        if mode == "drop" and not valid.all():
            starts, u = starts[valid], u[valid]
        out = x.copy()
        view, st, sz = _rank1(out, starts, wsizes)
        perm, index = _window_index(st, sz, view.shape)
        combine(np.transpose(view, perm), index,
                _from_window_order(u.reshape((u.shape[0],) + sz), perm))
        return out
    return impl


def _set(out, index, u):
    out[index] = u


def _at(ufunc):
    def combine(out, index, u):
        with np.errstate(all="ignore"):
            ufunc.at(out, index, u)
    return combine


def _add_at(out, index, u):
    _at(np.logical_or if out.dtype == np.bool_ else np.add)(out, index, u)


def _mul_at(out, index, u):
    _at(np.logical_and if out.dtype == np.bool_ else np.multiply)(out, index, u)


scatter_p = standard_primitive("scatter", _scatter_abstract("scatter", ALL), _scatter_impl(_set))
scatter_add_p = standard_primitive("scatter_add", _scatter_abstract("scatter_add", ALL),
                                   _scatter_impl(_add_at))
scatter_mul_p = standard_primitive("scatter_mul", _scatter_abstract("scatter_mul", ALL),
                                   _scatter_impl(_mul_at))
scatter_min_p = standard_primitive("scatter_min", _scatter_abstract("scatter_min", ORDERED),
                                   _scatter_impl(_at(np.minimum)))
scatter_max_p = standard_primitive("scatter_max", _scatter_abstract("scatter_max", ORDERED),
                                   _scatter_impl(_at(np.maximum)))


# scatter autodiff rules. ``_windows_of`` gathers, for every update element, the operand
# element it lands on (0 or the fill for dropped windows): the adjoint of scattering.
def _windows_of(v, idx, upd_aval, dimension_numbers, mode, fill=0):
    window_dims, inserted, to_operand = dimension_numbers
    va = get_aval(v)
    sizes, w = [], iter(window_dims)
    for d in range(va.ndim):
        sizes.append(1 if d in inserted else upd_aval.shape[next(w)])
    return gather_p.bind(v, idx, dimension_numbers=GatherDimensionNumbers(
        tuple(window_dims), tuple(inserted), tuple(to_operand)), slice_sizes=tuple(sizes),
        mode="clip" if mode == "clip" else "fill", fill_value=fill)


def _scatter_add_transpose(ct, x, idx, upd, *, dimension_numbers, mode, unique_indices):
    ct_u = None
    if is_undefined_primal(upd):
        ct_u = _windows_of(ct, idx, aval_of_operand(upd), dimension_numbers, mode)
    return [ct if is_undefined_primal(x) else None, None, ct_u]


def _scatter_linear_jvp(prim):
    def rule(primals, tangents, **params):
        x, idx, upd = primals
        ans = prim.bind(x, idx, upd, **params)
        gx, gu = tangents[0], tangents[2]
        if isinstance(gx, Zero) and isinstance(gu, Zero):
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, prim.bind(instantiate(gx), idx, instantiate(gu), **params)
    return rule


def _winners(idx, upd_aval, x_aval, dimension_numbers, mode):
    """True for each update element that is the one left standing by scatter (set)."""
    from plait.lax.shape_ops import broadcasted_iota, reshape
    from plait.lax.elementwise import eq
    n = upd_aval.size
    ids = reshape(broadcasted_iota(dtypes.int64, (n,), 0), upd_aval.shape)
    board = scatter_p.bind(full(x_aval.shape, -1, dtypes.int64), idx, ids,
                           dimension_numbers=dimension_numbers, mode=mode,
                           unique_indices=False)
    return eq(_windows_of(board, idx, upd_aval, dimension_numbers, mode, fill=-1), ids)


def _scatter_transpose(ct, x, idx, upd, *, dimension_numbers, mode, unique_indices):
    from plait.lax.elementwise import select
    ua = aval_of_operand(upd)
    ct_x = ct_u = None
    if is_undefined_primal(x):
        ct_x = scatter_p.bind(ct, idx, zeros(ua.strip_weak()),
                              dimension_numbers=dimension_numbers, mode=mode,
                              unique_indices=unique_indices)
    if is_undefined_primal(upd):
        ct_u = _windows_of(ct, idx, ua, dimension_numbers, mode)
        if not unique_indices:
            ct_u = select(_winners(idx, ua, aval_of_operand(x), dimension_numbers, mode),
                          ct_u, zeros(ua.strip_weak()))
    return [ct_x, None, ct_u]


def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, mode, unique_indices):
    """d(x * prod u) = g_x * prod u + x * sum_k g_k prod_(j != k) u_j; the second term
    is exact for unique indices and uses ``out * sum(g / u)`` otherwise (nonzero u)."""
    from plait.lax.elementwise import mul, div
    x, idx, upd = primals
    params = dict(dimension_numbers=dimension_numbers, mode=mode,
                  unique_indices=unique_indices)
    ans = scatter_mul_p.bind(x, idx, upd, **params)
    gx, gu = tangents[0], tangents[2]
    out = None
    if not isinstance(gx, Zero):
        out = scatter_mul_p.bind(gx, idx, upd, **params)
    if not isinstance(gu, Zero):
        xa = get_aval(x).strip_weak()
        if unique_indices:
            t = mul(x, scatter_add_p.bind(zeros(xa), idx, gu, **params))
        else:
            t = mul(ans, scatter_add_p.bind(zeros(xa), idx, div(gu, upd), **params))
        out = add_tangents(out, t)
    return ans, (Zero(tangent_aval(get_aval(ans))) if out is None else out)


def _scatter_mul_transpose(ct, x, idx, upd, **params):
    if is_undefined_primal(upd):
        raise PlaitTypeError("scatter_mul is not linear in its updates; this is a plait bug")
    return [scatter_mul_p.bind(ct, idx, upd, **params), None, None]


def _scatter_extremum_jvp(prim):
    def rule(primals, tangents, *, dimension_numbers, mode, unique_indices):
        """The result's tangent comes from whichever of the operand and the updates
        attains it, shared equally among ties."""
        from plait.lax.elementwise import eq, select, add, div, convert_element_type
        x, idx, upd = primals
        params = dict(dimension_numbers=dimension_numbers, mode=mode,
                      unique_indices=unique_indices)
        ans = prim.bind(x, idx, upd, **params)
        xa, ua = get_aval(x).strip_weak(), get_aval(upd).strip_weak()
        gx, gu = instantiate(tangents[0]), instantiate(tangents[2])
        from_x = eq(x, ans)
        from_u = eq(upd, _windows_of(ans, idx, ua, dimension_numbers, mode, fill=np.nan
                                     if dtypes.is_inexact(ua.dtype) else 0))
        zx, zu = zeros(xa), zeros(ua)
        total = add(select(from_x, gx, zx),
                    scatter_add_p.bind(zx, idx, select(from_u, gu, zu), **params))
        count = add(convert_element_type(from_x, xa.dtype),
                    scatter_add_p.bind(zx, idx, convert_element_type(from_u, ua.dtype),
                                       **params))
        return ans, div(total, count)
    return rule


scatter_add_p.def_rule("jvp", _scatter_linear_jvp(scatter_add_p))
scatter_add_p.def_rule("transpose", _scatter_add_transpose)
scatter_p.def_rule("jvp", _scatter_linear_jvp(scatter_p))
scatter_p.def_rule("transpose", _scatter_transpose)
scatter_mul_p.def_rule("jvp", _scatter_mul_jvp)
scatter_mul_p.def_rule("transpose", _scatter_mul_transpose)
scatter_min_p.def_rule("jvp", _scatter_extremum_jvp(scatter_min_p))
scatter_max_p.def_rule("jvp", _scatter_extremum_jvp(scatter_max_p))


def scatter_batch(prim):
    """The batch rule of a scatter: operand and updates get the batch dim at 0.
    Unbatched indices: the batch dim is a full window dim. Batched indices: the
    batch element's number joins each index vector (an inserted window dim)."""
    def rule(vals, dims, *, dimension_numbers, mode, unique_indices):
        (x, idx, upd), (xd, id_, ud) = vals, dims
        window_dims, inserted, to_operand = dimension_numbers
        size = batch_size(vals, dims)
        x, upd = move_batch_dim(x, xd, 0, size), move_batch_dim(upd, ud, 0, size)
        params = dict(mode=mode, unique_indices=unique_indices)
        if id_ is None:
            dn = ScatterDimensionNumbers((0,) + _plus1(window_dims), _plus1(inserted),
                                         _plus1(to_operand))
            return prim.bind(x, idx, upd, dimension_numbers=dn, **params), 0
        dn = ScatterDimensionNumbers(_plus1(window_dims), (0,) + _plus1(inserted),
                                     (0,) + _plus1(to_operand))
        idx = _with_batch_index(move_batch_dim(idx, id_, 0, size))
        return prim.bind(x, idx, upd, dimension_numbers=dn, **params), 0
    return rule


for _p in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    _p.def_rule("batch", scatter_batch(_p))


def _scatter_fn(prim, verb):
    def fn(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
           mode: str = "drop", unique_indices: bool = False):
        dn = _dnums(ScatterDimensionNumbers, dimension_numbers, prim.name)
        x = as_operand(operand)
        u = as_operand(updates, get_aval(x).dtype)
        return prim.bind(x, _as_index(scatter_indices), u, dimension_numbers=dn,
                         mode=str(mode), unique_indices=bool(unique_indices))
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = (f"XLA scatter that {verb} each window of ``updates`` into ``operand`` at "
                  f"``scatter_indices`` (last dimension = index vector). ``mode='drop'`` "
                  f"skips windows that are not fully in bounds; ``'clip'`` clamps their "
                  f"starts. ``unique_indices`` is a promise used by transformations.")
    return fn


scatter = _scatter_fn(scatter_p, "writes (last duplicate wins)")
scatter_add = _scatter_fn(scatter_add_p, "adds")
scatter_mul = _scatter_fn(scatter_mul_p, "multiplies")
scatter_min = _scatter_fn(scatter_min_p, "takes the minimum of")
scatter_max = _scatter_fn(scatter_max_p, "takes the maximum of")
