"""apply_tile: identical interpreter results before/after, verifier accepts, text round-trips."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.stripe import (
    Block, Program, apply_tile, lower, parse, replace_stmt, run, to_text, verify,
)
from stripe_programs import conv2d, matmul, programs, random_inputs

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tile_kernel(prog: Program, kernel: Block, sizes, **kw) -> Program:
    return Program(prog.name, prog.buffers, replace_stmt(prog.entry, kernel, apply_tile(kernel, sizes, **kw)))


def check_same(before: Program, after: Program, inputs) -> None:
    verify(after)
    assert parse(to_text(after)) == after
    a, b = run(before, inputs), run(after, inputs)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def plaidml_5x5():
    prog, _ = matmul(5, 5, 5)
    A = np.array([[1, 2, 3, 4, 5], [4, 5, 6, 7, 8], [7, 8, 9, 7, 8], [1, 2, 3, 1, 2], [1, 2, 3, 1, 2]], np.float32)
    B = np.tile(np.array([1, 2, 3, 1, 2], np.float32), (5, 1))
    return lower(prog), {"A": A, "B": B}


def test_matmul_5x5_uneven_nested_twice():
    sp, inputs = plaidml_5x5()
    want = np.array([[15, 30, 45, 15, 30], [30, 60, 90, 30, 60], [39, 78, 117, 39, 78],
                     [9, 18, 27, 9, 18], [9, 18, 27, 9, 18]], np.float32)
    np.testing.assert_array_equal(run(sp, inputs)["C"], want)
    k = sp.entry.stmts[0]
    t1 = tile_kernel(sp, k, {"i": 5, "j": 2, "k": 2})
    check_same(sp, t1, inputs)
    outer = t1.entry.stmts[0]
    inner = outer.stmts[0]
    # uneven j and k tiles: passed-in indexes and overflow constraints
    assert {i.name for i in inner.idxs} >= {"jo", "ko"}
    assert any(str(c) == "-j - jo + 4" for c in inner.constraints)
    t2 = Program(t1.name, t1.buffers, replace_stmt(t1.entry, inner, apply_tile(inner, {"i": 3, "j": 1, "k": 1})))
    check_same(sp, t2, inputs)


def test_even_tiles_need_no_constraints():
    prog, _ = matmul(8, 4, 6)
    sp = lower(prog)
    k = sp.entry.stmts[0]
    t = tile_kernel(sp, k, {"i": 4, "j": 3, "k": 2})
    inner = t.entry.stmts[0].stmts[0]
    assert inner.constraints == () and all(i.affine is None for i in inner.idxs)
    check_same(sp, t, random_inputs(prog, integers=True))


def _sizes(draw, block):
    return {ix.name: draw(st.integers(1, ix.range + 1)) for ix in block.idxs if ix.affine is None}


@FAST
@given(st.data())
def test_matmul_random_tiles_nested(data):
    m, k, n = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))
    prog, _ = matmul(m, k, n)
    sp = lower(prog)
    inputs = random_inputs(prog, integers=True)
    ker = sp.entry.stmts[0]
    t1 = tile_kernel(sp, ker, _sizes(data.draw, ker))
    check_same(sp, t1, inputs)
    inner = t1.entry.stmts[0].stmts[0]
    t2 = Program(t1.name, t1.buffers, replace_stmt(t1.entry, inner, apply_tile(inner, _sizes(data.draw, inner))))
    check_same(sp, t2, inputs)


@FAST
@given(st.data())
def test_conv_random_tiles_nested(data):
    stride = data.draw(st.sampled_from([(1, 1), (2, 1), (2, 2)]))
    dil = data.draw(st.sampled_from([(1, 1), (1, 2)]))
    pad = data.draw(st.sampled_from([((1, 1), (1, 1)), ((0, 0), (0, 0)), ((2, 0), (0, 1))]))
    prog, _ = conv2d(h=5, w=6, ci=2, co=3, stride=stride, pad=pad, dil=dil)
    sp = lower(prog)
    inputs = random_inputs(prog, integers=True)
    ker = sp.entry.stmts[0]
    t1 = tile_kernel(sp, ker, _sizes(data.draw, ker))
    check_same(sp, t1, inputs)
    outer = t1.entry.stmts[0]
    if data.draw(st.booleans()):  # tile the inner block again ...
        inner = outer.stmts[0]
        t2 = Program(t1.name, t1.buffers, replace_stmt(t1.entry, inner, apply_tile(inner, _sizes(data.draw, inner))))
    else:  # ... or the outer one
        t2 = Program(t1.name, t1.buffers, replace_stmt(t1.entry, outer, apply_tile(outer, _sizes(data.draw, outer))))
    check_same(sp, t2, inputs)


@pytest.mark.parametrize("name", ["maxpool", "cumsum", "eltwise_chain", "iota", "index_mix", "concatenate",
                                  "softmax", "transpose", "pad_value_default", "strided_write"])
def test_tiling_every_kernel_of_other_programs(name):
    _, prog, _ = next(p for p in programs() if p[0] == name)
    sp = lower(prog)
    inputs = random_inputs(prog, integers=True)
    cur = sp
    for k in sp.entry.stmts:
        sizes = {ix.name: max(1, (ix.range + 1) // 2) for ix in k.idxs}
        cur = tile_kernel(cur, k, sizes)
    check_same(sp, cur, inputs)


def test_tile_names_and_tags():
    prog, _ = matmul(4, 4, 4)
    k = lower(prog).entry.stmts[0]
    t = apply_tile(k, [2, 2, 4], inner_name="mac", outer_tags=["tiled"], inner_tags=["inner"])
    assert t.name == k.name and t.tags == k.tags | {"tiled"}
    assert t.stmts[0].name == "mac" and t.stmts[0].tags == {"inner"}
    with pytest.raises(ValueError, match="no index 'z'"):
        apply_tile(k, {"z": 2})
    with pytest.raises(ValueError, match="3 indexes, got 2"):
        apply_tile(k, [1, 2])
