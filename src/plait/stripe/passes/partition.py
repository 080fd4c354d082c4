"""Partition: run a kernel block's iterations on several cores.

A block is split over cores along one index only when iterations with different
values of that index write disjoint output elements: some dimension of every
output refinement is accessed as ``c*i`` plus indexes other than ``i`` (so two
values of ``i`` never meet) and no ``none`` accumulation is shared. Reduction
indexes (absent from an output) are never split, so no private partial results are
needed. Among the legal indexes the one whose range divides best over the cores
(least idle time to the nearest 1/32, then not the innermost loop, whose move would
leave a strided loop innermost, then the largest range) is moved to the front and the
block is tagged ``parallel`` (rendered as an OpenMP ``parallel for``). When that index
is the block's innermost one, contiguous in the outputs, and the block has other loops
(a sum over the leading axes, as a bias gradient is, or rows too few to share out),
moving it to the front would leave a loop striding through memory innermost; it is
tiled instead, one tile per core, so the tiles run in parallel and each keeps the
contiguous index innermost (a kernel without inner loops whose innermost loop strides
through every view gets its contiguous loop innermost, whatever the cores). A kernel
with no legal index at the top is searched further down, through serial loops that run
at most ``max_forks`` times (a matmul's K panels, a convolution's window rows): the
threads are started once per serial iteration. A block is split only when the cost model
(:mod:`plait.stripe.passes.parallel_cost`, priced by the pass's ``fork_ns``, ``op_ns`` and
``transcendental_ns`` from the target config) says the time the other cores save on one
run of it pays for starting them; a block found too small is left serial whole, since
the blocks below it are smaller still and would start the threads more often.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

from plait.stripe.ir import Block, Program
from plait.stripe.passes._util import flat_coeff, loops_within, prune_unit_idxs
from plait.stripe.passes.parallel_cost import worth_splitting
from plait.stripe.tiling import apply_tile


def disjoint(block: Block, name: str) -> bool:
    """Whether iterations of ``block`` with different values of index ``name`` write
    disjoint output elements."""
    outs = [r for r in block.refs if r.dir in ("out", "inout")]
    if not outs:
        return False
    for r in outs:
        dims = [a for a in r.access if a.coeff(name) != 0]
        if not dims:
            return False
        # i alone in a dimension (with a constant) keeps different i's apart when the
        # step |c| covers the view's size along that dimension
        ok = False
        for a, size in zip(r.access, r.shape):
            c = a.coeff(name)
            if c != 0 and a.vars == (name,) and abs(c) >= size:
                ok = True
        if not ok:
            return False
    return True


def _best_index(block: Block, cores: int) -> Optional[str]:
    loops = [ix.name for ix in block.idxs if ix.affine is None]
    best, key = None, None
    for idx in block.idxs:
        if idx.range < 2 or idx.affine is not None or not disjoint(block, idx.name):
            continue
        # idle time to the nearest 1/32 (1821 rows over 2 cores idle 0.05%: as good as
        # 1024 columns, which, innermost, would leave a strided loop innermost)
        waste = round(math.ceil(idx.range / cores) * cores / idx.range * 32) / 32
        k = (waste, idx.name == loops[-1], -min(idx.range, 64 * cores))
        if key is None or k < key:
            best, key = idx.name, k
    return best


def _contiguous_innermost_split(block: Block, name: str) -> bool:
    """Whether ``name`` is ``block``'s innermost index, of stride 1 in every output, in a
    block without inner loops (:func:`loops_within`) that has another loop, which
    moving ``name`` to the front would leave innermost, striding through memory."""
    if block.idxs[-1].name != name or loops_within(block):
        return False
    outs = [r for r in block.refs if r.dir in ("out", "inout")]
    if any(flat_coeff(r, name) != 1 for r in outs):
        return False
    return any(ix.affine is None and ix.name != name and ix.range > 1 for ix in block.idxs)


def contiguous_innermost(block: Block) -> Block:
    """``block`` with a contiguous index innermost when its innermost loop strides
    through every view: in a block without inner loops (a column sum fused with its
    producer runs the summed rows innermost, each step a row apart, every access a new
    cache line in the same cache set), the loop of stride 1 in the most views moves
    innermost. Iterations are unordered, so the order of the loops is free."""
    loops = [ix for ix in block.idxs if ix.affine is None and ix.range > 1]
    if len(loops) < 2 or loops_within(block):
        return block
    refs = [r for r in block.refs if r.dir in ("in", "out", "inout")]

    def unit(name: str) -> int:
        return sum(abs(flat_coeff(r, name)) == 1 for r in refs)

    best = max(loops, key=unit)
    if unit(loops[-1].name) > 0 or unit(best.name) == 0:
        return block
    return replace(block, idxs=tuple(ix for ix in block.idxs if ix is not best) + (best,))


def _partition(block: Block, target, prices: dict, forks: int, max_forks: int,
               exclude: tuple, done: list) -> Block:
    if done or any(t in block.tags for t in exclude):
        return block
    cores = target.cores
    name = _best_index(block, cores)
    if name is not None:
        if not worth_splitting(block, target, cores, **prices):
            return block
        done.append(block.name)
        if _contiguous_innermost_split(block, name):
            chunk = -(-block.idxs[-1].range // cores)
            outer = prune_unit_idxs(apply_tile(block, {name: chunk}))
            return replace(outer, tags=outer.tags | {"parallel"})
        first = [i for i in block.idxs if i.name == name]
        rest = [i for i in block.idxs if i.name != name]
        return replace(block, idxs=tuple(first + rest), tags=block.tags | {"parallel"})
    forks *= block.iterations
    if forks > max_forks:
        return block
    stmts = tuple(_partition(s, target, prices, forks, max_forks, exclude, done)
                  if isinstance(s, Block) else s for s in block.stmts)
    return replace(block, stmts=stmts)


def partition_pass(program: Program, target, *, fork_ns: float, op_ns: float,
                   transcendental_ns: float, max_forks: int = 64,
                   exclude=("pack", "mac_regblock")) -> Program:
    """Tag the first (outermost, then earliest) parallel-safe block of each kernel
    ``parallel`` when the cost model finds it worth a parallel region (a kernel without
    inner loops first gets a contiguous loop innermost: :func:`contiguous_innermost`).

    Inner blocks are considered when the serial loops around them run at most
    ``max_forks`` times (each run starts the threads again); blocks tagged ``exclude``
    (cheap data movement, register blocks) never are.  One block per kernel: every
    parallel region costs a fork and a barrier, which an oversubscribed machine makes
    expensive. ``fork_ns``, ``op_ns`` and ``transcendental_ns`` price the cost model
    (:func:`plait.stripe.passes.parallel_cost.worth_splitting`).
    """
    prices = dict(fork_ns=fork_ns, op_ns=op_ns, transcendental_ns=transcendental_ns)
    stmts = []
    for s in program.entry.stmts:
        if isinstance(s, Block) and "kernel" in s.tags:
            s = contiguous_innermost(s)
            if target.cores > 1:
                s = _partition(s, target, prices, 1, max_forks, tuple(exclude), [])
        stmts.append(s)
    stmts = tuple(stmts)
    return replace(program, entry=replace(program.entry, stmts=stmts))
