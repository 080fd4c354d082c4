"""Tile -> Stripe lowering of shared sub-expressions and of window reductions: an
elementwise expression is a DAG (threefry's rounds reuse each value several times), so
each distinct sub-expression becomes one statement, and a window reduction loops along
the output's contiguous dimension innermost (a max pool's channels), not over its few
window elements; values against NumPy through the Stripe interpreter and generated C."""
import numpy as np

from plait.stripe import lower, run, verify
from plait.stripe.ir import Intrinsic
from plait.tile import TileBuilder, variables
from plait.tile.builder import call, constant
from plait.tile.ir import Input
from sp_helpers import run_c


def _doubling(depth: int):
    """``x`` added to itself ``depth`` times: a tree of 2**depth leaves, a DAG of depth."""
    b = TileBuilder("doubling")
    a = b.input("A", "f32", (5,))
    e = Input(a.name)
    for _ in range(depth):
        e = call("add", call("mul", e, constant(0.5, "f32")), call("mul", e, constant(0.5, "f32")))
    b.output(b.eltwise(b.tensor("O", "f32", (5,)), e))
    return b.build()


def test_shared_subexpressions_lower_once():
    sp = lower(_doubling(18))      # as a tree: 2**18 multiplications
    verify(sp)
    (k,) = sp.entry.stmts
    ops = [st.name for st in k.stmts if isinstance(st, Intrinsic)]
    assert ops == ["mul", "add"] * 18
    x = np.arange(5, dtype=np.float32) - 2.0
    np.testing.assert_array_equal(run(sp, {"A": x})["O"], x)


def test_window_reduction_runs_the_contiguous_dimension_innermost():
    b = TileBuilder("pool")
    a = b.input("A", "f32", (3, 6, 7, 16))
    n, y, x, c, ky, kx = variables("n y x c ky kx")
    b.output(b.contract(b.tensor("O", "f32", (3, 5, 6, 16)), (n, y, x, c), "max",
                        a[n, y + ky, x + kx, c], [ky < 2, kx < 2]))
    sp = lower(b.build())
    verify(sp)
    (k,) = sp.entry.stmts
    assert k.idxs[-1].name == "c", [i.name for i in k.idxs]
    v = np.random.default_rng(0).standard_normal((3, 6, 7, 16)).astype(np.float32)
    want = np.maximum.reduce([v[:, i:i + 5, j:j + 6] for i in (0, 1) for j in (0, 1)])
    np.testing.assert_array_equal(run(sp, {"A": v})["O"], want)
    np.testing.assert_array_equal(run_c(sp, {"A": v})["O"], want)


def test_reduction_over_the_last_dimension_keeps_it_innermost():
    # the output's last index does not walk the input's last dimension: the register
    # reduction along the contiguous input stays innermost
    b = TileBuilder("rowsum")
    a = b.input("A", "f32", (4, 9))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (4,)), (i,), "add", a[i, j]))
    (k,) = lower(b.build()).entry.stmts
    assert [ix.name for ix in k.idxs] == ["i", "j"]
