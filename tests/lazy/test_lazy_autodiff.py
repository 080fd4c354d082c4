"""Transformations of functions of lazy arrays record their ops lazily (grad, vjp, jvp)."""
import numpy as np

import plait
import plait.numpy as pnp
from plait import lazy

RNG = np.random.default_rng(1)
W = RNG.standard_normal((5, 3)).astype(np.float32)
X = RNG.standard_normal((4, 5)).astype(np.float32)


def loss(w, x):
    return pnp.sum(pnp.tanh(x @ w) ** 2) / 4.0


def test_value_and_grad_is_recorded_without_materializing():
    with lazy.forbid_materialization():
        v, g = plait.value_and_grad(loss)(lazy.asarray(W), lazy.asarray(X))
    assert isinstance(v, lazy.LazyArray) and isinstance(g, lazy.LazyArray)
    assert not v.is_concrete and not g.is_concrete
    ve, ge = plait.value_and_grad(loss)(plait.device_put(W), plait.device_put(X))
    lazy.step()
    assert lazy.metrics()["materializations"] == 1
    np.testing.assert_allclose(float(v), float(ve), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g), np.asarray(ge), rtol=1e-6, atol=1e-7)


def test_gradient_matches_finite_differences():
    g = np.asarray(plait.grad(loss)(lazy.asarray(W.astype(np.float64)),
                                    lazy.asarray(X.astype(np.float64))))
    w64, x64 = W.astype(np.float64), X.astype(np.float64)
    f = lambda w: np.sum(np.tanh(x64 @ w) ** 2) / 4.0
    eps = 1e-6
    fd = np.zeros_like(w64)
    for idx in np.ndindex(*w64.shape):
        d = np.zeros_like(w64)
        d[idx] = eps
        fd[idx] = (f(w64 + d) - f(w64 - d)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_vjp_and_jvp_of_lazy_arrays():
    w, x = lazy.asarray(W), lazy.asarray(X)
    ct = np.ones((4, 3), np.float32)
    out, f_vjp = plait.vjp(lambda w: pnp.tanh(x @ w), w)
    (gw,) = f_vjp(lazy.asarray(ct))
    primal, tangent = plait.jvp(lambda w: pnp.tanh(x @ w), (w,), (lazy.asarray(np.ones_like(W)),))
    assert all(isinstance(a, lazy.LazyArray) for a in (out, gw, primal, tangent))
    lazy.step()
    t = np.tanh(X @ W)
    np.testing.assert_allclose(np.asarray(gw), X.T @ (ct * (1 - t ** 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tangent), (1 - t ** 2) * (X @ np.ones_like(W)),
                               rtol=1e-5, atol=1e-6)


def test_training_step_grad_is_one_trace_per_step():
    w = lazy.asarray(W)
    x = lazy.asarray(X)
    for _ in range(5):
        g = plait.grad(loss)(w, x)
        w = w - 0.1 * g
        lazy.step()
    m = lazy.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == 4
