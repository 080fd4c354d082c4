"""plait.scipy.stats against scipy.stats (native jit, one compile per group)."""
import numpy as np
import pytest
import scipy.stats as st

import plait
import plait.scipy.stats as ps

X = np.linspace(-6.0, 9.0, 61)
Q = np.linspace(0.005, 0.995, 61)
K = np.arange(-2.0, 59.0)
POS = np.linspace(0.05, 12.0, 61)
U = np.linspace(0.0, 1.0, 61)

# (name, plait call, scipy call) on the grids above
CONT = [
    ("norm.logpdf", lambda: (ps.norm.logpdf, st.norm.logpdf), (X, 0.5, 2.0)),
    ("norm.pdf", lambda: (ps.norm.pdf, st.norm.pdf), (X, 0.5, 2.0)),
    ("norm.cdf", lambda: (ps.norm.cdf, st.norm.cdf), (X * 5, 0.5, 1.0)),
    ("norm.logcdf", lambda: (ps.norm.logcdf, st.norm.logcdf), (X * 5, 0.5, 1.0)),
    ("norm.sf", lambda: (ps.norm.sf, st.norm.sf), (X * 5, 0.5, 1.0)),
    ("norm.logsf", lambda: (ps.norm.logsf, st.norm.logsf), (X * 5, 0.5, 1.0)),
    ("norm.ppf", lambda: (ps.norm.ppf, st.norm.ppf), (Q, 0.5, 2.0)),
    ("norm.isf", lambda: (ps.norm.isf, st.norm.isf), (Q, 0.5, 2.0)),
    ("t.logpdf", lambda: (ps.t.logpdf, st.t.logpdf), (X, 3.5, 0.5, 2.0)),
    ("beta.logpdf", lambda: (ps.beta.logpdf, st.beta.logpdf), (U, 2.5, 1.5)),
    ("beta.cdf", lambda: (ps.beta.cdf, st.beta.cdf), (X / 5, 2.5, 1.5)),
    ("beta.sf", lambda: (ps.beta.sf, st.beta.sf), (X / 5, 2.5, 1.5)),
    ("gamma.logpdf", lambda: (ps.gamma.logpdf, st.gamma.logpdf), (X, 2.5, -1.0, 1.5)),
    ("gamma.cdf", lambda: (ps.gamma.cdf, st.gamma.cdf), (X, 2.5, -1.0, 1.5)),
    ("gamma.sf", lambda: (ps.gamma.sf, st.gamma.sf), (X, 2.5, -1.0, 1.5)),
    ("chi2.logpdf", lambda: (ps.chi2.logpdf, st.chi2.logpdf), (POS, 3.0)),
    ("chi2.cdf", lambda: (ps.chi2.cdf, st.chi2.cdf), (POS, 3.0)),
    ("chi2.sf", lambda: (ps.chi2.sf, st.chi2.sf), (POS, 3.0)),
    ("expon.logpdf", lambda: (ps.expon.logpdf, st.expon.logpdf), (X, -1.0, 2.0)),
    ("expon.cdf", lambda: (ps.expon.cdf, st.expon.cdf), (X, -1.0, 2.0)),
    ("expon.logcdf", lambda: (ps.expon.logcdf, st.expon.logcdf), (X, -1.0, 2.0)),
    ("expon.sf", lambda: (ps.expon.sf, st.expon.sf), (X, -1.0, 2.0)),
    ("expon.ppf", lambda: (ps.expon.ppf, st.expon.ppf), (Q, -1.0, 2.0)),
    ("laplace.logpdf", lambda: (ps.laplace.logpdf, st.laplace.logpdf), (X, 0.5, 2.0)),
    ("laplace.cdf", lambda: (ps.laplace.cdf, st.laplace.cdf), (X, 0.5, 2.0)),
    ("logistic.logpdf", lambda: (ps.logistic.logpdf, st.logistic.logpdf), (X * 10, 0.5, 2.0)),
    ("logistic.cdf", lambda: (ps.logistic.cdf, st.logistic.cdf), (X, 0.5, 2.0)),
    ("logistic.sf", lambda: (ps.logistic.sf, st.logistic.sf), (X, 0.5, 2.0)),
    ("logistic.ppf", lambda: (ps.logistic.ppf, st.logistic.ppf), (Q, 0.5, 2.0)),
    ("logistic.isf", lambda: (ps.logistic.isf, st.logistic.isf), (Q, 0.5, 2.0)),
    ("cauchy.logpdf", lambda: (ps.cauchy.logpdf, st.cauchy.logpdf), (X, 0.5, 2.0)),
    ("cauchy.cdf", lambda: (ps.cauchy.cdf, st.cauchy.cdf), (X, 0.5, 2.0)),
    ("cauchy.sf", lambda: (ps.cauchy.sf, st.cauchy.sf), (X, 0.5, 2.0)),
    ("cauchy.ppf", lambda: (ps.cauchy.ppf, st.cauchy.ppf), (Q, 0.5, 2.0)),
    ("uniform.logpdf", lambda: (ps.uniform.logpdf, st.uniform.logpdf), (X, -1.0, 3.0)),
    ("uniform.cdf", lambda: (ps.uniform.cdf, st.uniform.cdf), (X, -1.0, 3.0)),
    ("uniform.ppf", lambda: (ps.uniform.ppf, st.uniform.ppf), (Q, -1.0, 3.0)),
    ("gumbel_r.logpdf", lambda: (ps.gumbel_r.logpdf, st.gumbel_r.logpdf), (X, 0.5, 2.0)),
    ("gumbel_r.logsf", lambda: (ps.gumbel_r.logsf, st.gumbel_r.logsf), (X, 0.5, 2.0)),
    ("gumbel_r.ppf", lambda: (ps.gumbel_r.ppf, st.gumbel_r.ppf), (Q, 0.5, 2.0)),
    ("gumbel_l.logpdf", lambda: (ps.gumbel_l.logpdf, st.gumbel_l.logpdf), (X, 0.5, 2.0)),
    ("gumbel_l.logcdf", lambda: (ps.gumbel_l.logcdf, st.gumbel_l.logcdf), (X, 0.5, 2.0)),
    ("gumbel_l.cdf", lambda: (ps.gumbel_l.cdf, st.gumbel_l.cdf), (X, 0.5, 2.0)),
    ("gumbel_l.ppf", lambda: (ps.gumbel_l.ppf, st.gumbel_l.ppf), (Q, 0.5, 2.0)),
    ("pareto.logpdf", lambda: (ps.pareto.logpdf, st.pareto.logpdf), (POS, 2.5, 0.5, 1.5)),
    ("vonmises.logpdf", lambda: (ps.vonmises.logpdf, st.vonmises.logpdf), (X / 3, 2.5, 0.3)),
    ("gennorm.logpdf", lambda: (ps.gennorm.logpdf, st.gennorm.logpdf), (X, 1.5, 0.5, 2.0)),
    ("gennorm.cdf", lambda: (ps.gennorm.cdf, st.gennorm.cdf), (X, 1.5, 0.5, 2.0)),
    ("truncnorm.logpdf", lambda: (ps.truncnorm.logpdf, st.truncnorm.logpdf), (X, -1.0, 2.5, 0.5, 1.5)),
    ("truncnorm.logpdf_tail", lambda: (ps.truncnorm.logpdf, st.truncnorm.logpdf), (X + 10, 8.0, 12.0)),
    ("truncnorm.cdf", lambda: (ps.truncnorm.cdf, st.truncnorm.cdf), (X, -1.0, 2.5, 0.5, 1.5)),
    ("truncnorm.logsf", lambda: (ps.truncnorm.logsf, st.truncnorm.logsf), (X, -1.0, 2.5, 0.5, 1.5)),
    ("poisson.logpmf", lambda: (ps.poisson.logpmf, st.poisson.logpmf), (K, 7.5)),
    ("poisson.pmf", lambda: (ps.poisson.pmf, st.poisson.pmf), (K, 7.5)),
    ("poisson.cdf", lambda: (ps.poisson.cdf, st.poisson.cdf), (K, 7.5)),
    ("bernoulli.logpmf", lambda: (ps.bernoulli.logpmf, st.bernoulli.logpmf), (K[:5], 0.3)),
    ("bernoulli.cdf", lambda: (ps.bernoulli.cdf, st.bernoulli.cdf), (X, 0.3)),
    ("bernoulli.ppf", lambda: (ps.bernoulli.ppf, st.bernoulli.ppf), (Q, 0.3)),
    ("binom.logpmf", lambda: (ps.binom.logpmf, st.binom.logpmf), (K, 40.0, 0.3)),
    ("geom.logpmf", lambda: (ps.geom.logpmf, st.geom.logpmf), (K, 0.3)),
]


