"""Structural primitives: broadcast_in_dim, reshape, transpose, squeeze,
expand_dims, rev, slice, dynamic_slice, dynamic_update_slice, concatenate, pad, iota.
"""
from __future__ import annotations

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import (standard_primitive, check_same_dtypes, as_operand,
                             canonicalize_axis, static_ints)
from plait.lax._ad_helpers import (Zero, deflinear, defjvp_zero, zeros, instantiate,
                                   tangent_aval, is_undefined_primal, aval_of_operand)
from plait.lax._batch_helpers import (move_batch_dim, batch_size, shift_axis, shift_axes,
                                      insert_at, index_as_int64)
from plait.errors import PlaitTypeError


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


# --- broadcast_in_dim ------------------------------------------------------------
def _bid_abstract(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise PlaitTypeError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} "
                             f"broadcast_dimensions, got {broadcast_dimensions}")
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
            raise PlaitTypeError(f"broadcast_in_dim: cannot broadcast operand of shape "
                                 f"{x.shape} to {shape} along dimensions {broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise PlaitTypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} "
                             "must be strictly increasing")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _bid_impl(x, *, shape, broadcast_dimensions):
    inter = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        inter[d] = x.shape[i]
    return np.array(np.broadcast_to(x.reshape(inter), shape))


broadcast_in_dim_p = standard_primitive("broadcast_in_dim", _bid_abstract, _bid_impl)


def _bid_transpose(ct, x, *, shape, broadcast_dimensions):
    from plait.lax.reductions import reduce_sum
    xa = aval_of_operand(x)
    bd = broadcast_dimensions
    summed = [d for d in range(len(shape)) if d not in bd]
    summed += [bd[i] for i, n in enumerate(xa.shape) if n == 1 and shape[bd[i]] != 1]
    r = reduce_sum(ct, tuple(sorted(summed))) if summed else ct
    return [reshape(r, xa.shape)]


deflinear(broadcast_in_dim_p, _bid_transpose)


def _bid_batch(vals, dims, *, shape, broadcast_dimensions):
    """The batch dim goes right after the output dim of the operand dim before it."""
    (x,), (d,) = vals, dims
    bd = broadcast_dimensions
    out_d = bd[d - 1] + 1 if d > 0 else 0
    new_bd = tuple(b if b < out_d else b + 1 for b in bd)
    size = get_aval(x).shape[d]
    return broadcast_in_dim_p.bind(x, shape=insert_at(shape, out_d, size),
                                   broadcast_dimensions=insert_at(new_bd, d, out_d)), out_d


broadcast_in_dim_p.def_rule("batch", _bid_batch)
broadcast_in_dim_p.def_rule("expands", True)     # stays in loops (passes/licm.py)


def broadcast_in_dim(x, shape, broadcast_dimensions):
    """Broadcast ``x`` to ``shape``; operand dim ``i`` maps to ``broadcast_dimensions[i]``."""
    shape = static_ints("broadcast_in_dim", shape, "shape")
    bd = static_ints("broadcast_in_dim", broadcast_dimensions, "broadcast_dimensions")
    x = as_operand(x)
    if get_aval(x).shape == shape and bd == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bd)


def broadcast(x, sizes):
    """Add leading dimensions of ``sizes`` to ``x``."""
    a = get_aval(x)
    sizes = tuple(sizes)
    return broadcast_in_dim(x, sizes + a.shape, tuple(range(len(sizes), len(sizes) + a.ndim)))


# --- reshape -----------------------------------------------------------------------
def _reshape_abstract(x, *, new_sizes):
    if _prod(new_sizes) != x.size or any(d < 0 for d in new_sizes):
        raise PlaitTypeError(f"cannot reshape array of size {x.size} into shape {new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p = standard_primitive("reshape", _reshape_abstract,
                               lambda x, *, new_sizes: np.reshape(x, new_sizes))
deflinear(reshape_p, lambda ct, x, *, new_sizes: [reshape(ct, aval_of_operand(x).shape)])


