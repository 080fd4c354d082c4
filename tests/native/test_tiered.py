"""Tiered execution (``plait.backends.native.tiered``): the interp tier answers while the
native build runs, then calls swap to native; results agree between the tiers (exactly
for elementwise, integer and random-bit work, to reassociation for sums and matmuls);
build errors surface on the next call; donation, lazy launches, callbacks, RNG and
control flow behave the same on both tiers.

The suite turns tiering off (tests/conftest.py); each test here turns it on and holds
the background build behind a gate, so which tier answers is deterministic."""
import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax, random
from plait.backends.native import compile as native_compile
from plait.backends.native.tiered import TieredExecutable
from plait.errors import CompileError
from plait.runtime import metrics


@pytest.fixture
def gate(monkeypatch):
    """Tiering on, jit on the native backend, and the background build waiting until
    ``gate.set()`` (the build is the real one)."""
    ev = threading.Event()
    real = native_compile._compile_native

    def gated(closed, *prepared):
        assert ev.wait(120), "the test never opened the gate"
        return real(closed, *prepared)
    monkeypatch.setattr(native_compile, "_compile_native", gated)
    monkeypatch.setattr(plait.config, "tiered", True)
    monkeypatch.setattr(plait.config, "backend", "native")
    yield ev
    ev.set()


def _exe(f, *args) -> TieredExecutable:
    exe = f.lower(*args).compile().executable
    assert isinstance(exe, TieredExecutable)
    return exe


