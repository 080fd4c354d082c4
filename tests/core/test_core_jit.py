"""jit: tracing once per signature, the cache key, static arguments, nesting, logging."""
import logging

import numpy as np
import pytest

import plait
from plait import lax
from plait.errors import StaticArgumentError, PlaitTypeError


def _counting(f):
    calls = []

    def g(*a, **k):
        calls.append(1)
        return f(*a, **k)
    g.__name__ = f.__name__
    return g, calls


def affine(x, y):
    return lax.tanh(lax.add(lax.mul(x, 2.0), y))


def test_values_match_numpy_and_eager():
    x, y = np.linspace(-1, 1, 7), np.ones(7)
    want = np.tanh(2 * x + y)
    np.testing.assert_allclose(np.asarray(plait.jit(affine)(x, y)), want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(affine(x, y)), want, rtol=1e-15)


def test_traces_once_per_signature():
    f, calls = _counting(affine)
    jf = plait.jit(f)
    x = np.ones(3)
    for _ in range(3):
        jf(x, x)
    assert len(calls) == 1
    jf(np.ones(4), np.ones(4))            # new shape: one more trace
    assert len(calls) == 2
    jf(np.ones(4, np.float32), np.ones(4, np.float32))   # new dtype
    assert len(calls) == 3
    jf(np.ones(4), np.ones(4))
    assert len(calls) == 3


def test_weak_type_is_part_of_the_key():
    f, calls = _counting(lambda x: lax.mul(x, 2.0))
    jf = plait.jit(f)
    out = jf(3.0)                         # Python float: weak f64
    assert out.weak_type and out.dtype == np.float64
    jf(np.float64(3.0))                   # NumPy scalar: strong f64 -> new trace
    assert len(calls) == 2


def test_static_argnums_and_names():
    def f(x, n, *, mode="a"):
        for _ in range(n):
            x = lax.add(x, 1.0)
        return lax.neg(x) if mode == "neg" else x
    g, calls = _counting(f)
    jf = plait.jit(g, static_argnums=1, static_argnames="mode")
    assert float(jf(np.float64(0), 3)) == 3.0
    assert float(jf(np.float64(0), 3, mode="neg")) == -3.0
    assert float(jf(np.float64(0), 2)) == 2.0
    assert float(jf(np.float64(1), 2)) == 3.0
    assert len(calls) == 3


def test_unhashable_static_argument_is_clear():
    jf = plait.jit(lambda x, shape: lax.reshape(x, shape), static_argnums=1)
    with pytest.raises(StaticArgumentError, match="unhashable type list.*tuple") as e:
        jf(np.ones(4), [2, 2])
    assert "test_core_jit.py" in str(e.value)


def test_non_array_argument_is_clear():
    jf = plait.jit(lambda x, s: x)
    with pytest.raises(PlaitTypeError, match="argument s of .* is a str.*static"):
        jf(np.ones(2), "hello")


def test_pytree_arguments_and_outputs():
    def f(params, x):
        return {"out": lax.add(lax.mul(params["w"], x), params["b"]), "n": (x,)}
    p = {"w": np.full(3, 2.0), "b": np.ones(3)}
    out = plait.jit(f)(p, np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out["out"]), [1, 3, 5])
    np.testing.assert_array_equal(np.asarray(out["n"][0]), [0, 1, 2])


def test_decorator_forms_and_methods():
    @plait.jit
    def f(x):
        return lax.neg(x)

    @plait.jit(static_argnums=(1,))
    def g(x, k):
        return lax.mul(x, float(k))

    class Model:
        scale = 3.0

        @plait.jit
        def apply(self, x):
            return lax.mul(x, self.scale)

    assert float(f(np.float64(2))) == -2.0
    assert float(g(np.float64(2), 5)) == 10.0
    assert float(Model().apply(np.float64(2))) == 6.0


def test_nested_jit_is_a_call_of_a_subgraph():
    inner = plait.jit(affine)

    def outer(x):
        return lax.mul(inner(x, x), 3.0)
    text = str(plait.make_graph(outer)(np.ones(3)))
    assert "jit_call[" in text and "tanh" in text
    optimized = plait.jit(outer).lower(np.ones(3)).as_text()   # the inline pass flattens it
    assert "jit_call" not in optimized and "tanh" in optimized
    np.testing.assert_allclose(np.asarray(plait.jit(outer)(np.ones(3))), 3 * np.tanh(3.0) * np.ones(3))


def test_closed_over_arrays_become_constants():
    w = plait.numpy.asarray(np.arange(3.0)) if hasattr(plait.numpy, "asarray") else np.arange(3.0)
    jf = plait.jit(lambda x: lax.mul(x, w))
    np.testing.assert_array_equal(np.asarray(jf(np.full(3, 2.0))), [0, 2, 4])
    assert "graph([" in jf.lower(np.full(3, 2.0)).as_text()


def pair(x, y):
    return lax.add(x, 1.0), lax.neg(y)


def test_compile_log_states_the_reason(caplog):
    jf = plait.jit(pair)
    plait.config.log_compiles = True
    try:
        with caplog.at_level(logging.WARNING, logger="plait"):
            jf(np.ones(3), np.ones(3))
            jf(np.ones(3), np.ones(3))
            jf(np.ones(3), np.ones(5))
    finally:
        plait.config.log_compiles = False
    msgs = [r.getMessage() for r in caplog.records if "tracing" in r.getMessage()]
    assert len(msgs) == 2
    assert "first call" in msgs[0]
    assert "argument y changed from f64[3] to f64[5]" in msgs[1]


def test_metrics_count_traces_and_hits():
    plait.metrics.reset()
    jf = plait.jit(lambda x: lax.exp(x))
    for _ in range(4):
        jf(np.ones(2))
    c = plait.metrics.counters()
    assert c["traces"] == 1 and c["compiles"] == 1 and c["cache_hits"] == 3


def test_lower_compile_as_text():
    lowered = plait.jit(affine).lower(np.ones(2), np.ones(2))
    assert lowered.as_text().startswith("graph(a:f64[2], b:f64[2])")
    compiled = lowered.compile()
    np.testing.assert_allclose(np.asarray(compiled(np.zeros(2), np.zeros(2))), [0, 0])
    assert "tanh" in compiled.as_text()


def test_make_graph_and_check_graph():
    g = plait.make_graph(affine)(np.ones(2), np.ones(2))
    plait.check_graph(g.graph)
    assert [e.prim.name for e in g.graph.eqns] == ["broadcast_in_dim", "mul", "add", "tanh"]


def test_cse_and_dce_run_before_compile():
    def f(x):
        a = lax.exp(x)
        b = lax.exp(x)          # duplicate: CSE
        lax.sin(x)              # dead: DCE
        return lax.add(a, b)
    names = [e.prim.name for e in plait.jit(f).trace_graph(np.ones(2)).graph.eqns]
    assert names == ["exp", "add"]
