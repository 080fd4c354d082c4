"""Special-function primitives: ``erf``, ``erfc``, ``lgamma``, ``digamma``.

Each is an elementwise float primitive with a NumPy reference rule (built on the
``math`` module, or on the series below for ``digamma``), a jvp rule written with
plait ops, a batch rule and (in ``plait/tile/rules.py``) a native lowering to C
(libm's ``erf``/``erfc``/``lgamma``; ``digamma`` is a helper in the C prelude).

``zeta`` (Hurwitz) and ``polygamma`` are composed here from elementwise primitives
because ``digamma``'s derivative needs the trigamma function.
"""
from __future__ import annotations

import math

import numpy as np

from plait.core.trace import get_aval
from plait.lax._base import standard_unop, as_operand, FLOAT
from plait.lax._ad_helpers import defjvp
from plait.lax._batch_helpers import defvectorized
from plait.lax import elementwise as E
from plait.lax.shape_ops import broadcast_in_dim


def _vectorized(fn):
    """Apply a ``math`` function elementwise, keeping the input dtype."""
    vf = np.vectorize(fn, otypes=[np.float64])

    def impl(x):
        return vf(x.astype(np.float64)).astype(x.dtype) if x.size else x.copy()
    return impl


def _safe_lgamma(v: float) -> float:
    if math.isnan(v):
        return v
    try:
        return math.lgamma(v)
    except ValueError:        # poles at 0, -1, -2, ...
        return math.inf


def digamma_ref(x: np.ndarray) -> np.ndarray:
    """``digamma`` in NumPy: reflection for ``x <= 0``, recurrence up to 10, then the
    asymptotic series (the same algorithm as the C helper ``plait_digamma``)."""
    x64 = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        neg = x64 <= 0
        pole = neg & (x64 == np.floor(x64))
        frac = x64 - np.floor(x64)
        refl = np.where(neg, -np.pi / np.tan(np.pi * frac), 0.0)
        z = np.where(neg, 1.0 - x64, x64)
        acc = np.zeros_like(z)
        for _ in range(10):
            small = z < 10
            acc = acc - np.where(small, 1.0 / z, 0.0)
            z = np.where(small, z + 1, z)
        f = 1.0 / (z * z)
        t = f * (-1 / 12 + f * (1 / 120 + f * (-1 / 252 + f * (1 / 240 + f * (
            -1 / 132 + f * (691 / 32760 + f * (-1 / 12)))))))
        out = acc + np.log(z) - 0.5 / z + t + refl
        out = np.where(pole, np.where(x64 == 0, -np.inf, np.nan), out)
        out = np.where(x64 == np.inf, np.inf, out)
        out = np.where(np.isnan(x64), np.nan, out)
    return out.astype(np.asarray(x).dtype)


erf_ref = _vectorized(math.erf)
erfc_ref = _vectorized(math.erfc)
lgamma_ref = _vectorized(_safe_lgamma)

erf_p = standard_unop("erf", (FLOAT,), erf_ref, warn_ok=True)
erfc_p = standard_unop("erfc", (FLOAT,), erfc_ref, warn_ok=True)
lgamma_p = standard_unop("lgamma", (FLOAT,), lgamma_ref, warn_ok=True)
digamma_p = standard_unop("digamma", (FLOAT,), digamma_ref, warn_ok=True)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erf(x):
    """Elementwise error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``."""
    return erf_p.bind(as_operand(x))


def erfc(x):
    """Elementwise complementary error function ``1 - erf(x)``, accurate for large ``x``."""
    return erfc_p.bind(as_operand(x))


def lgamma(x):
    """Elementwise ``log|Gamma(x)|`` (``inf`` at the poles ``0, -1, -2, ...``)."""
    return lgamma_p.bind(as_operand(x))


def digamma(x):
    """Elementwise ``d/dx log Gamma(x)`` (``-inf`` at 0, NaN at negative integers)."""
    return digamma_p.bind(as_operand(x))


def _gauss(x):
    return E.mul(E.exp(E.neg(E.mul(x, x))), _TWO_OVER_SQRT_PI)


defjvp(erf_p, lambda g, ans, x: E.mul(g, _gauss(x)))
defjvp(erfc_p, lambda g, ans, x: E.neg(E.mul(g, _gauss(x))))
defjvp(lgamma_p, lambda g, ans, x: E.mul(g, digamma(x)))
defjvp(digamma_p, lambda g, ans, x: E.mul(g, polygamma(1, x)))
for _p in (erf_p, erfc_p, lgamma_p, digamma_p):
    defvectorized(_p)


