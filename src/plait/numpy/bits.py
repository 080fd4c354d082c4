"""Bit packing: packbits, unpackbits (uint8 bytes, ``bitorder`` 'big' or 'little')."""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import get_aval
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import reductions as red


def _bit_weights(bitorder: str, name: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise PlaitValueError(f"{name}: 'order' must be either 'little' or 'big'")
    w = 1 << np.arange(8, dtype=np.uint8)
    return w[::-1].copy() if bitorder == "big" else w


def _flat_or_axis(a, axis, name: str):
    x = _promote.asarray_strong(a, name=name)
    if axis is None:
        return lax.reshape(x, (get_aval(x).size,)), 0
    return x, _promote.normalize_axis(axis, get_aval(x).ndim, name)


def packbits(a, /, axis: int | None = None, bitorder: str = "big"):
    """Pack the truth values of ``a`` into uint8 bytes along ``axis`` (flattened if None),
    zero-padding the last byte."""
    x, axis = _flat_or_axis(a, axis, "packbits")
    dt = get_aval(x).dtype
    if not (dtypes.is_integer(dt) or dtypes.is_bool(dt)):
        raise PlaitTypeError("Expected an input array of integer or boolean data type")
    w = _bit_weights(bitorder, "packbits")
    bits = _promote.cast(uf.not_equal(x, 0), dtypes.uint8)
    shape = get_aval(bits).shape
    n = shape[axis]
    nbytes = -(-n // 8)
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (0, nbytes * 8 - n, 0)
    bits = lax.pad(bits, _promote.cast(0, dtypes.uint8), cfg)
    grouped = lax.reshape(bits, shape[:axis] + (nbytes, 8) + shape[axis + 1:])
    wshape = [1] * (len(shape) + 1)
    wshape[axis + 1] = 8
    weighted = uf.multiply(grouped, _promote.wrap(w.reshape(wshape)))
    return red.sum(weighted, axis=axis + 1, dtype=dtypes.uint8)


def unpackbits(a, /, axis: int | None = None, count: int | None = None,
               bitorder: str = "big"):
    """Unpack uint8 bytes into their bits (0/1 as uint8) along ``axis``; ``count`` keeps
    that many bits (negative: drops bits from the end; more than available: pads zeros)."""
    x, axis = _flat_or_axis(a, axis, "unpackbits")
    if get_aval(x).dtype != dtypes.uint8:
        raise PlaitTypeError("Expected an input array of unsigned byte data type")
    w = _bit_weights(bitorder, "unpackbits")
    shape = get_aval(x).shape
    n = shape[axis]
    expanded = lax.expand_dims(x, (axis + 1,))
    wshape = [1] * (len(shape) + 1)
    wshape[axis + 1] = 8
    bits = uf.not_equal(uf.bitwise_and(expanded, _promote.wrap(w.reshape(wshape))), 0)
    bits = _promote.cast(bits, dtypes.uint8)
    bits = lax.reshape(bits, shape[:axis] + (n * 8,) + shape[axis + 1:])
    if count is None:
        return bits
    count = _promote.static_int(count, "unpackbits", "count")
    if count < -n * 8:
        raise PlaitValueError("-count larger than number of elements")
    keep = count if count >= 0 else n * 8 + count
    if keep <= n * 8:
        lo = [0] * len(shape)
        hi = list(get_aval(bits).shape)
        hi[axis] = keep
        return lax.slice(bits, tuple(lo), tuple(hi))
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (0, keep - n * 8, 0)
    return lax.pad(bits, _promote.cast(0, dtypes.uint8), cfg)


__all__ = ["packbits", "unpackbits"]
