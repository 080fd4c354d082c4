"""``plait.scipy.special``: special functions as in ``jax.scipy.special``.

``erf``, ``erfc``, ``gammaln`` and ``digamma`` are primitives (``plait.lax.special``,
native C); the rest are composed from them and ``plait.numpy`` so that jvp, vjp, vmap
and the native backend come for free. Inverses (``erfinv``, ``ndtri``) start from
M. Giles' single-precision polynomial and refine it by Newton steps on the primitive,
with a ``custom_jvp`` giving the exact derivative.
"""

import math as _math

import plait.numpy as _pnp
from plait.errors import UnsupportedOptionError as _UnsupportedOptionError
from plait import lax as _lax
from plait.transforms.custom_derivatives import custom_jvp as _custom_jvp

__all__ = ["erf", "erfc", "erfinv", "gammaln", "digamma", "polygamma", "zeta", "ndtr",
           "ndtri", "log_ndtr", "xlogy", "xlog1py", "logsumexp", "betaln", "beta", "gamma",
           "rgamma", "gammasgn", "loggamma", "multigammaln", "expit", "logit", "entr",
           "kl_div", "rel_entr", "softmax", "log_softmax", "i0e", "i1e", "i0", "i1",
           "factorial", "poch", "gammainc", "gammaincc", "erfcx", "boxcox", "boxcox1p", "comb", "betainc", "exp1", "expi", "bernoulli"]

_SQRT2 = _math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * _math.log(2 * _math.pi)
_TWO_OVER_SQRT_PI = 2.0 / _math.sqrt(_math.pi)


def _float(x):
    """``x`` as a float array (integers promote to the default float, as SciPy)."""
    x = _pnp.asarray(x)
    if not _pnp.issubdtype(x.dtype, _pnp.inexact):
        x = x.astype(_pnp.float64)
    return x


def _promote(*xs):
    arrays = [_float(x) for x in xs if not isinstance(x, (int, float))]
    dt = _pnp.result_type(*arrays) if arrays else _pnp.float64
    xs = [_pnp.asarray(x, dtype=dt) if isinstance(x, (int, float)) else _float(x) for x in xs]
    shape = _pnp.broadcast_shapes(*(x.shape for x in xs))
    return [_pnp.broadcast_to(x.astype(dt), shape) for x in xs]


# --- primitives -------------------------------------------------------------------------
def erf(x):
    """The error function."""
    return _lax.erf(_float(x))


def erfc(x):
    """The complementary error function ``1 - erf(x)``."""
    return _lax.erfc(_float(x))


def gammaln(x):
    """``log|Gamma(x)|``."""
    return _lax.lgamma(_float(x))


def digamma(x):
    """The logarithmic derivative of Gamma."""
    return _lax.digamma(_float(x))


def polygamma(n: int, x):
    """The ``n``-th derivative of ``digamma`` (``n`` a static nonnegative integer)."""
    return _lax.polygamma(int(n), _float(x))


def zeta(x, q=None):
    """Hurwitz zeta ``sum_k (k + q)^-x`` (Riemann zeta when ``q`` is None)."""
    if q is None:
        q = 1.0
    x, q = _promote(x, q)
    return _lax.zeta(x, q)


# --- inverses of erf / erfc -------------------------------------------------------------
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, t):
    acc = _pnp.zeros_like(t) + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * t + c
    return acc


def _erfcinv_pos(c):
    """``x >= 0`` with ``erfc(x) = c`` for ``c`` in ``(0, 1]``: Giles' polynomial then
    Newton steps on ``erfc`` (relative in the tail, so tiny ``c`` stays accurate)."""
    cs = _pnp.where(c > 0, c, 1.0)
    w = -_pnp.log(cs * (2.0 - cs))
    central = w < 5.0
    wc = _pnp.where(central, w, 5.0) - 2.5
    wt = _pnp.sqrt(_pnp.where(central, 5.0, w)) - 3.0
    x = _pnp.where(central, _horner(_GILES_CENTRAL, wc), _horner(_GILES_TAIL, wt)) * (1.0 - cs)
    # far tail (beyond the polynomial's float32 range): x^2 ~ L - log(L)/2
    el = _pnp.maximum(-_pnp.log(cs) - 0.5 * _math.log(_math.pi), 1.0)
    x = _pnp.where(w > 40.0, _pnp.sqrt(_pnp.maximum(el - 0.5 * _pnp.log(el), 0.0)), x)
    logc = _pnp.log(cs)
    for _ in range(4):   # Newton on log(erfc(x)) = log(c): nearly linear in the tail
        le = _pnp.log(_lax.erfc(x))
        x = x + (le - logc) * _pnp.exp(x * x + le) / _TWO_OVER_SQRT_PI
    return _pnp.where(c > 0, x, _pnp.inf)


