"""Reverse mode through ``while_loop`` (the ``while_lin`` primitive) and staged pmaps
(``pmap_call``) on the xla backend, against the interp backend, NumPy, closed forms and
finite differences.

``while_lin`` is staged where a linearized ``while_loop`` is kept un-transposed
(``linearize`` under jit, a linearized function jitted, vmapped or differentiated
forward); ``grad`` transposes it into ``while_loop``s. ``pmap_call`` lowers as its
replica program under a named vmap: one device computes every replica."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait import grad, jit, jvp, lax, linearize, vjp, vmap  # noqa: E402
from plait.distributed import pmap  # noqa: E402

BACKENDS = ("xla", "interp")


def _both(f, *args, rtol=1e-10, atol=1e-12):
    """``f`` jitted on xla and on interp: the values agree; the xla values."""
    got = jit(f, backend="xla")(*args)
    want = jit(f, backend="interp")(*args)
    gl, wl = plait.tree_util.tree_leaves(got), plait.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    return got


def _fd(f, x, h=1e-6):
    """Central differences of the scalar function ``f`` at the float64 array ``x``."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


# ---------------------------------------------------------------- while_lin

def newton_sqrt(a):
    """sqrt(a) by Newton's iteration: the trip count depends on ``a``."""
    def cond(s):
        x, k = s
        return (pnp.abs(x * x - a) > 1e-13 * a) & (k < 100)

    def body(s):
        x, k = s
        return 0.5 * (x + a / x), k + 1
    return lax.while_loop(cond, body, (a, 0))[0]


def grow(x, w):
    """A tuple of carries (a scalar, a vector, a counter) and a closed-over vector
    ``w``; the loop runs until the scalar passes 10 (0 trips when it starts there)."""
    def cond(s):
        return s[0] < 10.0

    def body(s):
        x, y, k = s
        return x * 1.3 + 0.1, pnp.sin(y) * x + w, k + 1
    x, y, k = lax.while_loop(cond, body, (x, w, 0))
    return x * pnp.sum(y ** 2) + k


W = np.array([0.3, -0.7, 1.1])


def _grow_grads_fd(x, w):
    fx = _fd(lambda v: jit(grow, backend="interp")(v, w), np.float64(x))
    fw = _fd(lambda v: jit(grow, backend="interp")(x, v), w)
    return fx, fw


def _trips(x):
    k = 0
    while x < 10.0:
        x, k = x * 1.3 + 0.1, k + 1
    return k


@pytest.mark.parametrize("a", [2.0, 0.37, 150.0])
def test_grad_and_second_derivative_of_newton_iteration(a):
    g = _both(grad(newton_sqrt), a)
    np.testing.assert_allclose(float(g), 0.5 / np.sqrt(a), rtol=1e-10)
    np.testing.assert_allclose(float(g), _fd(jit(newton_sqrt, backend="interp"), a),
                               rtol=1e-6)
    # forward over reverse: the jvp of the linearized loop (while_lin's jvp rule)
    h = _both(lambda a: jvp(grad(newton_sqrt), (a,), (1.0,))[1], a)
    np.testing.assert_allclose(float(h), -0.25 * a ** -1.5, rtol=1e-8)


@pytest.mark.parametrize("x", [0.7, 3.0, 12.0])
def test_grad_through_a_loop_whose_trip_count_depends_on_the_input(x):
    assert (_trips(x) == 0) == (x >= 10.0)     # 12.0 runs no trip
    gx, gw = _both(grad(grow, argnums=(0, 1)), x, W)
    fx, fw = _grow_grads_fd(x, W)
    np.testing.assert_allclose(float(gx), fx, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gw), fw, rtol=1e-6, atol=1e-8)
    if x >= 10.0:                               # 0 trips: x * sum(w^2)
        np.testing.assert_allclose(float(gx), np.sum(W ** 2), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gw), 2 * x * W, rtol=1e-12)


@pytest.mark.parametrize("x", [0.7, 12.0])
def test_linearize_under_jit_stages_while_lin_and_lowers_it(x):
    t = (0.5, np.array([1.0, -2.0, 0.25]))

    def lin(x, w, tx, tw):
        return linearize(grow, x, w)[1](tx, tw)
    f = jit(lin, backend="xla")
    lowered = f.lower(x, W, *t)
    assert "while_lin" in lowered.as_text()
    text = lowered.as_text(stage="stablehlo")
    assert "stablehlo.while" in text
    got = _both(lin, x, W, *t)
    fx, fw = _grow_grads_fd(x, W)
    np.testing.assert_allclose(float(got), fx * t[0] + fw @ t[1], rtol=1e-6)


