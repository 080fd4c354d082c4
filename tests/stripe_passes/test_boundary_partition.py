"""Boundary separation, partition over cores, init elision and reductions in C."""
from dataclasses import replace

import numpy as np
import pytest

from sp_helpers import SPLIT, apply, blocks, check_passes, random_inputs, run_c
from plait.stripe import lower, run
from plait.stripe.ir import Block
from plait.stripe.targets import Target
from sp_programs import chain, col_sum, mm_epilogue, row_max, row_sum
from stripe_programs import conv2d, matmul


def test_boundary_separates_interior_and_edge_tiles():
    p = check_passes(matmul(70, 40, 100)[0], [("stencil", {"min_work": 1}), ("boundary", {})],
                     rtol=1e-4)
    interior = blocks(p, "interior")
    edges = blocks(p, "edge")
    assert interior and edges
    for t in interior:  # interior stores carry no checks
        assert all(not b.constraints for b in t.stmts if isinstance(b, Block))
    assert any(b.constraints for e in edges for b in e.stmts if isinstance(b, Block))


def test_boundary_on_conv_with_fused_pipeline():
    check_passes(conv2d(n=1, h=7, w=9, ci=5, co=21)[0],
                 [("stencil", {"min_work": 1}), ("boundary", {}), ("partition", SPLIT)],
                 rtol=1e-4)


def test_partition_never_splits_a_reduction():
    p = apply(lower(row_sum(64, 512)), [("partition", SPLIT)])
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    assert "parallel" in k.tags and k.idxs[0].name == "i"


