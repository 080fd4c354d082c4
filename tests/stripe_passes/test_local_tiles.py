"""The local_tiles pass (work-group tiles staged in local memory, barriers): interpreter
before == after, verifier after, text round trip, the structure it builds, the kernels
it leaves alone, and the verifier's barrier placement rule."""
from dataclasses import replace

import pytest

from sp_helpers import blocks, check_passes
from sp_programs import batch_matmul, matmul_bt, mm_epilogue, row_sum
from plait.errors import StripeVerifyError
from plait.stripe import Barrier, parse, to_text, verify, walk_blocks
from plait.stripe.passes.threads import launch_shape
from plait.stripe.targets import load_target
from stripe_programs import conv2d, matmul

GPU = load_target("opencl-gpu", {"cores": 4, "max_workgroup": 256, "local_bytes": 32768,
                                 "global_bytes": 1 << 30, "unsupported_dtypes": ["f16"]})
# the opencl-gpu pass list up to the thread assignment
THREADS = [(n, dict(ps)) for n, ps in GPU.passes[:[n for n, _ in GPU.passes].index("threads") + 1]]


def _tiles(tile_k=8, tags=("contraction",)):
    return THREADS + [("local_tiles", {"tile_k": tile_k, "tags": tags}),
                      ("place", {"levels": ("private", "global"), "cache": "local"})]


CASES = {   # partial work-groups and partial K tiles on purpose
    "matmul": lambda: matmul(20, 30, 17)[0],
    "matmul_bt": lambda: matmul_bt(19, 21, 33),
    "mm_epilogue": lambda: mm_epilogue(50, 70, 90),     # fused: the tile feeds relu(. + b)
    "batch_matmul": lambda: batch_matmul(3, 18, 13, 20),
    "conv": lambda: conv2d(n=2, h=9, w=10, ci=8, co=24)[0],
    "conv_strided": lambda: conv2d(n=1, h=11, w=9, ci=5, co=7, stride=(2, 2),
                                   pad=((1, 0), (0, 1)), dil=(1, 2))[0],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_local_tiles_keep_semantics(case):
    p = check_passes(CASES[case](), _tiles(), GPU, c=False, rtol=1e-4)
    assert parse(to_text(p)) == p
    (wg,) = blocks(p, "workgroups")
    (kt,) = blocks(p, "ktiles")
    stages = blocks(p, "stage")
    assert stages and len(blocks(p, "compute")) == 1
    # each work-item's accumulator element: set, accumulated per K tile, then combined
    # into the outputs (through the fused epilogue, if any) once
    assert len(blocks(p, "init")) == len(blocks(p, "epilogue")) == 1
    # the staged tiles live in local memory and fit the device's
    cached = [r for r in kt.refs if "cache" in r.tags]
    assert len(cached) == len(stages) and all(r.location == "local" for r in cached)
    assert sum(4 * r.shape[0] * r.strides[0] for r in cached) <= 32768
    # stage, stage..., barrier, compute, barrier
    kinds = [type(s).__name__ if not hasattr(s, "tags") else sorted(s.tags & {"stage", "compute"})[0]
             for s in kt.stmts]
    assert kinds == ["stage"] * len(stages) + ["Barrier", "compute", "Barrier"]
    ranges, group = launch_shape(wg)
    assert all(r % g == 0 for r, g in zip(ranges, group))


def test_matmul_tiles_are_shaped_for_the_group_and_coalesced():
    p = check_passes(matmul(64, 130, 96)[0], _tiles(tile_k=32), GPU, c=False, rtol=1e-4)
    (wg,) = blocks(p, "workgroups")
    assert launch_shape(wg) == ((96, 64), (16, 16))
    a, b = blocks(p, "stage")
    # A tile: 16 rows x 32 k; B tile: 32 k x 16 columns; work-item dimension 0 walks
    # each operand's contiguous dimension
    assert a.refs[1].strides == (32, 1) and b.refs[1].strides == (16, 1)
    assert a.idxs[0].range == 32 and b.idxs[0].range == 16
    assert "items_2" in a.tags and "items_2" in b.tags
    (kt,) = blocks(p, "ktiles")
    assert kt.idxs[0].range == 5      # ceil(130 / 32)


def test_kernels_it_does_not_fit_are_unchanged():
    # a row reduction: its one operand is read by one work-item per row (no reuse)
    base = check_passes(row_sum(30, 50), THREADS, GPU, c=False)
    p = check_passes(row_sum(30, 50), _tiles(), GPU, c=False)
    assert p == replace(base, entry=p.entry) and not blocks(p, "workgroups")
    assert to_text(base) == to_text(p)
    # tags select the kernels: none selected, nothing changes
    q = check_passes(matmul(20, 30, 17)[0], _tiles(tags=("no-such-tag",)), GPU, c=False)
    assert not blocks(q, "workgroups")
    # tiles over the device's local memory: left alone
    tiny = load_target("opencl-gpu", {"cores": 1, "max_workgroup": 256, "local_bytes": 1024,
                                      "global_bytes": 1 << 20, "unsupported_dtypes": []})
    r = check_passes(matmul(64, 130, 96)[0], _tiles(tile_k=32), tiny, c=False)
    assert not blocks(r, "workgroups")


def test_verifier_rejects_misplaced_barriers():
    p = check_passes(matmul(20, 30, 17)[0], _tiles(), GPU, c=False)
    (compute,) = blocks(p, "compute")
    bad = replace(compute, stmts=compute.stmts + (Barrier(),))
    from plait.stripe import replace_stmt
    q = replace(p, entry=replace_stmt(p.entry, compute, bad))
    with pytest.raises(StripeVerifyError, match="barrier inside an items_"):
        verify(q)
    (wg,) = blocks(p, "workgroups")
    q = replace(p, entry=replace_stmt(p.entry, wg, replace(wg, tags=wg.tags - {"workgroups"})))
    with pytest.raises(StripeVerifyError, match="outside any workgroups block"):
        verify(q)
    assert sum(isinstance(s, Barrier) for b in walk_blocks(p.entry) for s in b.stmts) == 2
