"""plait.scipy.special against scipy.special: values on dense grids with tails (float32
and float64, native jit, one compile per dtype), SciPy's NaN/inf conventions, and
derivatives by check_grads and against finite differences of SciPy."""
import numpy as np
import pytest
import scipy.special as ss

import plait
import plait.numpy as pnp
import plait.scipy.special as ps
from plait.test_util import check_grads

X = np.concatenate([np.linspace(-7.3, 7.3, 293), np.linspace(7.5, 60.0, 120),
                    [1e-6, 1e-3, 0.5, 1.0, 2.0]])
P = np.concatenate([np.logspace(-300, -1, 80), np.linspace(0.01, 0.99, 99),
                    1 - np.logspace(-16, -1, 40)])
POS = np.concatenate([np.logspace(-3, 2, 150), [1.0, 2.0, 3.0, 150.0]])

# name -> (plait function of the grids, scipy oracle, rtol f64, rtol f32)
CASES = {
    "erf": (lambda x, p, q: ps.erf(x), lambda x, p, q: ss.erf(x), 1e-15, 1e-6),
    "erfc": (lambda x, p, q: ps.erfc(x), lambda x, p, q: ss.erfc(x), 1e-13, 1e-5),
    "erfinv": (lambda x, p, q: ps.erfinv(2 * p - 1), lambda x, p, q: ss.erfinv(2 * p - 1), 1e-14, 1e-6),
    "gammaln": (lambda x, p, q: ps.gammaln(x), lambda x, p, q: ss.gammaln(x), 1e-13, 2e-5),
    "digamma": (lambda x, p, q: ps.digamma(x), lambda x, p, q: ss.digamma(x), 1e-12, 1e-5),
    "polygamma1": (lambda x, p, q: ps.polygamma(1, q), lambda x, p, q: ss.polygamma(1, q), 1e-13, 1e-5),
    "polygamma3": (lambda x, p, q: ps.polygamma(3, q), lambda x, p, q: ss.polygamma(3, q), 1e-13, 1e-5),
    "zeta": (lambda x, p, q: ps.zeta(1.0 + q, q), lambda x, p, q: ss.zeta(1.0 + q, q), 1e-12, 1e-4),
    "ndtr": (lambda x, p, q: ps.ndtr(x), lambda x, p, q: ss.ndtr(x), 1e-13, 1e-5),
    "ndtri": (lambda x, p, q: ps.ndtri(p), lambda x, p, q: ss.ndtri(p), 1e-14, 1e-6),
    "log_ndtr": (lambda x, p, q: ps.log_ndtr(6 * x), lambda x, p, q: ss.log_ndtr(6 * x), 1e-12, 2e-5),
    "xlogy": (lambda x, p, q: ps.xlogy(x, q[:1]), lambda x, p, q: ss.xlogy(x, q[:1]), 1e-15, 1e-6),
    "xlog1py": (lambda x, p, q: ps.xlog1py(x, p[:1]), lambda x, p, q: ss.xlog1py(x, p[:1]), 1e-15, 1e-6),
    "betaln": (lambda x, p, q: ps.betaln(q, q[::-1]), lambda x, p, q: ss.betaln(q, q[::-1]), 1e-10, 1e-4),
    "gammainc": (lambda x, p, q: ps.gammainc(q[::-1], q), lambda x, p, q: ss.gammainc(q[::-1], q), 1e-12, 1e-5),
    "gammaincc": (lambda x, p, q: ps.gammaincc(q[::-1], q), lambda x, p, q: ss.gammaincc(q[::-1], q), 1e-11, 1e-4),
    "i0e": (lambda x, p, q: ps.i0e(x), lambda x, p, q: ss.i0e(x), 2e-13, 1e-6),
    "i1e": (lambda x, p, q: ps.i1e(x), lambda x, p, q: ss.i1e(x), 2e-13, 1e-6),
    "i0": (lambda x, p, q: ps.i0(x / 2), lambda x, p, q: ss.i0(x / 2), 2e-13, 1e-6),
    "i1": (lambda x, p, q: ps.i1(x / 2), lambda x, p, q: ss.i1(x / 2), 2e-13, 1e-6),
    "expit": (lambda x, p, q: ps.expit(x), lambda x, p, q: ss.expit(x), 1e-15, 1e-6),
    "logit": (lambda x, p, q: ps.logit(p), lambda x, p, q: ss.logit(p), 1e-15, 1e-6),
    "entr": (lambda x, p, q: ps.entr(x), lambda x, p, q: ss.entr(x), 1e-15, 1e-6),
    "rel_entr": (lambda x, p, q: ps.rel_entr(x, x[::-1]), lambda x, p, q: ss.rel_entr(x, x[::-1]), 1e-14, 1e-5),
    "kl_div": (lambda x, p, q: ps.kl_div(x, x[::-1]), lambda x, p, q: ss.kl_div(x, x[::-1]), 1e-12, 1e-5),
    "gamma": (lambda x, p, q: ps.gamma(x / 3), lambda x, p, q: ss.gamma(x / 3), 1e-13, 1e-5),
    "rgamma": (lambda x, p, q: ps.rgamma(x / 3), lambda x, p, q: ss.rgamma(x / 3), 1e-13, 1e-5),
    "multigammaln": (lambda x, p, q: ps.multigammaln(q + 2, 3), lambda x, p, q: ss.multigammaln(q + 2, 3), 1e-13, 2e-5),
    "logsumexp": (lambda x, p, q: ps.logsumexp(pnp.stack([x, 2 * x, -3 * x], axis=1), axis=1),
                  lambda x, p, q: ss.logsumexp(np.stack([x, 2 * x, -3 * x], axis=1), axis=1), 1e-15, 1e-6),
    "softmax": (lambda x, p, q: ps.softmax(x[:412].reshape(4, 103), axis=0),
                lambda x, p, q: ss.softmax(x[:412].reshape(4, 103), axis=0), 1e-14, 1e-5),
    "log_softmax": (lambda x, p, q: ps.log_softmax(x[:412].reshape(4, 103)),
                    lambda x, p, q: ss.log_softmax(x[:412].reshape(4, 103)), 1e-14, 1e-5),
}