def _erfinv_raw(y):
    ay = _pnp.abs(y)
    small = ay <= 0.5
    ys = _pnp.where(small, y, 0.0)
    # central: Giles' polynomial and Newton on erf
    w = -_pnp.log((1.0 - ys) * (1.0 + ys))
    x = _horner(_GILES_CENTRAL, w - 2.5) * ys
    for _ in range(3):
        x = x - (_lax.erf(x) - ys) / (_TWO_OVER_SQRT_PI * _pnp.exp(-x * x))
    big = _erfcinv_pos(_pnp.where(small, 1.0, 1.0 - ay))        # 1 - |y| exact (Sterbenz)
    out = _pnp.where(small, x, _pnp.sign(y) * big)
    return _pnp.where(ay > 1.0, _pnp.nan, out)


@_custom_jvp
def _erfinv(y):
    return _erfinv_raw(y)


@_erfinv.defjvp
def _erfinv_jvp(primals, tangents):
    (y,), (g,) = primals, tangents
    x = _erfinv(y)
    return x, g * _pnp.exp(x * x) / _TWO_OVER_SQRT_PI


def erfinv(y):
    """Inverse of ``erf`` on ``[-1, 1]`` (``+-inf`` at ``+-1``, NaN outside)."""
    return _erfinv(_float(y))


@_custom_jvp
def _ndtri(p):
    lo = p < 0.5
    c = 2.0 * _pnp.where(lo, p, 1.0 - p)          # erfc argument in (0, 1]
    x = _SQRT2 * _erfcinv_pos(_pnp.where(c > 0, _pnp.minimum(c, 1.0), 0.0))
    x = _pnp.where(lo, -x, x)
    x = _pnp.where(p == 1.0, _pnp.inf, x)
    return _pnp.where((p < 0) | (p > 1) | _pnp.isnan(p), _pnp.nan, x)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (g,) = primals, tangents
    x = _ndtri(p)
    return x, g * _math.sqrt(2 * _math.pi) * _pnp.exp(0.5 * x * x)


def ndtri(p):
    """Inverse of ``ndtr``: the standard normal quantile."""
    return _ndtri(_float(p))


# --- normal distribution ----------------------------------------------------------------
def ndtr(x):
    """Standard normal CDF ``0.5 * erfc(-x / sqrt(2))``."""
    x = _float(x)
    return 0.5 * _lax.erfc(-x / _SQRT2)


def log_ndtr(x):
    """``log(ndtr(x))`` accurate in both tails (an asymptotic series below the point
    where ``erfc`` would underflow, ``log1p(-ndtr(-x))`` above 0)."""
    x = _float(x)
    lower = -20.0 if x.dtype == _pnp.float64 else -10.0
    tail = x < lower
    xt = _pnp.where(tail, x, lower)
    z = 1.0 / (xt * xt)
    # log(ndtr(x)) = -x^2/2 - log(-x) - log(2 pi)/2 + log(sum (-1)^k (2k-1)!! / x^2k)
    s, term = _pnp.ones_like(z), _pnp.ones_like(z)
    for k in range(1, 9):
        term = term * (-(2 * k - 1)) * z
        s = s + term
    asym = -0.5 * xt * xt - _pnp.log(-xt) - _HALF_LOG_2PI + _pnp.log(s)
    xm = _pnp.where(tail, 0.0, x)
    mid = _pnp.where(xm > 0, _pnp.log1p(-0.5 * _lax.erfc(xm / _SQRT2)),
                    _pnp.log(0.5 * _lax.erfc(-xm / _SQRT2)))
    return _pnp.where(tail, asym, mid)


