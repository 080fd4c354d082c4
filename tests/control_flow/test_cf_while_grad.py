"""Reverse mode through while_loop (which JAX refuses): against fori_loop of the same
trip count and finite differences; W3's Newton-CG solver (outer and inner loops are
while_loops) differentiated with respect to its inputs; the max_steps (fixed tape)
variant; jit on both backends, vmap of grad."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax

BACKENDS = ["interp", "native"]


def _loop(x, a, use_while, max_steps=None):
    def step(v):
        return pnp.sin(v) * a + v * 0.5
    if use_while:
        out = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, step(c[1])), (0, x),
                             max_steps=max_steps)[1]
    else:
        out = lax.fori_loop(0, 5, lambda i, v: step(v), x)
    return pnp.sum(out ** 2)


def _fd(f, args, i, eps=1e-6):
    args = [np.asarray(a, dtype=np.float64) for a in args]
    g = np.zeros_like(args[i])
    for j in np.ndindex(g.shape):
        up = [a.copy() for a in args]
        dn = [a.copy() for a in args]
        up[i][j] += eps
        dn[i][j] -= eps
        g[j] = (float(f(*up)) - float(f(*dn))) / (2 * eps)
    return g


X, A = np.array([0.3, 0.7, -1.1]), np.float64(1.3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_grad_matches_fori_and_fd(backend):
    gw = plait.jit(plait.grad(lambda x, a: _loop(x, a, True), argnums=(0, 1)), backend=backend)
    gb = plait.jit(plait.grad(lambda x, a: _loop(x, a, True, 8), argnums=(0, 1)),
                   backend=backend)
    gf = plait.grad(lambda x, a: _loop(x, a, False), argnums=(0, 1))
    ref = [np.asarray(v) for v in gf(X, A)]
    f = lambda x, a: _loop(x, a, False)   # noqa: E731
    np.testing.assert_allclose(ref[0], _fd(f, [X, A], 0), rtol=1e-6)
    np.testing.assert_allclose(ref[1], _fd(f, [X, A], 1), rtol=1e-6)
    for g in (gw, gb):
        for a, b in zip(g(X, A), ref):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-14)


def test_while_grad_eager_vmap_and_vjp_reuse():
    g = plait.grad(lambda x, a: _loop(x, a, True))
    ref = plait.grad(lambda x, a: _loop(x, a, False))
    np.testing.assert_allclose(np.asarray(g(X, A)), np.asarray(ref(X, A)), rtol=1e-12)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(np.asarray(plait.vmap(g, in_axes=(0, None))(xs, A)),
                               np.stack([np.asarray(ref(x, A)) for x in xs]), rtol=1e-12)
    # the vjp function holds no tape: it can be applied twice
    y, f_vjp = plait.vjp(lambda x: lax.while_loop(lambda c: c[0] < 3,
                                                   lambda c: (c[0] + 1, pnp.sin(c[1])),
                                                   (0, x))[1], X)
    first = np.asarray(f_vjp(np.ones(3))[0])
    np.testing.assert_allclose(np.asarray(f_vjp(np.ones(3))[0]), first)
    np.testing.assert_allclose(first, np.cos(X) * np.cos(np.sin(X)) *
                               np.cos(np.sin(np.sin(X))), rtol=1e-12)


def test_while_zero_trips():
    g = plait.grad(lambda x: pnp.sum(lax.while_loop(lambda v: v[0] > 10.0,
                                                    lambda v: v * 2.0, x) ** 2))
    np.testing.assert_allclose(np.asarray(g(X)), 2 * X)


# --- W3: Newton-CG with while_loop, differentiated w.r.t. its inputs ----------------

def _problem(seed=4, m=40, n=5):
    r = np.random.default_rng(seed)
    Xd = r.standard_normal((m, n))
    w_true = r.standard_normal(n)
    y = np.sign(Xd @ w_true + 0.5 * r.standard_normal(m))
    return Xd, y


XD, YD = _problem()


def newton_cg(lam, y, outer_while=True, n_outer=None):
    """Regularised logistic regression by truncated Newton-CG: the outer loop runs
    until ||g|| <= 1e-10 (a while_loop, or fori_loop with n_outer trips); the inner
    CG solve of H p = -g is a while_loop. Returns (validation value, outer trips)."""
    def grad_hess(w):
        z = y * (XD @ w)
        s = 1.0 / (1.0 + pnp.exp(z))                      # sigmoid(-z)
        g = -(XD.T @ (y * s)) / XD.shape[0] + lam * w
        d = s * (1.0 - s) / XD.shape[0]
        return g, lambda v: XD.T @ (d * (XD @ v)) + lam * v

    def cg(hv, g):
        def cond(c):
            _, _, _, rr, k = c
            return (k < 20) & (rr > 1e-24)

        def body(c):
            p, r, d, rr, k = c
            hd = hv(d)
            alpha = rr / pnp.dot(d, hd)
            p, r = p + alpha * d, r - alpha * hd
            rr_new = pnp.dot(r, r)
            return p, r, r + (rr_new / rr) * d, rr_new, k + 1
        return lax.while_loop(cond, body, (pnp.zeros_like(g), -g, -g, pnp.dot(g, g), 0))[0]

    def newton(w):
        g, hv = grad_hess(w)
        return w + cg(hv, g)

    w0 = pnp.zeros(XD.shape[1])
    if outer_while:
        def cond(c):
            g, _ = grad_hess(c[1])
            return (pnp.dot(g, g) > 1e-20) & (c[0] < 30)
        k, w = lax.while_loop(cond, lambda c: (c[0] + 1, newton(c[1])), (0, w0))
    else:
        k, w = n_outer, lax.fori_loop(0, n_outer, lambda i, w: newton(w), w0)
    return pnp.sum(pnp.log1p(pnp.exp(-YD[:10] * (XD[:10] @ w)))), k


@pytest.mark.parametrize("backend", BACKENDS)
def test_newton_cg_while_is_differentiable(backend):
    lam, y = np.float64(0.1), YD * 0.9
    val, trips = plait.jit(newton_cg, backend=backend)(lam, y)
    trips = int(trips)
    assert 3 <= trips < 30
    f_while = lambda l, yy: newton_cg(l, yy)[0]                      # noqa: E731
    f_fori = lambda l, yy: newton_cg(l, yy, False, trips)[0]          # noqa: E731
    g_while = plait.jit(plait.grad(f_while, argnums=(0, 1)), backend=backend)(lam, y)
    g_fori = plait.grad(f_fori, argnums=(0, 1))(lam, y)
    for a, b in zip(g_while, g_fori):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)
    # finite differences of the solver (the trip counts do not change under eps)
    f_np = plait.jit(f_while, backend="interp")
    np.testing.assert_allclose(np.asarray(g_while[0]), _fd(f_np, [lam, y], 0), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g_while[1]), _fd(f_np, [lam, y], 1), rtol=1e-5,
                               atol=1e-8)


def test_while_second_order():
    f = lambda x: _loop(x, A, True)           # noqa: E731
    g = lambda x: _loop(x, A, False)          # noqa: E731
    ref = np.asarray(plait.hessian(g)(X))
    np.testing.assert_allclose(np.asarray(plait.hessian(f)(X)), ref, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(plait.jacrev(plait.grad(f))(X)), ref, rtol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_grad_long_loop_uses_checkpoints(backend):
    # 75 trips > CHECKPOINTS: steps are recomputed from saved carries (stride 3)
    def run(x, a, use_while):
        step = lambda v: pnp.sin(v) * a + 0.3 * v          # noqa: E731
        if use_while:
            return pnp.sum(lax.while_loop(lambda c: c[0] < 75,
                                          lambda c: (c[0] + 1, step(c[1])), (0, x))[1])
        return pnp.sum(lax.fori_loop(0, 75, lambda i, v: step(v), x))
    g = plait.jit(plait.grad(lambda x, a: run(x, a, True), argnums=(0, 1)), backend=backend)
    ref = plait.grad(lambda x, a: run(x, a, False), argnums=(0, 1))(X, np.float64(0.9))
    for a, b in zip(g(X, np.float64(0.9)), ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-14)
