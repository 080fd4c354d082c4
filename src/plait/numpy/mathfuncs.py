"""Elementwise functions NumPy has beyond the core ufuncs: frexp, gcd, lcm, spacing, i0,
and real_if_close.

Result dtypes come from NumPy's own loop tables (``apply_ufunc``); the values are
computed with ``plait.lax`` only. ``gcd`` runs Euclid's algorithm as a
``lax.while_loop`` until every lane is done. ``i0`` sums the power series for
``|x| <= 20`` and the asymptotic expansion above (relative error about 1e-15 in
float64). ``real_if_close`` returns a real array only when every imaginary part is
small, so its result dtype depends on the values: it works eagerly; under ``jit`` it
raises a plait error (use ``real`` there).
"""
from __future__ import annotations

import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import ConcretizationError, PlaitTypeError
from plait.numpy._promote import arg, asarray_strong, cast, scalar_array
from plait.numpy.ufuncs import apply_ufunc


def _full(x, v, dt=None):
    a = get_aval(x)
    s = scalar_array(v, dt or a.dtype, False)
    return lax.broadcast_in_dim(s, a.shape, ()) if a.shape else s


def _exp2_int(e, dt):
    """``2**e`` for an int array ``e`` as two factors (each finite for subnormal scales)."""
    h = lax.div(e, 2)
    return (lax.exp2(lax.convert_element_type(h, dt)),
            lax.exp2(lax.convert_element_type(lax.sub(e, h), dt)))


def _frexp(x):
    dt = get_aval(x).dtype
    work = dtypes.float32 if dt == dtypes.float16 else dt
    xw = lax.convert_element_type(x, work)
    ax = lax.abs(xw)
    special = lax.bitwise_or(lax.eq(ax, 0), lax.bitwise_not(lax.is_finite(xw)))
    safe = lax.select(special, _full(xw, 1.0), xw)
    e = lax.add(lax.convert_element_type(_floor_log2(lax.abs(safe)), dtypes.int32),
                _full(ax, 1, dtypes.int32))
    f1, f2 = _exp2_int(lax.neg(e), work)
    m = lax.mul(lax.mul(safe, f1), f2)
    am = lax.abs(m)
    big = lax.ge(am, _full(am, 1.0))
    m = lax.select(big, lax.mul(m, _full(m, 0.5)), m)
    e = lax.select(big, lax.add(e, _full(e, 1)), e)
    small = lax.lt(lax.abs(m), _full(m, 0.5))
    m = lax.select(small, lax.mul(m, _full(m, 2.0)), m)
    e = lax.select(small, lax.sub(e, _full(e, 1)), e)
    m = lax.select(special, xw, m)
    e = lax.select(special, _full(e, 0), e)
    return lax.convert_element_type(m, dt), e


def _floor_log2(ax):
    return lax.floor(lax.div(lax.log(ax), _full(ax, math.log(2.0))))


def frexp(x, /):
    """Mantissa in ``[0.5, 1)`` (with the sign of ``x``) and int32 exponent, ``x == m * 2**e``."""
    return apply_ufunc(np.frexp, _frexp, "frexp", x)


def _gcd(a, b):
    a, b = lax.abs(a), lax.abs(b)
    if dtypes.is_bool(get_aval(a).dtype):
        return lax.bitwise_or(a, b)

    def cond(c):
        return lax.reduce_or(lax.ne(c[1], _full(c[1], 0)), tuple(range(get_aval(c[1]).ndim)))

    def body(c):
        x, y = c
        nz = lax.ne(y, _full(y, 0))
        safe = lax.select(nz, y, _full(y, 1))
        return lax.select(nz, y, x), lax.select(nz, lax.rem(x, safe), y)

    return lax.while_loop(cond, body, (a, b))[0]


def gcd(x1, x2, /):
    """Greatest common divisor of ``|x1|`` and ``|x2|`` (integers; ``gcd(0, 0) == 0``)."""
    return apply_ufunc(np.gcd, _gcd, "gcd", x1, x2)


def _lcm(a, b):
    g = _gcd(a, b)
    zero = lax.eq(g, _full(g, 0))
    q = lax.div(lax.abs(a), lax.select(zero, _full(g, 1), g))
    return lax.select(zero, _full(g, 0), lax.mul(q, lax.abs(b)))


