"""Fuse + localize: epilogues join their contraction, temporaries shrink to a tile."""
from sp_helpers import SPLIT, check_passes
from plait.stripe import lower
from plait.stripe.ir import Block
from plait.stripe.passes._util import flat_coeff
from sp_programs import (chain, col_sum_scaled, masked_col_sum_scaled, mm_epilogue,
                         shared_chain, softmax)


def _kernels(p):
    return [s for s in p.entry.stmts if isinstance(s, Block) and "kernel" in s.tags]


def _main_tmps(p):
    return [r for r in p.entry.refs if r.dir == "none"]


def test_elementwise_chain_fuses_to_one_kernel_without_temporary():
    p = check_passes(chain(37), [("fuse", {}), ("localize", {})])
    assert len(_kernels(p)) == 1 and not _main_tmps(p)
    # the temporary is now one element per iteration
    (k,) = _kernels(p)
    (t,) = [r for r in k.refs if r.dir == "none"]
    assert t.shape == (1,)
    # scalarize: the consumer runs once per iteration, so the temporary becomes a scalar
    p = check_passes(chain(37), [("fuse", {}), ("localize", {}), ("scalarize", {})])
    (k,) = _kernels(p)
    assert not [r for r in k.refs if r.dir == "none"]
    assert not [s for s in k.stmts if isinstance(s, Block)]


def test_temporaries_read_by_several_kernels_fuse_into_one_loop():
    # each round's temporary feeds two later rounds; the scalar producer stays apart
    # (fused, it would wrap every round as a separate loop in a one-iteration block)
    p = check_passes(shared_chain(53), [("fuse", {}), ("localize", {})])
    ks = _kernels(p)
    assert len(ks) == 2 and ks[0].iterations == 1
    assert [ix.range for ix in ks[1].idxs] == [53] and not _main_tmps(p)[1:]


def test_matmul_epilogue_fuses_untiled():
    p = check_passes(mm_epilogue(5, 7, 3), [("fuse", {}), ("localize", {})])
    (k,) = _kernels(p)
    assert {"contraction", "eltwise", "fused"} <= k.tags and not _main_tmps(p)


def test_matmul_epilogue_fuses_into_stencil_tiles():
    p = check_passes(mm_epilogue(70, 300, 100),
                     [("stencil", {"min_work": 1}), ("fuse", {}), ("localize", {})], rtol=1e-4)
    (k,) = _kernels(p)
    assert "stencil" in k.tags and "fused" in k.tags and not _main_tmps(p)
    # the contraction result is a tile-sized local, never a whole buffer in main
    (t,) = [r for r in k.refs if r.dir == "none"]
    assert t.shape[0] <= 70 and t.shape[1] <= 100


def test_sum_over_leading_axes_keeps_its_contiguous_index_inner():
    """Fusing the sum with its consumer would make the kept (contiguous) index the outer
    loop and the reduction stride through memory: the two stay apart, and the partition
    pass then tiles the sum per core with the kept index innermost."""
    p = check_passes(col_sum_scaled(300, 96), [("fuse", {}), ("localize", {}),
                                               ("partition", SPLIT)], rtol=1e-4)
    ks = _kernels(p)
    assert len(ks) == 2 and not any("fused" in k.tags for k in ks)
    (inner,) = [s for s in ks[0].stmts if isinstance(s, Block)]
    assert [ix.name for ix in inner.idxs if ix.affine is None][-1] == "j"


def test_a_fused_elementwise_then_sum_keeps_its_contiguous_index_inner():
    """The relu mask's select fuses with the bias sum; the result (tiles without loops of
    their own) must not then fuse with the scale: W4's relu-backward bias sums ran with
    the channel index outermost at 42-47 ms each, 5 ms apart."""
    p = check_passes(masked_col_sum_scaled(300, 96), [("fuse", {}), ("localize", {}),
                                                      ("partition", SPLIT)], rtol=1e-4)
    ks = _kernels(p)
    assert len(ks) == 2 and "parallel" in ks[0].tags
    (inner,) = [s for s in ks[0].stmts if isinstance(s, Block)]
    loops = [ix.name for ix in inner.idxs if ix.affine is None and ix.range > 1]
    (x,) = [r for r in inner.refs if r.from_ == "X"]
    assert flat_coeff(x, loops[-1]) == 1          # the channel, contiguous, innermost


