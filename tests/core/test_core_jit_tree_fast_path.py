"""jit's fast path for pytree arguments (``api._tree_key``): a call whose arguments are
tuples, lists, dicts and None around arrays, of a signature seen before, is answered
without the general path's flattening, with the values NumPy gives; anything the fast
key does not cover (a scalar leaf, a namedtuple, another shape or structure) goes the
general way and behaves as before. On the xla backend, the executable's C path
(``hot.make_hot`` with several outputs) answers those calls."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.api import Jitted
from plait.errors import PlaitValueError
from plait.runtime import metrics

BACKENDS = ["interp", "native", "xla"]


def _need(backend: str) -> None:
    if backend == "xla":
        pytest.importorskip("jaxlib")


def _step(params, x):
    """An MLP-like step: a dict of lists of (W, b) tuples and a None leaf."""
    h = x
    for w, b in params["layers"]:
        h = pnp.tanh(h @ w + b)
    return {"out": h * params["scale"], "mean": [h.mean(axis=0), None]}


def _numpy_step(params, x):
    h = x
    for w, b in params["layers"]:
        h = np.tanh(h @ w + b)
    return h * params["scale"], h.mean(axis=0)


def _params(rng, sizes=(5, 4, 3)):
    return {"layers": [(rng.standard_normal((m, n)).astype(np.float32),
                        rng.standard_normal(n).astype(np.float32))
                       for m, n in zip(sizes[:-1], sizes[1:])],
            "scale": np.float32(1.5) * np.ones(sizes[-1], np.float32), "unused": None}


@pytest.fixture
def general_calls(monkeypatch):
    """How many calls flattened their arguments through jit's general path."""
    calls = []
    original = Jitted._signature

    def counted(self, args, kwargs, *rest):
        calls.append(1)
        return original(self, args, kwargs, *rest)
    monkeypatch.setattr(Jitted, "_signature", counted)
    return calls


@pytest.mark.parametrize("backend", BACKENDS)
def test_pytree_calls_of_a_seen_signature_take_the_fast_path(backend, general_calls):
    _need(backend)
    rng = np.random.default_rng(0)
    f = plait.jit(_step, backend=backend)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    f(_params(rng), x)
    assert len(general_calls) == 1
    hits = metrics.get("cache_hits")
    for _ in range(3):              # new arrays of the same shapes each step, as training does
        p = _params(rng)
        x = rng.standard_normal((6, 5)).astype(np.float32)
        out = f(p, x)
        want_out, want_mean = _numpy_step(p, x)
        np.testing.assert_allclose(np.asarray(out["out"]), want_out, rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(np.asarray(out["mean"][0]), want_mean, rtol=2e-6,
                                   atol=2e-6)
        assert out["mean"][1] is None and set(out) == {"out", "mean"}
    assert len(general_calls) == 1          # none of them flattened the general way
    assert metrics.get("cache_hits") == hits + 3    # each counted once


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_key_order_and_results_fed_back(backend, general_calls):
    """Dicts match by sorted keys (tree_flatten's order), whatever order they were built
    in; the results of a call (device arrays on xla) fed back in a pytree run too."""
    _need(backend)
    f = plait.jit(lambda d: {"a": d["a"] * 2 + d["b"], "b": d["b"] - d["a"]}, backend=backend)
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    f({"a": a, "b": b})
    out = f({"b": b, "a": a})
    np.testing.assert_array_equal(np.asarray(out["a"]), a * 2 + b)
    np.testing.assert_array_equal(np.asarray(out["b"]), b - a)
    ref = {"a": a * 2 + b, "b": b - a}
    for _ in range(3):
        out = f(out)
        ref = {"a": ref["a"] * 2 + ref["b"], "b": ref["b"] - ref["a"]}
    np.testing.assert_array_equal(np.asarray(out["a"]), ref["a"])
    np.testing.assert_array_equal(np.asarray(out["b"]), ref["b"])
    # the first call, the plait-array (device) signature's first call: two general calls
    assert len(general_calls) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_other_structures_and_leaves_go_the_general_way(backend, general_calls):
    _need(backend)
    f = plait.jit(lambda t: t[0] * 2 + t[1], backend=backend)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(f((x, x))), x * 3)
    np.testing.assert_array_equal(np.asarray(f([x, x])), x * 3)       # a list: another key
    np.testing.assert_array_equal(np.asarray(f((x, 1.0))), x * 2 + 1)  # a scalar leaf
    np.testing.assert_array_equal(np.asarray(f((x, 1.0))), x * 2 + 1)
    y = np.arange(4, dtype=np.float32)                                  # another shape
    np.testing.assert_array_equal(np.asarray(f((y, y))), y * 3)
    Pair = namedtuple("Pair", "a b")
    np.testing.assert_array_equal(np.asarray(f(Pair(x, x))), x * 3)    # a namedtuple
    np.testing.assert_array_equal(np.asarray(f(Pair(x, x))), x * 3)
    assert len(general_calls) == 7          # the scalar and namedtuple calls every time
    before = len(general_calls)
    for t in ((x, x), [x, x], (y, y)):      # the covered signatures, seen before
        f(t)
    assert len(general_calls) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_mutating_a_host_leaf_after_the_call_leaves_the_result(backend):
    """Host leaves small enough are copied, larger ones waited for (xla), or read during
    the call (native): a write right after the call does not reach the result."""
    _need(backend)
    f = plait.jit(lambda t: (t[0] * 3, t[1] + 1), backend=backend)
    for n in (4, 8192):
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        f((x, y))
        r = f((x, y))
        x[:] = -1
        y[:] = -1
        np.testing.assert_array_equal(np.asarray(r[0]), np.arange(n, dtype=np.float32) * 3)
        np.testing.assert_array_equal(np.asarray(r[1]), 2.0)


