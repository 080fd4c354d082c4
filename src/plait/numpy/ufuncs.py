"""NumPy ufuncs (and ufunc-like functions) composed from ``plait.lax`` primitives.

Type resolution uses NumPy's own ufunc loop tables on *dtypes only*
(``np.<ufunc>.resolve_dtypes``), so the result dtype of every function equals
NumPy's, including NEP 50 weak Python scalars (``int8_array + 1`` is int8,
``np.sin(int8_array)`` is float16). The arguments are then cast to the loop's
input dtypes, broadcast, and computed with lax. No NumPy function ever sees a
traced value.

Semantics notes: ``maximum``/``minimum`` propagate NaN (lax ``max``/``min`` do);
``signbit``/``copysign`` read the sign bit (the ``copysign`` primitive), so ``-0.0``
and a negative NaN (x86's ``0/0``) count as negative, as in NumPy. Deliberately unlike
NumPy, floor division with an infinite operand is ``floor(x1 / x2)`` as the Array API
standard prefers (``inf // 2`` is ``inf``, not ``nan``; ``-1 // inf`` is ``-0.0``, not
``-1.0``); ``divmod``'s quotient agrees.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Callable

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.array_methods import ArrayMethods
from plait.core.trace import Tracer, get_aval, concrete_value, find_top_trace, full_raise
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lru import LRUCache
from plait.numpy._promote import (arg, asarray_strong, is_python_scalar, cast, broadcast_shapes,
                                  broadcast_to_shape, scalar_array, promote_args, wrap,
                                  static_int)

_RESOLVED = LRUCache()   # (ufunc, argument dtypes or weak Python types) -> loop dtypes
_WEAK_KEY = {"b": dtypes.bool_, "i": int, "u": int, "f": float, "c": complex}
_DEFAULT = {bool: dtypes.bool_, int: dtypes.int64, float: dtypes.float64,
            complex: dtypes.complex128}


def _key(v, all_weak: bool):
    """The resolve_dtypes key of one argument: a dtype, or a Python type if weak."""
    if is_python_scalar(v):
        t = type(v)
        return _DEFAULT[t] if all_weak or t is bool else t
    a = get_aval(v)
    if a.weak_type and not all_weak:
        return _WEAK_KEY[a.dtype.kind] if a.dtype.kind != "b" else dtypes.bool_
    return a.dtype


def resolve(uf: np.ufunc, keys: tuple) -> tuple:
    """NumPy's loop dtypes ``(in..., out...)`` for ``uf`` on ``keys`` (cached)."""
    k = (uf, keys)
    r = _RESOLVED.get(k)
    if r is None:
        try:
            r = uf.resolve_dtypes(keys + (None,) * uf.nout)
        except TypeError as e:
            raise PlaitTypeError(f"{uf.__name__}: {e}") from None
        for d in r:
            dtypes.canonical_dtype(d)
        _RESOLVED[k] = r
    return r


def _is_weak(v) -> bool:
    return is_python_scalar(v) or get_aval(v).weak_type


_PLANS = LRUCache()   # (ufunc, per-argument aval or Python scalar type) -> _Plan


class _Plan:
    """How a signature of arrays and Python scalars maps to NumPy's loop: per argument
    ``None`` (use as is), the broadcast dimensions of an array of the loop's dtype
    that needs broadcasting, or the dtype a scalar is filled with."""

    __slots__ = ("fills", "shape", "weak", "out_dt")

    def __init__(self, fills, shape, weak, out_dt):
        self.fills, self.shape, self.weak, self.out_dt = fills, shape, weak, out_dt


def _signature(args) -> tuple | None:
    """Per argument its aval (arrays and tracers) or Python scalar type; None for
    anything else (lists, NumPy scalars), which takes the general path."""
    sig = []
    for a in args:
        t = type(a)
        if t in _SCALAR_TYPES:
            sig.append(t)
        elif isinstance(a, ArrayMethods):
            sig.append(a.aval)
        else:
            return None
    return tuple(sig)


_SCALAR_TYPES = (bool, int, float, complex)


def _fill(x, dt: np.dtype, weak: bool, shape: tuple, args):
    """The Python scalar ``x`` as an operand of ``shape``: a filled array when every
    operand is concrete, else a 0-d array raised into the operands' interpreter and
    broadcast there (so a recording interpreter sees one scalar, not a buffer)."""
    for a in args:
        if isinstance(a, Tracer):
            break
    else:
        return scalar_array(x, dt, weak, shape)
    s = full_raise(find_top_trace(args), scalar_array(x, dt, weak))
    return lax.broadcast_in_dim(s, shape, ()) if shape else s


