"""Lazy arrays: recording, materialization, live outputs, observation points, errors."""
import gc
import pickle

import numpy as np
import pytest

import plait
from plait import lax, lazy
from plait.errors import PlaitTypeError
from plait.lazy.array import Node


def f32(x):
    return lazy.asarray(np.float32(x))


def test_design_doc_example_all_alive():
    a, b, c = f32(10.0), f32(2.0), f32(3.0)
    w = lax.add(a, b)
    x = lax.sub(w, c)
    y = lax.add(lax.add(x, x), w)
    z = lax.add(y, y)
    assert not z.is_concrete
    assert str(z) == "60.0"
    (g,) = lazy.cached_traces()
    assert str(g) == (
        "graph() {\n"
        "  a:f32[] = add 10.0:f32[] 2.0:f32[]\n"
        "  b:f32[] = sub a 3.0:f32[]\n"
        "  c:f32[] = add b b\n"
        "  d:f32[] = add c a\n"
        "  e:f32[] = add d d\n"
        "  return (a, b, d, e)\n"
        "}")
    # w, x, y were outputs of the same run: observing them runs nothing more.
    assert w.is_materialized and x.is_materialized and y.is_materialized
    with lazy.forbid_materialization():
        assert (float(w), float(x), float(y)) == (12.0, 9.0, 30.0)
    assert lazy.metrics()["materializations"] == 1


def test_design_doc_example_dead_intermediates_are_not_outputs():
    a, b, c = f32(10.0), f32(2.0), f32(3.0)

    def build():
        w = lax.add(a, b)
        x = lax.sub(w, c)
        y = lax.add(lax.add(x, x), w)
        return lax.add(y, y)
    z = build()
    assert float(z) == 60.0
    (g,) = lazy.cached_traces()
    assert len(g.graph.eqns) == 5
    assert len(g.graph.outvars) == 1


def test_dropped_intermediate_is_not_an_output_but_live_one_is():
    x = lazy.asarray(np.arange(6, dtype=np.float32))
    kept = lax.exp(x)
    dropped = lax.mul(kept, 2.0)
    out = lax.add(dropped, 1.0)
    del dropped
    np.testing.assert_allclose(np.asarray(out), np.exp(np.arange(6, dtype=np.float32)) * 2 + 1,
                               rtol=1e-6)
    (g,) = lazy.cached_traces()
    assert len(g.graph.outvars) == 2          # kept and out
    assert kept.is_concrete


def test_unreachable_live_arrays_stay_symbolic():
    x = lazy.asarray(np.ones(3, np.float32))
    a = lax.add(x, 1.0)
    b = lax.mul(x, 3.0)
    a.block_until_ready()
    assert a.is_concrete and not b.is_concrete
    np.testing.assert_array_equal(np.asarray(b), [3, 3, 3])


def test_step_materializes_every_live_array_in_one_run():
    x = lazy.asarray(np.arange(4.0))
    ys = [lax.mul(x, float(k)) for k in range(5)]
    lazy.step()
    assert all(y.is_concrete for y in ys)
    assert lazy.metrics()["materializations"] == 1
    for k, y in enumerate(ys):
        np.testing.assert_array_equal(y.tolist(), np.arange(4.0) * k)


def test_recompute_when_shared_intermediate_was_dropped():
    x = lazy.asarray(np.arange(3.0))
    a = lax.mul(x, 2.0)
    b = lax.add(a, 1.0)
    c = lax.mul(a, 3.0)
    del a
    assert b.tolist() == [1.0, 3.0, 5.0]
    assert c.tolist() == [0.0, 6.0, 12.0]


def test_materialized_values_are_reused_not_recomputed():
    x = lazy.asarray(np.arange(3.0))
    a = lax.exp(x)
    a.block_until_ready()
    b = lax.add(a, 1.0)
    b.block_until_ready()
    g = lazy.cached_traces()[-1].graph
    assert [e.prim.name for e in g.eqns] == ["broadcast_in_dim", "add"]
    assert len(g.invars) == 1                 # a is an argument


def test_observation_points():
    x = lazy.asarray(np.array([1.5, -2.0], np.float32))
    assert repr(lax.neg(x)) == "LazyArray([-1.5,  2. ], dtype=float32)"
    assert lax.neg(x).tolist() == [-1.5, 2.0]
    assert np.asarray(lax.abs(x)).dtype == np.float32
    s = lax.reduce_sum(x, (0,))
    assert s.item() == -0.5 and float(lax.reduce_sum(x, (0,))) == -0.5
    assert bool(lax.gt(s, -1.0)) is True
    i = lazy.asarray(np.int64(3))
    assert int(lax.add(i, 1)) == 4
    assert [10, 20, 30, 40, 50][lax.add(i, 1)] == 50        # __index__
    assert f"{lax.mul(s, 2.0):.2f}" == "-1.00"
    assert lazy.to_host({"a": lax.mul(x, 2.0), "b": [x]})["a"].tolist() == [3.0, -4.0]
    y = lax.mul(x, 3.0)
    assert y.block_until_ready() is y and y.is_concrete
    z = pickle.loads(pickle.dumps(lax.mul(x, 2.0)))
    assert isinstance(z, lazy.LazyArray) and z.tolist() == [3.0, -4.0]


