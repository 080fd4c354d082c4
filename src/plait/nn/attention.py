"""``dot_product_attention`` (like ``jax.nn.dot_product_attention``), composed from
plait.numpy: scaled ``q k^T`` logits, optional bias, boolean mask, causal mask, per-batch
sequence lengths and local windows, a float32-or-wider softmax, then ``probs v``.

Shapes follow JAX: ``query`` ``[B, T, N, H]``, ``key``/``value`` ``[B, S, K, H]`` with
``N`` a multiple of ``K`` (grouped-query attention); the batch axis may be absent.
"""
from __future__ import annotations

import math

import numpy as np

import plait.numpy as pnp
from plait.errors import PlaitValueError
from plait.nn.functions import softmax


def _mask_logits(logits, keep):
    big_neg = pnp.asarray(-0.7 * float(np.finfo(logits.dtype).max), logits.dtype)
    return pnp.where(keep, logits, big_neg)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """Scaled dot-product attention: ``softmax(q k^T * scale + bias, masked) v``.

    ``mask`` is boolean (True = attend), broadcastable to ``[B, N, T, S]``; ``is_causal``
    keeps ``s <= t``; ``*_seq_lengths`` (``[B]``) mask padding (padding queries output 0); ``local_window_size``
    (``w`` or ``(left, right)``) keeps ``t - left <= s <= t + right``.
    """
    if implementation not in (None, "xla"):
        raise PlaitValueError(f"dot_product_attention: plait has one implementation; got "
                              f"implementation={implementation!r} (use None)")
    q, k, v = pnp.asarray(query), pnp.asarray(key), pnp.asarray(value)
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = q[None], k[None], v[None]
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise PlaitValueError(f"dot_product_attention: query/key/value must be [B, T, N, H] "
                              f"or [T, N, H], got {q.shape}, {k.shape}, {v.shape}")
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    if N % K:
        raise PlaitValueError(f"dot_product_attention: query heads {N} must be a multiple "
                              f"of key heads {K}")
    g = N // K
    if g > 1:
        k = pnp.repeat(k, g, axis=2)
        v = pnp.repeat(v, g, axis=2)
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    logits = pnp.einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        bias = pnp.asarray(bias)
        logits = logits + (bias[None] if unbatched and bias.ndim == 3 else bias)
    keep = pnp.ones((1, 1, T, S), bool)
    if mask is not None:
        mask = pnp.asarray(mask, dtype=bool)
        keep = keep & (mask[None] if unbatched and mask.ndim == 3 else mask)
    t = pnp.arange(T)[:, None]
    s = pnp.arange(S)[None, :]
    if is_causal:
        keep = keep & (s <= t)
    if local_window_size is not None:
        left, right = ((local_window_size, local_window_size)
                       if isinstance(local_window_size, int) else local_window_size)
        keep = keep & (s >= t - left) & (s <= t + right)
    if query_seq_lengths is not None:
        keep = keep & (t[None, None] < pnp.asarray(query_seq_lengths)[:, None, None, None])
    if key_value_seq_lengths is not None:
        keep = keep & (s[None, None] < pnp.asarray(key_value_seq_lengths)[:, None, None, None])
    logits = _mask_logits(logits, keep)
    wide = logits.dtype if logits.dtype.itemsize >= 4 else np.dtype(np.float32)
    probs = softmax(logits.astype(wide), axis=-1).astype(q.dtype)
    out = pnp.einsum("bnts,bsnh->btnh", probs, v)
    if query_seq_lengths is not None:   # padding queries give zeros, as in JAX
        valid = pnp.arange(T)[None, :] < pnp.asarray(query_seq_lengths)[:, None]
        out = pnp.where(valid[:, :, None, None], out, pnp.zeros_like(out))
    return out[0] if unbatched else out
