"""Autotile: choose tile sizes with the Stripe paper's cost model and apply them.

The cost of a tiling (paper section 3.3; PlaidML's formula) is the number of cache
lines the tile's refinements touch per unit of work inside the tile, under a cap on
the bytes all tiles occupy together::

    lines(ref)  = memory_io(tile extent of ref, line width)
    cost(tile)  = expand * (1 + input_cost*in_lines + output_cost*out_lines) / prod(t)
                  * (1 + split_factor * log2(number of tiles))

``expand`` is the padding waste of uneven tiles (``prod(t * ceil(r/t)) / prod(r)``).
The tie-break toward fewer tiles is relative (PlaidML adds ``split_factor * log2``,
which swamps the line count once tiles hold thousands of MACs per line).
Tile shapes are searched best-first from size 1 (or the required multiple) upward,
doubling (``only_po2``) or stepping to the next divisor of the range (sizes that must be
multiples of a stencil size also step to the balanced splits ``ceil(range/q)`` rounded
up to the multiple), never past the memory cap; the search visits at most ``max_candidates`` shapes.  Results are
cached per (block shape, options).  Uneven tiles are legal: :func:`apply_tile` adds the
overflow constraints.
"""
from __future__ import annotations

import heapq
import math
from typing import Mapping, Optional

from plait.lru import LRUCache
from plait.stripe.ir import Block, Program, np_dtype
from plait.stripe.passes._util import map_kernels, prune_unit_idxs, ref_vars
from plait.stripe.tiling import apply_tile


def memory_io(sizes: tuple[int, ...], strides: tuple[int, ...], line_elems: float) -> float:
    """Expected cache lines touched by a dense box of ``sizes`` with element ``strides``.

    Dimensions are visited from the smallest stride; neighbours along a dimension whose
    gap to the part already covered is less than a line share a line with probability
    ``1 - gap/line_elems``.  ``line_elems == 0`` counts every element as its own line.
    """
    lines, reach = 1.0, 0
    for size, stride in sorted(zip(sizes, strides), key=lambda p: abs(p[1])):
        gap = abs(stride) - reach
        lines *= size
        if line_elems > 0 and gap < line_elems:
            lines -= (1 - gap / line_elems) * (size - 1)
        reach += abs(stride) * (size - 1)
    return lines


def tile_extent(block: Block, ref, tile: Mapping[str, int]) -> tuple[int, ...]:
    """Sizes of ``ref``'s footprint over one tile (``size + sum |c| * (t - 1)`` per dim)."""
    out = []
    for a, size in zip(ref.access, ref.shape):
        ext = size
        for n, c in a.terms:
            if n in tile:
                ext += abs(c) * (tile[n] - 1)
        out.append(ext)
    return tuple(out)


