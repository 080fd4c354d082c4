"""Fuse: merge a producer kernel block with the consumer that follows it.

Two adjacent top-level blocks ``S`` and ``T`` (both tagged ``kernel``) fuse when ``S``
writes a temporary ``X`` (a ``none`` refinement of ``main`` that no other statement
uses) and ``T`` reads it.  The plan follows the Stripe paper's fusion (PlaidML's
criteria): ``S`` is first tiled so that its only indexes are those addressing ``X``
(the rest, e.g. a reduction, move to an inner block); every dimension of ``X`` is
then addressed in ``S`` as ``cs*s`` and in ``T`` either as ``ct*t`` with ``ct``
dividing ``cs`` (``T`` is tiled by ``cs/ct`` along ``t`` and ``t`` is renamed ``s``) or
by indexes that stay inner in ``T``.  The two outer blocks must then have identical
index spaces, and every buffer both touch must be addressed identically (exact
alias) when either writes it.  The fused block runs ``S``'s tile then ``T``'s tile
per iteration; :mod:`.localize` then shrinks ``X`` to one tile.

This fuses elementwise chains split across kernels and a contraction's epilogue
(bias, activation) into the contraction's output tiles.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from plait.stripe.affine import var
from plait.stripe.ir import Block, Program, Statement
from plait.stripe.passes._util import prune_unit_idxs, ref_vars, uses_view
from plait.stripe.tiling import apply_tile


def _single(a) -> Optional[tuple[str, int]]:
    """``(name, coeff)`` if ``a`` is ``coeff*name`` with coeff > 0 and no constant."""
    if len(a.terms) == 1 and a.const == 0 and a.terms[0][1] > 0:
        return a.terms[0]
    return None


def _rename_block(b: Block, ren: dict[str, str]) -> Block:
    """Rename this block's indexes (and their uses in refs, constraints, child offsets)."""
    from plait.stripe.passes._util import substitute_block
    sub = {o: var(n) for o, n in ren.items()}
    b = substitute_block(b, sub)
    return replace(b, idxs=tuple(replace(ix, name=ren.get(ix.name, ix.name)) for ix in b.idxs))


def _rename_view(b: Block, old: str, new: str) -> Block:
    """Rename view ``old`` of ``b`` to ``new`` (its statements and children follow)."""
    from plait.stripe.ir import Load, Special, Store
    refs = tuple(replace(r, into=new) if r.into == old else r for r in b.refs)
    stmts = []
    for s in b.stmts:
        if isinstance(s, Load) and s.from_ == old:
            s = replace(s, from_=new)
        elif isinstance(s, Store) and s.into == old:
            s = replace(s, into=new)
        elif isinstance(s, Special):
            s = replace(s, inputs=tuple(new if x == old else x for x in s.inputs),
                        outputs=tuple(new if x == old else x for x in s.outputs))
        elif isinstance(s, Block):
            s = replace(s, refs=tuple(replace(r, from_=new) if r.from_ == old else r for r in s.refs))
        stmts.append(s)
    return replace(b, refs=refs, stmts=tuple(stmts))


def _tiled(b: Block, tile: dict) -> Block:
    """``apply_tile`` with unit indexes pruned from both levels."""
    outer = apply_tile(b, tile, inner_tags=("fused_inner",))
    return prune_unit_idxs(replace(outer, stmts=(prune_unit_idxs(outer.stmts[0]),)))


def _outer_on(b: Block, keep: set[str]) -> Block:
    """``b`` tiled so its outer indexes are exactly ``keep`` (others move inside)."""
    if set(b.idx_names) <= keep:
        return b
    return _tiled(b, {ix.name: (1 if ix.name in keep else ix.range) for ix in b.idxs})