def test_first_calls_interp_then_native(gate):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    w = rng.standard_normal((48, 32)).astype(np.float32)
    i = rng.integers(-50, 50, (64, 32)).astype(np.int32)

    @plait.jit
    def f(x, w, i):
        e = pnp.maximum(x * 2.0 - 1.0, x / 3.0)          # elementwise: identical
        k = (i * 7 + 3) // 4 % 5 ^ (i >> 1)                  # integer: identical
        y = pnp.tanh(x @ w)                                  # contraction: reassociation
        return e, k, y, pnp.sum(y, axis=0), pnp.where(x > 0, x, 0.0)[::2, 1:]

    exe = _exe(f, x, w, i)
    calls0 = metrics.get("tier_interp_calls")
    a = f(x, w, i)
    b = f(x, w, i)
    assert exe.tier == "interp" and exe.fast_calls == 2
    assert metrics.get("tier_interp_calls") - calls0 == 2
    assert "interp tier" in exe.as_text("tiers") and "building" in exe.as_text("tiers")
    gate.set()
    exe.wait(300)
    c = f(x, w, i)
    assert exe.tier == "native" and exe.fast_calls == 2
    assert "ready after" in exe.as_text("tiers")
    oracle_y = np.tanh(x.astype(np.float64) @ w)
    for out in (a, b, c):
        np.testing.assert_array_equal(np.asarray(out[0]), np.maximum(x * 2 - 1, x / np.float32(3)))
        np.testing.assert_array_equal(np.asarray(out[1]), (i * 7 + 3) // 4 % 5 ^ (i >> 1))
        np.testing.assert_allclose(np.asarray(out[2]), oracle_y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(out[3]), oracle_y.sum(0), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(np.asarray(out[4]), np.where(x > 0, x, 0)[::2, 1:])
    # the native tier is what it says: its C source is there
    assert "plait_" in exe.as_text("c")


def test_rng_callbacks_and_control_flow_agree(gate):
    seen = []

    @plait.jit
    def f(key, x):
        u = random.uniform(key, (257,))
        b = random.bits(random.split(key)[1], (33,))
        plait.debug.callback(lambda v: seen.append(np.asarray(v).copy()), x[:3])

        def body(c):
            i, v = c
            return i + 1, lax.cond(i % 2 == 0, lambda t: t * 2.0, lambda t: t - 1.0, v)
        _, w = lax.while_loop(lambda c: c[0] < 5, body, (0, x))
        s = lax.scan(lambda c, t: (c + t, c * t), 0.0, x)
        return u, b, w, s
    key = random.key(3)
    x = np.arange(8, dtype=np.float64)
    exe = _exe(f, key, x)
    a = f(key, x)
    assert exe.tier == "interp"
    gate.set()
    exe.wait(300)
    b = f(key, x)
    assert exe.tier == "native"
    np.testing.assert_array_equal(np.asarray(a[0]), np.asarray(b[0]))      # same random bits
    np.testing.assert_array_equal(np.asarray(a[1]), np.asarray(b[1]))
    w = x.copy()
    for i in range(5):
        w = w * 2 if i % 2 == 0 else w - 1
    for out in (a, b):
        np.testing.assert_array_equal(np.asarray(out[2]), w)
        np.testing.assert_allclose(np.asarray(out[3][0]), x.sum())
        np.testing.assert_allclose(np.asarray(out[3][1]),
                                   np.concatenate([[0], np.cumsum(x)[:-1]]) * x)
    assert len(seen) == 2
    for v in seen:
        np.testing.assert_array_equal(v, x[:3])


def test_donation_on_both_tiers(gate):
    f = plait.jit(lambda a, b: (a * 2.0 + b, b), donate_argnums=0)
    x = np.arange(6.0)
    exe = _exe(f, plait.numpy.asarray(x), x)
    for tier in ("interp", "native"):
        a = pnp.asarray(x)
        out, bb = f(a, x)
        assert exe.tier == tier
        np.testing.assert_array_equal(np.asarray(out), x * 3)
        np.testing.assert_array_equal(np.asarray(bb), x)
        with pytest.raises(Exception, match="donated"):
            np.asarray(a)
        gate.set()
        exe.wait(300)


def test_lazy_launch_waits_for_native(gate):
    f = plait.jit(lambda a: a + 1.0)
    x = np.ones(4)
    exe = _exe(f, x)
    assert exe.launch(x) is None                   # the interp tier runs on the caller
    gate.set()
    exe.wait(300)
    launched = exe.launch(x)
    if launched is not None:                        # the runtime may refuse; then it is run
        outs, job = launched
        job.wait()
        np.testing.assert_array_equal(outs[0], x + 1)
        assert exe.tier == "native"


@pytest.mark.parametrize("error", [CompileError("gcc said no"), ValueError("a pass broke")])
def test_build_error_surfaces_on_next_calls(monkeypatch, error):
    def failing(closed):
        raise error
    monkeypatch.setattr(native_compile, "_compile_native", failing)
    monkeypatch.setattr(plait.config, "tiered", True)
    monkeypatch.setattr(plait.config, "backend", "native")
    f = plait.jit(lambda a: a * 3.0)
    x = np.ones(3)
    exe = _exe(f, x)
    with pytest.raises(CompileError):
        exe.wait(60)
    for _ in range(2):                              # raised every time, never lost
        with pytest.raises(CompileError, match="gcc said no|a pass broke"):
            f(x)
    assert "failed" in exe.as_text("tiers")


def test_log_and_profiler_name_the_tier(gate, monkeypatch, tmp_path):
    monkeypatch.setattr(plait.config, "log_compiles", True)
    lines = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("plait")
    logger.addHandler(handler)
    try:
        f = plait.jit(lambda a: pnp.sin(a) * 2.0)
        x = np.linspace(0, 1, 5)
        exe = _exe(f, x)
        with plait.profiler.trace(str(tmp_path)):
            f(x)
        gate.set()
        exe.wait(300)
        f(x)
    finally:
        logger.removeHandler(handler)
    assert any("answered by the interp tier" in ln for ln in lines), lines
    assert any("native tier ready after" in ln for ln in lines), lines
    assert any("(interp tier)" in e["name"] for e in plait.profiler.last_events())


def test_off_compiles_native_before_returning(monkeypatch):
    monkeypatch.setattr(plait.config, "tiered", False)
    monkeypatch.setattr(plait.config, "backend", "native")
    f = plait.jit(lambda a: a - 1.0)
    exe = f.lower(np.ones(2)).compile().executable
    assert type(exe).__name__ == "NativeExecutable"


def test_exit_does_not_wait_for_a_build(tmp_path):
    """A process whose build is still running exits at once (the builder is a daemon)."""
    code = ("import threading, numpy as np, plait\n"
            "from plait.backends.native import compile as c\n"
            "c._compile_native = lambda closed: threading.Event().wait()\n"
            "f = plait.jit(lambda a: a + 1.0, backend='native')\n"
            "print(float(f(np.ones(2))[0]))\n")
    env = dict(os.environ, PLAIT_TIERED="1", PLAIT_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2.0"


@pytest.mark.parametrize("dn,strides,padding,rd,groups,dt", [
    (("NHWC", "HWIO", "NHWC"), (1, 1), "SAME", (1, 1), 1, np.float32),
    (("NHWC", "HWIO", "NHWC"), (2, 2), ((1, 0), (2, 1)), (1, 1), 1, np.float32),
    (("NCHW", "OIHW", "NCHW"), (1, 2), "VALID", (2, 1), 1, np.float64),
    (("NHWC", "HWIO", "NHWC"), (3, 2), ((-1, 2), (0, -1)), (1, 2), 1, np.float32),
    (("NHWC", "HWIO", "NHWC"), (2, 1), "SAME", (1, 1), 2, np.float32),     # reference path
    (("NHWC", "HWIO", "NHWC"), (1, 1), "SAME", (1, 1), 1, np.int32),       # reference path
])
def test_fast_tier_convolutions_match_the_reference(dn, strides, padding, rd, groups, dt):
    """The fast tier's convolutions (tier_ops), forward and both gradients (weight
    gradients take the per-output-position loop), against the reference impl."""
    from plait.backends.interp import InterpExecutable
    from plait.backends.native import tier_ops
    rng = np.random.default_rng(0)
    nhwc = dn[0] == "NHWC"
    x = rng.integers(-3, 4, (2, 9, 8, 4) if nhwc else (2, 4, 9, 8)).astype(dt)
    w = rng.integers(-3, 4, (3, 2, 4 // groups, 6) if nhwc else (6, 4 // groups, 3, 2)).astype(dt)

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=rd,
                                        dimension_numbers=dn, feature_group_count=groups)
    graphs = [plait.jit(f).trace_graph(x, w)]
    if dt != np.int32:
        graphs.append(plait.jit(plait.grad(lambda x, w: pnp.sum(pnp.sin(f(x, w))),
                                           argnums=(0, 1))).trace_graph(x, w))
    for closed in graphs:
        want = InterpExecutable(closed)(x, w)
        got = tier_ops.FastTier(InterpExecutable(closed))(x, w)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_collectives_skip_the_fast_tier(gate, monkeypatch):
    """pmap's collectives read the running replica's communicator: such a program is
    built before its first call (here the gate is open from the start)."""
    gate.set()
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    f = plait.pmap(lambda x: x - plait.lax.pmean(x, "i") + plait.lax.axis_index("i"), "i")
    x = np.arange(4.0).reshape(2, 2)
    np.testing.assert_array_equal(np.asarray(f(x)), x - x.mean(0) + np.arange(2)[:, None])


def test_fast_tier_drops_intermediates_after_their_last_use():
    from plait.backends.interp import InterpExecutable
    from plait.backends.native import tier_ops
    closed = plait.jit(lambda x: pnp.sum(pnp.exp(pnp.sin(x) * 3.0))).trace_graph(np.ones(1000))
    fast = tier_ops.FastTier(InterpExecutable(closed))
    assert any(fast.frees)
    out = fast(np.linspace(0, 1, 1000))
    np.testing.assert_allclose(out[0], np.exp(np.sin(np.linspace(0, 1, 1000)) * 3).sum())


def test_wait_all_waits_for_every_pending_build(gate):
    from plait.backends.native.tiered import wait_all
    f = plait.jit(lambda a: a * 5.0)
    exe = _exe(f, np.ones(3))
    assert not wait_all(timeout=0.2) and not exe.ready()
    gate.set()
    assert wait_all(timeout=300) and exe.ready()
    f(np.ones(3))
    assert exe.tier == "native"


def test_fast_tier_outer_products_match_the_reference():
    """dot_general with contracted length 1 is a broadcast multiply on the fast tier."""
    from plait.backends.interp import InterpExecutable
    from plait.backends.native import tier_ops
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((7, 1)).astype(np.float32), rng.standard_normal((1, 5))
    closed = plait.jit(lambda x, g: (x @ g.astype(np.float32), pnp.dot(x.T, x),
                                     pnp.einsum("ij,kj->ik", x, x))).trace_graph(x, g)
    fast = tier_ops.FastTier(InterpExecutable(closed))
    assert any(st.impl is tier_ops.dot for st in fast.steps)
    for a, b in zip(fast(x, g), InterpExecutable(closed)(x, g)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_heavy_programs_take_the_quick_tier_only_when_their_work_is_in_the_libraries(
        gate, monkeypatch, tmp_path):
    """A program over FAST_TIER_MAX_FLOPS skips the interpreter. When its own generated
    code does at most QUICK_MAX_GENERATED_FLOPS (the product runs in the GEMM library),
    its first call runs on the quick tier and its -O3 build is queued only when that
    call returns; when the generated code does more, it is built before its first call
    returns. Both give NumPy's values."""
    from plait.backends.native import tiered
    monkeypatch.setattr(plait.config, "cache_dir", str(tmp_path))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    y = rng.standard_normal((64, 64)).astype(np.float32)
    f = plait.jit(lambda a, b: a @ b + 1.0)
    assert _exe(f, x, y).fast_tier == "interp"          # light: the interpreter answers
    monkeypatch.setattr(tiered, "FAST_TIER_MAX_FLOPS", 2 * 64 ** 3 - 1)
    monkeypatch.setattr(native_compile, "QUICK_MAX_GENERATED_FLOPS", 5000)
    lib = plait.jit(lambda a, b: a @ b + 1.0)           # generated code: 4096 adds
    exe = _exe(lib, x, y)
    assert exe.fast_tier == "quick" and not exe.ready()
    assert exe not in [job[0] for job in tiered._BUILDER._pending]   # nothing queued yet
    first = lib(x, y)
    assert exe.tier == "quick" and exe.fast_calls == 1
    assert exe in [job[0] for job in tiered._BUILDER._pending]       # queued after it
    never_called = _exe(plait.jit(lambda a, b: a @ b - 1.0), x, y)
    assert "to be built after the first call" in never_called.as_text("tiers")
    gate.set()
    exe.wait(300)
    second = lib(x, y)
    assert exe.tier == "native"
    # waiting for a deferred build starts it (as_text(stage) and attributes wait too)
    assert type(never_called.wait(300)).__name__ == "NativeExecutable"
    assert "ready after" in never_called.as_text("tiers")
    want = x.astype(np.float64) @ y + 1.0
    for out in (first, second):
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-4)
    own = plait.jit(lambda a, b: (a @ b) * 2.0 + a * 3.0)   # 12288 generated flops
    exe = own.lower(x, y).compile().executable
    assert type(exe).__name__ == "NativeExecutable"
    np.testing.assert_allclose(np.asarray(own(x, y)), (x.astype(np.float64) @ y) * 2 + x * 3,
                               rtol=1e-5, atol=1e-4)


def test_interp_dispatches_count_loop_bodies_times_their_trips():
    """One dispatch per equation; a scan's body counts once per trip (a static
    fori_loop is a scan), so a short program that loops long is a long one to run."""
    from plait.backends.native.tiered import interp_dispatches

    def unrolled(n):
        def f(x):
            for _ in range(n):
                x = pnp.tanh(x * 1.5)
            return x
        return f
    x = np.ones(8, np.float32)
    g10 = plait.jit(unrolled(10)).trace_graph(x).graph
    g20 = plait.jit(unrolled(20)).trace_graph(x).graph
    assert interp_dispatches(g10) == len(g10.eqns) >= 20
    assert interp_dispatches(g20) == len(g20.eqns) == len(g10.eqns) + 20   # tanh, mul
    looped = plait.jit(lambda x: lax.fori_loop(0, 700, lambda i, v: pnp.tanh(v * 1.5), x))
    g = looped.trace_graph(x).graph
    (scan_eqn,) = [e for e in g.eqns if "length" in e.params]
    body = scan_eqn.params["graph"]
    body = getattr(body, "graph", body)
    assert scan_eqn.params["length"] == 700
    assert interp_dispatches(g) == len(g.eqns) + 700 * len(body.eqns)



def test_programs_whose_loops_repeat_long_start_on_the_quick_tier(gate, monkeypatch,
                                                                  tmp_path):
    """A program whose loops repeat more than FAST_TIER_MAX_DISPATCHES primitive
    applications per call (a scan body times its length) is not answered by the
    interpreter (its dispatch would outlast the build): its C is built now at -O1
    (the quick tier) and at -O3 in the background, then calls swap. A straight-line
    program of as many dispatches keeps the interp tier (the build grows with it too),
    as does a short loop. A process finding the -O3 build in the kernel cache uses it
    at once."""
    from plait.backends.native import tiered
    monkeypatch.setattr(plait.config, "cache_dir", str(tmp_path))
    x = np.linspace(-1, 1, 8).astype(np.float32)

    def looped(n):
        return plait.jit(lambda v: lax.fori_loop(0, n, lambda i, v: pnp.tanh(v * 1.5), v))

    def unrolled(n):
        def f(v):
            for _ in range(n):
                v = pnp.tanh(v * 1.5)
            return v
        return plait.jit(f)
    trips = tiered.FAST_TIER_MAX_DISPATCHES // 2 + 1     # the body is >= 2 equations
    want = x.astype(np.float64)
    for _ in range(trips):
        want = np.tanh(want * 1.5)
    long_ = looped(trips)
    exe = _exe(long_, x)
    assert exe.fast_tier == "quick"
    quick_calls = metrics.get("tier_quick_calls")
    a = long_(x)
    assert exe.tier == "quick" and exe.fast_calls == 1
    assert metrics.get("tier_quick_calls") - quick_calls == 1
    assert "quick tier" in exe.as_text("tiers") and "building" in exe.as_text("tiers")
    gate.set()
    exe.wait(300)
    b = long_(x)
    assert exe.tier == "native"
    for out in (a, b):
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)
    # the same program traced afresh finds its -O3 build cached: no quick tier
    again = looped(trips).lower(x).compile().executable
    assert type(again).__name__ == "NativeExecutable"
    np.testing.assert_array_equal(np.asarray(again(x)[0]), np.asarray(b))
    # the same decision at a lower bound, which a short unrolled program passes
    monkeypatch.setattr(tiered, "FAST_TIER_MAX_DISPATCHES", 40)
    big = unrolled(30)
    assert tiered.interp_dispatches(big.trace_graph(x).graph) > 40
    assert _exe(big, x).fast_tier == "interp"
    assert _exe(looped(10), x).fast_tier == "interp"
    assert _exe(looped(30), x).fast_tier == "quick"