# functions with a zero inside the grid: error relative to max(|ref|, 1) there
ZERO_CROSSING = {"gammaln", "digamma", "logit", "xlogy", "xlog1py", "rel_entr", "kl_div",
                 "logsumexp", "log_softmax", "erfinv", "ndtri", "multigammaln", "betaln", "entr"}


def _compare(out, ref, rtol, name):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    assert out.shape == ref.shape, name
    same_class = (np.isnan(out) == np.isnan(ref)) & (np.isinf(out) == np.isinf(ref))
    assert same_class.all(), (name, np.flatnonzero(~same_class)[:5], out[~same_class][:5], ref[~same_class][:5])
    m = np.isfinite(ref)
    tiny = np.finfo(np.float32).tiny if rtol > 1e-9 else 1e-300
    if name.split(" ")[0] in ZERO_CROSSING:
        tiny = 1.0
    err = np.abs(out[m] - ref[m]) / np.maximum(np.abs(ref[m]), tiny)
    assert err.max(initial=0) <= rtol, (name, err.max(), np.argmax(err))
    assert (np.sign(out[np.isinf(ref)]) == np.sign(ref[np.isinf(ref)])).all(), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_against_scipy(dtype):
    x, p, q = X.astype(dtype), P.astype(dtype), POS.astype(dtype)
    if dtype == np.float32:
        p = np.maximum(p, np.float32(1e-37))
    names = list(CASES)
    outs = []
    for k in range(0, len(names), 6):      # a few mid-sized kernels compile fastest
        chunk = names[k:k + 6]
        outs += plait.jit(lambda x, p, q: [CASES[n][0](x, p, q) for n in chunk])(x, p, q)
    for n, out in zip(names, outs):
        _, oracle, rt64, rt32 = CASES[n]
        assert np.asarray(out).dtype == dtype, n
        with np.errstate(all="ignore"):      # float32 grids: SciPy's float32 results
            ref = oracle(x, p, q)
        _compare(out, ref, rt64 if dtype == np.float64 else rt32, n)


