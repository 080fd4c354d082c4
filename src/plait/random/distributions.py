"""Basic samplers over keys, bit for bit ``jax.random``'s algorithms: uniform, normal,
truncated_normal, bernoulli, randint, gumbel, categorical, permutation, shuffle, choice.

Floats take the top mantissa bits of one word of the width of the dtype (32 bits for
float32, 64 for float64), exactly as JAX does; so ``uniform``, ``randint``,
``bernoulli``, ``permutation`` and ``choice`` give JAX's numbers for the same key, and
``normal`` JAX's up to the last bits of ``log1p`` inside ``erf_inv``. The default float
dtype is plait's (float64, as JAX with ``jax_enable_x64``); pass ``dtype=float32`` for
JAX's default-mode numbers.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitTypeError, PlaitValueError
from plait.random._special import erfinv
from plait.random.keys import _shape, check_key, random_bits, split


def default_float() -> np.dtype:
    """plait's default float dtype (the dtype of ``zeros(())``)."""
    return pnp.zeros(()).dtype


def default_int() -> np.dtype:
    """plait's default integer dtype."""
    return pnp.asarray(0).dtype


def _float_dtype(dtype, where: str) -> np.dtype:
    dt = default_float() if dtype is None else np.dtype(dtype)
    if not np.issubdtype(dt, np.floating):
        raise PlaitTypeError(f"random.{where} needs a floating dtype, got {dt}; use "
                             f"random.randint for integers")
    return dt


def _unit(key, shape, dt: np.dtype):
    """``[0, 1)`` floats of ``dt`` from the top mantissa bits (JAX's construction)."""
    nbits = dt.itemsize * 8
    nmant = np.finfo(dt).nmant
    if nmant < 8:
        raise PlaitTypeError(f"random: {dt} is not supported")
    w = random_bits(key, shape, nbits)
    m = lax.shift_right_logical(w, nbits - nmant)
    return m.astype(dt) * pnp.asarray(2.0 ** -nmant, dt)


def fma(a, b, c):
    """``a * b + c`` rounded once for float32 (as XLA's fused multiply-add gives), by
    computing in float64; float64 operands are multiplied and added plainly."""
    if a.dtype == np.float32:
        w = np.float64
        return (a.astype(w) * pnp.asarray(b).astype(w) + pnp.asarray(c).astype(w)).astype(a.dtype)
    return a * b + c


def uniform(key, shape: Sequence[int] = (), dtype=None, minval=0.0, maxval=1.0):
    """Samples uniform on ``[minval, maxval)`` (``minval``/``maxval`` broadcast to ``shape``)."""
    check_key(key, "uniform")
    dt = _float_dtype(dtype, "uniform")
    shape = _shape(shape)
    cdt = dt if dt.itemsize >= 4 else np.dtype(np.float32)
    lo = pnp.asarray(minval, dtype=dt).astype(cdt)
    hi = pnp.asarray(maxval, dtype=dt).astype(cdt)
    if dt.itemsize < 4:          # JAX draws 16-bit floats from 16-bit words
        f = _unit(key, shape, dt).astype(cdt)
    else:
        f = _unit(key, shape, dt)
    return pnp.maximum(lo, fma(f, hi - lo, lo)).astype(dt)


def normal(key, shape: Sequence[int] = (), dtype=None):
    """Standard normal samples: ``sqrt(2) * erf_inv(u)``, ``u`` uniform on ``(-1, 1)``."""
    check_key(key, "normal")
    dt = _float_dtype(dtype, "normal")
    lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    u = uniform(key, shape, dt, lo, 1.0)
    return (pnp.asarray(np.sqrt(2), dt) * erfinv(u)).astype(dt)


