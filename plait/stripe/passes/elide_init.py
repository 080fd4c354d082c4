"""Elide init: mark output buffers whose initial fill is dead.

A non-input buffer starts at its aggregation identity (the IR rule).  When the first
top-level statement touching it is a kernel block that overwrites every element
exactly once with ``assign`` — no constraints, and each buffer dimension addressed by
its own index with coefficient 1 over the full size (size-1 dimensions by 0) — the
fill is dead.  ``main``'s refinement of the buffer is then tagged ``overwritten`` and
the renderer skips the fill (for a 16M-element output that is 64 MB of writes).
Must run before passes that tile kernel blocks.
"""
from __future__ import annotations

from dataclasses import replace

from plait.stripe.ir import Block, Program
from plait.stripe.passes._util import uses_view


def _covers(block: Block, ref, shape: tuple[int, ...]) -> bool:
    if block.constraints or any(ix.affine is not None for ix in block.idxs):
        return False
    if ref.dir != "out" or ref.agg not in (None, "assign") or len(ref.access) != len(shape):
        return False
    seen = set()
    for a, size in zip(ref.access, shape):
        if size == 1 and a.is_const and a.const == 0:
            continue
        if a.const != 0 or len(a.terms) != 1 or a.terms[0][1] != 1:
            return False
        n = a.terms[0][0]
        if n in seen or block.idx(n).range != size:
            return False
        seen.add(n)
    return len(seen) == len([i for i in block.idxs if i.range > 1])


def elide_init_pass(program: Program, target) -> Program:
    """Tag main's refinements of buffers that are fully overwritten before any use."""
    main = program.entry
    refs = list(main.refs)
    for k, r in enumerate(refs):
        if r.dir not in ("out", "inout") or r.from_ is None:
            continue
        buf = program.buffer(r.from_)
        if buf.kind == "in" or r.access != tuple(type(a)() for a in r.access):
            continue
        first = next((s for s in main.stmts if uses_view(s, r.into)), None)
        if not isinstance(first, Block) or "kernel" not in first.tags:
            continue
        views = [v for v in first.refs if v.from_ == r.into]
        if len(views) == 1 and _covers(first, views[0], buf.shape):
            refs[k] = replace(r, tags=r.tags | {"overwritten"})
    return replace(program, entry=replace(main, refs=tuple(refs)))
