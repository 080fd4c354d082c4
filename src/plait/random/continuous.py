"""Continuous and discrete distributions built on the basic samplers, following
``jax.random``'s constructions (so the ones that are transformations of uniforms and
normals give JAX's numbers for the same key, up to the last bits of ``log``/``exp``):
exponential, laplace, logistic, cauchy, pareto, weibull_min, rayleigh, maxwell,
double_sided_maxwell, lognormal, wald, triangular, rademacher, geometric, gamma,
loggamma, beta, dirichlet, chisquare, f, t, generalized_normal, ball, poisson,
binomial, multinomial, multivariate_normal, orthogonal.

The rejection samplers (gamma: Marsaglia-Tsang; poisson: inversion below rate 10 and
Hörmann's PTRS above; binomial: inversion) are plait's own vectorized ``while_loop``s,
correct in distribution but not JAX's per-element-key bits.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitValueError
from plait.random.distributions import (_float_dtype, bernoulli, default_int, normal,
                                        uniform)
from plait.random.keys import _shape, check_key, split


def _shape_of(shape, *params):
    if shape is None:
        return pnp.broadcast_shapes(*[pnp.shape(p) for p in params]) if params else ()
    return _shape(shape)


def _p(x, dt):
    return pnp.asarray(x, dtype=dt)


def exponential(key, shape: Sequence[int] = (), dtype=None):
    """Exponential(1) samples ``-log1p(-u)``."""
    check_key(key, "exponential")
    dt = _float_dtype(dtype, "exponential")
    return -pnp.log1p(-uniform(key, shape, dt))


def laplace(key, shape: Sequence[int] = (), dtype=None):
    """Laplace(0, 1) samples."""
    check_key(key, "laplace")
    dt = _float_dtype(dtype, "laplace")
    u = uniform(key, shape, dt, -1.0 + np.finfo(dt).epsneg, 1.0)
    return pnp.sign(u) * pnp.log1p(-pnp.abs(u))


def logistic(key, shape: Sequence[int] = (), dtype=None):
    """Standard logistic samples ``log(u / (1 - u))``."""
    check_key(key, "logistic")
    dt = _float_dtype(dtype, "logistic")
    x = uniform(key, shape, dt, np.finfo(dt).eps, 1.0)
    return pnp.log(x / (1 - x))


def cauchy(key, shape: Sequence[int] = (), dtype=None):
    """Standard Cauchy samples ``tan(pi (u - 1/2))``."""
    check_key(key, "cauchy")
    dt = _float_dtype(dtype, "cauchy")
    u = uniform(key, shape, dt, np.finfo(dt).eps, 1.0)
    return pnp.tan(_p(np.pi, dt) * (u - _p(0.5, dt)))


def pareto(key, b, shape: Sequence[int] | None = None, dtype=None):
    """Pareto(b) samples ``exp(e / b)`` on ``[1, inf)``."""
    check_key(key, "pareto")
    dt = _float_dtype(dtype, "pareto")
    b = _p(b, dt)
    return pnp.exp(exponential(key, _shape_of(shape, b), dt) / b)


def weibull_min(key, scale, concentration, shape: Sequence[int] = (), dtype=None):
    """Weibull samples ``scale * (-log1p(-u)) ** (1 / concentration)``."""
    check_key(key, "weibull_min")
    dt = _float_dtype(dtype, "weibull_min")
    u = uniform(key, shape, dt)
    return pnp.power(-pnp.log1p(-u), 1.0 / _p(concentration, dt)) * _p(scale, dt)


def rayleigh(key, scale, shape: Sequence[int] | None = None, dtype=None):
    """Rayleigh(scale) samples ``scale * sqrt(-2 log u)``."""
    check_key(key, "rayleigh")
    dt = _float_dtype(dtype, "rayleigh")
    scale = _p(scale, dt)
    u = uniform(key, _shape_of(shape, scale), dt)
    return scale * pnp.sqrt(pnp.log(u) * _p(-2, dt))


def maxwell(key, shape: Sequence[int] = (), dtype=None):
    """Maxwell samples: the norm of a 3-D standard normal vector."""
    check_key(key, "maxwell")
    dt = _float_dtype(dtype, "maxwell")
    z = normal(key, _shape(shape) + (3,), dt)
    return pnp.sqrt(pnp.sum(z * z, axis=-1))


def rademacher(key, shape: Sequence[int] = (), dtype=None):
    """+-1 with probability 1/2 each (``dtype`` default: plait's default int)."""
    check_key(key, "rademacher")
    dt = default_int() if dtype is None else np.dtype(dtype)
    b = bernoulli(key, 0.5, _shape(shape)).astype(dt)
    return (2 * b - 1).astype(dt)


def double_sided_maxwell(key, loc, scale, shape: Sequence[int] = (), dtype=None):
    """``loc + scale * s * m``: ``m`` Maxwell, ``s`` Rademacher."""
    check_key(key, "double_sided_maxwell")
    dt = _float_dtype(dtype, "double_sided_maxwell")
    shape = _shape(shape) + pnp.broadcast_shapes(pnp.shape(loc), pnp.shape(scale))
    k1, k2 = split(key)
    return rademacher(k2, shape, dt) * maxwell(k1, shape, dt) * _p(scale, dt) + _p(loc, dt)


def lognormal(key, sigma=1.0, shape: Sequence[int] | None = None, dtype=None):
    """``exp(sigma * z)``, ``z`` standard normal."""
    check_key(key, "lognormal")
    dt = _float_dtype(dtype, "lognormal")
    sigma = _p(sigma, dt)
    return pnp.exp(normal(key, _shape_of(shape, sigma), dt) * sigma)


def wald(key, mean, shape: Sequence[int] | None = None, dtype=None):
    """Wald (inverse Gaussian with scale 1) samples (Michael-Schucany-Haas)."""
    check_key(key, "wald")
    dt = _float_dtype(dtype, "wald")
    mean = _p(mean, dt)
    shape = _shape_of(shape, mean)
    k1, k2 = split(key)
    v = normal(k1, shape, dt)
    z = uniform(k2, shape, dt)
    y = v * v
    my = mean * y
    x = mean + mean * my / 2 - mean / 2 * pnp.sqrt(4 * my + my * my)
    return pnp.where(z <= mean / (mean + x), x, mean * mean / x)


def triangular(key, left, mode, right, shape: Sequence[int] | None = None, dtype=None):
    """Triangular(left, mode, right) samples by inverse CDF."""
    check_key(key, "triangular")
    dt = _float_dtype(dtype, "triangular")
    left, mode, right = _p(left, dt), _p(mode, dt), _p(right, dt)
    u = uniform(key, _shape_of(shape, left, mode, right), dt)
    fc = (mode - left) / (right - left)
    x1 = left + pnp.sqrt(u * (right - left) * (mode - left))
    x2 = right - pnp.sqrt((1 - u) * (right - left) * (right - mode))
    return pnp.where(u < fc, x1, x2)


def geometric(key, p, shape: Sequence[int] | None = None, dtype=None):
    """Number of Bernoulli(p) trials up to the first success (>= 1)."""
    check_key(key, "geometric")
    p = pnp.asarray(p)
    if not pnp.issubdtype(p.dtype, pnp.floating):
        p = p.astype(_float_dtype(None, "geometric"))
    dt = default_int() if dtype is None else np.dtype(dtype)
    u = uniform(key, _shape_of(shape, p), p.dtype)
    u = pnp.where(u == 0, pnp.asarray(1, p.dtype), u)
    return (pnp.floor(pnp.log(u) / pnp.log1p(-p)) + 1).astype(dt)


# --- gamma family -----------------------------------------------------------------------

def _gamma_mt(key, a, shape, dt, log_space: bool):
    """Marsaglia-Tsang for ``a >= 1`` on ``a' = a + 1`` where ``a < 1`` (boosted by
    ``u ** (1/a)``); a vectorized rejection loop that stops when every lane accepted."""
    a = pnp.broadcast_to(a, shape)
    boost = a < 1
    ab = pnp.where(boost, a + 1, a)
    d = ab - 1.0 / 3.0
    c = 1.0 / pnp.sqrt(9.0 * d)
    kb, key = split(key)

    def cond(state):
        return pnp.any(~state[2])

    def body(state):
        k, v, done = state
        k, k1, k2 = split(k, 3)
        x = normal(k1, shape, dt)
        u = uniform(k2, shape, dt)
        t = 1.0 + c * x
        vv = t * t * t
        ok = (t > 0) & (pnp.log(u) < 0.5 * x * x + d - d * vv + d * pnp.log(
            pnp.where(t > 0, vv, 1.0)))
        take = ok & ~done
        return k, pnp.where(take, vv, v), done | ok

    init = (key, pnp.ones(shape, dt), pnp.zeros(shape, bool))
    _, v, _ = lax.while_loop(cond, body, init)
    log_u = pnp.log(uniform(kb, shape, dt, np.finfo(dt).tiny, 1.0))
    log_boost = pnp.where(boost, log_u / pnp.where(a > 0, a, 1.0), 0.0)
    if log_space:
        return pnp.log(d) + pnp.log(v) + log_boost
    return d * v * pnp.exp(log_boost)


def _gamma_cdf(a, x, terms: int = 320):
    """Regularized lower incomplete gamma ``P(a, x)`` by its power series
    ``x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n))`` (accurate while
    ``x`` is below about 200, i.e. for ``a`` up to several hundred)."""
    def body(i, c):
        term, acc = c
        term = term * x / (a + i.astype(x.dtype))
        return term, acc + term
    one = pnp.ones_like(x)
    _, s = lax.fori_loop(1, terms, body, (one, one))
    return pnp.exp(a * pnp.log(x) - x - lax.lgamma(a + 1)) * s


def _gamma_dx_da(a, x):
    """``dx/da`` of a Gamma(a) sample at fixed CDF value (implicit reparameterization:
    ``-(dP/da) / pdf``), with ``dP/da`` by forward differentiation of the series."""
    from plait.transforms.api_ad import jvp
    a, x = lax.stop_gradient(a), lax.stop_gradient(x)
    dp_da = jvp(lambda t: _gamma_cdf(t, x), (a,), (pnp.ones_like(a),))[1]
    log_pdf = (a - 1) * pnp.log(x) - x - lax.lgamma(a)
    return -dp_da / pnp.exp(log_pdf)


def gamma(key, a, shape: Sequence[int] | None = None, dtype=None):
    """Gamma(a, 1) samples (Marsaglia-Tsang rejection), differentiable in ``a`` by
    implicit reparameterization (``dx/da = -(dP(a, x)/da) / p(x; a)``, as JAX)."""
    from plait.transforms.custom_derivatives import custom_jvp
    check_key(key, "gamma")
    dt = _float_dtype(dtype, "gamma")
    a = _p(a, dt)
    shape = _shape_of(shape, a)

    def sample(k, alpha):
        return _gamma_mt(k, lax.stop_gradient(alpha), shape, dt, False)

    f = custom_jvp(sample)

    @f.defjvp
    def _rule(primals, tangents):
        k, alpha = primals
        x = sample(k, alpha)
        return x, _gamma_dx_da(pnp.broadcast_to(alpha, shape), x) * tangents[1]

    return f(key, a)


def loggamma(key, a, shape: Sequence[int] | None = None, dtype=None):
    """``log`` of Gamma(a, 1) samples, accurate for small ``a`` (no underflow);
    differentiable in ``a`` like :func:`gamma` (where ``exp`` of the sample is normal)."""
    from plait.transforms.custom_derivatives import custom_jvp
    check_key(key, "loggamma")
    dt = _float_dtype(dtype, "loggamma")
    a = _p(a, dt)
    shape = _shape_of(shape, a)

    def sample(k, alpha):
        return _gamma_mt(k, lax.stop_gradient(alpha), shape, dt, True)

    f = custom_jvp(sample)

    @f.defjvp
    def _rule(primals, tangents):       # d log x / da = (dx/da) / x
        k, alpha = primals
        lx = sample(k, alpha)
        x = pnp.exp(lx)
        return lx, _gamma_dx_da(pnp.broadcast_to(alpha, shape), x) / x * tangents[1]

    return f(key, a)


def chisquare(key, df, shape: Sequence[int] | None = None, dtype=None):
    """Chi-square(df) samples ``2 * gamma(df / 2)``."""
    check_key(key, "chisquare")
    dt = _float_dtype(dtype, "chisquare")
    df = _p(df, dt)
    return 2.0 * gamma(key, df / 2, _shape_of(shape, df), dt)


def f(key, dfnum, dfden, shape: Sequence[int] | None = None, dtype=None):
    """F(dfnum, dfden) samples: a ratio of scaled chi-squares."""
    check_key(key, "f")
    dt = _float_dtype(dtype, "f")
    dfnum, dfden = _p(dfnum, dt), _p(dfden, dt)
    shape = _shape_of(shape, dfnum, dfden)
    k1, k2 = split(key)
    return (chisquare(k1, dfnum, shape, dt) / dfnum) / (chisquare(k2, dfden, shape, dt) / dfden)


def t(key, df, shape: Sequence[int] | None = None, dtype=None):
    """Student's t(df) samples ``z * sqrt(df/2 / gamma(df/2))``."""
    check_key(key, "t")
    dt = _float_dtype(dtype, "t")
    df = _p(df, dt)
    shape = _shape_of(shape, df)
    kn, kg = split(key)
    half = df / 2
    return normal(kn, shape, dt) * pnp.sqrt(half / gamma(kg, half, shape, dt))


def beta(key, a, b, shape: Sequence[int] | None = None, dtype=None):
    """Beta(a, b) samples from two log-gammas (stable for small ``a``, ``b``)."""
    check_key(key, "beta")
    dt = _float_dtype(dtype, "beta")
    a, b = _p(a, dt), _p(b, dt)
    shape = _shape_of(shape, a, b)
    ka, kb = split(key)
    ga = loggamma(ka, a, shape, dt)
    gb = loggamma(kb, b, shape, dt)
    m = pnp.maximum(ga, gb)
    ea, eb = pnp.exp(ga - m), pnp.exp(gb - m)
    return ea / (ea + eb)


def dirichlet(key, alpha, shape: Sequence[int] | None = None, dtype=None):
    """Dirichlet(alpha) samples (normalized log-gammas) over ``alpha``'s last axis."""
    check_key(key, "dirichlet")
    dt = _float_dtype(dtype, "dirichlet")
    alpha = _p(alpha, dt)
    if alpha.ndim < 1:
        raise PlaitValueError("random.dirichlet: alpha needs at least one dimension")
    batch = alpha.shape[:-1] if shape is None else _shape(shape)
    lg = loggamma(key, alpha, tuple(batch) + alpha.shape[-1:], dt)
    lg = lg - pnp.max(lg, axis=-1, keepdims=True)
    e = pnp.exp(lg)
    return e / pnp.sum(e, axis=-1, keepdims=True)


def generalized_normal(key, p, shape: Sequence[int] = (), dtype=None):
    """Generalized normal samples with density proportional to ``exp(-|x|**p)``."""
    check_key(key, "generalized_normal")
    dt = _float_dtype(dtype, "generalized_normal")
    p = _p(p, dt)
    k1, k2 = split(key)
    g = gamma(k1, 1 / p, shape, dt)
    r = rademacher(k2, shape, dt)
    return r * g ** (1 / p)


def ball(key, d: int, p: float = 2, shape: Sequence[int] = (), dtype=None):
    """Samples uniform in the unit ``p``-norm ball of dimension ``d``."""
    check_key(key, "ball")
    dt = _float_dtype(dtype, "ball")
    shape = _shape(shape)
    k1, k2 = split(key)
    g = generalized_normal(k1, p, shape + (int(d),), dt)
    e = exponential(k2, shape, dt)
    return g / ((pnp.sum(pnp.abs(g) ** p, axis=-1) + e) ** (1 / p))[..., None]


# --- counts -------------------------------------------------------------------------------

def poisson(key, lam, shape: Sequence[int] | None = None, dtype=None):
    """Poisson(lam) counts: sequential inversion for ``lam < 10``, Hörmann's PTRS
    transformed rejection for ``lam >= 10``."""
    check_key(key, "poisson")
    fdt = _float_dtype(None, "poisson")
    dt = default_int() if dtype is None else np.dtype(dtype)
    lam = _p(lax.stop_gradient(pnp.asarray(lam)), fdt)
    shape = _shape_of(shape, lam)
    lam = pnp.broadcast_to(lam, shape)
    k_inv, k_rej = split(key)
    small = lam < 10
    ls = pnp.where(small, lam, 1.0)
    u = uniform(k_inv, shape, fdt)

    def icond(s):
        return pnp.any(s[2] < u)

    def ibody(s):
        k, p, cdf = s
        step = cdf < u
        k1 = k + 1
        p1 = p * ls / k1
        return pnp.where(step, k1, k), pnp.where(step, p1, p), pnp.where(step, cdf + p1, cdf)

    p0 = pnp.exp(-ls)
    k_small, _, _ = lax.while_loop(icond, ibody, (pnp.zeros(shape, fdt), p0, p0))

    lr = pnp.where(small, 10.0, lam)
    log_lam = pnp.log(lr)
    b = 0.931 + 2.53 * pnp.sqrt(lr)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)

    def rcond(s):
        return pnp.any(~s[2])

    def rbody(s):
        k, val, done = s
        k, k1, k2 = split(k, 3)
        uu = uniform(k1, shape, fdt) - 0.5
        v = uniform(k2, shape, fdt)
        us = 0.5 - pnp.abs(uu)
        kk = pnp.floor((2 * a / us + b) * uu + lr + 0.43)
        s1 = (us >= 0.07) & (v <= vr)
        lhs = pnp.log(v * inv_alpha / (a / (us * us) + b))
        rhs = -lr + kk * log_lam - lax.lgamma(kk + 1)
        ok = (kk >= 0) & (s1 | ((us >= 0.013) | (v <= us)) & (lhs <= rhs))
        ok = ok | done
        take = ok & ~done
        return k, pnp.where(take, kk, val), ok

    init = (k_rej, pnp.zeros(shape, fdt), small)
    _, k_large, _ = lax.while_loop(rcond, rbody, init)
    return pnp.where(small, k_small, k_large).astype(dt)


