"""``to_tile`` rules: how each primitive lowers to Tile (registered on the primitives).

Elementwise primitives map to intrinsic calls (fused into expressions); structural
primitives become ``assign`` contractions with affine accesses; reductions,
cumulative ops, ``dot_general``, convolutions and windowed reductions become
aggregating contractions whose index ranges and padding come from the accesses.
Primitives without a rule here (gather, scatter, sort, dynamic slices, control
flow, complex arithmetic) run on the host inside native executables.
"""
from __future__ import annotations

import math

import numpy as np

from plait.lax import contractions as C
from plait.lax import cumulative as K
from plait.lax import elementwise as E
from plait.lax import reductions as R
from plait.lax import shape_ops as S
from plait.lax.elementwise_spec import ElementwiseOp, on_define
from plait.lax import windowed as W
from plait.tile.affine import Affine, Constraint
from plait.tile.ir import Const
from plait.errors import NotLowerable
from plait.tile.lowering import LowerCtx, TVal, index_ranges, lower_reshape, tile_dtype

_ZERO = Affine((), 0)


def _out(ctx: LowerCtx):
    a = ctx.out_avals[0]
    return a.shape, tile_dtype(a.dtype)


# --- elementwise ------------------------------------------------------------------------
def _intrinsic(op: str):
    def rule(ctx: LowerCtx, *xs: TVal, **params):
        shape, dt = _out(ctx)
        return ctx.call(op, *xs, shape=shape)
    return rule


def _register(op: ElementwiseOp, prim) -> None:
    """Every descriptor-defined primitive with an intrinsic lowers to a call of it."""
    if prim is not None and op.intrinsic:
        prim.def_rule("to_tile", _intrinsic(op.intrinsic))


on_define(_register)
E.select_p.def_rule("to_tile", _intrinsic("select"))


def _nextafter(ctx, x, y):
    if x.dtype == "f16":     # C computes half precision in float: the step would be lost
        raise NotLowerable("float16 nextafter runs on the host")
    return ctx.call("nextafter", x, y, shape=ctx.out_avals[0].shape)


E.nextafter_p.def_rule("to_tile", _nextafter)


def _shift_right_logical(ctx, x, y):
    shape, dt = _out(ctx)
    u = "u" + dt[1:] if dt.startswith("i") else dt
    r = ctx.call("shr", ctx.cast(x, np.dtype(_np(u))), ctx.cast(y, np.dtype(_np(u))), shape=shape)
    return ctx.cast(r, np.dtype(_np(dt)))


def _np(d: str):
    from plait.tile.lowering import np_dtype
    return np_dtype(d)


E.shift_right_logical_p.def_rule("to_tile", _shift_right_logical)


def _convert(ctx, x, *, new_dtype, weak_type):
    if x.dtype == "bool" or tile_dtype(new_dtype) != "bool":
        return ctx.cast(x, new_dtype)
    zero = ctx.const(0, _np(x.dtype))
    return ctx.call("cmp_ne", x, zero, shape=x.shape)


E.convert_element_type_p.def_rule("to_tile", _convert)


def _integer_pow(ctx, x, *, y):
    shape, dt = _out(ctx)
    if y == 0:
        return ctx.broadcast(ctx.const(1, _np(dt)), shape, ())
    n = abs(y)
    acc, base = None, x
    while n:
        if n & 1:
            acc = base if acc is None else ctx.call("mul", acc, base, shape=shape)
        n >>= 1
        if n:
            base = ctx.call("mul", base, base, shape=shape)
    return ctx.call("reciprocal", acc, shape=shape) if y < 0 else acc


E.integer_pow_p.def_rule("to_tile", _integer_pow)
E.stop_gradient_p.def_rule("to_tile", lambda ctx, x: x)
E.clamp_p.def_rule("to_tile", lambda ctx, lo, x, hi: ctx.call(
    "min", ctx.call("max", x, lo, shape=x.shape), hi, shape=x.shape))


# --- structural -------------------------------------------------------------------------
S.broadcast_in_dim_p.def_rule(
    "to_tile", lambda ctx, x, *, shape, broadcast_dimensions:
    ctx.broadcast(x, shape, broadcast_dimensions))
S.reshape_p.def_rule("to_tile", lambda ctx, x, *, new_sizes: lower_reshape(ctx, x, new_sizes))
S.squeeze_p.def_rule("to_tile", lambda ctx, x, *, dimensions: lower_reshape(
    ctx, x, ctx.out_avals[0].shape))