# --- elementary compositions ------------------------------------------------------------
def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (even for ``y == 0``)."""
    x, y = _promote(x, y)
    zero = x == 0
    return _pnp.where(zero, 0.0, x * _pnp.log(_pnp.where(zero, 1.0, y)))


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0``."""
    x, y = _promote(x, y)
    zero = x == 0
    return _pnp.where(zero, 0.0, x * _pnp.log1p(_pnp.where(zero, 0.0, y)))


def entr(x):
    """``-x log x`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``."""
    x = _float(x)
    pos = x > 0
    v = -x * _pnp.log(_pnp.where(pos, x, 1.0))
    return _pnp.where(pos, v, _pnp.where(x == 0, 0.0, _pnp.where(x < 0, -_pnp.inf, x)))


def rel_entr(x, y):
    """``x log(x / y)`` for positive ``x, y``; 0 at ``x == 0, y >= 0``; ``inf`` otherwise."""
    x, y = _promote(x, y)
    ok = (x > 0) & (y > 0)
    v = x * (_pnp.log(_pnp.where(ok, x, 1.0)) - _pnp.log(_pnp.where(ok, y, 1.0)))
    v = _pnp.where(ok, v, _pnp.where((x == 0) & (y >= 0), 0.0, _pnp.inf))
    return _pnp.where(_pnp.isnan(x) | _pnp.isnan(y), _pnp.nan, v)


def kl_div(x, y):
    """``x log(x / y) - x + y`` (``rel_entr(x, y) - x + y``)."""
    x, y = _promote(x, y)
    ok = (x > 0) & (y > 0)
    v = rel_entr(x, y) - x + y
    v = _pnp.where(ok | ((x == 0) & (y >= 0)), v, _pnp.inf)
    return _pnp.where(_pnp.isnan(x) | _pnp.isnan(y), _pnp.nan, v)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return _lax.logistic(_float(x))


def logit(p):
    """``log(p / (1 - p))``."""
    p = _float(p)
    return _pnp.log(p) - _pnp.log1p(-p)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """``log(sum(b * exp(a), axis))`` without overflow; with ``return_sign`` the pair
    ``(log|sum|, sign(sum))`` (a negative sum is otherwise NaN, as SciPy)."""
    a = _float(a)
    if b is not None:
        a, b = _promote(a, b)
    if where is not None:
        a = _pnp.where(where, a, -_pnp.inf)
    amax = _pnp.max(a, axis=axis, keepdims=True)
    amax = _lax.stop_gradient(_pnp.where(_pnp.isfinite(amax), amax, 0.0))
    e = _pnp.exp(a - amax)
    if b is not None:
        e = e * b
    s = _pnp.sum(e, axis=axis, keepdims=True)
    sign = _pnp.sign(s)
    out = _pnp.log(_pnp.abs(s)) + amax
    if not keepdims:
        out = _pnp.squeeze(out, axis=axis)
        sign = _pnp.squeeze(sign, axis=axis)
    if return_sign:
        return out, sign
    return _pnp.where(sign < 0, _pnp.nan, out)


def softmax(x, axis=None):
    """``exp(x) / sum(exp(x), axis)`` (over all elements by default, as SciPy)."""
    x = _float(x)
    return _pnp.exp(x - logsumexp(x, axis=axis, keepdims=True))


def log_softmax(x, axis=None):
    """``x - logsumexp(x, axis)``."""
    x = _float(x)
    return x - logsumexp(x, axis=axis, keepdims=True)


# --- gamma family -----------------------------------------------------------------------
def gammasgn(x):
    """The sign of ``Gamma(x)`` (NaN at the poles and for NaN)."""
    x = _float(x)
    fl = _pnp.floor(x)
    odd = _pnp.remainder(fl, 2.0) != 0
    sgn = _pnp.where((x > 0) | ~odd, 1.0, -1.0)
    return _pnp.where(((x <= 0) & (x == fl)) | _pnp.isnan(x), _pnp.nan, sgn)


