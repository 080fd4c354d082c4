"""plait.scipy.optimize.minimize (BFGS under jit) against scipy.optimize.minimize."""
import numpy as np
import pytest
import scipy.optimize as so

import plait
import plait.numpy as pnp
from plait.errors import PlaitValueError
from plait.scipy.optimize import minimize


def _rosen(x):
    return pnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_rosenbrock_under_jit():
    x0 = np.array([-1.2, 1.0, 0.5, -0.3, 0.8])
    r = plait.jit(lambda x: minimize(_rosen, x, options=dict(gtol=1e-8)))(x0)
    ref = so.minimize(so.rosen, x0, jac=so.rosen_der, method="BFGS", options=dict(gtol=1e-8))
    assert bool(r.success) and int(r.status) == 0 and ref.success
    np.testing.assert_allclose(np.asarray(r.x), ref.x, atol=1e-6)
    np.testing.assert_allclose(np.asarray(r.x), np.ones(5), atol=1e-6)
    assert float(r.fun) < 1e-12
    assert np.max(np.abs(np.asarray(r.jac))) <= 1e-8
    assert 0 < int(r.nit) <= 200 and int(r.nfev) >= int(r.nit)
    # hess_inv approximates the inverse Hessian at the optimum
    hess = so.rosen_hess(np.ones(5))
    np.testing.assert_allclose(np.asarray(r.hess_inv) @ hess, np.eye(5), atol=0.05)


def test_logistic_regression_matches_scipy():
    rng = np.random.default_rng(0)
    n, d = 200, 4
    a = rng.normal(size=(n, d))
    w_true = np.array([1.5, -2.0, 0.5, 0.0])
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-a @ w_true))).astype(np.float64)

    def nll(w, a, y, lam):
        z = a @ w
        return pnp.mean(pnp.logaddexp(0.0, z) - y * z) + lam * pnp.sum(w * w)

    def nll_np(w):
        z = a @ w
        return np.mean(np.logaddexp(0.0, z) - y * z) + 0.01 * np.sum(w * w)

    r = plait.jit(lambda w0, a, y: minimize(nll, w0, args=(a, y, 0.01)))(np.zeros(d), a, y)
    ref = so.minimize(nll_np, np.zeros(d), method="BFGS")
    assert bool(r.success)
    np.testing.assert_allclose(np.asarray(r.x), ref.x, atol=1e-4)
    np.testing.assert_allclose(float(r.fun), ref.fun, rtol=1e-9)


def test_eager_iteration_limit_and_errors():
    r = minimize(_rosen, np.array([-1.2, 1.0]), options=dict(maxiter=3))
    assert int(r.status) == 1 and not bool(r.success) and int(r.nit) == 3
    with pytest.raises(PlaitValueError, match="method"):
        minimize(_rosen, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(PlaitValueError, match="one-dimensional"):
        minimize(_rosen, np.zeros((2, 2)))
