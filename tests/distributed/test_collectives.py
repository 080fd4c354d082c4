"""Collectives against their NumPy definitions: under ``vmap(axis_name=)`` (the
reference semantics), under ``pmap`` on 2 and 4 CPU devices, inside ``jit``,
``scan`` and ``cond``; derivatives by check_grads and by the identities
``vmap(jvp f) == jvp(vmap f)`` and ``vmap(vjp f) == vjp(vmap f)`` (which exercise
each collective's own jvp and transpose rules)."""
from __future__ import annotations

import numpy as np
import pytest

import plait
from plait import lax, vmap, jit
from plait.distributed import pmap
from plait.errors import DistributedError, UnboundAxisNameError
from plait.test_util import check_grads
from plait.transforms.api_ad import jvp, vjp

N_DEFAULT = 4


def _sum(X):
    return np.broadcast_to(X.sum(0), X.shape)


# name -> (per-replica shape given n, function of one replica's x, oracle of stacked X)
CASES = {
    "psum": (lambda n: (3, 2), lambda x: lax.psum(x * x, "i") * x,
             lambda X: _sum(X * X) * X),
    "pmean": (lambda n: (3,), lambda x: lax.pmean(plait.numpy.sin(x), "i") + x,
              lambda X: np.broadcast_to(np.sin(X).mean(0), X.shape) + X),
    "pmax": (lambda n: (2, 2), lambda x: lax.pmax(x, "i") * x,
             lambda X: np.broadcast_to(X.max(0), X.shape) * X),
    "pmin": (lambda n: (3,), lambda x: lax.pmin(x * x, "i"),
             lambda X: np.broadcast_to((X * X).min(0), X.shape)),
    "all_gather": (lambda n: (3,), lambda x: lax.all_gather(x * x, "i", axis=1),
                   lambda X: np.broadcast_to((X * X).T, (X.shape[0], 3, X.shape[0]))),
    "all_gather_tiled": (lambda n: (2, 3), lambda x: lax.all_gather(x, "i", tiled=True) * 2,
                         lambda X: np.broadcast_to(X.reshape(-1, 3) * 2,
                                                   (X.shape[0], X.shape[0] * 2, 3))),
    "psum_scatter": (lambda n: (n, 2), lambda x: lax.psum_scatter(x * x, "i"),
                     lambda X: (X * X).sum(0)),
    "psum_scatter_tiled": (lambda n: (3, 2 * n), lambda x: lax.psum_scatter(
                               x, "i", scatter_dimension=1, tiled=True),
                           lambda X: np.stack(np.split(X.sum(0), X.shape[0], axis=1))),
    "all_to_all": (lambda n: (n, 3), lambda x: lax.all_to_all(x * x, "i", 0, 1),
                   lambda X: np.transpose(X * X, (1, 2, 0))),
    "all_to_all_tiled": (lambda n: (2 * n, 3), lambda x: lax.all_to_all(x, "i", 0, 1,
                                                                        tiled=True),
                         lambda X: np.stack([np.concatenate(
                             [X[i, 2 * k:2 * k + 2] for i in range(X.shape[0])], axis=1)
                             for k in range(X.shape[0])])),
    "ppermute": (lambda n: (3,), lambda x: lax.ppermute(
                     x * x, "i", [(k, (k + 1) % N_DEFAULT) for k in range(N_DEFAULT)]),
                 lambda X: np.roll(X * X, 1, axis=0)),
    "ppermute_partial": (lambda n: (2,), lambda x: lax.ppermute(x, "i", [(0, 1)]) + x,
                         lambda X: X + np.concatenate([np.zeros_like(X[:1]), X[:1],
                                                       np.zeros_like(X[2:])])),
    "axis_index": (lambda n: (3,), lambda x: x * lax.axis_index("i").astype(x.dtype),
                   lambda X: X * np.arange(X.shape[0])[:, None]),
}
DIFFERENTIABLE = [k for k in CASES if k != "axis_index"]


