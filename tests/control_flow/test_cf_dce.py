"""DCE sees into control flow: unused carries, outputs, operands and inner equations go."""
import numpy as np

import plait
from plait import lax
from plait.lax.control_flow import cond, while_loop, scan, fori_loop

from cf_helpers import eqns_of


def _one(closed, name):
    (eqn,) = eqns_of(closed, name)
    plait.check_graph(closed.graph)
    return eqn


def test_while_unused_carry_removed():
    def f(x, junk):
        def body(c):
            i, x, junk = c
            return lax.add(i, 1), lax.mul(x, 2.0), lax.exp(junk)   # junk: dead carry
        return while_loop(lambda c: lax.lt(c[0], 5), body, (0, x, junk))[1]
    closed = plait.jit(f).lower(1.0, np.ones(3)).closed
    eqn = _one(closed, "while")
    assert len(eqn.outputs) == 2 and len(eqn.inputs) == 2
    assert [e.prim.name for e in eqn.params["body_graph"].eqns] == ["add", "mul"]
    assert float(plait.jit(f)(1.0, np.ones(3))) == 32.0


def test_while_carry_needed_by_live_carry_is_kept():
    def f(a, b):
        def body(c):
            i, a, b, dead = c
            return lax.add(i, 1), lax.add(a, b), lax.mul(b, 2.0), lax.add(dead, a)
        return while_loop(lambda c: lax.lt(c[0], 3), body, (0, a, b, a))[1]
    closed = plait.jit(f).lower(1.0, 1.0).closed
    eqn = _one(closed, "while")
    assert len(eqn.outputs) == 3          # i (cond), a (result), b (feeds a); dead removed
    assert float(plait.jit(f)(1.0, 1.0)) == 1.0 + 1 + 2 + 4


def test_scan_unused_carry_ys_and_xs_removed():
    def f(c0, xs, zs):
        def step(c, x):
            a, dead = c
            x, z = x
            return (lax.add(a, x), lax.mul(dead, z)), (lax.mul(a, 2.0), lax.sin(z))
        (a, _), (y, _) = scan(step, (c0, c0), (xs, zs))
        return a, y
    closed = plait.jit(f).lower(0.0, np.ones(4), np.ones(4)).closed
    eqn = _one(closed, "scan")
    assert eqn.params["num_carry"] == 1 and len(eqn.outputs) == 2 and len(eqn.inputs) == 2
    assert sorted(e.prim.name for e in eqn.params["graph"].eqns) == ["add", "mul"]
    a, y = plait.jit(f)(0.0, np.arange(4.0), np.ones(4))
    assert float(a) == 6.0
    np.testing.assert_array_equal(np.asarray(y), [0, 0, 2, 6])


def test_scan_entirely_dead_is_removed():
    closed = plait.jit(lambda x: (scan(lambda c, x: (lax.add(c, x), x), 0.0, x), x)[1]).lower(
        np.ones(3)).closed
    assert not eqns_of(closed, "scan")


def test_cond_unused_output_and_operand_removed():
    w = np.arange(3.0)

    def f(p, x, y):
        out = cond(p, lambda: (lax.mul(x, w), lax.exp(y)), lambda: (x, lax.log(y)))
        return out[0]
    closed = plait.jit(f).lower(True, np.ones(3), np.ones(3)).closed
    eqn = _one(closed, "cond")
    assert len(eqn.outputs) == 1 and len(eqn.inputs) == 3       # index, w, x (y is gone)
    names = [e.prim.name for b in eqn.params["branches"] for e in b.eqns]
    assert names == ["mul"]


def test_dce_inside_fori_body():
    def f(x):
        def body(i, c):
            lax.exp(c)                   # result unused: removed inside the body
            return lax.add(c, 1.0)
        return fori_loop(0, 3, body, x)
    eqn = _one(plait.jit(f).lower(1.0).closed, "scan")
    assert [e.prim.name for e in eqn.params["graph"].eqns] == ["add"]


def test_cse_inside_loop_bodies_and_branches():
    def f(p, x):
        def body(i, c):
            return lax.add(lax.sin(c), lax.sin(c))          # one sin after CSE
        y = fori_loop(0, 3, body, x)
        return cond(p, lambda: lax.mul(lax.exp(y), lax.exp(y)), lambda: y)
    closed = plait.jit(f).lower(True, 1.0).closed
    scan_eqn, cond_eqn = _one(closed, "scan"), _one(closed, "cond")
    assert [e.prim.name for e in scan_eqn.params["graph"].eqns] == ["sin", "add"]
    assert [e.prim.name for e in cond_eqn.params["branches"][1].eqns] == ["exp", "mul"]
    y = 1.0
    for _ in range(3):
        y = 2 * np.sin(y)
    np.testing.assert_allclose(float(plait.jit(f)(True, 1.0)), np.exp(y) ** 2, rtol=1e-14)
