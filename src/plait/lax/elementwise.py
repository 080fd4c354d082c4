"""Elementwise primitives: arithmetic, math functions, comparisons, bitwise ops,
``select``, ``clamp`` and ``convert_element_type``.

Each plain elementwise op is ONE block, ``name_p, name = _op(ElementwiseOp(...))``:
the descriptor (``plait.lax.elementwise_spec``) carries its NumPy semantics, jvp,
native (intrinsic, C) and StableHLO spellings, and every layer reads it from there.
Ops with static parameters or their own typing rules (``integer_pow``, ``select``,
``clamp``, ``convert_element_type``, ``stop_gradient``) are written out below them.

Binary primitives require equal shapes and dtypes (``plait.numpy`` promotes and
broadcasts); a Python scalar operand is accepted as a weak value of the other
operand's dtype and broadcast to its shape.
"""
from __future__ import annotations

import builtins

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import wrap_array
from plait.core.trace import get_aval, Tracer
from plait.lax import _vecmath_c
from plait.lax._base import (standard_primitive, to_bool,
                             check_dtype, check_same_dtypes, check_same_shapes,
                             as_operand, ALL, NUMERIC, INEXACT, INTEGRAL, FLOAT, INT, UINT,
                             BOOL, COMPLEX)
from plait.lax._ad_helpers import (Zero, defjvp, defjvp_zero, full, zeros,
                                   instantiate, tangent_aval,
                                   is_undefined_primal, aval_of_operand, differentiable)
from plait.lax._batch_helpers import defvectorized, defbroadcasting, broadcast_batched
from plait.lax.elementwise_spec import ZERO, ElementwiseOp, define
from plait.errors import PlaitTypeError

_real = dtypes.real_dtype
_PY_SCALARS = (bool, int, float, builtins.complex)


def _trunc_div(x, y):
    if x.dtype.kind in "iu":
        with np.errstate(all="ignore"):
            q = np.floor_divide(x, y)
            r = np.remainder(x, y)
            fix = (r != 0) & ((x < 0) != (y < 0)) if x.dtype.kind == "i" else np.zeros_like(r, bool)
            return np.where(fix, q + 1, q).astype(x.dtype)
    with np.errstate(all="ignore"):
        return np.true_divide(x, y)


def _rem(x, y):
    with np.errstate(all="ignore"):
        return np.fmod(x, y)


def _pow(x, y):
    """C's ``pow``, as the native kernels compute it: NumPy's float loops compute an
    exponent of 0.5 broadcast over the base (a stride of 0: a 0-d operand) as ``sqrt``,
    so ``(-0.0) ** 0.5`` was -0.0 and ``(-inf) ** 0.5`` NaN there; pow gives +0.0, +inf."""
    out = np.power(x, y)
    if out.dtype.kind != "f":
        return out
    fix = (np.asarray(y) == 0.5) & ((x == 0) | (x == -np.inf))
    return np.where(fix, np.abs(x), out).astype(out.dtype) if fix.any() else out


def _convert_impl(x, *, new_dtype, weak_type):
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = x.real
    with np.errstate(all="ignore"):
        return x.astype(new_dtype)


def _logistic(x):
    """``1 / (1 + exp(-x))``, as ``exp(x) / (1 + exp(x))`` where the real part is negative,
    so that ``exp(-x)`` cannot overflow (float16's ``sigmoid(-12)`` is 6e-6, not 0)."""
    neg = np.real(x) < 0
    with np.errstate(all="ignore"):
        e = np.exp(np.where(neg, x, -x))
        return np.where(neg, e / (1 + e), 1 / (1 + e)).astype(x.dtype)


def _expm1(x):
    """``np.expm1``, except that complex values with an infinite or NaN part take
    ``exp(z) - 1`` (C99 Annex G, as the Array API standard specifies: ``expm1(inf+0j)``
    is ``inf+0j``; NumPy's complex expm1 gives ``inf+nanj`` there)."""
    out = np.expm1(x)
    if x.dtype.kind == "c":
        bad = ~np.isfinite(x)
        if bad.any():
            out = np.where(bad, np.exp(x) - 1, out).astype(x.dtype)
    return out


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _sign(x):
    if x.dtype.kind == "b":
        return x.copy()
    return np.sign(x)


def _shift_left(x, y):
    bits = x.dtype.itemsize * 8
    with np.errstate(all="ignore"):
        return np.where((y < 0) | (y >= bits), x.dtype.type(0), np.left_shift(x, y)).astype(x.dtype)


