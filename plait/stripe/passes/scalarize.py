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
from plait.stripe.passes._util import uses_view


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


def _flattenable(parent: Block, c: Block, names: set[str]) -> bool:
    """``names``: the views the parent has so far (earlier flattened siblings included)."""
    if c.idxs or c.constraints or c.location != parent.location or "kernel" in c.tags:
        return False
    for r in c.refs:
        if r.dir == "none":
            if r.into in names:
                return False
            continue
        try:
            p = parent.ref(r.from_)
        except KeyError:
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
    for s in parent.stmts:
        if isinstance(s, Block) and _flattenable(parent, s, {q.into for q in refs}):
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
            refs += [r for r in s.refs if r.dir == "none"]
            stmts += [_rename_view(_rename_scalars(t, sren), vren) for t in s.stmts]
        else:
            stmts.append(s)
    return replace(parent, refs=tuple(refs), stmts=tuple(stmts))


def _scalarize(b: Block) -> Block:
    refs = list(b.refs)
    stmts = list(b.stmts)
    for r in b.refs:
        if r.dir != "none" or math.prod(r.shape) != 1 or r.agg not in (None, "assign"):
            continue
        if any(isinstance(s, (Block, Special)) and uses_view(s, r.into) for s in stmts):
            continue
        held, ok, out = None, True, []
        alias: dict[str, str] = {}
        for s in stmts:
            if isinstance(s, Store) and s.into == r.into:
                held = alias.get(s.from_, s.from_)
                continue
            if isinstance(s, Load) and s.from_ == r.into:
                if held is None:
                    ok = False
                    break
                alias[s.into] = held
                continue
            out.append(s)
        if not ok:
            continue
        stmts = [_rename_scalars(s, alias) if not isinstance(s, (Load, LoadIndex, Constant)) else s
                 for s in out]
        refs.remove(r)
    return replace(b, refs=tuple(refs), stmts=tuple(stmts))


def scalarize_block(b: Block) -> Block:
    """Flatten once-per-iteration children, then scalarize one-element temporaries."""
    b = replace(b, stmts=tuple(scalarize_block(s) if isinstance(s, Block) else s for s in b.stmts))
    return _scalarize(_flatten(b))


def scalarize_pass(program: Program, target) -> Program:
    """Scalarize the whole program (see module doc)."""
    return replace(program, entry=scalarize_block(program.entry))