def gamma(x):
    """``Gamma(x)`` as ``gammasgn(x) * exp(gammaln(x))`` (``inf`` at 0, NaN at the
    negative integers, as SciPy)."""
    x = _float(x)
    g = gammasgn(x) * _pnp.exp(_lax.lgamma(x))
    pole = (x <= 0) & (x == _pnp.floor(x))
    return _pnp.where(pole, _pnp.where(x == 0, _pnp.inf, _pnp.nan), g)


def rgamma(x):
    """``1 / Gamma(x)`` (0 at the poles)."""
    x = _float(x)
    pole = (x <= 0) & (x == _pnp.floor(x))
    r = gammasgn(_pnp.where(pole, 1.0, x)) * _pnp.exp(-_lax.lgamma(_pnp.where(pole, 1.0, x)))
    return _pnp.where(pole, 0.0, r)


def loggamma(x):
    """``log Gamma(x)`` for real ``x > 0`` (NaN for ``x < 0``, as SciPy on reals)."""
    x = _float(x)
    return _pnp.where(x < 0, _pnp.nan, _lax.lgamma(x))


def betaln(a, b):
    """``log|B(a, b)|``."""
    a, b = _promote(a, b)
    return _lax.lgamma(a) + _lax.lgamma(b) - _lax.lgamma(a + b)


