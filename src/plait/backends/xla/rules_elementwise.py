"""``to_stablehlo`` rules of the elementwise primitives: from each descriptor's spelling
(or ``composite``), and custom rules for the ops StableHLO spells differently."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.rules import RULE, binary, compare, convert, select, unary
from plait.backends.xla.emitter import tensor_type
from plait.core.staging import trace_to_graph
from plait.lax import elementwise as E
from plait.lax.elementwise_spec import ElementwiseOp, on_define


def _spelled(op: ElementwiseOp):
    """The rule of an op from its StableHLO spelling (``"compare EQ"``: a comparison)."""
    if op.stablehlo.startswith("compare "):
        direction = op.stablehlo.split()[1]
        return lambda ctx, x, y: compare(ctx, x, y, ctx.in_avals[0].shape,
                                         ctx.in_avals[0].dtype, direction)

    def rule(ctx, *xs):
        a, o = ctx.in_avals[0], ctx.out_avals[0]
        if len(xs) == 1:
            return unary(ctx, op.stablehlo, xs[0], a.shape, a.dtype, o.dtype)
        return binary(ctx, op.stablehlo, *xs, a.shape, a.dtype, o.dtype)
    return rule


def _composite(op: ElementwiseOp):
    """The rule of an op without a spelling: its ``composite`` staged and emitted inline."""
    def rule(ctx, *xs):
        closed, _ = trace_to_graph(lambda *a: [op.composite(*a)], ctx.in_avals,
                                   description=f"the StableHLO lowering of {op.name}")
        g = closed.graph
        env = dict(zip(g.invars, xs))
        for v, c in zip(g.constvars, closed.consts):
            env[v] = ctx.const(np.asarray(c), v.aval.dtype)
        ctx.em.emit_eqns(g, env, ctx.lines)
        return ctx.em.read(g.outvars[0], env, ctx.lines)
    return rule


def _register(op: ElementwiseOp, prim) -> None:
    if prim is not None and op.stablehlo:
        prim.def_rule(RULE, _spelled(op))
    elif prim is not None and op.composite is not None:
        prim.def_rule(RULE, _composite(op))


# descriptor-defined ops with a spelling or a composite; the custom rules follow
on_define(_register)


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
    s = unary(ctx, "stablehlo.sign", x, a.shape, a.dtype)
    if np.dtype(a.dtype).kind != "f":
        return s
    # XLA's sign(-0.0) is -0.0; NumPy's (the impl's) is +0.0
    zero = ctx.full(0, a.shape, a.dtype)
    return select(ctx, compare(ctx, s, zero, a.shape, a.dtype, "EQ"), zero, s, a.shape, a.dtype)


def _exp2(ctx, x):
    """Real: ``2 ** x``. Complex: ``exp(x ln 2)``, each part scaled by the real ``ln 2``
    (a complex product would make ``-inf * 0`` a NaN imaginary part), as NumPy computes
    it; XLA's complex power loses digits of large results and overflows to NaN."""
    a = ctx.in_avals[0]
    sh, dt = a.shape, np.dtype(a.dtype)
    if dt.kind != "c":
        return binary(ctx, "stablehlo.power", ctx.full(2, sh, dt), x, sh, dt)
    rdt = np.float32 if dt == np.complex64 else np.float64
    ln2 = ctx.full(np.log(2.0), sh, rdt)
    re, im = (binary(ctx, "stablehlo.multiply", unary(ctx, f"stablehlo.{p}", x, sh, dt, rdt),
                     ln2, sh, rdt) for p in ("real", "imag"))
    return unary(ctx, "stablehlo.exponential",
                 binary(ctx, "stablehlo.complex", re, im, sh, rdt, dt), sh, dt)


def _complex_sin_cos(name: str):
    """Complex sin or cos from real functions, as jax lowers them:
    ``sin(a + bi) = sin a cosh b + i cos a sinh b``, ``cos(a + bi) = cos a cosh b -
    i sin a sinh b``, with ``sinh b`` and ``cosh b`` from ``expm1(±b)`` (exact for tiny
    ``b``, where XLA's own complex sine returns a zero imaginary part). The part that is
    ``sin a`` times something is exactly 0 when ``a == 0`` (not NaN when ``b`` is inf)."""
    spelled = "stablehlo.sine" if name == "sin" else "stablehlo.cosine"

    def rule(ctx, x):
        a = ctx.in_avals[0]
        sh, dt = a.shape, np.dtype(a.dtype)
        if dt.kind != "c":
            return unary(ctx, spelled, x, sh, dt)
        rdt = np.float32 if dt == np.complex64 else np.float64
        re = unary(ctx, "stablehlo.real", x, sh, dt, rdt)
        im = unary(ctx, "stablehlo.imag", x, sh, dt, rdt)
        sin_a = unary(ctx, "stablehlo.sine", re, sh, rdt)
        cos_a = unary(ctx, "stablehlo.cosine", re, sh, rdt)
        ep = unary(ctx, "stablehlo.exponential_minus_one", im, sh, rdt)
        em = unary(ctx, "stablehlo.exponential_minus_one",
                   unary(ctx, "stablehlo.negate", im, sh, rdt), sh, rdt)
        two = ctx.full(2, sh, rdt)
        sinh_b = binary(ctx, "stablehlo.divide",
                        binary(ctx, "stablehlo.subtract", ep, em, sh, rdt), two, sh, rdt)
        cosh_b = binary(ctx, "stablehlo.divide", binary(
            ctx, "stablehlo.add", binary(ctx, "stablehlo.add", ep, em, sh, rdt), two, sh, rdt),
            two, sh, rdt)
        if name == "sin":
            real = binary(ctx, "stablehlo.multiply", sin_a, cosh_b, sh, rdt)
            imag = binary(ctx, "stablehlo.multiply", cos_a, sinh_b, sh, rdt)
        else:
            real = binary(ctx, "stablehlo.multiply", cos_a, cosh_b, sh, rdt)
            imag = binary(ctx, "stablehlo.multiply",
                          unary(ctx, "stablehlo.negate", sin_a, sh, rdt), sinh_b, sh, rdt)
        a_zero = compare(ctx, re, ctx.full(0, sh, rdt), sh, rdt, "EQ")
        zero = ctx.full(0, sh, rdt)
        if name == "sin":
            real = select(ctx, a_zero, zero, real, sh, rdt)
        else:
            imag = select(ctx, a_zero, zero, imag, sh, rdt)
        return binary(ctx, "stablehlo.complex", real, imag, sh, rdt, dt)
    return rule


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
E.sin_p.def_rule(RULE, _complex_sin_cos("sin"))
E.cos_p.def_rule(RULE, _complex_sin_cos("cos"))


def _shift_right_arithmetic(ctx, x, y):
    """Unsigned operands shift logically (zeros in, 0 past the width), as the NumPy impl
    does; XLA's arithmetic shift copies the top bit of unsigned operands too."""
    a = ctx.in_avals[0]
    name = "stablehlo.shift_right_logical" if np.dtype(a.dtype).kind == "u" \
        else "stablehlo.shift_right_arithmetic"
    return binary(ctx, name, x, y, a.shape, a.dtype)


E.shift_right_arithmetic_p.def_rule(RULE, _shift_right_arithmetic)
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
