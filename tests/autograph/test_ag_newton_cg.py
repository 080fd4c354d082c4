"""W3's truncated Newton-CG written with plain Python ``while``/``if`` and compiled
with ``jit(..., autograph=True)``: one graph with one ``while`` (the CG loop is not
unrolled), matching the hand-written ``lax.while_loop`` version and NumPy."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax

from ag_helpers import prim_counts

N = 50


def quadratic_problem(n=N, seed=3):
    r = np.random.default_rng(seed)
    u, _ = np.linalg.qr(r.standard_normal((n, n)))
    return (u * np.logspace(0, 3, n)) @ u.T, r.standard_normal(n)


A, B = quadratic_problem()


def objective(x):
    return 0.5 * pnp.dot(x, A @ x) - pnp.dot(B, x)


def hvp(x, v):
    return plait.jvp(plait.grad(objective), (x,), (v,))[1]


def newton_step(x):
    """One truncated Newton step, plain Python control flow."""
    g = plait.grad(objective)(x)
    gnorm = pnp.sqrt(pnp.dot(g, g))
    p = pnp.zeros_like(x)
    r = -g
    d = r
    rr = pnp.dot(r, r)
    k = 0
    while k < 50 and pnp.sqrt(rr) > 1e-4 * gnorm:
        hd = hvp(x, d)
        curvature = pnp.dot(d, hd)
        if curvature <= 0:            # negative curvature: stop with what we have
            break
        alpha = rr / curvature
        p = p + alpha * d
        r = r - alpha * hd
        rr_new = pnp.dot(r, r)
        d = r + (rr_new / rr) * d
        rr = rr_new
        k += 1
    return x + p, k


def newton_step_lax(x):
    """The same step written by hand with lax.while_loop."""
    g = plait.grad(objective)(x)
    gnorm = pnp.sqrt(pnp.dot(g, g))

    def cond(c):
        _, _, _, rr, k, stop = c
        return (k < 50) & (pnp.sqrt(rr) > 1e-4 * gnorm) & ~stop

    def body(c):
        p, r, d, rr, k, _ = c
        hd = hvp(x, d)
        curvature = pnp.dot(d, hd)
        alpha = rr / curvature
        p2 = p + alpha * d
        r2 = r - alpha * hd
        rr_new = pnp.dot(r2, r2)
        d2 = r2 + (rr_new / rr) * d
        neg = curvature <= 0
        pick = lambda a, b: lax.select(lax.broadcast_in_dim(neg, pnp.shape(a), ()), a, b)
        return (pick(p, p2), pick(r, r2), pick(d, d2), pnp.where(neg, rr, rr_new),
                pnp.where(neg, k, k + 1), neg)

    init = (pnp.zeros_like(x), -g, -g, pnp.dot(g, g), 0, False)
    p, _, _, _, k, _ = lax.while_loop(cond, body, init)
    return x + p, k


def numpy_step(x):
    g = A @ x - B
    gnorm = np.linalg.norm(g)
    p, r = np.zeros_like(x), -g
    d, rr, k = r, r @ r, 0
    while k < 50 and np.sqrt(rr) > 1e-4 * gnorm:
        hd = A @ d
        alpha = rr / (d @ hd)
        p, r = p + alpha * d, r - alpha * hd
        rr_new = r @ r
        d, rr, k = r + rr_new / rr * d, rr_new, k + 1
    return x + p, k


def test_newton_cg_is_one_graph_with_one_while():
    step = plait.jit(newton_step, autograph=True, backend="interp")
    closed = step.lower(np.zeros(N)).closed
    plait.check_graph(closed.graph)
    top = [e.prim.name for e in closed.graph.eqns]
    assert top.count("while") == 1
    counts = prim_counts(closed.graph)
    assert counts["while"] == 1 and counts["cond"] == 1   # `if curvature <= 0: break`
    # the Hessian-vector product appears once (inside the loop body), not unrolled
    assert counts["dot_general"] < 25


@pytest.mark.parametrize("backend", ["interp", "native"])
def test_newton_cg_matches_lax_version_and_numpy(backend):
    step = plait.jit(newton_step, autograph=True, backend=backend)
    step_lax = plait.jit(newton_step_lax, backend=backend)
    x = x_lax = x_np = np.zeros(N)
    for _ in range(10):
        x, k = step(x)
        x_lax, k_lax = step_lax(x_lax)
        x_np, k_np = numpy_step(x_np)
        assert int(k) == int(k_lax) == k_np
    np.testing.assert_allclose(np.asarray(x), np.asarray(x_lax), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(x), x_np, rtol=1e-8, atol=1e-10)
    # ten truncated Newton steps from 0 approach the minimiser A^-1 b
    sol = np.linalg.solve(A, B)
    assert np.linalg.norm(np.asarray(x) - sol) < 1e-3 * np.linalg.norm(sol)
