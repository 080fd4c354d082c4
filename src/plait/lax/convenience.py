"""``jax.lax`` convenience names composed from plait's primitives: slicing and indexing
along one dimension, ``select_n``, ``associative_scan``, the generic ``reduce`` and
``reduce_window`` (monoids map to the reduction primitives; any other Python
computation runs as a log-depth tree of its own calls), ``optimization_barrier``,
``square``, ``reciprocal``, ``collapse``, ``full_like``, ``broadcast_to_rank``,
``conv_transpose`` (a ``conv_general_dilated`` with ``lhs_dilation``),
``conv_with_general_padding``, ``batch_matmul``, ``split``, ``cumlogsumexp``,
``broadcast_shapes``.
"""
from __future__ import annotations

import builtins
import math
from typing import Callable, Sequence

import numpy as np

from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.remat import optimization_barrier_p
from plait.core.trace import get_aval
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lax import contractions as con
from plait.lax import elementwise as ew
from plait.lax import reductions as red
from plait.lax import shape_ops as so
from plait.lax import windowed as win
from plait.lax._windows import padtype_to_pads


# --- one-dimension slicing ---------------------------------------------------------------

def slice_in_dim(operand, start_index: int | None, limit_index: int | None, stride: int = 1,
                 axis: int = 0):
    """``operand[..., start:limit:stride, ...]`` along ``axis`` (static bounds)."""
    a = get_aval(operand)
    axis = axis % a.ndim
    n = a.shape[axis]
    start, limit, _ = builtins.slice(start_index, limit_index).indices(n)
    start_i = [0] * a.ndim
    limit_i = list(a.shape)
    strides = [1] * a.ndim
    start_i[axis], limit_i[axis], strides[axis] = start, builtins.max(limit, start), stride
    return so.slice(operand, start_i, limit_i, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The slice at static ``index`` along ``axis`` (the axis kept with size 1 or dropped)."""
    a = get_aval(operand)
    axis = axis % a.ndim
    index = index % a.shape[axis] if -a.shape[axis] <= index < a.shape[axis] else None
    if index is None:
        raise PlaitValueError(f"index_in_dim: index out of bounds for axis {axis} of size "
                              f"{a.shape[axis]}")
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else so.squeeze(out, (axis,))


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """``slice_size`` elements from traced ``start_index`` along ``axis`` (clamped)."""
    a = get_aval(operand)
    axis = axis % a.ndim
    starts = [0] * a.ndim
    starts[axis] = start_index
    sizes = list(a.shape)
    sizes[axis] = slice_size
    return so.dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """The slice at traced ``index`` along ``axis``."""
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else so.squeeze(out, (axis % get_aval(operand).ndim,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """``operand`` with ``update`` written from traced ``start_index`` along ``axis``."""
    a = get_aval(operand)
    axis = axis % a.ndim
    starts = [0] * a.ndim
    starts[axis] = start_index
    return so.dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis: int):
    """``operand`` with the slice at traced ``index`` along ``axis`` replaced by ``update``
    (which may lack that axis)."""
    a = get_aval(operand)
    axis = axis % a.ndim
    if get_aval(update).ndim == a.ndim - 1:
        update = so.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


# --- selection -----------------------------------------------------------------------------

def select_n(which, *cases):
    """``cases[which]`` elementwise: ``which`` is boolean (two cases) or an integer
    array (any number of cases); out-of-range integers take the last case."""
    if not cases:
        raise PlaitValueError("select_n needs at least one case")
    w = get_aval(which)
    if len(cases) == 1:
        return cases[0]
    if w.dtype == np.bool_:
        if len(cases) != 2:
            raise PlaitTypeError(f"select_n with a boolean selector needs 2 cases, got "
                                 f"{len(cases)}")
        return ew.select(which, cases[1], cases[0])
    out = cases[0]
    for i, c in enumerate(cases[1:], 1):
        out = ew.select(ew.ge(which, full_like(which, i)), c, out)
    return out


# --- scans and reductions -------------------------------------------------------------------

def _interleave(a, b, axis: int):
    """``a[0], b[0], a[1], b[1], ...`` along ``axis`` (``len(a)`` is ``len(b)`` or one more)."""
    na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
    if nb < na:
        cfg = [(0, 0, 0)] * get_aval(b).ndim
        cfg[axis] = (0, 1, 0)
        b = so.pad(b, ew.convert_element_type(0, get_aval(b).dtype), cfg)
    st = so.concatenate([so.expand_dims(a, (axis + 1,)), so.expand_dims(b, (axis + 1,))],
                        axis + 1)
    shape = list(get_aval(a).shape)
    shape[axis] = 2 * na
    return slice_in_dim(so.reshape(st, tuple(shape)), 0, na + nb, 1, axis)


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of ``elems`` (a pytree of arrays) with the associative ``fn`` along
    ``axis``, in ``O(log n)`` rounds of vectorized ``fn`` calls (parallel prefix)."""
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    ndim = get_aval(leaves[0]).ndim
    axis = axis % ndim
    n = get_aval(leaves[0]).shape[axis]
    if any(get_aval(x).shape[axis] != n for x in leaves):
        raise PlaitValueError("associative_scan: every leaf needs the same length along axis")
    if reverse:
        leaves = [so.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out, t2 = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if t2 != tree:
            raise PlaitTypeError(f"associative_scan: fn returned structure {t2}, expected {tree}")
        return out

    def sl(xs, start, limit, stride=1):
        return [slice_in_dim(x, start, limit, stride, axis) for x in xs]

    def scan(xs):
        m = get_aval(xs[0]).shape[axis]
        if m < 2:
            return xs
        odd = scan(combine(sl(xs, 0, m - 1, 2), sl(xs, 1, None, 2)))
        if m % 2 == 0:
            even = combine(sl(odd, 0, get_aval(odd[0]).shape[axis] - 1), sl(xs, 2, None, 2))
        else:
            even = combine(odd, sl(xs, 2, None, 2))
        even = [so.concatenate([f, e], axis) for f, e in zip(sl(xs, 0, 1), even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(leaves)
    if reverse:
        out = [so.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


def _monoid(computation, init_values) -> str | None:
    """The name of the reduction primitive ``computation`` is (with its identity as init)."""
    table = {ew.add: ("sum", 0), ew.mul: ("prod", 1), ew.max: ("max", -np.inf),
             ew.min: ("min", np.inf), ew.bitwise_and: ("and", True),
             ew.bitwise_or: ("or", False)}
    hit = table.get(computation)
    if hit is None or len(init_values) != 1:
        return None
    name, ident = hit
    try:
        v = np.asarray(init_values[0])
    except Exception:              # a traced init value: use the generic path
        return None
    if v.shape != ():
        return None
    dt = v.dtype
    if name in ("max", "min") and not np.issubdtype(dt, np.floating):
        ident = np.iinfo(dt).min if name == "max" and dt.kind in "iu" else ident
        ident = np.iinfo(dt).max if name == "min" and dt.kind in "iu" else ident
        if dt == np.bool_:
            return None
    return name if v == ident else None


def _as_list(x):
    return (list(x), True) if isinstance(x, (tuple, list)) else ([x], False)


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
    """Reduce ``operands`` over ``dimensions`` with ``computation`` (XLA ``Reduce``):
    ``lax.add``/``mul``/``max``/``min``/``bitwise_and``/``bitwise_or`` with their identity
    as init map to the reduction primitives; any other (associative, commutative)
    computation of ``len(operands)`` arrays runs as a balanced tree of its calls."""
    ops, multi = _as_list(operands)
    inits, _ = _as_list(init_values)
    if len(inits) != len(ops):
        raise PlaitValueError(f"reduce: {len(ops)} operands but {len(inits)} init values")
    dims = tuple(sorted(d % get_aval(ops[0]).ndim for d in dimensions))
    kind = _monoid(computation, inits)
    if kind is not None:
        fn = {"sum": red.reduce_sum, "prod": red.reduce_prod, "max": red.reduce_max,
              "min": red.reduce_min, "and": red.reduce_and, "or": red.reduce_or}[kind]
        out = [fn(ops[0], dims)]
    else:
        out = _tree_reduce(ops, inits, computation, dims, multi)
    return tuple(out) if multi else out[0]


def _call(computation, xs, ys, multi):
    r = computation(tuple(xs), tuple(ys)) if multi else computation(xs[0], ys[0])
    return list(r) if multi else [r]


def _tree_reduce(ops, inits, computation, dims, multi):
    a = get_aval(ops[0])
    keep = [d for d in range(a.ndim) if d not in dims]
    n = math.prod(a.shape[d] for d in dims)
    rest = tuple(a.shape[d] for d in keep)
    xs = [so.reshape(so.transpose(x, tuple(dims) + tuple(keep)), (n,) + rest) for x in ops]
    inits = [ew.convert_element_type(i, get_aval(x).dtype) for i, x in zip(inits, ops)]
    while n > 1:
        if n % 2:
            xs = [so.concatenate([x, so.broadcast_in_dim(i, (1,) + rest, ())], 0)
                  for x, i in zip(xs, inits)]
            n += 1
        h = n // 2
        xs = _call(computation, [slice_in_dim(x, 0, h) for x in xs],
                   [slice_in_dim(x, h, n) for x in xs], multi)
        n = h
    base = [so.broadcast_in_dim(i, rest, ()) for i in inits]
    if n == 0:
        return base
    return _call(computation, base, [so.reshape(x, rest) for x in xs], multi)


def reduce_window(operand, init_value, computation: Callable, window_dimensions,
                  window_strides, padding, base_dilation=None, window_dilation=None):
    """Reduce each window of ``operand`` with ``computation`` (XLA ``ReduceWindow``);
    monoids with their identity map to the ``reduce_window_*`` primitives, any other
    computation folds the (statically many) window offsets with its calls."""
    ops, multi = _as_list(operand)
    inits, _ = _as_list(init_value)
    kind = _monoid(computation, inits)
    a = get_aval(ops[0])
    nd = a.ndim
    wd = tuple(window_dimensions)
    ws = tuple(window_strides)
    bd = tuple(base_dilation) if base_dilation is not None else (1,) * nd
    wdl = tuple(window_dilation) if window_dilation is not None else (1,) * nd
    if kind in ("sum", "max", "min"):
        fn = {"sum": win.reduce_window_sum, "max": win.reduce_window_max,
              "min": win.reduce_window_min}[kind]
        return fn(ops[0], wd, ws, padding, bd, wdl)
    dilated = tuple((d - 1) * b + 1 for d, b in zip(a.shape, bd))
    eff = tuple((w - 1) * d + 1 for w, d in zip(wd, wdl))
    pads = (padtype_to_pads(dilated, eff, ws, padding) if isinstance(padding, str)
            else [tuple(p) for p in padding])
    inits = [ew.convert_element_type(i, get_aval(x).dtype) for i, x in zip(inits, ops)]
    xs = [so.pad(x, i, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, bd)])
          for x, i in zip(ops, inits)]
    padded = get_aval(xs[0]).shape
    out_shape = tuple((p - e) // s + 1 for p, e, s in zip(padded, eff, ws))
    acc = [so.broadcast_in_dim(i, out_shape, ()) for i in inits]
    for offset in np.ndindex(*wd):
        start = [o * d for o, d in zip(offset, wdl)]
        limit = [st + (n - 1) * s + 1 for st, n, s in zip(start, out_shape, ws)]
        acc = _call(computation, acc, [so.slice(x, start, limit, ws) for x in xs], multi)
    return tuple(acc) if multi else acc[0]


# --- small elementwise/shape helpers ---------------------------------------------------------

def optimization_barrier(operand):
    """``operand`` (a pytree) unchanged, behind a barrier that CSE and kernel fusion do
    not cross (the ``optimization_barrier`` primitive that ``checkpoint`` also uses)."""
    leaves, tree = tree_flatten(operand)
    if not leaves:
        return operand
    return tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


def square(x):
    """``x * x``."""
    return ew.integer_pow(x, 2)


def reciprocal(x):
    """``1 / x``."""
    return ew.integer_pow(x, -1)


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """``operand`` with dimensions ``[start, stop)`` merged into one."""
    shape = get_aval(operand).shape
    stop = len(shape) if stop_dimension is None else stop_dimension
    new = shape[:start_dimension] + (math.prod(shape[start_dimension:stop]),) + shape[stop:]
    return so.reshape(operand, new)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array of ``x``'s shape (or ``shape``) and dtype (or ``dtype``) filled with
    ``fill_value``."""
    a = get_aval(x)
    dt = a.dtype if dtype is None else np.dtype(dtype)
    v = ew.convert_element_type(fill_value, dt)
    return so.broadcast_in_dim(v, a.shape if shape is None else tuple(shape), ())


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 dimensions added up to ``rank``."""
    a = get_aval(x)
    if a.ndim >= rank:
        return x
    return so.reshape(x, (1,) * (rank - a.ndim) + a.shape)


# --- transposed convolution -----------------------------------------------------------------

_DEFAULT_TRANSPOSE_DN = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                         4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose_padding(k: int, s: int, padding: str) -> tuple[int, int]:
    """Padding of the stride-dilated input that inverts a stride-``s`` convolution with
    (effective) kernel size ``k`` and ``padding`` ``'SAME'``/``'VALID'``."""
    if padding == "SAME":
        extra = k + s - 2
        lo = k - 1 if s > k - 1 else -(-extra // 2)
    elif padding == "VALID":
        extra = k + s - 2 + builtins.max(k - s, 0)
        lo = k - 1
    else:
        raise PlaitValueError(f"conv_transpose padding must be 'SAME', 'VALID' or pairs, got "
                              f"{padding!r}")
    return lo, extra - lo


def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation=None,
                   dimension_numbers=None, transpose_kernel: bool = False):
    """A fractionally strided convolution (``jax.lax.conv_transpose``): ``lhs`` dilated by
    ``strides`` and convolved with stride 1; ``transpose_kernel`` flips the kernel's
    spatial axes and swaps its in/out channels (the gradient of a forward conv)."""
    nd = get_aval(lhs).ndim
    dn = dimension_numbers or _DEFAULT_TRANSPOSE_DN.get(nd)
    if dn is None:
        raise PlaitValueError(f"conv_transpose: no default layout for rank {nd}; pass "
                              f"dimension_numbers")
    rhs_spec = dn[1]
    spatial = [i for i, c in enumerate(rhs_spec) if c not in "IO"]
    ks = [get_aval(rhs).shape[i] for i in spatial]
    rd = tuple(rhs_dilation) if rhs_dilation is not None else (1,) * len(ks)
    if isinstance(padding, str):
        pads = [conv_transpose_padding((k - 1) * r + 1, st, padding)
                for k, r, st in zip(ks, rd, strides)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = so.rev(rhs, tuple(spatial))
        perm = list(range(len(rhs_spec)))
        i, o = rhs_spec.index("I"), rhs_spec.index("O")
        perm[i], perm[o] = o, i
        rhs = so.transpose(rhs, tuple(perm))
    return con.conv_general_dilated(lhs, rhs, (1,) * len(ks), pads, lhs_dilation=tuple(strides),
                                    rhs_dilation=rd, dimension_numbers=dn)


# --- more jax.lax names real programs use ---------------------------------------------------

def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation=None,
                              rhs_dilation=None, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` with the default (NCHW, OIHW) layout (``precision`` is
    accepted for JAX compatibility; plait computes at the operands' precision)."""
    return con.conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                    rhs_dilation, preferred_element_type=preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """``lhs @ rhs`` over the last two dimensions, the leading ones batch dimensions
    (equal in both operands, as in JAX)."""
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim or la.shape[:-2] != ra.shape[:-2]:
        raise PlaitTypeError(f"batch_matmul needs operands of equal rank >= 2 with equal batch "
                             f"dimensions, got shapes {la.shape} and {ra.shape}")
    batch = tuple(range(la.ndim - 2))
    return con.dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """``operand`` cut along ``axis`` into consecutive pieces of the given ``sizes``."""
    a = get_aval(operand)
    axis = axis % a.ndim
    sizes = [int(n) for n in sizes]
    if builtins.sum(sizes) != a.shape[axis] or builtins.min(sizes, default=0) < 0:
        raise PlaitValueError(f"split: sizes {sizes} must be non-negative and sum to the size "
                              f"{a.shape[axis]} of axis {axis}")
    out, start = [], 0
    for n in sizes:
        out.append(slice_in_dim(operand, start, start + n, 1, axis))
        start += n
    return out


def _logaddexp(a, b):
    m = ew.max(a, b)
    shift = ew.select(ew.is_finite(m), m, full_like(m, 0))   # -inf + log1p(0) stays -inf
    return ew.add(m, ew.log1p(ew.exp(ew.sub(ew.min(a, b), shift))))


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """``log(cumsum(exp(operand)))`` along ``axis`` without overflow (a parallel prefix of
    ``logaddexp``)."""
    return associative_scan(_logaddexp, operand, reverse=reverse, axis=axis)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple:
    """The shape NumPy broadcasting gives ``shapes``."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError as e:
        raise PlaitValueError(f"broadcast_shapes: {e}") from None
