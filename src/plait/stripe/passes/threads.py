"""Thread assignment: map each kernel's parallel indexes onto a device's NDRange.

For a GPU-model target every top-level ``kernel`` block becomes one device kernel.
Up to ``dims`` of its indexes whose iterations write disjoint output elements (the
test the CPU ``partition`` pass uses) become work-item dimensions: they move to the
front of the block, dimension 0 first, and the block is tagged ``threads_<n>`` and
``group_<a>x<b>...`` (the work-group shape). Dimension 0 is the index with the
smallest stride in the outputs, so neighbouring work-items touch neighbouring
elements (coalesced access on a GPU). The group shape comes from the config's
``group`` list (per number of dimensions), each side shrunk to the index's range
(rounded up to a power of two) and the product kept within ``target.max_workgroup``.
A kernel without such an index runs on one work-item. Moving indexes and adding tags
changes no semantics (a block's iterations are unordered).
"""
from __future__ import annotations

from dataclasses import replace

from plait.stripe.ir import Block, Program
from plait.stripe.passes.partition import disjoint


def _out_stride(block: Block, name: str) -> int:
    """Smallest element stride of index ``name`` over the block's outputs."""
    strides = [abs(sum(a.coeff(name) * st for a, st in zip(r.access, r.strides)))
               for r in block.refs if r.dir in ("out", "inout")]
    return min((s for s in strides if s), default=1 << 62)


def _group(ranges: list, sides: list, limit: int) -> tuple:
    shape = []
    for r, s in zip(ranges, sides):
        p = 1
        while p < min(r, s):
            p *= 2
        shape.append(p)
    while _prod(shape) > max(limit, 1):
        k = max(range(len(shape)), key=lambda i: shape[i])
        shape[k] //= 2
    return tuple(shape)


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def assign(block: Block, dims: int, groups: tuple, limit: int) -> Block:
    """``block`` with its thread indexes first and tagged (unchanged without any)."""
    cand = [i for i in block.idxs if i.affine is None and i.range >= 2
            and disjoint(block, i.name)]
    cand.sort(key=lambda i: (_out_stride(block, i.name), -i.range))
    chosen = cand[:dims]
    if not chosen:
        return block
    names = {i.name for i in chosen}
    rest = [i for i in block.idxs if i.name not in names]
    shape = _group([i.range for i in chosen], list(groups[len(chosen) - 1]), limit)
    tags = {f"threads_{len(chosen)}", "group_" + "x".join(map(str, shape))}
    return replace(block, idxs=tuple(chosen + rest), tags=block.tags | tags)


def threads_pass(program: Program, target, dims: int = 2,
                 group: tuple = ((256,), (16, 16), (8, 8, 4))) -> Program:
    """Tag every top-level ``kernel`` block with its work-item indexes and group shape."""
    stmts = tuple(assign(s, min(dims, 3), group, target.max_workgroup)
                  if isinstance(s, Block) and "kernel" in s.tags else s
                  for s in program.entry.stmts)
    return replace(program, entry=replace(program.entry, stmts=stmts))


def launch_shape(block: Block) -> tuple[tuple, tuple]:
    """``(ranges, group)`` of a tagged block's work-item dimensions (``((), ())`` if none);
    a ``workgroups`` block's indexes count groups, so its ranges are in work-items."""
    n = next((int(t[8:]) for t in block.tags if t.startswith("threads_")), 0)
    g = next((tuple(int(x) for x in t[6:].split("x")) for t in block.tags
              if t.startswith("group_")), ())[:n]
    loops = [i for i in block.idxs if not (i.range == 1 and i.affine is not None)]
    ranges = tuple(i.range for i in loops[:n])
    if "workgroups" in block.tags:
        ranges = tuple(r * s for r, s in zip(ranges, g))
    return ranges, g