def _args(name, n, seed=0):
    shape = CASES[name][0](n)
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, (n,) + shape)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_axis_name_matches_definition(name):
    _, f, oracle = CASES[name]
    X = _args(name, N_DEFAULT)
    np.testing.assert_allclose(np.asarray(vmap(f, axis_name="i")(X)), oracle(X), rtol=1e-12)
    # staged inside jit under the named vmap, and vmap inside jit
    np.testing.assert_allclose(np.asarray(vmap(jit(f), axis_name="i")(X)), oracle(X),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jit(vmap(f, axis_name="i"))(X)), oracle(X),
                               rtol=1e-12)


def _all_cases(x_list):
    """Every collective in one replica program (one compile per device count)."""
    return tuple(CASES[k][1](x) for k, x in zip(_PMAP_CASES, x_list))


_PMAP_CASES = [k for k in CASES if not k.startswith("ppermute")] + ["ppermute_partial"]


@pytest.mark.parametrize("n", [2, 4])
def test_pmap_matches_definition(n, monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", n)
    xs = [_args(k, n, seed=i) for i, k in enumerate(_PMAP_CASES)]
    outs = pmap(lambda *a: _all_cases(a), axis_name="i")(*xs)
    for k, X, got in zip(_PMAP_CASES, xs, outs):
        np.testing.assert_allclose(np.asarray(got), CASES[k][2](X), rtol=1e-12, err_msg=k)
    # a cyclic ppermute on this device count
    X = xs[0]
    got = pmap(lambda x: lax.ppermute(x, "i", [(k, (k + 1) % n) for k in range(n)]), "i")(X)
    np.testing.assert_array_equal(np.asarray(got), np.roll(X, 1, axis=0))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_grads_of_collectives(name):
    _, f, _ = CASES[name]
    X = _args(name, N_DEFAULT)
    F = vmap(f, axis_name="i")
    check_grads(F, (X,), order=2, modes=("fwd", "rev"))
    # the collectives' own jvp and transpose rules run inside the named vmap
    T = np.random.default_rng(1).normal(size=X.shape)
    _, want_t = jvp(F, (X,), (T,))
    got_t = vmap(lambda x, t: jvp(f, (x,), (t,))[1], axis_name="i")(X, T)
    np.testing.assert_allclose(np.asarray(got_t), np.asarray(want_t), rtol=1e-10, atol=1e-12)
    Y, pull = vjp(F, X)
    CT = np.random.default_rng(2).normal(size=np.shape(Y))
    (want_ct,) = pull(CT)
    got_ct = vmap(lambda x, ct: vjp(f, x)[1](ct)[0], axis_name="i")(X, CT)
    np.testing.assert_allclose(np.asarray(got_ct), np.asarray(want_ct), rtol=1e-10,
                               atol=1e-12)
    # second order through the rules: the vjp-inside-vmap function itself
    check_grads(lambda X, CT: vmap(lambda x, ct: vjp(f, x)[1](ct)[0], axis_name="i")(X, CT),
                (X, CT), order=1, modes=("fwd", "rev"))


def test_vjp_inside_pmap_equals_vjp_of_vmap(monkeypatch):
    """Transposed collectives staged into a replica program (psum, all_gather ->
    psum_scatter, all_to_all, ppermute -> inverse) run across devices."""
    n = 2
    monkeypatch.setattr(plait.config, "cpu_devices", n)
    names = ["psum", "all_gather", "psum_scatter", "all_to_all", "pmax"]
    xs = [_args(k, n, seed=i) for i, k in enumerate(names)]
    shift = lambda x: lax.ppermute(x * x, "i", [(0, 1), (1, 0)])   # noqa: E731
    fs = [CASES[k][1] for k in names] + [shift]
    xs.append(_args("pmin", n, seed=9))
    for f, X in zip(fs, xs):
        F = vmap(f, axis_name="i")
        Y, pull = vjp(F, X)
        CT = np.random.default_rng(3).normal(size=np.shape(Y))
        got = pmap(lambda x, ct: vjp(f, x)[1](ct)[0], "i")(X, CT)
        np.testing.assert_allclose(np.asarray(got), np.asarray(pull(CT)[0]), rtol=1e-10)


def test_collectives_inside_scan_and_cond(monkeypatch):
    def f(x):
        def body(c, _):
            c = lax.pmean(c * 0.5, "i") + c
            return c, lax.psum(c, "i")
        c, ys = lax.scan(body, x, None, length=3)
        b = lax.cond(x.sum() > 0, lambda v: lax.pmax(v, "i"), lambda v: v * 0.0, c)
        return c, ys, b

    def oracle(X):
        c, ys = X, []
        for _ in range(3):
            c = (c * 0.5).mean(0) + c
            ys.append(c.sum(0))
        ys = np.broadcast_to(np.stack(ys), (X.shape[0], 3) + X.shape[1:])
        return c, ys, np.broadcast_to(c.max(0), c.shape)

    X = np.random.default_rng(0).uniform(0.5, 1.5, (2, 3))
    want = oracle(X)
    for g in (vmap(f, axis_name="i"), jit(vmap(f, axis_name="i"))):
        for a, b in zip(g(X), want):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12)
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    for a, b in zip(pmap(f, "i")(X), want):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12)
    check_grads(lambda X: vmap(f, axis_name="i")(X)[0], (X,), order=1)


