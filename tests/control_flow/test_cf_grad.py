"""Derivatives through control flow: check_grads (finite differences, jvp vs vjp)."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.lax.control_flow import cond, switch, while_loop, fori_loop, scan
from plait.test_util import check_grads
from plait.transforms import grad, jvp, jacfwd

rng = np.random.default_rng(0)


def _branchy(x, w):
    return cond(pnp.sum(x) > 0,
                lambda: (pnp.sin(x) * w, pnp.sum(x * x)),
                lambda: (pnp.exp(x) + w, pnp.prod(x)))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_grads(sign):
    x, w = sign * np.abs(rng.normal(size=3)), rng.normal(size=3)
    check_grads(_branchy, (x, w), order=2)
    check_grads(plait.jit(_branchy), (x, w), order=1)


@pytest.mark.parametrize("i", [0, 1, 2])
def test_switch_grads(i):
    def f(i, x, y):
        return switch(i, [lambda: pnp.sin(x) * y, lambda: x * x, lambda: pnp.tanh(y) + x], )
    x, y = rng.normal(size=4), rng.normal(size=4)
    check_grads(lambda x, y: f(i, x, y), (x, y), order=2)
    check_grads(lambda i, x, y: plait.jit(f)(i, x, y), (np.int32(i), x, y), order=1)


def _rnn(params, h0, xs):
    W, U, b = params

    def step(h, x):
        h = pnp.tanh(W @ h + U @ x + b)
        return h, pnp.sum(h * h)
    h, ys = scan(step, h0, xs)
    return pnp.sum(h) + pnp.sum(ys * pnp.arange(20.0))


def _rnn_np(params, h0, xs):
    W, U, b = params
    h, tot = h0, 0.0
    for k, x in enumerate(xs):
        h = np.tanh(W @ h + U @ x + b)
        tot += k * (h * h).sum()
    return h.sum() + tot


def test_rnn_scan_20_steps_grads_both_modes_order_2():
    params = (rng.normal(size=(4, 4)) * 0.4, rng.normal(size=(4, 2)) * 0.5, rng.normal(size=4))
    h0, xs = rng.normal(size=4), rng.normal(size=(20, 2))
    np.testing.assert_allclose(float(_rnn(params, h0, xs)), _rnn_np(params, h0, xs))
    check_grads(lambda W, U, b, h0, xs: _rnn((W, U, b), h0, xs), (*params, h0, xs), order=2)
    g_eager = grad(_rnn)(params, h0, xs)
    g_jit = plait.jit(grad(_rnn))(params, h0, xs)
    for a, b in zip(g_eager, g_jit):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_reverse_scan_grads():
    def f(c, xs):
        return scan(lambda c, x: (c * pnp.cos(x), c + x), c, xs, reverse=True)
    check_grads(f, (rng.normal(size=3), rng.normal(size=(5, 3))), order=2)


def test_fori_loop_grads():
    def f(x, a):
        return fori_loop(0, 6, lambda i, c: pnp.sin(c * a) + i * 0.1, x)
    check_grads(f, (rng.normal(size=3), rng.normal(size=3)), order=2)
    check_grads(plait.jit(f), (rng.normal(size=3), rng.normal(size=3)), order=1)


def test_while_loop_forward_mode():
    def f(x, a):
        def body(c):
            i, y = c
            return i + 1, pnp.sin(y * a) + y
        return while_loop(lambda c: c[0] < 5, body, (0, x))[1]
    x, a = rng.normal(size=3), rng.normal(size=3)
    check_grads(f, (x, a), order=2, modes=("fwd",))
    check_grads(plait.jit(f), (x, a), order=1, modes=("fwd",))
    j = jacfwd(f)(x, a)       # linearize-based forward mode works too
    _, t = jvp(f, (x, a), (np.eye(3)[0], np.zeros(3)))
    np.testing.assert_allclose(np.asarray(j)[:, 0], np.asarray(t), rtol=1e-12)


def test_while_loop_forward_mode_data_dependent_trip_count():
    def newton_sqrt(a):
        return while_loop(lambda x: pnp.abs(x * x - a) > 1e-12 * a,
                          lambda x: 0.5 * (x + a / x), a)
    a = 7.0
    _, t = jvp(newton_sqrt, (a,), (1.0,))
    np.testing.assert_allclose(float(t), 0.5 / np.sqrt(a), rtol=1e-9)


def test_reverse_mode_of_while_loop():
    # JAX refuses this; plait differentiates it (more in test_cf_while_grad.py):
    # 1 -> 2 -> 4 -> 8 -> 16 is four trips, so f(x) = x**4 near x = 2
    def f(x):
        return while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)
    assert float(grad(f)(2.0)) == 32.0
    assert float(plait.jit(grad(f))(2.0)) == 32.0


def test_grads_through_nested_control_flow():
    def f(x, a):
        def step(c, xi):
            c = cond(xi > 0, lambda: c * a + xi, lambda: pnp.sin(c) - xi)
            return c, pnp.sum(c)
        c, ys = scan(step, x, pnp.asarray(np.array([0.5, -1.0, 2.0, -0.3])))
        inner = cond(pnp.sum(c) > -100.0,
                     lambda: fori_loop(0, 3, lambda i, v: pnp.cos(v) * a, c),
                     lambda: c)
        return pnp.sum(inner) + pnp.sum(ys)
    check_grads(f, (rng.normal(size=3), rng.normal(size=3)), order=2)
