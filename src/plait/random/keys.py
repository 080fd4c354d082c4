"""Functional PRNG keys: ``key``, ``split``, ``fold_in`` and raw ``random_bits``.

A key is a ``uint32[2]`` array. Nothing is stateful: every function takes a key
and returns fresh values, and the same key always gives the same values, eagerly,
under ``jit`` and on every backend. The bit streams are JAX's (threefry, partitionable: JAX's default): ``split``,
``fold_in`` and ``random_bits`` give exactly ``jax.random``'s bits for the same key.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitTypeError, PlaitValueError
from plait.random._hot import compiled_when_hot
from plait.random._threefry import threefry2x32

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


def _counters(n: int):
    """The 64-bit counters ``0..n-1`` as (high, low) uint32 words, as JAX numbers them."""
    lo = lax.iota(np.uint32, n)
    return pnp.zeros((n,), pnp.uint32), lo


def split(k, num=2):
    """``num`` new independent keys, as a ``uint32[num, 2]`` array (``num`` may be a
    shape: ``split(k, (2, 3))`` gives ``uint32[2, 3, 2]``). Same bits as ``jax.random.split``."""
    check_key(k, "split")
    shape = _shape(num)
    if int(np.prod(shape, dtype=np.int64)) < 1:
        raise PlaitValueError(f"random.split needs num >= 1, got {num}")
    return _split(k, shape)


@compiled_when_hot(static_argnums=(1,))
def _split(k, shape: tuple[int, ...]):
    a, b = threefry2x32(k[0], k[1], *_counters(int(np.prod(shape, dtype=np.int64))))
    return pnp.reshape(pnp.stack([a, b], axis=1), shape + (2,))


def fold_in(k, data):
    """A new key made from ``k`` and an integer ``data`` (e.g. a step number), taken
    modulo 2**32 as JAX does; same bits as ``jax.random.fold_in``."""
    check_key(k, "fold_in")
    if isinstance(data, (int, np.integer)):
        d = np.array(int(data) % (1 << 32), np.uint32)
    else:
        d = data if isinstance(data, np.ndarray) else pnp.asarray(data)
        if d.shape != () or not pnp.issubdtype(d.dtype, pnp.integer):
            raise PlaitTypeError(f"random.fold_in needs an integer scalar, got "
                                 f"{d.dtype}{list(d.shape)}")
    return _fold_in(k, d)


@compiled_when_hot()
def _fold_in(k, d):
    lo = pnp.reshape(pnp.asarray(d).astype(pnp.uint32), (1,))
    a, b = threefry2x32(k[0], k[1], pnp.zeros((1,), pnp.uint32), lo)
    return pnp.concatenate([a, b])


def _shape(shape) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _word_pair(k, shape):
    """Threefry of the flat index of every element of ``shape``: two uint32 words each."""
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        z = pnp.zeros(shape, pnp.uint32)
        return z, z
    a, b = threefry2x32(k[0], k[1], *_counters(n))
    return pnp.reshape(a, shape), pnp.reshape(b, shape)


def random_bits(k, shape: Sequence[int] = (), width: int = 32):
    """Uniformly random unsigned words of ``width`` bits (8, 16, 32, 64) and ``shape``;
    the same bits as ``jax.random.bits`` (threefry, partitionable: JAX's default)."""
    check_key(k, "random_bits")
    if width not in (8, 16, 32, 64):
        raise PlaitValueError(f"random bits: width must be 8, 16, 32 or 64, got {width}")
    shape = _shape(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if n >= 1 << 32:
        raise PlaitValueError(f"random bits: {n} values is more than plait draws from one "
                              f"key (2**32); split the key and draw in parts")
    return _random_bits(k, shape, width)


@compiled_when_hot(static_argnums=(1, 2))
def _random_bits(k, shape: tuple[int, ...], width: int):
    a, b = _word_pair(k, shape)
    if width == 64:
        return (lax.shift_left(a.astype(pnp.uint64), 32) | b.astype(pnp.uint64))
    w = a ^ b
    return w if width == 32 else w.astype(np.dtype(f"uint{width}"))


def bits(k, shape: Sequence[int] = (), dtype=None):
    """Random unsigned integers of ``dtype`` (default uint32), like ``jax.random.bits``."""
    dt = np.dtype(np.uint32 if dtype is None else dtype)
    if dt.kind != "u":
        raise PlaitTypeError(f"random.bits needs an unsigned integer dtype, got {dt}")
    return random_bits(k, shape, dt.itemsize * 8)


def key_data(keys):
    """The raw ``uint32`` data of keys (plait keys are already raw ``uint32[..., 2]``)."""
    return pnp.asarray(keys)


def wrap_key_data(key_bits_array, *, impl=None):
    """Keys from raw ``uint32[..., 2]`` data (the inverse of :func:`key_data`)."""
    if impl not in (None, "threefry2x32"):
        raise PlaitValueError(f"random.wrap_key_data: plait implements only "
                              f"'threefry2x32', got impl={impl!r}")
    d = pnp.asarray(key_bits_array)
    if d.dtype != np.uint32 or d.ndim < 1 or d.shape[-1] != 2:
        raise PlaitTypeError(f"random.wrap_key_data needs uint32[..., 2] data, got "
                             f"{d.dtype}{list(d.shape)}")
    return d


def key_impl(keys) -> str:
    """The PRNG implementation of ``keys``: always ``'threefry2x32'`` in plait."""
    return "threefry2x32"


def key_dtype(keys=None):
    """The dtype of plait keys' data: ``uint32`` (plait has no separate key dtype)."""
    return np.dtype(np.uint32)


def clone(keys):
    """``keys`` itself (keys are immutable values; JAX needs this only for key reuse
    checking)."""
    return keys
