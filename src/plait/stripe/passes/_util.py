"""Helpers shared by the Stripe passes: selecting blocks by tags and small rewrites.

Nothing here knows about an op: blocks are chosen by their tags, and the rewrites
(pruning unit indexes, re-striding a localized buffer) are generic.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from plait.stripe.affine import Affine
from plait.stripe.ir import Block, Program, Refinement, Statement


def has_tags(block: Block, reqs: Iterable[str]) -> bool:
    """Whether ``block`` carries every tag in ``reqs``."""
    return all(t in block.tags for t in reqs)


def map_kernels(program: Program, fn: Callable[[Block], Statement | list],
                reqs: Iterable[str] = ("kernel",)) -> Program:
    """Apply ``fn`` to each top-level statement block of ``main`` tagged ``reqs``.

    ``fn`` returns a replacement statement or a list of statements.
    """
    reqs = tuple(reqs)
    stmts: list = []
    for s in program.entry.stmts:
        if isinstance(s, Block) and has_tags(s, reqs):
            r = fn(s)
            stmts.extend(r if isinstance(r, list) else [r])
        else:
            stmts.append(s)
    return replace(program, entry=replace(program.entry, stmts=tuple(stmts)))


def ref_vars(ref: Refinement) -> set[str]:
    """Index names used by a refinement's access."""
    out: set[str] = set()
    for a in ref.access:
        out.update(a.vars)
    return out


def loops_within(block: Block) -> bool:
    """Whether a statement of ``block`` is a block with loops of its own: without one,
    ``block``'s indexes are the innermost loops (its child blocks, such as the bodies an
    earlier fusion left, run once per iteration)."""
    return any(isinstance(s, Block) and any(ix.range > 1 for ix in s.idxs) for s in block.stmts)


def flat_coeff(ref: Refinement, name: str) -> int:
    """The element stride of index ``name`` in ``ref`` (sum of coeff * stride)."""
    return sum(a.coeff(name) * s for a, s in zip(ref.access, ref.strides))


def prune_unit_idxs(block: Block) -> Block:
    """Drop indexes of range 1 with no offset (their value is always 0)."""
    dead = [ix.name for ix in block.idxs if ix.range == 1 and ix.affine is None]
    if not dead:
        return block
    zero = {n: Affine() for n in dead}
    return substitute_block(replace(block, idxs=tuple(ix for ix in block.idxs if ix.name not in dead)),
                            zero)


def substitute_block(block: Block, subst: dict) -> Block:
    """Substitute this block's index names in its constraints, accesses and children's offsets."""
    from plait.stripe.ir import LoadIndex

    def stmt(s):
        if isinstance(s, LoadIndex):
            return replace(s, expr=s.expr.substitute(subst))
        if isinstance(s, Block):
            return replace(s, idxs=tuple(
                replace(ix, affine=ix.affine.substitute(subst)) if ix.affine is not None else ix
                for ix in s.idxs))
        return s

    return replace(
        block,
        constraints=tuple(c.substitute(subst) for c in block.constraints),
        refs=tuple(replace(r, access=tuple(a.substitute(subst) for a in r.access)) for r in block.refs),
        stmts=tuple(stmt(s) for s in block.stmts),
    )


def restride_views(block: Block, strides: dict[str, tuple[int, ...]]) -> Block:
    """Give views of ``block`` (``{name: new strides}``) and every view refining them
    below the new strides, in one walk of the statements."""
    refs = tuple(replace(r, strides=strides[r.into]) if r.into in strides else r
                 for r in block.refs)
    stmts = []
    for s in block.stmts:
        if isinstance(s, Block):
            below = {r.into: strides[r.from_] for r in s.refs if r.from_ in strides}
            if below:
                s = restride_views(s, below)
        stmts.append(s)
    return replace(block, refs=refs, stmts=tuple(stmts))


def stmt_views(stmt: Statement) -> Iterable[str]:
    """The views of the enclosing block that a statement reads or writes (possibly with
    repeats): a load's or store's view, a special's operands, a child block's parents."""
    from plait.stripe.ir import Load, Special, Store
    if isinstance(stmt, Load):
        return (stmt.from_,)
    if isinstance(stmt, Store):
        return (stmt.into,)
    if isinstance(stmt, Special):
        return stmt.inputs + stmt.outputs
    if isinstance(stmt, Block):
        return [r.from_ for r in stmt.refs if r.from_ is not None]
    return ()


def view_users(stmts) -> dict[str, list[int]]:
    """``{view: positions of the statements using it, ascending}``: one walk, so passes
    asking "who uses this view" per refinement stay linear in the block's size."""
    users: dict[str, list[int]] = {}
    for k, s in enumerate(stmts):
        for v in stmt_views(s):
            at = users.setdefault(v, [])
            if not at or at[-1] != k:
                at.append(k)
    return users