def _reshape_batch(vals, dims, *, new_sizes):
    (x,), (d,) = vals, dims
    size = get_aval(x).shape[d]
    return reshape_p.bind(move_batch_dim(x, d, 0, size), new_sizes=(size,) + new_sizes), 0


reshape_p.def_rule("batch", _reshape_batch)


def reshape(x, new_sizes):
    """Row-major reshape to ``new_sizes`` (static)."""
    new_sizes = static_ints("reshape", new_sizes, "new_sizes")
    x = as_operand(x)
    if get_aval(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


# --- transpose ---------------------------------------------------------------------
def _transpose_abstract(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise PlaitTypeError(f"transpose: axes {permutation} don't match array of rank {x.ndim}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = standard_primitive("transpose", _transpose_abstract,
                                 lambda x, *, permutation: np.transpose(x, permutation).copy())
deflinear(transpose_p,
          lambda ct, x, *, permutation: [transpose(ct, tuple(np.argsort(permutation)))])
transpose_p.def_rule("batch", lambda vals, dims, *, permutation: (transpose(
    vals[0], (dims[0],) + shift_axes(permutation, dims[0])), 0))


def transpose(x, permutation):
    """Permute the dimensions of ``x``."""
    permutation = static_ints("transpose", permutation, "permutation")
    if permutation == tuple(range(len(permutation))):
        return as_operand(x)
    return transpose_p.bind(as_operand(x), permutation=permutation)


# --- squeeze / expand_dims -------------------------------------------------------
def _squeeze_abstract(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise PlaitTypeError(f"cannot select an axis to squeeze out which has size not "
                                 f"equal to one (axis {d} of shape {x.shape})")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions),
                       x.dtype, x.weak_type)


squeeze_p = standard_primitive("squeeze", _squeeze_abstract,
                               lambda x, *, dimensions: np.squeeze(x, dimensions) if dimensions else x)
deflinear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, aval_of_operand(x).shape)])


def _squeeze_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    full = shift_axes(dimensions, d)
    return squeeze_p.bind(x, dimensions=full), d - sum(1 for a in full if a < d)


squeeze_p.def_rule("batch", _squeeze_batch)


def squeeze(x, dimensions):
    """Remove size-1 ``dimensions``."""
    a = get_aval(x)
    dims = tuple(sorted({canonicalize_axis(d, a.ndim) for d in dimensions}))
    if not dims:
        return x
    return squeeze_p.bind(as_operand(x), dimensions=dims)


