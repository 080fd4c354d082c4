"""``apply_tile``: the basic tiling rewrite of the Stripe paper, section 3.3.

A block with index ranges ``r_i`` and tile sizes ``t_i`` becomes an *outer* block over
the tile quotients (ranges ``ceil(r_i / t_i)``) containing one *inner* block over one
tile (ranges ``t_i``).  The original index value is ``t_i * outer + inner``:

* every refinement is split in two: the outer one (in the outer block) moves by
  ``c * t_i`` per outer step and has the tile's footprint as its sizes
  (``size + sum |c| * (t_i - 1)``); the inner one refines it with the original
  coefficients, re-based so the tile's lowest element is at offset 0;
* statements and constraints move to the inner block; ``none`` allocations too;
* when a tile is uneven (``r_i % t_i != 0``) or the inner block needs the full value of
  ``i`` (constraints, ``load_index``, child index offsets), the outer index is passed in
  explicitly as ``io = t_i * i`` and ``i`` becomes ``io + i``; an uneven tile gets the
  constraint ``r_i - 1 - io - i >= 0`` removing the overflow;
* indexes already passed in from a parent (``affine`` set) are not split: they stay on
  the outer block and are passed again (``p = p``) when the inner block uses them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping, Optional, Sequence, Union

from .affine import Affine, var
from .ir import Block, Index, LoadIndex, Statement


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _used_in_inner(block: Block) -> set[str]:
    used: set[str] = set()
    for c in block.constraints:
        used.update(c.vars)
    for s in block.stmts:
        if isinstance(s, LoadIndex):
            used.update(s.expr.vars)
        elif isinstance(s, Block):
            for ix in s.idxs:
                if ix.affine is not None:
                    used.update(ix.affine.vars)
    return used


def tile_sizes_of(block: Block, tile_sizes: Union[Mapping[str, int], Sequence[int]]) -> dict[str, int]:
    """Normalise tile sizes to ``{index: size}`` (sequence order = ``block.idxs``)."""
    if isinstance(tile_sizes, Mapping):
        unknown = set(tile_sizes) - set(block.idx_names)
        if unknown:
            raise ValueError(f"block {block.name!r} has no index {sorted(unknown)[0]!r}")
        sizes = dict(tile_sizes)
    else:
        ts = list(tile_sizes)
        if len(ts) != len(block.idxs):
            raise ValueError(f"block {block.name!r} has {len(block.idxs)} indexes, got {len(ts)} tile sizes")
        sizes = dict(zip(block.idx_names, ts))
    out = {}
    for ix in block.idxs:
        t = int(sizes.get(ix.name, ix.range))
        if t < 1:
            raise ValueError(f"tile size of {ix.name!r} must be >= 1, got {t}")
        if ix.affine is not None and t != ix.range:
            raise ValueError(f"index {ix.name!r} is passed in from the parent and cannot be split")
        out[ix.name] = min(t, ix.range)
    return out


def apply_tile(
    block: Block,
    tile_sizes: Union[Mapping[str, int], Sequence[int]],
    *,
    inner_name: Optional[str] = None,
    outer_tags: Iterable[str] = (),
    inner_tags: Iterable[str] = (),
) -> Block:
    """Split ``block`` into an outer block of tiles around an inner block of one tile.

    ``tile_sizes`` is ``{index: size}`` (missing indexes are not split) or a sequence
    aligned with ``block.idxs``; sizes larger than the range are clamped.  The outer block
    keeps the name, tags, comments and location of ``block`` (plus ``outer_tags``); the
    inner block is named ``inner_name`` (default ``<name>_inner``) and tagged
    ``inner_tags``.  Returns the outer block.
    """
    t = tile_sizes_of(block, tile_sizes)
    free = [ix for ix in block.idxs if ix.affine is None]
    kept = [ix for ix in block.idxs if ix.affine is not None]
    used = _used_in_inner(block)
    taken = set(block.idx_names)

    def fresh(base: str) -> str:
        n, k = base, 0
        while n in taken:
            k += 1
            n = f"{base}{k}"
        taken.add(n)
        return n

    outer_idxs = [Index(ix.name, _ceil(ix.range, t[ix.name])) for ix in free] + list(kept)
    inner_idxs = [Index(ix.name, t[ix.name]) for ix in free]
    passthru: list[Index] = []
    subst: dict[str, Affine] = {}
    extra_cons: list[Affine] = []
    for ix in free:
        r, ti = ix.range, t[ix.name]
        uneven = r % ti != 0
        if _ceil(r, ti) > 1 and (uneven or ix.name in used):
            po = fresh(f"{ix.name}o")
            passthru.append(Index(po, 1, ti * var(ix.name)))
            subst[ix.name] = var(po) + var(ix.name)
            if uneven:
                extra_cons.append((r - 1) - var(po) - var(ix.name))
    for ix in kept:
        if ix.name in used:
            passthru.append(Index(ix.name, 1, var(ix.name)))

    outer_refs, inner_refs = [], []
    for ref in block.refs:
        if ref.dir == "none":
            inner_refs.append(ref)
            continue
        o_acc, i_acc, o_shape = [], [], []
        for a, size in zip(ref.access, ref.shape):
            lo = sum(c * (t[n] - 1) for n, c in a.terms if c < 0 and n in t and block.idx(n).affine is None)
            oa, ia, ext = Affine((), a.const + lo), Affine((), -lo), size
            for n, c in a.terms:
                if block.idx(n).affine is None:
                    oa = oa + c * t[n] * var(n)
                    ia = ia + c * var(n)
                    ext += abs(c) * (t[n] - 1)
                else:
                    oa = oa + c * var(n)
            o_acc.append(oa)
            i_acc.append(ia)
            o_shape.append(ext)
        outer_refs.append(replace(ref, access=tuple(o_acc), shape=tuple(o_shape)))
        inner_refs.append(replace(ref, access=tuple(i_acc), from_=ref.into))

    def sub_stmt(s: Statement) -> Statement:
        if isinstance(s, LoadIndex):
            return replace(s, expr=s.expr.substitute(subst))
        if isinstance(s, Block):
            return replace(
                s,
                idxs=tuple(
                    replace(ix, affine=ix.affine.substitute(subst)) if ix.affine is not None else ix
                    for ix in s.idxs
                ),
            )
        return s

    inner = Block(
        name=inner_name if inner_name is not None else f"{block.name}_inner",
        idxs=tuple(inner_idxs + passthru),
        constraints=tuple(c.substitute(subst) for c in block.constraints) + tuple(extra_cons),
        refs=tuple(inner_refs),
        stmts=tuple(sub_stmt(s) for s in block.stmts),
        tags=frozenset(inner_tags),
    )
    return Block(
        name=block.name,
        idxs=tuple(outer_idxs),
        constraints=(),
        refs=tuple(outer_refs),
        stmts=(inner,),
        tags=block.tags | frozenset(outer_tags),
        comments=block.comments,
        location=block.location,
    )