@pytest.mark.parametrize("cols", [96, 100, 7])
def test_partition_tiles_a_sum_over_leading_axes(cols):
    """The kept index is the contiguous one: one tile per core runs in parallel and each
    keeps that index innermost (not a reduction striding through memory); an uneven
    split (100 or 7 columns over 2 cores) gives the same sums, in C too."""
    p = check_passes(col_sum(300, cols), [("partition", SPLIT)], rtol=1e-4)
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    assert "parallel" in k.tags and [ix.range for ix in k.idxs] == [2]
    (inner,) = [s for s in k.stmts if isinstance(s, Block)]
    loops = [ix for ix in inner.idxs if ix.affine is None]
    assert [ix.name for ix in loops] == ["i", "j"] and loops[-1].range == -(-cols // 2)


def test_partition_prefers_balanced_index():
    from plait.tile import TileBuilder, call
    b = TileBuilder("bal")
    X = b.input("X", "f32", (3, 64))
    b.output(b.eltwise(b.tensor("Y", "f32", (3, 64)), call("neg", X)))
    p = check_passes(b.build(), [("partition", SPLIT)])
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    # 3 rows split 2:1 over 2 cores, 64 columns split evenly: the columns, one tile of 32
    # per core, each tile's columns still innermost (rows innermost would stride)
    assert "parallel" in k.tags and [ix.range for ix in k.idxs] == [2]
    (inner,) = [s for s in k.stmts if isinstance(s, Block)]
    loops = [ix for ix in inner.idxs if ix.affine is None]
    assert [ix.range for ix in loops] == [3, 32]


def test_partition_splits_rows_that_divide_almost_evenly():
    """1821 rows over 2 cores idle 0.05%: the rows are split and the 1024 contiguous
    columns stay innermost (moving them to the front made the loop over rows innermost,
    a momentum update over 1821 x 1024 ran 35 ms instead of 1)."""
    from plait.tile import TileBuilder, call
    b = TileBuilder("rows")
    X = b.input("X", "f32", (1821, 1024))
    b.output(b.eltwise(b.tensor("Y", "f32", (1821, 1024)), call("neg", X)))
    p = check_passes(b.build(), [("partition", SPLIT)])
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    assert "parallel" in k.tags and [ix.range for ix in k.idxs] == [1821, 1024]


def test_partition_keeps_the_innermost_index_inner():
    """Among evenly splitting indexes the innermost (contiguous) one is not moved to the
    front: a relu over NHWC (32, 32, 32, 96) splits the batch, not the 96 channels."""
    from plait.tile import TileBuilder, call
    b = TileBuilder("nhwc")
    X = b.input("X", "f32", (4, 6, 6, 96))
    b.output(b.eltwise(b.tensor("Y", "f32", (4, 6, 6, 96)), call("neg", X)))
    p = check_passes(b.build(), [("partition", SPLIT)])
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    assert "parallel" in k.tags and [ix.name for ix in k.idxs][0] != k.idxs[-1].name
    assert k.idxs[-1].range == 96


def test_partition_finds_tiles_inside_stencil_kernels():
    p = check_passes(mm_epilogue(96, 64, 256), [("stencil", {"min_work": 1}), ("fuse", {}),
                                                ("localize", {}), ("partition", SPLIT)],
                     rtol=1e-4)
    assert blocks(p, "parallel")


def test_single_core_target_stays_serial():
    one = Target("one", 1, 64, 64, 48 * 1024, 1 << 21, 1 << 25, 1 << 20, ())
    p = apply(lower(chain(1 << 16)), [("partition", SPLIT)], one)
    assert not blocks(p, "parallel")


def test_elide_init_only_for_full_overwrites():
    p = check_passes(chain(40), [("elide_init", {})])
    assert any("overwritten" in r.tags for r in p.entry.refs)
    # a reduction aggregates into its initial value: the fill must stay
    p = check_passes(row_sum(5, 7), [("elide_init", {})])
    assert not any("overwritten" in r.tags for r in p.entry.refs)
    # a padded convolution output is not written by a plain bijection either (stays correct)
    check_passes(conv2d(n=1, h=4, w=4, ci=2, co=3)[0], [("elide_init", {})])


@pytest.mark.parametrize("prog", [row_sum(9, 133), row_max(9, 133), row_sum(9, 133, "i32")],
                         ids=["sum", "max", "isum"])
def test_vectorized_reductions_agree(prog):
    check_passes(prog, [], rtol=1e-5)


def test_vectorized_max_propagates_nan():
    p = lower(row_max(3, 50))
    ins = random_inputs(p)
    ins["X"][1, 17] = np.nan
    ins["X"][2, :] = -np.inf
    got = run_c(p, ins)["S"]
    with np.errstate(invalid="ignore"):
        want = run(p, ins)["S"]
    np.testing.assert_array_equal(np.isnan(got), [False, True, False])
    np.testing.assert_array_equal(got[[0, 2]], want[[0, 2]])


def _strided_col_sum(rows: int, cols: int):
    """col_sum with its summed rows as the innermost loop (the order a column sum fused
    with its producer had): every step a row apart in memory."""
    p = lower(col_sum(rows, cols))
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    k = replace(k, idxs=tuple(reversed(k.idxs)))
    assert k.idxs[-1].name == "i"
    return replace(p, entry=replace(p.entry, stmts=(k,)))


@pytest.mark.parametrize("cores", [1, 2])
def test_partition_puts_the_contiguous_loop_innermost(cores):
    """The strided row loop goes outside, the contiguous column loop innermost, on one
    core as on two (where the columns are then tiled per core); the sums are unchanged
    in the interpreter and in C."""
    target = Target("t", cores, 64, 64, 48 * 1024, 1 << 21, 1 << 25, 1 << 20, ())
    p = check_passes(_strided_col_sum(128, 96), [("partition", SPLIT)], target, rtol=1e-4)
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    flat = [s for s in k.stmts if isinstance(s, Block)] or [k]
    loops = [ix.name for ix in flat[0].idxs if ix.affine is None]
    assert loops == ["i", "j"]
    assert ("parallel" in k.tags) == (cores == 2)


def test_partition_keeps_a_transpose_order():
    """A transpose reads or writes contiguously whichever loop is inner: left alone."""
    from plait.tile import TileBuilder, variables
    b = TileBuilder("transpose")
    X = b.input("X", "f32", (40, 24))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("Y", "f32", (24, 40)), (j, i), "assign", X[i, j]))
    before = lower(b.build())
    p = check_passes(before, [("partition", SPLIT)])
    (k0,) = [s for s in before.entry.stmts if isinstance(s, Block)]
    (k,) = [s for s in p.entry.stmts if isinstance(s, Block)]
    assert k.idxs[-1].name == k0.idxs[-1].name