S.expand_dims_p.def_rule("to_tile", lambda ctx, x, *, dimensions: lower_reshape(
    ctx, x, ctx.out_avals[0].shape))


def _transpose(ctx, x, *, permutation):
    shape, dt = _out(ctx)
    xs = ctx.fresh_vars(len(shape))
    src = [None] * len(shape)
    for k, p in enumerate(permutation):
        src[p] = xs[k]
    held = ctx.broadcast_source(x)
    if held is not None:
        # a broadcast value: permute the tensor it reads (ones at the broadcast axes),
        # not its broadcast copy, and broadcast the result again
        small = tuple(held.shape[p] for p in permutation)
        out = [v if n > 1 else _ZERO for v, n in zip(xs, small)]
        t = ctx.contract(small, dt, out, "assign", "none", [held[tuple(src)]])
        return TVal(t.expr, shape, dt)
    return ctx.contract(shape, dt, xs, "assign", "none", [ctx.access(x, src)])


S.transpose_p.def_rule("to_tile", _transpose)


def _rev(ctx, x, *, dimensions):
    shape, dt = _out(ctx)
    xs = ctx.fresh_vars(len(shape))
    src = [(shape[d] - 1) - v if d in dimensions else v for d, v in enumerate(xs)]
    return ctx.contract(shape, dt, xs, "assign", "none", [ctx.access(x, src)])


S.rev_p.def_rule("to_tile", _rev)


def _slice(ctx, x, *, start_indices, limit_indices, strides):
    shape, dt = _out(ctx)
    xs = ctx.fresh_vars(len(shape))
    src = [s + st * v for s, st, v in zip(start_indices, strides, xs)]
    return ctx.contract(shape, dt, xs, "assign", "none",
                        [ctx.access_source(x, src, index_ranges(xs, shape))])


S.slice_p.def_rule("to_tile", _slice)


def _is_plus_zero(v: TVal) -> bool:
    c = v.expr
    return (isinstance(c, Const) and not isinstance(c.value, bool) and c.value == 0
            and math.copysign(1.0, c.value) > 0)


def _pad(ctx, x, pv, *, padding_config):
    shape, dt = _out(ctx)
    xs = ctx.fresh_vars(len(shape))
    dst = [lo + (1 + it) * v for (lo, _, it), v in zip(padding_config, xs)]
    if _is_plus_zero(pv) and all(lo >= 0 and hi >= 0 for lo, hi, _ in padding_config):
        # an output starts at zero (the IR rule): no fill to write and copy
        return ctx.scatter_zero(shape, dt, dst, x, index_ranges(xs, x.shape))
    fill = ctx.copy_to(ctx.broadcast(pv, shape, ()), shape)
    return ctx.contract(shape, dt, dst, "assign", "none", [ctx.access(x, xs)], default=fill)


S.pad_p.def_rule("to_tile", _pad)


def _concatenate(ctx, *xs, dimension):
    shape, dt = _out(ctx)
    acc, off = None, 0
    for x in xs:
        vs = ctx.fresh_vars(len(shape))
        dst = [v + off if d == dimension else v for d, v in enumerate(vs)]
        acc = ctx.contract(shape, dt, dst, "assign", "none", [ctx.access(x, vs)], default=acc)
        off += x.shape[dimension]
    return acc


S.concatenate_p.def_rule("to_tile", _concatenate)
S.iota_p.def_rule("to_tile", lambda ctx, *, dtype, shape, dimension:
                  ctx.iota(shape, dimension, dtype))


# --- reductions ---------------------------------------------------------------------------
def _acc_dtype(dt: str) -> str:
    return "f32" if dt == "f16" else dt


def _reduce(agg: str):
    def rule(ctx, x, *, axes):
        shape, dt = _out(ctx)
        acc = _acc_dtype(dt)
        xs = ctx.fresh_vars(len(x.shape))
        src = ctx.cast(x, _np(acc)) if acc != dt else x
        out_idx = [v for d, v in enumerate(xs) if d not in axes]
        r = ctx.contract(shape, acc, out_idx, agg, "none", [ctx.access(src, xs)])
        return ctx.cast(r, _np(dt)) if acc != dt else r
    return rule


R.reduce_sum_p.def_rule("to_tile", _reduce("add"))
R.reduce_prod_p.def_rule("to_tile", _reduce("mul"))
R.reduce_max_p.def_rule("to_tile", _reduce("max"))
R.reduce_min_p.def_rule("to_tile", _reduce("min"))


