"""Host callbacks on the xla backend (XLA's Python CPU callback custom call), against
the interp backend: values, call counts and the order of effects (in loops, cond,
vmap, grad, nested jit), errors, export's refusal, threads."""
from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait import lax  # noqa: E402
from plait.errors import CallbackError, PlaitValueError  # noqa: E402

io_callback = plait.experimental.io_callback
F32 = np.float32


def _run(make, args, backends=("interp", "xla")):
    """``make(log)`` -> function; for each backend, its outputs (host arrays) and the
    events its callbacks logged, on two calls of one jitted function."""
    got = {}
    for b in backends:
        log: list = []
        jf = plait.jit(make(log), backend=b)
        outs = [plait.tree_util.tree_map(np.asarray, jf(*args)) for _ in range(2)]
        got[b] = (outs, log)
    return got


def _same(got):
    """xla's outputs and events equal interp's: the same events in the same order
    (``(tag, values as lists)``), their values equal up to float32 rounding (XLA's
    sin is not NumPy's)."""
    (o_ref, l_ref), (o_x, l_x) = got["interp"], got["xla"]
    assert len(l_ref) > 0
    assert [t for t, _ in l_x] == [t for t, _ in l_ref]
    for (t, a), (_, b) in zip(l_x, l_ref):
        np.testing.assert_allclose(_flat(a), _flat(b), rtol=1e-6, atol=1e-6, err_msg=t)
    for a, b in zip(plait.tree_util.tree_leaves(o_x), plait.tree_util.tree_leaves(o_ref)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _flat(v) -> list:
    """The numbers of a nested list, in order (its nesting compared too)."""
    if isinstance(v, (list, tuple)):
        return [len(v)] + [x for e in v for x in _flat(e)]
    return [float(v)]


def _rec(log, tag):
    return lambda *a: log.append((tag, [np.array(x).tolist() for x in a]))


def test_straight_line_values_counts_and_order():
    def make(log):
        def f(x):
            plait.debug.callback(_rec(log, "d1"), x)
            y = io_callback(lambda a: (log.append(("io", a.tolist())), a * 2)[1], x, x)
            z = plait.pure_callback(lambda a: (log.append(("pure", a.tolist())), a + 1)[1],
                                    plait.ShapeDtypeStruct((3,), F32), y)
            plait.debug.callback(_rec(log, "d2"), z, y)
            return z * 3
        return f
    _same(_run(make, (np.arange(3, dtype=F32),)))


def test_many_independent_effects_keep_program_order():
    # 24 callbacks on independent values, none feeding another: only the token orders
    # them (a schedule free to reorder independent custom calls would interleave them)
    def make(log):
        def f(x):
            for i in range(12):
                plait.debug.callback(_rec(log, f"d{i}"), x[i % 4] * (i + 1))
                io_callback(lambda a, i=i: (log.append((f"io{i}", a.tolist())), a)[1],
                            plait.ShapeDtypeStruct((), F32), pnp.sin(x[(i + 1) % 4]) + i)
            return x.sum()
        return f
    _same(_run(make, (np.arange(4, dtype=F32) + 1,)))


def test_callbacks_in_loops_and_cond():
    def make(log):
        def f(x):
            def body(i, c):
                plait.debug.callback(_rec(log, "fori"), i, c)
                return c * 2.0
            y = lax.fori_loop(0, 3, body, x[1])

            def wbody(c):
                plait.debug.callback(_rec(log, "const"))   # loop-invariant: not hoisted
                return io_callback(lambda v: (log.append(("wio", v.tolist())), v + 1)[1],
                                   plait.ShapeDtypeStruct((), np.int32), c)
            k = lax.while_loop(lambda c: c < 3, wbody, np.int32(0))

            def wcond(c):     # a callback in the condition: called once more than the body
                plait.debug.callback(_rec(log, "wcond"), c)
                return c < 2
            k2 = lax.while_loop(wcond, lambda c: (plait.debug.callback(_rec(log, "wb"), c),
                                                  c + 1)[1], np.int32(0))
            z = lax.cond(y > 0, lambda v: (plait.debug.callback(_rec(log, "pos"), v), v)[1],
                         lambda v: (plait.debug.callback(_rec(log, "neg"), v), -v)[1], y)

            def sbody(c, xi):
                plait.debug.callback(_rec(log, "scan"), c, xi)
                r = plait.pure_callback(lambda a: (log.append(("sp", a.tolist())), a * a)[1],
                                        plait.ShapeDtypeStruct((), F32), xi)
                return c + r, c
            s, cs = lax.scan(sbody, F32(0.0), x)
            return z + k + k2 + s, cs
        return f
    got = _run(make, (np.array([1.0, 3.0], F32),))
    _same(got)
    tags = [t for t, _ in got["xla"][1]]
    assert tags.count("wcond") == 2 * 3 and tags.count("wb") == 2 * 2
    got = _run(make, (np.array([1.0, -3.0], F32),))      # the other branch
    _same(got)
    assert "neg" in [t for t, _ in got["xla"][1]]


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_pure_callback_under_vmap(method):
    def make(log):
        def g(a, b):
            log.append(("shapes", [list(a.shape), list(b.shape)]))
            return np.sin(a) + b
        return plait.vmap(lambda a, b: plait.pure_callback(
            g, plait.ShapeDtypeStruct((3,), F32), a, b, vmap_method=method), in_axes=(0, None))
    a = np.arange(6, dtype=F32).reshape(2, 3)
    _same(_run(make, (a, np.ones(3, F32))))


def test_debug_and_io_callback_under_vmap():
    def make(log):
        def f(x):
            plait.debug.callback(_rec(log, "d"), x)
            return io_callback(lambda a: (log.append(("io", a.tolist())), a * 2)[1], x, x)
        return plait.vmap(f)
    _same(_run(make, (np.arange(6, dtype=F32).reshape(3, 2),)))


def test_debug_callback_under_grad_sees_primals():
    def make(log):
        def f(x):
            plait.debug.callback(_rec(log, "primal"), x)
            y = pnp.sin(x) * x
            plait.debug.callback(_rec(log, "y"), y)
            return y.sum()
        return plait.grad(f)
    _same(_run(make, (np.array([0.5, 1.5, -2.0], F32),)))


def test_jit_of_jit_and_pure_callback_with_custom_jvp():
    def make(log):
        @plait.custom_jvp
        def h(x):
            return plait.pure_callback(lambda a: (log.append(("h", a.tolist())), np.sin(a))[1],
                                       plait.ShapeDtypeStruct((2,), F32), x)
        h.defjvp(lambda p, t: (h(p[0]), pnp.cos(p[0]) * t[0]))

        @plait.jit
        def inner(x):
            plait.debug.callback(_rec(log, "inner"), x)
            return h(x) * 2

        def f(x):
            plait.debug.callback(_rec(log, "outer"), x)
            return inner(x) + inner(x + 1), plait.grad(lambda v: h(v).sum())(x)
        return f
    _same(_run(make, (np.array([0.25, 1.0], F32),)))


def test_user_exception_is_a_callback_error_naming_it():
    def explode(a):
        raise ValueError("boom")

    def f(x):
        plait.debug.callback(explode, x)
        return x + 1
    jf = plait.jit(f, backend="xla")
    with pytest.raises(CallbackError, match=r"'explode'.*debug_callback.*ValueError: boom") \
            as info:
        jf(np.ones(3, F32))
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(ValueError, match="boom"):       # interp: the user's exception
        plait.jit(f, backend="interp")(np.ones(3, F32))
    # the executable still works afterwards
    ok = plait.jit(lambda x: io_callback(lambda a: a * 2, x, x), backend="xla")
    np.testing.assert_array_equal(ok(np.ones(2, F32)), np.full(2, 2, F32))


@pytest.mark.parametrize("backend", ["interp", "xla"])
def test_wrong_result_shape_is_a_clear_error(backend):
    def f(x):
        return plait.pure_callback(lambda a: np.zeros(4, F32),
                                   plait.ShapeDtypeStruct((3,), F32), x)
    with pytest.raises(CallbackError, match=r"returned shape \(4,\).*declares \(3,\)"):
        plait.jit(f, backend=backend)(np.ones(3, F32))

    def g(x):
        return io_callback(lambda a: (a, a), plait.ShapeDtypeStruct((3,), F32), x)
    with pytest.raises(CallbackError, match="returned 2 arrays"):
        plait.jit(g, backend=backend)(np.ones(3, F32))


def test_other_result_dtype_converted_as_on_interp():
    # a callback returning float64 for a declared int32 result: converted as on interp
    def make(log):
        def f(x):
            log.append(("x", []))
            return plait.pure_callback(lambda a: a * 1.7, plait.ShapeDtypeStruct((3,),
                                                                                  np.int32), x)
        return f
    got = _run(make, (np.arange(3, dtype=F32),))
    assert got["xla"][0][0].dtype == np.int32
    np.testing.assert_array_equal(got["xla"][0][0], got["interp"][0][0])


def test_export_refuses_naming_the_callback():
    def noisy(a):
        """Does nothing: the refusal is about its name."""

    def f(x):
        plait.debug.callback(noisy, x)
        return x * 2
    with pytest.raises(PlaitValueError, match=r"'noisy' \(debug_callback\).*plait.export"):
        plait.export(f)(plait.ShapeDtypeStruct((3,), F32))


def test_text_of_a_program_with_callbacks():
    def f(x):
        plait.debug.callback(lambda a: None, x)
        return x + 1
    text = plait.jit(f, backend="xla").lower(np.ones(2, F32)).as_text("stablehlo")
    assert '"xla_ffi_python_cpu_callback"' in text and "!stablehlo.token" in text


def test_two_threads_call_a_jitted_io_callback():
    lock = threading.Lock()
    seen: list = []

    def cb(a):
        with lock:
            seen.append(float(a[0]))
        return a * 3

    jf = plait.jit(lambda x: io_callback(cb, x, x) + 1, backend="xla")
    errors: list = []

    def worker(k):
        try:
            for i in range(20):
                v = np.full(4, 100 * k + i, F32)
                np.testing.assert_array_equal(np.asarray(jf(v)), v * 3 + 1)
        except Exception as e:   # reported to the main thread
            errors.append(e)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in ts)
    assert sorted(seen) == sorted(float(100 * k + i) for k in range(2) for i in range(20))