def test_jvp_and_vjp_of_the_loop():
    x, tx, tw = 0.7, 0.5, np.array([1.0, -2.0, 0.25])
    fx, fw = _grow_grads_fd(x, W)
    p, tan = _both(lambda x, w: jvp(grow, (x, w), (tx, tw)), x, W)
    np.testing.assert_allclose(float(p), float(jit(grow, backend="interp")(x, W)),
                               rtol=1e-12)
    np.testing.assert_allclose(float(tan), fx * tx + fw @ tw, rtol=1e-6)
    cx, cw = _both(lambda x, w: vjp(grow, x, w)[1](2.0), x, W)
    np.testing.assert_allclose(float(cx), 2 * fx, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(cw), 2 * fw, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_linearized_loop_jitted_is_while_lin(backend):
    """linearize outside jit: the linear function itself is a while_lin program."""
    tws = np.array([[1.0, -2.0, 0.25], [0.0, 1.0, 0.0]])
    _, f_lin = linearize(grow, 0.7, W)
    f = jit(f_lin, backend=backend)
    assert "while_lin" in f.lower(0.5, tws[0]).as_text()
    fx, fw = _grow_grads_fd(0.7, W)
    for tw in tws:
        np.testing.assert_allclose(float(f(0.5, tw)), fx * 0.5 + fw @ tw, rtol=1e-6)
    # the batched linear loop (while_lin's batch rule)
    got = jit(vmap(f_lin, in_axes=(None, 0)), backend=backend)(0.5, tws)
    np.testing.assert_allclose(np.asarray(got), fx * 0.5 + tws @ fw, rtol=1e-6)


def test_vmap_of_the_gradient():
    xs = np.array([0.7, 3.0, 12.0, 9.5])
    gx, gw = _both(vmap(grad(grow, argnums=(0, 1)), in_axes=(0, None)), xs, W)
    for i, x in enumerate(xs):
        fx, fw = _grow_grads_fd(x, W)
        np.testing.assert_allclose(float(np.asarray(gx)[i]), fx, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(gw)[i], fw, rtol=1e-6, atol=1e-8)
    ga = _both(vmap(grad(newton_sqrt)), np.array([2.0, 0.37, 150.0]))
    np.testing.assert_allclose(np.asarray(ga), 0.5 / np.sqrt([2.0, 0.37, 150.0]),
                               rtol=1e-10)


# ---------------------------------------------------------------- pmap_call

N = 3     # replicas (one CPU device each for the interp reference)


@pytest.fixture
def devices(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", N)


def _pmapped(f, **kw):
    return lambda *xs: pmap(f, axis_name="i", **kw)(*xs)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _rows(*rows):
    return np.stack([np.asarray(r) for r in rows])


X = _x(N, N, 6)          # replica k holds X[k], of shape (N, 6)
B = 6 // N               # the block a tiled collective cuts axis 1 into


def _blocks(X, k):
    """Block ``k`` of axis 1 of every replica's value."""
    return X[:, :, k * B:(k + 1) * B]


COLLECTIVES = {   # name: (replica function, the NumPy value of its pmap over X)
    "psum": (lambda x: lax.psum(x, "i"), lambda X: np.broadcast_to(X.sum(0), X.shape)),
    "pmax": (lambda x: lax.pmax(x, "i"), lambda X: np.broadcast_to(X.max(0), X.shape)),
    "pmin": (lambda x: lax.pmin(x, "i"), lambda X: np.broadcast_to(X.min(0), X.shape)),
    "pmean": (lambda x: lax.pmean(x, "i"), lambda X: np.broadcast_to(X.mean(0), X.shape)),
    "all_gather": (lambda x: lax.all_gather(x, "i"),
                   lambda X: np.broadcast_to(X, (N,) + X.shape)),
    "all_gather_axis1_tiled": (lambda x: lax.all_gather(x, "i", axis=1, tiled=True),
                               lambda X: np.broadcast_to(np.concatenate(list(X), 1),
                                                         (N, N, 6 * N))),
    "psum_scatter": (lambda x: lax.psum_scatter(x, "i"), lambda X: X.sum(0)),
    "psum_scatter_tiled": (lambda x: lax.psum_scatter(x, "i", scatter_dimension=1,
                                                      tiled=True),
                           lambda X: _rows(*[_blocks(X, k).sum(0) for k in range(N)])),
    "all_to_all": (lambda x: lax.all_to_all(x, "i", 0, 0), lambda X: X.swapaxes(0, 1)),
    "all_to_all_tiled": (lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True),
                         lambda X: _rows(*[np.concatenate(list(_blocks(X, k)), 0)
                                           for k in range(N)])),
    "ppermute": (lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2)]),
                 lambda X: _rows(np.zeros_like(X[0]), X[0], X[1])),
    "ppermute_cycle": (lambda x: lax.ppermute(x, "i", [(0, 2), (2, 1), (1, 0)]),
                       lambda X: _rows(X[1], X[2], X[0])),
    "axis_index": (lambda x: x * 0.0 + lax.axis_index("i"),
                   lambda X: np.broadcast_to(np.arange(N, dtype=X.dtype)[:, None, None],
                                             X.shape)),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_each_collective_in_a_jitted_pmap(devices, name):
    f, numpy_value = COLLECTIVES[name]
    F = _pmapped(f)
    lowered = jit(F, backend="xla").lower(X)
    assert "pmap_call" in lowered.as_text()
    assert "func.call" in lowered.as_text(stage="stablehlo")
    got = _both(F, X, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(got), numpy_value(X), rtol=1e-12, atol=1e-14)