def tile_cost(block: Block, tile: Mapping[str, int], line_bytes: int, *,
              max_total_bytes: Optional[int] = None, input_cost: float = 1.0,
              output_cost: float = 1.0, split_factor: float = 0.001,
              min_count: int = 1) -> Optional[float]:
    """Cost of tiling ``block`` by ``tile`` (None if the tiles exceed ``max_total_bytes``).

    With ``min_count > 1`` a tiling with fewer than ``min_count`` tiles along its best
    output index (what a parallel loop splits) costs ``min_count / count`` times more
    (PlaidML's utilization factor), and a count that is not a multiple of
    ``min_count`` costs ``rounds * min_count / count`` (the idle tail of the last round).
    """
    total = 0
    in_lines = out_lines = 0.0
    for r in block.refs:
        if r.dir == "none":
            continue
        ext = tile_extent(block, r, tile)
        item = np_dtype(r.dtype).itemsize
        total += math.prod(ext) * item
        lines = memory_io(ext, r.strides, line_bytes / item if line_bytes else 0)
        if r.dir == "in":
            in_lines += lines
        elif r.dir == "out":
            out_lines += lines
    if max_total_bytes is not None and total > max_total_bytes:
        return None
    compute = math.prod(tile.values())
    padded = math.prod(t * -(-ix.range // t) for ix, t in ((block.idx(n), t) for n, t in tile.items()))
    expand = padded / max(1, math.prod(block.idx(n).range for n in tile))
    tiles = math.prod(-(-block.idx(n).range // t) for n, t in tile.items())
    util = 1.0
    if min_count > 1:
        outs: set[str] = set()
        for r in block.refs:
            if r.dir in ("out", "inout"):
                outs |= ref_vars(r)
        # the tiles of one output index are what a parallel loop splits
        count = max([-(-block.idx(n).range // t) for n, t in tile.items() if n in outs] or [1])
        # too few tiles idle some units; a count that does not divide leaves a tail round
        util = min_count / min(count, min_count) * (-(-count // min_count) * min_count / count)
    return (util * expand * (1 + input_cost * in_lines + output_cost * out_lines) / compute
            * (1 + split_factor * math.log2(tiles)))


_CACHE = LRUCache()   # (block signature, options) -> best tile


def _signature(block: Block) -> tuple:
    return (tuple((ix.name, ix.range) for ix in block.idxs),
            tuple((r.dir, r.access, r.shape, r.strides, r.dtype) for r in block.refs))


def search(block: Block, line_bytes: int, *, max_total_bytes: Optional[int] = None,
           multiple_of: Mapping[str, int] = {}, fixed: Mapping[str, int] = {},
           only_po2: bool = True, acc_idxs: bool = True, input_cost: float = 1.0,
           output_cost: float = 1.0, split_factor: float = 0.001, min_count: int = 1,
           max_candidates: int = 4000) -> dict[str, int]:
    """The best tile ``{index: size}`` for ``block`` (every free index gets a size).

    ``multiple_of`` forces sizes to be multiples of a stencil size (the paper's rule for
    already-dimensioned blocks); ``fixed`` pins sizes; with ``acc_idxs=False``
    accumulation indexes (absent from every output) keep their full range.
    """
    opts = (line_bytes, max_total_bytes, tuple(sorted(multiple_of.items())),
            tuple(sorted(fixed.items())), only_po2, acc_idxs, input_cost, output_cost,
            split_factor, min_count, max_candidates)
    key = (_signature(block), opts)
    hit = _CACHE.get(key)
    if hit is not None:
        return dict(hit)
    free = [ix for ix in block.idxs if ix.affine is None]
    out_vars: set[str] = set()
    for r in block.refs:
        if r.dir in ("out", "inout"):
            out_vars |= ref_vars(r)
    start, limit = {}, {}
    for ix in free:
        m = multiple_of.get(ix.name, 1)
        limit[ix.name] = -(-ix.range // m) * m
        if ix.name in fixed:
            start[ix.name] = limit[ix.name] = min(fixed[ix.name], limit[ix.name])
        elif not acc_idxs and ix.name not in out_vars:
            start[ix.name] = limit[ix.name] = ix.range
        else:
            start[ix.name] = min(m, limit[ix.name])

    sizes: dict[str, list[int]] = {}
    for ix in free:
        m = multiple_of.get(ix.name, 1)
        if m > 1:  # doubling from the stencil size, plus the balanced splits of the range
            cand = {min(m << j, limit[ix.name]) for j in range(40) if m << j < 2 * limit[ix.name]}
            cand |= {-(-(-(-ix.range // q)) // m) * m for q in range(1, min(64, limit[ix.name] // m) + 1)}
            sizes[ix.name] = sorted(c for c in cand if c >= start[ix.name])

    def step(n: str, t: int) -> int:
        m = multiple_of.get(n, 1)
        if m > 1:
            return next((c for c in sizes[n] if c > t), t)
        if only_po2:
            return min(t * 2, limit[n])
        r = block.idx(n).range
        for d in range(t + 1, r + 1):
            if r % d == 0:
                return d
        return r

    def cost(t: dict) -> Optional[float]:
        return tile_cost(block, t, line_bytes, max_total_bytes=max_total_bytes,
                         input_cost=input_cost, output_cost=output_cost,
                         split_factor=split_factor, min_count=min_count)

    names = [ix.name for ix in free]
    best_t, best_c = dict(start), cost(start)
    seen = {tuple(start[n] for n in names)}
    heap = [(best_c if best_c is not None else math.inf, 0, tuple(start[n] for n in names))]
    count = 0
    while heap and count < max_candidates:
        _, _, cur = heapq.heappop(heap)
        for k, n in enumerate(names):
            nxt = step(n, cur[k])
            if nxt == cur[k]:
                continue
            cand = cur[:k] + (nxt,) + cur[k + 1:]
            if cand in seen:
                continue
            seen.add(cand)
            count += 1
            c = cost(dict(zip(names, cand)))
            if c is None:
                continue  # over the memory cap: growing further cannot help
            if best_c is None or c < best_c:
                best_t, best_c = dict(zip(names, cand)), c
            heapq.heappush(heap, (c, count, cand))
    _CACHE[key] = dict(best_t)
    return best_t


def _layout_conflict(b: Block) -> bool:
    """Whether the block's views disagree on which index is contiguous (a transpose)."""
    inner = set()
    for r in b.refs:
        if r.dir == "none":
            continue
        best = None
        for ix in b.idxs:
            st = abs(sum(a.coeff(ix.name) * s for a, s in zip(r.access, r.strides)))
            if st and ix.range > 1 and (best is None or st < best[0]):
                best = (st, ix.name)
        if best is not None:
            inner.add(best[1])
    return len(inner) > 1


def autotile_pass(program: Program, target, reqs=("kernel", "contraction"),
                  exclude=("stencil",), max_total_bytes: Optional[int] = None,
                  only_po2: bool = True, acc_idxs: bool = True, input_cost: float = 1.0,
                  output_cost: float = 1.0, split_factor: float = 0.001,
                  only_conflicts: bool = False) -> Program:
    """Tile every top-level block tagged ``reqs`` (and none of ``exclude``) by its best tile.

    The outer block keeps the tags (plus ``tiled``); the inner block is tagged
    ``tile_inner``. ``max_total_bytes`` defaults to the target's L1 size.  With
    ``only_conflicts`` only blocks whose views disagree on the contiguous index (where
    tiling is what makes both sides stream) are tiled.
    """
    cap = max_total_bytes if max_total_bytes is not None else target.l1_bytes

    def fn(b: Block):
        if any(t in b.tags for t in exclude) or any(ix.affine is not None for ix in b.idxs):
            return b
        if only_conflicts and not _layout_conflict(b):
            return b
        t = search(b, target.line_bytes, max_total_bytes=cap, only_po2=only_po2,
                   acc_idxs=acc_idxs, input_cost=input_cost, output_cost=output_cost,
                   split_factor=split_factor)
        if all(t[ix.name] >= ix.range for ix in b.idxs) or all(v == 1 for v in t.values()):
            return b
        outer = apply_tile(b, t, inner_tags=("tile_inner",), outer_tags=("tiled",))
        return prune_unit_idxs(outer)

    return map_kernels(program, fn, reqs)
