"""The rejection-based and composite samplers of plait.random in distribution:
Kolmogorov-Smirnov (continuous) and chi-square-style frequency checks (discrete)
against scipy.stats with fixed seeds, plus structural checks (orthogonal, ball,
dirichlet, multinomial)."""
import math

import numpy as np
import pytest

import plait
from plait import random as pr

stats = pytest.importorskip("scipy.stats")
N = 4000


def ks_ok(x, cdf):
    return stats.kstest(np.asarray(x, np.float64).ravel(), cdf).pvalue > 1e-3


CONT = [
    ("gamma 0.3", lambda k: pr.gamma(k, 0.3, (N,)), stats.gamma(0.3).cdf),
    ("gamma 4", lambda k: pr.gamma(k, 4.0, (N,)), stats.gamma(4.0).cdf),
    ("loggamma 0.5", lambda k: np.exp(np.asarray(pr.loggamma(k, 0.5, (N,)))), stats.gamma(0.5).cdf),
    ("beta", lambda k: pr.beta(k, 0.5, 2.0, (N,)), stats.beta(0.5, 2.0).cdf),
    ("chisquare", lambda k: pr.chisquare(k, 3.0, (N,)), stats.chi2(3.0).cdf),
    ("f", lambda k: pr.f(k, 4.0, 7.0, (N,)), stats.f(4.0, 7.0).cdf),
    ("t", lambda k: pr.t(k, 5.0, (N,)), stats.t(5.0).cdf),
    ("gennorm", lambda k: pr.generalized_normal(k, 1.5, (N,)), stats.gennorm(1.5).cdf),
    ("exponential", lambda k: pr.exponential(k, (N,)), stats.expon.cdf),
    ("laplace", lambda k: pr.laplace(k, (N,)), stats.laplace.cdf),
    ("logistic", lambda k: pr.logistic(k, (N,)), stats.logistic.cdf),
    ("cauchy", lambda k: pr.cauchy(k, (N,)), stats.cauchy.cdf),
    ("pareto", lambda k: pr.pareto(k, 3.0, (N,)), stats.pareto(3.0).cdf),
    ("weibull", lambda k: pr.weibull_min(k, 2.0, 1.5, (N,)), stats.weibull_min(1.5, scale=2.0).cdf),
    ("rayleigh", lambda k: pr.rayleigh(k, 2.0, (N,)), stats.rayleigh(scale=2.0).cdf),
    ("maxwell", lambda k: pr.maxwell(k, (N,)), stats.maxwell.cdf),
    ("dsmaxwell", lambda k: pr.double_sided_maxwell(k, 1.0, 2.0, (N,)),
     lambda x: 0.5 + 0.5 * np.sign(x - 1) * stats.maxwell.cdf(np.abs(x - 1) / 2)),
    ("lognormal", lambda k: pr.lognormal(k, 0.5, (N,)), stats.lognorm(0.5).cdf),
    ("wald", lambda k: pr.wald(k, 1.5, (N,)), stats.invgauss(1.5).cdf),
    ("triangular", lambda k: pr.triangular(k, 0.0, 1.0, 3.0, (N,)),
     stats.triang(1 / 3, loc=0, scale=3).cdf),
    ("truncnorm", lambda k: pr.truncated_normal(k, -1.0, 2.0, (N,)),
     stats.truncnorm(-1.0, 2.0).cdf),
]


@pytest.mark.parametrize("name,draw,cdf", CONT, ids=[c[0] for c in CONT])
def test_continuous_ks(name, draw, cdf):
    assert ks_ok(draw(pr.key(11)), cdf)


def freq_ok(x, pmf, support):
    x = np.asarray(x).ravel()
    obs = np.array([(x == v).sum() for v in support], float)
    exp = np.array([pmf(v) for v in support]) * x.size
    keep = exp > 20
    z = (obs[keep] - exp[keep]) / np.sqrt(exp[keep])
    return np.abs(z).max() < 4.5 and np.isin(x, support).all()


