"""``sort``: a multi-operand sort along one dimension, and ``sort_key_val``/``top_k``.

The ``sort`` primitive takes operands of equal shape and sorts them all by the
lexicographic order of the first ``num_keys`` operands along ``dimension``. The
order is NumPy's: NaNs go to the end, complex numbers compare by real part then
imaginary part, and ``-0.0`` equals ``0.0``. The NumPy impl is always stable
(``is_stable`` is kept as a param for backends that can use an unstable sort).
"""
from __future__ import annotations

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import standard_primitive, canonicalize_axis, as_operand, check_same_shapes
from plait.lax._ad_helpers import Zero
from plait.lax._batch_helpers import move_batch_dim, batch_size, shift_axis
from plait.errors import PlaitTypeError, PlaitValueError


def _sort_abstract(*xs: ShapedArray, dimension: int, is_stable: bool,
                   num_keys: int) -> list:
    if not xs:
        raise PlaitTypeError("sort needs at least one operand")
    check_same_shapes("sort", xs)
    if not 1 <= num_keys <= len(xs):
        raise PlaitValueError(f"sort: num_keys must be between 1 and the number of operands "
                              f"({len(xs)}), got {num_keys}")
    if not 0 <= dimension < xs[0].ndim:
        raise PlaitValueError(f"sort: dimension {dimension} is out of bounds for array of "
                              f"dimension {xs[0].ndim}")
    return list(xs)


def _sort_impl(*xs, dimension, is_stable, num_keys):
    keys = xs[:num_keys]
    if num_keys == 1:
        perm = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in xs]


sort_p = standard_primitive("sort", _sort_abstract, _sort_impl, multiple_results=True)


def _take_along(v, perm, dimension: int):
    """``v`` permuted along ``dimension`` by ``perm`` (take_along_axis, as a gather)."""
    from plait.lax.shape_ops import broadcasted_iota, reshape, concatenate
    from plait.lax.indexing import gather_p, GatherDimensionNumbers
    a = get_aval(v)
    if a.size == 0:   # nothing to permute (a gather could not even slice one element)
        return v
    cols = [reshape(perm, a.shape + (1,)) if d == dimension else
            broadcasted_iota(dtypes.int64, a.shape + (1,), d) for d in range(a.ndim)]
    idx = concatenate(cols, a.ndim)
    dn = GatherDimensionNumbers((), tuple(range(a.ndim)), tuple(range(a.ndim)))
    return gather_p.bind(v, idx, dimension_numbers=dn, slice_sizes=(1,) * a.ndim,
                         mode="clip", fill_value=None)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    """Sort an index array along with the operands; tangents follow the permutation."""
    from plait.lax.shape_ops import broadcasted_iota
    shape = get_aval(primals[0]).shape
    iota = broadcasted_iota(dtypes.int64, shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)
    perm = outs[-1]
    t_out = [t if isinstance(t, Zero) else _take_along(t, perm, dimension) for t in tangents]
    return outs[:-1], t_out


def _sort_batch(vals, dims, *, dimension, is_stable, num_keys):
    """All operands get the batch dim of the first batched one; sort past it."""
    size = batch_size(vals, dims)
    bd = next(d for d in dims if d is not None)
    xs = [move_batch_dim(x, d, bd, size) for x, d in zip(vals, dims)]
    outs = sort_p.bind(*xs, dimension=shift_axis(dimension, bd), is_stable=is_stable,
                       num_keys=num_keys)
    return outs, [bd] * len(outs)


sort_p.def_rule("jvp", _sort_jvp)
sort_p.def_rule("batch", _sort_batch)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort an array, or a tuple/list of equal-shape arrays keyed by the first
    ``num_keys`` of them, along ``dimension``. Returns the same structure."""
    single = not isinstance(operand, (tuple, list))
    ops = [as_operand(operand)] if single else [as_operand(o) for o in operand]
    if not ops:
        raise PlaitTypeError("sort needs at least one operand")
    dim = canonicalize_axis(int(dimension), get_aval(ops[0]).ndim, "dimension")
    outs = sort_p.bind(*ops, dimension=dim, is_stable=bool(is_stable), num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way."""
    k, v = sort((keys, values), dimension, is_stable, 1)
    return k, v


def top_k(operand, k: int):
    """The ``k`` largest entries along the last dimension, largest first, and their
    indices (ties: the lower index first; NaN counts as the largest)."""
    from plait.lax.shape_ops import rev, broadcasted_iota, slice as lax_slice
    x = as_operand(operand)
    a = get_aval(x)
    if a.ndim < 1:
        raise PlaitTypeError("top_k needs an operand of rank >= 1")
    k = int(k)
    if not 0 <= k <= a.shape[-1]:
        raise PlaitValueError(f"top_k: k={k} must be between 0 and the size of the last "
                              f"dimension ({a.shape[-1]})")
    last = a.ndim - 1
    idx = broadcasted_iota(dtypes.int64, a.shape, last)
    # ascending stable sort of the reversed operand, reversed back, is a descending sort
    # that keeps equal elements in increasing index order
    sx, si = sort((rev(x, (last,)), rev(idx, (last,))), last, True, 1)
    sx, si = rev(sx, (last,)), rev(si, (last,))
    start, limit = (0,) * a.ndim, a.shape[:-1] + (k,)
    return lax_slice(sx, start, limit), lax_slice(si, start, limit)