def _reduce_bool(agg: str):
    inner = _reduce(agg)

    def rule(ctx, x, *, axes):
        if x.dtype != "bool":
            raise NotLowerable("bitwise reductions of integers run on the host")
        return inner(ctx, x, axes=axes)
    return rule


R.reduce_and_p.def_rule("to_tile", _reduce_bool("mul"))
R.reduce_or_p.def_rule("to_tile", _reduce_bool("add"))


def _arg(agg: str):
    def rule(ctx, x, *, axis, index_dtype):
        shape, dt = _out(ctx)
        n = x.shape[axis]
        xt = ctx.as_input(x)
        xs = ctx.fresh_vars(len(x.shape))
        kept = [v for d, v in enumerate(xs) if d != axis]
        m = ctx.contract(shape, x.dtype, kept, agg, "none", [ctx.access(xt, xs)])
        mb = ctx.broadcast(m, x.shape, tuple(d for d in range(len(x.shape)) if d != axis))
        hit = ctx.call("cmp_eq", xt, mb, shape=x.shape)
        if x.dtype.startswith("f"):
            hit = ctx.call("or", hit, ctx.call("is_nan", xt, shape=x.shape), shape=x.shape)
        # first hit wins: maximize (n - k) over hits
        rank = ctx.call("sub", ctx.const(n, np.int64), ctx.iota(x.shape, axis, np.int64),
                        shape=x.shape)
        score = ctx.call("select", hit, rank, ctx.const(0, np.int64), shape=x.shape)
        best = ctx.contract(shape, "i64", kept, "max", "none", [ctx.access(score, xs)])
        idx = ctx.call("sub", ctx.const(n, np.int64), best, shape=shape)
        return ctx.cast(idx, index_dtype)
    return rule


R.argmax_p.def_rule("to_tile", _arg("max"))
R.argmin_p.def_rule("to_tile", _arg("min"))


def _cumulative(agg: str):
    def rule(ctx, x, *, axis, reverse):
        shape, dt = _out(ctx)
        acc = dt   # NumPy rounds every running value to the input's dtype (even float16)
        xs = ctx.fresh_vars(len(shape))
        (k,) = ctx.fresh_vars(1)
        # the running value must combine elements in NumPy's order (from the end when
        # reverse): every step is rounded to ``dt``, so the order shows in float16
        n = shape[axis]
        src_idx = [((n - 1) - k if reverse else k) if d == axis else v
                   for d, v in enumerate(xs)]
        diff = ((n - 1) - xs[axis] - k) if reverse else (xs[axis] - k)
        default = None
        if agg == "add" and acc.startswith("f"):
            # NumPy's running sum starts from the first element, not from +0.0: start
            # at -0.0 (the identity of IEEE addition) so a prefix of -0.0 stays -0.0
            default = ctx.copy_to(ctx.broadcast(ctx.const(-0.0, _np(acc)), shape, ()), shape)
        return ctx.contract(shape, acc, xs, agg, "none", [ctx.access(x, src_idx)],
                            constraints=[Constraint(diff, shape[axis])], default=default)
    return rule


K.cumsum_p.def_rule("to_tile", _cumulative("add"))
K.cumprod_p.def_rule("to_tile", _cumulative("mul"))
K.cummax_p.def_rule("to_tile", _cumulative("max"))
K.cummin_p.def_rule("to_tile", _cumulative("min"))


# --- contractions ------------------------------------------------------------------------
def _dot_general(ctx, lhs, rhs, *, dimension_numbers, preferred_element_type):
    shape, dt = _out(ctx)
    (lc, rc), (lb, rb) = dimension_numbers
    if dt == "bool":
        raise NotLowerable("boolean dot runs on the host")
    lhs, rhs = ctx.cast(lhs, _np(dt)), ctx.cast(rhs, _np(dt))
    lv = ctx.fresh_vars(len(lhs.shape))
    rv = [None] * len(rhs.shape)
    for a, b in zip(lc, rc):
        rv[b] = lv[a]
    for a, b in zip(lb, rb):
        rv[b] = lv[a]
    free_r = [d for d in range(len(rhs.shape)) if rv[d] is None]
    for d, v in zip(free_r, ctx.fresh_vars(len(free_r))):
        rv[d] = v
    out_idx = ([lv[a] for a in lb] +
               [lv[d] for d in range(len(lhs.shape)) if d not in lc and d not in lb] +
               [rv[d] for d in free_r])
    return ctx.contract(shape, dt, out_idx, "add", "mul",
                        [ctx.access(lhs, lv), ctx.access(rhs, rv)])