def apply_ufunc(uf: np.ufunc, impl: Callable, name: str, *args):
    """Resolve loop dtypes like NumPy, cast and broadcast ``args``, run ``impl``."""
    sig = _signature(args) if uf.nout == 1 else None
    plan = _PLANS.get((uf, sig)) if sig is not None else None
    if plan is not None:   # fast path for a signature whose loop is known
        ops = [a if f is None else
               lax.broadcast_in_dim(a, plan.shape, f) if f.__class__ is tuple else
               _fill(a, f, plan.weak, plan.shape, args)
               for a, f in zip(args, plan.fills)]
        out = impl(*ops)
        return out if get_aval(out).dtype == plan.out_dt else cast(out, plan.out_dt, plan.weak)
    vals = [arg(a, name) for a in args]
    all_weak = all(map(_is_weak, vals))
    loop = resolve(uf, tuple(_key(v, all_weak) for v in vals))
    nin = len(vals)
    shape = broadcast_shapes(*[() if is_python_scalar(v) else get_aval(v).shape for v in vals])
    if sig is not None:
        fills = []
        for v, dt in zip(vals, loop[:nin]):
            if is_python_scalar(v):
                fills.append(dt)
            else:
                a = get_aval(v)
                if (a.dtype, a.weak_type) != (dt, all_weak):
                    fills.append(False)
                elif a.shape == shape:
                    fills.append(None)
                else:
                    fills.append(tuple(range(len(shape) - a.ndim, len(shape))))
        if False not in fills:
            _PLANS[(uf, sig)] = _Plan(tuple(fills), shape, all_weak, loop[nin])
    ops = [_fill(v, dt, all_weak, shape, vals) if is_python_scalar(v)
           else broadcast_to_shape(cast(v, dt, all_weak), shape)
           for v, dt in zip(vals, loop[:nin])]
    outs = impl(*ops)
    if uf.nout == 1:
        return cast(outs, loop[nin], all_weak)
    return tuple(cast(o, dt, all_weak) for o, dt in zip(outs, loop[nin:]))


def _def(uf: np.ufunc, impl: Callable, name: str | None = None, doc: str = "") -> Callable:
    name = name or uf.__name__
    if uf.nin == 1:
        def fn(x, /):
            return apply_ufunc(uf, impl, name, x)
    else:
        def fn(x1, x2, /):
            return apply_ufunc(uf, impl, name, x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``numpy.{uf.__name__}`` (NumPy 2 dtype rules)."
    return fn


# --- small helpers on equal-shape, equal-dtype operands ---------------------------------
def _kind(x) -> str:
    return get_aval(x).dtype.kind


def _full(x, v):
    """An array of ``x``'s shape and dtype filled with the Python scalar ``v``."""
    a = get_aval(x)
    s = scalar_array(v, a.dtype, a.weak_type)
    return lax.broadcast_in_dim(s, a.shape, ()) if a.shape else s


def _select(c, a, b):
    return lax.select(c, a, b)


def _isnan(x):
    k = _kind(x)
    if k == "c":
        return lax.bitwise_or(_isnan(lax.real(x)), _isnan(lax.imag(x)))
    return lax.ne(x, x)


def _isinf(x):
    k = _kind(x)
    if k == "c":
        return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
    if k != "f":
        return lax.ne(x, x)
    return lax.eq(lax.abs(x), math.inf)


def _isfinite(x):
    k = _kind(x)
    if k == "c":
        return lax.bitwise_and(_isfinite(lax.real(x)), _isfinite(lax.imag(x)))
    if k != "f":
        return lax.eq(x, x)
    return lax.is_finite(x)


def _signbit(x):
    if _kind(x) in "bu":
        return _full(x, False) if _kind(x) == "b" else lax.ne(x, x)
    if _kind(x) == "f":   # the sign bit itself: -0.0 and -nan count as negative
        return lax.lt(lax.copysign(_full(x, 1), x), 0)
    return lax.lt(x, 0)


def _copysign(x, y):
    return lax.copysign(x, y)


def _trunc(x):
    if _kind(x) != "f":
        return x
    return _select(lax.lt(x, 0), lax.ceil(x), lax.floor(x))


def _identity(x):
    return x


def _int_only_identity(fn):
    """Rounding functions: identity on integer/bool loops, ``fn`` on floats."""
    def impl(x):
        return fn(x) if _kind(x) in "fc" else x
    return impl


# --- arithmetic ---------------------------------------------------------------------------
def _add(x, y):
    return lax.bitwise_or(x, y) if _kind(x) == "b" else lax.add(x, y)


def _mul(x, y):
    return lax.bitwise_and(x, y) if _kind(x) == "b" else lax.mul(x, y)


def _int_floordiv_mod(x, y):
    q = lax.div(x, y)
    r = lax.rem(x, y)
    if _kind(x) == "u":
        return q, r
    fix = lax.bitwise_and(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(y, 0)))
    return _select(fix, lax.sub(q, 1), q), _select(fix, lax.add(r, y), r)


def _float_floordiv_mod(a, b):
    """NumPy's ``npy_divmod``: floor quotient and remainder with the divisor's sign.

    One deliberate difference: when an operand is infinite the quotient is
    ``floor(a / b)``, as the Array API standard prefers (``inf // 2`` is ``inf``,
    ``-1 // inf`` is ``-0.0``); NumPy gives ``nan`` and ``-1.0`` there. float16 is
    computed in float32 and rounded once, as NumPy's loop does: in float16 the rounded
    ``a - mod`` and quotient put ``-4.5078125 // 0.004631`` at -975, not -974."""
    if get_aval(a).dtype == np.float16:
        f32 = [lax.convert_element_type(v, np.float32) for v in (a, b)]
        return tuple(lax.convert_element_type(v, np.float16) for v in _float_floordiv_mod(*f32))
    mod = lax.rem(a, b)
    div = lax.div(lax.sub(a, mod), b)
    nz = lax.ne(mod, 0)
    fix = lax.bitwise_and(nz, lax.ne(lax.lt(b, 0), lax.lt(mod, 0)))
    mod2 = _select(fix, lax.add(mod, b), _select(nz, mod, _copysign(_full(a, 0), b)))
    div = _select(fix, lax.sub(div, 1), div)
    fl = lax.floor(div)
    fl = _select(lax.gt(lax.sub(div, fl), 0.5), lax.add(fl, 1), fl)
    quot = lax.div(a, b)
    fdiv = _select(lax.ne(div, 0), fl, _copysign(_full(a, 0), quot))
    b0 = lax.eq(b, 0)
    fdiv = _select(lax.bitwise_or(_isinf(a), _isinf(b)), lax.floor(quot), fdiv)
    return _select(b0, quot, fdiv), _select(b0, mod, mod2)