def _expand_abstract(x, *, dimensions):
    nd = x.ndim + len(dimensions)
    if any(not 0 <= d < nd for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise PlaitTypeError(f"expand_dims: bad dimensions {dimensions} for rank {x.ndim}")
    shape = list(x.shape)
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return ShapedArray(shape, x.dtype, x.weak_type)


expand_dims_p = standard_primitive("expand_dims", _expand_abstract,
                                   lambda x, *, dimensions: np.expand_dims(x, dimensions))
deflinear(expand_dims_p, lambda ct, x, *, dimensions: [reshape(ct, aval_of_operand(x).shape)])
expand_dims_p.def_rule("batch", lambda vals, dims, *, dimensions: (expand_dims_p.bind(
    move_batch_dim(vals[0], dims[0], 0, get_aval(vals[0]).shape[dims[0]]),
    dimensions=tuple(e + 1 for e in dimensions)), 0))


def expand_dims(x, dimensions):
    """Insert size-1 dimensions at the (output) positions ``dimensions``."""
    a = get_aval(x)
    nd = a.ndim + len(dimensions)
    dims = tuple(sorted(canonicalize_axis(d, nd) for d in dimensions))
    if not dims:
        return x
    return expand_dims_p.bind(as_operand(x), dimensions=dims)


# --- rev -----------------------------------------------------------------------------
def _rev_abstract(x, *, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise PlaitTypeError(f"rev: dimensions {dimensions} out of range for rank {x.ndim}")
    return x


rev_p = standard_primitive("rev", _rev_abstract,
                           lambda x, *, dimensions: np.flip(x, dimensions).copy())
deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
rev_p.def_rule("batch", lambda vals, dims, *, dimensions: (
    rev_p.bind(vals[0], dimensions=shift_axes(dimensions, dims[0])), dims[0]))


def rev(x, dimensions):
    """Reverse ``x`` along ``dimensions``."""
    dims = tuple(sorted(set(static_ints("rev", dimensions, "dimensions"))))
    return rev_p.bind(as_operand(x), dimensions=dims) if dims else x


# --- slice ---------------------------------------------------------------------------
def _slice_abstract(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise PlaitTypeError(f"slice: need {x.ndim} start/limit/stride values")
    shape = []
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not 0 <= s <= l <= d or st < 1:
            raise PlaitTypeError(f"slice: [{s}:{l}:{st}] is out of range for a dimension "
                                 f"of size {d} (array shape {x.shape})")
        shape.append(max(0, -(-(l - s) // st)))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    return x[tuple(np.s_[s:l:st] for s, l, st in zip(start_indices, limit_indices, strides))].copy()


slice_p = standard_primitive("slice", _slice_abstract, _slice_impl)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    xa = aval_of_operand(x)
    ca = aval_of_operand(ct)
    if ca.size == 0:
        return [zeros(xa.strip_weak())]
    cfg = []
    for s, n, st, d in zip(start_indices, ca.shape, strides, xa.shape):
        used = s + (n - 1) * st + 1 if n else s
        cfg.append((s, d - used, st - 1 if n else 0))
    return [pad(ct, 0, cfg)]


deflinear(slice_p, _slice_transpose)


def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    size = get_aval(x).shape[d]
    return slice_p.bind(x, start_indices=insert_at(start_indices, d, 0),
                        limit_indices=insert_at(limit_indices, d, size),
                        strides=insert_at(strides, d, 1)), d


slice_p.def_rule("batch", _slice_batch)


def slice(x, start_indices, limit_indices, strides=None):
    """Static slice ``x[start:limit:stride]`` in every dimension."""
    a = get_aval(x)
    start = static_ints("slice", start_indices, "start_indices")
    limit = static_ints("slice", limit_indices, "limit_indices")
    strides = (1,) * a.ndim if strides is None else static_ints("slice", strides, "strides")
    if start == (0,) * a.ndim and limit == a.shape and strides == (1,) * a.ndim:
        return x
    return slice_p.bind(as_operand(x), start_indices=start, limit_indices=limit, strides=strides)


# --- dynamic_slice / dynamic_update_slice ----------------------------------------
def _clamped_starts(starts, shape, sizes):
    return tuple(int(min(max(int(s), 0), d - z)) for s, d, z in zip(starts, shape, sizes))


def _check_index_scalars(name, idx_avals, ndim):
    if len(idx_avals) != ndim:
        raise PlaitTypeError(f"{name}: need {ndim} start indices, got {len(idx_avals)}")
    for a in idx_avals:
        if a.shape != () or not dtypes.is_integer(a.dtype):
            raise PlaitTypeError(f"{name}: start indices must be integer scalars, got "
                                 f"{a.str_short()}")


def _dyn_slice_abstract(x, *idx, slice_sizes):
    _check_index_scalars("dynamic_slice", idx, x.ndim)
    if len(slice_sizes) != x.ndim or any(not 0 <= z <= d for z, d in zip(slice_sizes, x.shape)):
        raise PlaitTypeError(f"dynamic_slice: slice_sizes {slice_sizes} must fit in shape {x.shape}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dyn_slice_impl(x, *idx, slice_sizes):
    st = _clamped_starts(idx, x.shape, slice_sizes)
    return x[tuple(np.s_[s:s + z] for s, z in zip(st, slice_sizes))].copy()


dynamic_slice_p = standard_primitive("dynamic_slice", _dyn_slice_abstract, _dyn_slice_impl)


def _dyn_slice_jvp(primals, tangents, *, slice_sizes):
    x, *idx = primals
    ans = dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
    if isinstance(tangents[0], Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, dynamic_slice_p.bind(tangents[0], *idx, slice_sizes=slice_sizes)


def _dyn_slice_transpose(ct, x, *idx, slice_sizes):
    z = zeros(aval_of_operand(x).strip_weak())
    return [dynamic_update_slice_p.bind(z, instantiate(ct), *idx)] + [None] * len(idx)


def _index_vector(idx, dims, size):
    """Per-example scalar start indices as one batched ``(batch, n)`` index vector."""
    cols = [reshape(move_batch_dim(index_as_int64(i), d, 0, size), (size, 1)) for i, d in
            zip(idx, dims)]
    return concatenate(cols, 1)


def _dyn_slice_batch(vals, dims, *, slice_sizes):
    """Unbatched starts: slice the batch dim whole. Batched starts: a clipping gather."""
    from plait.lax.indexing import gather_batch, GatherDimensionNumbers
    (x, *idx), (xd, *idx_d) = vals, dims
    size = batch_size(vals, dims)
    if all(d is None for d in idx_d):
        zero = as_operand(0, get_aval(idx[0]).dtype if idx else dtypes.int64)
        return dynamic_slice_p.bind(move_batch_dim(x, xd, 0, size), zero, *idx,
                                    slice_sizes=(size,) + slice_sizes), 0
    n = len(idx)
    dn = GatherDimensionNumbers(tuple(range(n)), (), tuple(range(n)))
    return gather_batch([x, _index_vector(idx, idx_d, size)], [xd, 0], dimension_numbers=dn,
                        slice_sizes=slice_sizes, mode="clip", fill_value=None)


dynamic_slice_p.def_rule("jvp", _dyn_slice_jvp)
dynamic_slice_p.def_rule("transpose", _dyn_slice_transpose)
dynamic_slice_p.def_rule("batch", _dyn_slice_batch)


def dynamic_slice(x, start_indices, slice_sizes):
    """Slice of static ``slice_sizes`` at traced ``start_indices`` (clamped to stay in bounds)."""
    sizes = static_ints("dynamic_slice", slice_sizes, "slice_sizes")
    idx = [as_operand(i, dtypes.int64) if isinstance(i, int) else i for i in start_indices]
    idx = [_index_to_i64(i) for i in idx]
    return dynamic_slice_p.bind(as_operand(x), *idx, slice_sizes=sizes)


def _index_to_i64(i):
    from plait.lax.elementwise import convert_element_type
    a = get_aval(i)
    return i if a.dtype == dtypes.int64 else convert_element_type(i, dtypes.int64)


def _dyn_update_abstract(x, upd, *idx):
    _check_index_scalars("dynamic_update_slice", idx, x.ndim)
    check_same_dtypes("dynamic_update_slice", (x, upd))
    if upd.ndim != x.ndim or any(u > d for u, d in zip(upd.shape, x.shape)):
        raise PlaitTypeError(f"dynamic_update_slice: update of shape {upd.shape} does not fit "
                             f"in operand of shape {x.shape}")
    return x


def _dyn_update_impl(x, upd, *idx):
    st = _clamped_starts(idx, x.shape, upd.shape)
    out = x.copy()
    out[tuple(np.s_[s:s + z] for s, z in zip(st, upd.shape))] = upd
    return out


dynamic_update_slice_p = standard_primitive("dynamic_update_slice", _dyn_update_abstract,
                                            _dyn_update_impl)


def _dyn_update_jvp(primals, tangents):
    x, upd, *idx = primals
    gx, gu = tangents[:2]
    ans = dynamic_update_slice_p.bind(x, upd, *idx)
    if isinstance(gx, Zero) and isinstance(gu, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, dynamic_update_slice_p.bind(instantiate(gx), instantiate(gu), *idx)


def _dyn_update_transpose(ct, x, upd, *idx):
    ua = aval_of_operand(upd)
    ct_x = ct_u = None
    if is_undefined_primal(x):
        ct_x = dynamic_update_slice_p.bind(ct, zeros(ua.strip_weak()), *idx)
    if is_undefined_primal(upd):
        ct_u = dynamic_slice_p.bind(ct, *idx, slice_sizes=ua.shape)
    return [ct_x, ct_u] + [None] * len(idx)


def _dyn_update_batch(vals, dims):
    """Unbatched starts: update the batch dim whole. Batched starts: a clipping scatter."""
    from plait.lax.indexing import scatter_p, scatter_batch, ScatterDimensionNumbers
    (x, upd, *idx), (xd, ud, *idx_d) = vals, dims
    size = batch_size(vals, dims)
    if all(d is None for d in idx_d):
        zero = as_operand(0, get_aval(idx[0]).dtype if idx else dtypes.int64)
        return dynamic_update_slice_p.bind(move_batch_dim(x, xd, 0, size),
                                           move_batch_dim(upd, ud, 0, size), zero, *idx), 0
    n = len(idx)
    dn = ScatterDimensionNumbers(tuple(range(n)), (), tuple(range(n)))
    return scatter_batch(scatter_p)([x, _index_vector(idx, idx_d, size), upd], [xd, 0, ud],
                                    dimension_numbers=dn, mode="clip", unique_indices=True)


dynamic_update_slice_p.def_rule("jvp", _dyn_update_jvp)
dynamic_update_slice_p.def_rule("transpose", _dyn_update_transpose)
dynamic_update_slice_p.def_rule("batch", _dyn_update_batch)


def dynamic_update_slice(x, update, start_indices):
    """``x`` with ``update`` written at traced ``start_indices`` (clamped to stay in bounds)."""
    idx = [_index_to_i64(as_operand(i, dtypes.int64) if isinstance(i, int) else i)
           for i in start_indices]
    return dynamic_update_slice_p.bind(as_operand(x), as_operand(update), *idx)


# --- concatenate ---------------------------------------------------------------------
def _concat_abstract(*xs, dimension):
    if not xs:
        raise PlaitTypeError("need at least one array to concatenate")
    check_same_dtypes("concatenate", xs)
    x0 = xs[0]
    if not 0 <= dimension < x0.ndim:
        raise PlaitTypeError(f"concatenate: axis {dimension} is out of bounds for array of "
                             f"dimension {x0.ndim}")
    for x in xs[1:]:
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise PlaitTypeError(f"all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, got shapes "
                                 f"{', '.join(str(y.shape) for y in xs)}")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


concatenate_p = standard_primitive("concatenate", _concat_abstract,
                                   lambda *xs, dimension: np.concatenate(xs, dimension))


def _concat_transpose(ct, *xs, dimension):
    out, start = [], 0
    ca = aval_of_operand(ct)
    for x in xs:
        n = aval_of_operand(x).shape[dimension]
        if is_undefined_primal(x):
            lo = [0] * ca.ndim
            hi = list(ca.shape)
            lo[dimension], hi[dimension] = start, start + n
            out.append(slice(ct, lo, hi))
        else:
            out.append(None)
        start += n
    return out


deflinear(concatenate_p, _concat_transpose)


def _concat_batch(vals, dims, *, dimension):
    size = batch_size(vals, dims)
    bd = next(d for d in dims if d is not None)
    xs = [move_batch_dim(x, d, bd, size) for x, d in zip(vals, dims)]
    return concatenate_p.bind(*xs, dimension=shift_axis(dimension, bd)), bd


concatenate_p.def_rule("batch", _concat_batch)


def concatenate(xs, dimension: int):
    """Join arrays of equal dtype along ``dimension``."""
    xs = [as_operand(x) for x in xs]
    if len(xs) == 1:
        return xs[0]
    return concatenate_p.bind(*xs, dimension=int(dimension))


# --- pad -----------------------------------------------------------------------------
def _pad_abstract(x, pv, *, padding_config):
    check_same_dtypes("pad", (x, pv))
    if pv.shape != ():
        raise PlaitTypeError(f"pad: padding value must be a scalar, got {pv.shape}")
    if len(padding_config) != x.ndim:
        raise PlaitTypeError(f"pad: need {x.ndim} (low, high, interior) triples")
    shape = []
    for (lo, hi, it), d in zip(padding_config, x.shape):
        if it < 0:
            raise PlaitTypeError("pad: interior padding must be non-negative")
        n = lo + hi + d + max(d - 1, 0) * it
        if n < 0:
            raise PlaitTypeError(f"pad: negative size after padding dimension of size {d} "
                                 f"with {(lo, hi, it)}")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, pv, *, padding_config):
    # interior padding first, then (possibly negative) edge padding
    inner = [d + max(d - 1, 0) * it for d, (_, _, it) in zip(x.shape, padding_config)]
    buf = np.full(inner, pv, dtype=x.dtype)
    buf[tuple(np.s_[::it + 1] for (_, _, it) in padding_config)] = x
    big = [max(lo, 0) + n + max(hi, 0) for n, (lo, hi, _) in zip(inner, padding_config)]
    out = np.full(big, pv, dtype=x.dtype)
    out[tuple(np.s_[max(lo, 0):max(lo, 0) + n] for n, (lo, _, _) in zip(inner, padding_config))] = buf
    crop = tuple(np.s_[max(-lo, 0):b - max(-hi, 0)] for b, (lo, hi, _) in zip(big, padding_config))
    return out[crop].copy()


pad_p = standard_primitive("pad", _pad_abstract, _pad_impl)


def _pad_transpose(ct, x, pv, *, padding_config):
    from plait.lax.reductions import reduce_sum
    from plait.lax.elementwise import sub
    ca = aval_of_operand(ct)
    unpad = pad(ct, 0, [(-lo, -hi, 0) for lo, hi, _ in padding_config])
    t_x = slice(unpad, [0] * ca.ndim, get_aval(unpad).shape,
                [it + 1 for _, _, it in padding_config])
    t_pv = None
    if is_undefined_primal(pv):
        every = tuple(range(ca.ndim))
        t_pv = sub(reduce_sum(ct, every), reduce_sum(t_x, every))
    return [t_x if is_undefined_primal(x) else None, t_pv]


deflinear(pad_p, _pad_transpose)


def _pad_batch(vals, dims, *, padding_config):
    """A batched padding value: pad with anything, then select it where the mask says."""
    from plait.lax.elementwise import select
    (x, pv), (xd, pd) = vals, dims
    size = batch_size(vals, dims)
    if pd is None:
        return pad_p.bind(x, pv, padding_config=insert_at(padding_config, xd, (0, 0, 0))), xd
    x = move_batch_dim(x, xd, 0, size)
    cfg = ((0, 0, 0),) + tuple(padding_config)
    a = get_aval(x)
    from plait.lax._ad_helpers import full
    padded = pad_p.bind(x, as_operand(0, a.dtype), padding_config=cfg)
    mask = pad_p.bind(full(a.shape, True, dtypes.bool_), as_operand(False),
                      padding_config=cfg)
    out_shape = get_aval(padded).shape
    return select(mask, padded, broadcast_in_dim(move_batch_dim(pv, pd, 0, size), out_shape,
                                                 (0,))), 0


pad_p.def_rule("batch", _pad_batch)


def pad(x, padding_value, padding_config):
    """Pad with ``(low, high, interior)`` per dimension; negative low/high crop."""
    cfg = tuple(tuple(int(v) for v in c) for c in padding_config)
    x = as_operand(x)
    return pad_p.bind(x, as_operand(padding_value, get_aval(x).dtype), padding_config=cfg)


# --- iota ----------------------------------------------------------------------------
def _iota_abstract(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise PlaitTypeError(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    sh = [1] * len(shape)
    sh[dimension] = shape[dimension]
    return np.array(np.broadcast_to(r.reshape(sh), shape))


iota_p = standard_primitive("iota", _iota_abstract, _iota_impl)
defjvp_zero(iota_p)
iota_p.def_rule("expands", True)     # stays in loops (passes/licm.py)
# iota has no operands: vmap only sees it unbatched (never calls this rule's body path)
iota_p.def_rule("batch", lambda vals, dims, **params: (iota_p.bind(**params), None))


def iota(dtype, size: int):
    """``[0, 1, ..., size-1]`` of ``dtype``."""
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension: int):
    """Array of ``shape`` whose value is the index along ``dimension``."""
    return iota_p.bind(dtype=dtypes.canonical_dtype(dtype),
                       shape=static_ints("iota", shape, "shape"), dimension=int(dimension))
