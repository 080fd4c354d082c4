"""Placement: put every fresh allocation in one of the target's memory levels.

Each ``none`` refinement tagged ``cache`` (``local_tiles``' staged tiles) goes to the
``cache`` level; each other one gets ``location`` = the first of ``levels`` (innermost first;
names from the target config's memory list) whose capacity holds it. Temporaries of
the entry block are shared by a program's kernels, so they go to the last (outermost)
level. The OpenCL renderer declares ``private`` ones as private arrays and gives each
work-item a slice of a device buffer for ``global`` ones. Only ``location`` changes,
which the Stripe semantics ignore.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from plait.errors import CompileError
from plait.stripe.ir import Block, Program, np_dtype


def _nbytes(r) -> int:
    return (1 + sum((s - 1) * st for s, st in zip(r.shape, r.strides) if s > 0)) \
        * np.dtype(np_dtype(r.dtype)).itemsize


def _level(nbytes: int, levels: tuple, sizes: dict) -> str:
    return next((lv for lv in levels if sizes[lv] >= nbytes), levels[-1])


def _place(block: Block, levels: tuple, sizes: dict, cache: str | None) -> Block:
    refs = tuple(r if r.from_ is not None else
                 replace(r, location=cache) if cache and "cache" in r.tags else
                 replace(r, location=_level(_nbytes(r), levels, sizes)) for r in block.refs)
    stmts = tuple(_place(s, levels, sizes, cache) if isinstance(s, Block) else s
                  for s in block.stmts)
    return replace(block, refs=refs, stmts=stmts)


def place_pass(program: Program, target, levels: tuple = ("private", "global"),
               cache: str | None = None) -> Program:
    """Set the ``location`` of every ``none`` refinement by size and memory level;
    those tagged ``cache`` (a work-group's staged tiles) go to level ``cache``."""
    levels = tuple(levels)
    missing = [lv for lv in levels + ((cache,) if cache else ()) if target.level(lv) is None]
    if missing:
        raise CompileError(f"target {target.name!r} has no memory level {missing[0]!r} "
                           f"(its levels: {[m.name for m in target.memory]})", locate=False)
    sizes = {lv: target.level(lv).bytes for lv in levels}
    entry = program.entry
    refs = tuple(replace(r, location=levels[-1]) if r.from_ is None else r for r in entry.refs)
    stmts = tuple(_place(s, levels, sizes, cache) if isinstance(s, Block) else s
                  for s in entry.stmts)
    return replace(program, entry=replace(entry, refs=refs, stmts=stmts))
