"""The xla backend's C call path (plait/backends/xla/hot.py): a jitted signature called
again runs through it, with NumPy's values; any other call (another shape, dtype, weak
type or pytree, a deleted array, disable_jit, debug_nans, a call under a trace) takes
jit's general path and behaves as it did before."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.backends.xla.array import XlaArray  # noqa: E402
from plait.backends.xla import hot  # noqa: E402
from plait.codegen.toolchain import find_toolchain  # noqa: E402
from plait.errors import PlaitError, PlaitValueError  # noqa: E402
from plait.core.aval import ShapedArray  # noqa: E402
from plait.runtime import metrics  # noqa: E402

_TC = find_toolchain()
pytestmark = pytest.mark.skipif(_TC is None or not _TC.python_include,
                                reason="no C toolchain with CPython headers")


def test_the_extension_builds():
    assert hot._module() is not None


def _hot_jit(fn, *args):
    """``jit(fn, backend="xla")`` called twice on ``args`` (the second call installs the
    C path of that signature)."""
    f = plait.jit(fn, backend="xla")
    f(*args)
    f(*args)
    assert f._shared.hot is not None
    return f


def test_hot_path_values_match_numpy():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    big = np.linspace(0, 1, 4096, dtype=np.float32)        # 16 KiB: crosses zero-copy
    f = _hot_jit(lambda a, b: pnp.tanh(a) * 2 + b, x, np.float32(1.5) * np.ones((3, 4),
                                                                           np.float32))
    b = np.full((3, 4), 1.5, np.float32)
    before = metrics.get("cache_hits")
    r = f._shared.hot((x, b))          # the C path itself answers this call
    assert type(r) is XlaArray and r.aval == ShapedArray((3, 4), np.float32)
    # equal to the executable's Python path, close to NumPy (tanh: float32 ulps)
    exe = next(iter(f._fast.values())).executable
    np.testing.assert_array_equal(np.asarray(r), exe(x, b)[0])
    np.testing.assert_allclose(np.asarray(r), np.tanh(x) * 2 + b, rtol=1e-6, atol=1e-6)
    assert metrics.get("cache_hits") == before + 1
    f._shared.hot((x, b))               # counted in C, folded in by every read
    metrics.reset()
    assert metrics.get("cache_hits") == 0
    f._shared.hot((x, b))
    f._shared.hot((x, b))
    assert metrics.counters()["cache_hits"] == 2
    g = _hot_jit(lambda a: a.sum() + a, big)
    np.testing.assert_allclose(np.asarray(g(big)), big.sum() + big, rtol=1e-5)
    # a device result fed back (the W3 loop) runs in C too, and gives NumPy's values
    h = _hot_jit(lambda a: a * 0.5 + 1, x)
    y = h(x)
    for _ in range(3):
        y = h(y)
        assert type(y) is XlaArray
    ref = x
    for _ in range(4):
        ref = ref * np.float32(0.5) + 1
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-6)


def test_caller_mutation_after_call_does_not_change_the_result():
    """Small host arguments are copied, large ones waited for: writing to the argument
    right after the call leaves the result alone."""
    for n in (4, 8192):
        x = np.arange(n, dtype=np.float32)
        f = _hot_jit(lambda a: a * 3, x)
        r = f(x)
        x[:] = -1
        np.testing.assert_array_equal(np.asarray(r), np.arange(n, dtype=np.float32) * 3)


def test_private_copies_are_reused_only_once_xla_is_done_with_them():
    """Small host arguments cross as private copies that XLA aliases; the C path reuses
    a copy only when nothing holds it any more. Calls in a row whose computation reads
    its argument to the end (a loop) each see their own argument."""
    from plait import lax

    def fn(a):
        return lax.fori_loop(0, 300, lambda i, c: c * 0.5 + pnp.tanh(a * c + a), a)

    xs = [np.linspace(-1, 1, 1024, dtype=np.float32) * (1 + i / 10) for i in range(12)]
    f = _hot_jit(fn, xs[0])
    results = [f(x) for x in xs]        # dispatched back to back, not waited for
    for r, x in zip(results, xs):
        c = x.copy()
        for _ in range(300):
            c = c * np.float32(0.5) + np.tanh(x * c + x)
        np.testing.assert_allclose(np.asarray(r), c, rtol=1e-4, atol=1e-4)
    # a strided small argument is copied through NumPy's assignment
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    g = _hot_jit(lambda a: a * 2, base[:, ::2])
    views = [(base + i)[:, ::2] for i in range(5)]
    assert not views[0].flags.c_contiguous
    outs = [g(v) for v in views]
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(np.asarray(o), (base[:, ::2] + i) * 2)


def test_signature_changes_fall_back():
    f = _hot_jit(lambda a: a + 1, np.ones(4, np.float32))
    first = f._shared.hot
    cases = [np.ones(5, np.float32), np.ones(4, np.float64), np.ones((2, 2), np.float32),
             np.arange(4, dtype=np.int32)]
    for x in cases:
        assert first((x,)) is None                  # declined: not its signature
        np.testing.assert_array_equal(np.asarray(f(x)), x + 1)
        assert np.asarray(f(x)).dtype == (x + 1).dtype
    x4 = np.ones(4, np.float32)
    np.testing.assert_array_equal(np.asarray(f(x4)), 2.0)
    f(x4)
    assert f._shared.hot is first          # the last signature called again is hot again
    # a weakly typed device array of the same shape and dtype is another signature
    w = plait.jit(lambda: pnp.ones(4, np.float32) * 2.0, backend="xla")()
    g = _hot_jit(lambda a: a * 2, np.ones((), np.float32))
    strong = g(np.ones((), np.float32))
    weak = XlaArray(strong.device_buffer(), ShapedArray((), np.float32, True))
    assert g._shared.hot((weak,)) is None and g._shared.hot((strong,)) is not None
    r = g(weak)
    assert r.weak_type and float(r) == 4.0
    exe = next(iter(g._fast.values())).executable
    weak_sig = hot.make_hot(exe._dispatch, exe.const_bufs, exe._wait,
                            [ShapedArray((), np.float32, True)], r.aval)
    assert weak_sig((np.ones((), np.float32),)) is None and weak_sig((strong,)) is None
    assert float(weak_sig((weak,))) == 4.0 and weak_sig((weak,)).weak_type
    # a pytree, keyword and extra arguments go the general way
    p = _hot_jit(lambda a: a * 2, np.ones(4, np.float32))
    assert p._shared.hot(((w,),)) is None
    out = p((w,))       # a tuple of one array: Python's tuple * 2 repeats it
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(np.asarray(out[1]), 2.0)
    np.testing.assert_array_equal(np.asarray(p(a=np.ones(4, np.float32))), 2.0)
    # a Python scalar is not a host array of the signature
    s = _hot_jit(lambda a: a * 2, np.ones((), np.float32))
    assert s._shared.hot((3.0,)) is None
    assert float(s(3.0)) == 6.0


def test_guards_disable_jit_debug_nans_and_nested_jit():
    calls = []

    def fn(a):
        calls.append(1)
        return pnp.log(a)
    f = _hot_jit(fn, np.ones(3, np.float32))
    n = len(calls)
    with plait.disable_jit():
        r = f(np.ones(3, np.float32))
    assert len(calls) == n + 1 and type(r) is not XlaArray      # ran op by op
    plait.config.update("debug_nans", True)
    try:
        assert f._shared.hot((np.ones(3, np.float32),)) is None
        with pytest.raises(PlaitError, match="NaN|nan"):
            f(-np.ones(3, np.float32))
    finally:
        plait.config.update("debug_nans", False)
    # under an outer jit the call is staged (jit_call), not run
    outer = plait.jit(lambda a: f(a) * 2, backend="xla")
    np.testing.assert_allclose(np.asarray(outer(np.full(3, 2.0, np.float32))),
                               2 * np.log(np.full(3, 2.0, np.float32)), rtol=1e-6)
    g = plait.grad(lambda a: f(a).sum())
    np.testing.assert_allclose(np.asarray(g(np.full(3, 2.0, np.float32))), 0.5, rtol=1e-6)


def test_deleted_array_raises_a_plait_error():
    f = _hot_jit(lambda a: a + 1, np.ones(4, np.float32))
    y = f(np.ones(4, np.float32))
    y.delete()
    assert f._shared.hot((y,)) is None
    with pytest.raises(PlaitValueError, match="deleted"):
        f(y)
    with pytest.raises(PlaitValueError, match="deleted"):
        y.shape


def test_a_hot_jitted_function_is_called_from_c_and_falls_back_in_full():
    """Once a signature is hot, the jitted function takes the class whose __call__ is
    the C slot: the same object (attributes, isinstance, lower), every call's values as
    NumPy's, and every call the C path declines (new shape, keywords, a tracer, an
    error in the function) still runs jit's general path."""
    from plait.api import Jitted

    def fn(a, scale=2.0):
        return a * scale + 1
    x = np.arange(4, dtype=np.float32)
    f = _hot_jit(fn, x)
    assert type(f) is not Jitted and isinstance(f, Jitted)
    assert type(f).__call__ is not Jitted.__call__ and type(f).__name__ == "Jitted"
    assert f.__name__ == "fn" and "stablehlo" in f.lower(x).as_text(stage="stablehlo")
    before = metrics.get("cache_hits")
    r = f(x)                                                 # answered in C
    assert type(r) is XlaArray and metrics.get("cache_hits") == before + 1
    np.testing.assert_array_equal(np.asarray(r), x * 2 + 1)
    np.testing.assert_array_equal(np.asarray(f(x, scale=3.0)), x * 3 + 1)    # keywords
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(f(y)), y * 2 + 1)              # new shape
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)
    g = plait.grad(lambda a: f(a).sum())                                    # a tracer
    np.testing.assert_array_equal(np.asarray(g(x)), np.full(4, 2, np.float32))
    with pytest.raises(TypeError):
        f(x, 1.0, 2.0)                                       # Python's own arity error
    # another function's jit takes the same class; its own hot path answers its calls
    h = _hot_jit(lambda a: a - 1, x)
    assert type(h) is type(f)
    np.testing.assert_array_equal(np.asarray(h(x)), x - 1)
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)


def test_block_until_ready_in_c_waits_and_returns_the_array():
    """XlaArray.block_until_ready is the extension's C method once it is loaded: it
    waits for the buffer once, marks the array ready, returns it; a deleted array's call
    is a no-op, as the Python method's was."""
    assert hot._module() is not None
    assert type(XlaArray.__dict__["block_until_ready"]).__name__ == "method_descriptor"
    big = np.linspace(0, 1, 1 << 18, dtype=np.float32)
    f = plait.jit(lambda a: pnp.tanh(a) * 2, backend="xla")
    r = f(big)
    assert r.block_until_ready() is r and r._ready is True
    assert r.block_until_ready() is r
    np.testing.assert_allclose(np.asarray(r), np.tanh(big) * 2, rtol=1e-6, atol=1e-6)
    d = f(big)
    d.delete()
    assert d.block_until_ready() is d
    with pytest.raises(TypeError):
        XlaArray.block_until_ready(np.ones(3))
