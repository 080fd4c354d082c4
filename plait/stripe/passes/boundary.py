"""Boundary separation: interior tiles run without constraint checks, edge tiles with them.

For a block ``P`` (selected by tags) whose child blocks carry constraints that depend
on ``P``'s indexes (passed in as ``x = affine(P's index)``), each such constraint holds
for *every* iteration of the child exactly when its minimum over the child's index box
is ``>= 0``; when that minimum depends on a single index ``x`` of ``P`` it is a bound
``lo <= x <= hi``.  The interior box is the intersection of those bounds.  ``P`` is then
replaced by disjoint copies covering its iteration space: the interior copy (children
without the implied constraints) and edge copies (below / above the interior along one
index, inside it along the previous ones) that keep every check.  Each copy restricts
its indexes with single-index constraints, which the C renderer turns into loop bounds,
so no copy tests a condition per iteration it does not need.
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
    for ix in child.idxs:
        if ix.affine is not None:
            sub[ix.name] = ix.affine
    e = c.substitute(sub)
    out = Affine((), e.const)
    for n, k in e.terms:
        if n in pvars:
            out = out + k * var(n)
            continue
        try:
            ix = child.idx(n)
        except KeyError:
            return None
        if ix.affine is not None:
            return None
        out = out + (k * (ix.range - 1) if k < 0 else 0)
    return out


def _interior(p: Block) -> tuple[dict[str, tuple[int, int]], list]:
    """Interior bounds per index of ``p`` and the (child, constraint) pairs they imply."""
    free = {ix.name: ix.range for ix in p.idxs if ix.affine is None}
    box = {n: (0, r - 1) for n, r in free.items()}
    implied = []
    for s in p.stmts:
        if not isinstance(s, Block):
            continue
        for c in s.constraints:
            m = _child_min(s, c, set(free))
            if m is None or len(m.vars) != 1:
                continue
            (n, k), = m.terms
            lo, hi = box[n]
            if k > 0:   # k*n + c0 >= 0  <=>  n >= ceil(-c0 / k)
                lo = max(lo, -(m.const // k))
            else:       # n <= floor(c0 / -k)
                hi = min(hi, m.const // (-k))
            box[n] = (lo, hi)
            implied.append((s, c))
    return box, implied


def separate(p: Block) -> list[Block]:
    """``p`` split into an interior copy and edge copies (or ``[p]`` if nothing to gain)."""
    if p.constraints:
        return [p]
    box, implied = _interior(p)
    if not implied or any(lo > hi for lo, hi in box.values()):
        return [p]
    drop: dict[int, set] = {}
    for s, c in implied:
        drop.setdefault(id(s), set()).add(c)
    inner_stmts = tuple(
        replace(s, constraints=tuple(c for c in s.constraints if c not in drop.get(id(s), ())))
        if isinstance(s, Block) else s for s in p.stmts)
    ranges = {ix.name: ix.range for ix in p.idxs if ix.affine is None}
    cons_in = []
    for n, (lo, hi) in box.items():
        if lo > 0:
            cons_in.append(var(n) - lo)
        if hi < ranges[n] - 1:
            cons_in.append(hi - var(n))
    out = [replace(p, constraints=tuple(cons_in), stmts=inner_stmts, tags=p.tags | {"interior"})]
    prefix: list[Affine] = []
    for n, (lo, hi) in box.items():
        if lo > 0:
            out.append(replace(p, constraints=tuple(prefix + [lo - 1 - var(n)]), tags=p.tags | {"edge"}))
        if hi < ranges[n] - 1:
            out.append(replace(p, constraints=tuple(prefix + [var(n) - hi - 1]), tags=p.tags | {"edge"}))
        if lo > 0:
            prefix.append(var(n) - lo)
        if hi < ranges[n] - 1:
            prefix.append(hi - var(n))
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
