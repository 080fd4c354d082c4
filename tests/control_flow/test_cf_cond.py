"""cond and switch against plain Python, eager and under jit."""
import numpy as np
import pytest

import plait
from plait import lax
from plait.errors import ControlFlowError, PlaitTypeError
from plait.lax.control_flow import cond, switch, fori_loop, while_loop

rng = np.random.default_rng(0)


def _tf(d, y):
    return {"a": lax.mul(d["a"], y), "b": lax.sin(d["b"])}, lax.reduce_sum(d["a"], (0,))


def _ff(d, y):
    return {"a": lax.sub(d["a"], y), "b": lax.cos(d["b"])}, lax.reduce_max(d["a"], (0,))


def _ref(p, d, y):
    if p:
        return {"a": d["a"] * y, "b": np.sin(d["b"])}, d["a"].sum()
    return {"a": d["a"] - y, "b": np.cos(d["b"])}, d["a"].max()


@pytest.mark.parametrize("seed", range(4))
def test_cond_pytrees_random(mode, seed):
    r = np.random.default_rng(seed)
    d = {"a": r.normal(size=5).astype(np.float32), "b": r.normal(size=(2, 3))}
    y = r.normal(size=5).astype(np.float32)
    f = mode(lambda p, d, y: cond(p, _tf, _ff, d, y))
    for p in (True, False, np.bool_(True)):
        got, want = f(p, d, y), _ref(p, d, y)
        np.testing.assert_allclose(np.asarray(got[0]["a"]), want[0]["a"], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got[0]["b"]), want[0]["b"], rtol=1e-12)
        np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-6)
        assert np.asarray(got[0]["a"]).dtype == np.float32


def test_cond_numeric_predicate(mode):
    f = mode(lambda p, x: cond(p, lambda v: lax.neg(v), lambda v: v, x))
    x = np.arange(3.0)
    np.testing.assert_array_equal(np.asarray(f(np.float32(2.5), x)), -x)
    np.testing.assert_array_equal(np.asarray(f(np.int32(0), x)), x)


def test_concrete_pred_eager_runs_only_chosen_branch():
    calls = []

    def bad(x):
        calls.append("bad")
        raise AssertionError("the other branch must not run")

    assert np.asarray(cond(True, lambda x: lax.add(x, 1.0), bad, 1.0)) == 2.0
    assert np.asarray(switch(5, [bad, lambda x: lax.neg(x)], 3.0)) == -3.0   # clamped
    assert calls == []


def test_under_jit_both_branches_staged_once():
    calls = []

    def t(x):
        calls.append("t")
        return lax.add(x, 1.0)

    def f(x):
        calls.append("f")
        return lax.sub(x, 1.0)
    g = plait.jit(lambda p, x: cond(p, t, f, x))
    assert float(np.asarray(g(True, 1.0))) == 2.0
    assert float(np.asarray(g(False, 1.0))) == 0.0
    assert sorted(calls) == ["f", "t"]          # traced once, then cached
    text = g.lower(True, 1.0).as_text()
    assert "cond[branches=(" in text and "add" in text and "sub" in text


@pytest.mark.parametrize("seed", range(3))
def test_switch_random(mode, seed):
    r = np.random.default_rng(seed)
    x = r.normal(size=(3, 2))
    branches = [lambda v: lax.exp(v), lambda v: lax.mul(v, v), lambda v: lax.neg(v),
                lambda v: lax.tanh(v)]
    refs = [np.exp, lambda v: v * v, np.negative, np.tanh]
    f = mode(lambda i, v: switch(i, branches, v))
    for i in (-3, 0, 1, 2, 3, 7):
        want = refs[int(np.clip(i, 0, 3))](x)
        np.testing.assert_allclose(np.asarray(f(np.int32(i), x)), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(f(i, x)), want, rtol=1e-12)


def test_closure_over_outer_values(mode):
    w = rng.normal(size=4)

    def outer(x, s):
        # branches close over a concrete array (w) and over the jit argument s
        return cond(lax.gt(lax.reduce_sum(x, (0,)), 0.0),
                    lambda: lax.mul(x, w), lambda: lax.add(x, lax.broadcast_in_dim(s, (4,), ())))
    f = mode(outer)
    x = np.abs(rng.normal(size=4))
    np.testing.assert_allclose(np.asarray(f(x, 2.0)), x * w)
    np.testing.assert_allclose(np.asarray(f(-x, 2.0)), -x + 2.0)


def test_shared_closure_is_one_operand():
    w = rng.normal(size=4)
    g = plait.jit(lambda p, x: cond(p, lambda: lax.mul(x, w), lambda: lax.add(x, w))).lower(
        True, np.ones(4)).closed
    (eqn,) = [e for e in g.graph.eqns if e.prim.name == "cond"]
    assert len(eqn.inputs) == 3      # index, w, x: w is shared by both branches
    plait.check_graph(g.graph)


def test_weak_branch_output_takes_other_branch_dtype():
    # (eagerly a concrete predicate just calls the branch, so this is about staging)
    x = np.ones(3, np.float32)
    f = plait.jit(lambda p, x: cond(p, lambda v: lax.reduce_sum(v, (0,)), lambda v: 0.0, x))
    for p in (True, False):
        out = f(p, x)
        assert np.asarray(out).dtype == np.float32 and not out.weak_type


def test_loops_inside_branches(mode):
    def f(p, x):
        return cond(p,
                    lambda v: fori_loop(0, 4, lambda i, c: lax.add(c, v), v),
                    lambda v: while_loop(lambda c: lax.lt(lax.reduce_sum(c, (0,)), 100.0),
                                         lambda c: lax.mul(c, 2.0), v), x)
    f = mode(f)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(np.asarray(f(True, x)), 5 * x)
    ref = x.copy()
    while ref.sum() < 100:
        ref = ref * 2
    np.testing.assert_allclose(np.asarray(f(False, x)), ref)


def test_mismatched_branch_types_error():
    def f(p, x):
        return cond(p, lambda v: (v, lax.reduce_sum(v, (0,))),
                    lambda v: (v, lax.convert_element_type(v, np.float32)), x)   # this line
    with pytest.raises(ControlFlowError) as e:
        plait.jit(f)(True, np.ones(3))
    msg = str(e.value)
    assert "false_fun: (f64[3], f32[3])" in msg and "true_fun: (f64[3], f64[])" in msg
    assert "value[1]" in msg and "test_cf_cond.py" in msg


def test_mismatched_branch_structure_error():
    with pytest.raises(ControlFlowError, match="different pytree structures") as e:
        plait.jit(lambda p, x: switch(p, [lambda v: (v, v), lambda v: [v, v]], x))(1, 1.0)
    assert "branches[0]: (f64[]~, f64[]~)" in str(e.value)
    assert "branches[1]: [f64[]~, f64[]~]" in str(e.value)


def test_bad_predicate_errors():
    with pytest.raises(PlaitTypeError, match="must be a scalar"):
        plait.jit(lambda p: cond(p, lambda: 1.0, lambda: 2.0))(np.array([True, False]))
    with pytest.raises(PlaitTypeError, match="integer scalar"):
        plait.jit(lambda i: switch(i, [lambda: 1.0, lambda: 2.0]))(1.5)
