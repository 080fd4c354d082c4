"""``plait.scipy.stats``: densities, distribution functions and quantiles of the
distributions ``jax.scipy.stats`` covers, composed from ``plait.scipy.special``.

Each distribution is a namespace (``stats.norm.logpdf(x, loc, scale)``, as JAX). Values
outside a support give ``-inf`` log densities; invalid parameters give NaN.
"""

import math as _math
from types import SimpleNamespace as _SimpleNamespace

import plait.numpy as _pnp
from plait.errors import UnsupportedOptionError as _UnsupportedOptionError
from plait.scipy import special as _sp

_LOG_2PI = _math.log(2 * _math.pi)
_SQRT2 = _math.sqrt(2.0)
_NEG_INF = -_math.inf


def _args(*xs):
    return _sp._promote(*xs)


def _std(x, loc, scale):
    x, loc, scale = _args(x, loc, scale)
    return (x - loc) / scale, scale


def _logpdf_support(ok, value):
    return _pnp.where(ok, value, _NEG_INF)


def _exp(f):
    return lambda *a, **k: _pnp.exp(f(*a, **k))


def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``, accurate near 0 and for very negative ``x``."""
    return _pnp.where(x > -0.6931471805599453, _pnp.log(-_pnp.expm1(x)), _pnp.log1p(-_pnp.exp(x)))


# --- normal --------------------------------------------------------------------------------
def _norm_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -0.5 * z * z - 0.5 * _LOG_2PI - _pnp.log(scale)


def _norm_cdf(x, loc=0.0, scale=1.0):
    return _sp.ndtr(_std(x, loc, scale)[0])


def _norm_logcdf(x, loc=0.0, scale=1.0):
    return _sp.log_ndtr(_std(x, loc, scale)[0])


def _norm_sf(x, loc=0.0, scale=1.0):
    return _sp.ndtr(-_std(x, loc, scale)[0])


def _norm_logsf(x, loc=0.0, scale=1.0):
    return _sp.log_ndtr(-_std(x, loc, scale)[0])


def _norm_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc + scale * _sp.ndtri(q)


def _norm_isf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc - scale * _sp.ndtri(q)


norm = _SimpleNamespace(logpdf=_norm_logpdf, pdf=_exp(_norm_logpdf), cdf=_norm_cdf,
                       logcdf=_norm_logcdf, sf=_norm_sf, logsf=_norm_logsf, ppf=_norm_ppf,
                       isf=_norm_isf)


# --- multivariate normal -----------------------------------------------------------------
def _cholesky(a):
    """Lower Cholesky factor of a small SPD matrix (last two axes), unrolled over the
    static dimension."""
    n = a.shape[-1]
    cols = []
    for j in range(n):
        s = a[..., :, j]
        for k in range(j):
            s = s - cols[k] * cols[k][..., j:j + 1]
        d = _pnp.sqrt(s[..., j:j + 1])
        rows = _pnp.arange(n)
        cols.append(_pnp.where(rows >= j, s / d, 0.0))
    return _pnp.stack(cols, axis=-1)


def _forward(l, b):
    """Solve ``l y = b`` for lower-triangular ``l`` (``b`` a vector in the last axis)."""
    n = l.shape[-1]
    ys = []
    for i in range(n):
        s = b[..., i]
        for k in range(i):
            s = s - l[..., i, k] * ys[k]
        ys.append(s / l[..., i, i])
    return _pnp.stack(ys, axis=-1)


def _mvn_logpdf(x, mean, cov, allow_singular=None):
    x, mean, cov = _sp._float(x), _sp._float(mean), _sp._float(cov)
    dt = _pnp.result_type(x, mean, cov)
    x, mean, cov = x.astype(dt), mean.astype(dt), cov.astype(dt)
    if cov.ndim < 2:
        cov = _pnp.eye(max(x.shape[-1:] or (1,)), dtype=dt) * cov
    n = cov.shape[-1]
    l = _cholesky(cov)
    z = _forward(l, _pnp.broadcast_to(x - mean, _pnp.broadcast_shapes((x - mean).shape, (n,))))
    logdet = 2.0 * _pnp.sum(_pnp.log(_pnp.diagonal(l, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (n * _LOG_2PI + logdet + _pnp.sum(z * z, axis=-1))


multivariate_normal = _SimpleNamespace(logpdf=_mvn_logpdf, pdf=_exp(_mvn_logpdf))


# --- Student t ---------------------------------------------------------------------------
def _t_logpdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _args(x, df, loc, scale)
    z = (x - loc) / scale
    return (_sp.gammaln(0.5 * (df + 1)) - _sp.gammaln(0.5 * df) - 0.5 * _pnp.log(df * _math.pi)
            - _pnp.log(scale) - 0.5 * (df + 1) * _pnp.log1p(z * z / df))


t = _SimpleNamespace(logpdf=_t_logpdf, pdf=_exp(_t_logpdf))


# --- beta --------------------------------------------------------------------------------
def _beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _args(x, a, b, loc, scale)
    y = (x - loc) / scale
    v = _sp.xlogy(a - 1, y) + _sp.xlog1py(b - 1, -y) - _sp.betaln(a, b) - _pnp.log(scale)
    return _logpdf_support((y >= 0) & (y <= 1), v)


def _beta_cdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _args(x, a, b, loc, scale)
    return _sp.betainc(a, b, _pnp.clip((x - loc) / scale, 0.0, 1.0))


def _beta_sf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _args(x, a, b, loc, scale)
    return _sp.betainc(b, a, _pnp.clip(1.0 - (x - loc) / scale, 0.0, 1.0))


beta = _SimpleNamespace(logpdf=_beta_logpdf, pdf=_exp(_beta_logpdf), cdf=_beta_cdf,
                       logcdf=lambda *a: _pnp.log(_beta_cdf(*a)), sf=_beta_sf,
                       logsf=lambda *a: _pnp.log(_beta_sf(*a)))


# --- gamma and chi2 ----------------------------------------------------------------------
def _gamma_logpdf(x, a, loc=0.0, scale=1.0):
    x, a, loc, scale = _args(x, a, loc, scale)
    y = (x - loc) / scale
    v = _sp.xlogy(a - 1, y) - y - _sp.gammaln(a) - _pnp.log(scale)
    return _logpdf_support(y >= 0, v)


def _gamma_cdf(x, a, loc=0.0, scale=1.0):
    x, a, loc, scale = _args(x, a, loc, scale)
    return _sp.gammainc(a, _pnp.maximum((x - loc) / scale, 0.0))


def _gamma_sf(x, a, loc=0.0, scale=1.0):
    x, a, loc, scale = _args(x, a, loc, scale)
    return _sp.gammaincc(a, _pnp.maximum((x - loc) / scale, 0.0))


gamma = _SimpleNamespace(logpdf=_gamma_logpdf, pdf=_exp(_gamma_logpdf), cdf=_gamma_cdf,
                        logcdf=lambda *a: _pnp.log(_gamma_cdf(*a)), sf=_gamma_sf,
                        logsf=lambda *a: _pnp.log(_gamma_sf(*a)))


def _chi2_logpdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _args(x, df, loc, scale)
    return _gamma_logpdf(x, 0.5 * df, loc, 2.0 * scale)


def _chi2_cdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _args(x, df, loc, scale)
    return _gamma_cdf(x, 0.5 * df, loc, 2.0 * scale)


def _chi2_sf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _args(x, df, loc, scale)
    return _gamma_sf(x, 0.5 * df, loc, 2.0 * scale)


chi2 = _SimpleNamespace(logpdf=_chi2_logpdf, pdf=_exp(_chi2_logpdf), cdf=_chi2_cdf,
                       logcdf=lambda *a: _pnp.log(_chi2_cdf(*a)), sf=_chi2_sf,
                       logsf=lambda *a: _pnp.log(_chi2_sf(*a)))


# --- exponential, laplace, logistic, cauchy, uniform, gumbel ----------------------------
def _expon_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return _logpdf_support(z >= 0, -z - _pnp.log(scale))


def _expon_logsf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _pnp.where(z >= 0, -z, 0.0)


def _expon_logcdf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _pnp.where(z >= 0, _log1mexp(-_pnp.maximum(z, 0.0)), _NEG_INF)


def _expon_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc - scale * _pnp.log1p(-q)


expon = _SimpleNamespace(logpdf=_expon_logpdf, pdf=_exp(_expon_logpdf),
                        cdf=_exp(_expon_logcdf), logcdf=_expon_logcdf, sf=_exp(_expon_logsf),
                        logsf=_expon_logsf, ppf=_expon_ppf)


def _laplace_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -_pnp.abs(z) - _math.log(2.0) - _pnp.log(scale)


def _laplace_cdf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _pnp.where(z < 0, 0.5 * _pnp.exp(_pnp.minimum(z, 0.0)),
                     1.0 - 0.5 * _pnp.exp(-_pnp.maximum(z, 0.0)))


laplace = _SimpleNamespace(logpdf=_laplace_logpdf, pdf=_exp(_laplace_logpdf), cdf=_laplace_cdf)


def _logistic_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    az = _pnp.abs(z)
    return -az - 2.0 * _pnp.log1p(_pnp.exp(-az)) - _pnp.log(scale)


def _logistic_cdf(x, loc=0.0, scale=1.0):
    return _sp.expit(_std(x, loc, scale)[0])


def _logistic_sf(x, loc=0.0, scale=1.0):
    return _sp.expit(-_std(x, loc, scale)[0])


def _logistic_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc + scale * _sp.logit(q)


def _logistic_isf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc - scale * _sp.logit(q)


logistic = _SimpleNamespace(logpdf=_logistic_logpdf, pdf=_exp(_logistic_logpdf),
                           cdf=_logistic_cdf, sf=_logistic_sf, ppf=_logistic_ppf,
                           isf=_logistic_isf)


def _cauchy_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -_math.log(_math.pi) - _pnp.log(scale) - _pnp.log1p(z * z)


def _cauchy_cdf(x, loc=0.0, scale=1.0):
    return 0.5 + _pnp.arctan(_std(x, loc, scale)[0]) / _math.pi


def _cauchy_sf(x, loc=0.0, scale=1.0):
    return 0.5 - _pnp.arctan(_std(x, loc, scale)[0]) / _math.pi


def _cauchy_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc + scale * _pnp.tan(_math.pi * (q - 0.5))


def _cauchy_isf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc - scale * _pnp.tan(_math.pi * (q - 0.5))


cauchy = _SimpleNamespace(logpdf=_cauchy_logpdf, pdf=_exp(_cauchy_logpdf), cdf=_cauchy_cdf,
                         logcdf=lambda *a: _pnp.log(_cauchy_cdf(*a)), sf=_cauchy_sf,
                         logsf=lambda *a: _pnp.log(_cauchy_sf(*a)), ppf=_cauchy_ppf,
                         isf=_cauchy_isf)


def _uniform_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return _logpdf_support((z >= 0) & (z <= 1), -_pnp.log(scale))


def _uniform_cdf(x, loc=0.0, scale=1.0):
    return _pnp.clip(_std(x, loc, scale)[0], 0.0, 1.0)


def _uniform_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return _pnp.where((q >= 0) & (q <= 1), loc + q * scale, _pnp.nan)


uniform = _SimpleNamespace(logpdf=_uniform_logpdf, pdf=_exp(_uniform_logpdf), cdf=_uniform_cdf,
                          ppf=_uniform_ppf)


def _gumbel_r_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -z - _pnp.exp(-z) - _pnp.log(scale)


def _gumbel_r_logcdf(x, loc=0.0, scale=1.0):
    return -_pnp.exp(-_std(x, loc, scale)[0])


def _gumbel_r_logsf(x, loc=0.0, scale=1.0):
    return _log1mexp(_gumbel_r_logcdf(x, loc, scale))


def _gumbel_r_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc - scale * _pnp.log(-_pnp.log(q))


gumbel_r = _SimpleNamespace(logpdf=_gumbel_r_logpdf, pdf=_exp(_gumbel_r_logpdf),
                           logcdf=_gumbel_r_logcdf, cdf=_exp(_gumbel_r_logcdf),
                           logsf=_gumbel_r_logsf, sf=_exp(_gumbel_r_logsf), ppf=_gumbel_r_ppf)


def _neg_x(f):
    def g(x, loc=0.0, scale=1.0):
        x, loc, scale = _args(x, loc, scale)
        return f(-x, -loc, scale)
    return g


def _gumbel_l_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _args(q, loc, scale)
    return loc + scale * _pnp.log(-_pnp.log1p(-q))


gumbel_l = _SimpleNamespace(logpdf=_neg_x(_gumbel_r_logpdf), pdf=_exp(_neg_x(_gumbel_r_logpdf)),
                           logcdf=_neg_x(_gumbel_r_logsf), cdf=_exp(_neg_x(_gumbel_r_logsf)),
                           logsf=_neg_x(_gumbel_r_logcdf), sf=_exp(_neg_x(_gumbel_r_logcdf)),
                           ppf=_gumbel_l_ppf)


# --- pareto, vonmises, gennorm, truncnorm -------------------------------------------------
def _pareto_logpdf(x, b, loc=0.0, scale=1.0):
    x, b, loc, scale = _args(x, b, loc, scale)
    y = (x - loc) / scale
    return _logpdf_support(y >= 1, _pnp.log(b) - (b + 1) * _pnp.log(_pnp.maximum(y, 1.0))
                           - _pnp.log(scale))


def _pareto_logsf(x, b, loc=0.0, scale=1.0):
    x, b, loc, scale = _args(x, b, loc, scale)
    y = (x - loc) / scale
    return _pnp.where(y >= 1, -b * _pnp.log(_pnp.maximum(y, 1.0)), 0.0)


def _pareto_logcdf(x, b, loc=0.0, scale=1.0):
    ls = _pareto_logsf(x, b, loc, scale)
    return _pnp.where(ls < 0, _log1mexp(_pnp.minimum(ls, 0.0)), _NEG_INF)


def _pareto_ppf(q, b, loc=0.0, scale=1.0):
    q, b, loc, scale = _args(q, b, loc, scale)
    return loc + scale * _pnp.exp(-_pnp.log1p(-q) / b)


pareto = _SimpleNamespace(logpdf=_pareto_logpdf, pdf=_exp(_pareto_logpdf),
                         logsf=_pareto_logsf, sf=_exp(_pareto_logsf),
                         logcdf=_pareto_logcdf, cdf=_exp(_pareto_logcdf), ppf=_pareto_ppf)


def _vonmises_logpdf(x, kappa, loc=0.0, scale=1.0):
    x, kappa, loc, scale = _args(x, kappa, loc, scale)
    z = (x - loc) / scale
    return (kappa * (_pnp.cos(z) - 1.0) - _LOG_2PI - _pnp.log(_sp.i0e(kappa)) - _pnp.log(scale))


vonmises = _SimpleNamespace(logpdf=_vonmises_logpdf, pdf=_exp(_vonmises_logpdf))


def _gennorm_logpdf(x, beta, loc=0.0, scale=1.0):
    x, beta, loc, scale = _args(x, beta, loc, scale)
    z = (x - loc) / scale
    return (_pnp.log(0.5 * beta) - _sp.gammaln(1.0 / beta) - _pnp.abs(z) ** beta
            - _pnp.log(scale))


def _gennorm_cdf(x, beta, loc=0.0, scale=1.0):
    x, beta, loc, scale = _args(x, beta, loc, scale)
    z = (x - loc) / scale
    half = 0.5 * _sp.gammainc(1.0 / beta, _pnp.abs(z) ** beta)
    return 0.5 + _pnp.sign(z) * half


gennorm = _SimpleNamespace(logpdf=_gennorm_logpdf, pdf=_exp(_gennorm_logpdf), cdf=_gennorm_cdf)


def _log_diff_ndtr(a, b):
    """``log(ndtr(b) - ndtr(a))`` for ``a < b``, computed on the side away from 1."""
    flip = a > 0
    lo, hi = _pnp.where(flip, -b, a), _pnp.where(flip, -a, b)
    lhi, llo = _sp.log_ndtr(hi), _sp.log_ndtr(lo)
    return lhi + _log1mexp(llo - lhi)


def _truncnorm_logpdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _args(x, a, b, loc, scale)
    z = (x - loc) / scale
    v = -0.5 * z * z - 0.5 * _LOG_2PI - _log_diff_ndtr(a, b) - _pnp.log(scale)
    return _logpdf_support((z >= a) & (z <= b), v)


def _truncnorm_logcdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _args(x, a, b, loc, scale)
    z = _pnp.clip((x - loc) / scale, a, b)
    v = _log_diff_ndtr(a, z) - _log_diff_ndtr(a, b)
    return _pnp.where(z <= a, _NEG_INF, v)


def _truncnorm_logsf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _args(x, a, b, loc, scale)
    z = _pnp.clip((x - loc) / scale, a, b)
    v = _log_diff_ndtr(z, b) - _log_diff_ndtr(a, b)
    return _pnp.where(z >= b, _NEG_INF, v)


truncnorm = _SimpleNamespace(logpdf=_truncnorm_logpdf, pdf=_exp(_truncnorm_logpdf),
                            logcdf=_truncnorm_logcdf, cdf=_exp(_truncnorm_logcdf),
                            logsf=_truncnorm_logsf, sf=_exp(_truncnorm_logsf))


# --- discrete ------------------------------------------------------------------------------
def _is_int(k):
    return k == _pnp.floor(k)


def _poisson_logpmf(k, mu, loc=0.0):
    k, mu, loc = _args(k, mu, loc)
    y = k - loc
    v = _sp.xlogy(y, mu) - mu - _sp.gammaln(y + 1)
    return _logpdf_support((y >= 0) & _is_int(y), v)


def _poisson_cdf(k, mu, loc=0.0):
    k, mu, loc = _args(k, mu, loc)
    y = _pnp.floor(k - loc)
    return _pnp.where(y < 0, 0.0, _sp.gammaincc(_pnp.maximum(y, 0.0) + 1.0, mu))


poisson = _SimpleNamespace(logpmf=_poisson_logpmf, pmf=_exp(_poisson_logpmf), cdf=_poisson_cdf)


def _bernoulli_logpmf(k, p, loc=0.0):
    k, p, loc = _args(k, p, loc)
    y = k - loc
    v = _pnp.where(y == 1, _pnp.log(p), _pnp.log1p(-p))
    return _logpdf_support((y == 0) | (y == 1), v)


def _bernoulli_cdf(k, p):
    k, p = _args(k, p)
    return _pnp.where(k < 0, 0.0, _pnp.where(k < 1, 1.0 - p, 1.0))


def _bernoulli_ppf(q, p):
    q, p = _args(q, p)
    return _pnp.where((q < 0) | (q > 1), _pnp.nan,
                     _pnp.where(q <= 1.0 - p, _pnp.zeros_like(q), _pnp.ones_like(q)))


bernoulli = _SimpleNamespace(logpmf=_bernoulli_logpmf, pmf=_exp(_bernoulli_logpmf),
                            cdf=_bernoulli_cdf, ppf=_bernoulli_ppf)


def _binom_logpmf(k, n, p, loc=0.0):
    k, n, p, loc = _args(k, n, p, loc)
    y = k - loc
    comb = _sp.gammaln(n + 1) - _sp.gammaln(y + 1) - _sp.gammaln(n - y + 1)
    v = comb + _sp.xlogy(y, p) + _sp.xlog1py(n - y, -p)
    return _logpdf_support((y >= 0) & (y <= n) & _is_int(y), v)


binom = _SimpleNamespace(logpmf=_binom_logpmf, pmf=_exp(_binom_logpmf))


def _geom_logpmf(k, p, loc=0.0):
    k, p, loc = _args(k, p, loc)
    y = k - loc
    v = _sp.xlog1py(y - 1, -p) + _pnp.log(p)
    return _logpdf_support((y >= 1) & _is_int(y), v)


geom = _SimpleNamespace(logpmf=_geom_logpmf, pmf=_exp(_geom_logpmf))


def _multinomial_logpmf(x, n, p):
    x, p = _sp._float(x), _sp._float(p)
    dt = _pnp.result_type(x, p)
    x, p = x.astype(dt), p.astype(dt)
    n = _pnp.asarray(n, dtype=dt)
    v = (_sp.gammaln(n + 1) + _pnp.sum(_sp.xlogy(x, p) - _sp.gammaln(x + 1), axis=-1))
    return _pnp.where(_pnp.sum(x, axis=-1) == n, v, _NEG_INF)


multinomial = _SimpleNamespace(logpmf=_multinomial_logpmf, pmf=_exp(_multinomial_logpmf))


def _dirichlet_logpdf(x, alpha):
    x, alpha = _sp._float(x), _sp._float(alpha)
    dt = _pnp.result_type(x, alpha)
    x, alpha = x.astype(dt), alpha.astype(dt)
    # SciPy takes x with the categories in the first axis
    a = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
    norm_c = _pnp.sum(_sp.gammaln(alpha)) - _sp.gammaln(_pnp.sum(alpha))
    v = _pnp.sum(_sp.xlogy(a - 1, x), axis=0) - norm_c
    tol = 1e-9 if dt == _pnp.float64 else 1e-5
    ok = _pnp.all(x >= 0, axis=0) & (_pnp.abs(_pnp.sum(x, axis=0) - 1) < tol)
    return _logpdf_support(ok, v)


dirichlet = _SimpleNamespace(logpdf=_dirichlet_logpdf, pdf=_exp(_dirichlet_logpdf))

def _nbinom_logpmf(k, n, p, loc=0.0):
    k, n, p, loc = _args(k, n, p, loc)
    y = k - loc
    v = (_sp.gammaln(n + y) - _sp.gammaln(y + 1) - _sp.gammaln(n) + n * _pnp.log(p)
         + _sp.xlog1py(y, -p))
    return _logpdf_support((y >= 0) & _is_int(y), v)


nbinom = _SimpleNamespace(logpmf=_nbinom_logpmf, pmf=_exp(_nbinom_logpmf))


def _betabinom_logpmf(k, n, a, b, loc=0.0):
    k, n, a, b, loc = _args(k, n, a, b, loc)
    y = k - loc
    comb = _sp.gammaln(n + 1) - _sp.gammaln(y + 1) - _sp.gammaln(n - y + 1)
    v = comb + _sp.betaln(y + a, n - y + b) - _sp.betaln(a, b)
    return _logpdf_support((y >= 0) & (y <= n) & _is_int(y), v)


betabinom = _SimpleNamespace(logpmf=_betabinom_logpmf, pmf=_exp(_betabinom_logpmf))


def _wrapcauchy_logpdf(x, c):
    x, c = _args(x, c)
    v = _pnp.log1p(-c * c) - _LOG_2PI - _pnp.log1p(c * c - 2.0 * c * _pnp.cos(x))
    return _logpdf_support((x >= 0) & (x <= 2 * _math.pi), v)


wrapcauchy = _SimpleNamespace(logpdf=_wrapcauchy_logpdf, pdf=_exp(_wrapcauchy_logpdf))


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate"):
    """Standard error of the mean: ``std(a, ddof) / sqrt(n)`` along ``axis``."""
    if nan_policy != "propagate":
        raise _UnsupportedOptionError("sem: only nan_policy='propagate' is supported (as in JAX)")
    a = _sp._float(a)
    if axis is None:
        a, axis = a.ravel(), 0
    n = a.shape[axis]
    return _pnp.std(a, axis=axis, ddof=ddof) / _math.sqrt(n)


class gaussian_kde:
    """Gaussian kernel density estimate of ``dataset`` (``(d, n)`` or ``(n,)``), with
    Scott's (default) or Silverman's bandwidth, a scalar factor, and optional weights."""

    def __init__(self, dataset, bw_method=None, weights=None):
        data = _sp._float(dataset)
        self.dataset = data if data.ndim == 2 else data.reshape(1, -1)
        self.d, self.n = self.dataset.shape
        if weights is None:
            w = _pnp.full((self.n,), 1.0 / self.n, dtype=self.dataset.dtype)
        else:
            w = _sp._float(weights).astype(self.dataset.dtype)
            w = w / _pnp.sum(w)
        self.weights = w
        self.neff = 1.0 / _pnp.sum(w * w)
        if bw_method is None or bw_method == "scott":
            self.factor = self.neff ** (-1.0 / (self.d + 4))
        elif bw_method == "silverman":
            self.factor = (self.neff * (self.d + 2) / 4.0) ** (-1.0 / (self.d + 4))
        elif isinstance(bw_method, (int, float)):
            self.factor = bw_method
        else:
            raise _UnsupportedOptionError("gaussian_kde: bw_method must be None, 'scott', "
                                      "'silverman' or a number")
        mean = _pnp.sum(self.dataset * w, axis=1, keepdims=True)
        dev = self.dataset - mean
        cov = (dev * w) @ dev.T / (1.0 - _pnp.sum(w * w))
        self.covariance = cov * self.factor ** 2
        self._chol = _cholesky(self.covariance)

    def logpdf(self, points):
        """Log density at ``points`` (``(d, m)`` or ``(m,)`` when ``d == 1``)."""
        pts = _sp._float(points).astype(self.dataset.dtype)
        pts = pts if pts.ndim == 2 else pts.reshape(self.d, -1)
        diff = pts.T[:, None, :] - self.dataset.T[None, :, :]          # (m, n, d)
        z = _forward(self._chol, diff)
        logdet = 2.0 * _pnp.sum(_pnp.log(_pnp.diagonal(self._chol)))
        log_k = -0.5 * (_pnp.sum(z * z, axis=-1) + logdet + self.d * _LOG_2PI)
        return _sp.logsumexp(log_k + _pnp.log(self.weights), axis=1)

    def evaluate(self, points):
        """Density at ``points``."""
        return _pnp.exp(self.logpdf(points))

    __call__ = pdf = evaluate


def _along_last(f, a, axis):
    """Apply the 1-d function ``f`` along ``axis`` (vmapped over the other axes)."""
    from plait.transforms.batching import vmap
    a = _pnp.moveaxis(a, axis, -1)
    lead = a.shape[:-1]
    flat = a.reshape((-1, a.shape[-1]))
    outs = vmap(f)(flat)
    if isinstance(outs, tuple):
        return tuple(o.reshape(lead + o.shape[1:]) for o in outs)
    return _pnp.moveaxis(outs.reshape(lead + outs.shape[1:]), -1, axis) if outs.ndim > 1 else \
        outs.reshape(lead)


def _ranks_1d(x, method):
    n = x.shape[0]
    if method == "ordinal":
        return (_pnp.argsort(_pnp.argsort(x, stable=True), stable=True) + 1).astype(_pnp.float64)
    s = _pnp.sort(x)
    lo = _pnp.searchsorted(s, x, side="left")
    hi = _pnp.searchsorted(s, x, side="right")
    if method == "min":
        return (lo + 1).astype(_pnp.float64)
    if method == "max":
        return hi.astype(_pnp.float64)
    if method == "average":
        return 0.5 * (lo + 1 + hi).astype(_pnp.float64)
    new = _pnp.concatenate([_pnp.ones((min(n, 1),), dtype=_pnp.int64),
                           (s[1:] != s[:-1]).astype(_pnp.int64)])
    return _pnp.cumsum(new)[lo].astype(_pnp.float64)          # dense


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
    """Ranks of ``a`` (1 = smallest) with ties by ``method``: average, min, max, dense,
    ordinal; along ``axis`` (flattened when None). NaNs are not treated specially."""
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"rankdata: unknown method {method!r}")
    if nan_policy != "propagate":
        raise _UnsupportedOptionError("rankdata: only nan_policy='propagate' is supported")
    a = _pnp.asarray(a)
    if axis is None:
        return _ranks_1d(a.ravel(), method)
    return _along_last(lambda r: _ranks_1d(r, method), a, axis)


class ModeResult(_SimpleNamespace):
    """``(mode, count)`` of :func:`mode`."""

    def __iter__(self):
        return iter((self.mode, self.count))


def _mode_1d(x):
    s = _pnp.sort(x)
    counts = _pnp.searchsorted(s, s, side="right") - _pnp.searchsorted(s, s, side="left")
    i = _pnp.argmax(counts)          # the first maximum: the smallest most common value
    return s[i], counts[i]


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
    """The most common value along ``axis`` (the smallest one on ties) and its count."""
    if nan_policy != "propagate":
        raise _UnsupportedOptionError("mode: only nan_policy='propagate' is supported")
    a = _pnp.asarray(a)
    if axis is None:
        a, axis = a.ravel(), 0
    axis = axis % a.ndim
    if a.ndim == 1:
        m, c = _mode_1d(a)
    else:
        m, c = _along_last(_mode_1d, a, axis)
    if keepdims:
        m, c = _pnp.expand_dims(m, axis), _pnp.expand_dims(c, axis)
    return ModeResult(mode=m, count=c)


__all__ = ["norm", "multivariate_normal", "t", "beta", "gamma", "chi2", "expon", "laplace",
           "logistic", "cauchy", "uniform", "gumbel_r", "gumbel_l", "pareto", "vonmises",
           "gennorm", "truncnorm", "poisson", "bernoulli", "binom", "geom", "multinomial",
           "dirichlet", "nbinom", "betabinom", "wrapcauchy", "sem", "gaussian_kde", "rankdata", "mode",
           "ModeResult"]
