"""Fuse: merge a producer kernel block with the consumer that follows it.

Two adjacent top-level blocks ``S`` and ``T`` (both tagged ``kernel``) fuse when ``S``
writes a temporary ``X`` (a ``none`` refinement of ``main`` that no other statement
uses; between two elementwise blocks, one that later statements read too) or a program
output ``X`` (which later statements may read too), and ``T`` reads it; an ``X`` that
others read stays whole.  A block producing only scalars is not fused into a loop.
The plan follows the Stripe paper's fusion (PlaidML's
criteria): ``S`` is first tiled so that its only indexes are those addressing ``X``
(the rest, e.g. a reduction, move to an inner block); every dimension of ``X`` is
then addressed in ``S`` as ``cs*s`` and in ``T`` either as ``ct*t`` with ``ct``
dividing ``cs`` (``T`` is tiled by ``cs/ct`` along ``t`` and ``t`` is renamed ``s``) or
by indexes that stay inner in ``T``.  The two outer blocks must then have identical
index spaces, and every buffer both touch must be addressed identically (exact
alias) and by every outer index when either writes it.  The fused block runs ``S``'s tile then ``T``'s tile
per iteration; :mod:`.localize` then shrinks ``X`` to one tile.

This fuses elementwise chains split across kernels and a contraction's epilogue
(bias, activation) into the contraction's output tiles. An ``S`` without inner loops
whose innermost index is kept while others move inside (a sum over leading axes) is not
fused: the kept index would become the outer loop and the reduction would stride
through memory.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

from plait.stripe.affine import var
from plait.stripe.ir import Block, Load, Program, Special, Statement, Store
from plait.stripe.passes._util import (has_tags, loops_within, prune_unit_idxs, ref_vars,
                                       stmt_views)
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


def _strands_innermost(b: Block, keep: set[str]) -> bool:
    """Whether tiling ``b`` to the outer indexes ``keep`` would move other indexes
    inside its innermost one: a sum over leading axes (a bias gradient) would then run
    with its contiguous kept index outermost, its reduction striding through memory
    (relu-backward's bias sum over (32, 32, 32, 96): 96 passes over 12 MB). ``b`` may be
    an earlier fusion (the relu mask's select then the sum) whose tiles have no loops of
    their own: its indexes are still the innermost loops."""
    if loops_within(b) or not b.idxs:
        return False
    return b.idxs[-1].name in keep and not set(b.idx_names) <= keep


def _per_iteration(ref, b: Block) -> bool:
    """Whether every index of ``b`` (the fused block's outer loops) addresses ``ref``, so
    each iteration touches elements of its own. A view both blocks touch and one writes
    must be: an ``S`` summing over an outer index into it (a column sum ``T1[j] +=
    T0[i, j]`` that ``T`` then scales ``T0[i, j]`` by) would have ``T`` read a partial
    sum, and a ``T`` writing what a later iteration of ``S`` reads would clobber it."""
    return {ix.name for ix in b.idxs if ix.range > 1} <= ref_vars(ref)


class _RefIndex:
    """Where a block's refinements are: positions by parent view, and the view names.

    Fusion grows one block statement by statement; the index grows with it, so
    looking a view up never rescans the block's refinements."""

    __slots__ = ("by_from", "intos")

    def __init__(self, refs=()):
        self.by_from: dict[str, list[int]] = {}
        self.intos: set[str] = set()
        for k, r in enumerate(refs):
            self.add(k, r)

    def add(self, k: int, r) -> None:
        if r.from_ is not None:
            self.by_from.setdefault(r.from_, []).append(k)
        self.intos.add(r.into)


def _fuse(s: Block, si: _RefIndex, t: Block, ti: _RefIndex,
          x_main: str) -> Optional[tuple[Block, _RefIndex]]:
    """The fusion of ``s`` then ``t`` through main's temporary ``x_main`` and its
    refinement index (``si``, the index of ``s``, extended in place), or None (``si``
    untouched)."""
    if any(ix.affine is not None for ix in s.idxs) or any(ix.affine is not None for ix in t.idxs):
        return None
    sx = [s.refs[k] for k in si.by_from.get(x_main, ())]
    tx = [t.refs[k] for k in ti.by_from.get(x_main, ())]
    if len(sx) != 1 or len(tx) != 1 or sx[0].dir not in ("out", "inout") or tx[0].dir != "in":
        return None
    keep = ref_vars(sx[0])
    if _strands_innermost(s, keep):
        return None
    s2 = _outer_on(s, keep)
    if s2.constraints:
        return None
    if s2 is not s:
        si = _RefIndex(s2.refs)
    sx2 = s2.refs[si.by_from[x_main][0]]
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
    # merge refinements: exact aliases become one view, others keep distinct names.
    # s2's refinements stay in place (``changed`` overrides a direction), t2's new ones
    # are appended (``added``); nothing is committed to ``si`` before success.
    changed: dict[int, object] = {}
    added: list = []
    added_from: dict[str, int] = {}
    added_into: set[str] = set()
    for r in t2.refs:
        q, where = None, None
        if r.from_ is not None:
            ks = si.by_from.get(r.from_)
            if ks:
                where = ("s", ks[0])
                q = changed.get(ks[0], s2.refs[ks[0]])
            elif r.from_ in added_from:
                where = ("t", added_from[r.from_])
                q = added[where[1]]
        if q is not None:
            writes = q.dir in ("out", "inout") or r.dir in ("out", "inout")
            exact = q.access == r.access and q.shape == r.shape and q.strides == r.strides
            if not exact:
                if writes:
                    return None
            elif writes and not _per_iteration(q, s2):
                return None
            else:
                if r.dir in ("out", "inout") and q.dir != "inout" and r.agg != q.agg:
                    return None
                if q.into != r.into:
                    t2 = _rename_view(t2, r.into, q.into)
                if r.dir != q.dir:
                    q = replace(q, dir="inout" if {q.dir, r.dir} != {"in"} else "in")
                    if where[0] == "s":
                        changed[where[1]] = q
                    else:
                        added[where[1]] = q
                continue
        if r.into in si.intos or r.into in added_into:
            t2_into = {v.into for v in t2.refs}
            k, new = 1, f"{r.into}_1"
            while new in si.intos or new in added_into or new in t2_into:
                k += 1
                new = f"{r.into}_{k}"
            t2 = _rename_view(t2, r.into, new)
            r = replace(r, into=new)
        if r.from_ is not None:
            added_from.setdefault(r.from_, len(added))
        added_into.add(r.into)
        added.append(r)
    refs = list(s2.refs)
    for k, q in changed.items():
        refs[k] = q
    for j, r in enumerate(added):
        si.add(len(refs) + j, r)
    refs += added
    return (Block(name=f"{s.name}+{t.name}", idxs=s2.idxs, refs=tuple(refs),
                  stmts=s2.stmts + t2.stmts, tags=s.tags | t.tags | {"fused"},
                  comments=s.comments + t.comments, location=s.location), si)


def _fuse_adjacent(s, si, t, ti, tmps: set, outs: set, uses: dict,
                  reqs) -> Optional[tuple[Block, _RefIndex]]:
    """Fuse ``s`` and ``t`` through the first of ``s``'s refinements (in order) that
    ``s`` writes and ``t`` reads, of a temporary or a program output (one that later
    statements read too stays whole); updates ``uses`` on success."""
    if not (isinstance(s, Block) and isinstance(t, Block) and has_tags(s, reqs)
            and has_tags(t, reqs)):
        return None
    if s.iterations == 1 < t.iterations and all(math.prod(r.shape) == 1 for r in s.refs
                                                if r.dir in ("out", "inout")):
        # a producer of scalars stays apart: fused, it would become a one-iteration
        # outer block around the loop, and every later loop would nest in it as a
        # separate loop instead of fusing with this one (threefry's rounds: 12 loops)
        return None
    small, large = (si, ti) if len(si.by_from) <= len(ti.by_from) else (ti, si)
    shared = [x for x in small.by_from if x in large.by_from and (x in tmps or x in outs)]
    # a temporary that later statements read too stays whole, like an output, between
    # two elementwise blocks (threefry's rounds, whose words each feed several later
    # ones); a reduction on either side keeps the single-consumer rule (fusing argmax's
    # producer into it this way gave wrong indexes)
    plain = all("eltwise" in b.tags and "contraction" not in b.tags for b in (s, t))
    cands = sorted(k for x in shared if x in outs or uses[x] == 2 or plain
                   for k in si.by_from[x] if s.refs[k].dir in ("out", "inout"))
    for k in cands:
        out = _fuse(s, si, t, ti, s.refs[k].from_)
        if out is not None:
            for x in shared:        # the fused block is one user where there were two
                if x in tmps:
                    uses[x] -= 1
            return out
    return None


def fuse_pass(program: Program, target, reqs=("kernel",)) -> Program:
    """Fuse adjacent top-level kernel blocks connected by a temporary (see module doc).

    One pass over ``main``'s statements with a stack: each statement is fused into the
    one before it as long as they fuse (the result may then fuse with its own
    predecessor), the leftmost pair first, as a restart-after-every-fusion scan would.
    A fusion only lowers use counts, and a pair to the left gains a temporary used by
    exactly the two of them only when its right member is the one that fused, so the
    stack's earlier pairs never need another look. Use counts and refinement indexes
    are kept up to date, so the pass is linear in the statements (times the size of
    each fused tile)."""
    reqs = tuple(reqs)
    main = program.entry
    tmps = {r.into for r in main.refs if r.dir == "none"}
    # a program output written by one block and read by the next fuses like a
    # temporary (the tile writes it, then reads it back from cache), but stays whole:
    # later statements and the caller read it (Adam's three loops per parameter, its
    # moments m and v being outputs the update reads, become one)
    out_bufs = {b.name for b in program.buffers if b.kind == "out"}
    outs = {r.into for r in main.refs if r.dir != "none" and r.from_ in out_bufs}
    indexed = [(s, _RefIndex(s.refs) if isinstance(s, Block) else None) for s in main.stmts]
    uses: dict[str, int] = {}
    for s, si in indexed:
        for v in (si.by_from if si is not None else set(stmt_views(s))):
            if v in tmps:
                uses[v] = uses.get(v, 0) + 1
    done: list[tuple[Statement, Optional[_RefIndex]]] = []
    for t, ti in indexed:
        while done:
            s, si = done[-1]
            fused = _fuse_adjacent(s, si, t, ti, tmps, outs, uses, reqs)
            if fused is None:
                break
            done.pop()
            t, ti = fused
        done.append((t, ti))
    return replace(program, entry=replace(main, stmts=tuple(s for s, _ in done)))