def test_edges_nan_inf():
    """SciPy's values at poles, infinities, NaN and outside the domain (native jit and
    eager NumPy reference rules both)."""
    x = np.array([0.0, -1.0, -2.0, -2.5, np.inf, -np.inf, np.nan, 1.0])
    p = np.array([0.0, 1.0, -0.5, 1.5, np.nan, 0.5, 1e-310, 0.25])
    fns = {
        "gammaln": (lambda x, p: ps.gammaln(x), lambda x, p: ss.gammaln(x), slice(0, 5)),
        "digamma": (lambda x, p: ps.digamma(x), lambda x, p: ss.digamma(x), slice(None)),
        "erf": (lambda x, p: ps.erf(x), lambda x, p: ss.erf(x), slice(None)),
        "erfc": (lambda x, p: ps.erfc(x), lambda x, p: ss.erfc(x), slice(None)),
        "gamma": (lambda x, p: ps.gamma(x), lambda x, p: ss.gamma(x), slice(None)),
        "rgamma": (lambda x, p: ps.rgamma(x), lambda x, p: ss.rgamma(x), slice(0, 4)),
        "ndtri": (lambda x, p: ps.ndtri(p), lambda x, p: ss.ndtri(p), slice(None)),
        "erfinv": (lambda x, p: ps.erfinv(2 * p - 1), lambda x, p: ss.erfinv(2 * p - 1), slice(None)),
        "xlogy0": (lambda x, p: ps.xlogy(p * 0, p), lambda x, p: ss.xlogy(p * 0, p), slice(0, 4)),
        "entr": (lambda x, p: ps.entr(x), lambda x, p: ss.entr(x), slice(None)),
        "logit": (lambda x, p: ps.logit(p), lambda x, p: ss.logit(p), slice(None)),
        "gammainc": (lambda x, p: ps.gammainc(2.0, x), lambda x, p: ss.gammainc(2.0, x), slice(None)),
        "gammaincc": (lambda x, p: ps.gammaincc(2.0, x), lambda x, p: ss.gammaincc(2.0, x), slice(None)),
        "i0e": (lambda x, p: ps.i0e(x), lambda x, p: ss.i0e(x), slice(None)),
        "i1e": (lambda x, p: ps.i1e(x), lambda x, p: ss.i1e(x), slice(None)),
        "beta": (lambda x, p: ps.beta(x, 0.5), lambda x, p: ss.beta(x, 0.5), slice(7, 8)),
        "polygamma": (lambda x, p: ps.polygamma(1, x), lambda x, p: ss.polygamma(1, x), [0, 1, 4, 6, 7]),
    }
    names = list(fns)
    native = plait.jit(lambda x, p: [fns[n][0](x, p) for n in names])(x, p)
    with np.errstate(all="ignore"):
        for n, out in zip(names, native):
            fn, oracle, sl = fns[n]
            ref = oracle(x, p)
            _compare(np.asarray(out)[sl], ref[sl], 1e-13, n + " (native)")
            _compare(np.asarray(fn(x, p))[sl], ref[sl], 1e-13, n + " (eager)")


def test_trigamma_reflection():
    x = np.array([-3.7, -1.5, -0.25, 0.25, 3.0])
    np.testing.assert_allclose(np.asarray(ps.polygamma(1, x)), ss.polygamma(1, x), rtol=1e-12)


