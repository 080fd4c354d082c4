"""Special-function primitives: ``erf``, ``erfc``, ``lgamma``, ``digamma``; and
``erf_inv`` composed from elementwise primitives.

Each is one descriptor block (``plait.lax.elementwise_spec``): an elementwise float
primitive with a NumPy reference rule (built on the ``math`` module, or on the series
below for ``digamma``), a jvp rule written with plait ops, and its C (libm's
``erf``/``erfc``/``lgamma``; ``digamma`` brings its own C helper) and StableHLO spellings.

``zeta`` (Hurwitz) and ``polygamma`` are composed here from elementwise primitives
because ``digamma``'s derivative needs the trigamma function.
"""
from __future__ import annotations

import math

import numpy as np

from plait.core.trace import get_aval
from plait.lax._base import as_operand, FLOAT
from plait.lax.elementwise_spec import ElementwiseOp, define
from plait.lax import elementwise as E
from plait.lax import elementwise as ew
from plait.lax import shape_ops as so
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
        out = np.where(pole, np.where(x64 == 0, np.where(np.signbit(x64), np.inf, -np.inf),
                                     np.nan), out)     # SciPy: -1/x at zero
        out = np.where(x64 == np.inf, np.inf, out)
        out = np.where(np.isnan(x64), np.nan, out)
    return out.astype(np.asarray(x).dtype)


erf_ref = _vectorized(math.erf)
erfc_ref = _vectorized(math.erfc)
lgamma_ref = _vectorized(_safe_lgamma)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _gauss(x):
    return E.mul(E.exp(E.neg(E.mul(x, x))), _TWO_OVER_SQRT_PI)


_DIGAMMA_C = r"""/* digamma: reflection below 0, recurrence up to 10, asymptotic series */
static inline double plait_digamma(double x) {
  double r = 0.0;
  if (x != x || x == INFINITY) return x;
  if (x <= 0.0) {
    double fl = floor(x);
    if (x == fl) return x == 0.0 ? (signbit(x) ? INFINITY : -INFINITY) : NAN;
    r = -3.141592653589793 / tan(3.141592653589793 * (x - fl));
    x = 1.0 - x;
  }
  while (x < 10.0) { r -= 1.0 / x; x += 1.0; }
  double f = 1.0 / (x * x);
  double t = f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (
      -1.0 / 132 + f * (691.0 / 32760 + f * (-1.0 / 12)))))));
  return r + log(x) - 0.5 / x + t;
}
static inline float plait_digammaf(float x) { return (float)plait_digamma((double)x); }
"""

# one block per primitive (plait.lax.elementwise_spec)
erf_p = define(ElementwiseOp(
    "erf", 1, erf_ref, (FLOAT,), warn_ok=True, jvp=(lambda g, ans, x: E.mul(g, _gauss(x)),),
    intrinsic="erf", libm="erf", stablehlo="chlo.erf", transcendental=True))
erfc_p = define(ElementwiseOp(
    "erfc", 1, erfc_ref, (FLOAT,), warn_ok=True,
    jvp=(lambda g, ans, x: E.neg(E.mul(g, _gauss(x))),),
    intrinsic="erfc", libm="erfc", stablehlo="chlo.erfc", transcendental=True))
lgamma_p = define(ElementwiseOp(
    "lgamma", 1, lgamma_ref, (FLOAT,), warn_ok=True,
    jvp=(lambda g, ans, x: E.mul(g, digamma(x)),),
    intrinsic="lgamma", libm="lgamma", stablehlo="chlo.lgamma", transcendental=True))
digamma_p = define(ElementwiseOp(
    "digamma", 1, digamma_ref, (FLOAT,), warn_ok=True,
    jvp=(lambda g, ans, x: E.mul(g, polygamma(1, x)),),
    intrinsic="digamma", c={"f": "plait_digamma{f}({0})"}, c_helper=_DIGAMMA_C,
    stablehlo="chlo.digamma", transcendental=True))


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


# --- erf_inv: composed (M. Giles' polynomials in w = -log1p(-x*x), the double-precision
# set for float64 and the single-precision set otherwise, as XLA's ErfInv) ----------

def _float(x):
    a = get_aval(x)
    if not np.issubdtype(a.dtype, np.floating):
        x = ew.convert_element_type(x, np.float64)
    return x


def _k(v, x):
    a = get_aval(x)
    return so.broadcast_in_dim(ew.convert_element_type(v, a.dtype), a.shape, ())


