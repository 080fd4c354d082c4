"""Helpers for ``batch`` (vmap) rules: moving batch dimensions and one-line registrars.

A batch rule is ``rule(vals, dims, **params) -> (out, out_dim)`` (lists of both for
multiple-result primitives) where each ``dims`` entry is the position of that
operand's batch dimension, or ``None`` if the operand is the same for every batch
element. The interpreter only calls a rule when some operand is batched. Rules are
written with ``plait.lax`` operations on the (lower-level) values, so they stage
under ``jit`` and differentiate like any other code.

Registrars: ``defvectorized`` (elementwise unary primitives: the batch dimension
passes through), ``defbroadcasting`` (elementwise n-ary primitives: operands are
aligned on one batch dimension), ``defreducer`` (reductions over static ``axes``),
``defaxis`` (primitives with one static ``axis`` that keep the operand's shape).
"""
from __future__ import annotations

from typing import Sequence

from plait.core import dtypes
from plait.core.trace import get_aval

# ``plait.lax.shape_ops`` registers its rules with these helpers, so its functions are
# imported inside the helpers that use them.


def move_batch_dim(x, src: int | None, dst: int | None, size: int):
    """Put ``x``'s batch dim at ``dst`` (broadcasting ``x`` if it has none).

    ``dst=None`` returns ``x`` unchanged.
    """
    if dst is None:
        return x
    from plait.lax.shape_ops import broadcast_in_dim, transpose
    a = get_aval(x)
    if src is None:
        shape = a.shape[:dst] + (size,) + a.shape[dst:]
        dims = tuple(i for i in range(len(shape)) if i != dst)
        return broadcast_in_dim(x, shape, dims)
    if src == dst:
        return x
    perm = [i for i in range(a.ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, tuple(perm))


def batch_size(vals: Sequence, dims: Sequence[int | None]) -> int:
    """The size of the batch dimension (from the first batched operand)."""
    for v, d in zip(vals, dims):
        if d is not None:
            return get_aval(v).shape[d]
    raise ValueError("batch rule called without a batched operand (a plait bug)")


def shift_axis(axis: int, bdim: int | None) -> int:
    """A per-example axis number as an axis of the batched operand."""
    return axis if bdim is None or axis < bdim else axis + 1


def shift_axes(axes: Sequence[int], bdim: int | None) -> tuple:
    """:func:`shift_axis` of each axis."""
    return tuple(shift_axis(a, bdim) for a in axes)


def insert_at(seq: Sequence, pos: int, value) -> tuple:
    """``seq`` with ``value`` inserted at ``pos`` (a per-dimension param for the batch dim)."""
    seq = tuple(seq)
    return seq[:pos] + (value,) + seq[pos:]


def unbatched_shape(x, bdim: int | None) -> tuple:
    """The per-example shape of a batched operand."""
    s = get_aval(x).shape
    return s if bdim is None else s[:bdim] + s[bdim + 1:]


def index_as_int64(idx):
    """Indices in a dtype wide enough to count batch elements (int64; uint64 is kept)."""
    from plait.lax.elementwise import convert_element_type
    dt = get_aval(idx).dtype
    if dt in (dtypes.int64, dtypes.uint64):
        return idx
    return convert_element_type(idx, dtypes.int64)


def broadcast_batched(vals: Sequence, dims: Sequence[int | None]) -> tuple[list, int]:
    """Give every operand the same batched shape; returns ``(operands, out_dim)``.

    Operands are broadcast NumPy-style (trailing alignment) to the largest
    per-example shape; the batch dimension goes where the first full-rank batched
    operand has it, so operands that already agree are not moved.
    """
    from plait.lax.shape_ops import broadcast_in_dim, transpose
    size = batch_size(vals, dims)
    per = [unbatched_shape(v, d) for v, d in zip(vals, dims)]
    tgt = max(per, key=len)
    full_rank = [d for d, p in zip(dims, per) if d is not None and len(p) == len(tgt)]
    out_dim = full_rank[0] if full_rank else 0
    full = insert_at(tgt, out_dim, size)

    def pos(j):       # full-rank position of per-example target dim j
        return j if j < out_dim else j + 1

    out = []
    for v, d, p in zip(vals, dims, per):
        trail = [pos(j) for j in range(len(tgt) - len(p), len(tgt))]
        if d is None:
            out.append(broadcast_in_dim(v, full, tuple(trail)))
            continue
        if p == tgt:
            out.append(move_batch_dim(v, d, out_dim, size))
            continue
        v = move_batch_dim(v, d, 0, size)
        targets = [out_dim] + trail          # where operand dims (batch, *p) go
        order = sorted(range(len(targets)), key=targets.__getitem__)
        v = transpose(v, tuple(order))
        out.append(broadcast_in_dim(v, full, tuple(targets[i] for i in order)))
    return out, out_dim


def defvectorized(prim) -> None:
    """Elementwise unary primitive: the batch dim passes through unchanged."""
    def rule(vals, dims, **params):
        return prim.bind(vals[0], **params), dims[0]
    prim.def_rule("batch", rule)


def defbroadcasting(prim) -> None:
    """Elementwise n-ary primitive on equal shapes: operands share one batch dim."""
    def rule(vals, dims, **params):
        ops, out_dim = broadcast_batched(vals, dims)
        return prim.bind(*ops, **params), out_dim
    prim.def_rule("batch", rule)


def defreducer(prim) -> None:
    """Reduction over static sorted ``axes``: shift the axes past the batch dim."""
    def rule(vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        full = shift_axes(axes, d)
        return prim.bind(x, axes=full, **params), d - sum(1 for a in full if a < d)
    prim.def_rule("batch", rule)


def defaxis(prim) -> None:
    """Shape-preserving primitive with one static ``axis`` (cumulative ops)."""
    def rule(vals, dims, *, axis, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=shift_axis(axis, d), **params), d
    prim.def_rule("batch", rule)