def test_mapped_and_broadcast_operands(devices):
    w, xs = _x(6, 2, seed=1), _x(N, 5, 6, seed=2)

    def replica(w, x, b):
        r = pnp.tanh(x @ w) + b
        return r * lax.psum((r * r).sum(), "i"), lax.axis_index("i") + 0 * b
    F = _pmapped(replica, in_axes=(None, 0, None))
    out, idx = _both(F, w, xs, 0.25)
    r = np.tanh(xs @ w) + 0.25
    np.testing.assert_allclose(np.asarray(out), r * (r * r).sum(), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(idx), np.arange(N, dtype=np.float64))
    # out_axes=None: the replicas' (equal) value once
    F1 = _pmapped(lambda w, x: lax.psum(x @ w, "i"), in_axes=(None, 0), out_axes=None)
    np.testing.assert_allclose(np.asarray(_both(F1, w, xs)), (xs @ w).sum(0), rtol=1e-12)


def _loss(w, x, y):
    """A replica's squared error, summed over the replicas."""
    return lax.psum(((x @ w - y) ** 2).mean(), "i")


def _data_parallel(seed=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=4), rng.normal(size=(N, 8, 4)), rng.normal(size=(N, 8))


def _numpy_grad(w, xs, ys):
    return sum(2 * x.T @ (x @ w - y) / len(y) for x, y in zip(xs, ys))


def test_data_parallel_training_step(devices):
    """Each replica differentiates its loss and the gradients are summed (psum)."""
    w, xs, ys = _data_parallel()

    def step(w, x, y):
        g = grad(lambda w: ((x @ w - y) ** 2).mean())(w)
        return w - 0.1 * lax.psum(g, "i")
    new = _both(_pmapped(step, in_axes=(None, 0, 0)), w, xs, ys)
    want = w - 0.1 * _numpy_grad(w, xs, ys)
    np.testing.assert_allclose(np.asarray(new), np.broadcast_to(want, (N, 4)), rtol=1e-12)


def test_grad_of_a_pmapped_loss(devices):
    """grad outside the pmap: pmap_call's transpose (psum's dual inside the replicas,
    the broadcast weights' cotangent summed over the replicas)."""
    w, xs, ys = _data_parallel(4)

    def total(w, xs, ys):
        return pmap(_loss, axis_name="i", in_axes=(None, 0, 0))(w, xs, ys)[0]
    lowered = jit(grad(total), backend="xla").lower(w, xs, ys)
    assert "pmap_call" in lowered.as_text()
    g = _both(grad(total), w, xs, ys)
    np.testing.assert_allclose(np.asarray(g), _numpy_grad(w, xs, ys), rtol=1e-12)
    f = jit(total, backend="interp")
    np.testing.assert_allclose(np.asarray(g), _fd(lambda v: f(v, xs, ys), w), rtol=1e-6)
    gx = _both(grad(total, argnums=1), w, xs, ys)       # a mapped operand's cotangent
    np.testing.assert_allclose(np.asarray(gx), _fd(lambda v: f(w, v, ys), xs), rtol=1e-6,
                               atol=1e-9)