def test_nested_axes_and_nested_pmap(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    X = np.random.default_rng(0).uniform(size=(2, 3, 4))

    def f(x):
        return lax.psum(x, "j") * 10 + lax.psum(x, "i") + lax.psum(x, ("i", "j")) \
            + lax.axis_index("i") * 100 + lax.axis_index("j") * 1000

    i = np.arange(2)[:, None, None]
    j = np.arange(3)[None, :, None]
    want = (X.sum(1, keepdims=True) * 10 + X.sum(0, keepdims=True) + X.sum((0, 1))
            + i * 100 + j * 1000)
    got_v = vmap(vmap(f, axis_name="j"), axis_name="i")(X)
    np.testing.assert_allclose(np.asarray(got_v), want, rtol=1e-12)
    got_p = pmap(pmap(f, axis_name="j"), axis_name="i")(X)
    np.testing.assert_allclose(np.asarray(got_p), want, rtol=1e-12)


def test_nested_pmap_runs_inner_replicas_concurrently(monkeypatch):
    """pmap(pmap(f)) and its grad equal the nested named vmaps, and each outer replica
    runs its inner replicas on their own threads over its device's cores."""
    import importlib
    mod = importlib.import_module("plait.distributed.pmap")
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    runs = []
    real_run = mod._run

    def recording(comp, vals, dims, devs, name, world, enclosing=None, path=()):
        out = real_run(comp, vals, dims, devs, name, world, enclosing, path)
        runs.append((name, path, [d.cores for d in devs],
                     {t.native_id for t in plait.distributed.last_run_times()}))
        return out
    monkeypatch.setattr(mod, "_run", recording)
    X = np.random.default_rng(4).uniform(size=(2, 2, 3))

    def f(x):
        y = plait.numpy.sin(x) * lax.psum(x, "i") + lax.pmean(x * x, "j")
        return y + lax.ppermute(y, "j", [(0, 1)]) * lax.axis_index("i")
    par = lambda X: (pmap(pmap(f, "j"), "i")(X) ** 2).sum()            # noqa: E731
    ref = lambda X: (vmap(vmap(f, axis_name="j"), axis_name="i")(X) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(par(X)), np.asarray(ref(X)), rtol=1e-12)
    inner = [r for r in runs if r[0] == "j"]
    assert {r[1] for r in inner} == {(0,), (1,)}, runs          # inside each outer replica
    for _, (outer_dev,), cores, ids in inner:
        assert cores == [(outer_dev,), (outer_dev,)] and len(ids) == 2, runs
    runs.clear()
    np.testing.assert_allclose(np.asarray(plait.grad(par)(X)), np.asarray(plait.grad(ref)(X)),
                               rtol=1e-10, atol=1e-14)
    assert len([r for r in runs if r[0] == "j"]) >= 4, runs     # forward and backward


def test_grad_of_pmap(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    X = np.random.default_rng(0).uniform(size=(2, 3))
    loss = lambda X: pmap(lambda x: lax.pmean((x * x).sum(), "i"), "i")(X).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(plait.grad(loss)(X)), 2 * X, rtol=1e-12)
    check_grads(loss, (X,), order=2)


def test_grad_of_pmap_runs_each_replica_on_its_device(monkeypatch):
    """grad/jvp of a pmap (broadcast and mapped arguments, out_axes None and 0, second
    order) equal the named-vmap reference, and every pass runs as 2 concurrent
    replicas, one per device thread (not as a vmap on the calling thread)."""
    import importlib
    mod = importlib.import_module("plait.distributed.pmap")
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    threads = []
    real_run = mod._run

    def counting(comp, vals, dims, devs, name, world):
        out = real_run(comp, vals, dims, devs, name, world)
        threads.append(tuple(t.native_id for t in plait.distributed.last_run_times()))
        return out
    monkeypatch.setattr(mod, "_run", counting)
    rng = np.random.default_rng(3)
    W, X, Y = rng.normal(size=(3, 2)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 2))

    def replica(w, x, y):
        r = plait.numpy.tanh(x @ w) - y
        return lax.pmean((r * r).sum(), "i"), lax.ppermute(r, "i", [(0, 1), (1, 0)])

    def losses(mapper):
        f = mapper(replica)

        def loss(w, x, y):
            total, swapped = f(w, x, y)
            return total + (swapped * swapped * x[..., :2]).sum()
        return loss
    par = losses(lambda g: pmap(g, "i", in_axes=(None, 0, 0), out_axes=(None, 0)))
    ref = losses(lambda g: vmap(g, axis_name="i", in_axes=(None, 0, 0), out_axes=(None, 0)))
    got = plait.grad(par, argnums=(0, 1))(W, X, Y)
    assert threads and all(len(set(t)) == 2 for t in threads), threads
    want = plait.grad(ref, argnums=(0, 1))(W, X, Y)
    for g, w in zip(got, want):       # compiled vs vmapped: float64 summation order
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-14)
    n = len(threads)
    hess = plait.grad(lambda w: plait.grad(par)(w, X, Y).sum())(W)
    assert len(threads) > n
    np.testing.assert_allclose(np.asarray(hess),
                               np.asarray(plait.grad(lambda w: plait.grad(ref)(w, X, Y).sum())(W)),
                               rtol=1e-10, atol=1e-14)
    t = np.ones_like(W)
    np.testing.assert_allclose(np.asarray(jvp(lambda w: par(w, X, Y), (W,), (t,))[1]),
                               np.asarray(jvp(lambda w: ref(w, X, Y), (W,), (t,))[1]),
                               rtol=1e-10, atol=1e-14)


