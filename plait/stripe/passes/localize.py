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
from plait.stripe.passes._util import restride, uses_view


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
    refs = list(p.refs)
    stmts = list(p.stmts)
    for r in p.refs:
        if r.dir != "none":
            continue
        users = [k for k, s in enumerate(stmts) if uses_view(s, r.into)]
        if len(users) != 1 or not isinstance(stmts[users[0]], Block):
            continue
        c = stmts[users[0]]
        views = [v for v in c.refs if v.from_ == r.into]
        if len(views) != 1 or not _disjoint_per_iteration(c, views[0]):
            continue
        v = views[0]
        strides = row_major_strides(v.shape)
        local = replace(v, dir="none", from_=None, access=(Affine(),) * len(v.shape),
                        strides=strides, agg=r.agg, tags=frozenset())
        c = replace(c, refs=tuple(local if q is v else q for q in c.refs))
        stmts[users[0]] = restride(c, v.into, strides)
        refs.remove(r)
    stmts = [localize_block(s) if isinstance(s, Block) else s for s in stmts]
    return replace(p, refs=tuple(refs), stmts=tuple(stmts))


def localize_pass(program: Program, target) -> Program:
    """Localize every temporary of the program (see module doc)."""
    return replace(program, entry=localize_block(program.entry))