def _divmod(x, y):
    if _kind(x) in "iu":
        return _int_floordiv_mod(x, y)
    return _float_floordiv_mod(x, y)


def _reciprocal(x):
    if _kind(x) in "iu":
        # NumPy computes 1.0 / x and converts back: the x86 conversion of inf gives
        # INT_MIN for int32/int64 and 0 for the other integer types (NumPy also warns
        # "divide by zero"; plait returns the same values without a warning)
        dt = get_aval(x).dtype
        fill = int(np.iinfo(dt).min) if dt.kind == "i" and dt.itemsize >= 4 else 0
        zero = lax.eq(x, 0)
        safe = _select(zero, _full(x, 1), x)
        return _select(zero, _full(x, fill), lax.div(_full(x, 1), safe))
    if _kind(x) == "c":
        return _complex_reciprocal(x)
    return lax.div(_full(x, 1), x)


def _complex_reciprocal(x):
    """NumPy's complex ``reciprocal``: ``r = b/a``, ``1 / (a + b r) - i r / (a + b r)``
    when ``|b| <= |a|``, else the mirror, each part divided by the denominator. A complex
    division scales by the denominator's reciprocal instead, and ``1 / (-1.5e-323+0j)``
    is then ``-inf+nanj`` (0 * inf) where ``reciprocal`` gives ``-inf-0j``. The branch
    not taken gets safe operands, so its zero cotangent never meets an infinity."""
    a, b = lax.real(x), lax.imag(x)
    t = lax.le(lax.abs(b), lax.abs(a))
    one, zero = _full(a, 1), _full(a, 0)
    a1, b1 = _select(t, a, one), _select(t, b, zero)          # |b| <= |a|
    a2, b2 = _select(t, zero, a), _select(t, one, b)          # |a| < |b| (or a NaN)
    r1 = lax.div(b1, a1)
    d1 = lax.add(a1, lax.mul(b1, r1))
    r2 = lax.div(a2, b2)
    d2 = lax.add(lax.mul(a2, r2), b2)
    re = _select(t, lax.div(one, d1), lax.div(r2, d2))
    im = _select(t, lax.neg(lax.div(r1, d1)), lax.neg(lax.div(one, d2)))
    return lax.complex(re, im)


def _concrete_or_none(v):
    if isinstance(v, Tracer):
        return None
    return concrete_value(v)


def _int_power(x, y):
    """Integer ``x ** y`` by binary exponentiation over the exponent's bits."""
    yc = _concrete_or_none(y)
    if yc is not None:
        if _kind(y) == "i" and (yc < 0).any() and get_aval(x).size:   # empty: NumPy returns
            raise PlaitValueError("Integers to negative integer powers are not allowed.")
        nbits = builtins.max(int(yc.max()).bit_length(), 1) if yc.size else 1
    else:
        nbits = get_aval(y).dtype.itemsize * 8
    acc, base, e = _full(x, 1), x, y
    for i in range(nbits):
        bit = lax.ne(lax.bitwise_and(e, 1), 0)
        acc = _select(bit, lax.mul(acc, base), acc)
        if i + 1 < nbits:
            base = lax.mul(base, base)
            e = lax.shift_right_logical(e, 1)
    return acc


def _power(x, y):
    if _kind(x) in "iu":
        return _int_power(x, y)
    return lax.pow(x, y)


# NumPy's float32 and float64 power loops compute a scalar exponent of 0.5, 2 or -1 as
# sqrt, square or reciprocal: (-inf) ** 0.5 is nan and (-0.0) ** 0.5 is -0.0 there, where
# pow (and an array of exponents) gives inf and 0.0
_FAST_POWERS = {0.5: lax.sqrt, 2.0: lambda x: lax.mul(x, x), -1.0: lambda x: lax.div(_full(x, 1), x)}


