"""Converted functions under transformations: grad through a converted ``if`` and
``for`` (checked against finite differences), jvp through a converted ``while``."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp

from ag_helpers import prim_counts


def piecewise(x):
    if x < -1:
        return -x - 1
    elif x < 1:
        return 0.5 * x * x - 0.5
    else:
        return pnp.sin(x) * x


def rows_loss(xs, w):
    acc = 0.0
    for row in xs:
        if pnp.sum(row * w) > 0:
            acc = acc + pnp.sum(pnp.sin(row * w))
        else:
            acc = acc - pnp.sum(row * w) ** 2
    return acc


def newton_sqrt(a):
    y = a
    while pnp.abs(y * y - a) > 1e-9 * a:
        y = 0.5 * (y + a / y)
    return y


def fd(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("x", [-2.5, -0.4, 0.7, 2.0])
def test_grad_through_converted_if(x):
    g = plait.grad(plait.autograph(piecewise))
    want = fd(piecewise, x)
    np.testing.assert_allclose(float(g(np.float64(x))), want, rtol=1e-6, atol=1e-8)
    gj = plait.jit(g, backend="interp")
    np.testing.assert_allclose(float(gj(np.float64(x))), want, rtol=1e-6, atol=1e-8)
    closed = plait.jit(plait.autograph(piecewise), backend="interp").lower(np.float64(x)).closed
    assert prim_counts(closed.graph)["cond"] >= 1


def test_grad_through_converted_for_over_rows():
    rng = np.random.default_rng(1)
    X, w = rng.normal(size=(5, 3)), np.array([0.3, -0.2, 0.5])
    g = plait.grad(plait.autograph(rows_loss), 1)
    want = fd(lambda v: float(rows_loss(X, v)), w)
    np.testing.assert_allclose(np.asarray(g(X, w)), want, rtol=1e-6, atol=1e-8)
    gj = plait.jit(g, backend="interp")
    np.testing.assert_allclose(np.asarray(gj(X, w)), want, rtol=1e-6, atol=1e-8)
    counts = prim_counts(gj.lower(X, w).closed.graph)
    assert counts["scan"] >= 1 and counts["cond"] >= 1


def test_jvp_through_converted_while():
    for f in (plait.autograph(newton_sqrt),                        # a Python loop
              plait.jit(newton_sqrt, autograph=True, backend="interp")):   # a `while`
        primal, tangent = plait.jvp(f, (2.0,), (1.0,))
        np.testing.assert_allclose(float(primal), np.sqrt(2.0), rtol=1e-9)
        np.testing.assert_allclose(float(tangent), 0.5 / np.sqrt(2.0), rtol=1e-9)
    closed = plait.jit(newton_sqrt, autograph=True).lower(2.0).closed
    assert prim_counts(closed.graph)["while"] == 1


def test_jit_of_autograph_equals_jit_autograph():
    x = np.float64(0.3)
    a = plait.jit(plait.autograph(piecewise), backend="interp")(x)
    b = plait.jit(piecewise, autograph=True, backend="interp")(x)
    assert float(a) == float(b) == piecewise(x)


def halve_until_small(x):
    n = 0
    while True:
        if x < 1.0:
            break
        x = x * 0.5
        n += 1
    return x * n


def test_eager_grad_keeps_python_loops():
    # outside jit the loop test is concrete, so the loop runs in Python and reverse
    # mode works (a staged while_loop would only support forward mode)
    g = plait.grad(plait.autograph(halve_until_small))
    np.testing.assert_allclose(float(g(np.float64(5.0))), 0.125 * 3, rtol=1e-12)
    j = plait.jit(halve_until_small, autograph=True, backend="interp")
    assert prim_counts(j.lower(np.float64(5.0)).closed.graph)["while"] == 1
    assert float(j(np.float64(5.0))) == halve_until_small(5.0)