def truncated_normal(key, lower, upper, shape: Sequence[int] | None = None, dtype=None):
    """Standard normal samples conditioned on ``lower < x < upper`` (inverse CDF).

    ``shape`` defaults to the broadcast shape of ``lower`` and ``upper``.
    """
    check_key(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    lo = pnp.asarray(lower, dtype=dt)
    hi = pnp.asarray(upper, dtype=dt)
    shape = (pnp.broadcast_shapes(lo.shape, hi.shape) if shape is None else _shape(shape))
    s2 = pnp.asarray(np.sqrt(2), dt)
    a, b = lax.erf(lo / s2).astype(dt), lax.erf(hi / s2).astype(dt)
    u = uniform(key, shape, dt, a, b)
    out = s2 * erfinv(u)
    return pnp.clip(out, pnp.nextafter(lax.stop_gradient(lo), pnp.asarray(np.inf, dt)),
                    pnp.nextafter(lax.stop_gradient(hi), pnp.asarray(-np.inf, dt))).astype(dt)


def bernoulli(key, p=0.5, shape: Sequence[int] | None = None):
    """Booleans that are True with probability ``p`` (shape defaults to ``p``'s)."""
    check_key(key, "bernoulli")
    p = pnp.asarray(p)
    if not pnp.issubdtype(p.dtype, pnp.floating):
        p = p.astype(default_float())
    shape = p.shape if shape is None else _shape(shape)
    return uniform(key, shape, p.dtype) < p


def randint(key, shape: Sequence[int], minval, maxval, dtype=None):
    """Integers uniform on ``[minval, maxval)``, JAX's algorithm: two words ``hi, lo`` and
    ``(hi % span * (2**(b/2) % span)**2 + lo % span) % span`` in ``b``-bit unsigned
    arithmetic (``b`` the width of ``dtype``)."""
    check_key(key, "randint")
    dt = default_int() if dtype is None else np.dtype(dtype)
    if not np.issubdtype(dt, np.integer):
        raise PlaitTypeError(f"random.randint needs an integer dtype, got {dt}")
    shape = _shape(shape)
    info = np.iinfo(dt)
    nbits = info.bits
    udt = np.dtype(f"uint{nbits}")
    mn = pnp.asarray(minval)
    mx = pnp.asarray(maxval)
    wide = np.int64 if dt != np.uint64 else np.uint64
    too_big = mx.astype(wide) > info.max if np.issubdtype(mx.dtype, np.integer) else mx > info.max
    mn = pnp.clip(mn.astype(wide), info.min, info.max).astype(dt)
    mx = pnp.clip(mx.astype(wide), info.min, info.max).astype(dt)
    mn = pnp.broadcast_to(mn, shape)
    mx = pnp.broadcast_to(mx, shape)
    too_big = pnp.broadcast_to(too_big, shape)
    k1, k2 = split(key)
    higher = random_bits(k1, shape, max(nbits, 8))
    lower = random_bits(k2, shape, max(nbits, 8))
    span = (mx.astype(udt) - mn.astype(udt)).astype(udt)
    span = pnp.where(mx <= mn, pnp.asarray(1, udt), span)
    span = pnp.where(too_big & (mx > mn), span + pnp.asarray(1, udt), span)
    mult = pnp.asarray(2 ** (nbits // 2), udt) % span
    mult = (mult * mult) % span
    off = (higher % span) * mult + lower % span
    off = off % span
    return (mn + off.astype(dt)).astype(dt)


def gumbel(key, shape: Sequence[int] = (), dtype=None):
    """Standard Gumbel samples ``-log(-log(u))``, ``u`` uniform on ``[tiny, 1)``."""
    check_key(key, "gumbel")
    dt = _float_dtype(dtype, "gumbel")
    u = uniform(key, shape, dt, np.finfo(dt).tiny, 1.0)
    return -pnp.log(-pnp.log(u))


def categorical(key, logits, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True):
    """Indices sampled with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max;
    ``replace=False`` draws distinct indices by Gumbel top-k).

    ``shape`` (default: ``logits``' shape without ``axis``) must end with that shape.
    """
    check_key(key, "categorical")
    logits = pnp.asarray(logits)
    if not pnp.issubdtype(logits.dtype, pnp.floating):
        logits = logits.astype(default_float())
    axis = axis % logits.ndim
    batch = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch if shape is None else _shape(shape)
    if tuple(shape[len(shape) - len(batch):]) != tuple(batch):
        raise PlaitValueError(f"random.categorical: shape {shape} must end with the logits' "
                              f"batch shape {batch}")
    prefix = tuple(shape[:len(shape) - len(batch)])
    if replace:
        full = prefix + logits.shape
        g = gumbel(key, full, logits.dtype)
        x = g + pnp.reshape(logits, (1,) * len(prefix) + logits.shape)
        return pnp.argmax(x, axis=len(prefix) + axis)
    k = int(np.prod(prefix, dtype=np.int64))
    if k > logits.shape[axis]:
        raise PlaitValueError(f"random.categorical: cannot draw {k} distinct samples from "
                              f"{logits.shape[axis]} categories (replace=False)")
    x = logits + gumbel(key, logits.shape, logits.dtype)
    _, idx = lax.top_k(pnp.moveaxis(x, axis, -1), k)
    return pnp.reshape(pnp.moveaxis(idx, -1, 0), shape)


def _shuffle(key, x, axis: int):
    """JAX's shuffle: ``ceil(3 ln(n) / ln(2**32 - 1))`` rounds of a stable sort by
    random 32-bit keys."""
    n = int(np.prod(x.shape, dtype=np.int64))
    rounds = int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, sub = split(key)
        sort_keys = random_bits(sub, x.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key, x, axis: int = 0, independent: bool = False):
    """A random permutation of ``range(x)`` (an int) or of ``x`` along ``axis``
    (``independent=True`` permutes each 1-D slice separately)."""
    check_key(key, "permutation")
    if isinstance(x, (int, np.integer)):
        return _shuffle(key, pnp.arange(int(x), dtype=default_int()), 0)
    arr = pnp.asarray(x)
    if arr.ndim == 0:
        raise PlaitValueError("random.permutation needs an int or an array with at least "
                              "one dimension")
    axis = axis % arr.ndim
    if independent or arr.ndim == 1:
        return _shuffle(key, arr, axis)
    idx = _shuffle(key, pnp.arange(arr.shape[axis], dtype=default_int()), 0)
    return pnp.take(arr, idx, axis=axis)


def shuffle(key, x, axis: int = 0):
    """``x`` with its entries along ``axis`` randomly permuted (same as ``permutation``;
    JAX has removed its ``shuffle``)."""
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
        if arr.ndim == 0:
            arr, n, axis = None, int(arr), 0
        else:
            axis = axis % arr.ndim
            n = arr.shape[axis]
    count = int(np.prod(shape, dtype=np.int64))
    if not replace and count > n:
        raise PlaitValueError(f"random.choice: cannot take {count} distinct samples from "
                              f"{n} entries (replace=False)")
    if p is None:
        if replace:
            idx = randint(key, shape, 0, n)
        else:
            if arr is None:
                return pnp.reshape(permutation(key, n)[:count], shape)
            perm = permutation(key, arr, axis)
            taken = lax.slice_in_dim(perm, 0, count, axis=axis)
            return pnp.reshape(taken, arr.shape[:axis] + shape + arr.shape[axis + 1:])
    else:
        p = pnp.asarray(p)
        if p.shape != (n,):
            raise PlaitValueError(f"random.choice: p must have shape ({n},), got {p.shape}")
        pf = p if pnp.issubdtype(p.dtype, pnp.floating) else p.astype(default_float())
        if replace:
            cdf = pnp.cumsum(pf)
            r = cdf[-1] * (1 - uniform(key, shape, pf.dtype))
            idx = pnp.searchsorted(cdf, r).astype(default_int())
        else:
            g = gumbel(key, (n,), pf.dtype) + pnp.log(pf)
            idx = pnp.reshape(lax.top_k(g, count)[1], shape).astype(default_int())
    if arr is None:
        return idx
    return pnp.take(arr, idx, axis=axis)