def power(x1, x2, /):
    """``x1 ** x2`` elementwise with NumPy 2 dtype rules (integer powers stay integers;
    a scalar float exponent of 0.5, 2 or -1 is sqrt, square or reciprocal, as NumPy's
    float32 and float64 loops compute it)."""
    fast = _fast_power_exponent(x2)
    x1, x2 = arg(x1, "power"), arg(x2, "power")
    if (is_python_scalar(x2) and isinstance(x2, int) and not isinstance(x2, bool)
            and not is_python_scalar(x1) and builtins.abs(x2) <= 64):
        all_weak = _is_weak(x1)
        loop = resolve(np.power, (_key(x1, all_weak), _key(x2, all_weak)))
        x = cast(x1, loop[0], all_weak)
        if _kind(x) in "iu" and x2 < 0:
            if get_aval(x).size == 0:   # NumPy returns the empty result
                return cast(x, loop[2], all_weak)
            raise PlaitValueError("Integers to negative integer powers are not allowed.")
        return cast(lax.integer_pow(x, x2), loop[2], all_weak)
    if fast is not None and not is_python_scalar(x1):
        all_weak = _is_weak(x1) and is_python_scalar(x2)
        loop = resolve(np.power, (_key(x1, all_weak), _key(x2, all_weak)))
        if np.dtype(loop[0]) in (np.float32, np.float64) and np.dtype(loop[2]) == np.dtype(loop[0]):
            return cast(fast(cast(x1, loop[0], all_weak)), loop[2], all_weak)
    return apply_ufunc(np.power, _power, "power", x1, x2)


def _fast_power_exponent(x2):
    """The function NumPy's float loops compute ``x ** x2`` as, for a concrete real
    scalar ``x2`` (a Python float, a NumPy scalar or 0-d array) of 0.5, 2 or -1; else None."""
    if isinstance(x2, bool) or not isinstance(x2, (float, np.floating, np.ndarray)):
        return None
    if isinstance(x2, np.ndarray) and (x2.ndim or x2.dtype.kind != "f"):
        return None
    return _FAST_POWERS.get(float(x2))


def _sign(x):
    if _kind(x) == "c":
        re, im = lax.real(x), lax.imag(x)
        inf = lax.bitwise_or(_isinf(re), _isinf(im))
        # one infinite part counts as +-1 and the finite part as 0 (NumPy's npy_csign);
        # two infinite parts are inf/inf, NaN+NaNj (as NumPy and JAX)
        re = _select(inf, _select(_isinf(re), lax.sign(re), _full(re, 0)), re)
        im = _select(inf, _select(_isinf(im), lax.sign(im), _full(im, 0)), im)
        y = lax.complex(re, im)
        a = lax.abs(y)
        z = lax.eq(a, 0)
        safe = _select(z, _full(a, 1), a)
        # each part divided by |y| (NumPy's loop): a complex division by (|y|, 0) took
        # 1 / |y|, which overflows for a subnormal |y| (sign(-4e-323j) was nan-infj)
        q = lax.complex(lax.div(re, safe), lax.div(im, safe))
        both = lax.bitwise_and(_isinf(lax.real(x)), _isinf(lax.imag(x)))
        return _select(both, _full(x, complex(math.nan, math.nan)), _select(z, _full(x, 0), q))
    if _kind(x) == "f":
        s = lax.sign(x)
        return _select(_isnan(x), x, s)
    return lax.sign(x)


def _abs(x):
    return x if _kind(x) == "b" else lax.abs(x)


def _hypot(x, y):
    """``s * sqrt((x/s)**2 + (y/s)**2)`` with the scale ``s = max(|x|, |y|)`` held
    constant for differentiation: the identity holds for every ``s > 0``, so derivatives
    of every order are exact (also at ``|x| == |y|``, where max/min would split them),
    and nothing overflows. At the origin the value and its derivatives are 0. float16
    is computed in float32 and rounded once, as NumPy's loop does (five float16
    roundings were an ulp off)."""
    if get_aval(x).dtype == np.float16:
        f32 = [lax.convert_element_type(v, np.float32) for v in (x, y)]
        return lax.convert_element_type(_hypot(*f32), np.float16)
    s = lax.stop_gradient(lax.max(lax.abs(x), lax.abs(y)))
    hz = lax.eq(s, 0)
    s = _select(hz, _full(s, 1), s)
    u = _select(hz, _full(x, 1), lax.div(x, s))   # a safe sqrt argument at the origin
    v = lax.div(y, s)
    out = _select(hz, _full(s, 0), lax.mul(s, lax.sqrt(lax.add(lax.mul(u, u), lax.mul(v, v)))))
    return _select(lax.bitwise_or(_isinf(x), _isinf(y)), _full(s, math.inf), out)


def _logaddexp2(x, y):
    """``log2(2**x + 2**y)`` as ``hi + log2(1 + 2**(lo - hi))``.

    Each branch (``x >= y`` or not) is an analytic formula of its own inputs, so values
    and derivatives of every order are exact on either side and at ``x == y``. The
    branch not taken gets a safe argument (0) instead of ``lo - hi`` ("double where"):
    its zero cotangent then never meets an overflowed ``exp2`` (0 * inf = nan).
    (``logaddexp`` is a primitive.)
    """
    soft = lambda t: lax.mul(lax.log1p(lax.exp2(t)), 1.0 / math.log(2.0))
    x_hi = lax.ge(x, y)
    zero = _full(x, 0)
    from_x = lax.add(x, soft(_select(x_hi, lax.sub(y, x), zero)))   # x >= y: t <= 0
    from_y = lax.add(y, soft(_select(x_hi, zero, lax.sub(x, y))))   # y > x (or NaN)
    out = _select(x_hi, from_x, from_y)
    # equal infinities: x - y is nan there
    return _select(lax.bitwise_and(lax.eq(x, y), _isinf(x)), lax.add(x, 1.0), out)