def beta(a, b):
    """``B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)``."""
    a, b = _promote(a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * _pnp.exp(betaln(a, b))


def multigammaln(a, d: int):
    """Log of the multivariate gamma function of dimension ``d`` (a static int)."""
    a = _float(a)
    d = int(d)
    out = 0.25 * d * (d - 1) * _math.log(_math.pi)
    for j in range(d):
        out = out + _lax.lgamma(a - 0.5 * j)
    return out


def factorial(n, exact: bool = False):
    """``n!`` as ``Gamma(n + 1)`` (0 for negative ``n``)."""
    if exact:
        raise _UnsupportedOptionError("factorial(exact=True) is not supported (as in JAX)")
    n = _float(n)
    return _pnp.where(n < 0, 0.0, gamma(n + 1.0))


def poch(z, m):
    """Pochhammer symbol ``Gamma(z + m) / Gamma(z)``."""
    z, m = _promote(z, m)
    return gamma(z + m) * rgamma(z)


# --- modified Bessel functions of order 0 and 1 -------------------------------------------
_BESSEL_SWITCH = 20.0
_BESSEL_SERIES = 60
_BESSEL_ASYM = 14


def _bessel_e(x, order: int):
    """``exp(-|x|) I_order(|x|)``: power series below 20, asymptotic expansion above."""
    ax = _pnp.abs(x)
    small = ax < _BESSEL_SWITCH
    xs = _pnp.where(small, ax, 0.0)
    q = 0.25 * xs * xs

    def series_step(k, st):
        term, total = st
        term = term * q / (k * (k + order))
        return term, total + term

    t0 = _pnp.ones_like(xs) if order == 0 else 0.5 * xs
    _, total = _lax.fori_loop(1, _BESSEL_SERIES, series_step, (t0, t0))
    series = total * _pnp.exp(-xs)
    xl = _pnp.where(small, _BESSEL_SWITCH, ax)
    mu = 4.0 * order * order

    def asym_step(k, st):
        term, total = st
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
        return term, total + term

    t0 = _pnp.ones_like(xl)
    _, total = _lax.fori_loop(1, _BESSEL_ASYM, asym_step, (t0, t0))
    asym = total / _pnp.sqrt(2 * _math.pi * xl)
    out = _pnp.where(small, series, asym)
    return out


def i0e(x):
    """Exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``."""
    x = _float(x)
    return _pnp.where(_pnp.isinf(x), 0.0, _bessel_e(x, 0))


def i1e(x):
    """Exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``."""
    x = _float(x)
    return _pnp.where(_pnp.isinf(x), 0.0, _pnp.sign(x) * _bessel_e(x, 1))


def i0(x):
    """Modified Bessel function of order 0."""
    x = _float(x)
    return _pnp.exp(_pnp.abs(x)) * i0e(x)


def i1(x):
    """Modified Bessel function of order 1."""
    x = _float(x)
    return _pnp.exp(_pnp.abs(x)) * i1e(x)


# --- regularized incomplete gamma -------------------------------------------------------
_IGAMMA_ITERS = 200


def _igamma_log_prefix(a, x):
    return a * _pnp.log(x) - x - _lax.lgamma(a)


def _igamma_raw(a, x):
    """``(P, Q)`` regularized: series for ``x < a + 1``, Lentz's continued fraction
    otherwise (each run with a fixed count of terms under ``fori_loop``)."""
    use_series = x < a + 1.0
    xs = _pnp.where(x > 0, x, 1.0)
    pre = _pnp.exp(_igamma_log_prefix(a, xs))

    def series_step(i, st):
        term, total, ap = st
        ap = ap + 1.0
        term = term * xs / ap
        return term, total + term, ap

    t0 = 1.0 / a
    _, total, _ = _lax.fori_loop(0, _IGAMMA_ITERS, series_step, (t0, t0, a))
    p_series = pre * total

    tiny = 1e-300 if x.dtype == _pnp.float64 else 1e-30
    b0 = xs + 1.0 - a
    d0 = 1.0 / b0
    h0 = d0

    def cf_step(i, st):
        b, c, d, h = st
        k = i + 1.0
        an = -k * (k - a)
        b = b + 2.0
        d = an * d + b
        d = _pnp.where(_pnp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = _pnp.where(_pnp.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        return b, c, d, h * d * c

    _, _, _, h = _lax.fori_loop(0, _IGAMMA_ITERS, cf_step,
                               (b0, _pnp.full_like(xs, 1.0 / tiny), d0, h0))
    q_cf = pre * h
    p = _pnp.where(use_series, p_series, 1.0 - q_cf)
    # Q by the fraction also for x >= 0.5 above a (1 - P would cancel there)
    q = _pnp.where(use_series & ((x < 0.5) | (x < a)), 1.0 - p_series, q_cf)
    return p, q


def _igamma_fix(a, x, v, at_zero, at_inf):
    v = _pnp.where(x == 0, at_zero, v)
    v = _pnp.where(_pnp.isinf(x) & (x > 0), at_inf, v)
    return _pnp.where((a <= 0) | (x < 0) | _pnp.isnan(a) | _pnp.isnan(x), _pnp.nan, v)


@_custom_jvp
def _gammainc(a, x):
    return _igamma_fix(a, x, _igamma_raw(a, x)[0], 0.0, 1.0)


@_custom_jvp
def _gammaincc(a, x):
    return _igamma_fix(a, x, _igamma_raw(a, x)[1], 1.0, 0.0)


def _dx(a, x):
    xs = _pnp.where(x > 0, x, 1.0)
    return _pnp.where(x > 0, _pnp.exp((a - 1.0) * _pnp.log(xs) - xs - _lax.lgamma(a)), 0.0)


@_gammainc.defjvp
def _gammainc_jvp(primals, tangents):
    a, x = primals
    _, gx = tangents
    return _gammainc(a, x), gx * _dx(a, x)


@_gammaincc.defjvp
def _gammaincc_jvp(primals, tangents):
    a, x = primals
    _, gx = tangents
    return _gammaincc(a, x), -gx * _dx(a, x)


def gammainc(a, x):
    """Regularized lower incomplete gamma ``P(a, x)`` (differentiable in ``x`` only,
    as in JAX's default)."""
    a, x = _promote(a, x)
    return _gammainc(a, x)


def gammaincc(a, x):
    """Regularized upper incomplete gamma ``Q(a, x) = 1 - P(a, x)``."""
    a, x = _promote(a, x)
    return _gammaincc(a, x)


# --- small extras -------------------------------------------------------------------------
def erfcx(x):
    """Scaled complementary error function ``exp(x^2) erfc(x)``: direct below a
    threshold (25 in float64, 9 in float32), the asymptotic series above it."""
    x = _float(x)
    top = 25.0 if x.dtype == _pnp.float64 else 9.0
    big = x >= top
    xd = _pnp.where(big, 0.0, x)
    direct = _pnp.exp(xd * xd) * _lax.erfc(xd)
    xa = _pnp.where(big, x, top)
    z = 1.0 / (2.0 * xa * xa)
    s, term = _pnp.ones_like(z), _pnp.ones_like(z)
    for k in range(1, 8):            # sum (-1)^k (2k-1)!! / (2 x^2)^k
        term = -term * (2 * k - 1) * z
        s = s + term
    asym = s / (xa * _math.sqrt(_math.pi))
    return _pnp.where(big, _pnp.where(_pnp.isinf(x), 0.0, asym), direct)


def boxcox(x, lmbda):
    """Box-Cox transform ``(x^l - 1) / l`` (``log x`` at ``l == 0``)."""
    x, lmbda = _promote(x, lmbda)
    zero = lmbda == 0
    lx = _pnp.log(x)
    return _pnp.where(zero, lx, _pnp.expm1(lmbda * lx) / _pnp.where(zero, 1.0, lmbda))


def boxcox1p(x, lmbda):
    """Box-Cox transform of ``1 + x``."""
    x, lmbda = _promote(x, lmbda)
    zero = lmbda == 0
    lx = _pnp.log1p(x)
    return _pnp.where(zero, lx, _pnp.expm1(lmbda * lx) / _pnp.where(zero, 1.0, lmbda))


def comb(N, k, *, exact: bool = False, repetition: bool = False):
    """Binomial coefficient ``N choose k`` through ``gammaln`` (0 outside ``0 <= k <= N``)."""
    if exact:
        raise _UnsupportedOptionError("comb(exact=True) is not supported (as in JAX)")
    N, k = _promote(N, k)
    if repetition:
        N = N + k - 1.0
    ok = (k >= 0) & (N >= 0) & (k <= N)
    v = _pnp.exp(_lax.lgamma(N + 1.0) - _lax.lgamma(k + 1.0) - _lax.lgamma(N - k + 1.0))
    return _pnp.where(ok, v, 0.0)


# --- regularized incomplete beta ----------------------------------------------------------
def _betacf(a, b, x):
    """Lentz's continued fraction of ``I_x(a, b)`` (converges for ``x < (a+1)/(a+b+2)``)."""
    tiny = 1e-300 if x.dtype == _pnp.float64 else 1e-30

    def guard(v):
        return _pnp.where(_pnp.abs(v) < tiny, tiny, v)

    d0 = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))

    def step(i, st):
        c, d, h = st
        m = i + 1.0
        aa = m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m))
        d = 1.0 / guard(1.0 + aa * d)
        c = guard(1.0 + aa / c)
        h = h * d * c
        aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))
        d = 1.0 / guard(1.0 + aa * d)
        c = guard(1.0 + aa / c)
        return c, d, h * d * c

    _, _, h = _lax.fori_loop(0, _IGAMMA_ITERS, step, (_pnp.ones_like(x), d0, d0))
    return h


