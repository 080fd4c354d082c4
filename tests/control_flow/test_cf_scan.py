"""scan and map against plain Python, eager and under jit."""
import numpy as np
import pytest

import plait
from plait import lax
from plait.errors import ControlFlowError, PlaitValueError
from plait.lax.control_flow import scan, map, cond

from cf_helpers import bcast


def _step(c, x):
    s, p = c["sum"], c["prod"]
    s2 = lax.add(s, x["a"])
    p2 = lax.mul(p, lax.tanh(x["b"]))
    return {"sum": s2, "prod": p2}, (lax.mul(s2, x["a"]), lax.reduce_sum(p2, (0,)))


def _ref(init, xs, reverse):
    s, p = init["sum"].copy(), init["prod"].copy()
    n = xs["a"].shape[0]
    y0, y1 = np.zeros_like(xs["a"]), np.zeros(n)
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        s = s + xs["a"][i]
        p = p * np.tanh(xs["b"][i])
        y0[i], y1[i] = s * xs["a"][i], p.sum()
    return {"sum": s, "prod": p}, (y0, y1)


@pytest.mark.parametrize("seed,reverse", [(0, False), (1, True), (2, False), (3, True)])
def test_scan_pytrees_random(mode, seed, reverse):
    r = np.random.default_rng(seed)
    n = int(r.integers(1, 9))
    init = {"sum": r.normal(size=3), "prod": r.normal(size=2)}
    xs = {"a": r.normal(size=(n, 3)), "b": r.normal(size=(n, 2))}
    got = mode(lambda i, x: scan(_step, i, x, reverse=reverse))(init, xs)
    want = _ref(init, xs, reverse)
    for g, w in zip(plait.tree_util.tree_leaves(got), plait.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)


def test_scan_no_xs_with_length(mode):
    def f(x):
        return scan(lambda c, _: (lax.mul(c, 2.0), c), x, None, length=5)
    c, ys = mode(f)(np.float32(1.5))
    assert float(c) == 48.0
    np.testing.assert_array_equal(np.asarray(ys), [1.5, 3, 6, 12, 24])
    assert np.asarray(ys).dtype == np.float32


def test_scan_zero_length(mode):
    c, ys = mode(lambda x, xs: scan(lambda c, x: (lax.add(c, x), lax.mul(x, 2.0)), x, xs))(
        np.ones(2), np.zeros((0, 2)))
    np.testing.assert_array_equal(np.asarray(c), [1, 1])
    assert np.asarray(ys).shape == (0, 2)


def test_map(mode):
    xs = np.random.default_rng(0).normal(size=(6, 2, 3))
    got = mode(lambda xs: map(lambda x: (lax.reduce_sum(x, (1,)), lax.exp(x)), xs))(xs)
    np.testing.assert_allclose(np.asarray(got[0]), xs.sum(axis=2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), np.exp(xs), rtol=1e-12)


def test_scan_closure_and_branch_inside(mode):
    w = np.random.default_rng(2).normal(size=4)

    def f(h0, xs, scale):
        def step(h, x):
            h = lax.tanh(lax.add(lax.mul(h, w), bcast(x, w)))
            h = cond(lax.gt(x, 0.0), lambda: lax.mul(h, bcast(scale, h)), lambda: h)
            return h, lax.reduce_sum(h, (0,))
        return scan(step, h0, xs)
    xs = np.random.default_rng(3).normal(size=7)
    h, ys = np.zeros(4), []
    for x in xs:
        h = np.tanh(h * w + x)
        h = h * 0.5 if x > 0 else h
        ys.append(h.sum())
    got = mode(f)(np.zeros(4), xs, 0.5)
    np.testing.assert_allclose(np.asarray(got[0]), h, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), ys, rtol=1e-12)


def test_scan_errors():
    with pytest.raises(PlaitValueError, match="same size"):
        scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(4)))
    with pytest.raises(PlaitValueError, match="length="):
        scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(ControlFlowError, match="pair"):
        scan(lambda c, x: c, 0.0, np.ones(3))
    with pytest.raises(ControlFlowError, match="initial carry") as e:
        plait.jit(lambda xs: scan(lambda c, x: ((c, c), x), np.float64(0.0), xs))(np.ones(3))
    assert "test_cf_scan.py" in str(e.value)
