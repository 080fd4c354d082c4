"""The shared slot/lifetime planner (``plait.backends.liveness``) and the native
executable's named plan steps (``plait.backends.native.plan``)."""
import dataclasses

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.backends.liveness import Slots, lifetimes, peak_bytes
from plait.core.graph import Literal


# --- the planner on hand-written step sequences (no compiler) --------------------------
def test_lifetimes_free_after_last_read_and_dead_values_where_made():
    # step 0: a -> b, c (c never read); step 1: b -> d; step 2: a, d -> e (kept)
    reads = [["a"], ["b"], ["a", "d"]]
    writes = [["b", "c"], ["d"], ["e"]]
    life = lifetimes(reads, writes, keep={"e"})
    assert dict(life.last_use) == {"a": 2, "b": 1, "d": 2}
    assert [sorted(f) for f in life.frees] == [["c"], ["b"], ["a", "d"]]
    # kept values are never freed, even when read
    assert lifetimes(reads, writes, keep={"a", "c", "e"}).frees == ((), ("b",), ("d",))


def test_peak_bytes_counts_scratch_and_forwarded_buffers_once():
    size = {"b": 100, "c": 10, "d": 1000, "e": 0}.get
    reads = [["a"], ["b"], ["a", "d"]]
    writes = [["b", "c"], ["d"], ["e"]]
    frees = lifetimes(reads, writes, keep={"e"}).frees
    # step 0 holds b + c (+5 scratch); step 1: b and d (c freed after step 0)
    assert peak_bytes(writes, frees, lambda k: size(k) or 0) == 1100
    assert peak_bytes(writes, frees, lambda k: size(k) or 0, [5000, 0, 0]) == 5110
    # a forwarding step names b again as f: b stays alive until f dies too
    reads = [["a"], ["b"], ["f"]]
    writes = [["b"], ["f"], ["g"]]
    frees = lifetimes(reads, writes, keep={"g"}).frees
    sizes = {"b": 100, "g": 7}
    got = peak_bytes(writes, frees, lambda k: sizes.get(k, 0), None, [None, {"f": "b"}, None])
    assert got == 107                 # b (through f) still held while g is made
    assert peak_bytes(writes, frees, lambda k: sizes.get(k, 0)) == 100    # b died first


def test_slots_number_constants_arguments_then_the_rest():
    c, x, y = object(), object(), object()
    slots = Slots([c], [np.ones(2)], [x])
    assert slots.read(c) == 0 and slots.read(x) == 1 and slots.is_fixed(0)
    lit = Literal(np.float32(2.0))
    s_lit = slots.read(lit)
    s_y = slots.write(y)
    assert (s_lit, s_y) == (2, 3) and slots.is_fixed(s_lit) and not slots.is_fixed(s_y)
    env = slots.environment()
    assert env[1] is None and env[3] is None and float(env[2]) == 2.0
    np.testing.assert_array_equal(env[0], np.ones(2))
    # one literal object read by two equations: two slots, never a slot given twice
    assert slots.read(lit) == 4 and slots.write(object()) == 5 and len(slots) == 6


# --- the native plan ------------------------------------------------------------------
def test_native_plan_steps_are_named_frozen_records():
    from plait.codegen.toolchain import find_toolchain
    if find_toolchain() is None:
        pytest.skip("no C compiler: the native backend is unavailable")
    from plait.backends.native.plan import HostCall, KernelCall, RuleCall

    def f(a, x):
        s = lax.sort(x * 2.0, dimension=0)          # a host step between two kernels
        return pnp.exp(s), lax.linalg.cholesky(a)   # a kernel and a LAPACK rule call
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 3))
    a, x = m @ m.T + 3 * np.eye(3), rng.standard_normal(16)
    exe = plait.jit(f, backend="native").lower(a, x).compile().executable
    kinds = [type(st) for st in exe.plan.steps]
    assert kinds.count(HostCall) == 1 and RuleCall in kinds and KernelCall in kinds
    for st in exe.plan.steps:
        assert dataclasses.is_dataclass(st)
        with pytest.raises(dataclasses.FrozenInstanceError):
            st.frees = ()
    host = kinds.index(HostCall)
    assert exe.plan.steps[host].what == "sort" and exe.plan.steps[host].forwards is False
    # every intermediate is freed exactly once; outputs and constants never are
    freed = [s for st in exe.plan.steps for s in st.frees]
    assert len(freed) == len(set(freed)) and not set(freed) & set(exe.plan.outputs)
    e, lo = exe(a, x)
    np.testing.assert_allclose(e, np.exp(np.sort(2 * x)), rtol=1e-12)
    np.testing.assert_allclose(lo, np.linalg.cholesky(a), rtol=1e-12)