def test_softmax_rows_fuse_into_one_kernel():
    p = check_passes(softmax(6, 33), [("fuse", {}), ("localize", {})])
    (k,) = _kernels(p)
    assert len(k.idxs) == 1 and not _main_tmps(p)


def _output_then_reader():
    """T = X*X, Y = T + X, both outputs: T is not a temporary but Y reads it."""
    from plait.tile import TileBuilder, call
    b = TileBuilder("two")
    X = b.input("X", "f32", (8,))
    T = b.eltwise(b.tensor("T", "f32", (8,)), call("mul", X, X))
    Y = b.eltwise(b.tensor("Y", "f32", (8,)), call("add", T, X))
    b.output(T, Y)
    return lower(b.build())


def test_output_read_by_the_next_kernel_fuses_and_stays_whole():
    """Adam's moments are outputs the parameter update reads: the kernels fuse through
    them (one loop), and the output is still written whole, not localized."""
    before = _output_then_reader()
    assert len(_kernels(before)) == 2
    p = check_passes(before, [("fuse", {}), ("localize", {})])
    (k,) = _kernels(p)
    assert "fused" in k.tags and not _main_tmps(p)
    assert {r.from_ for r in k.refs if r.dir in ("out", "inout")} == {"T", "Y"}


def test_output_read_through_another_view_does_not_fuse():
    """The reader takes the output shifted (T[i+1]): a fused tile would read an element
    the writer has not stored yet, so the kernels stay apart."""
    from plait.tile import TileBuilder, call, variables
    b = TileBuilder("shifted")
    X = b.input("X", "f32", (9,))
    T = b.eltwise(b.tensor("T", "f32", (9,)), call("mul", X, X))
    (i,) = variables("i")
    Y = b.contract(b.tensor("Y", "f32", (8,)), (i,), "assign", T[i + 1])
    b.output(T, Y)
    before = lower(b.build())
    p = check_passes(before, [("fuse", {})])
    assert len(_kernels(p)) == 2


def _output_normalized_by_its_column_sums():
    """T = exp(X), an output, then Y = T / S with S[j] the sum of T's column j: the sum
    runs over T's rows, so it is complete only after every row."""
    from plait.tile import TileBuilder, call, variables
    b = TileBuilder("column_normalized")
    X = b.input("X", "f32", (6, 5))
    i, j = variables("i j")
    T = b.eltwise(b.tensor("T", "f32", (6, 5)), call("exp", X))
    S = b.contract(b.temp("f32", (5,)), (j,), "add", T[i, j])
    Y = b.eltwise(b.tensor("Y", "f32", (6, 5)), call("div", T, S))
    b.output(T, Y)
    return lower(b.build())


def test_a_sum_over_an_outer_loop_is_not_read_in_the_same_loop():
    """exp and the column sum fuse (one loop over T's elements, the sum accumulating
    across its rows); fusing the division into that loop through the output T would
    read S[j] before the later rows are added (native code returned T / T.mean(0)
    off by up to 60x). The division keeps its own loop."""
    p = check_passes(_output_normalized_by_its_column_sums(), [("fuse", {}), ("localize", {})])
    ks = _kernels(p)
    assert len(ks) == 2
    assert [r.from_ for r in ks[1].refs if r.dir == "out"] == ["Y"]


def test_localized_row_of_softmax_skips_its_fill():
    p = check_passes(softmax(6, 33), [("fuse", {}), ("localize", {}), ("elide_init", {})])
    (k,) = _kernels(p)
    assert any("overwritten" in r.tags for r in k.refs if r.dir == "none")
