"""Iterative solvers written with while_loop: truncated conjugate gradient (W3's inner loop)."""
import numpy as np
import pytest

import plait
from plait import lax
from plait.lax.control_flow import while_loop

from cf_helpers import bcast


def cg_solve(A, b, tol=1e-10, maxiter=50):
    """Conjugate gradient for ``A x = b`` (A symmetric positive definite), truncated when
    ``||r|| <= tol * ||b||`` or after ``maxiter`` iterations. Returns ``(x, iterations)``."""
    def scale(s, v):
        return lax.mul(bcast(s, v), v)

    bb = lax.dot(b, b)
    x0 = lax.mul(b, 0.0)
    init = (x0, b, b, bb, np.int32(0))        # x, r, p, r.r, k

    def not_done(c):
        _, _, _, rr, k = c
        return lax.bitwise_and(lax.gt(rr, lax.mul(bb, tol * tol)), lax.lt(k, maxiter))

    def step(c):
        x, r, p, rr, k = c
        Ap = lax.dot(A, p)
        alpha = lax.div(rr, lax.dot(p, Ap))
        x = lax.add(x, scale(alpha, p))
        r = lax.sub(r, scale(alpha, Ap))
        rr_new = lax.dot(r, r)
        p = lax.add(r, scale(lax.div(rr_new, rr), p))
        return x, r, p, rr_new, lax.add(k, 1)

    x, _, _, _, k = while_loop(not_done, step, init)
    return x, k


def cg_reference(A, b, tol, maxiter):
    x, r = np.zeros_like(b), b.copy()
    p, rr, k = r.copy(), r @ r, 0
    while rr > (b @ b) * tol * tol and k < maxiter:
        Ap = A @ p
        alpha = rr / (p @ Ap)
        x, r = x + alpha * p, r - alpha * Ap
        rr_new = r @ r
        p, rr, k = r + rr_new / rr * p, rr_new, k + 1
    return x, k


def _spd(n, seed, cond=100.0):
    r = np.random.default_rng(seed)
    u, _ = np.linalg.qr(r.normal(size=(n, n)))
    return (u * np.logspace(0, np.log10(cond), n)) @ u.T, r.normal(size=n)


@pytest.mark.parametrize("seed", [0, 1])
def test_cg_converges_to_solve(mode, seed):
    A, b = _spd(30, seed)
    x, k = mode(cg_solve)(A, b)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(A, b), rtol=1e-7, atol=1e-9)
    assert 0 < int(k) < 50                  # stopped by the residual test


def test_cg_truncated_by_max_iterations(mode):
    A, b = _spd(30, 2, cond=1e3)
    solver = mode(lambda A, b: cg_solve(A, b, tol=1e-10, maxiter=4))
    x, k = solver(A, b)
    want, kw = cg_reference(A, b, 1e-10, 4)
    assert int(k) == kw == 4                 # stopped by the iteration cap
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-10)
    x = np.asarray(x)
    assert 0.5 * x @ A @ x - b @ x < 0.0    # CG decreases the quadratic (from 0 at x = 0)


def test_cg_graph_is_one_while(mode):
    A, b = _spd(8, 3)
    closed = plait.jit(cg_solve).lower(A, b).closed
    plait.check_graph(closed.graph)
    assert [e.prim.name for e in closed.graph.eqns].count("while") == 1