def test_jvp_and_vmap_of_a_pmap(devices):
    w, xs, ys = _data_parallel(5)
    tw = np.array([1.0, 0.0, -0.5, 2.0])
    F = pmap(_loss, axis_name="i", in_axes=(None, 0, 0))
    _, t = _both(lambda w: jvp(lambda w: F(w, xs, ys), (w,), (tw,)), w)
    np.testing.assert_allclose(np.asarray(t), np.full(N, _numpy_grad(w, xs, ys) @ tw),
                               rtol=1e-12)
    ws = np.stack([w, -w, 0.5 * w])
    got = _both(vmap(lambda w: F(w, xs, ys)), ws)
    want = [sum(((x @ v - y) ** 2).mean() for x, y in zip(xs, ys)) for v in ws]
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(np.array(want)[:, None],
                                                                (3, N)), rtol=1e-12)


def test_nested_pmap(monkeypatch):
    """An inner pmap inside each outer replica; collectives over both axes."""
    monkeypatch.setattr(plait.config, "cpu_devices", 2)

    def f(x):
        return (x * lax.psum(x, "i") - lax.pmax(x, "j") + lax.axis_index("j")
                + 10.0 * lax.axis_index("i"))
    Xn = _x(2, 3, 4, seed=6)
    F = lambda x: pmap(pmap(f, axis_name="j"), axis_name="i")(x)  # noqa: E731
    got = _both(F, Xn, rtol=1e-12)
    want = (Xn * Xn.sum(0) - Xn.max(1, keepdims=True) + np.arange(3)[None, :, None]
            + 10.0 * np.arange(2)[:, None, None])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    ref = vmap(vmap(f, axis_name="j"), axis_name="i")(Xn)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-12)
    g = _both(grad(lambda x: (F(x) ** 2).sum()), Xn)
    np.testing.assert_allclose(np.asarray(g), _fd(jit(lambda x: (F(x) ** 2).sum(),
                                                      backend="interp"), Xn),
                               rtol=1e-6, atol=1e-8)


def test_a_multi_process_pmap_is_refused_with_a_clear_error(devices):
    """An axis spanning more replicas than this process runs (an MPI pmap) cannot be a
    vmap on one device."""
    from plait.core.staging import trace_to_graph
    from plait.core.trace import get_aval
    from plait.distributed import local_devices, pmap_call
    closed, _ = trace_to_graph(lambda x: [x * 2.0], [get_aval(np.zeros(6))])

    def f(x):
        return pmap_call.call(closed, [x], [True], n=N, axis_name="i", axis_size=2 * N,
                              devices=tuple(local_devices()[:N]), outer_axes=(),
                              name="pmap of f")[0]
    with pytest.raises(plait.errors.PlaitValueError,
                       match="pmap of f.*processes.*backend='native' or 'interp'"):
        jit(f, backend="xla")(X[:, 0])


def test_export_of_a_pmap_and_of_a_linearized_loop(devices):
    """plait.export writes the same lowerings into a standalone StableHLO module."""
    F = _pmapped(COLLECTIVES["ppermute_cycle"][0])
    exp = plait.export(F)(X)
    assert "stablehlo" in exp.mlir_module
    np.testing.assert_allclose(np.asarray(exp.call(X)[0]),
                               COLLECTIVES["ppermute_cycle"][1](X), rtol=1e-12)

    def lin(x, w, tx, tw):
        return linearize(grow, x, w)[1](tx, tw)
    x, tx, tw = np.float64(0.7), np.float64(0.5), np.array([1.0, -2.0, 0.25])
    exp = plait.export(lin)(x, W, tx, tw)
    assert "stablehlo.while" in exp.mlir_module
    fx, fw = _grow_grads_fd(x, W)
    np.testing.assert_allclose(float(exp.call(x, W, tx, tw)[0]), fx * tx + fw @ tw,
                               rtol=1e-6)


def test_a_while_loop_differentiated_inside_and_outside_a_pmap(devices):
    """Both primitives together: each replica's Newton loop, linearized by the replica
    (while_lin inside pmap_call) and by grad of the whole pmap (pmap_call's rules)."""
    a = np.array([2.0, 0.37, 150.0])

    def replica(a):
        return lax.psum(newton_sqrt(a), "i")

    def lin_in_replica(a, t):
        return lax.psum(linearize(newton_sqrt, a)[1](t), "i")
    text = jit(_pmapped(lin_in_replica), backend="xla").lower(a, np.ones(N)).as_text()
    assert "pmap_call" in text and "while_lin" in text
    got = _both(_pmapped(lin_in_replica), a, np.ones(N))
    np.testing.assert_allclose(np.asarray(got), np.full(N, (0.5 / np.sqrt(a)).sum()),
                               rtol=1e-10)
    g = _both(grad(lambda a: pmap(replica, axis_name="i")(a)[0]), a)
    np.testing.assert_allclose(np.asarray(g), 0.5 / np.sqrt(a), rtol=1e-10)
