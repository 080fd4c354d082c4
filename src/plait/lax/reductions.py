"""Reduction primitives: reduce_sum/prod/max/min/and/or/xor over static ``axes``,
and argmax/argmin along one ``axis``.

``axes`` is a sorted tuple of distinct non-negative ints (the lax functions
canonicalize negative and unsorted axes). The result dtype is the operand's
dtype; reductions over empty axes give the operation's identity, as XLA does
(``-inf``/the dtype's minimum for max, ``+inf``/maximum for min). ``reduce_sum``
of booleans is an error here: ``plait.numpy`` converts to an integer first.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import (standard_primitive, check_dtype, canonicalize_axis, as_operand,
                             NUMERIC, INTEGRAL, BOOL, INT, UINT, FLOAT)
from plait.lax._ad_helpers import (Zero, defjvp, defjvp_zero, deflinear, full, tangent_aval,
                                   aval_of_operand)
from plait.lax._batch_helpers import defreducer, shift_axis
from plait.errors import PlaitTypeError, PlaitValueError

ORDERED = (BOOL, INT, UINT, FLOAT)


def check_axes(name: str, x: ShapedArray, axes: tuple) -> None:
    """``axes`` must be sorted, distinct and in range for ``x``."""
    if any(not 0 <= a < x.ndim for a in axes) or list(axes) != sorted(set(axes)):
        raise PlaitValueError(f"{name}: axes {axes} must be distinct, sorted and in range "
                              f"for an array of dimension {x.ndim}")


def _reduce_abstract(name, kinds):
    def rule(x: ShapedArray, *, axes: tuple) -> ShapedArray:
        if name in ("reduce_sum", "reduce_prod") and dtypes.is_bool(x.dtype):
            raise PlaitTypeError(f"{name} does not accept bool; convert to an integer "
                                 f"dtype first (plait.numpy functions do this for you)")
        check_dtype(name, x, kinds)
        check_axes(name, x, axes)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def accum_dtype(dt: np.dtype) -> np.dtype:
    """The dtype NumPy impls accumulate in: half-precision floats use float32."""
    if dt == dtypes.float16 or (dtypes.bfloat16 is not None and dt == dtypes.bfloat16):
        return dtypes.float32
    return dt


def _sum_impl(x, *, axes):
    with np.errstate(all="ignore"):
        return np.asarray(np.sum(x, axis=axes, dtype=accum_dtype(x.dtype))).astype(x.dtype)


def _prod_impl(x, *, axes):
    with np.errstate(all="ignore"):
        return np.asarray(np.prod(x, axis=axes, dtype=accum_dtype(x.dtype))).astype(x.dtype)


def lowest(dt: np.dtype):
    """The identity of ``max`` for ``dt``: ``-inf``, the integer minimum, or False."""
    if dtypes.is_bool(dt):
        return False
    if dtypes.is_integer(dt):
        return np.iinfo(dt).min
    return -np.inf


def highest(dt: np.dtype):
    """The identity of ``min`` for ``dt``: ``+inf``, the integer maximum, or True."""
    if dtypes.is_bool(dt):
        return True
    if dtypes.is_integer(dt):
        return np.iinfo(dt).max
    return np.inf


def _max_impl(x, *, axes):
    return np.asarray(np.max(x, axis=axes, initial=lowest(x.dtype))).astype(x.dtype, copy=False)


def _min_impl(x, *, axes):
    return np.asarray(np.min(x, axis=axes, initial=highest(x.dtype))).astype(x.dtype, copy=False)


def _bitwise_reducer(ufunc, bool_ufunc):
    def impl(x, *, axes):
        f = bool_ufunc if x.dtype == np.bool_ else ufunc
        if not axes:
            return x.copy()
        return np.asarray(f.reduce(x, axis=axes)).astype(x.dtype, copy=False)
    return impl


reduce_sum_p = standard_primitive("reduce_sum", _reduce_abstract("reduce_sum", NUMERIC), _sum_impl)
reduce_prod_p = standard_primitive("reduce_prod", _reduce_abstract("reduce_prod", NUMERIC),
                                   _prod_impl)
reduce_max_p = standard_primitive("reduce_max", _reduce_abstract("reduce_max", ORDERED), _max_impl)
reduce_min_p = standard_primitive("reduce_min", _reduce_abstract("reduce_min", ORDERED), _min_impl)
reduce_and_p = standard_primitive("reduce_and", _reduce_abstract("reduce_and", INTEGRAL),
                                  _bitwise_reducer(np.bitwise_and, np.logical_and))
reduce_or_p = standard_primitive("reduce_or", _reduce_abstract("reduce_or", INTEGRAL),
                                 _bitwise_reducer(np.bitwise_or, np.logical_or))
reduce_xor_p = standard_primitive("reduce_xor", _reduce_abstract("reduce_xor", INTEGRAL),
                                  _bitwise_reducer(np.bitwise_xor, np.logical_xor))


# reduction autodiff rules
def _kept_dims(x_aval: ShapedArray, axes) -> tuple:
    return tuple(d for d in range(x_aval.ndim) if d not in axes)


def _expand_back(v, x_aval: ShapedArray, axes):
    """Broadcast a reduced value back to the operand's shape."""
    from plait.lax.shape_ops import broadcast_in_dim
    return broadcast_in_dim(v, x_aval.shape, _kept_dims(x_aval, axes))


