"""Loop-invariant code motion: body work that depends only on constants leaves the loop."""
import numpy as np

import plait
import plait.numpy as pnp
from plait import lax


def _body_prims(graph, prim="while", param="body_graph"):
    (e,) = [e for e in graph.eqns if e.prim.name == prim]
    return [b.prim.name for b in e.params[param].eqns]


def test_invariant_matvec_leaves_the_while_body():
    A = np.random.default_rng(0).standard_normal((6, 6))

    def f(x, v):
        def body(c):
            i, acc = c
            w = pnp.tanh(A @ x)              # invariant: depends on A and x only
            return i + 1, acc + w * v
        return lax.while_loop(lambda c: c[0] < 5, body, (0, pnp.zeros(6)))[1]

    x, v = np.linspace(0, 1, 6), np.ones(6)
    g = plait.jit(f).trace_graph(x, v).graph
    assert "dot_general" not in _body_prims(g) and "tanh" not in _body_prims(g)
    assert [e.prim.name for e in g.eqns].count("dot_general") == 1
    np.testing.assert_allclose(np.asarray(plait.jit(f)(x, v)), 5 * np.tanh(A @ x) * v)


def test_scan_constants_are_hoisted_and_values_unchanged():
    W = np.random.default_rng(1).standard_normal((4, 4))

    def f(h0, xs):
        def step(h, x):
            m = W @ W.T                       # invariant
            h = pnp.tanh(m @ h + x)
            return h, h.sum()
        return lax.scan(step, h0, xs)
    h0, xs = np.zeros(4), np.random.default_rng(2).standard_normal((7, 4))
    g = plait.jit(f).trace_graph(h0, xs).graph
    assert _body_prims(g, "scan", "graph").count("dot_general") == 1
    for a, b in zip(plait.jit(f)(h0, xs), plait.jit(f, backend="interp")(h0, xs)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    ref_h = h0
    for x in xs:
        ref_h = np.tanh(W @ W.T @ ref_h + x)
    np.testing.assert_allclose(np.asarray(plait.jit(f)(h0, xs)[0]), ref_h, rtol=1e-12)


def test_broadcast_constants_stay_in_the_loop():
    """A scalar broadcast to a carry's shape is not hoisted (it would become a full array
    read every iteration instead of a register value fused into its consumers); work on
    loop constants still is."""
    W = np.random.default_rng(3).standard_normal((5, 4))

    def f(p, xs):
        def step(p, x):
            m = W.T @ W                       # invariant, hoisted
            return 0.9 * p + 0.1 * (m @ x), p.sum()
        return lax.scan(step, p, xs)
    p, xs = np.ones(4), np.random.default_rng(4).standard_normal((3, 4))
    g = plait.jit(f).trace_graph(p, xs).graph
    (scan,) = [e for e in g.eqns if e.prim.name == "scan"]
    hoisted = [a for a in scan.inputs[:scan.params["num_consts"]]]
    made = {v: e.prim.name for e in g.eqns for v in e.outputs}
    assert "broadcast_in_dim" not in [made.get(a) for a in hoisted]
    assert _body_prims(g, "scan", "graph").count("dot_general") == 1
    for a, b in zip(plait.jit(f)(p, xs), plait.jit(f, backend="interp")(p, xs)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_invariant_work_reading_a_broadcast_leaves_the_loop():
    """Work on loop constants that also reads a broadcast scalar (here a comparison with
    zeros and two sigmoids, as in W3 logistic's Hessian-vector product) is hoisted with
    a copy of the broadcast; the broadcast stays in the loop for the loop's own work."""
    z = np.random.default_rng(5).standard_normal(7)

    def f(v):
        def body(c):
            i, acc = c
            zero = pnp.zeros_like(acc)
            s = pnp.where(z >= zero, 1 / (1 + pnp.exp(-z)), pnp.exp(z) / (1 + pnp.exp(z)))
            return i + 1, pnp.where(acc > zero, acc, zero) + s * (1 - s) * v
        return lax.while_loop(lambda c: c[0] < 4, body, (0, pnp.zeros(7)))[1]

    v = np.linspace(-1, 1, 7)
    g = plait.jit(f).trace_graph(v).graph
    body = _body_prims(g)
    assert not {"le", "ge", "div", "exp"} & set(body) and "broadcast_in_dim" in body
    s = 1 / (1 + np.exp(-z))
    acc = np.zeros(7)
    for _ in range(4):
        acc = np.maximum(acc, 0) + s * (1 - s) * v
    np.testing.assert_allclose(np.asarray(plait.jit(f)(v)), acc, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(plait.jit(f, backend="interp")(v)), acc, rtol=1e-12)
