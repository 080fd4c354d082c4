"""The threads pass (GPU thread assignment): interpreter before == after, verifier after,
and the indexes and work-group shapes it picks."""
import pytest

from sp_helpers import blocks, check_passes
from plait.stripe.passes.threads import launch_shape
from plait.stripe.targets import load_target
from sp_programs import chain, mm_epilogue, row_max, softmax
from stripe_programs import conv2d, matmul

GPU = load_target("opencl-gpu", {"cores": 4, "max_workgroup": 256, "local_bytes": 65536,
                                 "global_bytes": 1 << 30, "unsupported_dtypes": ["f16"]})
CASES = {
    "mm_epilogue": lambda: mm_epilogue(50, 70, 90),
    "matmul": lambda: matmul(64, 130, 96)[0],
    "conv": lambda: conv2d(n=2, h=9, w=10, ci=8, co=24)[0],
    "softmax": lambda: softmax(40, 70),
    "chain": lambda: chain(3000),
    "row_max": lambda: row_max(30, 50),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_pass_list_keeps_semantics(case):
    p = check_passes(CASES[case](), [(n, dict(ps)) for n, ps in GPU.passes], GPU, c=False,
                     rtol=1e-4)
    for b in p.entry.stmts:
        ranges, group = launch_shape(b)
        assert len(ranges) == len(group) <= 2
        assert all(g <= 256 for g in group) and _prod(group) <= GPU.max_workgroup


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def test_matmul_threads_are_output_indexes_coalesced_first():
    p = check_passes(mm_epilogue(50, 70, 90), [("fuse", {}), ("threads", {})], GPU, c=False)
    (k,) = blocks(p, "threads_2")
    # dimension 0 is the output's contiguous index (j), dimension 1 the row (i); the
    # reduction index k is never a thread index
    assert [i.name for i in k.idxs[:2]] == ["j", "i"]
    assert launch_shape(k) == ((90, 50), (16, 16))


def test_group_shape_respects_the_device_limit_and_small_ranges():
    small = load_target("opencl-gpu", {"cores": 1, "max_workgroup": 64, "local_bytes": 0,
                                       "global_bytes": 1 << 20, "unsupported_dtypes": []})
    p = check_passes(mm_epilogue(5, 7, 90), [("fuse", {}), ("threads", {})], small, c=False)
    (k,) = blocks(p, "threads_2")
    assert launch_shape(k) == ((90, 5), (8, 8))


def test_place_puts_allocations_in_the_first_level_that_holds_them():
    from dataclasses import replace
    from plait.stripe import walk_blocks
    # a private level of 8 bytes: the softmax row temporaries (70 floats) go global,
    # single-element accumulators stay private; entry-level temporaries are global
    memory = tuple(replace(m, bytes=8) if m.name == "private" else m for m in GPU.memory)
    tiny = replace(GPU, memory=memory)
    p = check_passes(softmax(40, 70), [(n, dict(ps)) for n, ps in GPU.passes], tiny, c=False)
    locs = {(r.into, r.location) for b in walk_blocks(p.entry) for r in b.refs
            if r.from_ is None}
    assert locs and all(loc in ("private", "global") for _, loc in locs)
    for b in walk_blocks(p.entry):
        for r in b.refs:
            if r.from_ is None:
                n = 1 + sum((s - 1) * st for s, st in zip(r.shape, r.strides) if s > 0)
                want = "global" if b is p.entry or n * 4 > 8 else "private"
                assert r.location == want, (r.into, n)
