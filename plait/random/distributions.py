"""Sampling functions over keys: uniform, normal, truncated_normal, bernoulli, randint,
gumbel, categorical, permutation, shuffle, choice.

Floats are made from the top mantissa-width bits of Threefry words, so every
float32 sample is exact (``k * 2**-24``); float64 uses two words (53 bits).
Normals are ``sqrt(2) * erfinv(v)`` for ``v`` on a symmetric grid strictly inside
``(-1, 1)``.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitTypeError, PlaitValueError
from plait.random._special import erf, erfinv
from plait.random.keys import _shape, check_key, random_bits, split

_SQRT2 = math.sqrt(2.0)


def _float_dtype(dtype, where: str) -> np.dtype:
    dt = np.dtype(dtype)
    if not np.issubdtype(dt, np.floating):
        raise PlaitTypeError(f"random.{where} needs a floating dtype, got {dt}; use "
                             f"random.randint for integers")
    return dt


def _grid(k, shape, dtype: np.dtype):
    """``(m, nm)``: integers ``m`` uniform on ``[0, 2**nm)`` as ``dtype``, exactly."""
    nm = np.finfo(dtype).nmant + 1
    if nm > 32:
        w = random_bits(k, (2,) + shape)
        hi = lax.shift_right_logical(w[0], 64 - nm).astype(dtype)
        return hi * float(1 << 32) + w[1].astype(dtype), nm
    return lax.shift_right_logical(random_bits(k, shape), 32 - nm).astype(dtype), nm


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """float16/bfloat16 arithmetic is done in float32, then cast."""
    return dtype if dtype.itemsize >= 4 else np.dtype(np.float32)


def uniform(key, shape: Sequence[int] = (), dtype=np.float32, minval=0.0, maxval=1.0):
    """Samples uniform on ``[minval, maxval)`` (``minval``/``maxval`` broadcast to ``shape``)."""
    check_key(key, "uniform")
    dt = _float_dtype(dtype, "uniform")
    shape = _shape(shape)
    m, nm = _grid(key, shape, dt)
    u = m * (2.0 ** -nm)
    lo = pnp.asarray(minval, dtype=dt)
    hi = pnp.asarray(maxval, dtype=dt)
    return pnp.maximum(lo, u * (hi - lo) + lo).astype(dt)


def _open_symmetric(key, shape, dt):
    """Samples on a symmetric grid strictly inside ``(-1, 1)``, in ``dt``."""
    m, nm = _grid(key, shape, dt)
    half = float(1 << (nm - 1))
    return ((m - half) + 0.5) * (1.0 / half)


def normal(key, shape: Sequence[int] = (), dtype=np.float32):
    """Standard normal samples."""
    check_key(key, "normal")
    dt = _float_dtype(dtype, "normal")
    shape = _shape(shape)
    v = _open_symmetric(key, shape, dt).astype(_compute_dtype(dt))
    return (_SQRT2 * erfinv(v)).astype(dt)


def truncated_normal(key, lower, upper, shape: Sequence[int] | None = None,
                     dtype=np.float32):
    """Standard normal samples conditioned on ``lower < x < upper`` (inverse-CDF method).

    ``shape`` defaults to the broadcast shape of ``lower`` and ``upper``.
    """
    check_key(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    cdt = _compute_dtype(dt)
    lo = pnp.asarray(lower, dtype=cdt)
    hi = pnp.asarray(upper, dtype=cdt)
    shape = (pnp.broadcast_shapes(lo.shape, hi.shape) if shape is None else _shape(shape))
    a, b = erf(lo / _SQRT2), erf(hi / _SQRT2)
    u = uniform(key, shape, cdt)
    v = a + u * (b - a)
    v = pnp.clip(v, pnp.nextafter(a, pnp.asarray(1.0, cdt)),
                 pnp.nextafter(b, pnp.asarray(-1.0, cdt)))
    return pnp.clip(_SQRT2 * erfinv(v), lo, hi).astype(dt)


def bernoulli(key, p=0.5, shape: Sequence[int] | None = None):
    """Booleans that are True with probability ``p`` (shape defaults to ``p``'s)."""
    check_key(key, "bernoulli")
    p = pnp.asarray(p)
    if not pnp.issubdtype(p.dtype, pnp.floating):
        p = p.astype(pnp.float32)
    shape = p.shape if shape is None else _shape(shape)
    return uniform(key, shape, p.dtype) < p


def randint(key, shape: Sequence[int], minval, maxval, dtype=np.int32):
    """Integers uniform on ``[minval, maxval)``.

    Exact (unbiased) for spans up to 2**16; larger spans use one 32-bit word modulo
    the span (bias below span / 2**32).
    """
    check_key(key, "randint")
    dt = np.dtype(dtype)
    if not np.issubdtype(dt, np.integer):
        raise PlaitTypeError(f"random.randint needs an integer dtype, got {dt}")
    shape = _shape(shape)
    lo = pnp.broadcast_to(pnp.asarray(minval).astype(pnp.int64), shape)
    hi = pnp.broadcast_to(pnp.asarray(maxval).astype(pnp.int64), shape)
    span = pnp.maximum(hi - lo, 1).astype(pnp.uint32)
    k1, k2 = split(key)
    w1, w2 = random_bits(k1, shape), random_bits(k2, shape)
    small = span <= (1 << 16)
    s = pnp.where(small, span, 1)
    r = w1 % s                                           # exact 64-bit reduction, 16 bits at a time
    r = (lax.shift_left(r, 16) | lax.shift_right_logical(w2, 16)) % s
    r = (lax.shift_left(r, 16) | (w2 & 0xFFFF)) % s
    r = pnp.where(small, r, w2 % span)
    return (lo + r.astype(pnp.int64)).astype(dt)


def gumbel(key, shape: Sequence[int] = (), dtype=np.float32):
    """Standard Gumbel samples ``-log(-log(u))``."""
    check_key(key, "gumbel")
    dt = _float_dtype(dtype, "gumbel")
    u = (_open_symmetric(key, _shape(shape), dt) + 1.0) * 0.5      # strictly inside (0, 1)
    return -pnp.log(-pnp.log(u.astype(_compute_dtype(dt)))).astype(dt)


def categorical(key, logits, axis: int = -1, shape: Sequence[int] | None = None):
    """Indices sampled with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max).

    ``shape`` (default: ``logits``' shape without ``axis``) must end with that shape.
    """
    check_key(key, "categorical")
    logits = pnp.asarray(logits)
    axis = axis % logits.ndim
    batch = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch if shape is None else _shape(shape)
    if tuple(shape[len(shape) - len(batch):]) != tuple(batch):
        raise PlaitValueError(f"random.categorical: shape {shape} must end with the logits' "
                              f"batch shape {batch}")
    moved = pnp.moveaxis(logits, axis, -1)
    dt = logits.dtype if pnp.issubdtype(logits.dtype, pnp.floating) else np.float32
    g = gumbel(key, tuple(shape) + (logits.shape[axis],), dt)
    return pnp.argmax(g + moved, axis=-1)


def _sort_keys_rounds(n: int) -> int:
    """Rounds of sorting by random 32-bit keys so that ties are negligible."""
    return max(1, math.ceil(3 * math.log(max(n, 2)) / (32 * math.log(2))))


def permutation(key, x, axis: int = 0):
    """A random permutation of ``range(x)`` (an int) or of ``x`` along ``axis``."""
    check_key(key, "permutation")
    if isinstance(x, (int, np.integer)):
        n = int(x)
        arr = pnp.arange(n)
        axis = 0
    else:
        arr = pnp.asarray(x)
        if arr.ndim == 0:
            raise PlaitValueError("random.permutation needs an int or an array with at least "
                                  "one dimension")
        axis = axis % arr.ndim
        n = arr.shape[axis]
    idx = pnp.arange(n)
    for k in split(key, _sort_keys_rounds(n)):
        _, idx = lax.sort((random_bits(k, (n,)), idx), num_keys=1)
    return pnp.take(arr, idx, axis=axis)


def shuffle(key, x, axis: int = 0):
    """``x`` with its entries along ``axis`` randomly permuted (same as ``permutation``)."""
    return permutation(key, x, axis)


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None, axis: int = 0):
    """Random entries of ``a`` (or of ``range(a)`` for an int) along ``axis``.

    With ``p`` the entries have those probabilities; ``replace=False`` draws distinct ones.
    """
    check_key(key, "choice")
    shape = _shape(shape)
    if isinstance(a, (int, np.integer)):
        arr, n, axis = None, int(a), 0
    else:
        arr = pnp.asarray(a)
        axis = axis % max(arr.ndim, 1)
        n = arr.shape[axis]
    count = int(np.prod(shape, dtype=np.int64))
    if not replace and count > n:
        raise PlaitValueError(f"random.choice: cannot take {count} distinct samples from "
                              f"{n} entries (replace=False)")
    if p is None:
        if replace:
            idx = randint(key, shape, 0, n)
        else:
            idx = pnp.reshape(permutation(key, n)[:count], shape)
    else:
        p = pnp.asarray(p)
        if p.shape != (n,):
            raise PlaitValueError(f"random.choice: p must have shape ({n},), got {p.shape}")
        pf = p.astype(np.float32) if not pnp.issubdtype(p.dtype, pnp.floating) else p
        if replace:
            cdf = pnp.cumsum(pf)
            u = uniform(key, shape, pf.dtype) * cdf[-1]
            idx = pnp.minimum(pnp.searchsorted(cdf, u, side="right"), n - 1)
        else:
            g = gumbel(key, (n,), pf.dtype) + pnp.log(pf)
            idx = pnp.reshape(lax.top_k(g, count)[1], shape)
    if arr is None:
        return idx.astype(pnp.int64)
    return pnp.take(arr, idx, axis=axis)