def test_device_put_and_devices():
    (dev,) = plait.devices("lazy")
    assert dev.platform == "lazy" and dev is lazy.device
    tree = plait.device_put({"w": np.ones((2, 2), np.float32), "n": 3}, dev)
    assert isinstance(tree["w"], lazy.LazyArray) and isinstance(tree["n"], lazy.LazyArray)
    assert tree["w"].device is dev
    back = plait.device_put(lax.add(tree["w"], 1.0))             # materializes
    assert isinstance(back, plait.Array) and back.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert plait.devices() == plait.devices("cpu")
    with pytest.raises(plait.errors.PlaitValueError, match="unknown device platform"):
        plait.devices("xpu")     # tpu and gpu are PJRT platforms (tests/xla)


def test_shape_error_raised_at_the_user_line_at_op_time():
    a = lazy.asarray(np.ones(3, np.float32))
    b = lazy.asarray(np.ones(4, np.float32))
    with pytest.raises(PlaitTypeError) as info:
        lax.add(a, b)                                   # the line the error names
    assert f"test_lazy_basics.py:{info.tb.tb_lineno}" in str(info.value)
    assert lazy.metrics()["materializations"] == 0


def test_forbid_materialization():
    x = lax.exp(lazy.asarray(np.zeros(2)))
    with lazy.forbid_materialization():
        y = lax.add(x, 1.0)                             # recording is fine
        with pytest.raises(lazy.MaterializationForbiddenError, match="test_lazy_basics.py"):
            print(y)
    assert y.tolist() == [2.0, 2.0]


def test_metrics_record_the_forcing_line():
    x = lax.exp(lazy.asarray(np.zeros(2)))
    x.tolist()
    (site,) = lazy.metrics()["materialization_sites"]
    assert "test_lazy_basics.py" in site and "test_metrics_record_the_forcing_line" in site


def test_python_control_flow_on_lazy_values_materializes():
    x = lazy.asarray(np.arange(5.0))
    total = lax.reduce_sum(x, (0,))
    n = 0
    while lax.gt(total, 1.0):   # bool() materializes each time
        total = lax.mul(total, 0.5)
        n += 1
    assert n == 4 and float(total) == pytest.approx(0.625)


def test_multiple_results_primitive():
    keys = lazy.asarray(np.array([3, 1, 2]))
    vals = lazy.asarray(np.array([30.0, 10.0, 20.0]))
    k, v = lax.sort((keys, vals), num_keys=1)
    assert k.tolist() == [1, 2, 3] and v.tolist() == [10.0, 20.0, 30.0]


def test_jit_inside_lazy_code_is_one_node():
    @plait.jit
    def f(a, b):
        return lax.add(lax.mul(a, b), 1.0)
    x = lazy.asarray(np.arange(3.0))
    y = f(x, x)
    assert isinstance(y, lazy.LazyArray) and not y.is_concrete
    node, _ = y._ref
    assert node.prim.name == "jit_call"                 # one recorded node
    assert y.tolist() == [1.0, 2.0, 5.0]
    assert lazy.metrics()["compiles"] == 1


def test_lazy_value_closed_over_by_jit_is_lifted():
    x = lax.add(lazy.asarray(np.arange(3.0)), 1.0)          # symbolic, captured below
    y = plait.jit(lambda a: lax.mul(a, x))(lazy.asarray(np.full(3, 2.0)))
    assert isinstance(y, lazy.LazyArray)
    assert y.tolist() == [2.0, 4.0, 6.0]


def test_no_node_leak_over_1000_steps():
    x = lazy.asarray(np.zeros(4, np.float32))
    counts = []
    for i in range(1000):
        x = lax.add(lax.mul(x, 0.5), 1.0)
        lazy.step()
        if i % 250 == 249:
            gc.collect()
            counts.append(sum(isinstance(o, Node) for o in gc.get_objects()))
    assert max(counts) <= 2 and lazy.live_count() == 0
    np.testing.assert_allclose(np.asarray(x), 2.0, rtol=1e-6)
    assert lazy.metrics()["compiles"] <= 2


def test_pending_graph_is_cut_after_materialization():
    x = lazy.asarray(np.ones(3))
    for _ in range(50):
        x = lax.add(x, 1.0)
    x.block_until_ready()
    gc.collect()
    assert sum(isinstance(o, Node) for o in gc.get_objects()) == 0
    assert x.tolist() == [51.0] * 3


def test_numpy_operand_is_snapshotted_and_left_writable():
    buf = np.arange(3.0)
    y = lax.add(lazy.asarray(np.zeros(3)), buf)
    buf[0] = 100.0                          # the user's buffer stays writable...
    assert y.tolist() == [0.0, 1.0, 2.0]    # ...and the recorded op saw the old value


def test_asarray_conversions_and_errors():
    a = lazy.asarray([[1, 2], [3, 4]], dtype=np.float32)
    assert a.dtype == np.float32 and a.is_concrete and not a.is_materialized
    assert lazy.asarray(a) is a
    assert lazy.asarray(a, np.int32).tolist() == [[1, 2], [3, 4]]
    assert lazy.asarray(plait.device_put(np.ones(2))).tolist() == [1.0, 1.0]
    with pytest.raises(PlaitTypeError, match="object array"):
        lazy.asarray([[1, 2], [3]])
    with pytest.raises(plait.errors.ConcretizationError, match="outside jit"):
        plait.jit(lambda x: lazy.asarray(x))(np.ones(2))
