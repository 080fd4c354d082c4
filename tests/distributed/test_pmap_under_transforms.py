"""``jit(pmap(f))`` and ``vmap(pmap(f))`` keep their replicas (a ``pmap_call`` host step
of the compiled program; the batch rule batches each replica), with the values,
axis sizes, ``axis_index`` and derivatives of the named-vmap reference
(``vmap(f, axis_name=)``), of finite differences, and of ``jax.pmap`` itself."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import plait
from plait import grad, jit, lax, vmap
from plait.distributed import last_run_times, pmap
from plait.distributed.pmap import _LastRun
from plait.test_util import check_grads


@pytest.fixture(autouse=True)
def two_devices(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    _LastRun.times = ()


def replica(w, x):
    """A replica program using every kind of collective information: a sum over the
    replicas, a permutation between them, the axis size and the replica index."""
    r = plait.numpy.tanh(x @ w)
    size = lax.psum(1.0, "i")
    return (r * lax.psum((r * r).sum(), "i") / size
            + lax.ppermute(r, "i", [(0, 1), (1, 0)]) * (1.0 + lax.axis_index("i")))


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 2)), rng.normal(size=(2, 4, 3))


P = pmap(replica, "i", in_axes=(None, 0))
REF = vmap(replica, axis_name="i", in_axes=(None, 0))


def _ran_replicas(n=2):
    """The last call ran ``n`` replicas, each on its own worker thread and device."""
    times = last_run_times()
    assert len(times) == n
    assert len({t.native_id for t in times}) == n
    assert len({t.device.id for t in times}) == n


@pytest.mark.parametrize("backend", ["native", "interp"])
def test_jit_of_pmap_runs_the_replicas(backend):
    W, X = _data()
    f = jit(P, backend=backend)
    np.testing.assert_allclose(np.asarray(f(W, X)), np.asarray(REF(W, X)), rtol=1e-12)
    _ran_replicas()
    if backend == "native":      # the replicas are one host step of the program
        text = f.lower(W, X).as_text("kernels")
        assert "host: pmap_call" in text, text


def test_jit_of_pmap_with_surrounding_ops_and_static_out_axes():
    W, X = _data(1)
    f = jit(lambda w, x: pmap(replica, "i", in_axes=(None, 0), out_axes=None)(
        w * 2.0, plait.numpy.sin(x)).sum(0) + 1.0)
    want = np.asarray(REF(W * 2.0, np.sin(X)))[0].sum(0) + 1.0
    np.testing.assert_allclose(np.asarray(f(W, X)), want, rtol=1e-12)
    _ran_replicas()


def test_xla_runs_a_staged_pmap_as_a_named_vmap():
    """One XLA device computes every replica (tests/xla/test_xla_loops_and_pmap.py)."""
    pytest.importorskip("jaxlib")
    W, X = _data()
    np.testing.assert_allclose(np.asarray(jit(P, backend="xla")(W, X)),
                               np.asarray(REF(W, X)), rtol=1e-12)


def test_grads_through_jit_of_pmap():
    W, X = _data(2)

    def loss(F):
        return lambda w, x: (F(w, x) ** 2).sum()

    want = np.asarray(grad(loss(REF))(W, X))
    for g in (grad(jit(loss(P))), jit(grad(loss(P))),
              grad(lambda w, x: (jit(P)(w, x) ** 2).sum())):
        _LastRun.times = ()
        np.testing.assert_allclose(np.asarray(g(W, X)), want, rtol=1e-10)
        _ran_replicas()
    check_grads(jit(P), (W, X), order=1)


def test_vmap_of_pmap_batches_inside_each_replica():
    """jax's semantics: the vmapped axis is batched inside every replica; results are
    stacked (batch, replica, ...) and each batch element sees the whole replica axis."""
    W, X = _data(3)
    WB = np.stack([W, -W, 0.5 * W])
    got = vmap(P, in_axes=(0, None))(WB, X)
    _ran_replicas()
    want = vmap(REF, in_axes=(0, None))(WB, X)
    assert np.shape(got) == (3, 2, 4, 2)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    for b in range(3):             # each batch element is an independent pmap
        np.testing.assert_allclose(np.asarray(got)[b], np.asarray(P(WB[b], X)), rtol=1e-12)
    # a batch along another axis of the mapped operand, and under jit and grad
    XB = np.stack([X, 2 * X], axis=2)                    # (2 replicas, 4, batch 2, 3)
    got2 = jit(vmap(P, in_axes=(None, 2)))(W, XB)
    want2 = vmap(REF, in_axes=(None, 2))(W, XB)
    np.testing.assert_allclose(np.asarray(got2), np.asarray(want2), rtol=1e-12)
    gl = lambda F: grad(lambda w: (vmap(F, in_axes=(0, None))(w, X) ** 2).sum())  # noqa: E731
    np.testing.assert_allclose(np.asarray(gl(P)(WB)), np.asarray(gl(REF)(WB)), rtol=1e-10)


def test_axis_size_and_index_inside_vmap_of_pmap():
    def f(x):
        return x * 0.0 + lax.psum(1.0, "i") * 10.0 + lax.axis_index("i")
    got = np.asarray(vmap(pmap(f, "i"))(np.zeros((5, 2, 3))))
    _ran_replicas()
    np.testing.assert_array_equal(got, np.broadcast_to(
        np.array([20.0, 21.0])[None, :, None], (5, 2, 3)))


def test_a_named_vmap_around_pmap_still_sees_its_axis():
    """The replica program names the enclosing vmap's axis: it runs as a named vmap."""
    def f(x):
        return x * lax.psum(x, "b") + lax.psum(x, "i")
    X = np.random.default_rng(5).normal(size=(3, 2, 4))
    got = vmap(pmap(f, "i"), axis_name="b")(X)
    want = vmap(vmap(f, axis_name="i"), axis_name="b")(X)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_nested_pmap_under_jit(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", 2)

    def f(x):
        return x * lax.psum(x, "i") - lax.psum(x, "j") + lax.axis_index("j")
    X = np.random.default_rng(6).normal(size=(2, 2, 3))
    got = jit(pmap(pmap(f, "j"), "i"))(X)
    want = vmap(vmap(f, axis_name="j"), axis_name="i")(X)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_against_jax_pmap():
    """``jax.jit(jax.pmap)``, ``jax.vmap(jax.pmap)`` and their grad on 2 host devices, as
    recorded by ``record_jax_pmap.py`` (jax is not a dependency of the suite)."""
    W, X = _data(7)
    WB = np.stack([W, 3 * W])
    with open(os.path.join(os.path.dirname(__file__), "jax_pmap_recorded.json")) as f:
        rec = json.load(f)
    np.testing.assert_array_equal(np.asarray(rec["inputs"][0]), W)
    np.testing.assert_array_equal(np.asarray(rec["inputs"][1]), X)
    jit_out, vmap_out, g = (np.asarray(a) for a in rec["outputs"])
    np.testing.assert_allclose(np.asarray(jit(P)(W, X)), jit_out, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(vmap(P, in_axes=(0, None))(WB, X)), vmap_out,
                               rtol=1e-10)
    np.testing.assert_allclose(
        np.asarray(grad(lambda w, x: (jit(P)(w, x) ** 2).sum())(W, X)), g, rtol=1e-10)
