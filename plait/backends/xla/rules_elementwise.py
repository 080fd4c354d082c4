"""``to_stablehlo`` rules of the elementwise primitives (plait.lax.elementwise)."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.rules import RULE, binary, compare, convert, select, unary
from plait.backends.xla.emitter import tensor_type
from plait.lax import elementwise as E


def _simple_unary(name):
    def rule(ctx, x):
        a, o = ctx.in_avals[0], ctx.out_avals[0]
        return unary(ctx, name, x, a.shape, a.dtype, o.dtype)
    return rule


_UNARY = {
    E.neg_p: "stablehlo.negate", E.floor_p: "stablehlo.floor", E.ceil_p: "stablehlo.ceil",
    E.round_p: "stablehlo.round_nearest_even", E.is_finite_p: "stablehlo.is_finite",
    E.exp_p: "stablehlo.exponential", E.log_p: "stablehlo.log",
    E.log1p_p: "stablehlo.log_plus_one", E.expm1_p: "stablehlo.exponential_minus_one",
    E.tanh_p: "stablehlo.tanh", E.logistic_p: "stablehlo.logistic", E.sin_p: "stablehlo.sine",
    E.cos_p: "stablehlo.cosine", E.tan_p: "stablehlo.tan", E.asin_p: "chlo.asin",
    E.acos_p: "chlo.acos", E.atan_p: "chlo.atan", E.sinh_p: "chlo.sinh", E.cosh_p: "chlo.cosh",
    E.asinh_p: "chlo.asinh", E.acosh_p: "chlo.acosh", E.atanh_p: "chlo.atanh",
    E.sqrt_p: "stablehlo.sqrt", E.rsqrt_p: "stablehlo.rsqrt", E.cbrt_p: "stablehlo.cbrt",
    E.not_p: "stablehlo.not", E.real_p: "stablehlo.real", E.imag_p: "stablehlo.imag",
    E.population_count_p: "stablehlo.popcnt",
}
for _p, _n in _UNARY.items():
    _p.def_rule(RULE, _simple_unary(_n))


def _abs(ctx, x):
    a = ctx.in_avals[0]
    if np.dtype(a.dtype).kind == "u":
        return x
    return unary(ctx, "stablehlo.abs", x, a.shape, a.dtype, ctx.out_avals[0].dtype)


def _sign(ctx, x):
    a = ctx.in_avals[0]
    if np.dtype(a.dtype).kind in "ub":
        if a.dtype == np.bool_:
            return x
        nz = compare(ctx, x, ctx.full(0, a.shape, a.dtype), a.shape, a.dtype, "NE")
        return convert(ctx, nz, a.shape, np.bool_, a.dtype)
    return unary(ctx, "stablehlo.sign", x, a.shape, a.dtype)


def _exp2(ctx, x):
    a = ctx.in_avals[0]
    return binary(ctx, "stablehlo.power", ctx.full(2, a.shape, a.dtype), x, a.shape, a.dtype)


def _conj(ctx, x):
    a = ctx.in_avals[0]
    rdt = np.float32 if a.dtype == np.complex64 else np.float64
    re = unary(ctx, "stablehlo.real", x, a.shape, a.dtype, rdt)
    im = unary(ctx, "stablehlo.imag", x, a.shape, a.dtype, rdt)
    nim = unary(ctx, "stablehlo.negate", im, a.shape, rdt)
    return binary(ctx, "stablehlo.complex", re, nim, a.shape, rdt, a.dtype)


E.abs_p.def_rule(RULE, _abs)
E.sign_p.def_rule(RULE, _sign)
E.exp2_p.def_rule(RULE, _exp2)
E.conj_p.def_rule(RULE, _conj)
E.stop_gradient_p.def_rule(RULE, lambda ctx, x: x)


def _integer_pow(ctx, x, *, y):
    a = ctx.in_avals[0]
    sh, dt = a.shape, a.dtype
    if y == 0:
        return ctx.full(1, sh, dt)
    acc, base, n = None, x, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else binary(ctx, "stablehlo.multiply", acc, base, sh, dt)
        n >>= 1
        if n:
            base = binary(ctx, "stablehlo.multiply", base, base, sh, dt)
    if y < 0:
        acc = binary(ctx, "stablehlo.divide", ctx.full(1, sh, dt), acc, sh, dt)
    return acc


E.integer_pow_p.def_rule(RULE, _integer_pow)


def _simple_binary(name):
    def rule(ctx, x, y):
        a, o = ctx.in_avals[0], ctx.out_avals[0]
        return binary(ctx, name, x, y, a.shape, a.dtype, o.dtype)
    return rule


_BINARY = {
    E.add_p: "stablehlo.add", E.sub_p: "stablehlo.subtract", E.mul_p: "stablehlo.multiply",
    E.pow_p: "stablehlo.power", E.max_p: "stablehlo.maximum", E.min_p: "stablehlo.minimum",
    E.atan2_p: "stablehlo.atan2", E.nextafter_p: "chlo.next_after",
    E.and_p: "stablehlo.and", E.or_p: "stablehlo.or", E.xor_p: "stablehlo.xor",
    E.shift_left_p: "stablehlo.shift_left",
    E.shift_right_arithmetic_p: "stablehlo.shift_right_arithmetic",
    E.shift_right_logical_p: "stablehlo.shift_right_logical",
}
for _p, _n in _BINARY.items():
    _p.def_rule(RULE, _simple_binary(_n))


def _complex(ctx, x, y):
    a, o = ctx.in_avals[0], ctx.out_avals[0]
    rdt = np.float64 if o.dtype == np.complex128 else np.float32
    x = convert(ctx, x, a.shape, a.dtype, rdt)
    y = convert(ctx, y, a.shape, a.dtype, rdt)
    return binary(ctx, "stablehlo.complex", x, y, a.shape, rdt, o.dtype)


E.complex_p.def_rule(RULE, _complex)


def _int_guarded(name):
    """Integer division/remainder by zero gives 0, as the NumPy impl does (XLA: -1 / x)."""
    def rule(ctx, x, y):
        a = ctx.in_avals[0]
        sh, dt = a.shape, a.dtype
        if np.dtype(dt).kind not in "iu":
            return binary(ctx, name, x, y, sh, dt)
        zero = ctx.full(0, sh, dt)
        bad = compare(ctx, y, zero, sh, dt, "EQ")
        safe = select(ctx, bad, ctx.full(1, sh, dt), y, sh, dt)
        r = binary(ctx, name, x, safe, sh, dt)
        return select(ctx, bad, zero, r, sh, dt)
    return rule


E.div_p.def_rule(RULE, _int_guarded("stablehlo.divide"))
E.rem_p.def_rule(RULE, _int_guarded("stablehlo.remainder"))


def _copysign(ctx, x, y):
    a = ctx.in_avals[0]
    sh, dt = a.shape, np.dtype(a.dtype)
    ut = np.dtype(f"u{dt.itemsize}")
    bits = dt.itemsize * 8
    xb = unary(ctx, "stablehlo.bitcast_convert", x, sh, dt, ut)
    yb = unary(ctx, "stablehlo.bitcast_convert", y, sh, dt, ut)
    sign = ctx.full(1 << (bits - 1), sh, ut)
    mag = ctx.full((1 << (bits - 1)) - 1, sh, ut)
    r = binary(ctx, "stablehlo.or", binary(ctx, "stablehlo.and", xb, mag, sh, ut),
               binary(ctx, "stablehlo.and", yb, sign, sh, ut), sh, ut)
    return unary(ctx, "stablehlo.bitcast_convert", r, sh, ut, dt)


E.copysign_p.def_rule(RULE, _copysign)


def _complex_extremum(direction, name):
    """Complex max/min as NumPy: lexicographic on (real, imag); a NaN operand wins."""
    def rule(ctx, x, y):
        a = ctx.in_avals[0]
        sh, dt = a.shape, np.dtype(a.dtype)
        if dt.kind != "c":
            return binary(ctx, name, x, y, sh, dt)
        rdt = np.float32 if dt == np.complex64 else np.float64
        xr, xi, yr, yi = (unary(ctx, f"stablehlo.{p}", v, sh, dt, rdt)
                          for v, p in ((x, "real"), (x, "imag"), (y, "real"), (y, "imag")))
        b = np.bool_
        def nan(r, i):
            return binary(ctx, "stablehlo.or", compare(ctx, r, r, sh, rdt, "NE"),
                          compare(ctx, i, i, sh, rdt, "NE"), sh, b)
        better = binary(ctx, "stablehlo.or", compare(ctx, xr, yr, sh, rdt, direction),
                        binary(ctx, "stablehlo.and", compare(ctx, xr, yr, sh, rdt, "EQ"),
                               compare(ctx, xi, yi, sh, rdt, direction[0] + "E"), sh, b), sh, b)
        ny = nan(yr, yi)
        take_x = binary(ctx, "stablehlo.or", nan(xr, xi),
                        binary(ctx, "stablehlo.and", better,
                               unary(ctx, "stablehlo.not", ny, sh, b), sh, b), sh, b)
        return select(ctx, take_x, x, y, sh, dt)
    return rule


E.max_p.def_rule(RULE, _complex_extremum("GT", "stablehlo.maximum"))
E.min_p.def_rule(RULE, _complex_extremum("LT", "stablehlo.minimum"))

for _p, _d in ((E.eq_p, "EQ"), (E.ne_p, "NE"), (E.lt_p, "LT"), (E.le_p, "LE"),
               (E.gt_p, "GT"), (E.ge_p, "GE")):
    _p.def_rule(RULE, lambda ctx, x, y, _d=_d: compare(
        ctx, x, y, ctx.in_avals[0].shape, ctx.in_avals[0].dtype, _d))


def _select(ctx, p, t, f):
    a = ctx.out_avals[0]
    return select(ctx, p, t, f, a.shape, a.dtype)


def _clamp(ctx, lo, x, hi):
    la, xa, ha = ctx.in_avals
    return ctx.op1("stablehlo.clamp", [lo, x, hi], [tensor_type(la.shape, la.dtype),
                   tensor_type(xa.shape, xa.dtype), tensor_type(ha.shape, ha.dtype)],
                   tensor_type(xa.shape, xa.dtype))


E.select_p.def_rule(RULE, _select)
E.clamp_p.def_rule(RULE, _clamp)


def _convert(ctx, x, *, new_dtype, weak_type):
    a = ctx.in_avals[0]
    src, dst = np.dtype(a.dtype), np.dtype(new_dtype)
    if src.kind == "c" and dst.kind != "c":
        rdt = np.float32 if src == np.complex64 else np.float64
        x = unary(ctx, "stablehlo.real", x, a.shape, src, rdt)
        src = np.dtype(rdt)
    if dst == np.bool_ and src != np.bool_:
        return compare(ctx, x, ctx.full(0, a.shape, src), a.shape, src, "NE")
    return convert(ctx, x, a.shape, src, dst)


E.convert_element_type_p.def_rule(RULE, _convert)