def _shift_right_arith(x, y):
    bits = x.dtype.itemsize * 8
    big = (y < 0) | (y >= bits)
    fill = np.where(x < 0, x.dtype.type(-1), x.dtype.type(0)) if x.dtype.kind == "i" else 0
    with np.errstate(all="ignore"):
        return np.where(big, fill, np.right_shift(x, np.where(big, 0, y))).astype(x.dtype)


def _shift_right_logical(x, y):
    bits = x.dtype.itemsize * 8
    u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    yy = y.astype(u.dtype) if y.dtype.kind == "i" else y
    big = (y < 0) | (y >= bits)
    with np.errstate(all="ignore"):
        r = np.where(big, u.dtype.type(0), np.right_shift(u, np.where(big, 0, yy).astype(u.dtype)))
    return r.astype(u.dtype).view(x.dtype)


def _complex_dtype(dt):
    return dtypes.complex64 if dt in (dtypes.float16, dtypes.float32) else dtypes.complex128


# --- autodiff helpers the descriptors' jvp and transpose rules use --------------------
def _abs_jvp(g, ans, x):
    if not dtypes.is_complex(get_aval(x).dtype):
        return mul(g, sign(x))
    # d|z| = Re(conj(z) dz) / |z|, taken as 0 at z = 0
    safe = select(eq(ans, 0), full(get_aval(ans).shape, 1, get_aval(ans).dtype), ans)
    return div(real(mul(conj(x), g)), safe)


def _add_transpose(ct, x, y):
    return [ct if is_undefined_primal(x) else None, ct if is_undefined_primal(y) else None]


def _sub_transpose(ct, x, y):
    return [ct if is_undefined_primal(x) else None,
            neg(ct) if is_undefined_primal(y) else None]


def _mul_transpose(ct, x, y):
    if is_undefined_primal(x):
        return [mul(ct, y), None]
    return [None, mul(x, ct)]


def _trunc(q):
    return mul(sign(q), floor(abs(q)))


def _choose_mask(x, y, cmp):
    """1 where ``cmp(x, y)``, 1/2 at ties (the derivative is shared), 0 elsewhere."""
    a = get_aval(x)
    one, half, zero = (full(a.shape, v, a.dtype) for v in (1, 0.5, 0))
    return select(cmp(x, y), one, select(eq(x, y), half, zero))


def _pow_jvp_y(g, ans, x, y):
    a = get_aval(x)
    safe_x = select(eq(x, 0.0), full(a.shape, 1, a.dtype), x)
    return mul(g, mul(ans, log(safe_x)))


def _logaddexp_weight(x, y):
    """``d logaddexp(x, y) / dx = logistic(x - y)``, written per branch as the small
    weight ``logistic(-|x - y|)`` (or one minus it), so derivatives of every order stay
    accurate and finite in both tails; the branch not taken gets a safe argument.
    Equal infinities (``x - y`` is NaN) take the tie's weight 1/2."""
    a = get_aval(x)
    zero = full(a.shape, 0, a.dtype)
    x_hi = ge(x, y)
    same_inf = bitwise_and(eq(x, y), bitwise_not(is_finite(x)))
    hi = sub(1.0, logistic(select(bitwise_or(same_inf, bitwise_not(x_hi)), zero, sub(y, x))))
    lo = logistic(select(x_hi, zero, sub(x, y)))
    return select(x_hi, hi, lo)


def _logaddexp_composite(x, y):
    """NumPy's algorithm in primitives (for backends without a C helper)."""
    a = get_aval(x)
    same = eq(x, y)
    d = select(same, full(a.shape, 0, a.dtype), sub(x, y))
    t = log1p(exp(neg(abs(d))))
    out = select(gt(d, 0.0), add(x, t), add(y, t))      # NaN d: y + NaN
    return select(same, add(x, float(np.log(2.0))), out)


_LOGADDEXP_C = r"""/* logaddexp as NumPy computes it (x == y, equal infinities too: x + log 2) */
static inline double plait_logaddexp(double x, double y) {
  if (x == y) return x + 0.6931471805599453;
  double d = x - y;
  return d > 0 ? x + log1p(exp(-d)) : d <= 0 ? y + log1p(exp(d)) : d;
}
static inline float plait_logaddexpf(float x, float y) {
  if (x == y) return x + 0.6931471805599453f;
  float d = x - y;
  return d > 0 ? x + log1pf(expf(-d)) : d <= 0 ? y + log1pf(expf(d)) : d;
}
"""
_ORDERED = (BOOL, INT, UINT, FLOAT)