def test_replica_programs_are_compiled_for_their_device_cores(monkeypatch):
    """The replica program is compiled on a device's worker thread, so its kernels are
    partitioned for that device's cores (not the whole machine's)."""
    from plait.backends.native import compile as native_compile
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    seen = []
    real = native_compile.host_target

    def recording():
        t = real()
        seen.append(t.cores)
        return t
    monkeypatch.setattr(native_compile, "host_target", recording)
    x = np.arange(10.0).reshape(2, 5) + 0.5
    out = pmap(lambda v: lax.psum(plait.numpy.exp(v) * 3.25, "i"), "i", backend="native")(x)
    np.testing.assert_allclose(np.asarray(out), np.broadcast_to((np.exp(x) * 3.25).sum(0), x.shape),
                               rtol=1e-12)
    want = len(plait.distributed.local_devices()[0].cores)
    assert seen and set(seen) == {want}, (seen, want)


def test_static_broadcasted_and_out_axes(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    X = np.arange(6.0).reshape(3, 2)
    f = pmap(lambda x, k, y: (lax.psum(x, "i") * k + y, y), "i", in_axes=(1, None, None),
             out_axes=(1, None), static_broadcasted_argnums=1)
    a, b = f(X, 3.0, np.ones(3))
    np.testing.assert_allclose(np.asarray(a), np.repeat(X.sum(1, keepdims=True) * 3 + 1, 2,
                                                        axis=1))
    np.testing.assert_allclose(np.asarray(b), np.ones(3))


def test_errors(monkeypatch):
    with pytest.raises(UnboundAxisNameError, match="'k'"):
        vmap(lambda x: lax.psum(x, "k"), axis_name="i")(np.ones(2))
    with pytest.raises(UnboundAxisNameError):
        lax.psum(np.ones(2), "i")
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    with pytest.raises(plait.errors.PlaitValueError, match="PLAIT_CPU_DEVICES"):
        pmap(lambda x: x, "i")(np.ones((3, 2)))
    # a collective only one replica reaches: the other times out with an error
    monkeypatch.setattr(plait.config, "collective_timeout", 1.0)
    f = pmap(lambda x: lax.cond(lax.axis_index("i") == 0, lambda v: lax.psum(v, "i"),
                                lambda v: v, x), "i")
    with pytest.raises(DistributedError, match="did not reach"):
        f(np.ones((2, 3)))


def test_psum_of_a_pytree_is_one_exchange(monkeypatch):
    from plait.distributed import local
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    calls = []
    real = local.LocalComm.allreduce

    def counting(self, x, op):
        calls.append((self.index, x.shape))
        return real(self, x, op)
    monkeypatch.setattr(local.LocalComm, "allreduce", counting)
    tree = {"a": np.ones((2, 3)), "b": np.arange(4.0).reshape(2, 2), "c": np.ones((2, 2, 2))}
    out = pmap(lambda t: lax.psum(t, "i"), "i")(tree)
    np.testing.assert_allclose(np.asarray(out["b"]), np.broadcast_to([2.0, 4.0], (2, 2)))
    assert sorted(calls) == [(0, (9,)), (1, (9,))], calls


def test_jit_retraces_for_another_axis_size():
    g = jit(lambda v: v + lax.psum(1.0, "i"))
    np.testing.assert_array_equal(np.asarray(vmap(g, axis_name="i")(np.zeros((2, 3)))), 2.0)
    np.testing.assert_array_equal(np.asarray(vmap(g, axis_name="i")(np.zeros((4, 3)))), 4.0)


def test_missing_mpi_is_a_clear_error(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("mpi4py"):
            raise ImportError("No module named 'mpi4py'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(DistributedError, match=r'pip install "plait\[mpi\]"'):
        plait.distributed.initialize()
    assert plait.process_count() == 1


def test_failing_replica_stops_the_others_at_once(monkeypatch):
    import time
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    monkeypatch.setattr(plait.config, "collective_timeout", 60.0)

    def check(i, x):
        if int(i) == 1:
            raise ArithmeticError("replica 1 failed")
        return x

    def f(x):
        y = plait.pure_callback(check, plait.ShapeDtypeStruct(x.shape, x.dtype),
                                lax.axis_index("i"), x)
        return lax.psum(y, "i")
    t0 = time.monotonic()
    with pytest.raises(Exception, match="replica 1 failed"):
        pmap(f, "i")(np.ones((2, 3)))
    assert time.monotonic() - t0 < 30


def test_vmap_of_a_pmapped_vjp_matches_the_named_vmap(monkeypatch):
    """vmap over a pmapped function's vjp (the staged backward pass is a pmap_call: its
    batch rule runs each replica over the whole batch of cotangents), equal to the same
    program with vmap(axis_name) for pmap; a direct vmap of pmap batches its replicas."""
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    rng = np.random.default_rng(4)
    W, X = rng.normal(size=(3, 2)), rng.normal(size=(2, 4, 3))

    def replica(w, x):
        r = plait.numpy.tanh(x @ w)
        return r * lax.psum((r * r).sum(), "i") + lax.ppermute(r, "i", [(0, 1), (1, 0)])

    cts = rng.normal(size=(5, 2, 4, 2))             # a batch of output cotangents
    got = vmap(vjp(pmap(replica, "i", in_axes=(None, 0)), W, X)[1])(cts)
    want = vmap(vjp(vmap(replica, axis_name="i", in_axes=(None, 0)), W, X)[1])(cts)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-13)
    direct = vmap(lambda w: pmap(replica, "i", in_axes=(None, 0))(w, X))(np.stack([W, 2 * W]))
    np.testing.assert_allclose(
        np.asarray(direct),
        np.asarray(vmap(lambda w: vmap(replica, axis_name="i", in_axes=(None, 0))(w, X))(
            np.stack([W, 2 * W]))), rtol=1e-12)
