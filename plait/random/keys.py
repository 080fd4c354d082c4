"""Functional PRNG keys: ``key``, ``split``, ``fold_in`` and raw ``random_bits``.

A key is a ``uint32[2]`` array. Nothing is stateful: every function takes a key
and returns fresh values, and the same key always gives the same values, eagerly,
under ``jit`` and on every backend. Counter domains are separated by the first
counter word: 0 for random bits, 1 for ``split``, 2 for ``fold_in``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitTypeError, PlaitValueError
from plait.random._threefry import threefry2x32

_BITS, _SPLIT, _FOLD = 0, 1, 2


def key(seed) -> "pnp.ndarray":
    """A PRNG key (``uint32[2]``) from an integer seed (Python int or integer scalar array)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        s = pnp.asarray(seed)
        if s.shape != () or not pnp.issubdtype(s.dtype, pnp.integer):
            raise PlaitTypeError(f"random.key needs an integer scalar seed, got "
                                 f"{type(seed).__name__} {getattr(s, 'dtype', '')}"
                                 f"{list(s.shape)}; pass e.g. random.key(0)")
        lo = s.astype(pnp.uint32)
        hi = (lax.shift_right_logical(s.astype(pnp.uint64), 32).astype(pnp.uint32)
              if s.dtype.itemsize == 8 else pnp.zeros((), pnp.uint32))
        return pnp.stack([hi, lo])
    s = int(seed) % (1 << 64)
    return pnp.asarray(np.array([s >> 32, s & 0xFFFFFFFF], np.uint32))


PRNGKey = key


def check_key(k, where: str):
    """Raise a clear error unless ``k`` is a single ``uint32[2]`` key."""
    shape = tuple(getattr(k, "shape", ()))
    dtype = getattr(k, "dtype", None)
    if shape != (2,) or dtype != np.uint32:
        raise PlaitTypeError(
            f"random.{where} expects a key, a uint32 array of shape (2,), got "
            f"{dtype}{list(shape)}; make one with plait.random.key(seed) and index a "
            f"split batch (keys[i]) to get one key")
    return k


def _hash(k, hi_word: int, counters):
    """Threefry of counters ``(hi_word, counters)`` under key ``k``."""
    hi = pnp.full(counters.shape, hi_word, pnp.uint32)
    return threefry2x32(k[0], k[1], hi, counters)


def split(k, num: int = 2):
    """``num`` new independent keys, as a ``uint32[num, 2]`` array."""
    check_key(k, "split")
    num = int(num)
    if num < 1:
        raise PlaitValueError(f"random.split needs num >= 1, got {num}")
    a, b = _hash(k, _SPLIT, lax.iota(np.uint32, num))
    return pnp.stack([a, b], axis=1)


def fold_in(k, data):
    """A new key made from ``k`` and an integer ``data`` (e.g. a step number)."""
    check_key(k, "fold_in")
    if isinstance(data, (int, np.integer)):
        d = pnp.asarray(np.uint32(int(data) % (1 << 32)))
    else:
        d = pnp.asarray(data)
        if d.shape != () or not pnp.issubdtype(d.dtype, pnp.integer):
            raise PlaitTypeError(f"random.fold_in needs an integer scalar, got "
                                 f"{d.dtype}{list(d.shape)}")
        d = d.astype(pnp.uint32)
    a, b = _hash(k, _FOLD, pnp.reshape(d, (1,)))
    return pnp.concatenate([a, b])


def _shape(shape) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def random_bits(k, shape: Sequence[int] = ()):
    """Uniformly random ``uint32`` words of ``shape``."""
    check_key(k, "random_bits")
    shape = _shape(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if n >= 1 << 33:
        raise PlaitValueError(f"random_bits: {n} values is more than one key can give "
                              f"(2**33); split the key and draw in parts")
    half = (n + 1) // 2
    a, b = _hash(k, _BITS, lax.iota(np.uint32, half))
    words = pnp.concatenate([a, b])[:n] if n else pnp.zeros((0,), pnp.uint32)
    return pnp.reshape(words, shape)