# --- Python-facing functions of the descriptor-defined ops ------------------------
def _scalar_like(x, other):
    """A Python scalar operand becomes a weak array of the other operand's dtype and shape."""
    if isinstance(x, _PY_SCALARS) and not isinstance(other, _PY_SCALARS):
        a = get_aval(other)
        if not isinstance(other, Tracer):      # eager: build the operand directly
            return wrap_array(np.full(a.shape, x, dtype=a.dtype), True)
        s = as_operand(x, a.dtype)
        if a.shape:
            from plait.lax.shape_ops import broadcast_in_dim
            s = broadcast_in_dim(s, a.shape, ())
        return s
    return x


def _binary(prim):
    def fn(x, y):
        x, y = _scalar_like(x, y), _scalar_like(y, x)
        return prim.bind(as_operand(x), as_operand(y))
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` of two arrays of equal shape and dtype."
    return fn


def _unary(prim):
    def fn(x):
        return prim.bind(as_operand(x))
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}``."
    return fn


def _op(op: ElementwiseOp):
    """Define ``op`` in every layer; returns ``(primitive, Python function)``."""
    prim = define(op)
    return prim, (_unary if op.arity == 1 else _binary)(prim)


# families of ops and their shared C templates (see ElementwiseOp.c)
def _c_arith(sym: str, bool_sym: str) -> dict:
    return {"b": f"({{0}} {bool_sym} {{1}})", "fiu": f"(({{ct}})({{0}} {sym} {{1}}))"}


def _bitwise(name: str, fn, sym: str):
    """A bitwise op on integers (logical on bool): zero derivative, C operator ``sym``."""
    return _op(ElementwiseOp(name, 2, fn, INTEGRAL, jvp=ZERO, intrinsic=name,
                             c={"fiub": f"(({{ct}})({{0}} {sym} {{1}}))"},
                             stablehlo="stablehlo." + name))


def _math(name: str, fn, jvp, stablehlo: str | None = None):
    """A libm function on floats and complex numbers (libmvec has its SIMD variants). When
    ``_vecmath_c`` routes ``name``, the CPU renderer calls plait's own
    ``plait_{name}f``/``plait_{name}`` instead (OpenCL keeps its builtin)."""
    own = _vecmath_c.ROUTED.get(name, ())
    return _op(ElementwiseOp(name, 1, fn, INEXACT, warn_ok=True, jvp=(jvp,), intrinsic=name,
                             libm=name, vecmath=True, stablehlo=stablehlo, transcendental=True,
                             cpu_c={"f": f"plait_{name}{{f}}({{0}})"} if own else {},
                             cpu_helper=own, cpu_v16=_vecmath_c.V16.get(name)))


def _comparison(name: str, fn, kinds, sym: str, direction: str):
    """A comparison: a bool result, zero derivative, C operator ``sym``, StableHLO
    ``compare`` with ``direction``."""
    return _op(ElementwiseOp(name, 2, fn, kinds, out_dtype=to_bool, jvp=ZERO,
                             intrinsic="cmp_" + name, c={"fiub": f"({{0}} {sym} {{1}})"},
                             stablehlo="compare " + direction))


def _c_extremum(name: str, sym: str) -> dict:
    return {"f": f"plait_{name}{{f}}({{0}}, {{1}})", "iub": f"({{0}} {sym} {{1}} ? {{0}} : {{1}})"}


# --- unary: one block per op ------------------------------------------------------
neg_p, neg = _op(ElementwiseOp(
    "neg", 1, np.negative, NUMERIC, linear=True, transpose=lambda ct, x: [neg(ct)],
    intrinsic="neg", c={"b": "{0}", "fiu": "(({ct})(-{0}))"}, cpu_v16="(-{0})",
    stablehlo="stablehlo.negate"))
sign_p, sign = _op(ElementwiseOp(
    "sign", 1, _sign, NUMERIC, jvp=ZERO, intrinsic="sign",
    c={"f": "({0} > 0 ? ({ct})1 : {0} < 0 ? ({ct})-1 : {0} == 0 ? ({ct})0 : {0})",
       "iub": "(({ct})(({0} > 0) - ({0} < 0)))"}))
floor_p, floor = _op(ElementwiseOp(
    "floor", 1, np.floor, (FLOAT,), jvp=ZERO, intrinsic="floor", libm="floor",
    stablehlo="stablehlo.floor"))
ceil_p, ceil = _op(ElementwiseOp(
    "ceil", 1, np.ceil, (FLOAT,), jvp=ZERO, intrinsic="ceil", libm="ceil",
    stablehlo="stablehlo.ceil"))
round_p, round = _op(ElementwiseOp(      # half to even, as NumPy
    "round", 1, np.rint, (FLOAT,), jvp=ZERO, intrinsic="round", libm="rint",
    stablehlo="stablehlo.round_nearest_even"))
is_finite_p, is_finite = _op(ElementwiseOp(
    "is_finite", 1, np.isfinite, (FLOAT,), out_dtype=to_bool, jvp=ZERO,
    intrinsic="is_finite", c={"fiub": "isfinite({0})"}, stablehlo="stablehlo.is_finite"))
exp_p, exp = _math("exp", np.exp, lambda g, ans, x: mul(g, ans), "stablehlo.exponential")
exp2_p, exp2 = _math("exp2", np.exp2, lambda g, ans, x: mul(g, mul(ans, float(np.log(2)))))
log_p, log = _math("log", np.log, lambda g, ans, x: div(g, x), "stablehlo.log")
log1p_p, log1p = _math("log1p", np.log1p,
                       lambda g, ans, x: div(g, add(x, 1.0)), "stablehlo.log_plus_one")
expm1_p, expm1 = _math("expm1", _expm1,
                       lambda g, ans, x: mul(g, add(ans, 1)), "stablehlo.exponential_minus_one")
tanh_p, tanh = _math("tanh", np.tanh,
                     lambda g, ans, x: mul(g, sub(1, mul(ans, ans))), "stablehlo.tanh")
logistic_p, logistic = _op(ElementwiseOp(
    "logistic", 1, _logistic, INEXACT, warn_ok=True,
    jvp=(lambda g, ans, x: mul(g, mul(ans, sub(1, ans))),), intrinsic="logistic",
    c={"f": "(({ct})1 / (({ct})1 + exp{f}(-{0})))"}, stablehlo="stablehlo.logistic",
    cpu_c={"f": "(({ct})1 / (({ct})1 + plait_exp{f}(-{0})))"},
    cpu_helper=_vecmath_c.ROUTED["exp"], cpu_v16="(1.0f / (1.0f + plait_expf_v16(-{0})))",
    transcendental=True))
sin_p, sin = _math("sin", np.sin, lambda g, ans, x: mul(g, cos(x)), "stablehlo.sine")
cos_p, cos = _math("cos", np.cos, lambda g, ans, x: neg(mul(g, sin(x))), "stablehlo.cosine")
tan_p, tan = _math("tan", np.tan, lambda g, ans, x: mul(g, add(1, mul(ans, ans))), "stablehlo.tan")
asin_p, asin = _math("asin", np.arcsin,
                     lambda g, ans, x: mul(g, rsqrt(sub(1, mul(x, x)))), "chlo.asin")
acos_p, acos = _math("acos", np.arccos,
                     lambda g, ans, x: neg(mul(g, rsqrt(sub(1, mul(x, x))))), "chlo.acos")
atan_p, atan = _math("atan", np.arctan, lambda g, ans, x: div(g, add(1, mul(x, x))), "chlo.atan")
sinh_p, sinh = _math("sinh", np.sinh, lambda g, ans, x: mul(g, cosh(x)), "chlo.sinh")
cosh_p, cosh = _math("cosh", np.cosh, lambda g, ans, x: mul(g, sinh(x)), "chlo.cosh")
asinh_p, asinh = _math("asinh", np.arcsinh,
                       lambda g, ans, x: mul(g, rsqrt(add(mul(x, x), 1))), "chlo.asinh")
acosh_p, acosh = _math("acosh", np.arccosh,
                       lambda g, ans, x: mul(g, mul(rsqrt(sub(x, 1.0)), rsqrt(add(x, 1.0)))),
                       "chlo.acosh")
atanh_p, atanh = _math("atanh", np.arctanh,
                       lambda g, ans, x: div(g, sub(1, mul(x, x))), "chlo.atanh")
sqrt_p, sqrt = _op(ElementwiseOp(
    "sqrt", 1, np.sqrt, INEXACT, warn_ok=True, jvp=(lambda g, ans, x: div(g, mul(ans, 2)),),
    intrinsic="sqrt", libm="sqrt", stablehlo="stablehlo.sqrt", transcendental=True))
rsqrt_p, rsqrt = _op(ElementwiseOp(
    "rsqrt", 1, _rsqrt, INEXACT, warn_ok=True,
    jvp=(lambda g, ans, x: mul(g, mul(div(ans, x), -0.5)),), intrinsic="rsqrt",
    c={"f": "(({ct})1 / sqrt{f}({0}))"}, stablehlo="stablehlo.rsqrt", transcendental=True))
cbrt_p, cbrt = _op(ElementwiseOp(
    "cbrt", 1, np.cbrt, (FLOAT,), jvp=(lambda g, ans, x: div(g, mul(mul(ans, ans), 3)),),
    intrinsic="cbrt", libm="cbrt", vecmath=True, stablehlo="stablehlo.cbrt", transcendental=True))
abs_p, abs = _op(ElementwiseOp(
    "abs", 1, np.abs, NUMERIC, out_dtype=_real, jvp=(_abs_jvp,), intrinsic="abs",
    libm="fabs", c={"iub": "(({ct})({0} < 0 ? -{0} : {0}))"}, cpu_v16="plait_absf_v16({0})"))
not_p, bitwise_not = _op(ElementwiseOp(
    "not", 1, np.invert, INTEGRAL, jvp=ZERO, intrinsic="not",
    c={"b": "(!{0})", "iu": "(({ct})~{0})"}, stablehlo="stablehlo.not"))
# complex cotangents pair with tangents by Re(ct * t) (no conjugation), see RULES.md
real_p, real = _op(ElementwiseOp(
    "real", 1, lambda x: np.real(x).copy(), (COMPLEX,), out_dtype=_real, linear=True,
    transpose=lambda ct, x: [complex(ct, zeros(get_aval(ct)))], stablehlo="stablehlo.real"))
imag_p, imag = _op(ElementwiseOp(
    "imag", 1, lambda x: np.imag(x).copy(), (COMPLEX,), out_dtype=_real, linear=True,
    transpose=lambda ct, x: [complex(zeros(get_aval(ct)), neg(ct))],
    stablehlo="stablehlo.imag"))
conj_p, conj = _op(ElementwiseOp(
    "conj", 1, np.conjugate, (COMPLEX,), linear=True, transpose=lambda ct, x: [conj(ct)]))
population_count_p, population_count = _op(ElementwiseOp(
    # XLA semantics: bits of the two's complement pattern
    "population_count", 1,
    lambda x: np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(x.dtype), (INT, UINT),
    jvp=ZERO, stablehlo="stablehlo.popcnt"))

# --- binary: one block per op -----------------------------------------------------
add_p, add = _op(ElementwiseOp(
    "add", 2, np.add, NUMERIC, jvp=(lambda g, ans, x, y: g, lambda g, ans, x, y: g),
    transpose=_add_transpose, intrinsic="add", c=_c_arith("+", "|"), cpu_v16="({0} + {1})",
    stablehlo="stablehlo.add"))
sub_p, sub = _op(ElementwiseOp(
    "sub", 2, np.subtract, NUMERIC, jvp=(lambda g, ans, x, y: g, lambda g, ans, x, y: neg(g)),
    transpose=_sub_transpose, intrinsic="sub", c=_c_arith("-", "^"), cpu_v16="({0} - {1})",
    stablehlo="stablehlo.subtract"))
mul_p, mul = _op(ElementwiseOp(
    "mul", 2, np.multiply, NUMERIC,
    jvp=(lambda g, ans, x, y: mul(g, y), lambda g, ans, x, y: mul(x, g)),
    transpose=_mul_transpose, intrinsic="mul", c=_c_arith("*", "&"), cpu_v16="({0} * {1})",
    stablehlo="stablehlo.multiply"))
div_p, div = _op(ElementwiseOp(
    "div", 2, _trunc_div, NUMERIC,
    jvp=(lambda g, ans, x, y: div(g, y), lambda g, ans, x, y: neg(mul(g, div(ans, y)))),
    transpose=lambda ct, x, y: [div(ct, y), None], intrinsic="div",
    c={"f": "({0} / {1})", "ub": "(({ct})({1} == 0 ? 0 : {0} / {1}))",
       "i": "(({ct})({1} == 0 ? 0 : {1} == -1 ? ({ct})(0 - ({0})) : {0} / {1}))"},
    cpu_v16="({0} / {1})"))
rem_p, rem = _op(ElementwiseOp(
    "rem", 2, _rem, (INT, UINT, FLOAT),
    jvp=(lambda g, ans, x, y: g, lambda g, ans, x, y: neg(mul(g, _trunc(div(x, y))))),
    intrinsic="rem", libm="fmod", c={"ub": "(({ct})({1} == 0 ? 0 : {0} % {1}))",
                                     "i": "(({ct})({1} == 0 || {1} == -1 ? 0 : {0} % {1}))"}))
pow_p, pow = _op(ElementwiseOp(
    "pow", 2, _pow, INEXACT, warn_ok=True,
    jvp=(lambda g, ans, x, y: mul(g, mul(y, pow(x, sub(y, 1.0)))), _pow_jvp_y),
    intrinsic="pow", libm="pow", vecmath=True, stablehlo="stablehlo.power", transcendental=True,
    cpu_c={"f": "plait_pow{f}({0}, {1})"}, cpu_helper=(_vecmath_c.POW_C,)))
max_p, max = _op(ElementwiseOp(
    "max", 2, np.maximum, ALL, jvp=(lambda g, ans, x, y: mul(g, _choose_mask(x, y, gt)),
                                    lambda g, ans, x, y: mul(g, _choose_mask(y, x, gt))),
    intrinsic="max", c=_c_extremum("max", ">="), cpu_v16="plait_maxf_v16({0}, {1})"))
min_p, min = _op(ElementwiseOp(
    "min", 2, np.minimum, ALL, jvp=(lambda g, ans, x, y: mul(g, _choose_mask(x, y, lt)),
                                    lambda g, ans, x, y: mul(g, _choose_mask(y, x, lt))),
    intrinsic="min", c=_c_extremum("min", "<="), cpu_v16="plait_minf_v16({0}, {1})"))
atan2_p, atan2 = _op(ElementwiseOp(
    "atan2", 2, np.arctan2, (FLOAT,),
    jvp=(lambda g, ans, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
         lambda g, ans, x, y: neg(mul(g, div(x, add(mul(x, x), mul(y, y)))))),
    intrinsic="atan2", libm="atan2", vecmath=True, stablehlo="stablehlo.atan2",
    transcendental=True))
nextafter_p, nextafter = _op(ElementwiseOp(
    "nextafter", 2, np.nextafter, (FLOAT,), jvp=ZERO, intrinsic="nextafter",
    libm="nextafter", stablehlo="chlo.next_after"))
copysign_p, copysign = _op(ElementwiseOp(
    # the magnitude of x with the sign BIT of y (so -0.0 and a NaN's sign count)
    "copysign", 2, np.copysign, (FLOAT,),
    jvp=(lambda g, ans, x, y: mul(g, mul(copysign(1.0, x), copysign(1.0, y))), None),
    intrinsic="copysign", libm="copysign"))
logaddexp_p, logaddexp = _op(ElementwiseOp(
    # log(exp(x) + exp(y)) without overflow, NumPy's algorithm: equal operands (also equal
    # infinities) give x + log(2); otherwise hi + log1p(exp(lo - hi)); a NaN propagates
    "logaddexp", 2, np.logaddexp, (FLOAT,), warn_ok=True,
    jvp=(lambda g, ans, x, y: mul(g, _logaddexp_weight(x, y)),
         lambda g, ans, x, y: mul(g, _logaddexp_weight(y, x))),
    intrinsic="logaddexp", c={"f": "plait_logaddexp{f}({0}, {1})"},
    c_helper=_LOGADDEXP_C, composite=_logaddexp_composite, transcendental=True))
and_p, bitwise_and = _bitwise("and", np.bitwise_and, "&")
or_p, bitwise_or = _bitwise("or", np.bitwise_or, "|")
xor_p, bitwise_xor = _bitwise("xor", np.bitwise_xor, "^")
shift_left_p, shift_left = _op(ElementwiseOp(
    "shift_left", 2, _shift_left, (INT, UINT), jvp=ZERO, intrinsic="shl",
    c={"iub": "(({ct})(({1}) < 0 || ({1}) >= {bits} ? 0 : (({ct})((uint64_t){0} << {1}))))"},
    stablehlo="stablehlo.shift_left"))
shift_right_arithmetic_p, shift_right_arithmetic = _op(ElementwiseOp(
    "shift_right_arithmetic", 2, _shift_right_arith, (INT, UINT), jvp=ZERO, intrinsic="shr",
    c={"i": "(({ct})(({1}) < 0 || ({1}) >= {bits} ? ({0} < 0 ? -1 : 0) : {0} >> {1}))",
       "ub": "(({ct})(({1}) < 0 || ({1}) >= {bits} ? 0 : {0} >> {1}))"},
    stablehlo="stablehlo.shift_right_arithmetic"))
shift_right_logical_p, shift_right_logical = _op(ElementwiseOp(
    # natively: "shr" on the operands' unsigned view (plait/tile/rules.py)
    "shift_right_logical", 2, _shift_right_logical, (INT, UINT), jvp=ZERO,
    stablehlo="stablehlo.shift_right_logical"))
eq_p, eq = _comparison("eq", np.equal, ALL, "==", "EQ")
ne_p, ne = _comparison("ne", np.not_equal, ALL, "!=", "NE")
lt_p, lt = _comparison("lt", np.less, _ORDERED, "<", "LT")
le_p, le = _comparison("le", np.less_equal, _ORDERED, "<=", "LE")
gt_p, gt = _comparison("gt", np.greater, _ORDERED, ">", "GT")
ge_p, ge = _comparison("ge", np.greater_equal, _ORDERED, ">=", "GE")
def _complex_impl(x, y):
    """``x + i y`` built part by part: the arithmetic spelling ``x + 1j * y`` loses a
    negative zero imaginary part and turns an infinite one into a NaN real part."""
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), _complex_dtype(x.dtype))
    out.real = x
    out.imag = y
    return out


complex_p, complex = _op(ElementwiseOp(
    "complex", 2, _complex_impl, (FLOAT,),
    out_dtype=_complex_dtype, linear=True,
    transpose=lambda ct, x, y: [real(ct) if is_undefined_primal(x) else None,
                                imag(neg(ct)) if is_undefined_primal(y) else None]))


# --- integer_pow (a static exponent) ---------------------------------------------
def _integer_pow_abstract(x: ShapedArray, *, y: int) -> ShapedArray:
    check_dtype("integer_pow", x, NUMERIC)
    if y < 0 and dtypes.is_integer(x.dtype):
        raise PlaitTypeError("integer_pow: integers to negative integer powers are not allowed")
    return x


def _integer_pow_impl(x, *, y):
    with np.errstate(all="ignore"):
        if y == 2:
            return np.multiply(x, x)
        return np.power(x, x.dtype.type(y)) if x.dtype.kind in "iu" else np.power(x, y).astype(x.dtype)


integer_pow_p = standard_primitive("integer_pow", _integer_pow_abstract, _integer_pow_impl)


def _integer_pow_jvp(g, ans, x, *, y):
    if y == 0:
        return Zero(tangent_aval(get_aval(x)))
    return mul(g, mul(integer_pow(x, y - 1), y)) if y != 1 else g


defjvp(integer_pow_p, _integer_pow_jvp)
defvectorized(integer_pow_p)


# --- select, clamp, convert ---------------------------------------------------
def _select_abstract(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        raise PlaitTypeError(f"select: predicate must be bool, got {pred.dtype}")
    check_same_dtypes("select", (on_true, on_false))
    check_same_shapes("select", (pred, on_true, on_false))
    return ShapedArray(on_true.shape, on_true.dtype, on_true.weak_type and on_false.weak_type)


select_p = standard_primitive("select", _select_abstract, lambda p, t, f: np.where(p, t, f))


def _select_jvp(primals, tangents):
    pred, on_true, on_false = primals
    _, g_true, g_false = tangents
    ans = select_p.bind(pred, on_true, on_false)
    if isinstance(g_true, Zero) and isinstance(g_false, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, select_p.bind(pred, instantiate(g_true), instantiate(g_false))


def _select_transpose(ct, pred, on_true, on_false):
    z = zeros(get_aval(ct))
    return [None,
            select_p.bind(pred, ct, z) if is_undefined_primal(on_true) else None,
            select_p.bind(pred, z, ct) if is_undefined_primal(on_false) else None]


select_p.def_rule("jvp", _select_jvp)
select_p.def_rule("transpose", _select_transpose)
defbroadcasting(select_p)


def _clamp_abstract(lo, x, hi):
    check_same_dtypes("clamp", (lo, x, hi))
    check_dtype("clamp", x, (INT, UINT, FLOAT, BOOL))
    for b, nm in ((lo, "min"), (hi, "max")):
        if b.shape not in ((), x.shape):
            raise PlaitTypeError(f"clamp: {nm} must be a scalar or have the operand's shape "
                                 f"{x.shape}, got {b.shape}")
    return x


clamp_p = standard_primitive("clamp", _clamp_abstract,
                             lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))


def _like_operand(v, x):
    """Broadcast a scalar bound (or its tangent) to the operand's shape."""
    a, b = get_aval(x), get_aval(v)
    if b.shape == a.shape:
        return v
    from plait.lax.shape_ops import broadcast_in_dim
    return broadcast_in_dim(v, a.shape, ())


def _clamp_zeros(x):
    return zeros(get_aval(x).strip_weak())


defjvp(clamp_p,
       lambda g, ans, lo, x, hi: select(gt(_like_operand(lo, x), x), _like_operand(g, x),
                                        _clamp_zeros(x)),
       lambda g, ans, lo, x, hi: select(bitwise_and(gt(x, _like_operand(lo, x)),
                                                    lt(x, _like_operand(hi, x))),
                                        g, _clamp_zeros(x)),
       lambda g, ans, lo, x, hi: select(lt(_like_operand(hi, x), x), _like_operand(g, x),
                                        _clamp_zeros(x)))


def _clamp_batch(vals, dims):
    """Unbatched scalar bounds stay scalars; everything else shares the batch dim."""
    (lo, x, hi), (lo_d, x_d, hi_d) = vals, dims
    scalar_ok = [d is None and get_aval(v).shape == () for v, d in ((lo, lo_d), (hi, hi_d))]
    if x_d is not None and all(scalar_ok):
        return clamp_p.bind(lo, x, hi), x_d
    (lo, x, hi), out_dim = broadcast_batched(vals, dims)
    return clamp_p.bind(lo, x, hi), out_dim


clamp_p.def_rule("batch", _clamp_batch)


def _convert_abstract(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = standard_primitive("convert_element_type", _convert_abstract,
                                            _convert_impl)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (g,) = primals, tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_aval = tangent_aval(get_aval(ans))
    if isinstance(g, Zero) or not differentiable(out_aval):
        return ans, Zero(out_aval)
    return ans, convert_element_type(g, new_dtype)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    return [convert_element_type(ct, aval_of_operand(x).dtype)]


def _convert_is_copy(x, *, new_dtype, weak_type) -> bool:
    """A conversion to the dtype and weakness its operand already has is a copy (the
    lazy runtime's differentiation markers are such conversions)."""
    return x.dtype == new_dtype and x.weak_type == weak_type


convert_element_type_p.def_rule("jvp", _convert_jvp)
convert_element_type_p.def_rule("transpose", _convert_transpose)
convert_element_type_p.def_rule("is_copy", _convert_is_copy)
defvectorized(convert_element_type_p)


# --- stop_gradient ---------------------------------------------------------------------
stop_gradient_p = standard_primitive("stop_gradient", lambda x: x, lambda x: x.copy())
defjvp_zero(stop_gradient_p)
defvectorized(stop_gradient_p)


# --- Python-facing functions of the other ops -------------------------------------
def integer_pow(x, y: int):
    """``x ** y`` for a static integer ``y``."""
    return integer_pow_p.bind(as_operand(x), y=int(y))


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (equal shapes, equal dtypes)."""
    on_true, on_false = _scalar_like(on_true, on_false), _scalar_like(on_false, on_true)
    return select_p.bind(pred, as_operand(on_true), as_operand(on_false))


def clamp(lo, x, hi):
    """``min(max(x, lo), hi)``; ``lo``/``hi`` may be scalars."""
    dt = get_aval(x).dtype
    return clamp_p.bind(as_operand(lo, dt), x, as_operand(hi, dt))


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """Cast ``x`` to ``new_dtype`` (a no-op when it already has that dtype and weakness)."""
    new_dtype = dtypes.canonical_dtype(new_dtype)
    x = as_operand(x)
    a = get_aval(x)
    if a.dtype == new_dtype and a.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def stop_gradient(x):
    """``x`` with zero derivative: differentiation treats it as a constant.

    Works on pytrees; integer and boolean leaves are returned unchanged.
    """
    from plait.core.pytree import tree_map

    def leaf(v):
        v = as_operand(v)
        return stop_gradient_p.bind(v) if differentiable(get_aval(v)) else v
    return tree_map(leaf, x)