def binomial(key, n, p, shape: Sequence[int] | None = None, dtype=None):
    """Binomial(n, p) counts by sequential inversion on ``min(p, 1 - p)`` (a loop of
    about ``n min(p, 1-p)`` steps)."""
    check_key(key, "binomial")
    fdt = _float_dtype(dtype, "binomial")
    n = _p(n, fdt)
    p = _p(p, fdt)
    shape = _shape_of(shape, n, p)
    n, p = pnp.broadcast_to(n, shape), pnp.broadcast_to(p, shape)
    flip = p > 0.5
    q = pnp.where(flip, 1 - p, p)
    qs = pnp.where(q > 0, q, 0.5)
    u = uniform(key, shape, fdt)
    ratio = qs / (1 - qs)
    pmf0 = pnp.where(q > 0, pnp.exp(n * pnp.log1p(-qs)), 1.0)

    def cond(s):
        return pnp.any((s[2] < u) & (s[0] < n))

    def body(s):
        k, pk, cdf = s
        step = (cdf < u) & (k < n)
        p1 = pk * ratio * (n - k) / (k + 1)
        return (pnp.where(step, k + 1, k), pnp.where(step, p1, pk),
                pnp.where(step, cdf + p1, cdf))

    k, _, _ = lax.while_loop(cond, body, (pnp.zeros(shape, fdt), pmf0, pmf0))
    return pnp.where(flip, n - k, k).astype(fdt)


