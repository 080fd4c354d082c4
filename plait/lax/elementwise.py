"""Elementwise primitives: arithmetic, math functions, comparisons, bitwise ops,
``select``, ``clamp`` and ``convert_element_type``.

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
from plait.lax._base import (standard_unop, standard_binop, standard_primitive, to_bool,
                             check_dtype, check_same_dtypes, check_same_shapes,
                             as_operand, ALL, NUMERIC, INEXACT, INTEGRAL, FLOAT, INT, UINT,
                             BOOL, COMPLEX)
from plait.lax._ad_helpers import (Zero, defjvp, defjvp_zero, deflinear, full, zeros,
                                   instantiate, tangent_aval,
                                   is_undefined_primal, aval_of_operand, differentiable)
from plait.lax._batch_helpers import defvectorized, defbroadcasting, broadcast_batched
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


def _convert_impl(x, *, new_dtype, weak_type):
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = x.real
    with np.errstate(all="ignore"):
        return x.astype(new_dtype)


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


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


# --- unary -------------------------------------------------------------------
neg_p = standard_unop("neg", NUMERIC, np.negative)
sign_p = standard_unop("sign", NUMERIC, _sign)
floor_p = standard_unop("floor", (FLOAT,), np.floor)
ceil_p = standard_unop("ceil", (FLOAT,), np.ceil)
round_p = standard_unop("round", (FLOAT,), np.rint)   # half to even, as NumPy
is_finite_p = standard_unop("is_finite", (FLOAT,), np.isfinite, out_dtype=to_bool)
exp_p = standard_unop("exp", INEXACT, np.exp, warn_ok=True)
exp2_p = standard_unop("exp2", INEXACT, np.exp2, warn_ok=True)
log_p = standard_unop("log", INEXACT, np.log, warn_ok=True)
log1p_p = standard_unop("log1p", INEXACT, np.log1p, warn_ok=True)
expm1_p = standard_unop("expm1", INEXACT, _expm1, warn_ok=True)
tanh_p = standard_unop("tanh", INEXACT, np.tanh)
logistic_p = standard_unop("logistic", INEXACT, _logistic, warn_ok=True)
sin_p = standard_unop("sin", INEXACT, np.sin, warn_ok=True)
cos_p = standard_unop("cos", INEXACT, np.cos, warn_ok=True)
tan_p = standard_unop("tan", INEXACT, np.tan, warn_ok=True)
asin_p = standard_unop("asin", INEXACT, np.arcsin, warn_ok=True)
acos_p = standard_unop("acos", INEXACT, np.arccos, warn_ok=True)
atan_p = standard_unop("atan", INEXACT, np.arctan, warn_ok=True)
sinh_p = standard_unop("sinh", INEXACT, np.sinh, warn_ok=True)
cosh_p = standard_unop("cosh", INEXACT, np.cosh, warn_ok=True)
asinh_p = standard_unop("asinh", INEXACT, np.arcsinh, warn_ok=True)
acosh_p = standard_unop("acosh", INEXACT, np.arccosh, warn_ok=True)
atanh_p = standard_unop("atanh", INEXACT, np.arctanh, warn_ok=True)
sqrt_p = standard_unop("sqrt", INEXACT, np.sqrt, warn_ok=True)
rsqrt_p = standard_unop("rsqrt", INEXACT, _rsqrt, warn_ok=True)
cbrt_p = standard_unop("cbrt", (FLOAT,), np.cbrt)
abs_p = standard_unop("abs", NUMERIC, np.abs, out_dtype=_real)
not_p = standard_unop("not", INTEGRAL, np.invert)
real_p = standard_unop("real", (COMPLEX,), lambda x: np.real(x).copy(), out_dtype=_real)
imag_p = standard_unop("imag", (COMPLEX,), lambda x: np.imag(x).copy(), out_dtype=_real)
conj_p = standard_unop("conj", (COMPLEX,), np.conjugate)
population_count_p = standard_unop(   # XLA semantics: bits of the two's complement pattern
    "population_count", (INT, UINT),
    lambda x: np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(x.dtype))


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


# unary autodiff rules: ``fn(g, ans, x)`` is the tangent contributed by ``g``
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p):
    defjvp_zero(_p)
deflinear(neg_p, lambda ct, x: [neg(ct)])
defjvp(exp_p, lambda g, ans, x: mul(g, ans))
defjvp(exp2_p, lambda g, ans, x: mul(g, mul(ans, float(np.log(2)))))
defjvp(log_p, lambda g, ans, x: div(g, x))
defjvp(log1p_p, lambda g, ans, x: div(g, add(x, 1.0)))
defjvp(expm1_p, lambda g, ans, x: mul(g, add(ans, 1)))
defjvp(tanh_p, lambda g, ans, x: mul(g, sub(1, mul(ans, ans))))
defjvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(1, ans))))
defjvp(sin_p, lambda g, ans, x: mul(g, cos(x)))
defjvp(cos_p, lambda g, ans, x: neg(mul(g, sin(x))))
defjvp(tan_p, lambda g, ans, x: mul(g, add(1, mul(ans, ans))))
defjvp(asin_p, lambda g, ans, x: mul(g, rsqrt(sub(1, mul(x, x)))))
defjvp(acos_p, lambda g, ans, x: neg(mul(g, rsqrt(sub(1, mul(x, x))))))
defjvp(atan_p, lambda g, ans, x: div(g, add(1, mul(x, x))))
defjvp(sinh_p, lambda g, ans, x: mul(g, cosh(x)))
defjvp(cosh_p, lambda g, ans, x: mul(g, sinh(x)))
defjvp(asinh_p, lambda g, ans, x: mul(g, rsqrt(add(mul(x, x), 1))))
defjvp(acosh_p, lambda g, ans, x: mul(g, mul(rsqrt(sub(x, 1.0)), rsqrt(add(x, 1.0)))))
defjvp(atanh_p, lambda g, ans, x: div(g, sub(1, mul(x, x))))
defjvp(sqrt_p, lambda g, ans, x: div(g, mul(ans, 2)))
defjvp(rsqrt_p, lambda g, ans, x: mul(g, mul(div(ans, x), -0.5)))
defjvp(cbrt_p, lambda g, ans, x: div(g, mul(mul(ans, ans), 3)))


def _abs_jvp(g, ans, x):
    if not dtypes.is_complex(get_aval(x).dtype):
        return mul(g, sign(x))
    # d|z| = Re(conj(z) dz) / |z|, taken as 0 at z = 0
    safe = select(eq(ans, 0), full(get_aval(ans).shape, 1, get_aval(ans).dtype), ans)
    return div(real(mul(conj(x), g)), safe)


defjvp(abs_p, _abs_jvp)
# complex cotangents pair with tangents by Re(ct * t) (no conjugation), see RULES.md
deflinear(real_p, lambda ct, x: [complex(ct, zeros(get_aval(ct)))])
deflinear(imag_p, lambda ct, x: [complex(zeros(get_aval(ct)), neg(ct))])
deflinear(conj_p, lambda ct, x: [conj(ct)])


def _integer_pow_jvp(g, ans, x, *, y):
    if y == 0:
        return Zero(tangent_aval(get_aval(x)))
    return mul(g, mul(integer_pow(x, y - 1), y)) if y != 1 else g


defjvp(integer_pow_p, _integer_pow_jvp)

# unary batch rules: the batch dimension passes through
for _p in (neg_p, sign_p, floor_p, ceil_p, round_p, is_finite_p, exp_p, exp2_p, log_p, log1p_p,
           expm1_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p, acos_p, atan_p, sinh_p,
           cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p, cbrt_p, abs_p, not_p, real_p,
           imag_p, conj_p, population_count_p, integer_pow_p):
    defvectorized(_p)

# --- binary ------------------------------------------------------------------
add_p = standard_binop("add", NUMERIC, np.add, warn_ok=False)
sub_p = standard_binop("sub", NUMERIC, np.subtract)
mul_p = standard_binop("mul", NUMERIC, np.multiply)
div_p = standard_binop("div", NUMERIC, _trunc_div)
rem_p = standard_binop("rem", (INT, UINT, FLOAT), _rem)
pow_p = standard_binop("pow", INEXACT, np.power, warn_ok=True)
max_p = standard_binop("max", ALL, np.maximum)
min_p = standard_binop("min", ALL, np.minimum)
atan2_p = standard_binop("atan2", (FLOAT,), np.arctan2)
nextafter_p = standard_binop("nextafter", (FLOAT,), np.nextafter)
# the magnitude of x with the sign BIT of y (so -0.0 and a NaN's sign count)
copysign_p = standard_binop("copysign", (FLOAT,), np.copysign)
and_p = standard_binop("and", INTEGRAL, np.bitwise_and)
or_p = standard_binop("or", INTEGRAL, np.bitwise_or)
xor_p = standard_binop("xor", INTEGRAL, np.bitwise_xor)


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


shift_left_p = standard_binop("shift_left", (INT, UINT), _shift_left)
shift_right_arithmetic_p = standard_binop("shift_right_arithmetic", (INT, UINT), _shift_right_arith)
shift_right_logical_p = standard_binop("shift_right_logical", (INT, UINT), _shift_right_logical)

eq_p = standard_binop("eq", ALL, np.equal, out_dtype=to_bool)
ne_p = standard_binop("ne", ALL, np.not_equal, out_dtype=to_bool)
lt_p = standard_binop("lt", (BOOL, INT, UINT, FLOAT), np.less, out_dtype=to_bool)
le_p = standard_binop("le", (BOOL, INT, UINT, FLOAT), np.less_equal, out_dtype=to_bool)
gt_p = standard_binop("gt", (BOOL, INT, UINT, FLOAT), np.greater, out_dtype=to_bool)
ge_p = standard_binop("ge", (BOOL, INT, UINT, FLOAT), np.greater_equal, out_dtype=to_bool)


def _complex_dtype(dt):
    return dtypes.complex64 if dt in (dtypes.float16, dtypes.float32) else dtypes.complex128


complex_p = standard_binop("complex", (FLOAT,), lambda x, y: (x + 1j * y).astype(_complex_dtype(x.dtype)),
                           out_dtype=_complex_dtype)


# binary autodiff rules
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


defjvp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
add_p.def_rule("transpose", _add_transpose)
defjvp(sub_p, lambda g, ans, x, y: g, lambda g, ans, x, y: neg(g))
sub_p.def_rule("transpose", _sub_transpose)
defjvp(mul_p, lambda g, ans, x, y: mul(g, y), lambda g, ans, x, y: mul(x, g))
mul_p.def_rule("transpose", _mul_transpose)
defjvp(div_p, lambda g, ans, x, y: div(g, y), lambda g, ans, x, y: neg(mul(g, div(ans, y))))
div_p.def_rule("transpose", lambda ct, x, y: [div(ct, y), None])
defjvp(rem_p, lambda g, ans, x, y: g, lambda g, ans, x, y: neg(mul(g, _trunc(div(x, y)))))
defjvp(pow_p, lambda g, ans, x, y: mul(g, mul(y, pow(x, sub(y, 1.0)))), _pow_jvp_y)
defjvp(max_p, lambda g, ans, x, y: mul(g, _choose_mask(x, y, gt)),
       lambda g, ans, x, y: mul(g, _choose_mask(y, x, gt)))
defjvp(min_p, lambda g, ans, x, y: mul(g, _choose_mask(x, y, lt)),
       lambda g, ans, x, y: mul(g, _choose_mask(y, x, lt)))
defjvp(atan2_p, lambda g, ans, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
       lambda g, ans, x, y: neg(mul(g, div(x, add(mul(x, x), mul(y, y))))))
defjvp(copysign_p, lambda g, ans, x, y: mul(g, mul(copysign(1.0, x), copysign(1.0, y))),
       None)
for _p in (nextafter_p, and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p,
           shift_right_logical_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    defjvp_zero(_p)
deflinear(complex_p, lambda ct, x, y: [real(ct) if is_undefined_primal(x) else None,
                                       imag(neg(ct)) if is_undefined_primal(y) else None])

# binary batch rules: operands are aligned on one batch dimension
for _p in (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p,
           copysign_p, and_p,
           or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, eq_p,
           ne_p, lt_p, le_p, gt_p, ge_p, complex_p):
    defbroadcasting(_p)


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


# --- Python-facing functions -----------------------------------------------------
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


neg, sign, floor, ceil, round, is_finite = map(_unary, (neg_p, sign_p, floor_p, ceil_p, round_p, is_finite_p))
exp, exp2, log, log1p, expm1, tanh, logistic = map(_unary, (exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p))
sin, cos, tan, asin, acos, atan = map(_unary, (sin_p, cos_p, tan_p, asin_p, acos_p, atan_p))
sinh, cosh, asinh, acosh, atanh = map(_unary, (sinh_p, cosh_p, asinh_p, acosh_p, atanh_p))
sqrt, rsqrt, cbrt, abs, bitwise_not = map(_unary, (sqrt_p, rsqrt_p, cbrt_p, abs_p, not_p))
real, imag, conj, population_count = map(_unary, (real_p, imag_p, conj_p, population_count_p))
add, sub, mul, div, rem, pow, max, min, atan2, nextafter, copysign = map(
    _binary, (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p,
              copysign_p))
bitwise_and, bitwise_or, bitwise_xor = map(_binary, (and_p, or_p, xor_p))
shift_left, shift_right_arithmetic, shift_right_logical = map(
    _binary, (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p))
eq, ne, lt, le, gt, ge = map(_binary, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))
complex = _binary(complex_p)


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