def _log_base(c):
    def impl(x):
        if get_aval(x).dtype == np.float16:   # one rounding, as NumPy's float32 loop, not two
            y = impl(lax.convert_element_type(x, np.float32))
            return lax.convert_element_type(y, np.float16)
        if _kind(x) == "c":   # scale the parts: a complex division turns log(0)'s 0j into nan
            lg = lax.log(x)
            return lax.complex(lax.mul(lax.real(lg), 1.0 / math.log(c)),
                               lax.mul(lax.imag(lg), 1.0 / math.log(c)))
        return lax.mul(lax.log(x), 1.0 / math.log(c)) if _kind(x) == "f" else \
            lax.div(lax.log(x), _full(x, math.log(c)))
    return impl


def _rint(x):
    if _kind(x) == "c":
        return lax.complex(lax.round(lax.real(x)), lax.round(lax.imag(x)))
    return lax.round(x)


def _fmax(x, y):
    if _kind(x) not in "fc":
        return lax.max(x, y)
    return _select(_isnan(y), x, _select(_isnan(x), y, lax.max(x, y)))


def _fmin(x, y):
    if _kind(x) not in "fc":
        return lax.min(x, y)
    return _select(_isnan(y), x, _select(_isnan(x), y, lax.min(x, y)))


def _heaviside(x, h0):
    out = _select(lax.lt(x, 0), _full(x, 0), _select(lax.gt(x, 0), _full(x, 1), h0))
    return _select(_isnan(x), x, out)


def _ldexp(x, i):
    """``x * 2**i`` as four exact power-of-two factors. ``i`` is first clamped to the
    span past which every finite ``x`` has already overflowed or underflowed, so no
    factor overflows (``ldexp(0, 40)`` in float16 is 0, not ``0 * inf``)."""
    dt = get_aval(x).dtype
    fi = np.finfo(dt)
    span = fi.maxexp - fi.minexp + fi.nmant + 2
    i = lax.max(lax.min(i, _full(i, span)), _full(i, -span))
    for parts in (4, 3, 2, 1):
        p = lax.div(i, parts)                    # truncating: |p| <= span / 4 < maxexp
        x = lax.mul(x, lax.exp2(lax.convert_element_type(p, dt)))
        i = lax.sub(i, p)
    return x


def _modf(x):
    t = _trunc(x)
    frac = _copysign(_select(_isinf(x), _full(x, 0), lax.sub(x, t)), x)
    return frac, t


def _bitwise_count(x):
    if _kind(x) == "i":
        x = lax.abs(x)
    return lax.population_count(x)


def _conj(x):
    return lax.conj(x) if _kind(x) == "c" else x


def _to_bool(x):
    return x if _kind(x) == "b" else lax.ne(x, 0)


def _logical(op):
    def impl(x, y):
        return op(_to_bool(x), _to_bool(y))
    return impl


def _shift_right(x, y):
    return lax.shift_right_arithmetic(x, y)


# --- comparisons ----------------------------------------------------------------------
def _complex_order(op_name):
    def impl(x, y):
        xr, xi, yr, yi = lax.real(x), lax.imag(x), lax.real(y), lax.imag(y)
        strict = getattr(lax, op_name)
        return lax.bitwise_or(lax.bitwise_and(lax.eq(xr, yr), strict(xi, yi)),
                              {"lt": lax.lt, "le": lax.lt, "gt": lax.gt, "ge": lax.gt}[op_name](xr, yr))
    return impl


_PY_CMP = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
           "eq": operator.eq, "ne": operator.ne}


def _compare_impl(op_name):
    lax_op = getattr(lax, op_name)
    py_op = _PY_CMP[op_name]

    def impl(x, y):
        dx, dy = get_aval(x).dtype, get_aval(y).dtype
        if dx != dy:   # NumPy's exact int64 vs uint64 loops
            if dx.kind == "i":
                return _select(lax.lt(x, 0), _full_bool(x, py_op(-1, 0)),
                               lax_op(lax.convert_element_type(x, dy), y))
            return _select(lax.lt(y, 0), _full_bool(y, py_op(0, -1)),
                           lax_op(x, lax.convert_element_type(y, dx)))
        if dx.kind == "c" and op_name not in ("eq", "ne"):
            return _complex_order(op_name)(x, y)
        return lax_op(x, y)
    return impl


def _full_bool(like, v: bool):
    a = get_aval(like)
    s = scalar_array(bool(v), dtypes.bool_, False)
    return lax.broadcast_in_dim(s, a.shape, ()) if a.shape else s


def _comparison(uf: np.ufunc, op_name: str) -> Callable:
    impl = _compare_impl(op_name)
    py_op = _PY_CMP[op_name]

    def fn(x1, x2, /):
        a, b = arg(x1, uf.__name__), arg(x2, uf.__name__)
        for s, other, left in ((a, b, True), (b, a, False)):
            if (isinstance(s, int) and not isinstance(s, bool) and is_python_scalar(s)
                    and not is_python_scalar(other) and _kind(other) in "iu"):
                info = np.iinfo(get_aval(other).dtype)
                if not info.min <= s <= info.max:   # NumPy 2 compares out-of-range ints exactly
                    res = py_op(s, 0) if left else py_op(0, s)
                    return _full_bool(other, res)
        return apply_ufunc(uf, impl, uf.__name__, a, b)
    fn.__name__ = fn.__qualname__ = uf.__name__
    fn.__doc__ = f"Elementwise ``numpy.{uf.__name__}`` (bool result)."
    return fn