def _prod_jvp(g, ans, x, *, axes):
    """d prod = sum_i g_i * prod_{j != i} x_j, via exclusive products from both sides
    (exact when some x_j are zero)."""
    from plait.lax.shape_ops import transpose, reshape, concatenate, slice as lax_slice
    from plait.lax.elementwise import mul
    from plait.lax.cumulative import cumprod
    xa = get_aval(x)
    n = 1
    for d in axes:
        n *= xa.shape[d]
    if n == 0 or not axes:
        return g if not axes else Zero(tangent_aval(get_aval(ans)))
    kept = _kept_dims(xa, axes)
    shape = tuple(xa.shape[d] for d in kept) + (n,)
    xt = reshape(transpose(x, kept + tuple(axes)), shape)
    gt = reshape(transpose(g, kept + tuple(axes)), shape)
    last = len(shape) - 1
    one = full(shape[:-1] + (1,), 1, xa.dtype)
    lo, hi = (0,) * len(shape), shape
    before = lax_slice(xt, lo, hi[:-1] + (n - 1,))
    after = lax_slice(xt, lo[:-1] + (1,), hi)
    left = cumprod(concatenate([one, before], last), last)
    right = cumprod(concatenate([after, one], last), last, reverse=True)
    return reduce_sum_p.bind(mul(gt, mul(left, right)), axes=(last,))


def _extremum_jvp(g, ans, x, *, axes):
    """The derivative is shared equally among the positions attaining the extremum."""
    from plait.lax.elementwise import eq, select, div, convert_element_type
    xa = get_aval(x)
    mask = eq(x, _expand_back(ans, xa, axes))
    zero = full(xa.shape, 0, xa.dtype)
    count = reduce_sum_p.bind(convert_element_type(mask, xa.dtype), axes=axes)
    return div(reduce_sum_p.bind(select(mask, g, zero), axes=axes), count)


deflinear(reduce_sum_p, lambda ct, x, *, axes: [_expand_back(ct, aval_of_operand(x), axes)])
defjvp(reduce_prod_p, _prod_jvp)
defjvp(reduce_max_p, _extremum_jvp)
defjvp(reduce_min_p, _extremum_jvp)
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    defjvp_zero(_p)
for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
           reduce_xor_p):
    defreducer(_p)


# --- argmax / argmin -------------------------------------------------------------
def _arg_abstract(name):
    def rule(x: ShapedArray, *, axis: int, index_dtype) -> ShapedArray:
        check_dtype(name, x, ORDERED)
        if not 0 <= axis < x.ndim:
            raise PlaitValueError(f"{name}: axis {axis} is out of bounds for array of "
                                  f"dimension {x.ndim}")
        if x.shape[axis] == 0:
            raise PlaitValueError(f"attempt to get {name} of an empty sequence (axis {axis} "
                                  f"of shape {x.shape} has size 0)")
        if not dtypes.is_integer(index_dtype):
            raise PlaitTypeError(f"{name}: index_dtype must be an integer dtype, got "
                                 f"{index_dtype}")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        return ShapedArray(shape, index_dtype, False)
    return rule


# np.argmax/argmin return the first maximal/minimal index, and the first NaN if any.
argmax_p = standard_primitive(
    "argmax", _arg_abstract("argmax"),
    lambda x, *, axis, index_dtype: np.asarray(np.argmax(x, axis=axis)).astype(index_dtype))
argmin_p = standard_primitive(
    "argmin", _arg_abstract("argmin"),
    lambda x, *, axis, index_dtype: np.asarray(np.argmin(x, axis=axis)).astype(index_dtype))
defjvp_zero(argmax_p)
defjvp_zero(argmin_p)


def _arg_batch(prim):
    def rule(vals, dims, *, axis, index_dtype):
        (x,), (d,) = vals, dims
        full = shift_axis(axis, d)
        return prim.bind(x, axis=full, index_dtype=index_dtype), d if full > d else d - 1
    return rule


argmax_p.def_rule("batch", _arg_batch(argmax_p))
argmin_p.def_rule("batch", _arg_batch(argmin_p))


# --- Python-facing functions -----------------------------------------------------
def canonical_axes(name: str, axes: Sequence[int] | int, ndim: int) -> tuple:
    """Normalize ``axes`` (negative allowed) to a sorted tuple; duplicates are an error."""
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = [canonicalize_axis(int(a), ndim) for a in axes]
    if len(set(out)) != len(out):
        raise PlaitValueError(f"{name}: duplicate value in axes {tuple(axes)}")
    return tuple(sorted(out))


def _reducer(prim):
    def fn(x, axes):
        x = as_operand(x)
        ax = canonical_axes(prim.name, axes, get_aval(x).ndim)
        return prim.bind(x, axes=ax)
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = (f"``{prim.name}`` of ``x`` over ``axes`` (ints, negative allowed); the "
                  f"result has the operand's dtype.")
    return fn


reduce_sum = _reducer(reduce_sum_p)
reduce_prod = _reducer(reduce_prod_p)
reduce_max = _reducer(reduce_max_p)
reduce_min = _reducer(reduce_min_p)
reduce_and = _reducer(reduce_and_p)
reduce_or = _reducer(reduce_or_p)
reduce_xor = _reducer(reduce_xor_p)


def argmax(x, axis: int, index_dtype=dtypes.int64):
    """Index of the first maximum of ``x`` along ``axis`` (the first NaN if any)."""
    x = as_operand(x)
    ax = canonicalize_axis(int(axis), get_aval(x).ndim)
    return argmax_p.bind(x, axis=ax, index_dtype=dtypes.canonical_dtype(index_dtype))


def argmin(x, axis: int, index_dtype=dtypes.int64):
    """Index of the first minimum of ``x`` along ``axis`` (the first NaN if any)."""
    x = as_operand(x)
    ax = canonicalize_axis(int(axis), get_aval(x).ndim)
    return argmin_p.bind(x, axis=ax, index_dtype=dtypes.canonical_dtype(index_dtype))
