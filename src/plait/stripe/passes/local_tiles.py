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

The work-group shape (replacing the ``threads`` pass's) and ``tile_k`` come from
:func:`choose_tiles`: the autotile cost model over candidates that fit the target's
local memory and work-group limit and hold whole subgroups.

An operand is staged when its access involves a reduction index and is independent of
at least one work-item index (so several work-items of a group read each element).
Kernels the rewrite does not fit (nested blocks, no reduction index, no operand to
stage, tiles over ``local_bytes``) are left as they are. The program's semantics do
not change: each K tile's allocation is fresh, the stage writes every element the
compute block reads, and every original iteration runs exactly once (range
constraints cut the partial tiles).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from plait.stripe.affine import Affine
from plait.stripe.ir import (Barrier, Block, Constant, Index, Load, Program, Refinement,
                             Special, Store, agg_identity, np_dtype, row_major_strides)
from plait.stripe.passes.autotile import tile_cost
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


def _flatten(blk: Block):
    """``(contraction, epilogue, acc)`` of a kernel: ``contraction`` a
    block-shaped tuple ``(idxs, constraints, refs, stmts)`` whose refs refine the
    kernel's parent views directly; ``epilogue`` the kernel's statements after the
    contraction (``None`` for a bare contraction) and ``acc`` the refinement the
    contraction aggregates into (a scalar allocation of a fused kernel, else the
    output). ``None`` when the kernel has neither form."""
    if any(isinstance(s, (Special, Barrier)) for s in blk.stmts) \
            or any(i.affine is not None for i in blk.idxs):
        return None
    if not any(isinstance(s, Block) for s in blk.stmts):
        outs = [r for r in blk.refs if r.dir in ("out", "inout")]
        if len(outs) != 1 or any(r.dir == "none" for r in blk.refs):
            return None
        return (blk.idxs, blk.constraints, blk.refs, blk.stmts), None, outs[0]
    inner, rest = blk.stmts[0], blk.stmts[1:]
    allocs = [r for r in blk.refs if r.dir == "none"]
    if not isinstance(inner, Block) or any(isinstance(s, Block) for s in rest) \
            or len(allocs) != 1 or any(isinstance(s, (Block, Special)) for s in inner.stmts):
        return None
    acc = allocs[0]
    outs = [r for r in inner.refs if r.dir in ("out", "inout")]
    if len(outs) != 1 or outs[0].from_ != acc.into or math.prod(acc.shape) != 1:
        return None
    sub = {i.name: i.affine for i in inner.idxs if i.affine is not None}
    if any(i.range != 1 for i in inner.idxs if i.affine is not None):
        return None
    kref = {r.into: r for r in blk.refs}
    refs = []
    for r in inner.refs:
        k = kref.get(r.from_)
        if k is None:
            return None
        acc_ = tuple(a.substitute(sub) for a in r.access)
        if k is acc:
            refs.append(replace(r, from_=None))
        else:
            refs.append(replace(r, from_=k.from_, access=tuple(
                x + y for x, y in zip(k.access, acc_)), tags=k.tags | r.tags))
    idxs = blk.idxs + tuple(i for i in inner.idxs if i.affine is None)
    cons = blk.constraints + tuple(c.substitute(sub) for c in inner.constraints)
    return (idxs, cons, tuple(refs), inner.stmts), (blk.refs, rest), acc


def _analyse(blk: Block):
    """``(flat, threads, red, others, kt, staged)`` of a kernel the rewrite fits
    (``None`` otherwise): the flattened contraction, its work-item indexes, reduction
    indexes, other output indexes, the K index (the largest reduction) and the
    operands to stage."""
    flat = _flatten(blk)
    n = len(launch_shape(blk)[0])
    if flat is None or not n:
        return None
    (idxs, constraints, crefs, cstmts), epilogue, acc = flat
    if any(math.prod(r.shape) != 1 for r in crefs):
        return None
    cout = next(r for r in crefs if r.dir in ("out", "inout"))
    if cout.agg not in ("add", "mul", "max", "min"):
        return None
    threads = list(idxs[:n])
    out_vars = {t.name for t in threads} | {
        v for r in (blk.refs if epilogue else crefs) if r.dir in ("out", "inout")
        for a in r.access for v in a.vars}
    if epilogue is None and any(t.name not in {v for a in cout.access for v in a.vars}
                                for t in threads):
        return None
    red = [i for i in idxs[n:] if i.name not in out_vars]
    others = [i for i in idxs[n:] if i.name in out_vars]
    if not red or (epilogue is not None and any(
            v in {r.name for r in red} for a in cout.access for v in a.vars)):
        return None
    if epilogue is not None and any(v in {r.name for r in red}
                                    for c in blk.constraints for v in c.vars):
        return None
    kt = max(red, key=lambda i: i.range)
    staged = [r for r in crefs if r.dir == "in" and any(
        a.coeff(x.name) for a in r.access for x in red) and any(
        not any(a.coeff(t.name) for a in r.access) for t in threads)]
    if not staged:
        return None
    return flat, threads, red, others, kt, staged


def _extents(threads, group, others, red, kt, tk: int) -> dict:
    """Each index's extent over one work-group and K tile."""
    ext = {t.name: side for t, side in zip(threads, group)}
    ext.update({o.name: 1 for o in others})
    ext.update({r.name: tk if r is kt else r.range for r in red})
    return ext


def _local_bytes(staged, acc, group, ext: dict) -> int:
    """Local memory one work-group uses: its accumulator tile and staged operand tiles."""
    zero = {v: Affine() for v in ext}
    return math.prod(group) * np.dtype(np_dtype(acc.dtype)).itemsize + sum(
        math.prod(_box(a, zero, ext)[1] for a in r.access)
        * np.dtype(np_dtype(r.dtype)).itemsize for r in staged)


def _pow2_upto(n: int, cap: int) -> list[int]:
    """``1, 2, 4, ...`` up to the first power of two covering ``n``, each at most ``cap``."""
    out, p = [], 1
    while p <= cap:
        out.append(p)
        if p >= n:
            break
        p *= 2
    return out


def choose_tiles(blk: Block, target, local_bytes: int,
                 occupancy: int = 1) -> tuple[tuple, int] | None:
    """``(group shape, K tile)`` for a kernel the rewrite fits, by the autotile cost
    model fed the target's memory levels (``None`` when nothing fits).

    Candidates are power-of-two work-group sides (dimension ``d`` at most the first
    power of two covering its range) and K tiles (capped at ``K``); a candidate must
    keep the group within ``target.max_workgroup // occupancy`` work-items, hold whole
    subgroups (``target.subgroup``) when the launch has that many work-items, and fit
    its staged tiles and accumulator tile in ``local_bytes // occupancy`` (so that
    ``occupancy`` groups can be resident on a compute unit at once). Among those the cheapest by
    :func:`~plait.stripe.passes.autotile.tile_cost` wins: cache lines (of the target's
    ``line_bytes``: a coalesced transaction) per multiply-add over the tile, padding
    waste of partial groups and tiles, and too few work-groups for ``target.cores``."""
    got = _analyse(blk)
    if got is None:
        return None
    (idxs, constraints, crefs, _), _, acc = got[0]
    threads, red, others, kt, staged = got[1:]
    model = Block(name=blk.name, idxs=idxs, constraints=constraints, refs=crefs)
    limit = max(target.max_workgroup // occupancy, 1)
    local_bytes //= occupancy
    sides = [_pow2_upto(t.range, limit) for t in threads]
    whole = min(max(target.subgroup, 1), math.prod(s[-1] for s in sides))
    ks = sorted({min(p, kt.range) for p in _pow2_upto(kt.range, 1 << 30)})
    best, best_cost = None, math.inf
    for group in itertools.product(*sides):
        size = math.prod(group)
        if size > limit or size % whole:
            continue
        for tk in ks:
            ext = _extents(threads, group, others, red, kt, tk)
            if _local_bytes(staged, acc, group, ext) > local_bytes:
                break    # larger K tiles only grow
            c = tile_cost(model, ext, target.line_bytes, min_count=max(target.cores, 1))
            if c < best_cost:
                best, best_cost = (tuple(group), tk), c
    return best


def tile_kernel(blk: Block, parent: Block, tile_k: int, local_bytes: int) -> Block:
    """``blk`` rewritten to stage its reused operand tiles in local memory (``blk``
    itself when the rewrite does not apply; see the module docstring)."""
    got = _analyse(blk)
    if got is None:
        return blk
    (idxs, constraints, crefs, cstmts), epilogue, acc = got[0]
    threads, red, others, kt, staged = got[1:]
    _, group = launch_shape(blk)
    n = len(threads)
    cout = next(r for r in crefs if r.dir in ("out", "inout"))
    tk = max(1, min(tile_k, kt.range))
    if _local_bytes(staged, acc, group, _extents(threads, group, others, red, kt, tk)) \
            > local_bytes:
        return blk
    names = {i.name for i in idxs}
    fresh = _Names(names | {r.into for r in blk.refs} | {r.from_ for r in blk.refs}
                   | {r.into for r in crefs})
    gv = {t.name: fresh(f"g_{t.name}") for t in threads}
    kv = fresh(f"t_{kt.name}")
    lv = {i.name: fresh(f"l_{i.name}") for i in threads + red}
    # each original index = base (work-group / tile level) + local (work-item level)
    base, ext = {}, {}
    for t, side in zip(threads, group):
        base[t.name], ext[t.name] = _var(gv[t.name]) * side, side
    for o in others:
        base[o.name], ext[o.name] = _var(o.name), 1
    for r in red:
        base[r.name], ext[r.name] = (_var(kv) * tk, tk) if r is kt else (Affine(), r.range)
    boxes = {r.into: [_box(a, base, ext) for a in r.access] for r in staged}
    full = {r.from_: parent.ref(r.from_) for r in blk.refs if r.from_ is not None}

    def whole(r: Refinement, from_: str) -> Refinement:
        """``r`` widened to its whole parent view, refining ``from_``."""
        p = full[r.from_]
        return replace(r, from_=from_, access=(Affine(),) * len(p.shape), shape=p.shape)

    def passed(vs) -> tuple:
        return tuple(Index(v, 1, _var(v)) for v in vs)

    outer_vars = list(gv.values()) + [o.name for o in others]
    tile_vars = outer_vars + [kv]
    cache = {r.into: fresh(f"{r.into}_local") for r in staged}
    tile_shape = tuple(group)
    accn = fresh(f"{acc.into}_tile")
    items = tuple(Index(lv[t.name], side) for t, side in zip(threads, group))
    at_item = tuple(_var(lv[t.name]) for t in threads)
    acc_strides = row_major_strides(tile_shape)
    sub = {i.name: base[i.name] + _var(lv[i.name]) if i.name in lv else _var(i.name)
           for i in idxs}
    edge = [(t.range - 1) - sub[t.name] for t in threads
            if -(-t.range // ext[t.name]) * ext[t.name] != t.range]
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
        src = replace(r, from_=r.from_, access=tuple(lo + _var(x) for (lo, _), x in zip(box, dims)),
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
    # the compute block: one work-item per element of the group's accumulator tile
    cidx = items + tuple(Index(lv[r.name], ext[r.name]) for r in red if r is not kt)
    cidx += (Index(lv[kt.name], tk),)
    cons = [c.substitute(sub) for c in constraints] + edge
    if -(-kt.range // tk) * tk != kt.range:
        cons.append((kt.range - 1) - sub[kt.name])
    refs = []
    for r in crefs:
        if r.into in cache:
            acc_ = tuple(a.substitute(sub) - lo for a, (lo, _) in zip(r.access, boxes[r.into]))
            shape = tuple(e for _, e in boxes[r.into])
            refs.append(Refinement("in", r.into, cache[r.into], acc_, r.dtype, r.shape,
                                   row_major_strides(shape)))
        elif r is cout:
            refs.append(Refinement("out", r.into, accn, at_item, r.dtype,
                                   (1,) * n, acc_strides, r.agg))
        else:
            refs.append(replace(r, access=tuple(a.substitute(sub) for a in r.access)))
    compute = Block(name=f"{blk.name}_compute", idxs=cidx + passed(tile_vars),
                    constraints=tuple(cons), refs=tuple(refs), stmts=cstmts,
                    tags=frozenset({f"items_{n}", "compute"}), comments=blk.comments)
    allocs = tuple(Refinement("none", cache[r.into], None, (Affine(),) * len(boxes[r.into]),
                              r.dtype, tuple(e for _, e in boxes[r.into]),
                              row_major_strides(tuple(e for _, e in boxes[r.into])),
                              tags={"cache", "overwritten"}) for r in staged)
    views = tuple(whole(r, r.from_) for r in crefs if r.from_ is not None and r is not cout)
    accv = Refinement("out", accn, accn, (Affine(),) * n, acc.dtype, tile_shape,
                      acc_strides, cout.agg)
    ktile = Block(name=f"{blk.name}_ktiles", idxs=(Index(kv, -(-kt.range // tk)),)
                  + passed(outer_vars), refs=allocs + (accv,) + tuple(
                      replace(v, from_=v.into) for v in views),
                  stmts=tuple(stages) + (Barrier(), compute, Barrier()),
                  tags=frozenset({"ktiles"}))
    # the accumulator tile starts at the identity, each work-item its own element
    zero = fresh("$id")
    init = Block(name=f"{blk.name}_init", idxs=items, refs=(Refinement(
        "out", accn, accn, at_item, acc.dtype, (1,) * n, acc_strides, "assign"),),
        stmts=(Constant(zero, agg_identity(cout.agg, acc.dtype).item(), acc.dtype),
               Store(accn, zero)), tags=frozenset({f"items_{n}", "init"}))
    # the epilogue: each work-item combines its element into the outputs
    esub = {t.name: base[t.name] + _var(lv[t.name]) for t in threads}
    tile_ref = Refinement("in", acc.into if epilogue else fresh("acc"), accn, at_item,
                          acc.dtype, (1,) * n, acc_strides)
    if epilogue is None:
        ld = fresh("$acc")
        erefs = (tile_ref, replace(cout, from_=cout.into, access=tuple(
            a.substitute(esub) for a in cout.access)))
        estmts = (Load(ld, tile_ref.into), Store(cout.into, ld))
        kviews = tuple(whole(r, r.from_) for r in (cout,))
        econs = ()
    else:
        krefs, estmts = epilogue
        used = {s.from_ for s in estmts if isinstance(s, Load)} | {
            s.into for s in estmts if isinstance(s, Store)}
        erefs = (tile_ref,) + tuple(
            replace(r, from_=r.into, access=tuple(a.substitute(esub) for a in r.access))
            for r in krefs if r.into in used and r is not acc)
        kviews = tuple(whole(r, r.from_) for r in krefs if r.into in used and r is not acc)
        econs = tuple(c.substitute(esub) for c in blk.constraints)
    epi = Block(name=f"{blk.name}_epilogue", idxs=items + passed(outer_vars),
                constraints=econs + tuple(edge), refs=erefs, stmts=estmts,
                tags=frozenset({f"items_{n}", "epilogue"}))
    tile_alloc = Refinement("none", accn, None, (Affine(),) * n, acc.dtype, tile_shape,
                            acc_strides, tags={"cache", "overwritten"})
    wviews = {v.into: v for v in views + kviews}
    gidx = tuple(Index(gv[t.name], -(-t.range // side)) for t, side in zip(threads, group))
    return Block(name=blk.name, idxs=gidx + tuple(others),
                 refs=(tile_alloc,) + tuple(wviews.values()),
                 stmts=(replace(init, idxs=init.idxs + passed(outer_vars)), ktile, epi),
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


def _retile(blk: Block, parent: Block, target, tile_k: int | None, local_bytes: int,
            occupancy: int) -> Block:
    """One kernel through the rewrite: with ``tile_k`` None the cost model picks the
    work-group shape (replacing the ``threads`` pass's ``group_`` tag) and K tile."""
    if tile_k is not None:
        return tile_kernel(blk, parent, tile_k, local_bytes)
    choice = choose_tiles(blk, target, local_bytes, occupancy)
    if choice is None:
        return blk
    group, tk = choice
    tags = {t for t in blk.tags if not t.startswith("group_")} | {
        "group_" + "x".join(map(str, group))}
    return tile_kernel(replace(blk, tags=frozenset(tags)), parent, tk, local_bytes)


def local_tiles_pass(program: Program, target, tags: tuple = ("contraction",),
                     tile_k: int | None = None, level: str = "local",
                     occupancy: int = 1) -> Program:
    """Stage the reused operand tiles of every top-level kernel block tagged with all
    of ``tags`` in memory level ``level``: work-group shape and K tile chosen by
    :func:`choose_tiles` from the target's facts, or K tiles of ``tile_k`` in the
    ``threads`` pass's work-group shape when ``tile_k`` is given (``occupancy``: the
    work-groups the model leaves room for on one compute unit)."""
    lvl = target.level(level)
    if lvl is None or not lvl.bytes:
        return program
    want = set(tags)
    entry = program.entry
    stmts = tuple(_retile(s, entry, target, tile_k, lvl.bytes, occupancy)
                  if isinstance(s, Block) and "kernel" in s.tags and want <= s.tags else s
                  for s in entry.stmts)
    return replace(program, entry=replace(entry, stmts=stmts))