def multinomial(key, n, p, shape: Sequence[int] | None = None, dtype=None):
    """Counts of ``n`` draws (a concrete int) from the categories of ``p`` (last axis)."""
    check_key(key, "multinomial")
    fdt = _float_dtype(dtype, "multinomial")
    p = _p(p, fdt)
    n = int(n)
    batch = p.shape[:-1] if shape is None else _shape(shape)[:-1]
    from plait.random.distributions import categorical
    idx = categorical(key, pnp.log(p), shape=(n,) + tuple(batch))
    onehot = idx[..., None] == pnp.arange(p.shape[-1])
    return pnp.sum(onehot, axis=0).astype(fdt)


# --- linear algebra -------------------------------------------------------------------------

def _cholesky(a):
    """Lower Cholesky factor of symmetric positive definite ``a`` (last two axes),
    column by column (``n`` is static; meant for the small covariances of sampling)."""
    n = a.shape[-1]
    cols = []
    for j in range(n):
        s = a[..., :, j]
        for k in range(j):
            s = s - cols[k] * cols[k][..., j:j + 1]
        d = pnp.sqrt(s[..., j:j + 1])
        mask = pnp.arange(n) >= j
        cols.append(pnp.where(mask, s / d, 0.0))
    return pnp.stack(cols, axis=-1)


