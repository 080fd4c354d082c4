"""Scalarize: fused temporaries become scalars (registers) instead of memory.

Two steps, recursively over every block:

1. **flatten** a child block (not a kernel) that runs exactly once per parent iteration
   (no indexes, no constraints) and whose refinements are identity views of the parent's (all-zero
   access, same shape and aggregation) or ``none`` allocations: its statements move into
   the parent (scalars renamed apart), its allocations too.  Fusion leaves such blocks
   when an elementwise consumer is tiled by 1.
2. **scalarize** a one-element ``none`` allocation that only loads and stores of the
   block itself touch, stored with ``assign`` before any load: each store records the
   scalar it wrote and later loads read that scalar; the allocation disappears.
"""
from __future__ import annotations

import math
from dataclasses import replace

from plait.stripe.ir import (Block, Constant, Intrinsic, Load, LoadIndex, Program, Special,
                             Statement, Store)
from plait.stripe.passes._util import stmt_views


def _scalars_of(s: Statement) -> tuple[list[str], list[str]]:
    """(defined, used) scalar names of a statement."""
    if isinstance(s, Load):
        return [s.into], []
    if isinstance(s, Store):
        return [], [s.from_]
    if isinstance(s, (Constant, LoadIndex)):
        return [s.into], []
    if isinstance(s, Intrinsic):
        return list(s.outputs), list(s.inputs)
    return [], []


def _rename_scalars(s: Statement, ren: dict[str, str]) -> Statement:
    r = lambda x: ren.get(x, x)  # noqa: E731
    if isinstance(s, Load):
        return replace(s, into=r(s.into))
    if isinstance(s, Store):
        return replace(s, from_=r(s.from_))
    if isinstance(s, (Constant, LoadIndex)):
        return replace(s, into=r(s.into))
    if isinstance(s, Intrinsic):
        return replace(s, inputs=tuple(map(r, s.inputs)), outputs=tuple(map(r, s.outputs)))
    return s


def _rename_view(s: Statement, ren: dict[str, str]) -> Statement:
    if isinstance(s, Load):
        return replace(s, from_=ren.get(s.from_, s.from_))
    if isinstance(s, Store):
        return replace(s, into=ren.get(s.into, s.into))
    if isinstance(s, Special):
        return replace(s, inputs=tuple(ren.get(x, x) for x in s.inputs),
                       outputs=tuple(ren.get(x, x) for x in s.outputs))
    if isinstance(s, Block):
        return replace(s, refs=tuple(replace(q, from_=ren.get(q.from_, q.from_)) for q in s.refs))
    return s


def _flattenable(parent_refs: dict, location, c: Block, names: set[str]) -> bool:
    """``parent_refs``: the parent's refinements by name; ``names``: the views the parent
    has so far (earlier flattened siblings included)."""
    if c.idxs or c.constraints or c.location != location or "kernel" in c.tags:
        return False
    for r in c.refs:
        if r.dir == "none":
            if r.into in names:
                return False
            continue
        p = parent_refs.get(r.from_)
        if p is None:
            return False
        if any(not a.is_const or a.const for a in r.access) or r.shape != p.shape \
                or r.strides != p.strides or (r.dir != "in" and r.agg != p.agg):
            return False
    return True


def _flatten(parent: Block) -> Block:
    taken: set[str] = set()
    for s in parent.stmts:
        taken.update(_scalars_of(s)[0])
    stmts: list[Statement] = []
    refs = list(parent.refs)
    names = {q.into for q in refs}
    parent_refs: dict = {}
    for q in parent.refs:
        parent_refs.setdefault(q.into, q)
    for s in parent.stmts:
        if isinstance(s, Block) and _flattenable(parent_refs, parent.location, s, names):
            vren = {r.into: r.from_ for r in s.refs if r.dir != "none"}
            sren: dict[str, str] = {}
            for t in s.stmts:
                for d in _scalars_of(t)[0]:
                    new, k = d, 0
                    while new in taken:
                        k += 1
                        new = f"{d}_{k}"
                    taken.add(new)
                    sren[d] = new
            moved = [r for r in s.refs if r.dir == "none"]
            refs += moved
            names.update(r.into for r in moved)
            stmts += [_rename_view(_rename_scalars(t, sren), vren) for t in s.stmts]
        else:
            stmts.append(s)
    return replace(parent, refs=tuple(refs), stmts=tuple(stmts))


def _scalarize(b: Block) -> Block:
    """Scalarize every one-element ``assign`` temporary of ``b`` that only ``b``'s own
    loads and stores touch and that is stored before it is loaded (one walk for all)."""
    cands = {r.into for r in b.refs
             if r.dir == "none" and math.prod(r.shape) == 1 and r.agg in (None, "assign")}
    if not cands:
        return b
    for s in b.stmts:                       # used by a child block or a special: kept
        if isinstance(s, (Block, Special)):
            cands.difference_update(stmt_views(s))
    stored: set[str] = set()
    for s in b.stmts:                       # loaded before any store: kept
        if isinstance(s, Store) and s.into in cands:
            stored.add(s.into)
        elif isinstance(s, Load) and s.from_ in cands and s.from_ not in stored:
            cands.discard(s.from_)
    if not cands:
        return b
    held: dict[str, str] = {}
    alias: dict[str, str] = {}
    out = []
    for s in b.stmts:
        if isinstance(s, Store) and s.into in cands:
            held[s.into] = alias.get(s.from_, s.from_)
        elif isinstance(s, Load) and s.from_ in cands:
            alias[s.into] = held[s.from_]
        else:
            out.append(s)
    stmts = [_rename_scalars(s, alias) if not isinstance(s, (Load, LoadIndex, Constant)) else s
             for s in out]
    return replace(b, refs=tuple(r for r in b.refs if r.into not in cands), stmts=tuple(stmts))


def scalarize_block(b: Block) -> Block:
    """Flatten once-per-iteration children, then scalarize one-element temporaries."""
    b = replace(b, stmts=tuple(scalarize_block(s) if isinstance(s, Block) else s for s in b.stmts))
    return _scalarize(_flatten(b))


def scalarize_pass(program: Program, target) -> Program:
    """Scalarize the whole program (see module doc)."""
    return replace(program, entry=scalarize_block(program.entry))
