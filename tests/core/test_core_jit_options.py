"""eval_shape / ShapeDtypeStruct / lower and trace on specs; inline jit(f)(x) reuses the
trace; jit options (static_argnames, donate_argnums, keep_unused, inline); cost and
memory analysis."""
import gc
import weakref

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import ShapeDtypeStruct as S


def f2(x, y):
    return {"a": pnp.dot(x, y), "b": (x.sum(), 2.0 * y, pnp.sin(x) > 0)}


def test_eval_shape_matches_real_output():
    x, y = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    real = plait.jit(f2)(x, y)
    for args in [(x, y), (S((3, 4), np.float32), S((4, 5), "float32"))]:
        got = plait.eval_shape(f2, *args)
        flat_g, tg = plait.tree_util.tree_flatten(got)
        flat_r, tr = plait.tree_util.tree_flatten(real)
        assert tg == tr
        for g, r in zip(flat_g, flat_r):
            assert isinstance(g, S) and g.shape == r.shape and g.dtype == r.dtype
    assert plait.eval_shape(lambda v: v * 2, 3.0) == S((), np.float64, weak_type=True)

    class Spec:            # anything with .shape and .dtype is a spec
        shape, dtype = (2, 3), np.dtype(np.int32)
    assert plait.eval_shape(lambda v: v.T + 1, Spec()) == S((3, 2), np.int32)


def test_shape_dtype_struct_api():
    s = S([2, 3], "float32")
    assert s.shape == (2, 3) and s.dtype == np.float32 and s.ndim == 2 and s.size == 6
    assert not s.weak_type and hash(s) == hash(S((2, 3), np.float32)) and len(s) == 2
    assert "ShapeDtypeStruct(shape=(2, 3), dtype=float32)" == repr(s)
    with pytest.raises(plait.errors.PlaitTypeError):
        S((-1,), np.float32)


def test_eval_shape_bad_leaf_is_clear():
    with pytest.raises(plait.errors.PlaitTypeError, match="eval_shape"):
        plait.eval_shape(lambda s: s, "abc")


def test_lower_and_trace_take_specs():
    j = plait.jit(f2)
    t = j.trace(S((3, 4), np.float32), S((4, 5), np.float32))
    assert t.out_info["a"] == S((3, 5), np.float32)
    assert t.out_info["b"][2] == S((3, 4), np.bool_)
    assert "dot_general" in str(t.graph)
    comp = j.lower(S((3, 4), np.float32), np.ones((4, 5), np.float32)).compile()
    out = comp(np.ones((3, 4), np.float32), np.ones((4, 5), np.float32))
    np.testing.assert_array_equal(np.asarray(out["a"]), np.full((3, 5), 4.0, np.float32))
    assert t.lower().as_text().startswith("graph(")


def test_inline_jit_reuses_trace_and_executable():
    def f(x):
        return pnp.sin(x) * 2.0 + x

    x = np.linspace(0, 1, 7)
    plait.metrics.reset()
    a = plait.jit(f)(x)
    b = plait.jit(f)(x)                 # a new wrapper: no new trace, no new compile
    c = plait.jit(f)(x)
    m = plait.metrics.counters()
    assert m.get("traces", 0) == 1 and m.get("compiles", 0) <= 1
    np.testing.assert_allclose(np.asarray(c), np.sin(x) * 2 + x, rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    plait.jit(f, static_argnums=())(x)  # same options: shared
    assert plait.metrics.counters().get("traces", 0) == 1
    plait.jit(f, backend="interp")(x)   # other options: its own trace
    assert plait.metrics.counters().get("traces", 0) == 2
    # a different function object with the same code is a different function (as JAX)
    g = (lambda k: (lambda x: x * k))
    plait.jit(g(2.0))(x)
    plait.jit(g(3.0))(x)
    assert plait.metrics.counters().get("traces", 0) == 4


def test_jit_cache_does_not_keep_the_function_alive():
    def h(x):
        return x + 1
    r = weakref.ref(h)
    plait.jit(h)(np.ones(3))
    del h
    gc.collect()
    assert r() is None
