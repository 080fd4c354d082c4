"""Window geometry shared by convolutions and windowed reductions.

Sizes after dilation and padding, ``"SAME"``/``"VALID"`` padding resolution,
and the NumPy helpers the impls use (dilate-and-pad, strided window views).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from plait.errors import PlaitTypeError, PlaitValueError


def dilate_dim(n: int, dilation: int) -> int:
    """Size of a dimension of size ``n`` with ``dilation - 1`` holes between elements."""
    return (n - 1) * dilation + 1 if n > 0 else 0


def window_out_size(n: int, k: int, stride: int, lo: int, hi: int, base_dilation: int,
                    window_dilation: int) -> int:
    """Number of window positions along one dimension (0 when the window doesn't fit)."""
    padded = lo + hi + dilate_dim(n, base_dilation)
    kd = dilate_dim(k, window_dilation)
    return (padded - kd) // stride + 1 if padded >= kd else 0


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> tuple:
    """Explicit ``(low, high)`` pairs for ``"SAME"``/``"SAME_LOWER"``/``"VALID"`` padding.

    ``SAME`` gives ``ceil(in / stride)`` outputs with the odd extra element of
    padding at the high end (``SAME_LOWER``: at the low end); ``window_shape``
    is the (dilated) window extent.
    """
    p = padding.upper()
    if p == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if p in ("SAME", "SAME_LOWER"):
        pads = []
        for n, k, s in zip(in_shape, window_shape, window_strides):
            out = -(-n // s)
            total = max((out - 1) * s + k - n, 0)
            lo = total // 2 if p == "SAME" else total - total // 2
            pads.append((lo, total - lo))
        return tuple(pads)
    raise PlaitValueError(f"unknown padding {padding!r}: use 'SAME', 'SAME_LOWER', 'VALID' "
                          f"or a sequence of (low, high) pairs")


def static_pairs(name: str, padding, n: int) -> tuple:
    """``padding`` as a tuple of ``n`` ``(low, high)`` int pairs."""
    try:
        pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise PlaitTypeError(f"{name}: padding must be 'SAME', 'VALID' or a sequence of "
                             f"(low, high) integer pairs, got {padding!r}") from None
    if len(pairs) != n:
        raise PlaitTypeError(f"{name}: padding needs {n} (low, high) pairs, got {len(pairs)}")
    return pairs


def static_seq(name: str, what: str, v, n: int, default: int = 1) -> tuple:
    """``v`` (None, an int, or a sequence) as a tuple of ``n`` ints."""
    if v is None:
        return (default,) * n
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    out = tuple(int(x) for x in v)
    if len(out) != n:
        raise PlaitTypeError(f"{name}: {what} needs {n} entries, got {tuple(v)}")
    return out


def resolve_padding(name: str, padding, in_shape, window_shape, strides, base_dilation,
                    window_dilation) -> tuple:
    """Explicit pairs from a padding string (against dilated sizes) or a pair sequence."""
    if isinstance(padding, str):
        ins = [dilate_dim(n, d) for n, d in zip(in_shape, base_dilation)]
        ks = [dilate_dim(k, d) for k, d in zip(window_shape, window_dilation)]
        return padtype_to_pads(ins, ks, strides, padding)
    return static_pairs(name, padding, len(in_shape))


def pad_and_dilate(x: np.ndarray, padding, dilation, fill) -> np.ndarray:
    """``x`` with ``dilation - 1`` fill values between elements, then (low, high) edge
    padding with ``fill`` per dimension (negative values crop)."""
    buf = x
    if any(d != 1 for d in dilation):
        inner = [dilate_dim(n, d) for n, d in zip(x.shape, dilation)]
        buf = np.full(inner, fill, x.dtype)
        buf[tuple(slice(None, None, d) for d in dilation)] = x
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    if any(w != (0, 0) for w in widths):
        buf = np.pad(buf, widths, constant_values=fill)
    return buf[tuple(slice(max(-lo, 0), n - max(-hi, 0))
                     for n, (lo, hi) in zip(buf.shape, padding))]


def window_view(x: np.ndarray, axes: Sequence[int], window, strides, window_dilation,
                out_sizes) -> np.ndarray:
    """A view of shape ``x.shape`` (with ``axes`` replaced by window positions) followed
    by the (undilated) window extents; no data is copied."""
    kd = [dilate_dim(k, d) for k, d in zip(window, window_dilation)]
    v = np.lib.stride_tricks.sliding_window_view(x, kd, axis=tuple(axes))
    sel = [slice(None)] * x.ndim
    for a, p, s in zip(axes, out_sizes, strides):
        sel[a] = slice(0, p * s, s)
    sel += [slice(None, None, d) for d in window_dilation]
    return v[tuple(sel)]