# --- the ufuncs --------------------------------------------------------------------------
add = _def(np.add, _add)
subtract = _def(np.subtract, lax.sub)
multiply = _def(np.multiply, _mul)
divide = true_divide = _def(np.true_divide, lax.div, "divide")
floor_divide = _def(np.floor_divide, lambda x, y: _divmod(x, y)[0])
remainder = mod = _def(np.remainder, lambda x, y: _divmod(x, y)[1], "remainder")
fmod = _def(np.fmod, lax.rem)
divmod = _def(np.divmod, _divmod)
pow = power
float_power = _def(np.float_power, lax.pow)
negative = _def(np.negative, lax.neg)
positive = _def(np.positive, _identity)
reciprocal = _def(np.reciprocal, _reciprocal)
absolute = abs = _def(np.absolute, _abs, "absolute")
fabs = _def(np.fabs, lax.abs)
sign = _def(np.sign, _sign)
sin = _def(np.sin, lax.sin)
cos = _def(np.cos, lax.cos)
tan = _def(np.tan, lax.tan)
arcsin = asin = _def(np.arcsin, lax.asin)
arccos = acos = _def(np.arccos, lax.acos)
arctan = atan = _def(np.arctan, lax.atan)
sinh = _def(np.sinh, lax.sinh)
cosh = _def(np.cosh, lax.cosh)
tanh = _def(np.tanh, lax.tanh)
arcsinh = asinh = _def(np.arcsinh, lax.asinh)
arccosh = acosh = _def(np.arccosh, lax.acosh)
arctanh = atanh = _def(np.arctanh, lax.atanh)
arctan2 = atan2 = _def(np.arctan2, lax.atan2)
hypot = _def(np.hypot, _hypot)
deg2rad = radians = _def(np.deg2rad, lambda x: lax.mul(x, math.pi / 180.0))
rad2deg = degrees = _def(np.rad2deg, lambda x: lax.mul(x, 180.0 / math.pi))
exp = _def(np.exp, lax.exp)
exp2 = _def(np.exp2, lax.exp2)
expm1 = _def(np.expm1, lax.expm1)
log = _def(np.log, lax.log)
log1p = _def(np.log1p, lax.log1p)
log2 = _def(np.log2, _log_base(2.0))
log10 = _def(np.log10, _log_base(10.0))
logaddexp = _def(np.logaddexp, lax.logaddexp)
logaddexp2 = _def(np.logaddexp2, _logaddexp2)
sqrt = _def(np.sqrt, lax.sqrt)
cbrt = _def(np.cbrt, lax.cbrt)
square = _def(np.square, lambda x: lax.mul(x, x))
floor = _def(np.floor, _int_only_identity(lax.floor))
ceil = _def(np.ceil, _int_only_identity(lax.ceil))
trunc = _def(np.trunc, _trunc)
rint = _def(np.rint, _int_only_identity(_rint))
maximum = _def(np.maximum, lax.max)
minimum = _def(np.minimum, lax.min)
fmax = _def(np.fmax, _fmax)
fmin = _def(np.fmin, _fmin)
equal = _comparison(np.equal, "eq")
not_equal = _comparison(np.not_equal, "ne")
less = _comparison(np.less, "lt")
less_equal = _comparison(np.less_equal, "le")
greater = _comparison(np.greater, "gt")
greater_equal = _comparison(np.greater_equal, "ge")
logical_and = _def(np.logical_and, _logical(lax.bitwise_and))
logical_or = _def(np.logical_or, _logical(lax.bitwise_or))
logical_xor = _def(np.logical_xor, _logical(lax.bitwise_xor))
logical_not = _def(np.logical_not, lambda x: lax.bitwise_not(_to_bool(x)))
bitwise_and = _def(np.bitwise_and, lax.bitwise_and)
bitwise_or = _def(np.bitwise_or, lax.bitwise_or)
bitwise_xor = _def(np.bitwise_xor, lax.bitwise_xor)
bitwise_not = invert = bitwise_invert = _def(np.invert, lax.bitwise_not, "invert")
left_shift = bitwise_left_shift = _def(np.left_shift, lax.shift_left)
right_shift = bitwise_right_shift = _def(np.right_shift, _shift_right)
bitwise_count = _def(np.bitwise_count, _bitwise_count)
isnan = _def(np.isnan, _isnan)
isinf = _def(np.isinf, _isinf)
isfinite = _def(np.isfinite, _isfinite)
signbit = _def(np.signbit, _signbit)
copysign = _def(np.copysign, _copysign)
nextafter = _def(np.nextafter, lax.nextafter)
conjugate = conj = _def(np.conjugate, _conj)
heaviside = _def(np.heaviside, _heaviside)
ldexp = _def(np.ldexp, _ldexp)
modf = _def(np.modf, _modf)


# --- ufunc-like functions ------------------------------------------------------------------
def _inexact_arg(x, name):
    x = arg(x, name)
    if is_python_scalar(x):
        x = scalar_array(x, dtypes.python_scalar_dtype(x), False)
    return x