@pytest.mark.parametrize("lam", [0.7, 4.0, 25.0, 300.0])
def test_poisson(lam):
    x = np.asarray(pr.poisson(pr.key(3), lam, (N,)))
    assert x.dtype == np.int64
    assert freq_ok(x, stats.poisson(lam).pmf, np.arange(0, int(lam + 12 * math.sqrt(lam) + 12)))


@pytest.mark.parametrize("n,p", [(10, 0.3), (40, 0.85), (7, 0.0)])
def test_binomial(n, p):
    x = np.asarray(pr.binomial(pr.key(4), n, p, (N,)))
    assert freq_ok(x, stats.binom(n, p).pmf, np.arange(0, n + 1))


def test_geometric_and_multinomial():
    g = np.asarray(pr.geometric(pr.key(5), 0.3, (N,)))
    assert freq_ok(g, stats.geom(0.3).pmf, np.arange(1, 60))
    m = np.asarray(pr.multinomial(pr.key(6), 20, np.array([0.2, 0.3, 0.5]), (500, 3)))
    assert m.shape == (500, 3) and (m.sum(-1) == 20).all()
    np.testing.assert_allclose(m.mean(0), [4, 6, 10], atol=0.5)


def test_dirichlet_orthogonal_ball_mvn():
    d = np.asarray(pr.dirichlet(pr.key(7), np.array([0.5, 1.0, 3.0]), (N,)))
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-12)
    np.testing.assert_allclose(d.mean(0), np.array([0.5, 1, 3]) / 4.5, atol=0.01)
    assert ks_ok(d[:, 0], stats.beta(0.5, 4.0).cdf)
    q = np.asarray(pr.orthogonal(pr.key(8), 4, (3,)))
    np.testing.assert_allclose(np.einsum("bij,bik->bjk", q, q), np.broadcast_to(np.eye(4), (3, 4, 4)),
                               atol=1e-12)
    w = np.asarray(pr.orthogonal(pr.key(8), 2, m=5))
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-12)
    b = np.asarray(pr.ball(pr.key(9), 3, 2, (N,)))
    r = np.linalg.norm(b, axis=-1)
    assert r.max() < 1 and ks_ok(r, lambda t: np.clip(t, 0, 1) ** 3)   # radius CDF r**d
    cov = np.array([[2., .5], [.5, 1.]])
    x = np.asarray(pr.multivariate_normal(pr.key(10), np.array([1., -1.]), cov, (20000,)))
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)
    np.testing.assert_allclose(x.mean(0), [1, -1], atol=0.03)


def test_rejection_sampler_under_jit():
    # one rejection loop compiled (compiles take seconds; the others share the code path)
    got = plait.jit(lambda k: pr.gamma(k, 2.5, (8,)))(pr.key(1))
    np.testing.assert_allclose(np.asarray(got), np.asarray(pr.gamma(pr.key(1), 2.5, (8,))),
                               rtol=1e-12)


def test_gamma_implicit_gradient():
    """dx/da at fixed CDF value: against central differences of scipy's inverse CDF."""
    sp = pytest.importorskip("scipy.special")
    for a in (0.4, 2.5, 30.0):
        x = np.asarray(pr.gamma(pr.key(0), a, (5,)))
        g = np.asarray(plait.jacfwd(lambda t: pr.gamma(pr.key(0), t, (5,)))(a))
        u, h = sp.gammainc(a, x), 1e-5 * a
        fd = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-6)
    # reverse mode, and through the samplers built on gamma/loggamma: E[x] = a, E[beta] = a/(a+b)
    gm = plait.grad(lambda t: plait.numpy.mean(pr.gamma(pr.key(1), t, (N,))))(0.7)
    assert abs(float(gm) - 1.0) < 0.05
    gb = plait.grad(lambda t: plait.numpy.mean(pr.beta(pr.key(2), t, 2.0, (N,))))(1.5)
    assert abs(float(gb) - 2.0 / 3.5 ** 2) < 0.02
