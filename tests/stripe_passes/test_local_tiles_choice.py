"""The local_tiles cost model: the work-group shape and K tile it picks from a target's
facts (work-group limit, subgroup, local memory, cores), checked against the limits,
against an exhaustive enumeration of the autotile cost over every feasible candidate,
and by the interpreter (program semantics unchanged)."""
import itertools
import math
from dataclasses import replace

import pytest

from sp_helpers import apply, blocks, check_passes
from sp_programs import batch_matmul, mm_epilogue
from plait.stripe import lower
from plait.stripe.ir import Block
from plait.stripe.passes.autotile import tile_cost
from plait.stripe.passes.local_tiles import _analyse, _extents, _local_bytes, choose_tiles
from plait.stripe.passes.threads import launch_shape
from plait.stripe.targets import load_target
from stripe_programs import conv2d, matmul

GPU = load_target("opencl-gpu", {"cores": 8, "max_workgroup": 1024, "local_bytes": 49152,
                                 "global_bytes": 1 << 30, "unsupported_dtypes": ["f16"]})
PASSES = [(n, dict(ps)) for n, ps in GPU.passes]
THREADS = PASSES[:[n for n, _ in PASSES].index("threads") + 1]
CASES = {
    "matmul": lambda: matmul(96, 130, 64)[0],
    "mm_epilogue": lambda: mm_epilogue(50, 70, 90),
    "batch_matmul": lambda: batch_matmul(3, 18, 13, 20),
    "conv": lambda: conv2d(n=1, h=12, w=12, ci=16, co=32)[0],
}


def _kernel(program, target=GPU):
    p = apply(lower(program), THREADS, target)
    (k,) = [b for b in p.entry.stmts if hasattr(b, "tags") and "contraction" in b.tags]
    return k


def _brute(k, target, local_bytes, occupancy):
    """The cheapest feasible (group, K tile) by enumerating every power-of-two shape."""
    flat, threads, red, others, kt, staged = _analyse(k)
    (idxs, cons, crefs, _), _, acc = flat
    model = Block(name="m", idxs=idxs, constraints=cons, refs=crefs)
    limit, budget = target.max_workgroup // occupancy, local_bytes // occupancy
    best = (math.inf, None)
    pw = [1 << j for j in range(13)]
    for group in itertools.product(*[[p for p in pw if p < 2 * t.range] for t in threads]):
        n = math.prod(group)
        whole = min(target.subgroup, math.prod(
            1 << (t.range - 1).bit_length() for t in threads))
        if n > limit or n % whole:
            continue
        for tk in sorted({min(p, kt.range) for p in pw if p < 2 * kt.range}):
            ext = _extents(threads, group, others, red, kt, tk)
            if _local_bytes(staged, acc, group, ext) <= budget:
                c = tile_cost(model, ext, target.line_bytes, min_count=target.cores)
                best = min(best, (c, (group, tk)), key=lambda x: x[0])
    return best


@pytest.mark.parametrize("case", sorted(CASES))
def test_choice_is_the_cheapest_feasible_tile(case):
    k = _kernel(CASES[case]())
    group, tk = choose_tiles(k, GPU, GPU.local_bytes, 2)
    cost, want = _brute(k, GPU, GPU.local_bytes, 2)
    assert (group, tk) == want, (group, tk, want, cost)
    assert math.prod(group) <= GPU.max_workgroup // 2
    assert math.prod(group) % GPU.subgroup == 0


def test_choice_follows_the_device_facts():
    k = _kernel(matmul(512, 512, 512)[0])
    big = choose_tiles(k, GPU, GPU.local_bytes, 1)
    # a smaller local memory forces smaller staged tiles
    small_mem = choose_tiles(k, GPU, 4096, 1)
    flat, threads, red, others, kt, staged = _analyse(k)
    acc = flat[2]
    for (g, t), cap in ((big, GPU.local_bytes), (small_mem, 4096)):
        assert _local_bytes(staged, acc, g, _extents(threads, g, others, red, kt, t)) <= cap
    assert math.prod(small_mem[0]) * small_mem[1] < math.prod(big[0]) * big[1]
    # a smaller work-group limit: the group shrinks to it
    narrow = replace(GPU, max_workgroup=64)
    g, _ = choose_tiles(k, narrow, GPU.local_bytes, 1)
    assert math.prod(g) <= 64 and math.prod(g) % GPU.subgroup == 0
    # nothing fits: no choice, and the pass leaves the kernel alone
    assert choose_tiles(k, GPU, 64, 1) is None


@pytest.mark.parametrize("case", sorted(CASES))
def test_chosen_tiles_keep_semantics(case):
    p = check_passes(CASES[case](), PASSES, GPU, c=False, rtol=1e-4)
    (wg,) = blocks(p, "workgroups")
    ranges, group = launch_shape(wg)
    k = _kernel(CASES[case]())
    assert group == choose_tiles(k, GPU, GPU.local_bytes, 2)[0]
    assert all(r % g == 0 for r, g in zip(ranges, group))