def _betainc_raw(a, b, x):
    flip = x > (a + 1.0) / (a + b + 2.0)
    aa, bb = _pnp.where(flip, b, a), _pnp.where(flip, a, b)
    xx = _pnp.where(flip, 1.0 - x, x)
    xs = _pnp.clip(xx, 1e-300 if x.dtype == _pnp.float64 else 1e-30, 1.0)
    log_front = aa * _pnp.log(xs) + bb * _pnp.log1p(-xs) - betaln(aa, bb) - _pnp.log(aa)
    v = _pnp.exp(log_front) * _betacf(aa, bb, xs)
    v = _pnp.where(flip, 1.0 - v, v)
    v = _pnp.where(x <= 0, 0.0, _pnp.where(x >= 1, 1.0, v))
    bad = (a <= 0) | (b <= 0) | (x < 0) | (x > 1) | _pnp.isnan(a) | _pnp.isnan(b) | _pnp.isnan(x)
    return _pnp.where(bad, _pnp.nan, v)


@_custom_jvp
def _betainc(a, b, x):
    return _betainc_raw(a, b, x)


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    a, b, x = primals
    gx = tangents[2]
    inside = (x > 0) & (x < 1)
    xs = _pnp.where(inside, x, 0.5)
    dens = _pnp.exp((a - 1.0) * _pnp.log(xs) + (b - 1.0) * _pnp.log1p(-xs) - betaln(a, b))
    return _betainc(a, b, x), gx * _pnp.where(inside, dens, 0.0)