class _E:
    """Tiny expression helper so the formulas read as formulas (lax ops, same shapes)."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def _o(self, o):
        return o.v if isinstance(o, _E) else _k(o, self.v)

    def __add__(self, o): return _E(ew.add(self.v, self._o(o)))
    def __radd__(self, o): return _E(ew.add(self._o(o), self.v))
    def __sub__(self, o): return _E(ew.sub(self.v, self._o(o)))
    def __rsub__(self, o): return _E(ew.sub(self._o(o), self.v))
    def __mul__(self, o): return _E(ew.mul(self.v, self._o(o)))
    def __rmul__(self, o): return _E(ew.mul(self._o(o), self.v))
    def __truediv__(self, o): return _E(ew.div(self.v, self._o(o)))
    def __rtruediv__(self, o): return _E(ew.div(self._o(o), self.v))
    def __neg__(self): return _E(ew.neg(self.v))
    def __lt__(self, o): return ew.lt(self.v, self._o(o))
    def __gt__(self, o): return ew.gt(self.v, self._o(o))
    def __le__(self, o): return ew.le(self.v, self._o(o))


def _f(fn, e: _E) -> _E:
    return _E(fn(e.v))


def _where(c, a: _E, b: _E) -> _E:
    return _E(ew.select(c, a.v, b.v))



# Giles' coefficients (double precision: three ranges of w; single: two).
GILES64_A = (-3.6444120640178196996e-21, -1.685059138182016589e-19,
             1.2858480715256400167e-18, 1.115787767802518096e-17,
             -1.333171662854620906e-16, 2.0972767875968561637e-17,
             6.6376381343583238325e-15, -4.0545662729752068639e-14,
             -8.1519341976054721522e-14, 2.6335093153082322977e-12,
             -1.2975133253453532498e-11, -5.4154120542946279317e-11,
             1.051212273321532285e-09, -4.1126339803469836976e-09,
             -2.9070369957882005086e-08, 4.2347877827932403518e-07,
             -1.3654692000834678645e-06, -1.3882523362786468719e-05,
             0.0001867342080340571352, -0.00074070253416626697512,
             -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)
GILES64_B = (2.2137376921775787049e-09, 9.0756561938885390979e-08,
             -2.7517406297064545428e-07, 1.8239629214389227755e-08,
             1.5027403968909827627e-06, -4.013867526981545969e-06,
             2.9234449089955446044e-06, 1.2475304481671778723e-05,
             -4.7318229009055733981e-05, 6.8284851459573175448e-05,
             2.4031110387097893999e-05, -0.0003550375203628474796,
             0.00095328937973738049703, -0.0016882755560235047313,
             0.0024914420961078508066, -0.0037512085075692412107,
             0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)
GILES64_C = (-2.7109920616438573243e-11, -2.5556418169965252055e-10,
             1.5076572693500548083e-09, -3.7894654401267369937e-09,
             7.6157012080783393804e-09, -1.4960026627149240478e-08,
             2.9147953450901080826e-08, -6.7711997758452339498e-08,
             2.2900482228026654717e-07, -9.9298272942317002539e-07,
             4.5260625972231537039e-06, -1.9681778105531670567e-05,
             7.5995277030017761139e-05, -0.00021503011930044477347,
             -0.00013871931833623122026, 1.0103004648645343977, 4.8499064014085844221)
GILES32_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
GILES32_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)



def _horner(coeffs, t: _E) -> _E:
    acc = t * 0.0 + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * t + c
    return acc


def erf_inv(x):
    """The inverse error function on ``(-1, 1)`` (``+-inf`` at ``+-1``)."""
    x = _E(_float(x))
    edge = ew.eq(ew.abs(x.v), _k(1.0, x.v))
    xs = _where(edge, x * 0.0, x)
    w = -_f(ew.log1p, -(xs * xs))
    if get_aval(x.v).dtype == np.float64:
        lt6, lt16 = w < 6.25, w < 16.0
        wa = _where(lt6, w, w * 0.0 + 6.25) - 3.125
        sw = _f(ew.sqrt, _where(lt6, w * 0.0 + 6.25, w))
        p = _where(lt6, _horner(GILES64_A, wa),
                   _where(lt16, _horner(GILES64_B, sw - 3.25), _horner(GILES64_C, sw - 5.0)))
    else:
        c = w < 5.0
        wc = _where(c, w, w * 0.0 + 5.0) - 2.5
        wt = _f(ew.sqrt, _where(c, w * 0.0 + 5.0, w)) - 3.0
        p = _where(c, _horner(GILES32_CENTRAL, wc), _horner(GILES32_TAIL, wt))
    inf = _where(x > 0.0, x * 0.0 + np.inf, x * 0.0 - np.inf)
    return _where(edge, inf, p * xs).v