# --- pmap collectives: each a host call of its impl in the replica's context ------------

def _collective_cases(n: int) -> dict:
    """name -> (per-replica shape, replica function)."""
    perm = [(k, (k + 1) % n) for k in range(n)]
    return {
        "psum": ((3, 2), lambda x: lax.psum(x * x, "i") * x),
        "psum2": ((3,), lambda x: sum(lax.psum((x, x.astype(np.float32) * 2), "i")[1:])
                  + lax.psum(x, "i")),
        "pmean": ((3,), lambda x: lax.pmean(pnp.sin(x), "i") + x),
        "pmax": ((2, 2), lambda x: lax.pmax(x, "i") * x),
        "pmin": ((3,), lambda x: lax.pmin(x * x, "i")),
        "all_gather": ((3,), lambda x: lax.all_gather(x * x, "i", axis=1)),
        "all_gather_tiled": ((2, 3), lambda x: lax.all_gather(x, "i", tiled=True) * 2),
        "psum_scatter": ((n, 2), lambda x: lax.psum_scatter(x * x, "i")),
        "psum_scatter_tiled": ((3, 2 * n), lambda x: lax.psum_scatter(
            x, "i", scatter_dimension=1, tiled=True)),
        "all_to_all": ((n, 3), lambda x: lax.all_to_all(x * x, "i", 0, 1)),
        "ppermute": ((3,), lambda x: lax.ppermute(x * x, "i", perm)),
        "ppermute_partial": ((2,), lambda x: lax.ppermute(x, "i", [(0, 1)]) + x),
        "axis_index": ((3,), lambda x: x * lax.axis_index("i").astype(x.dtype)),
    }


