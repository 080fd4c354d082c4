"""Partition: run a kernel block's iterations on several cores.

A block is split over cores along one index only when iterations with different
values of that index write disjoint output elements: some dimension of every
output refinement is accessed as ``c*i + k`` (``i`` alone, ``c != 0``). That
index is moved to the front and the block is tagged ``parallel`` (rendered as an
OpenMP ``parallel for``). Blocks with less than ``min_work`` iterations stay
serial, since starting threads costs more than they save.
"""
from __future__ import annotations

from dataclasses import replace

from plait.stripe.ir import Block, Program


def _disjoint_index(block: Block) -> str | None:
    outs = [r for r in block.refs if r.dir in ("out", "inout")]
    if not outs:
        return None
    for idx in block.idxs:
        if idx.range < 2:
            continue
        ok = True
        for r in outs:
            if not any(a.vars == (idx.name,) and a.coeff(idx.name) != 0 for a in r.access):
                ok = False
                break
        if ok:
            return idx.name
    return None


def partition_pass(program: Program, target, min_work: int = 1 << 15) -> Program:
    """Tag each top-level kernel block with enough work as ``parallel``."""
    if target.cores < 2:
        return program
    stmts = []
    for s in program.entry.stmts:
        if isinstance(s, Block) and "kernel" in s.tags and s.iterations >= min_work:
            name = _disjoint_index(s)
            if name is not None:
                first = [i for i in s.idxs if i.name == name]
                rest = [i for i in s.idxs if i.name != name]
                s = replace(s, idxs=tuple(first + rest), tags=s.tags | {"parallel"})
        stmts.append(s)
    return replace(program, entry=replace(program.entry, stmts=tuple(stmts)))
