"""Elide init: mark output buffers whose initial fill is dead.

A non-input buffer starts at its aggregation identity (the IR rule).  When the first
top-level statement touching it is a kernel block that overwrites every element
exactly once with ``assign`` — no constraints, and each buffer dimension addressed by
its own indexes as a mixed radix over the full size (``i`` or a reshape's ``32*i + j``;
size-1 dimensions by 0) — the
fill is dead.  ``main``'s refinement of the buffer is then tagged ``overwritten`` and
the renderer skips the fill (for a 16M-element output that is 64 MB of writes).  The
same holds for a ``none`` temporary of any block whose first user overwrites it (a
localized row of a fused softmax).  Run it first (before tiling hides the pattern) and
again after localize.
"""
from __future__ import annotations

from dataclasses import replace

from plait.stripe.ir import Block, Program
from plait.stripe.passes._util import view_users


def _covers(block: Block, ref, shape: tuple[int, ...]) -> bool:
    """Whether ``block`` assigns every element of its view ``ref`` (of a buffer ``shape``)."""
    if block.constraints or any(ix.affine is not None for ix in block.idxs):
        return False
    if ref.dir != "out" or ref.agg not in (None, "assign") or len(ref.access) != len(shape):
        return False
    if any(isinstance(s, Block) for s in block.stmts):
        return False
    seen = set()
    for a, size in zip(ref.access, shape):
        if a.is_const and a.const == 0 and size == 1:
            continue
        if a.const != 0 or not _mixed_radix(block, a, size) or seen & set(a.vars):
            return False
        seen.update(a.vars)
    return True


def _mixed_radix(block: Block, a, size: int) -> bool:
    """Whether ``a`` (no constant) maps its indexes' box onto ``range(size)`` one to one:
    its coefficients, smallest first, are 1 and each the previous times its index's
    range (a reshape's ``32*i + j`` over ``j < 32``), and the ranges multiply to ``size``."""
    step = 1
    for c, n in sorted((c, n) for n, c in a.terms):
        if c != step:
            return False
        step *= block.idx(n).range
    return step == size


class _FirstUsers:
    """The first statement of a block using each view, and that statement's views of it."""

    def __init__(self, block: Block):
        self.block = block
        self.users = view_users(block.stmts)
        self._views: dict[int, dict] = {}

    def first(self, name: str):
        at = self.users.get(name)
        return (at[0], self.block.stmts[at[0]]) if at else (None, None)

    def views(self, k: int, name: str) -> list:
        by_from = self._views.get(k)
        if by_from is None:
            by_from = self._views[k] = {}
            for v in self.block.stmts[k].refs:
                by_from.setdefault(v.from_, []).append(v)
        return by_from.get(name, [])


def _mark(fu: _FirstUsers, refs: list, k: int, shape: tuple[int, ...]) -> None:
    r = refs[k]
    at, first = fu.first(r.into)
    if not isinstance(first, Block) or "overwritten" in r.tags:
        return
    views = fu.views(at, r.into)
    if len(views) == 1 and _covers(first, views[0], shape):
        refs[k] = replace(r, tags=r.tags | {"overwritten"})


def _walk(block: Block) -> Block:
    refs = list(block.refs)
    fu = _FirstUsers(block)
    for k, r in enumerate(refs):
        if r.dir == "none" and r.access == tuple(type(a)() for a in r.access):
            _mark(fu, refs, k, r.shape)
    stmts = tuple(_walk(s) if isinstance(s, Block) else s for s in block.stmts)
    return replace(block, refs=tuple(refs), stmts=stmts)


def elide_init_pass(program: Program, target) -> Program:
    """Tag refinements whose initial fill is dead: program outputs and local temporaries."""
    main = program.entry
    refs = list(main.refs)
    fu = _FirstUsers(main)
    for k, r in enumerate(refs):
        if r.dir not in ("out", "inout") or r.from_ is None:
            continue
        buf = program.buffer(r.from_)
        if buf.kind == "in" or r.access != tuple(type(a)() for a in r.access):
            continue
        _mark(fu, refs, k, buf.shape)
    main = _walk(replace(main, refs=tuple(refs)))
    return replace(program, entry=main)