C.dot_general_p.def_rule("to_tile", _dot_general)


def _dilate(ctx, x: TVal, dims, dil, fill) -> TVal:
    """Insert ``dil-1`` copies of ``fill`` between elements along spatial ``dims``."""
    if all(d == 1 for d in dil):
        return x
    shape = list(x.shape)
    for d, f in zip(dims, dil):
        shape[d] = (shape[d] - 1) * f + 1 if shape[d] else 0
    base = ctx.copy_to(ctx.broadcast(ctx.const(fill, _np(x.dtype)), tuple(shape), ()),
                       tuple(shape))
    vs = ctx.fresh_vars(len(shape))
    dst = list(vs)
    for d, f in zip(dims, dil):
        dst[d] = vs[d] * f
    return ctx.contract(tuple(shape), x.dtype, dst, "assign", "none", [ctx.access(x, vs)],
                        default=base)


def _conv(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
          dimension_numbers, feature_group_count, batch_group_count, preferred_element_type):
    shape, dt = _out(ctx)
    if batch_group_count != 1 or dt == "bool":
        raise NotLowerable("batch-grouped or boolean convolutions run on the host")
    lhs, rhs = ctx.cast(lhs, _np(dt)), ctx.cast(rhs, _np(dt))
    ls, rs, os_ = dimension_numbers
    nsp = len(ls) - 2
    lhs = _dilate(ctx, lhs, ls[2:], lhs_dilation, 0)
    G = feature_group_count
    cin_g = rhs.shape[rs[1]]
    cout_g = rhs.shape[rs[0]] // G
    n, g, oo, c = ctx.fresh_vars(4)
    ys = ctx.fresh_vars(nsp)
    ks = ctx.fresh_vars(nsp)
    lidx = [None] * len(ls)
    lidx[ls[0]] = n
    lidx[ls[1]] = g * cin_g + c
    ridx = [None] * len(rs)
    ridx[rs[0]] = g * cout_g + oo
    ridx[rs[1]] = c
    oidx = [None] * len(os_)
    oidx[os_[0]] = n
    oidx[os_[1]] = g * cout_g + oo
    for i in range(nsp):
        lo = padding[i][0]
        lidx[ls[2 + i]] = window_strides[i] * ys[i] + rhs_dilation[i] * ks[i] - lo
        ridx[rs[2 + i]] = ks[i]
        oidx[os_[2 + i]] = ys[i]
    cons = [Constraint(oo, cout_g), Constraint(c, cin_g), Constraint(g, G)]
    return ctx.contract(shape, dt, oidx, "add", "mul",
                        [ctx.access(lhs, lidx), ctx.access(rhs, ridx)], constraints=cons)


C.conv_general_dilated_p.def_rule("to_tile", _conv)


def _window(agg: str):
    def rule(ctx, x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        shape, dt = _out(ctx)
        acc = _acc_dtype(dt) if agg == "add" else dt
        src = ctx.cast(x, _np(acc)) if acc != dt else x
        if any(b != 1 for b in base_dilation):
            src = _dilate(ctx, src, tuple(range(len(shape))), base_dilation,
                          _identity(agg, _np(acc)))
        ys = ctx.fresh_vars(len(shape))
        ks = ctx.fresh_vars(len(shape))
        idx = [s * y + wd * k - lo for s, y, wd, k, (lo, _) in
               zip(window_strides, ys, window_dilation, ks, padding)]
        cons = [Constraint(k, w) for k, w in zip(ks, window_dimensions)]
        r = ctx.contract(shape, acc, ys, agg, "none", [ctx.access(src, idx)], constraints=cons)
        return ctx.cast(r, _np(dt)) if acc != dt else r
    return rule


def _identity(agg: str, dt: np.dtype):
    if agg == "add":
        return 0
    if dt.kind == "f":
        return -np.inf if agg == "max" else np.inf
    if dt.kind == "b":
        return agg == "min"
    info = np.iinfo(dt)
    return int(info.min if agg == "max" else info.max)


W.reduce_window_sum_p.def_rule("to_tile", _window("add"))
W.reduce_window_max_p.def_rule("to_tile", _window("max"))
W.reduce_window_min_p.def_rule("to_tile", _window("min"))
