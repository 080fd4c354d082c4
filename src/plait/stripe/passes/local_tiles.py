"""Local-memory tiling: stage the operand tiles a work-group reuses in shared memory.

For a GPU-model target, after ``threads`` has mapped a kernel's parallel indexes to
work-items (``threads_<n>``, ``group_<shape>``), a contraction kernel (its tags hold
every one of the config's ``tags``) whose body is scalar statements is rewritten as

* a **work-group block** (tag ``workgroups``): its first ``n`` indexes count
  work-groups (``ceil(range / side)`` each), followed by the kernel's other output
  indexes (loops every work-item of the group runs);
* inside it, a **K-tile block** over ``ceil(K / tile_k)`` tiles of the largest
  reduction index ``K`` (its iterations are unordered: the aggregation is
  commutative), which allocates one ``none`` refinement per staged operand (tag
  ``cache``; ``place`` puts it in the config's local level) holding the box of the
  operand this group and K tile read;
* per staged operand a **stage block** (tag ``items_<m>``: its first ``m`` indexes are
  spread over the group's work-items, the operand's contiguous dimension on work-item
  dimension 0, so neighbouring work-items load neighbouring elements) copying the box
  (only its in-bounds elements);
* a :class:`~plait.stripe.ir.Barrier`, the **compute block** (tag ``items_<n>``: one
  work-item per output element of the group, the original statements reading the
  staged tiles), and a second barrier before the next tile overwrites them.

An operand is staged when its access involves a reduction index and is independent of
at least one work-item index (so several work-items of a group read each element).
Kernels the rewrite does not fit (nested blocks, no reduction index, no operand to
stage, tiles over ``local_bytes``) are left as they are. The program's semantics do
not change: each K tile's allocation is fresh, the stage writes every element the
compute block reads, and every original iteration runs exactly once (range
constraints cut the partial tiles).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from plait.stripe.affine import Affine
from plait.stripe.ir import (Barrier, Block, Index, Load, Program, Refinement, Special,
                             Store, np_dtype, row_major_strides)
from plait.stripe.passes.threads import launch_shape


def _var(name: str) -> Affine:
    return Affine.of({name: 1})


def _box(a: Affine, base: dict, ext: dict) -> tuple[Affine, int]:
    """``(lo, extent)`` of the values of ``a`` when each variable ``v`` ranges over
    ``base[v] + [0, ext[v])`` (``lo`` an affine of the bases)."""
    lo, size = Affine.of({}, a.const), 1
    for v, c in a.terms:
        lo = lo + base[v] * c
        if c < 0:
            lo = lo + c * (ext[v] - 1)
        size += abs(c) * (ext[v] - 1)
    return lo, size


def tile_kernel(blk: Block, parent: Block, tile_k: int, local_bytes: int) -> Block:
    """``blk`` rewritten to stage its reused operand tiles in local memory (``blk``
    itself when the rewrite does not apply; see the module docstring)."""
    if any(isinstance(s, (Block, Special, Barrier)) for s in blk.stmts) \
            or any(i.affine is not None for i in blk.idxs):
        return blk
    ranges, group = launch_shape(blk)
    n = len(ranges)
    outs = [r for r in blk.refs if r.dir in ("out", "inout")]
    if not n or len(outs) != 1 or any(math.prod(r.shape) != 1 for r in blk.refs):
        return blk
    threads = list(blk.idxs[:n])
    out_vars = {v for a in outs[0].access for v in a.vars}
    if any(t.name not in out_vars for t in threads):
        return blk
    red = [i for i in blk.idxs[n:] if i.name not in out_vars]
    others = [i for i in blk.idxs[n:] if i.name in out_vars]
    if not red:
        return blk
    kt = max(red, key=lambda i: i.range)
    tk = max(1, min(tile_k, kt.range))
    names = {i.name for i in blk.idxs}
    fresh = _Names(names | {r.into for r in blk.refs} | {r.from_ for r in blk.refs})
    gv = {t.name: fresh(f"g_{t.name}") for t in threads}
    kv = fresh(f"t_{kt.name}")
    lv = {i.name: fresh(f"l_{i.name}") for i in blk.idxs if i.name not in out_vars or
          i.name in gv}
    # each original index = base (work-group / tile level) + local (work-item level)
    base, ext = {}, {}
    for t, side in zip(threads, group):
        base[t.name], ext[t.name] = _var(gv[t.name]) * side, side
    for o in others:
        base[o.name], ext[o.name] = _var(o.name), 1
    for r in red:
        base[r.name], ext[r.name] = (_var(kv) * tk, tk) if r is kt else (Affine(), r.range)
    staged = [r for r in blk.refs if r.dir == "in" and any(
        a.coeff(x.name) for a in r.access for x in red) and any(
        not any(a.coeff(t.name) for a in r.access) for t in threads)]
    if not staged:
        return blk
    boxes = {r.into: [_box(a, base, ext) for a in r.access] for r in staged}
    nbytes = sum(math.prod(e for _, e in boxes[r.into]) * np.dtype(np_dtype(r.dtype)).itemsize
                 for r in staged)
    if nbytes > local_bytes:
        return blk
    full = {r.from_: parent.ref(r.from_) for r in blk.refs}

    def whole(r: Refinement, from_: str) -> Refinement:
        """``r`` widened to its whole parent view, refining ``from_``."""
        p = full[r.from_]
        return replace(r, from_=from_, access=(Affine(),) * len(p.shape), shape=p.shape)

    def passed(vs) -> tuple:
        return tuple(Index(v, 1, _var(v)) for v in vs)

    outer_vars = list(gv.values()) + [o.name for o in others]
    tile_vars = outer_vars + [kv]
    cache = {r.into: fresh(f"{r.into}_local") for r in staged}
    stages = []
    for r in staged:
        box = boxes[r.into]
        dims = [fresh(f"s{d}") for d in range(len(box))]
        order = sorted(range(len(box)), key=lambda d: (box[d][1] == 1, r.strides[d], d))
        m = min(n, len(box))
        cons = []
        for d, (lo, _) in enumerate(box):
            at = lo + _var(dims[d])
            cons += [at, (full[r.from_].shape[d] - 1) - at]
        src = replace(r, from_=r.into, access=tuple(lo + _var(x) for (lo, _), x in zip(box, dims)),
                      tags=())
        local_shape = tuple(e for _, e in box)
        dst = Refinement("out", cache[r.into], cache[r.into], tuple(_var(x) for x in dims),
                         r.dtype, (1,) * len(box), row_major_strides(local_shape), "assign")
        val = fresh("$v")
        stages.append(Block(
            name=f"stage_{r.into}", idxs=tuple(Index(dims[d], box[d][1]) for d in order)
            + passed(tile_vars), constraints=tuple(cons), refs=(src, dst),
            stmts=(Load(val, r.into), Store(cache[r.into], val)),
            tags=frozenset({f"items_{m}", "stage"}),
            comments=(f"{cache[r.into]} = {r.from_} tile {list(local_shape)}",)))
    # the compute block: one work-item per output element of the group
    sub = {i.name: base[i.name] + _var(lv[i.name]) if i.name in lv else _var(i.name)
           for i in blk.idxs}
    cidx = [Index(lv[t.name], side) for t, side in zip(threads, group)]
    cidx += [Index(lv[r.name], ext[r.name]) for r in red if r is not kt]
    cidx += [Index(lv[kt.name], tk)]
    cons = [c.substitute(sub) for c in blk.constraints]
    for i in threads + [kt]:
        if -(-i.range // ext[i.name]) * ext[i.name] != i.range:
            cons.append((i.range - 1) - sub[i.name])
    refs = []
    for r in blk.refs:
        if r.into in cache:
            acc = tuple(a.substitute(sub) - lo for a, (lo, _) in zip(r.access, boxes[r.into]))
            shape = tuple(e for _, e in boxes[r.into])
            refs.append(Refinement("in", r.into, cache[r.into], acc, r.dtype, r.shape,
                                   row_major_strides(shape), location=None))
        else:
            refs.append(replace(r, from_=r.into,
                                access=tuple(a.substitute(sub) for a in r.access)))
    compute = Block(name=f"{blk.name}_compute", idxs=tuple(cidx) + passed(tile_vars),
                    constraints=tuple(cons), refs=tuple(refs), stmts=blk.stmts,
                    tags=frozenset({f"items_{n}", "compute"}), comments=blk.comments)
    allocs = tuple(Refinement("none", cache[r.into], None, (Affine(),) * len(boxes[r.into]),
                              r.dtype, tuple(e for _, e in boxes[r.into]),
                              row_major_strides(tuple(e for _, e in boxes[r.into])),
                              tags={"cache", "overwritten"}) for r in staged)
    views = tuple(whole(r, r.into) for r in blk.refs)
    ktile = Block(name=f"{blk.name}_ktiles", idxs=(Index(kv, -(-kt.range // tk)),)
                  + passed(outer_vars), refs=allocs + views,
                  stmts=tuple(stages) + (Barrier(), compute, Barrier()),
                  tags=frozenset({"ktiles"}))
    gidx = tuple(Index(gv[t.name], -(-t.range // side)) for t, side in zip(threads, group))
    return Block(name=blk.name, idxs=gidx + tuple(others),
                 refs=tuple(whole(r, r.from_) for r in blk.refs), stmts=(ktile,),
                 tags=blk.tags | {"workgroups"}, comments=blk.comments)


class _Names:
    """Fresh names avoiding ``taken``."""

    def __init__(self, taken: set):
        self.taken = set(taken)

    def __call__(self, want: str) -> str:
        name, k = want, 0
        while name in self.taken:
            k += 1
            name = f"{want}{k}"
        self.taken.add(name)
        return name


def local_tiles_pass(program: Program, target, tags: tuple = ("contraction",),
                     tile_k: int = 32, level: str = "local") -> Program:
    """Stage the reused operand tiles of every top-level kernel block tagged with all
    of ``tags`` in memory level ``level`` (K tiles of ``tile_k``)."""
    lvl = target.level(level)
    if lvl is None or not lvl.bytes:
        return program
    want = set(tags)
    entry = program.entry
    stmts = tuple(tile_kernel(s, entry, tile_k, lvl.bytes)
                  if isinstance(s, Block) and "kernel" in s.tags and want <= s.tags else s
                  for s in entry.stmts)
    return replace(program, entry=replace(entry, stmts=stmts))
