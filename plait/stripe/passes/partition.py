"""Partition: run a kernel block's iterations on several cores.

A block is split over cores along one index only when iterations with different
values of that index write disjoint output elements: some dimension of every
output refinement is accessed as ``c*i`` plus indexes other than ``i`` (so two
values of ``i`` never meet) and no ``none`` accumulation is shared. Reduction
indexes (absent from an output) are never split, so no private partial results are
needed. Among the legal indexes the one whose range divides best over the cores
(least idle time, then the largest range) is moved to the front and the block is
tagged ``parallel`` (rendered as an OpenMP ``parallel for``). A kernel with no legal
index at the top is searched one level down (through blocks that run once, such as
the wrappers tiling leaves). Blocks with less than ``min_work`` iterations in total
stay serial, since starting threads costs more than they save.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

from plait.stripe.ir import Block, Program, walk_blocks


def _disjoint(block: Block, name: str) -> bool:
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
    best, key = None, None
    for idx in block.idxs:
        if idx.range < 2 or idx.affine is not None or not _disjoint(block, idx.name):
            continue
        waste = math.ceil(idx.range / cores) * cores / idx.range
        k = (round(waste, 3), -min(idx.range, 64 * cores))
        if key is None or k < key:
            best, key = idx.name, k
    return best


def _iterations_total(block: Block) -> int:
    inner = [s for s in block.stmts if isinstance(s, Block)]
    return block.iterations * max([_iterations_total(s) for s in inner] or [1])


def _partition(block: Block, cores: int, depth: int) -> Block:
    name = _best_index(block, cores)
    if name is not None:
        first = [i for i in block.idxs if i.name == name]
        rest = [i for i in block.idxs if i.name != name]
        return replace(block, idxs=tuple(first + rest), tags=block.tags | {"parallel"})
    if depth == 0 or block.iterations > 1:
        return block
    stmts = list(block.stmts)
    kids = [k for k, s in enumerate(stmts) if isinstance(s, Block)]
    if len(kids) != 1:
        return block
    stmts[kids[0]] = _partition(stmts[kids[0]], cores, depth - 1)
    return replace(block, stmts=tuple(stmts))


def partition_pass(program: Program, target, min_work: int = 1 << 15, depth: int = 3) -> Program:
    """Tag one block of each top-level kernel with enough work as ``parallel``."""
    if target.cores < 2:
        return program
    stmts = []
    for s in program.entry.stmts:
        if isinstance(s, Block) and "kernel" in s.tags and _iterations_total(s) >= min_work:
            s = _partition(s, target.cores, depth)
        stmts.append(s)
    return replace(program, entry=replace(program.entry, stmts=tuple(stmts)))
