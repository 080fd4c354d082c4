"""Helpers for ``batch`` rules: moving batch dimensions and one-line registrars.

A batch rule is ``rule(vals, dims, **params) -> (out, out_dim)`` where each ``dims``
entry is the position of that operand's batch dimension, or ``None`` if the operand
is not batched. ``defvectorized`` covers elementwise unary primitives,
``defbroadcasting`` n-ary elementwise ones.
"""
from __future__ import annotations

from plait.core.trace import get_aval
from plait.lax import shape_ops


def move_batch_dim(x, src: int | None, dst: int | None, size: int):
    """Put ``x``'s batch dim at ``dst`` (broadcasting ``x`` if it has none)."""
    if dst is None:
        return x
    a = get_aval(x)
    if src is None:
        shape = a.shape[:dst] + (size,) + a.shape[dst:]
        dims = tuple(i for i in range(len(shape)) if i != dst)
        return shape_ops.broadcast_in_dim(x, shape, dims)
    if src == dst:
        return x
    perm = [i for i in range(a.ndim) if i != src]
    perm.insert(dst, src)
    return shape_ops.transpose(x, tuple(perm))


def batch_size(vals, dims) -> int:
    for v, d in zip(vals, dims):
        if d is not None:
            return get_aval(v).shape[d]
    raise ValueError("no batched operand")


def defvectorized(prim) -> None:
    """Elementwise unary primitive: the batch dim passes through unchanged."""
    def rule(vals, dims, **params):
        return prim.bind(vals[0], **params), dims[0]
    prim.def_rule("batch", rule)


def defbroadcasting(prim) -> None:
    """Elementwise n-ary primitive: every operand gets the batch dim at 0.

    Operands are broadcast to ``(batch,) + shape`` where ``shape`` is the largest
    per-example shape (only scalar operands, such as ``clamp``'s bounds, differ).
    """
    def rule(vals, dims, **params):
        size = batch_size(vals, dims)
        per = [get_aval(v).shape[:d] + get_aval(v).shape[d + 1:] if d is not None
               else get_aval(v).shape for v, d in zip(vals, dims)]
        tgt = max(per, key=len)
        full = (size,) + tgt
        out = []
        for v, d, p in zip(vals, dims, per):
            trail = tuple(range(1 + len(tgt) - len(p), 1 + len(tgt)))
            if d is None:
                out.append(shape_ops.broadcast_in_dim(v, full, trail))
            else:
                v = move_batch_dim(v, d, 0, size)
                out.append(shape_ops.broadcast_in_dim(v, full, (0,) + trail))
        return prim.bind(*out, **params), 0
    prim.def_rule("batch", rule)