def isposinf(x, /):
    """True where ``x`` is +inf (False for integers); complex input is an error, as in NumPy."""
    x = _inexact_arg(x, "isposinf")
    if _kind(x) == "c":
        raise PlaitTypeError("This operation is not supported for complex values because "
                             "it would be ambiguous.")
    return lax.eq(x, math.inf) if _kind(x) == "f" else lax.ne(x, x)


def isneginf(x, /):
    """True where ``x`` is -inf (False for integers)."""
    x = _inexact_arg(x, "isneginf")
    if _kind(x) == "c":
        raise PlaitTypeError("This operation is not supported for complex values because "
                             "it would be ambiguous.")
    return lax.eq(x, -math.inf) if _kind(x) == "f" else lax.ne(x, x)


def real(val, /):
    """Real part (the array itself for real input)."""
    x = _inexact_arg(val, "real")
    return lax.real(x) if _kind(x) == "c" else x


def imag(val, /):
    """Imaginary part (zeros for real input)."""
    x = _inexact_arg(val, "imag")
    return lax.imag(x) if _kind(x) == "c" else _full(x, 0)


def angle(z, deg: bool = False):
    """Counter-clockwise angle from the positive real axis (float result)."""
    z = _inexact_arg(z, "angle")
    a = arctan2(lax.imag(z), lax.real(z)) if _kind(z) == "c" else arctan2(0, z)
    return multiply(a, 180.0 / math.pi) if deg else a


def isreal(x):
    """True where the imaginary part is zero."""
    return equal(imag(x), 0)


def iscomplex(x):
    """True where the imaginary part is non-zero."""
    return not_equal(imag(x), 0)


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype."""
    return _kind(_inexact_arg(x, "iscomplexobj")) == "c"


def isrealobj(x) -> bool:
    """Whether ``x`` has a non-complex dtype."""
    return not iscomplexobj(x)


def sinc(x, /):
    """``sin(pi x) / (pi x)`` with ``sinc(0) = 1`` (NumPy's formulation: ``y = pi x``, then
    ``sin(y) / y`` with ``y`` replaced by the dtype's eps where it is 0, which float16
    can represent, unlike a fixed tiny constant)."""
    x = _inexact_arg(x, "sinc")
    y = multiply(math.pi, x)
    eps = float(np.finfo(y.dtype).eps) if _kind(y) == "f" else 1.0e-20
    y = where(not_equal(y, 0), y, eps)
    return true_divide(sin(y), y)


def fix(x, /):
    """Round toward zero (``trunc``), keeping NumPy's result dtype."""
    return trunc(x)