def multivariate_normal(key, mean, cov, shape: Sequence[int] | None = None, dtype=None,
                        method: str = "cholesky"):
    """Samples ``mean + L z``, ``L L^T = cov`` (``method='cholesky'``)."""
    check_key(key, "multivariate_normal")
    if method != "cholesky":
        raise PlaitValueError(f"random.multivariate_normal: plait implements "
                              f"method='cholesky', got {method!r}")
    dt = _float_dtype(dtype, "multivariate_normal")
    mean, cov = _p(mean, dt), _p(cov, dt)
    batch = pnp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    shape = batch if shape is None else _shape(shape)
    z = normal(key, tuple(shape) + mean.shape[-1:], dt)
    factor = _cholesky(cov)
    return mean + pnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n: int, shape: Sequence[int] = (), dtype=None, m: int | None = None):
    """Random ``n x m`` matrices with orthonormal columns (or rows), Haar-distributed for
    square ones: the Q of a QR (modified Gram-Schmidt) of a normal matrix, signs fixed
    by R's diagonal."""
    check_key(key, "orthogonal")
    dt = _float_dtype(dtype, "orthogonal")
    m = n if m is None else int(m)
    z = normal(key, _shape(shape) + (n, m), dt)
    wide = m > n
    q = orthonormalize(pnp.swapaxes(z, -1, -2) if wide else z)
    return pnp.swapaxes(q, -1, -2) if wide else q


def orthonormalize(z):
    """The Q factor (positive R diagonal) of the tall matrices ``z`` (last two axes), by
    modified Gram-Schmidt over the (static) columns."""
    cols = []
    for j in range(z.shape[-1]):
        v = z[..., :, j]
        for q in cols:
            v = v - pnp.sum(q * v, axis=-1, keepdims=True) * q
        cols.append(v / pnp.sqrt(pnp.sum(v * v, axis=-1, keepdims=True)))
    return pnp.stack(cols, axis=-1)