def test_logsumexp_b_and_sign():
    a = np.array([[0.5, 1.0, -2.0], [3.0, -1.0, 0.0]])
    b = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0]])
    for axis in (None, 0, 1):
        got = ps.logsumexp(a, axis=axis, b=b, return_sign=True)
        ref = ss.logsumexp(a, axis=axis, b=b, return_sign=True)
        np.testing.assert_allclose(np.asarray(got[0]), ref[0], rtol=1e-14)
        np.testing.assert_array_equal(np.asarray(got[1]), ref[1])
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(np.asarray(ps.logsumexp(a, axis=axis, b=b, keepdims=True)),
                                       ss.logsumexp(a, axis=axis, b=b, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(ps.logsumexp(np.array([-np.inf, -np.inf]))), -np.inf)


SMOOTH = {   # name -> (function of one array, points inside the domain)
    "erf": (ps.erf, [-1.5, 0.3, 2.0]),
    "erfc": (ps.erfc, [-1.5, 0.3, 2.0]),
    "erfinv": (ps.erfinv, [-0.9, 0.1, 0.7]),
    "gammaln": (ps.gammaln, [0.3, 2.5, 7.0]),
    "digamma": (ps.digamma, [0.3, 2.5, 7.0]),
    "ndtri": (ps.ndtri, [0.01, 0.4, 0.95]),
    "log_ndtr": (ps.log_ndtr, [-30.0, -3.0, 0.5, 4.0]),
    "i0e": (ps.i0e, [-3.0, 0.5, 25.0]),
    "i1e": (ps.i1e, [-3.0, 0.5, 25.0]),
    "logit": (ps.logit, [0.1, 0.5, 0.8]),
    "gammainc_x": (lambda x: ps.gammainc(2.5, x), [0.5, 2.0, 9.0]),
    "gammaincc_x": (lambda x: ps.gammaincc(2.5, x), [0.5, 2.0, 9.0]),
    "xlogy_y": (lambda y: ps.xlogy(1.5, y), [0.5, 2.0]),
    "entr": (ps.entr, [0.5, 2.0]),
    "zeta_q": (lambda q: ps.zeta(3.0, q), [0.5, 2.0]),
    "gamma": (ps.gamma, [-1.5, 0.5, 3.0]),
}
ORDER1 = ("gammainc_x", "gammaincc_x", "erfinv", "ndtri")   # custom_jvp: first order checked


@pytest.mark.parametrize("name", list(SMOOTH))
def test_grads(name):
    fn, pts = SMOOTH[name]
    x = np.array(pts)
    check_grads(fn, (x,), order=1 if name in ORDER1 else 2, modes=("fwd", "rev"))


def test_grads_against_scipy_differences():
    """Derivatives (jit, vmap, grad) against central differences of SciPy."""
    cases = {
        "gammaln": (ps.gammaln, ss.gammaln, [0.3, 2.5, 40.0]),
        "digamma": (ps.digamma, ss.digamma, [0.3, 2.5, 40.0]),
        "erfinv": (ps.erfinv, ss.erfinv, [-0.99, 0.2, 0.999]),
        "ndtri": (ps.ndtri, ss.ndtri, [1e-6, 0.3, 0.9]),
        "log_ndtr": (ps.log_ndtr, ss.log_ndtr, [-35.0, -2.0, 3.0]),
        "gammainc": (lambda x: ps.gammainc(3.0, x), lambda x: ss.gammainc(3.0, x), [0.5, 3.0, 12.0]),
        "i0e": (ps.i0e, ss.i0e, [0.5, 10.0, 30.0]),
        "polygamma2": (lambda x: ps.polygamma(2, x), lambda x: ss.polygamma(2, x), [0.7, 3.0]),
    }
    names = list(cases)
    grads = plait.jit(lambda xs: [plait.vmap(plait.grad(cases[n][0]))(x) for n, x in zip(names, xs)])(
        [np.array(cases[n][2]) for n in names])
    for n, g in zip(names, grads):
        x = np.array(cases[n][2])
        h = 1e-6 * np.maximum(np.abs(x), 1e-3)
        fd = (cases[n][1](x + h) - cases[n][1](x - h)) / (2 * h)
        np.testing.assert_allclose(np.asarray(g), fd, rtol=2e-6, err_msg=n)


def test_vmap_and_integer_inputs():
    got = plait.vmap(ps.gammaln)(np.arange(1, 6))
    np.testing.assert_allclose(np.asarray(got), ss.gammaln(np.arange(1, 6)), rtol=1e-14)
    assert np.asarray(ps.erf(np.float32(0.5))).dtype == np.float32
    assert np.asarray(ps.gammainc(2.0, np.float32(1.0))).dtype == np.float32


def test_extras_eager():
    x = np.concatenate([np.linspace(-5, 30, 71), [60.0, 1e3, np.inf]])
    np.testing.assert_allclose(np.asarray(ps.erfcx(x)), ss.erfcx(x), rtol=1e-13)
    x32 = np.linspace(-3, 40, 44).astype(np.float32)
    np.testing.assert_allclose(np.asarray(ps.erfcx(x32)), ss.erfcx(x32), rtol=2e-6)
    x = np.linspace(0.1, 5, 20)
    for lm in (0.0, 0.5, -1.5):
        np.testing.assert_allclose(np.asarray(ps.boxcox(x, lm)), ss.boxcox(x, lm), rtol=1e-13)
        np.testing.assert_allclose(np.asarray(ps.boxcox1p(x, lm)), ss.boxcox1p(x, lm), rtol=1e-13)
    n, k = np.array([10.0, 5.0, 30.0, 4.0, 3.0]), np.array([3.0, 0.0, 15.0, 5.0, -1.0])
    np.testing.assert_allclose(np.asarray(ps.comb(n, k)), ss.comb(n, k), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ps.comb(n, k, repetition=True)),
                               ss.comb(n, k, repetition=True), rtol=1e-12)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 5e-5)])
