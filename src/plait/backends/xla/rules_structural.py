"""``to_stablehlo`` rules of shape ops, reductions, cumulative and windowed ops,
contractions, gather/scatter, sort and fft."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.emitter import Ctx, i64_array, tensor_type
from plait.backends.xla.rules import (RULE, _acc, binary, compare, convert, select, unary)
from plait.lax import contractions as C
from plait.lax import cumulative as K
from plait.lax import indexing as I
from plait.lax import reductions as R
from plait.lax import shape_ops as S
from plait.lax import sorting as SO
from plait.lax import windowed as W
from plait.lax.fft import FftType, fft_p


def _ty(a):
    return tensor_type(a.shape, a.dtype)


# --- shape ops ---------------------------------------------------------------------------
def _bid(ctx, x, *, shape, broadcast_dimensions):
    return ctx.op1("stablehlo.broadcast_in_dim", [x], [_ty(ctx.in_avals[0])],
                   _ty(ctx.out_avals[0]),
                   f"broadcast_dimensions = {i64_array(broadcast_dimensions)}")


def _reshape_like(ctx, x, **_):
    return ctx.op1("stablehlo.reshape", [x], [_ty(ctx.in_avals[0])], _ty(ctx.out_avals[0]))


def _transpose(ctx, x, *, permutation):
    return ctx.op1("stablehlo.transpose", [x], [_ty(ctx.in_avals[0])], _ty(ctx.out_avals[0]),
                   f"permutation = {i64_array(permutation)}")


def _rev(ctx, x, *, dimensions):
    return ctx.op1("stablehlo.reverse", [x], [_ty(ctx.in_avals[0])], _ty(ctx.out_avals[0]),
                   f"dimensions = {i64_array(dimensions)}")


def _slice(ctx, x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    return ctx.op1("stablehlo.slice", [x], [_ty(ctx.in_avals[0])], _ty(ctx.out_avals[0]),
                   f"start_indices = {i64_array(start_indices)}, "
                   f"limit_indices = {i64_array(limit_indices)}, strides = {i64_array(strides)}")


def _dyn_slice(ctx, x, *idx, slice_sizes):
    return ctx.op1("stablehlo.dynamic_slice", [x, *idx], [_ty(a) for a in ctx.in_avals],
                   _ty(ctx.out_avals[0]), f"slice_sizes = {i64_array(slice_sizes)}")


def _dyn_update(ctx, x, upd, *idx):
    return ctx.op1("stablehlo.dynamic_update_slice", [x, upd, *idx],
                   [_ty(a) for a in ctx.in_avals], _ty(ctx.out_avals[0]))


def _concat(ctx, *xs, dimension):
    return ctx.op1("stablehlo.concatenate", list(xs), [_ty(a) for a in ctx.in_avals],
                   _ty(ctx.out_avals[0]), f"dimension = {int(dimension)} : i64")


def _pad(ctx, x, pv, *, padding_config):
    lo = [c[0] for c in padding_config]
    hi = [c[1] for c in padding_config]
    it = [c[2] for c in padding_config]
    return ctx.op1("stablehlo.pad", [x, pv], [_ty(a) for a in ctx.in_avals],
                   _ty(ctx.out_avals[0]), f"edge_padding_low = {i64_array(lo)}, "
                   f"edge_padding_high = {i64_array(hi)}, interior_padding = {i64_array(it)}")


def _iota(ctx, *, dtype, shape, dimension):
    return ctx.op1("stablehlo.iota", [], [], _ty(ctx.out_avals[0]),
                   f"iota_dimension = {int(dimension)} : i64")


S.broadcast_in_dim_p.def_rule(RULE, _bid)
for _p in (S.reshape_p, S.squeeze_p, S.expand_dims_p):
    _p.def_rule(RULE, _reshape_like)
S.transpose_p.def_rule(RULE, _transpose)
S.rev_p.def_rule(RULE, _rev)
S.slice_p.def_rule(RULE, _slice)
S.dynamic_slice_p.def_rule(RULE, _dyn_slice)
S.dynamic_update_slice_p.def_rule(RULE, _dyn_update)
S.concatenate_p.def_rule(RULE, _concat)
S.pad_p.def_rule(RULE, _pad)
S.iota_p.def_rule(RULE, _iota)


# --- reductions --------------------------------------------------------------------------
def body_binop(name: str, dtype):
    """A reducer region applying ``name`` to two scalars of ``dtype``."""
    t = tensor_type((), dtype)

    def body(sub: Ctx, args):
        return [sub.op1(name, args, [t, t], t)], [t]
    return [t, t], body


def reduce(ctx: Ctx, x: str, shape, dtype, axes, op: str, init) -> str:
    """``stablehlo.reduce`` of ``x`` over ``axes`` with the binary ``op`` and ``init``."""
    out_shape = [d for i, d in enumerate(shape) if i not in axes]
    iv = ctx.const(init, dtype)
    types, body = body_binop(op, dtype)
    return ctx.op1("stablehlo.reduce", [x, iv], [tensor_type(shape, dtype), tensor_type((), dtype)],
                   tensor_type(out_shape, dtype), f"dimensions = {i64_array(axes)}",
                   [ctx.region(types, body)])


def _reducer(op, init_of, accumulate=False):
    def rule(ctx, x, *, axes):
        a = ctx.in_avals[0]
        dt = _acc(a.dtype) if accumulate else np.dtype(a.dtype)
        x = convert(ctx, x, a.shape, a.dtype, dt)
        r = reduce(ctx, x, a.shape, dt, tuple(axes), op, init_of(dt))
        return convert(ctx, r, ctx.out_avals[0].shape, dt, a.dtype)
    return rule


def _bitop(op_int, op_bool):
    def rule(ctx, x, *, axes):
        a = ctx.in_avals[0]
        dt = np.dtype(a.dtype)
        init = {"stablehlo.and": -1, "stablehlo.or": 0, "stablehlo.xor": 0}[op_int]
        if dt == np.bool_:
            init = bool(init)
        elif dt.kind == "u" and init == -1:
            init = np.iinfo(dt).max
        return reduce(ctx, x, a.shape, dt, tuple(axes), op_int, init)
    return rule


R.reduce_sum_p.def_rule(RULE, _reducer("stablehlo.add", lambda dt: 0, True))
R.reduce_prod_p.def_rule(RULE, _reducer("stablehlo.multiply", lambda dt: 1, True))
R.reduce_max_p.def_rule(RULE, _reducer("stablehlo.maximum", R.lowest))
R.reduce_min_p.def_rule(RULE, _reducer("stablehlo.minimum", R.highest))
R.reduce_and_p.def_rule(RULE, _bitop("stablehlo.and", None))
R.reduce_or_p.def_rule(RULE, _bitop("stablehlo.or", None))
R.reduce_xor_p.def_rule(RULE, _bitop("stablehlo.xor", None))


def _arg(direction: str, init_of):
    """argmax/argmin as a variadic reduce of (value, index): the first extreme wins and
    NaN counts as more extreme than any number (NumPy)."""
    def rule(ctx, x, *, axis, index_dtype):
        a = ctx.in_avals[0]
        dt, it = np.dtype(a.dtype), np.dtype(index_dtype)
        idx = ctx.op1("stablehlo.iota", [], [], tensor_type(a.shape, it),
                      f"iota_dimension = {int(axis)} : i64")
        tv, ti = tensor_type((), dt), tensor_type((), it)

        def body(sub: Ctx, args):
            va, ia, vb, ib = args
            better = compare(sub, va, vb, (), dt, direction)
            if dt.kind in "fc":
                na = compare(sub, va, va, (), dt, "NE")
                nb = compare(sub, vb, vb, (), dt, "NE")
                notnb = unary(sub, "stablehlo.not", nb, (), np.bool_)
                better = binary(sub, "stablehlo.or", better,
                                binary(sub, "stablehlo.and", na, notnb, (), np.bool_), (), np.bool_)
                same = binary(sub, "stablehlo.or", compare(sub, va, vb, (), dt, "EQ"),
                              binary(sub, "stablehlo.and", na, nb, (), np.bool_), (), np.bool_)
            else:
                same = compare(sub, va, vb, (), dt, "EQ")
            first = compare(sub, ia, ib, (), it, "LT")
            take_a = binary(sub, "stablehlo.or", better,
                            binary(sub, "stablehlo.and", same, first, (), np.bool_), (), np.bool_)
            v = select(sub, take_a, va, vb, (), dt)
            i = select(sub, take_a, ia, ib, (), it)
            return [v, i], [tv, ti]
        out = ctx.out_avals[0]
        outs = ctx.op("stablehlo.reduce", [x, idx, ctx.const(init_of(dt), dt), ctx.const(0, it)],
                      [tensor_type(a.shape, dt), tensor_type(a.shape, it), tv, ti],
                      [tensor_type(out.shape, dt), tensor_type(out.shape, it)],
                      f"dimensions = {i64_array([axis])}",
                      [ctx.region([tv, ti, tv, ti], body)])
        return outs[1]
    return rule


R.argmax_p.def_rule(RULE, _arg("GT", R.lowest))
R.argmin_p.def_rule(RULE, _arg("LT", R.highest))


# --- windowed and cumulative -------------------------------------------------------------
def reduce_window(ctx: Ctx, x, shape, dtype, out_shape, op, init, window, strides, padding,
                  base_dilation, window_dilation) -> str:
    n = len(shape)
    pad = np.asarray(padding, np.int64).reshape(n, 2)
    pad_attr = (f"dense<{[[int(a), int(b)] for a, b in pad]}> : tensor<{n}x2xi64>"
                if n else "dense<> : tensor<0x2xi64>")
    types, body = body_binop(op, dtype)
    return ctx.op1("stablehlo.reduce_window", [x, ctx.const(init, dtype)],
                   [tensor_type(shape, dtype), tensor_type((), dtype)],
                   tensor_type(out_shape, dtype),
                   f"window_dimensions = {i64_array(window)}, window_strides = "
                   f"{i64_array(strides)}, base_dilations = {i64_array(base_dilation)}, "
                   f"window_dilations = {i64_array(window_dilation)}, padding = {pad_attr}",
                   [ctx.region(types, body)])


def _rw(op, init_of, accumulate=False):
    def rule(ctx, x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        a, o = ctx.in_avals[0], ctx.out_avals[0]
        dt = _acc(a.dtype) if accumulate else np.dtype(a.dtype)
        x = convert(ctx, x, a.shape, a.dtype, dt)
        r = reduce_window(ctx, x, a.shape, dt, o.shape, op, init_of(dt), window_dimensions,
                          window_strides, padding, base_dilation, window_dilation)
        return convert(ctx, r, o.shape, dt, a.dtype)
    return rule


W.reduce_window_sum_p.def_rule(RULE, _rw("stablehlo.add", lambda dt: 0, True))
W.reduce_window_max_p.def_rule(RULE, _rw("stablehlo.maximum", R.lowest))
W.reduce_window_min_p.def_rule(RULE, _rw("stablehlo.minimum", R.highest))


def _cum(op, init_of):
    """A cumulative op as a reduce_window over the prefix, in the input's dtype: every
    running float16 sum or product is rounded to float16, as the impl (NumPy's
    ``accumulate``) rounds it; an accumulation in float32 missed overflows to inf."""
    def rule(ctx, x, *, axis, reverse):
        a = ctx.in_avals[0]
        n, nd = a.shape[axis], len(a.shape)
        dt = np.dtype(a.dtype)
        if n == 0 or a.size == 0:
            return x
        t = tensor_type(a.shape, dt)
        if reverse:
            x = ctx.op1("stablehlo.reverse", [x], [t], t, f"dimensions = {i64_array([axis])}")
        win = [n if d == axis else 1 for d in range(nd)]
        pad = [(n - 1, 0) if d == axis else (0, 0) for d in range(nd)]
        r = reduce_window(ctx, x, a.shape, dt, a.shape, op, init_of(dt), win, [1] * nd, pad,
                          [1] * nd, [1] * nd)
        if reverse:
            r = ctx.op1("stablehlo.reverse", [r], [t], t, f"dimensions = {i64_array([axis])}")
        return r
    return rule


K.cumsum_p.def_rule(RULE, _cum("stablehlo.add", lambda dt: 0))
K.cumprod_p.def_rule(RULE, _cum("stablehlo.multiply", lambda dt: 1))
K.cummax_p.def_rule(RULE, _cum("stablehlo.maximum", R.lowest))
K.cummin_p.def_rule(RULE, _cum("stablehlo.minimum", R.highest))


# --- contractions -------------------------------------------------------------------------
def _dot(ctx, lhs, rhs, *, dimension_numbers, preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    la, ra, o = ctx.in_avals[0], ctx.in_avals[1], ctx.out_avals[0]
    cdt = _acc(o.dtype)
    lhs = convert(ctx, lhs, la.shape, la.dtype, cdt)
    rhs = convert(ctx, rhs, ra.shape, ra.dtype, cdt)
    dn = (f"#stablehlo.dot<lhs_batching_dimensions = {list(map(int, lb))}, "
          f"rhs_batching_dimensions = {list(map(int, rb))}, "
          f"lhs_contracting_dimensions = {list(map(int, lc))}, "
          f"rhs_contracting_dimensions = {list(map(int, rc))}>")
    r = ctx.op1("stablehlo.dot_general", [lhs, rhs],
                [tensor_type(la.shape, cdt), tensor_type(ra.shape, cdt)],
                tensor_type(o.shape, cdt), f"dot_dimension_numbers = {dn}")
    return convert(ctx, r, o.shape, cdt, o.dtype)


def _conv(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
          dimension_numbers, feature_group_count, batch_group_count, preferred_element_type):
    ls, rs, os_ = dimension_numbers
    la, ra, o = ctx.in_avals[0], ctx.in_avals[1], ctx.out_avals[0]
    cdt = _acc(o.dtype)
    lhs = convert(ctx, lhs, la.shape, la.dtype, cdt)
    rhs = convert(ctx, rhs, ra.shape, ra.dtype, cdt)
    nsp = len(ls) - 2
    dn = (f"#stablehlo.conv<raw input_batch_dimension = {ls[0]}, input_feature_dimension = "
          f"{ls[1]}, input_spatial_dimensions = {list(map(int, ls[2:]))}, "
          f"kernel_input_feature_dimension = {rs[1]}, kernel_output_feature_dimension = "
          f"{rs[0]}, kernel_spatial_dimensions = {list(map(int, rs[2:]))}, "
          f"output_batch_dimension = {os_[0]}, output_feature_dimension = {os_[1]}, "
          f"output_spatial_dimensions = {list(map(int, os_[2:]))}>")
    pad = (f"dense<{[[int(a), int(b)] for a, b in padding]}> : tensor<{nsp}x2xi64>"
           if nsp else "dense<> : tensor<0x2xi64>")
    r = ctx.op1("stablehlo.convolution", [lhs, rhs],
                [tensor_type(la.shape, cdt), tensor_type(ra.shape, cdt)],
                tensor_type(o.shape, cdt),
                f"window_strides = {i64_array(window_strides)}, padding = {pad}, "
                f"lhs_dilation = {i64_array(lhs_dilation)}, rhs_dilation = "
                f"{i64_array(rhs_dilation)}, dimension_numbers = {dn}, "
                f"feature_group_count = {int(feature_group_count)} : i64, "
                f"batch_group_count = {int(batch_group_count)} : i64")
    return convert(ctx, r, o.shape, cdt, o.dtype)


C.dot_general_p.def_rule(RULE, _dot)
C.conv_general_dilated_p.def_rule(RULE, _conv)


# --- gather / scatter ----------------------------------------------------------------------
def _in_bounds(ctx, idx, ia, dims, sizes, shape):
    """Per index vector: every start in ``[0, shape[d] - size]`` (bool of the batch shape)."""
    it = np.dtype(ia.dtype)
    bshape = tuple(ia.shape[:-1])
    k = ia.shape[-1]
    lo = ctx.full(0, ia.shape, it)
    hi = ctx.const(np.broadcast_to(np.asarray([shape[d] - sizes[d] for d in dims], it),
                                   ia.shape).copy(), it)
    ok = binary(ctx, "stablehlo.and", compare(ctx, idx, lo, ia.shape, it, "GE"),
                compare(ctx, idx, hi, ia.shape, it, "LE"), ia.shape, np.bool_)
    types, body = body_binop("stablehlo.and", np.bool_)
    return ctx.op1("stablehlo.reduce", [ok, ctx.const(True, np.bool_)],
                   [tensor_type(ia.shape, np.bool_), tensor_type((), np.bool_)],
                   tensor_type(bshape, np.bool_), f"dimensions = {i64_array([len(bshape)])}",
                   [ctx.region(types, body)]) if k else ctx.full(True, bshape, np.bool_)


def _gather(ctx, x, idx, *, dimension_numbers, slice_sizes, mode, fill_value):
    offset_dims, collapsed, start_map = dimension_numbers
    xa, ia, o = ctx.in_avals[0], ctx.in_avals[1], ctx.out_avals[0]
    dn = (f"#stablehlo.gather<offset_dims = {list(map(int, offset_dims))}, "
          f"collapsed_slice_dims = {list(map(int, collapsed))}, "
          f"start_index_map = {list(map(int, start_map))}, "
          f"index_vector_dim = {len(ia.shape) - 1}>")
    r = ctx.op1("stablehlo.gather", [x, idx], [_ty(xa), _ty(ia)], _ty(o),
                f"dimension_numbers = {dn}, slice_sizes = {i64_array(slice_sizes)}, "
                f"indices_are_sorted = false")
    if mode != "fill":
        return r
    fill = I.default_fill(xa.dtype) if fill_value is None else fill_value
    ok = _in_bounds(ctx, idx, ia, start_map, slice_sizes, xa.shape)
    batch_dims = [j for j in range(len(o.shape)) if j not in offset_dims]
    okb = ctx.op1("stablehlo.broadcast_in_dim", [ok],
                  [tensor_type(ia.shape[:-1], np.bool_)], tensor_type(o.shape, np.bool_),
                  f"broadcast_dimensions = {i64_array(batch_dims)}")
    return select(ctx, okb, r, ctx.full(np.asarray(fill).astype(xa.dtype), o.shape, xa.dtype),
                  o.shape, xa.dtype)


I.gather_p.def_rule(RULE, _gather)


def _scatter(op):
    def rule(ctx, x, idx, upd, *, dimension_numbers, mode, unique_indices):
        window_dims, inserted, to_operand = dimension_numbers
        xa, ia, ua = ctx.in_avals
        dt = np.dtype(xa.dtype)
        if mode == "clip":
            wsizes = [1] * len(xa.shape)
            free = [d for d in range(len(xa.shape)) if d not in inserted]
            for w, d in zip(window_dims, free):
                wsizes[d] = ua.shape[w]
            it = np.dtype(ia.dtype)
            hi = np.broadcast_to(np.asarray([xa.shape[d] - wsizes[d] for d in to_operand], it),
                                 ia.shape).copy()
            idx = ctx.op1("stablehlo.clamp", [ctx.full(0, ia.shape, it), idx, ctx.const(hi, it)],
                          [_ty(ia)] * 3, _ty(ia))
        t = tensor_type((), dt)
        name = op
        if dt == np.bool_ and op in ("stablehlo.add", "stablehlo.multiply"):
            name = "stablehlo.or" if op == "stablehlo.add" else "stablehlo.and"

        def body(sub, args):
            if name is None:
                return [args[1]], [t]
            return [sub.op1(name, args, [t, t], t)], [t]
        dn = (f"#stablehlo.scatter<update_window_dims = {list(map(int, window_dims))}, "
              f"inserted_window_dims = {list(map(int, inserted))}, "
              f"scatter_dims_to_operand_dims = {list(map(int, to_operand))}, "
              f"index_vector_dim = {len(ia.shape) - 1}>")
        return ctx.op1("stablehlo.scatter", [x, idx, upd], [_ty(xa), _ty(ia), _ty(ua)], _ty(xa),
                       f"scatter_dimension_numbers = {dn}, indices_are_sorted = false, "
                       f"unique_indices = false", [ctx.region([t, t], body)])
    return rule


I.scatter_p.def_rule(RULE, _scatter(None))
I.scatter_add_p.def_rule(RULE, _scatter("stablehlo.add"))
I.scatter_mul_p.def_rule(RULE, _scatter("stablehlo.multiply"))
I.scatter_min_p.def_rule(RULE, _scatter("stablehlo.minimum"))
I.scatter_max_p.def_rule(RULE, _scatter("stablehlo.maximum"))


# --- sort ---------------------------------------------------------------------------------
def _sort(ctx, *xs, dimension, is_stable, num_keys):
    avals = ctx.in_avals
    scal = [tensor_type((), a.dtype) for a in avals]

    def body(sub, args):
        # lexicographic "less than" over the keys; NaNs sort last (NumPy)
        lt = None
        for k in reversed(range(num_keys)):
            dt = np.dtype(avals[k].dtype)
            a, b = args[2 * k], args[2 * k + 1]
            less = _total_less(sub, a, b, dt)
            if lt is None:
                lt = less
            else:
                eq = binary(sub, "stablehlo.and", unary(sub, "stablehlo.not", less, (), np.bool_),
                            unary(sub, "stablehlo.not", _total_less(sub, b, a, dt), (), np.bool_),
                            (), np.bool_)
                lt = binary(sub, "stablehlo.or", less,
                            binary(sub, "stablehlo.and", eq, lt, (), np.bool_), (), np.bool_)
        return [lt], [tensor_type((), np.bool_)]
    arg_types = [t for s in scal for t in (s, s)]
    return ctx.op("stablehlo.sort", list(xs), [_ty(a) for a in avals], [_ty(a) for a in avals],
                  f"dimension = {int(dimension)} : i64, is_stable = true",
                  [ctx.region(arg_types, body)])


def _total_less(sub, a, b, dt):
    """``a < b`` with NaN greater than everything (complex: lexicographic, NumPy)."""
    if dt.kind == "c":
        rdt = np.float32 if dt == np.complex64 else np.float64
        ar, ai = (unary(sub, f"stablehlo.{p}", a, (), dt, rdt) for p in ("real", "imag"))
        br, bi = (unary(sub, f"stablehlo.{p}", b, (), dt, rdt) for p in ("real", "imag"))
        rl = _total_less(sub, ar, br, np.dtype(rdt))
        req = compare(sub, ar, br, (), rdt, "EQ")
        il = _total_less(sub, ai, bi, np.dtype(rdt))
        return binary(sub, "stablehlo.or", rl, binary(sub, "stablehlo.and", req, il, (), np.bool_),
                      (), np.bool_)
    lt = compare(sub, a, b, (), dt, "LT")
    if dt.kind != "f":
        return lt
    na = compare(sub, a, a, (), dt, "NE")
    nb = compare(sub, b, b, (), dt, "NE")
    # a < b, or b is NaN while a is not
    return binary(sub, "stablehlo.or", lt,
                  binary(sub, "stablehlo.and", nb, unary(sub, "stablehlo.not", na, (), np.bool_),
                         (), np.bool_), (), np.bool_)


SO.sort_p.def_rule(RULE, _sort)


# --- fft ------------------------------------------------------------------------------------
def _fft(ctx, x, *, fft_type, fft_lengths):
    a, o = ctx.in_avals[0], ctx.out_avals[0]
    return ctx.op1("stablehlo.fft", [x], [_ty(a)], _ty(o),
                   f"fft_type = #stablehlo<fft_type {FftType(fft_type).name}>, "
                   f"fft_length = {i64_array(fft_lengths)}")


fft_p.def_rule(RULE, _fft)
