"""Localize: move a temporary into the only block that uses it, shrunk to that block's view.

For a block ``P`` and a ``none`` allocation ``X`` of ``P`` used by exactly one statement,
a child block ``C`` (and by no load, store or special of ``P`` itself), ``X`` is removed
from ``P`` and ``C``'s view of it becomes a fresh ``none`` allocation of the view's size
with compact row-major strides (re-strided through ``C``'s descendants).  Since a ``none``
allocation is fresh per iteration and starts at its aggregation identity, this is exact
when ``C``'s iterations touch disjoint parts of ``X`` and ``X`` is dead after ``C`` (it is a
temporary).  Recurses into children, so a fused temporary ends up in the smallest block
that uses it (a tile on the stack instead of a whole buffer).
"""
from __future__ import annotations

from dataclasses import replace

from plait.stripe.affine import Affine
from plait.stripe.ir import Block, Program, row_major_strides
from plait.stripe.passes._util import restride_views, view_users


def _disjoint_per_iteration(c: Block, view) -> bool:
    """Whether different iterations of ``c`` address disjoint parts of ``view``."""
    if not c.idxs:
        return True
    free = [ix.name for ix in c.idxs if ix.affine is None and ix.range > 1]
    for n in free:
        if not any(a.vars == (n,) and abs(a.coeff(n)) >= size for a, size in zip(view.access, view.shape)):
            return False
    return True


def localize_block(p: Block) -> Block:
    """Localize the temporaries of ``p`` (and recursively of its children)."""
    users = view_users(p.stmts)
    child_views: dict[int, dict] = {}     # child position -> {view it refines: [its views]}
    local: dict[int, dict] = {}           # child position -> {id(view): local allocation}
    dropped: set[int] = set()             # ids of p's refinements moved into a child
    for r in p.refs:
        if r.dir != "none":
            continue
        at = users.get(r.into, ())
        if len(at) != 1 or not isinstance(p.stmts[at[0]], Block):
            continue
        k = at[0]
        c = p.stmts[k]
        if k not in child_views:
            child_views[k] = {}
            for v in c.refs:
                child_views[k].setdefault(v.from_, []).append(v)
        views = child_views[k].get(r.into, [])
        if len(views) != 1 or not _disjoint_per_iteration(c, views[0]):
            continue
        v = views[0]
        local.setdefault(k, {})[id(v)] = replace(
            v, dir="none", from_=None, access=(Affine(),) * len(v.shape),
            strides=row_major_strides(v.shape), agg=r.agg, tags=frozenset())
        dropped.add(id(r))
    stmts = list(p.stmts)
    for k, new in local.items():
        c = stmts[k]
        c = replace(c, refs=tuple(new.get(id(q), q) for q in c.refs))
        stmts[k] = restride_views(c, {q.into: q.strides for q in new.values()})
    stmts = [localize_block(s) if isinstance(s, Block) else s for s in stmts]
    return replace(p, refs=tuple(r for r in p.refs if id(r) not in dropped), stmts=tuple(stmts))


def localize_pass(program: Program, target) -> Program:
    """Localize every temporary of the program (see module doc)."""
    return replace(program, entry=localize_block(program.entry))
