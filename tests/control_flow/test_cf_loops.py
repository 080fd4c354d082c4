"""while_loop and fori_loop against plain Python, eager and under jit."""
import numpy as np
import pytest

import plait
from plait import lax
from plait.errors import ControlFlowError
from plait.lax.control_flow import cond, switch, while_loop, fori_loop

from cf_helpers import count_eqns, eqns_of


@pytest.mark.parametrize("seed", range(4))
def test_while_pytree_carry_random(mode, seed):
    r = np.random.default_rng(seed)
    x0 = r.uniform(0.5, 2.0, size=4)
    limit = float(r.uniform(10, 1000))

    def f(x0, limit):
        def body(c):
            x = c["x"][0]
            return {"n": lax.add(c["n"], 1),
                    "x": (lax.mul(x, 1.5), lax.reduce_sum(lax.add(x, 1.0), (0,)))}

        def cnd(c):
            return lax.lt(lax.reduce_sum(c["x"][0], (0,)), limit)
        return while_loop(cnd, body, {"n": np.int32(0), "x": (x0, np.float64(0.0))})

    n, x, last = 0, x0.copy(), 0.0
    while x.sum() < limit:
        n, x, last = n + 1, x * 1.5, (x + 1.0).sum()
    got = mode(f)(x0, limit)
    assert int(got["n"]) == n and np.asarray(got["n"]).dtype == np.int32
    np.testing.assert_allclose(np.asarray(got["x"][0]), x, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got["x"][1]), last, rtol=1e-12)


def test_while_zero_iterations(mode):
    f = mode(lambda x: while_loop(lambda c: lax.gt(c, 10.0), lambda c: lax.add(c, 1.0), x))
    assert float(f(3.0)) == 3.0


@pytest.mark.parametrize("seed", range(3))
def test_fori_static_and_traced_bounds(mode, seed):
    r = np.random.default_rng(seed)
    a = r.normal(size=3)
    lo, hi = sorted(int(v) for v in r.integers(-3, 12, size=2))

    def body(i, c):
        x, s = c
        fi = lax.convert_element_type(i, np.float64)
        return (lax.add(lax.mul(x, 0.9), lax.broadcast_in_dim(fi, (3,), ())),
                lax.add(s, lax.convert_element_type(i, np.int64)))

    def ref():
        x, s = a.copy(), 0
        for i in range(lo, hi):
            x, s = x * 0.9 + i, s + i
        return x, s
    want = ref()
    static = mode(lambda a: fori_loop(lo, hi, body, (a, 0)))
    traced = mode(lambda a, lo, hi: fori_loop(lo, hi, body, (a, 0)))
    for got in (static(a), traced(a, lo, hi), traced(a, np.int32(lo), np.int32(hi))):
        np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-12)
        assert int(got[1]) == want[1]


def test_fori_lowering_static_is_scan_traced_is_while():
    body = lambda i, c: lax.add(c, 1.0)   # noqa: E731
    assert eqns_of(plait.jit(lambda x: fori_loop(0, 7, body, x)).lower(1.0).closed, "scan")
    assert eqns_of(plait.jit(lambda x, n: fori_loop(0, n, body, x)).lower(1.0, 7).closed,
                   "while")


def test_fori_1000_steps_is_not_unrolled():
    def f(x):
        return fori_loop(0, 1000, lambda i, c: lax.add(lax.mul(c, 0.5), 1.0), x)
    g10 = plait.jit(lambda x: fori_loop(0, 10, lambda i, c: lax.add(lax.mul(c, 0.5), 1.0), x))
    big = plait.jit(f).lower(np.ones(3)).closed
    small = g10.lower(np.ones(3)).closed
    assert count_eqns(big.graph) == count_eqns(small.graph) <= 6
    (eqn,) = eqns_of(big, "scan")
    assert eqn.params["length"] == 1000
    x = np.ones(3)
    for _ in range(1000):
        x = x * 0.5 + 1.0
    np.testing.assert_allclose(np.asarray(plait.jit(f)(np.ones(3))), x)


def test_branches_inside_loops(mode):
    def f(x):
        def body(i, c):
            return switch(lax.rem(i, 3), [lambda v: lax.add(v, 1.0), lambda v: lax.mul(v, 2.0),
                                          lambda v: cond(lax.gt(v, 50.0), lambda: lax.sub(v, 50.0),
                                                         lambda: v)], c)
        return fori_loop(0, 20, body, x)
    x, want = 1.5, 1.5
    for i in range(20):
        want = [want + 1.0, want * 2.0, want - 50.0 if want > 50 else want][i % 3]
    np.testing.assert_allclose(float(mode(f)(x)), want)


def test_nested_loops(mode):
    def f(n):
        return fori_loop(0, n, lambda i, acc: fori_loop(0, i, lambda j, a: lax.add(a, lax.mul(i, j)),
                                                        acc), 0)
    assert int(mode(f)(7)) == sum(i * j for i in range(7) for j in range(i))


def test_newton_sqrt(mode):
    def newton_sqrt(a):
        def body(x):
            return lax.mul(0.5, lax.add(x, lax.div(a, x)))

        def not_converged(x):
            res = lax.abs(lax.sub(lax.mul(x, x), a))
            return lax.gt(lax.reduce_max(lax.div(res, a), (0,)), 1e-12)
        return while_loop(not_converged, body, a)
    a = np.random.default_rng(1).uniform(0.1, 1e4, size=10)
    np.testing.assert_allclose(np.asarray(mode(newton_sqrt)(a)), np.sqrt(a), rtol=1e-12)


def test_weak_initial_carry_is_promoted(mode):
    # init 0.0 is a weak f64; the body returns f32, so the carry becomes f32 (as in JAX)
    f = mode(lambda x: while_loop(lambda c: lax.lt(c, x),
                                  lambda c: lax.convert_element_type(lax.add(c, 3.0), np.float32),
                                  0.0))
    out = f(np.float32(5.0))
    assert np.asarray(out).dtype == np.float32 and float(out) == 6.0


def test_carry_type_mismatch_error():
    with pytest.raises(ControlFlowError) as e:
        plait.jit(lambda x: while_loop(lambda c: lax.lt(c[0], 5.0),
                                       lambda c: (lax.convert_element_type(c[0], np.float32), c[1]),
                                       (x, x)))(np.float64(1.0))
    msg = str(e.value)
    assert "the initial carry: (f64[], f64[])" in msg
    assert "the body's result: (f32[], f64[])" in msg and "test_cf_loops.py" in msg


def test_cond_fun_must_return_bool_scalar():
    with pytest.raises(ControlFlowError, match="cond_fun must return a bool scalar"):
        while_loop(lambda c: lax.lt(c, np.ones(2)), lambda c: c, np.zeros(2))