def round(a, decimals: int = 0):
    """Round half to even to ``decimals`` places (NumPy's scaled ``rint``)."""
    decimals = static_int(decimals, "round", "decimals")
    x = _inexact_arg(a, "round")
    k = _kind(x)
    if k == "b":
        if decimals != 0:
            raise PlaitTypeError("round: a boolean array rounds only with decimals=0 "
                                 "(NumPy cannot cast the scaled result back to bool)")
        return lax.convert_element_type(x, np.float16)   # NumPy: rint of bool is float16
    if k in "iu":
        if decimals >= 0:
            return x
        f = 10 ** (-decimals)
        info = np.iinfo(get_aval(x).dtype)
        if f > info.max:
            return _full(x, 0)
        q, r = _int_floordiv_mod(x, _full(x, f))
        twice = lax.mul(r, 2) if 2 * (f - 1) <= info.max else None
        if twice is None:       # 2r would overflow: compare r with f / 2 itself
            up = lax.gt(r, _full(x, f // 2))
            tie = lax.eq(r, _full(x, f // 2)) if f % 2 == 0 else lax.ne(x, x)
        else:
            up = lax.gt(twice, _full(x, f))
            tie = lax.eq(twice, _full(x, f))
        odd = lax.ne(lax.bitwise_and(q, 1), 0)
        q = _select(lax.bitwise_or(up, lax.bitwise_and(tie, odd)), lax.add(q, 1), q)
        return lax.mul(q, _full(x, f))
    if decimals == 0:
        return _rint(x)
    if decimals > 0:
        f = 10.0 ** decimals
        return lax.div(_rint(lax.mul(x, f)), _full(x, f))
    f = 10.0 ** (-decimals)
    return lax.mul(_rint(lax.div(x, _full(x, f))), f)


around = round


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    """Limit values to ``[a_min, a_max]`` (either may be None); NaN propagates.

    The bounds go positionally, as ``a_min=``/``a_max=`` or as ``min=``/``max=``
    (NumPy 2 and the Array API), not both ways at once. With no bound at all the
    input comes back unchanged (the Array API standard; NumPy wants an explicit None).
    """
    if out is not None:
        raise PlaitTypeError("clip: out= is not supported (plait arrays are immutable); "
                             "use the returned array")
    if (a_min is not None or a_max is not None) and (min is not None or max is not None):
        raise PlaitTypeError("clip: pass the bounds either as a_min/a_max or as min/max, "
                             "not both")
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    x0 = arg(a, "clip")
    if lo is None and hi is None:
        return asarray_strong(x0) if is_python_scalar(x0) else x0
    if not is_python_scalar(x0) and _kind(x0) in "iu":   # NumPy clamps out-of-range int bounds
        info = np.iinfo(get_aval(x0).dtype)
        lo, hi = (builtins.min(builtins.max(b, int(info.min)), int(info.max))
                  if isinstance(b, int) and not isinstance(b, bool) else b for b in (lo, hi))
    args = [x0] + [b for b in (lo, hi) if b is not None]
    ops = promote_args("clip", *args)
    x = ops[0]
    i = 1
    if lo is not None:
        x = lax.max(x, ops[i])
        i += 1
    if hi is not None:
        x = lax.min(x, ops[i])
    return x


def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` else ``y`` (NEP 50 promotion, broadcasting).

    The one-argument form returns ``nonzero(condition)``; its shape depends on
    the data, so it works eagerly only.
    """
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise PlaitValueError("either both or neither of x and y should be given")
    c = arg(condition, "where")
    if is_python_scalar(c):
        c = scalar_array(bool(c), dtypes.bool_, False)
    xa, ya = arg(x, "where"), arg(y, "where")
    xs = () if is_python_scalar(xa) else get_aval(xa).shape
    ys = () if is_python_scalar(ya) else get_aval(ya).shape
    shape = broadcast_shapes(get_aval(c).shape, xs, ys)
    xb, yb = promote_args("where", xa, ya)
    return lax.select(broadcast_to_shape(cast(c, dtypes.bool_), shape),
                      broadcast_to_shape(xb, shape), broadcast_to_shape(yb, shape))


def nonzero(a):
    """Indices of the non-zero elements, one index array per dimension (eager only)."""
    x = arg(a, "nonzero")
    if isinstance(x, Tracer):
        from plait.errors import NonConcreteBooleanIndexError
        raise NonConcreteBooleanIndexError(
            f"nonzero (and one-argument where) of a traced array {x.aval.str_short()}: the "
            f"number of results depends on the data, so it has no static shape. Use the "
            f"three-argument where(cond, x, y) instead, or call it outside jit.")
    if is_python_scalar(x) or get_aval(x).ndim == 0:
        raise PlaitValueError("Calling nonzero on 0d arrays is not allowed. Use "
                              "atleast_1d(scalar).nonzero() instead.")
    mask = concrete_value(cast(x, dtypes.bool_))
    return tuple(wrap(np.asarray(i, dtype=dtypes.int64)) for i in np.nonzero(mask))


def flatnonzero(a):
    """Indices of the non-zero elements of the flattened array (eager only)."""
    from plait.numpy.shapes import ravel
    return nonzero(ravel(a))[0]


def argwhere(a):
    """Indices of non-zero elements grouped by element (eager only)."""
    x = arg(a, "argwhere")
    if isinstance(x, Tracer):
        nonzero(x)
    v = concrete_value(cast(x, dtypes.bool_)) if not is_python_scalar(x) else np.asarray(bool(x))
    return wrap(np.asarray(np.argwhere(v), dtype=dtypes.int64))


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: dtype extremes)."""
    x = _inexact_arg(x, "nan_to_num")
    k = _kind(x)
    if k not in "fc":
        return x
    if k == "c":
        re, im = (nan_to_num(p, nan=nan, posinf=posinf, neginf=neginf)
                  for p in (lax.real(x), lax.imag(x)))
        return lax.complex(re, im)
    info = dtypes.finfo(get_aval(x).dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = _select(_isnan(x), _full(x, nan), x)
    out = _select(lax.eq(x, math.inf), _full(x, hi), out)
    return _select(lax.eq(x, -math.inf), _full(x, lo), out)


def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (infinities equal only to themselves)."""
    x, y = arg(a, "isclose"), arg(b, "isclose")
    dt = np.result_type(*[np.dtype(dtypes.python_scalar_dtype(v)) if is_python_scalar(v)
                          else get_aval(v).dtype for v in (x, y)], 1.0)
    x, y = promote_args("isclose", cast(x, dt) if is_python_scalar(x) else x,
                        cast(y, dt) if is_python_scalar(y) else y)
    x, y = cast(x, dt), cast(y, dt)
    finite = lax.bitwise_and(_isfinite(x), _isfinite(y))
    close = less_equal(absolute(subtract(x, y)), add(atol, multiply(rtol, absolute(y))))
    out = _select(finite, close, lax.eq(x, y))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(_isnan(x), _isnan(y)))
    return out


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Whether all elements are close (a bool 0-d array; ``bool()`` it eagerly)."""
    return lax.reduce_and(_flat(isclose(a, b, rtol, atol, equal_nan)), (0,))


def _flat(x):
    return lax.reshape(x, (get_aval(x).size,))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether the arrays have the same shape and elements (a bool 0-d array)."""
    x, y = arg(a1, "array_equal"), arg(a2, "array_equal")
    sx = () if is_python_scalar(x) else get_aval(x).shape
    sy = () if is_python_scalar(y) else get_aval(y).shape
    if sx != sy:
        return scalar_array(False, dtypes.bool_, False)
    eq = equal(x, y)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(x), isnan(y)))
    return lax.reduce_and(_flat(eq), (0,))


def array_equiv(a1, a2):
    """Whether the arrays are broadcast-compatible and equal elementwise."""
    x, y = arg(a1, "array_equiv"), arg(a2, "array_equiv")
    try:
        eq = equal(x, y)
    except PlaitValueError:
        return scalar_array(False, dtypes.bool_, False)
    return lax.reduce_and(_flat(eq), (0,))