def _compare(got, want, name, rtol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, name
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want), err_msg=name)
    m = np.isfinite(want)
    np.testing.assert_allclose(got[m], want[m], rtol=rtol, atol=rtol, err_msg=name)
    np.testing.assert_array_equal(got[~m], want[~m], err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_distributions_against_scipy(dtype):
    calls = [(n, mk()[0], mk()[1], args) for n, mk, args in CONT]
    arrays = [np.asarray(a[0], dtype) for _, _, _, a in calls]
    outs = []
    for k in range(0, len(calls), 20):
        chunk = calls[k:k + 20]
        outs += plait.jit(lambda xs: [c[1](x, *c[3][1:]) for c, x in zip(chunk, xs)])(arrays[k:k + 20])
    for (name, _, ref, args), x, out in zip(calls, arrays, outs):
        assert np.asarray(out).dtype == dtype, name
        with np.errstate(all="ignore"):
            want = ref(x.astype(np.float64), *args[1:])
        _compare(out, want, name, 1e-11 if dtype == np.float64 else 2e-5)


def test_multivariate_normal_and_simplex():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    cov = a @ a.T + 4 * np.eye(4)
    mean = rng.normal(size=4)
    x = rng.normal(size=(7, 4))
    got = plait.jit(ps.multivariate_normal.logpdf)(x, mean, cov)
    np.testing.assert_allclose(np.asarray(got), st.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ps.multivariate_normal.pdf(x[0], mean, cov)),
                               st.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-12)
    alpha = np.array([1.5, 2.0, 0.7])
    xs = rng.dirichlet(alpha, size=5).T
    np.testing.assert_allclose(np.asarray(ps.dirichlet.logpdf(xs, alpha)),
                               st.dirichlet.logpdf(xs, alpha), rtol=1e-12)
    counts = np.array([[2.0, 3.0, 5.0], [0.0, 10.0, 0.0], [1.0, 1.0, 1.0]])
    p = np.array([0.2, 0.3, 0.5])
    got = np.asarray(ps.multinomial.logpmf(counts, 10, p))
    want = st.multinomial.logpmf(counts, 10, p)
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-12)
    assert got[2] == -np.inf and want[2] == -np.inf


