"""Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).

The counter-based hash is written with plait's uint32 ``lax`` primitives (add,
xor, shifts; rotation composed from two shifts and an or), so it runs eagerly,
under ``jit`` on any backend, and under every transformation, with identical bits.
"""
from __future__ import annotations

from plait import lax

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _rotl(x, r: int):
    """Rotate each uint32 of ``x`` left by ``r`` bits."""
    return lax.bitwise_or(lax.shift_left(x, r), lax.shift_right_logical(x, 32 - r))


def threefry2x32(k0, k1, x0, x1):
    """The 20-round Threefry-2x32 hash of counters ``(x0, x1)`` under key ``(k0, k1)``.

    All four operands are uint32 arrays of one shape (keys may be scalars, which
    are broadcast); returns the two uint32 output words.
    """
    shape = tuple(x0.shape)
    if shape:
        k0 = lax.broadcast_in_dim(k0, shape, ()) if not k0.shape else k0
        k1 = lax.broadcast_in_dim(k1, shape, ()) if not k1.shape else k1
    ks = (k0, k1, lax.bitwise_xor(lax.bitwise_xor(k0, k1), _PARITY))
    x0 = lax.add(x0, ks[0])
    x1 = lax.add(x1, ks[1])
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(_rotl(x1, r), x0)
        x0 = lax.add(x0, ks[(group + 1) % 3])
        x1 = lax.add(lax.add(x1, ks[(group + 2) % 3]), group + 1)
    return x0, x1
