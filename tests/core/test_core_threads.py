"""Threads: each thread has its own trace stack, and jit, the lazy runtime and the lazy
switches are safe when several threads (or asyncio tasks) use them at once.

Every value is checked against NumPy. Traced functions sleep a little now and then so
that the other threads really run while a trace is in progress (the GIL would otherwise
let a short trace finish in one time slice).
"""
import asyncio
import os
import signal
import threading
import time

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lazy
from plait.errors import UnexpectedTracerError
from plait.runtime import metrics
from plait.runtime.array import Array

TIMEOUT = 60.0      # seconds any test's threads may take before the test fails


def run_threads(targets, timeout=TIMEOUT):
    """Run each callable in its own thread; re-raise the first exception; fail on a hang."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:      # noqa: BLE001  (re-raised in the test)
                errors.append(e)
        return run
    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads did not finish (deadlock?)"
    if errors:
        raise errors[0]


def eager_loop(stop: threading.Event, x: np.ndarray, results: list):
    """Eager ``cos`` and ``add`` until ``stop``; record (type, value ok) of each result."""
    want_cos, want_add = np.cos(x), x + x
    while not stop.is_set():
        r = pnp.cos(x)
        s = pnp.add(x, x)
        results.append(type(r) is Array and type(s) is Array
                       and np.array_equal(np.asarray(r), want_cos)
                       and np.array_equal(np.asarray(s), want_add))


def test_eager_ops_of_other_threads_never_join_a_trace():
    # the reproducer: eager ops in the main thread while another thread traces
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    n_ops = 600
    tracing, traced = threading.Event(), threading.Event()

    def long_fn(v):
        tracing.set()
        for i in range(n_ops):
            v = pnp.sin(v)
            if i % 50 == 0:
                time.sleep(0.002)       # let the eager thread run mid-trace
        traced.set()
        return v
    out = []
    results = []

    def eager():
        assert tracing.wait(TIMEOUT)
        eager_loop(traced, x, results)
    run_threads([lambda: out.append(plait.jit(long_fn, backend="interp")(x)), eager])
    want = x
    for _ in range(n_ops):
        want = np.sin(want)
    np.testing.assert_allclose(np.asarray(out[0]), want, rtol=1e-6, atol=1e-6)
    assert len(results) > 10            # the eager thread did run during the trace
    assert all(results), f"{results.count(False)} of {len(results)} eager results were wrong"


def test_different_functions_trace_concurrently():
    n = 4
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3) / 7
    barrier = threading.Barrier(n, timeout=TIMEOUT)

    def make(k):
        def f(v, w):
            barrier.wait()              # every thread is tracing at this point
            for i in range(40):
                v = pnp.tanh(v * (k + 1) + w) - w
                if i % 10 == 0:
                    time.sleep(0.001)
            return pnp.sum(v, axis=0) + k, v
        return f

    def oracle(k, v, w):
        for _ in range(40):
            v = np.tanh(v * np.float32(k + 1) + w) - w
        return v.sum(axis=0) + np.float32(k), v
    outs = {}

    def call(k):
        outs[k] = plait.jit(make(k), backend="interp")(x, x[0])
    run_threads([lambda k=k: call(k) for k in range(n)])
    for k in range(n):
        for got, want in zip(outs[k], oracle(k, x, x[0])):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_autograph_functions_trace_concurrently():
    n = 3
    barrier = threading.Barrier(n, timeout=TIMEOUT)

    def make(k):
        def f(v):
            barrier.wait()
            s = v * 0
            i = 0
            while pnp.sum(s) < 10.0 * (k + 1):  # converted to a while_loop
                if pnp.max(v) > 2.0:            # converted to a cond
                    s = s + v
                else:
                    s = s + 2.0 * v
                i += 1
                time.sleep(0.001)
            return s
        return f

    def oracle(k, v):
        s = v * 0
        while s.sum() < 10.0 * (k + 1):
            s = s + v if v.max() > 2.0 else s + 2.0 * v
        return s
    xs = [np.array([0.5, 1.0, 1.5], np.float32), np.array([1.0, 3.0, 0.0], np.float32),
          np.array([0.25, 0.25, 0.5], np.float32)]
    outs = {}

    def call(k):
        outs[k] = plait.jit(make(k), autograph=True, backend="interp")(xs[k])
    run_threads([lambda k=k: call(k) for k in range(n)])
    for k in range(n):
        np.testing.assert_allclose(np.asarray(outs[k]), oracle(k, xs[k]), rtol=1e-6)


def test_eight_threads_calling_one_jit_trace_and_compile_it_once():
    n = 8
    x = np.linspace(0, 2, 12, dtype=np.float32).reshape(3, 4)
    body_runs = []
    barrier = threading.Barrier(n, timeout=TIMEOUT)

    @plait.jit
    def f(v):
        body_runs.append(1)
        time.sleep(0.2)                 # the other threads arrive while this one traces
        return pnp.exp(v) * 2.0 + pnp.sum(v)
    before = metrics.counters()
    outs = [None] * n

    def call(i):
        barrier.wait()
        outs[i] = f(x)
    run_threads([lambda i=i: call(i) for i in range(n)])
    after = metrics.counters()
    assert len(body_runs) == 1
    assert after.get("traces", 0) - before.get("traces", 0) == 1
    assert after.get("compiles", 0) - before.get("compiles", 0) == 1
    want = np.exp(x) * 2 + x.sum()
    for o in outs:
        assert type(o) is Array
        np.testing.assert_allclose(np.asarray(o), want, rtol=1e-6)


def test_eager_ops_while_another_thread_runs_grad_and_vmap():
    x = np.linspace(-2, 2, 6).astype(np.float32)
    xs = np.stack([x, 2 * x, -x])
    stop = threading.Event()
    results = [[], []]
    grads, batched = [], []

    def transforms():
        try:
            for _ in range(15):
                grads.append(plait.grad(lambda v: pnp.sum(pnp.sin(v) * v))(x))
                batched.append(plait.vmap(lambda v: pnp.cumsum(v * v) - pnp.max(v))(xs))
                time.sleep(0.001)
        finally:
            stop.set()
    run_threads([transforms, lambda: eager_loop(stop, x, results[0]),
                 lambda: eager_loop(stop, 2 * x, results[1])])
    for r in results:
        assert r and all(r), f"{r.count(False)} of {len(r)} eager results were wrong"
    for g in grads:
        np.testing.assert_allclose(np.asarray(g), np.cos(x) * x + np.sin(x), rtol=1e-5,
                                   atol=1e-6)
    want_b = np.cumsum(xs * xs, axis=1) - xs.max(axis=1, keepdims=True)
    for b in batched:
        np.testing.assert_allclose(np.asarray(b), want_b, rtol=1e-5, atol=1e-6)


def test_tracer_used_in_another_thread_is_an_error():
    x = np.ones(3, np.float32)
    leaked, used, errors = [], threading.Event(), []

    def f(v):
        leaked.append(v)
        assert used.wait(TIMEOUT)       # stay tracing while the other thread uses it
        return v * 2

    def other():
        while not leaked:
            time.sleep(0.001)
        try:
            pnp.sin(leaked[0])
        except UnexpectedTracerError as e:
            errors.append(str(e))
        finally:
            used.set()
    out = []
    run_threads([lambda: out.append(plait.jit(f, backend="interp")(x)), other])
    assert len(errors) == 1 and "another thread" in errors[0]
    np.testing.assert_array_equal(np.asarray(out[0]), 2 * x)


def _lazy_backend(backend):
    saved = plait.config.backend
    plait.config.backend = backend
    lazy.step()
    yield
    lazy.step()
    plait.config.backend = saved


@pytest.fixture
def interp_lazy():
    yield from _lazy_backend("interp")


@pytest.fixture(params=["interp", "native"])
def lazy_backend(request):
    yield from _lazy_backend(request.param)


def test_lazy_arrays_from_two_threads(lazy_backend):
    # one thread traces a jitted function (slowly) while two threads run lazy code on a
    # shared weight and materialize (native: launched on the worker thread, waited for
    # by whichever thread observes first), and one thread holds forbid_materialization()
    rng = np.random.default_rng(0)
    w_np = rng.standard_normal((4, 4)).astype(np.float32)
    w = lazy.asarray(w_np)
    stop = threading.Event()
    failures = []

    def slow_trace():
        def f(v):
            for i in range(200):
                v = pnp.cos(v)
                if i % 20 == 0:
                    time.sleep(0.002)
            return v
        try:
            out = plait.jit(f, backend="interp")(w_np)
            want = w_np
            for _ in range(200):
                want = np.cos(want)
            np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)
        finally:
            stop.set()

    def lazy_worker(seed):
        x_np = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
        x, want = lazy.asarray(x_np), x_np
        steps = 0
        while not stop.is_set() or steps < 5:
            x = pnp.tanh(x @ w) + 0.5
            want = np.tanh(want @ w_np) + np.float32(0.5)
            if not isinstance(x, lazy.LazyArray):
                failures.append(type(x).__name__)
                return
            shared.append(x)
            got = np.asarray(x)         # materializes
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            steps += 1

    def observer():                     # reads the workers' results as they appear
        seen = 0
        while not stop.is_set() or seen < len(shared):
            if seen < len(shared):
                assert np.all(np.isfinite(np.asarray(shared[seen])))
                seen += 1
            else:
                time.sleep(0.0005)

    def forbidding():
        with lazy.forbid_materialization():
            y = pnp.exp(w) * 3.0        # recorded, never observed inside the block
            stop.wait(TIMEOUT)
        np.testing.assert_allclose(np.asarray(y), np.exp(w_np) * 3, rtol=1e-6)
    shared = []
    run_threads([slow_trace, lambda: lazy_worker(1), lambda: lazy_worker(2), forbidding,
                 observer])
    assert not failures, f"lazy operations returned {failures}"


def test_lazy_switches_are_per_thread(interp_lazy):
    inside, done = threading.Event(), threading.Event()
    seen = []

    def holder():
        with lazy.eager_mode(), lazy.forbid_materialization():
            inside.set()
            done.wait(TIMEOUT)

    def other():
        assert inside.wait(TIMEOUT)
        try:
            seen.append(lazy.is_eager())
            x = lazy.asarray(np.arange(4.0))
            y = pnp.sin(x) + 1.0
            seen.append(y.is_concrete)                  # recorded, not run eagerly
            np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(4.0)) + 1)
        finally:
            done.set()
    run_threads([holder, other])
    assert seen == [False, False]


def test_asyncio_tasks_have_their_own_lazy_switches(interp_lazy):
    async def forbids(entered, release):
        with lazy.forbid_materialization():
            entered.set()
            await release.wait()        # another task runs here
            with pytest.raises(lazy.MaterializationForbiddenError):
                np.asarray(pnp.cos(lazy.asarray(np.ones(2))))

    async def materializes(entered, release):
        await entered.wait()
        try:
            x = lazy.asarray(np.arange(3.0))
            y = np.asarray(pnp.exp(x) * 2.0)    # not forbidden in this task
            np.testing.assert_allclose(y, np.exp(np.arange(3.0)) * 2)
            z = plait.grad(lambda v: pnp.sum(v * v))(np.arange(3.0))
            np.testing.assert_allclose(np.asarray(z), 2 * np.arange(3.0))
        finally:
            release.set()

    async def main():
        entered, release = asyncio.Event(), asyncio.Event()
        await asyncio.wait_for(asyncio.gather(forbids(entered, release),
                                              materializes(entered, release)), TIMEOUT)
    asyncio.run(main())


def test_lazy_trace_of_one_structure_compiles_once_across_threads(interp_lazy, monkeypatch):
    from plait.lazy import cache
    compile_ = cache._compile

    def slow_compile(*args):
        time.sleep(0.2)                 # the other threads materialize meanwhile
        return compile_(*args)
    monkeypatch.setattr(cache, "_compile", slow_compile)
    n = 4
    barrier = threading.Barrier(n, timeout=TIMEOUT)
    xs = [np.arange(6, dtype=np.float32).reshape(2, 3) * (k + 1) for k in range(n)]
    outs = [None] * n
    before = lazy.metrics()["compiles"]

    def worker(k):
        y = pnp.exp(pnp.sin(lazy.asarray(xs[k]))) * 2.0 - 1.0
        barrier.wait()
        outs[k] = np.asarray(y)
    run_threads([lambda k=k: worker(k) for k in range(n)])
    assert lazy.metrics()["compiles"] - before == 1
    for k in range(n):
        np.testing.assert_allclose(outs[k], np.exp(np.sin(xs[k])) * 2 - 1, rtol=1e-6)


def test_a_failing_trace_fails_in_every_waiting_thread():
    n = 4
    barrier = threading.Barrier(n, timeout=TIMEOUT)
    runs = []

    @plait.jit
    def f(v):
        runs.append(1)
        time.sleep(0.05)
        return "not an array"
    errors = []

    def call():
        barrier.wait()
        try:
            f(np.ones(2))
        except plait.errors.PlaitTypeError as e:
            errors.append(e)
    run_threads([call] * n)
    assert len(errors) == n and all("returned a str" in str(e) for e in errors)
    assert len(runs) == n       # a waiter retraces after a failed trace: its own error


def test_a_trace_that_calls_itself_on_the_same_signature_does_not_wait_for_itself():
    # kept behaviour (no deadlock): the inner call traces again, as a single thread did
    depth = []

    @plait.jit
    def f(v):
        depth.append(1)
        if len(depth) < 3:
            return f(v) + 1.0
        return v
    x = np.arange(3.0)
    np.testing.assert_array_equal(np.asarray(f(x)), x + 2)


def test_once_builds_instead_of_waiting_in_a_cycle():
    from plait.runtime.once import Once
    once = Once()
    store = {}
    a_building, b_building = threading.Event(), threading.Event()

    def build(key, other, mine, theirs):
        def run():
            mine.set()
            assert theirs.wait(TIMEOUT)
            time.sleep(0.05)            # the other thread is now waiting or about to
            once.run(other, lambda: store.get(other), lambda: store.setdefault(other, other))
            return store.setdefault(key, key)
        return run
    run_threads([
        lambda: once.run("a", lambda: store.get("a"), build("a", "b", a_building, b_building)),
        lambda: once.run("b", lambda: store.get("b"), build("b", "a", b_building, a_building)),
    ])
    assert store == {"a": "a", "b": "b"}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_while_other_threads_trace_and_materialize(interp_lazy, monkeypatch):
    # the child has only the forking thread: a trace, a jit build and a lazy
    # materialization that other threads had in progress must neither leak into it
    # nor block it
    from plait.lazy import cache
    x = np.arange(4.0)
    in_trace, in_compile, release = threading.Event(), threading.Event(), threading.Event()

    def f(v):
        if threading.current_thread().name == "tracer":
            in_trace.set()
            assert release.wait(TIMEOUT)
        return v * 3.0
    jf = plait.jit(f, backend="interp")
    compile_ = cache._compile

    def held_compile(*args):
        if threading.current_thread().name == "materializer":
            in_compile.set()
            assert release.wait(TIMEOUT)
        return compile_(*args)
    monkeypatch.setattr(cache, "_compile", held_compile)
    bg = [threading.Thread(target=lambda: jf(x), name="tracer", daemon=True),
          threading.Thread(target=lambda: np.asarray(pnp.tan(lazy.asarray(x))),
                           name="materializer", daemon=True)]
    for t in bg:
        t.start()
    assert in_trace.wait(TIMEOUT) and in_compile.wait(TIMEOUT)
    pid = os.fork()
    if pid == 0:                                    # the child
        signal.alarm(30)                            # a hang ends the child
        ok = False
        try:
            e = pnp.cos(x)
            y = jf(x)
            z = np.asarray(pnp.exp(lazy.asarray(x)) + 1.0)
            ok = (type(e) is Array and np.allclose(np.asarray(e), np.cos(x))
                  and type(y) is Array and np.allclose(np.asarray(y), 3 * x)
                  and np.allclose(z, np.exp(x) + 1))
        finally:
            os._exit(0 if ok else 1)
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        for t in bg:
            t.join(TIMEOUT)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"


def test_lazy_grad_from_threads_derives_one_backward_graph(interp_lazy, monkeypatch):
    from plait.lazy import autodiff
    transform = autodiff.graph_transform

    def slow_transform(name):
        def run(*args):
            time.sleep(0.2)             # the other threads reach the pullback meanwhile
            return transform(name)(*args)
        return run
    monkeypatch.setattr(autodiff, "graph_transform", slow_transform)
    n = 3
    barrier = threading.Barrier(n, timeout=TIMEOUT)
    xs = [np.linspace(-1, 1, 5) * (k + 1) for k in range(n)]
    outs = [None] * n
    before = lazy.metrics()["backward_graphs"]

    def worker(k):
        x = lazy.asarray(xs[k])
        barrier.wait()
        g = plait.grad(lambda v: pnp.sum(pnp.sin(v) * v))(x)
        outs[k] = np.asarray(g)
    run_threads([lambda k=k: worker(k) for k in range(n)])
    assert lazy.metrics()["backward_graphs"] - before == 1
    for k in range(n):
        np.testing.assert_allclose(outs[k], np.cos(xs[k]) * xs[k] + np.sin(xs[k]), rtol=1e-12)