def test_betainc(dtype, rtol):
    rng = np.random.default_rng(7)
    a, b, x = rng.uniform(0.1, 30, 200), rng.uniform(0.1, 30, 200), rng.uniform(0, 1, 200)
    x[:4] = [0.0, 1.0, 0.5, 1e-5]
    got = plait.jit(ps.betainc)(a.astype(dtype), b.astype(dtype), x.astype(dtype))
    want = ss.betainc(a.astype(dtype), b.astype(dtype), x.astype(dtype)).astype(np.float64)
    floor = 1e-300 if dtype == np.float64 else 1e-6
    err = np.abs(np.asarray(got, np.float64) - want) / np.maximum(np.abs(want), floor)
    assert err.max() <= rtol, err.max()
    assert np.isnan(np.asarray(ps.betainc(np.array([-1.0, 2.0]), 2.0, np.array([0.5, 1.5])))).all()
    check_grads(lambda x: ps.betainc(2.0, 3.5, x), (np.array([0.2, 0.7]),), order=1)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-13), (np.float32, 2e-5)])
def test_exponential_integrals(dtype, rtol):
    x1 = np.concatenate([np.logspace(-8, 2.5, 60), [0.0, -1.0, np.inf, np.nan]]).astype(dtype)
    x2 = np.concatenate([np.linspace(-50, 80, 66), [0.0, np.nan, 1e-5, -1e-5]]).astype(dtype)
    e1, ei = plait.jit(lambda a, b: (ps.exp1(a), ps.expi(b)))(x1, x2)
    _compare(e1, ss.exp1(x1), rtol, "exp1")
    _compare(ei, ss.expi(x2), rtol, "expi")
    np.testing.assert_allclose(np.asarray(ps.bernoulli(12)), ss.bernoulli(12), atol=1e-14)