@pytest.mark.parametrize("n", [2, 4])
def test_pmap_collectives_match_interp(n, monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", n)
    cases = _collective_cases(n)
    rng = np.random.default_rng(n)
    xs = [rng.uniform(0.5, 1.5, (n,) + shape) for shape, _ in cases.values()]
    fs = [f for _, f in cases.values()]

    def replica(*a):
        return tuple(f(x) for f, x in zip(fs, a))
    got = plait.pmap(replica, axis_name="i", backend="xla")(*xs)
    want = plait.pmap(replica, axis_name="i", backend="interp")(*xs)
    for k, g, w in zip(cases, got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype, k
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, err_msg=k)
    # independent oracles of two of them (interp's axis_index is a replica's own too)
    X = xs[0]
    np.testing.assert_allclose(np.asarray(got[0]), (X * X).sum(0) * X, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(got[-1]),
                                  xs[-1] * np.arange(n)[:, None])


def test_pmap_collectives_in_loops_cond_and_with_callbacks(monkeypatch):
    n = 2
    monkeypatch.setattr(plait.config, "cpu_devices", n)

    def make(log):
        def replica(x):
            def body(c, xi):
                s = lax.psum(c * xi, "i")
                plait.debug.callback(_rec(log, "scan"), lax.axis_index("i"), s)
                return c + s, lax.pmax(xi, "i")
            c, ys = lax.scan(body, x[0], x)
            w = lax.while_loop(lambda v: lax.psum(v, "i") < 20.0,
                               lambda v: v + lax.axis_index("i") + 1.0, x[1])
            z = lax.cond(lax.axis_index("i") == 0, lambda v: lax.psum(v, "i"),
                         lambda v: lax.psum(v * 2, "i"), x[2])
            return c, ys, w, z
        return replica
    X = np.random.default_rng(3).uniform(0.5, 1.5, (n, 3))
    got = {}
    for b in ("interp", "xla"):
        log: list = []
        outs = plait.pmap(make(log), axis_name="i", backend=b)(X)
        got[b] = ([np.asarray(o) for o in outs], sorted(log, key=lambda e: e[1][0]))
    for g, w in zip(got["xla"][0], got["interp"][0]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # the replicas' callbacks interleave in any order; each replica's in program order
    assert [e[1][0] for e in got["xla"][1]] == [e[1][0] for e in got["interp"][1]]
    for (t, a), (_, b) in zip(got["xla"][1], got["interp"][1]):
        np.testing.assert_allclose(_flat(a), _flat(b), rtol=1e-12, err_msg=t)


def test_callback_error_in_one_replica_aborts_the_pmap(monkeypatch):
    # replica 1's callback raises while replica 0 waits in the psum: the pmap raises the
    # CallbackError (the other replica is released, nothing hangs)
    monkeypatch.setattr(plait.config, "cpu_devices", 2)

    def check(i):
        if int(i) == 1:
            raise RuntimeError("replica one fails")

    def replica(x):
        plait.debug.callback(check, lax.axis_index("i"))
        return lax.psum(x, "i")
    with pytest.raises(CallbackError, match=r"'check'.*RuntimeError: replica one fails"):
        plait.pmap(replica, axis_name="i", backend="xla")(np.ones((2, 3)))


def test_host_function_runs_in_its_runs_replica_scope_on_any_thread():
    # XLA may call a host function on a thread other than the caller's: the function
    # finds the caller's replica communicators through the run's context key
    from plait.backends.xla.rules_callbacks import HostCallbacks, run_context
    from plait.core import named_axes

    class Comm:
        index, size = 3, 4

    def axis_index():
        return [np.asarray(named_axes.replica_comm("i").index, np.int32)]
    host = HostCallbacks().wrap(axis_index, "axis_index", "axis_index")
    got: list = []
    with named_axes.replica_scope({"i": Comm()}), run_context() as key:
        t = threading.Thread(target=lambda: got.append(host("tok", key)))
        t.start()
        t.join(timeout=60)
    assert named_axes.replica_comm("i") is None
    assert got[0][0] == "tok" and int(got[0][1]) == 3