def lcm(x1, x2, /):
    """Least common multiple of ``|x1|`` and ``|x2|`` (integers; 0 if either is 0)."""
    return apply_ufunc(np.lcm, _lcm, "lcm", x1, x2)


def _spacing(x):
    dt = get_aval(x).dtype
    toward = lax.select(lax.lt(x, _full(x, 0)), _full(x, -math.inf), _full(x, math.inf))
    out = lax.sub(lax.nextafter(x, toward), x)
    return lax.select(lax.is_finite(x), out, _full(x, math.nan)) if dt.kind == "f" else out


def spacing(x, /):
    """Distance from ``x`` to the next float away from zero (negative for ``x < 0``)."""
    return apply_ufunc(np.spacing, _spacing, "spacing", x)


# Asymptotic series of exp(-x) sqrt(2 pi x) I0(x): sum_k prod_{j<=k} (2j-1)^2 / (k! (8x)^k)
_ASYM_TERMS = 26
_SERIES_TERMS = 36
_SWITCH = 20.0


def _i0(x):
    dt = get_aval(x).dtype
    ax = lax.abs(x)
    small = lax.le(ax, _full(ax, _SWITCH))
    xs = lax.select(small, ax, _full(ax, 0.0))
    q = lax.mul(lax.mul(xs, xs), _full(xs, 0.25))
    term, total = _full(xs, 1.0), _full(xs, 1.0)
    for k in range(1, _SERIES_TERMS):
        term = lax.mul(term, lax.div(q, _full(q, float(k * k))))
        total = lax.add(total, term)
    xl = lax.select(small, _full(ax, _SWITCH + 1.0), ax)
    inv8x = lax.div(_full(xl, 1.0), lax.mul(xl, _full(xl, 8.0)))
    coef, asym, p = 1.0, _full(xl, 1.0), _full(xl, 1.0)
    for k in range(1, _ASYM_TERMS):
        coef *= (2 * k - 1) ** 2 / k
        p = lax.mul(p, inv8x)
        asym = lax.add(asym, lax.mul(p, _full(p, coef)))
    # exp(x) / sqrt(2 pi x) split as exp(x/2) * (exp(x/2) / sqrt(2 pi x)) to delay overflow
    half = lax.exp(lax.mul(xl, _full(xl, 0.5)))
    large = lax.mul(lax.mul(half, lax.div(half, lax.sqrt(lax.mul(xl, _full(xl, 2 * math.pi))))),
                    asym)
    out = lax.select(small, total, large)
    return lax.select(lax.ne(x, x), x, out) if dt.kind == "f" else out


def i0(x):
    """Modified Bessel function of the first kind, order 0 (real input, like NumPy)."""
    xv = asarray_strong(x, name="i0")
    dt = get_aval(xv).dtype
    if dtypes.is_complex(dt):
        raise PlaitTypeError("i0 not supported for complex values")
    # NumPy computes i0 in float64 for integer and bool input and keeps float dtypes.
    if not dtypes.is_float(dt):
        return _i0(cast(xv, dtypes.float64))
    if dt == dtypes.float16:   # the series' terms overflow float16
        return cast(_i0(cast(xv, dtypes.float32)), dt)
    return _i0(xv)


def real_if_close(a, tol: float = 100):
    """``real(a)`` if every imaginary part is within ``tol`` machine epsilons of zero,
    else ``a`` (the result dtype depends on the values: eager only)."""
    x = arg(a, "real_if_close")
    if isinstance(x, (int, float, bool, complex)):
        from plait.numpy.creation import asarray
        x = asarray(x)
    dt = get_aval(x).dtype
    if not dtypes.is_complex(dt):
        return x
    if isinstance(x, Tracer):
        raise ConcretizationError(
            f"real_if_close of a traced array {x.aval.str_short()}: whether the result is "
            f"real or complex depends on the values, so its dtype is unknown under jit. "
            f"Call it outside jit, or use plait.numpy.real(x) if you know the values are real.")
    eps = float(np.finfo(dt).eps)
    t = tol * eps if tol > 1 else tol
    im = lax.abs(lax.imag(x))
    size_ok = bool(concrete_value(lax.reduce_and(lax.lt(im, _full(im, t)),
                                                 tuple(range(get_aval(im).ndim)))))
    return lax.real(x) if size_ok else x
