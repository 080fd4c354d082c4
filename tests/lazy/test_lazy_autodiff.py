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


# --- reverse mode by recording: the forward pass is recorded once, the backward graph is
# derived from the recording and cached by its structure (plait/lazy/autodiff.py) --------

def test_backward_graph_is_derived_once_and_shares_the_forward_pass():
    w, x = lazy.asarray(W), lazy.asarray(X)
    for _ in range(3):
        v, g = plait.value_and_grad(loss)(w, x)
        w = w - 0.1 * g
        lazy.step()
    m = lazy.metrics()
    assert m["backward_graphs"] == 1 and m["compiles"] == 1
    (trace,) = lazy.cached_traces()
    prims = [e.prim.name for e in trace.graph.eqns]
    # one matmul forward, one for the weight gradient: the backward graph's recomputed
    # forward pass was merged with the recorded one
    assert prims.count("dot_general") == 2 and prims.count("tanh") == 1


def test_observing_a_value_inside_the_differentiated_function():
    # (eager grad cannot observe a value mid-function, so the oracle leaves it out)
    seen = []

    def f(w, x, observe=True):
        h = pnp.tanh(x @ w)
        if observe:
            seen.append(float(pnp.sum(h)))      # materializes mid-function
            lazy.step()                         # so does a barrier
        return pnp.sum(h * h * w[0, 0])

    v, g = plait.value_and_grad(f)(lazy.asarray(W), lazy.asarray(X))
    ve, ge = plait.value_and_grad(f)(plait.device_put(W), plait.device_put(X), observe=False)
    np.testing.assert_allclose(float(v), float(ve), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g), np.asarray(ge), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seen[0], np.tanh(X @ W).sum(), rtol=1e-5)


def test_a_closed_over_array_is_a_constant_even_when_also_an_argument():
    w0 = lazy.asarray(W)
    g = plait.grad(lambda w: pnp.sum(w * w0))(w0)
    np.testing.assert_allclose(np.asarray(g), W)            # not 2 * W
    gx, gy = plait.grad(lambda a, b: pnp.sum(a * b * b), argnums=(0, 1))(w0, w0)
    np.testing.assert_allclose(np.asarray(gx), W * W, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gy), 2 * W * W, rtol=1e-6)


def test_second_order_gradient_of_lazy_arrays():
    f = lambda x: pnp.sum(pnp.sin(x) * x ** 3)
    x = np.linspace(-1.0, 1.0, 7)
    gg = plait.grad(lambda x: pnp.sum(plait.grad(f)(x) ** 2))(lazy.asarray(x))
    d1 = np.cos(x) * x ** 3 + 3 * np.sin(x) * x ** 2
    d2 = -np.sin(x) * x ** 3 + 6 * np.cos(x) * x ** 2 + 6 * np.sin(x) * x
    np.testing.assert_allclose(np.asarray(gg), 2 * d1 * d2, rtol=1e-10)


def test_aux_outputs_integer_arguments_and_constant_functions():
    def f(w, n):
        h = x_lazy @ w
        return pnp.sum(h) * n, {"h": h, "n": n}

    x_lazy = lazy.asarray(X)
    (v, aux), (gw, gn) = plait.value_and_grad(f, argnums=(0, 1), has_aux=True,
                                              allow_int=True)(lazy.asarray(W), lazy.asarray(3))
    assert isinstance(aux["h"], lazy.LazyArray)
    np.testing.assert_allclose(np.asarray(aux["h"]), X @ W, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gw), 3 * X.sum(0)[:, None] * np.ones((5, 3)),
                               rtol=1e-5)
    assert np.asarray(gn).dtype == np.int64 and int(gn) == 0
    g0 = plait.grad(lambda w: pnp.sum(x_lazy) * 2.0)(lazy.asarray(W))
    np.testing.assert_array_equal(np.asarray(g0), np.zeros_like(W))
    g1 = plait.grad(lambda w: w)(lazy.asarray(np.float32(2.0)))
    assert float(g1) == 1.0


def test_vjp_converts_the_cotangent_dtype_and_checks_its_shape():
    out, f_vjp = plait.vjp(lambda w: lazy.asarray(X) @ w, lazy.asarray(W))
    (g,) = f_vjp(np.ones((4, 3), np.float64))
    assert np.asarray(g).dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), X.T @ np.ones((4, 3)), rtol=1e-5)
    import pytest
    with pytest.raises(plait.errors.PlaitTypeError, match="cotangent 0 has shape"):
        f_vjp(np.ones((3, 4), np.float32))
