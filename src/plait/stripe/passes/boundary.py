"""Boundary separation: interior tiles run without constraint checks, edge tiles with them.

For a block ``P`` (selected by tags) whose child blocks carry constraints that depend
on ``P``'s indexes (passed in as ``x = affine(P's index)``), each such constraint holds
for *every* iteration of the child exactly when its minimum over the child's index box
is ``>= 0`` (an affine of ``P``'s indexes, passed-in ones included).  ``P`` is then
replaced by disjoint copies covering its iteration space: the interior copy (all minima
``>= 0``; children without the implied constraints) and one edge copy per minimum that
keeps every check.  Constraints on a single loop index become loop bounds in the C
renderer, so no copy tests a condition per iteration it does not need.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from plait.stripe.affine import Affine, var
from plait.stripe.ir import Block, Program
from plait.stripe.passes._util import has_tags


def _child_min(child: Block, c: Affine, pvars: set[str]) -> Optional[Affine]:
    """Minimum of constraint ``c`` of ``child`` over the child's free indexes, as an
    affine of ``P``'s indexes (None if it depends on something else)."""
    sub = {}
    box = {}
    for ix in child.idxs:
        if ix.affine is not None:
            sub[ix.name] = ix.affine
        else:
            sub[ix.name] = var("#" + ix.name)  # child names may shadow the parent's
            box["#" + ix.name] = ix.range
    e = c.substitute(sub)
    out = Affine((), e.const)
    for n, k in e.terms:
        if n in box:
            out = out + (k * (box[n] - 1) if k < 0 else 0)
        elif n in pvars:
            out = out + k * var(n)
        else:
            return None
    return out


def separate(p: Block) -> list[Block]:
    """``p`` split into an interior copy and edge copies (or ``[p]`` if nothing to gain).

    With ``m_1 .. m_n`` the children's constraint minima (affines of ``p``'s indexes), the
    interior copy has constraints ``m_i >= 0`` for all ``i`` and edge copy ``j`` has
    ``m_i >= 0`` for ``i < j`` and ``m_j <= -1``: disjoint pieces covering ``p``.
    """
    if p.constraints or not any(ix.affine is None for ix in p.idxs):
        return [p]
    names = set(p.idx_names)
    mins: list[Affine] = []
    drop: dict[int, set] = {}
    for s in p.stmts:
        if not isinstance(s, Block):
            continue
        for c in s.constraints:
            m = _child_min(s, c, names)
            if m is None or m.is_const:
                continue
            if m not in mins:
                mins.append(m)
            drop.setdefault(id(s), set()).add(c)
    if not mins:
        return [p]
    inner_stmts = tuple(
        replace(s, constraints=tuple(c for c in s.constraints if c not in drop.get(id(s), ())))
        if isinstance(s, Block) else s for s in p.stmts)
    out = [replace(p, constraints=tuple(mins), stmts=inner_stmts, tags=p.tags | {"interior"})]
    for j, m in enumerate(mins):
        out.append(replace(p, constraints=tuple(mins[:j]) + (-1 - m,), tags=p.tags | {"edge"}))
    return out


def _walk(b: Block, reqs: tuple) -> Block:
    stmts = []
    for s in b.stmts:
        if isinstance(s, Block):
            if has_tags(s, reqs):
                stmts.extend(separate(s))
            else:
                stmts.append(_walk(s, reqs))
        else:
            stmts.append(s)
    return replace(b, stmts=tuple(stmts))


def boundary_pass(program: Program, target, reqs=("stencil_tile",)) -> Program:
    """Separate interior and edge tiles of every block tagged ``reqs``."""
    return replace(program, entry=_walk(program.entry, tuple(reqs)))
