"""Arrays from host data: fromiter, frombuffer, fromstring (``fromfunction`` lives in
``creation``; ``frompyfunc`` is not offered: it calls Python per element).

These read Python iterables, bytes and text, never traced values: the result is a
constant (a constant of the graph under ``jit``). An iterable that yields traced
values is an error pointing to ``stack``/``array``.
"""
from __future__ import annotations

import numpy as np

from plait.core import dtypes
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote


def _wrap(v: np.ndarray):
    return _promote.wrap(np.ascontiguousarray(v, dtype=dtypes.canonical_dtype(v.dtype)))


def fromiter(iter, dtype, count: int = -1, *, like=None):
    """A 1-D array of ``dtype`` from the numbers an iterable yields (``count`` of them,
    or all when -1)."""
    values = []
    for k, v in enumerate(iter):
        if count >= 0 and k >= count:
            break
        if _promote.is_array(v):
            raise PlaitTypeError("fromiter: the iterable yields plait arrays; build the array "
                                 "with plait.numpy.stack or plait.numpy.array instead")
        values.append(v)
    if count >= 0 and len(values) < count:
        raise PlaitValueError(f"iterator too short: Expected {count} but iterator had only "
                              f"{len(values)} items.")
    try:
        return _wrap(np.fromiter(values, dtype=dtype, count=len(values)))
    except (TypeError, ValueError) as e:
        raise PlaitValueError(f"fromiter: {e}") from None


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0, *, like=None):
    """A 1-D array interpreting a bytes-like object's memory as ``dtype`` (copied)."""
    if _promote.is_array(buffer):
        raise PlaitTypeError("frombuffer: pass a bytes-like object, not a plait array")
    try:
        return _wrap(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset).copy())
    except (TypeError, ValueError) as e:
        raise PlaitValueError(f"frombuffer: {e}") from None


def fromstring(string, dtype=float, count: int = -1, *, sep: str, like=None):
    """A 1-D array from numbers in text separated by ``sep`` (NumPy 2 requires ``sep``;
    use ``frombuffer`` for binary data)."""
    if sep == "":
        raise PlaitValueError("fromstring: the binary mode of fromstring is removed, use "
                              "frombuffer instead")
    try:
        return _wrap(np.fromstring(string, dtype=dtype, count=count, sep=sep))
    except (TypeError, ValueError, DeprecationWarning) as e:
        raise PlaitValueError(f"fromstring: {e}") from None


__all__ = ["fromiter", "frombuffer", "fromstring"]