# --- Hurwitz zeta and polygamma, composed ------------------------------------------------
_ZETA_N = 9        # terms summed directly before Euler-Maclaurin
# B_{2j} / (2j)! for j = 1..12
_B2J_FACT = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
             -691 / 1307674368000, 1 / 74724249600, -3617 / 10670622842880000,
             43867 / 5109094217170944000, -174611 / 802857662698291200000,
             77683 / 14101100039391805440000, -236364091 / 1693824136836316160000000000)


def _full_like(x, v):
    a = get_aval(x)
    c = as_operand(v, a.dtype)
    return broadcast_in_dim(c, a.shape, ()) if a.shape else c


def zeta(s, q):
    """Hurwitz zeta ``sum_k (q + k)^-s`` for ``s > 1``, ``q > 0`` (Euler-Maclaurin with
    9 direct terms and 12 Bernoulli corrections). ``s`` and ``q`` have equal shapes and
    dtypes. ``s == 1`` gives ``inf``; ``s < 1`` or ``q <= 0`` gives NaN except at
    nonpositive integer ``q``, a pole (``inf``) when ``s`` is an integer. (SciPy also
    evaluates negative non-integer ``q`` for integer ``s``; here that is NaN.)"""
    s, q = as_operand(s), as_operand(q)
    qs = E.select(E.gt(q, 0.0), q, _full_like(q, 1.0))     # keep the series finite
    total = _full_like(q, 0.0)
    for k in range(_ZETA_N):
        total = E.add(total, E.pow(E.add(qs, float(k)), E.neg(s)))
    a = E.add(qs, float(_ZETA_N))
    a_s = E.pow(a, E.neg(s))
    total = E.add(total, E.div(E.mul(a, a_s), E.sub(s, 1.0)))
    total = E.add(total, E.mul(a_s, 0.5))
    # term_j = s (s+1) ... (s+2j-2) a^(-s-2j+1), as a running product (no overflow)
    term = E.mul(s, E.div(a_s, a))
    for j, c in enumerate(_B2J_FACT):
        total = E.add(total, E.mul(term, c))
        ratio = E.div(E.mul(E.add(s, float(2 * j + 1)), E.add(s, float(2 * j + 2))), E.mul(a, a))
        term = E.mul(term, ratio)
    nan = _full_like(q, math.nan)
    inf = _full_like(q, math.inf)
    q_int = E.eq(E.floor(q), q)
    s_int = E.eq(E.floor(s), s)
    bad_q = E.select(E.bitwise_and(q_int, s_int), inf, nan)
    total = E.select(E.gt(q, 0.0), total, bad_q)
    total = E.select(E.lt(s, 1.0), nan, total)
    total = E.select(E.eq(s, 1.0), inf, total)
    return E.select(E.eq(q, math.inf), _full_like(q, 0.0), total)


def polygamma(n: int, x):
    """The ``n``-th derivative of ``digamma`` for a static integer ``n >= 0``:
    ``(-1)^(n+1) n! zeta(n + 1, x)`` for ``n >= 1``; the trigamma function (``n == 1``)
    uses the reflection formula for negative ``x`` (higher orders are NaN there)."""
    n = int(n)
    if n < 0:
        raise ValueError(f"polygamma: order n must be >= 0, got {n}")
    x = as_operand(x)
    if n == 0:
        return digamma(x)
    if n == 1:   # trigamma: reflection psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) below 0
        two = _full_like(x, 2.0)
        neg = E.lt(x, 0.0)
        pole = E.bitwise_and(neg, E.eq(E.floor(x), x))
        xr = E.select(neg, E.sub(1.0, x), x)
        direct = zeta(two, xr)
        # the reflected branch sees -0.5 where unused, so its derivative stays finite
        xn = E.select(E.bitwise_and(neg, E.bitwise_not(pole)), x, _full_like(x, -0.5))
        sin_pi = E.sin(E.mul(E.sub(xn, E.floor(xn)), math.pi))
        refl = E.sub(E.div(math.pi ** 2, E.mul(sin_pi, sin_pi)), direct)
        return E.select(pole, _full_like(x, math.inf), E.select(neg, refl, direct))
    return E.mul(zeta(_full_like(x, float(n + 1)), x), float((-1) ** (n + 1) * math.factorial(n)))