def test_grad_of_logpdf():
    from plait.test_util import check_grads
    check_grads(lambda m, s: ps.norm.logpdf(np.array([0.3, -1.0]), m, s), (0.2, 1.5), order=2)
    check_grads(lambda a: ps.gamma.logpdf(np.array([0.3, 2.0]), a), (2.5,), order=2)
    check_grads(ps.norm.logcdf, (np.array([-30.0, -3.0, 0.5]),), order=2)
    check_grads(lambda x: ps.truncnorm.logpdf(x, -1.0, 2.0), (np.array([-0.5, 1.5]),), order=2)


def test_extras_eager():
    k = np.arange(-1.0, 30.0)
    np.testing.assert_allclose(np.asarray(ps.nbinom.logpmf(k, 3.5, 0.4)),
                               st.nbinom.logpmf(k, 3.5, 0.4), rtol=1e-12)
    k = np.arange(-1.0, 12.0)
    np.testing.assert_allclose(np.asarray(ps.betabinom.pmf(k, 10, 2.5, 1.5)),
                               st.betabinom.pmf(k, 10, 2.5, 1.5), rtol=1e-12, atol=1e-300)
    x = np.linspace(-0.5, 7.0, 40)
    np.testing.assert_allclose(np.asarray(ps.wrapcauchy.logpdf(x, 0.6)),
                               st.wrapcauchy.logpdf(x, 0.6), rtol=1e-12)
    y = np.linspace(0.0, 9.0, 37)
    for m in ("logsf", "sf", "logcdf", "cdf"):
        np.testing.assert_allclose(np.asarray(getattr(ps.pareto, m)(y, 2.5, 0.5, 1.5)),
                                   getattr(st.pareto, m)(y, 2.5, 0.5, 1.5), rtol=1e-12, err_msg=m)
    q = np.linspace(0.0, 0.99, 12)
    np.testing.assert_allclose(np.asarray(ps.pareto.ppf(q, 2.5, 0.5, 1.5)),
                               st.pareto.ppf(q, 2.5, 0.5, 1.5), rtol=1e-12)
    a = np.random.default_rng(3).normal(size=(6, 4))
    np.testing.assert_allclose(np.asarray(ps.sem(a)), st.sem(a), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ps.sem(a, axis=None, ddof=0)),
                               st.sem(a, axis=None, ddof=0), rtol=1e-12)


@pytest.mark.parametrize("bw", [None, "silverman", 0.4])
def test_gaussian_kde(bw):
    rng = np.random.default_rng(5)
    data = rng.normal(size=(2, 40))
    w = rng.uniform(0.5, 2.0, 40)
    pts = rng.normal(size=(2, 9))
    got = plait.jit(lambda d, w, p: ps.gaussian_kde(d, bw, w).logpdf(p))(data, w, pts)
    np.testing.assert_allclose(np.asarray(got), st.gaussian_kde(data, bw, w).logpdf(pts), rtol=1e-11)
    one = rng.normal(size=30)
    np.testing.assert_allclose(np.asarray(ps.gaussian_kde(one)(np.linspace(-2, 2, 5))),
                               st.gaussian_kde(one)(np.linspace(-2, 2, 5)), rtol=1e-11)


def test_rankdata_and_mode():
    a = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9.0]])
    methods = ("average", "min", "max", "dense", "ordinal")
    got = plait.jit(lambda a: [ps.rankdata(a, m, axis=ax) for m in methods for ax in (None, 0, 1)])(a)
    for g, (m, ax) in zip(got, [(m, ax) for m in methods for ax in (None, 0, 1)]):
        np.testing.assert_array_equal(np.asarray(g), st.rankdata(a, m, axis=ax), err_msg=f"{m} {ax}")
    for ax in (None, 0, 1):
        r, want = ps.mode(a, axis=ax), st.mode(a, axis=ax)
        np.testing.assert_array_equal(np.asarray(r.mode), want.mode)
        np.testing.assert_array_equal(np.asarray(r.count), want.count)
    m, c = ps.mode(a, axis=1, keepdims=True)
    assert np.asarray(m).shape == (3, 1) and np.asarray(c).shape == (3, 1)
