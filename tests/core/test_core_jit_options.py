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


def test_static_argnames_and_argnums_complete_each_other():
    def f(x, n, *, m=1):
        return x * (n * m)            # n, m used as Python ints

    calls = []

    def g(x, n):
        calls.append(n)
        return x * n

    by_name = plait.jit(f, static_argnames=("n", "m"))
    assert float(by_name(1.0, 2, m=3)) == 6.0 and float(by_name(1.0, n=2, m=3)) == 6.0
    by_num = plait.jit(g, static_argnums=1)
    assert float(by_num(2.0, n=3)) == 6.0 and float(by_num(2.0, 3)) == 6.0
    assert calls == [3, 3]        # the keyword and positional calls: one static key each
    assert by_num.static_argnames == ("n",)
    assert plait.jit(g, static_argnames="n").static_argnums == (1,)
    with pytest.raises(plait.errors.StaticArgumentError, match="zz"):
        plait.jit(f, static_argnames="zz")
    with pytest.raises(plait.errors.StaticArgumentError, match="static and donated"):
        plait.jit(g, static_argnums=0, donate_argnums=0)


W512 = np.random.RandomState(0).randn(512, 512) / 20


def _matvec(x):        # x is dead after the matrix-vector product (a GEMM library call)
    return pnp.tanh(pnp.dot(W512, x))


def test_donated_buffer_is_reused_and_the_array_deleted():
    from plait.core.trace import concrete_value
    xv = np.random.RandomState(1).randn(512)
    x = plait.device_put(xv)
    j = plait.jit(_matvec, donate_argnums=0)
    ma = j.lower(x).compile().memory_analysis()
    assert ma.alias_size_in_bytes == 512 * 8 == ma["alias_bytes"]
    assert plait.jit(_matvec).lower(x).compile().memory_analysis().alias_size_in_bytes == 0
    ptr = concrete_value(x).__array_interface__["data"][0]
    y = j(x)
    assert concrete_value(y).__array_interface__["data"][0] == ptr
    # summation orders differ from NumPy's BLAS: the dot products' forward error bound
    # (n eps sum |W_ij x_j|), through tanh (derivative <= 1)
    bound = 512 * np.finfo(np.float64).eps * (np.abs(W512) @ np.abs(xv))
    assert np.all(np.abs(np.asarray(y) - np.tanh(W512 @ xv)) <= 2 * bound)
    assert x.is_deleted()
    with pytest.raises(plait.errors.PlaitValueError, match="deleted.*donated"):
        x + 1
    with pytest.raises(plait.errors.PlaitValueError, match="deleted"):
        j(x)
    # a NumPy argument is never written (it is not ours); donate_argnames works too
    jn = plait.jit(lambda v, w: _matvec(v) + w, donate_argnames="v")
    xn = xv.copy()
    out = jn(v=xn, w=1.0)
    np.testing.assert_array_equal(xn, xv)
    np.testing.assert_allclose(np.asarray(out), np.tanh(W512 @ xv) + 1, rtol=1e-13)


def test_keep_unused_and_inline():
    def f(x, unused):
        return x * 2
    for keep in (False, True):
        j = plait.jit(f, keep_unused=keep)
        np.testing.assert_array_equal(np.asarray(j(np.ones(2), np.zeros(5))), 2 * np.ones(2))

    def inner(x):
        return pnp.sin(x) * 2
    nested = plait.make_graph(lambda x: plait.jit(inner)(x) + 1)(np.ones(3))
    inlined = plait.make_graph(lambda x: plait.jit(inner, inline=True)(x) + 1)(np.ones(3))
    assert [e.prim.name for e in nested.graph.eqns][0] == "jit_call"
    assert "jit_call" not in [e.prim.name for e in inlined.graph.eqns]
    assert "sin" in [e.prim.name for e in inlined.graph.eqns]
    out = plait.jit(lambda x: plait.jit(inner, inline=True)(x) + 1)(np.ones(3))
    np.testing.assert_allclose(np.asarray(out), np.sin(1) * 2 + 1, rtol=1e-15)
    g = plait.grad(lambda x: plait.jit(inner, inline=True)(x))(0.3)
    np.testing.assert_allclose(g, 2 * np.cos(0.3), rtol=1e-14)


def test_cost_analysis_counts():
    # JAX 0.10.2 (XLA CPU) reports flops 134, transcendentals 15 for this function:
    # 2*3*4*5 for the product, 15 - 1 adds for the sum, 15 tanh
    f = lambda x, y: pnp.sum(pnp.tanh(pnp.dot(x, y)))
    c = plait.jit(f).lower(S((3, 4), np.float32), S((4, 5), np.float32)).compile()
    ca = c.cost_analysis()
    assert ca["flops"] == 134 and ca["transcendentals"] == 15
    assert ca["bytes accessed"] >= (12 + 20 + 1) * 4     # reads the inputs, writes the result
    conv = lambda a, k: plait.lax.conv_general_dilated(a, k, (1, 1), "VALID")
    cc = plait.jit(conv).lower(S((2, 3, 8, 8), np.float32), S((4, 3, 3, 3), np.float32)) \
        .compile().cost_analysis()
    assert cc["flops"] == 2 * (2 * 4 * 6 * 6) * (3 * 3 * 3)


def test_memory_analysis_fields_native_and_interp():
    f = lambda a, b: pnp.sin(a) * 2 + b
    for backend in ("native", "interp"):
        ma = plait.jit(f, backend=backend).lower(np.ones(3), np.ones(3)).compile() \
            .memory_analysis()
        assert ma.argument_size_in_bytes == 48 and ma.output_size_in_bytes == 24
        assert ma.alias_size_in_bytes == 0 and ma.temp_size_in_bytes >= 0
        assert ma["peak_temp_bytes"] == ma.temp_size_in_bytes


def test_inline_jit_cache_respects_the_backend_setting():
    def f(x):
        return x * 3.0
    saved = plait.config.backend
    try:
        plait.config.backend = "interp"
        plait.jit(f)(np.ones(2))
        exe_interp = plait.jit(f).lower(np.ones(2)).compile().executable
        plait.config.backend = "native"
        exe_native = plait.jit(f).lower(np.ones(2)).compile().executable
    finally:
        plait.config.backend = saved
    assert type(exe_interp).__name__ == "InterpExecutable"
    assert type(exe_native).__name__ != "InterpExecutable"
