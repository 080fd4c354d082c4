"""Control flow compiled into native loops: no host step, no return to Python per iteration."""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from plait import lax


def _native(f, *args):
    return plait.jit(f, backend="native").lower(*args).compile()


def cg(A, b, tol=1e-10, maxiter=200):
    """Conjugate gradient with two exit conditions (residual and iteration count)."""
    def cond(c):
        _, _, _, rr, k = c
        return (rr > tol * tol * pnp.dot(b, b)) & (k < maxiter)

    def body(c):
        x, r, p, rr, k = c
        Ap = A @ p
        alpha = rr / pnp.dot(p, Ap)
        x, r = x + alpha * p, r - alpha * Ap
        rr_new = pnp.dot(r, r)
        return x, r, r + (rr_new / rr) * p, rr_new, k + 1
    x0 = pnp.zeros_like(b)
    return lax.while_loop(cond, body, (x0, b, b, pnp.dot(b, b), 0))[0]


def test_cg_solver_is_one_native_loop():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((40, 40))
    A, b = m @ m.T + 40 * np.eye(40), rng.standard_normal(40)
    c = _native(cg, A, b)
    steps = c.as_text("kernels").splitlines()
    assert any("native while" in s for s in steps) and not any(s.startswith("host") for s in steps)
    np.testing.assert_allclose(np.asarray(c(A, b)), np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)


def test_rnn_scan_and_its_gradient_run_natively():
    rng = np.random.default_rng(1)
    W, U = rng.standard_normal((8, 8)) * 0.3, rng.standard_normal((4, 8)) * 0.3
    xs = rng.standard_normal((20, 4))

    def loss(W, U, xs):
        def step(h, x):
            h = pnp.tanh(h @ W + x @ U)
            return h, pnp.sum(h)
        h, ys = lax.scan(step, pnp.zeros(8), xs)
        return pnp.sum(ys) + pnp.sum(h * h)

    for f in (loss, plait.grad(loss, argnums=(0, 1))):
        c = _native(f, W, U, xs)
        assert not any(s.startswith("host") for s in c.as_text("kernels").splitlines())
        got = c(W, U, xs)
        want = plait.jit(f, backend="interp")(W, U, xs)
        for g, w in zip(plait.tree_util.tree_leaves(got), plait.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


def test_cond_and_switch_pick_the_branch_at_run_time():
    x = np.linspace(-1, 1, 7)
    f = plait.jit(lambda i, x: lax.switch(i, [pnp.sin, pnp.cos, pnp.tanh], x), backend="native")
    for i, ref in enumerate((np.sin, np.cos, np.tanh, np.tanh)):     # index 3 clamps to 2
        np.testing.assert_allclose(np.asarray(f(i, x)), ref(x), rtol=1e-14)
    assert "native cond" in f.lower(0, x).compile().as_text("kernels")


def test_loop_with_a_host_only_body_falls_back_to_the_host():
    def f(x):   # sort has no native lowering, so the loop runs its body on the host
        return lax.fori_loop(0, 3, lambda i, v: pnp.sort(v * -1.0), x)
    x = np.array([3.0, 1.0, 2.0])
    c = _native(f, x)
    assert any(s.startswith("host") for s in c.as_text("kernels").splitlines())
    v = x
    for _ in range(3):
        v = np.sort(-v)
    np.testing.assert_array_equal(np.asarray(c(x)), v)


def test_loop_carries_at_every_trip_count_leave_the_inputs_alone():
    """Native loops read their carries' initial values in place and a scan's last
    iteration writes its carries straight into the outputs: with 0, 1, 2 and 5 trips
    (every path: no iteration, first = last, then the scratch buffers: two in turn, or
    one written in place, ``inplace.carry_updates``), for
    scans both ways with per-step outputs, and for while loops, the results equal
    NumPy's and the caller's arrays are unchanged."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(6)
    s = rng.standard_normal((5, 6))
    x0, s0 = x.copy(), s.copy()

    def scan_ref(n, reverse):
        a, b, ys = x.copy(), np.zeros(6), []
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            a, b = np.tanh(a * 1.5 + s[t]), b + a
            ys.append(a * b)
        if reverse:
            ys = ys[::-1]
        return a, b, np.array(ys).reshape(n, 6)

    for n in (0, 1, 2, 5):
        for reverse in (False, True):
            def f(x, s):
                def body(c, st):
                    a, b = c
                    a, b = pnp.tanh(a * 1.5 + st), b + a
                    return (a, b), a * b
                (a, b), ys = lax.scan(body, (x, pnp.zeros_like(x)), s[:n], reverse=reverse)
                return a, b, ys
            c = _native(f, x, s)
            assert "cf0: native scan" in c.as_text("kernels").splitlines()
            for got, want in zip(c(x, s), scan_ref(n, reverse)):
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
        for trips in (0, 1, 2, 5):
            def g(x):
                return lax.while_loop(lambda c: c[1] < trips,
                                      lambda c: (pnp.sin(c[0]) * 2.0 + c[0], c[1] + 1), (x, 0))
            want = x.copy()
            for _ in range(trips):
                want = np.sin(want) * 2.0 + want
            got, k = _native(g, x)(x)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
            assert int(np.asarray(k)) == trips
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(s, s0)