def test_xla_pytree_calls_run_through_the_executables_c_path():
    pytest.importorskip("jaxlib")
    from plait.backends.xla.array import XlaArray
    from plait.backends.xla.compile import XlaExecutable
    from plait.codegen.toolchain import find_toolchain
    tc = find_toolchain()
    if tc is None or not tc.python_include:
        # an optional runtime: without a C compiler and CPython's headers the xla
        # backend keeps its Python call path (tested above); CI installs both
        pytest.skip("the xla C call path needs a C compiler with CPython headers")
    f = plait.jit(lambda t: (t[0] @ t[1], t[1].sum()), backend="xla")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    f((a, b))
    f((a, b))
    exe = next(iter(f._fast.values())).executable
    assert isinstance(exe, XlaExecutable) and exe._last[2]
    outs = exe._last[2]((a, b))             # the C path itself: the list of results
    assert [type(o) for o in outs] == [XlaArray, XlaArray]
    np.testing.assert_array_equal(np.asarray(outs[0]), a @ b)
    assert float(outs[1]) == b.sum() and outs[1].aval.shape == ()
    assert exe._last[2]((a, a)) is None     # another signature: declined, the Python path runs
    np.testing.assert_array_equal(np.asarray(exe.call_arrays((a, b), exe._last[0])[0]), a @ b)
    g = plait.jit(lambda t: (t[0] + t[1], t[0] * 2), backend="xla")
    x = np.ones(3, np.float32)
    y = g((x, x))[0]                    # a device array, fed back: its own signature
    g((y, x))
    np.testing.assert_array_equal(np.asarray(g((y, x))[0]), 3.0)
    y.delete()
    with pytest.raises(PlaitValueError, match="deleted"):
        g((y, x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_calling_interleaved_signatures_get_their_own_values(backend):
    """Threads call one function with pytrees of three signatures, interleaved: each
    call answers with its own arguments' values, shapes and structure."""
    import threading
    _need(backend)
    f = plait.jit(lambda p, x: ({"a": p["w"] * x, "b": p["w"].sum() + x}, x - 1),
                  backend=backend)
    errors = []

    def work(tid):
        rng = np.random.default_rng(tid)
        for it in range(100):
            n = 3 + (it + tid) % 3
            w = rng.standard_normal(n).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            out, y = f({"w": w}, x)
            ok = (out["a"].shape == (n,) and np.allclose(np.asarray(out["a"]), w * x)
                  # a float32 sum in any order: within a few ulps of its terms' size
                  and np.allclose(np.asarray(out["b"]), w.astype(np.float64).sum() + x,
                                  rtol=0, atol=4e-7 * (np.abs(w).sum() + np.abs(x)))
                  and np.allclose(np.asarray(y), x - 1))
            if not ok:
                errors.append((tid, it))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