def fuse_two(s: Block, t: Block, x_main: str) -> Optional[Block]:
    """The fusion of ``s`` then ``t`` through main's temporary ``x_main``, or None."""
    if any(ix.affine is not None for ix in s.idxs + t.idxs):
        return None
    sx = [r for r in s.refs if r.from_ == x_main]
    tx = [r for r in t.refs if r.from_ == x_main]
    if len(sx) != 1 or len(tx) != 1 or sx[0].dir not in ("out", "inout") or tx[0].dir != "in":
        return None
    s2 = _outer_on(s, ref_vars(sx[0]))
    if s2.constraints:
        return None
    sx2 = [r for r in s2.refs if r.from_ == x_main][0]
    plan: dict[str, int] = {}
    ren: dict[str, str] = {}
    for a_s, a_t in zip(sx2.access, tx[0].access):
        ps, pt = _single(a_s), _single(a_t)
        if a_s.is_const and a_s.const == 0:
            continue  # T's indexes here stay inner
        if ps is None or pt is None or ps[1] % pt[1] or pt[0] in ren:
            return None
        ren[pt[0]] = ps[0]
        plan[pt[0]] = ps[1] // pt[1]
    tile = {ix.name: plan.get(ix.name, ix.range) for ix in t.idxs}
    t2 = _tiled(t, tile)  # T's statements always go one level down: no scalar clashes
    if t2.constraints:
        return None
    t2 = _rename_block(t2, ren)
    if sorted((ix.name, ix.range) for ix in s2.idxs) != sorted((ix.name, ix.range) for ix in t2.idxs):
        return None
    # merge refinements: exact aliases become one view, others keep distinct names
    refs = list(s2.refs)
    for r in t2.refs:
        same = [q for q in refs if q.from_ is not None and q.from_ == r.from_]
        if same:
            q = same[0]
            writes = q.dir in ("out", "inout") or r.dir in ("out", "inout")
            exact = q.access == r.access and q.shape == r.shape and q.strides == r.strides
            if not exact:
                if writes:
                    return None
            else:
                if r.dir in ("out", "inout") and q.dir != "inout" and r.agg != q.agg:
                    return None
                if q.into != r.into:
                    t2 = _rename_view(t2, r.into, q.into)
                if r.dir != q.dir:
                    d = "inout" if {q.dir, r.dir} != {"in"} else "in"
                    refs[refs.index(q)] = replace(q, dir=d)
                continue
        if any(q.into == r.into for q in refs):
            taken = {q.into for q in refs} | {q.into for q in t2.refs}
            k, new = 1, f"{r.into}_1"
            while new in taken:
                k += 1
                new = f"{r.into}_{k}"
            t2 = _rename_view(t2, r.into, new)
            r = replace(r, into=new)
        refs.append(r)
    return Block(name=f"{s.name}+{t.name}", idxs=s2.idxs, refs=tuple(refs),
                 stmts=s2.stmts + t2.stmts, tags=s.tags | t.tags | {"fused"},
                 comments=s.comments + t.comments, location=s.location)


def fuse_pass(program: Program, target, reqs=("kernel",)) -> Program:
    """Fuse adjacent top-level kernel blocks connected by a temporary (see module doc)."""
    main = program.entry
    tmps = {r.into for r in main.refs if r.dir == "none"}
    stmts: list[Statement] = list(main.stmts)
    changed = True
    while changed:
        changed = False
        for i in range(len(stmts) - 1):
            s, t = stmts[i], stmts[i + 1]
            if not (isinstance(s, Block) and isinstance(t, Block)
                    and all(x in s.tags and x in t.tags for x in reqs)):
                continue
            for r in s.refs:
                if r.from_ in tmps and r.dir in ("out", "inout") and \
                        sum(uses_view(u, r.from_) for u in stmts) == 2 and uses_view(t, r.from_):
                    f = fuse_two(s, t, r.from_)
                    if f is not None:
                        stmts[i:i + 2] = [f]
                        changed = True
                        break
            if changed:
                break
    return replace(program, entry=replace(main, stmts=tuple(stmts)))
