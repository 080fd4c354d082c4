"""Large native buffers are recycled between calls (plait/runtime/recycle.py): a freed
buffer of a size is handed out again for that size, never while any view of it lives,
and a jitted program's results are NumPy's on every call however they are held."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.runtime import recycle


@pytest.fixture
def small_pool(monkeypatch):
    """A 1 MiB threshold and a 6 MiB cap, so the tests move little memory."""
    monkeypatch.setattr(recycle, "MIN_BYTES", 1 << 20)
    monkeypatch.setattr(recycle, "MAX_FREE_BYTES", 6 << 20)
    recycle.clear()
    yield
    recycle.clear()


def test_small_buffers_are_left_to_malloc(small_pool):
    assert recycle.take((1000,), np.float32) is None


def test_a_freed_buffer_is_reused_only_when_no_view_is_left(small_pool):
    a = recycle.take((512, 1024), np.float32)            # 2 MiB
    assert a.shape == (512, 1024) and a.dtype == np.float32 and a.flags.c_contiguous
    a[:] = 7
    ptr = a.ctypes.data
    v = a[3:5]
    del a
    gc.collect()
    assert recycle.free_bytes() == 0                      # the view holds it
    b = recycle.take((512, 1024), np.float32)
    assert b.ctypes.data != ptr
    np.testing.assert_array_equal(v, 7)                   # untouched by b
    del v
    assert recycle.free_bytes() == 2 << 20
    c = recycle.take((1 << 19,), np.int32)                # same bytes, other shape/dtype
    assert c.ctypes.data == ptr and recycle.free_bytes() == 0
    del b, c


def test_the_pool_keeps_at_most_its_cap_oldest_out_first(small_pool):
    bufs = [recycle.take((1 << 20,), np.float16) for _ in range(4)]    # 2 MiB each
    ptrs = [b.ctypes.data for b in bufs]
    for i in range(4):                                     # freed in order 0, 1, 2, 3
        bufs[i] = None
    assert recycle.free_bytes() == 6 << 20                # the first freed was dropped
    again = [recycle.take((1 << 20,), np.float16) for _ in range(3)]
    assert {a.ctypes.data for a in again} == set(ptrs[1:]) and recycle.free_bytes() == 0


def test_leases_die_in_many_threads(small_pool):
    errors = []

    def work():
        try:
            for _ in range(50):
                a = recycle.take((300_000,), np.float32)
                a[:] = 1.0
                assert float(a.sum()) == 300_000.0
        except Exception as e:      # noqa: BLE001 - reported to the main thread
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and recycle.free_bytes() <= 6 << 20


def test_jitted_results_on_recycled_memory_are_numpys_on_every_call(small_pool):
    """Outputs and intermediates of 2 MiB run on recycled memory; results held across
    calls keep their values (a later call never writes into a live result)."""
    f = plait.jit(lambda x, s: pnp.tanh(x * s) + pnp.sort(x * s, axis=1)[:, ::-1],
                  backend="native")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((512, 1024)).astype(np.float32) for _ in range(3)]
    want = [np.tanh(x * 2) + np.sort(x * 2, axis=1)[:, ::-1] for x in xs]
    held = []
    for rep in range(3):
        for x, w in zip(xs, want):
            r = np.asarray(f(x, np.float32(2)))
            np.testing.assert_allclose(r, w, rtol=2e-6, atol=2e-6)
            held.append((r, w))
    for r, w in held:
        np.testing.assert_allclose(r, w, rtol=2e-6, atol=2e-6)
    bases, b = [], np.asarray(f(xs[0], np.float32(2)))
    while b is not None:                    # the result (a view of) recycled memory
        bases.append(type(b))
        b = getattr(b, "base", None)
    assert recycle._Lease in bases
