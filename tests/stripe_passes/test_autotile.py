"""Autotile: the cost model's values by hand computation, the search, and the pass."""
import math

import pytest

from sp_helpers import AVX2, AVX512, blocks, check_passes
from plait.stripe import lower
from plait.stripe.passes import autotile
from plait.stripe.passes.autotile import memory_io, search, tile_cost
from sp_programs import row_sum
from stripe_programs import matmul


def test_memory_io_hand_values():
    # 16 contiguous fp32 in 64-byte lines: 16 - 15*(1 - 1/16) = 1.9375
    assert memory_io((16,), (1,), 16) == pytest.approx(1.9375)
    # a 4x16 tile of a row-major matrix with row stride 1024: 4 rows of 1.9375
    assert memory_io((4, 16), (1024, 1), 16) == pytest.approx(7.75)
    # no line width: every element is its own line
    assert memory_io((4, 16), (1024, 1), 0) == 64
    # two rows of 4 with row stride 4 (contiguous 8 elements): 8 - 7*(15/16)
    assert memory_io((2, 4), (4, 1), 16) == pytest.approx(1.4375)


def test_tile_cost_hand_value():
    # C[i, j : 4, 4] = +(A[i, j])  (a copy): tile (2, 4)
    from plait.tile import TileBuilder, variables
    b = TileBuilder("copy")
    A = b.input("A", "f32", (4, 4))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("C", "f32", (4, 4)), (i, j), "add", A[i, j]))
    blk = lower(b.build()).entry.stmts[0]
    # in and out lines 1.4375 each; work 8; two tiles: relative tie-break 0.001 * log2(2)
    want = (1 + 1.4375 + 1.4375) / 8 * (1 + 0.001 * math.log2(2))
    assert tile_cost(blk, {"i": 2, "j": 4}, 64) == pytest.approx(want)
    # over the cap: 2 refs * 8 elements * 4 bytes = 64 bytes
    assert tile_cost(blk, {"i": 2, "j": 4}, 64, max_total_bytes=63) is None
    assert tile_cost(blk, {"i": 2, "j": 4}, 64, max_total_bytes=64) is not None


def test_search_respects_cap_multiples_and_is_cached():
    blk = lower(matmul(64, 64, 64)[0]).entry.stmts[0]
    t = search(blk, 64, max_total_bytes=32 * 1024)
    assert all(v & (v - 1) == 0 for v in t.values())  # powers of two
    foot = sum(math.prod(autotile.tile_extent(blk, r, t)) * 4 for r in blk.refs)
    assert foot <= 32 * 1024
    # bigger tiles than 1x1x1 are found (reuse lowers the lines per MAC)
    assert math.prod(t.values()) > 1000
    t2 = search(blk, 64, max_total_bytes=32 * 1024, multiple_of={"j": 48})
    assert t2["j"] % 48 == 0
    assert search(blk, 64, max_total_bytes=32 * 1024) == t


def test_search_acc_idxs_false_keeps_reductions_whole():
    blk = lower(matmul(32, 64, 16)[0]).entry.stmts[0]
    red = [ix.name for ix in blk.idxs if ix.name not in {v for r in blk.refs if r.dir == "out" for a in r.access for v in a.vars}]
    t = search(blk, 64, max_total_bytes=64 * 1024, acc_idxs=False)
    for n in red:
        assert t[n] == blk.idx(n).range


@pytest.mark.parametrize("target", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_autotile_pass_matches_interpreter(target):
    p = check_passes(matmul(20, 33, 17)[0], [("autotile", {"max_total_bytes": 2048})], target)
    assert blocks(p, "tiled") and blocks(p, "tile_inner")


def test_autotile_uneven_reduction():
    p = check_passes(row_sum(7, 45), [("autotile", {"max_total_bytes": 256, "only_po2": False})])
    assert blocks(p, "tiled")


def _transpose(m, n):
    from plait.tile import TileBuilder, variables
    b = TileBuilder("transpose")
    X = b.input("X", "f32", (m, n))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("Y", "f32", (n, m)), (j, i), "assign", X[i, j]))
    return b.build()


def test_only_conflicts_tiles_transposes_not_streams():
    from sp_programs import chain
    params = {"reqs": ("kernel",), "acc_idxs": False, "only_conflicts": True}
    p = check_passes(_transpose(70, 130), [("autotile", params)])
    assert blocks(p, "tiled")
    from sp_helpers import apply
    before = lower(chain(5000))
    assert apply(before, [("autotile", params)]) == before