def betainc(a, b, x):
    """Regularized incomplete beta ``I_x(a, b)`` (continued fraction with the
    symmetry ``1 - I_{1-x}(b, a)``; differentiable in ``x``)."""
    a, b, x = _promote(a, b, x)
    return _betainc(a, b, x)


# --- exponential integrals ----------------------------------------------------------------
_EULER = 0.5772156649015329
_EXPINT_TERMS = 100


def _ein(x):
    """``sum_{k>=1} x^k / (k k!)`` (power series, fixed number of terms)."""
    def step(k, st):
        term, total = st
        term = term * x / k
        return term, total + term / k

    _, total = _lax.fori_loop(1, _EXPINT_TERMS, step, (_pnp.ones_like(x), _pnp.zeros_like(x)))
    return total


def exp1(x):
    """Exponential integral ``E1(x) = integral_x^inf exp(-t)/t dt`` for ``x > 0``
    (``inf`` at 0, NaN below): series up to 1, Lentz's continued fraction above."""
    x = _float(x)
    small = x <= 1.0
    xs = _pnp.where(small & (x > 0), x, 1.0)
    series = -_EULER - _pnp.log(xs) - _ein(-xs)
    xl = _pnp.where(small, 2.0, x)
    tiny = 1e-300 if x.dtype == _pnp.float64 else 1e-30
    b0 = xl + 1.0

    def step(i, st):          # E1(x) = exp(-x) / (x + 1 - 1/(x + 3 - 4/(x + 5 - ...)))
        b, c, d, h = st
        an = -(i + 1.0) * (i + 1.0)
        b = b + 2.0
        d = 1.0 / _pnp.where(_pnp.abs(an * d + b) < tiny, tiny, an * d + b)
        c = b + an / c
        c = _pnp.where(_pnp.abs(c) < tiny, tiny, c)
        return b, c, d, h * c * d

    _, _, _, h = _lax.fori_loop(0, 200, step, (b0, _pnp.full_like(xl, 1.0 / tiny), 1.0 / b0,
                                              1.0 / b0))
    cf = h * _pnp.exp(-xl)
    out = _pnp.where(small, series, cf)
    out = _pnp.where(x == 0, _pnp.inf, out)
    out = _pnp.where(_pnp.isinf(x) & (x > 0), 0.0, out)
    return _pnp.where((x < 0) | _pnp.isnan(x), _pnp.nan, out)


def expi(x):
    """Exponential integral ``Ei(x)`` (``-E1(-x)`` for ``x < 0``; series below 40 and
    the asymptotic expansion above for ``x > 0``)."""
    x = _float(x)
    neg = x < 0
    e1 = -exp1(_pnp.where(neg, -x, 1.0))
    mid = (x > 0) & (x < 40.0)
    xm = _pnp.where(mid, x, 1.0)
    series = _EULER + _pnp.log(xm) + _ein(xm)
    xa = _pnp.where(x >= 40.0, x, 40.0)
    term, total = _pnp.ones_like(xa), _pnp.ones_like(xa)
    for k in range(1, 30):       # Ei(x) ~ exp(x)/x sum k!/x^k
        term = term * k / xa
        total = total + term
    asym = _pnp.exp(xa) / xa * total
    out = _pnp.where(neg, e1, _pnp.where(mid, series, asym))
    out = _pnp.where(x == 0, -_pnp.inf, out)
    return _pnp.where(_pnp.isnan(x), _pnp.nan, out)


def bernoulli(n: int):
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``) for a static int ``n``,
    computed exactly in rational arithmetic."""
    from fractions import Fraction
    n = int(n)
    if n < 0:
        raise ValueError(f"bernoulli: n must be >= 0, got {n}")
    b = []
    for m in range(n + 1):
        acc = Fraction(1 if m == 0 else 0)
        for k in range(m):
            acc -= Fraction(_math.comb(m + 1, k)) * b[k]
        b.append(acc / (m + 1) if m else Fraction(1))
    return _pnp.asarray([float(v) for v in b])
