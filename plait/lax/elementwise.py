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
from plait.core import trace as _trace
from plait.core.trace import get_aval, Tracer
from plait.lax._base import (standard_unop, standard_binop, standard_primitive, to_bool,
                             check_dtype, check_same_dtypes, check_same_shapes,
                             as_operand, ALL, NUMERIC, INEXACT, INTEGRAL, FLOAT, INT, UINT,
                             BOOL, COMPLEX)
from plait.errors import PlaitTypeError

_real = dtypes.real_dtype
_PY_SCALARS = (bool, int, float, builtins.complex)


def _WRAP(value, weak):
    return _trace._WRAP(value, weak)


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
expm1_p = standard_unop("expm1", INEXACT, np.expm1, warn_ok=True)
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
population_count_p = standard_unop("population_count", (INT, UINT), np.bitwise_count)


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


# --- select, clamp, convert ---------------------------------------------------
def _select_abstract(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        raise PlaitTypeError(f"select: predicate must be bool, got {pred.dtype}")
    check_same_dtypes("select", (on_true, on_false))
    check_same_shapes("select", (pred, on_true, on_false))
    return ShapedArray(on_true.shape, on_true.dtype, on_true.weak_type and on_false.weak_type)


select_p = standard_primitive("select", _select_abstract, lambda p, t, f: np.where(p, t, f))


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


def _convert_abstract(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = standard_primitive("convert_element_type", _convert_abstract,
                                            _convert_impl)


# --- Python-facing functions -----------------------------------------------------
def _scalar_like(x, other):
    """A Python scalar operand becomes a weak array of the other operand's dtype and shape."""
    if isinstance(x, _PY_SCALARS) and not isinstance(other, _PY_SCALARS):
        a = get_aval(other)
        if not isinstance(other, Tracer):      # eager: build the operand directly
            return _WRAP(np.full(a.shape, x, dtype=a.dtype), True)
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
add, sub, mul, div, rem, pow, max, min, atan2, nextafter = map(
    _binary, (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p, nextafter_p))
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
