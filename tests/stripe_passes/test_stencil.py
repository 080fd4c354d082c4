"""Stencil: packed panels around a register block, for matmuls and convolutions."""
import pytest

from sp_helpers import AVX2, AVX512, blocks, check_passes
from plait.stripe import lower
from plait.stripe.passes.stencil import choose_shape
from sp_programs import batch_matmul, matmul_bt
from stripe_programs import conv2d, matmul

ST = [("stencil", {"min_work": 1})]


@pytest.mark.parametrize("target", [AVX512, AVX2], ids=["avx512", "avx2"])
@pytest.mark.parametrize("mkn", [(13, 17, 40), (70, 300, 100), (2, 5, 3)])
def test_matmul_stencil(target, mkn):
    p = check_passes(matmul(*mkn)[0], ST, target, rtol=1e-4)
    (micro,) = blocks(p, "mac_regblock")
    assert f"simd_{target.vector_bytes}" in micro.tags
    assert micro.idxs[0].name == "kk"  # the reduction loop is outside the register block
    assert not micro.constraints


def test_matmul_uneven_k_panels():
    # kc=16 splits K=37 unevenly: the tail panel is zero padded by the packing constraints
    p = check_passes(matmul(9, 37, 20)[0], [("stencil", {"min_work": 1, "kc": 16})], rtol=1e-4)
    assert len(blocks(p, "pack")) == 2


def test_transposed_and_batched():
    check_passes(matmul_bt(11, 9, 35), ST, rtol=1e-4)
    check_passes(batch_matmul(3, 7, 5, 19), ST, rtol=1e-4)


@pytest.mark.parametrize("cfg", [dict(n=2, h=6, w=7, ci=3, co=5),
                                 dict(n=1, h=5, w=5, ci=4, co=20, stride=(2, 2), pad=((1, 1), (1, 1)))])
def test_conv_stencil(cfg):
    p = check_passes(conv2d(**cfg)[0], ST, rtol=1e-4)
    # the halo constraints live in the packing of the input, not in the micro-kernel
    assert not blocks(p, "mac_regblock")[0].constraints
    assert any(b.constraints for b in blocks(p, "pack"))


def test_unit_rows_stay_correct():
    # a single output row has no register rows to block: any rewrite must stay exact
    check_passes(matmul(1, 5, 3)[0], ST, rtol=1e-4)


def test_non_mac_blocks_untouched():
    from sp_programs import row_max
    before = lower(row_max(5, 6))
    from sp_helpers import apply
    assert apply(before, ST) == before


def test_choose_shape_cost():
    # 1024 columns: 4 vectors of 16 divide evenly, 3 vectors waste a partial tile
    assert choose_shape(1024, 1024, ((6, 4), (8, 3)), 16) == (6, 4)
    # 56 x 48: 8 rows and 3 vectors fit exactly
    assert choose_shape(56, 48, ((6, 4), (8, 3)), 16) == (8, 3)
