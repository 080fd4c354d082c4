"""``pad`` with NumPy's statistic and ramp modes: ``maximum``, ``minimum``, ``mean``,
``median`` (``stat_length=``) and ``linear_ramp`` (``end_values=``).

Other modes go to ``plait.numpy.shapes.pad``. Axes are padded one after another,
each statistic taken over the array padded so far (as NumPy does, so corners see
the padding of earlier axes); integer results of ``mean``/``median`` are rounded
half to even, as in NumPy.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import get_aval
from plait.errors import PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import reductions as red
from plait.numpy import shapes as sh
from plait.numpy import statistics as stats
from plait.numpy.creation import linspace

_STATS = {"maximum": red.max, "minimum": red.min, "mean": red.mean, "median": stats.median}


def _pairs(x, nd: int, name: str, as_index: bool = False) -> list:
    if x is None:
        return [(None, None)] * nd
    v = np.asarray(x)
    if as_index:
        if v.size and v.min() < 0:
            raise PlaitValueError("index can't contain negative values")
        v = np.round(v).astype(np.int64)
    try:
        v = np.broadcast_to(v, (nd, 2))
    except ValueError:
        raise PlaitValueError(f"{name}: could not broadcast {np.shape(x)} to ({nd}, 2)") from None
    return [(a.item(), b.item()) for a, b in v]


def _axis_slice(x, axis: int, start: int, stop: int):
    lo = [0] * get_aval(x).ndim
    hi = list(get_aval(x).shape)
    lo[axis], hi[axis] = start, stop
    return lax.slice(x, tuple(lo), tuple(hi))


def _fill(stat, axis: int, width: int, dt):
    if dtypes.is_integer(dt) and not dtypes.is_integer(get_aval(stat).dtype):
        stat = uf.rint(stat)
    stat = _promote.cast(stat, dt)
    shape = list(get_aval(stat).shape)
    shape[axis] = width
    return _promote.broadcast_to_shape(stat, tuple(shape))


def _pad_stat(x, widths, mode: str, stat_length):
    func = _STATS[mode]
    nd = get_aval(x).ndim
    lengths = _pairs(stat_length, nd, "stat_length", as_index=True)
    dt = get_aval(x).dtype
    for axis, ((lo, hi), (llen, rlen)) in enumerate(zip(widths, lengths)):
        if lo == hi == 0:
            continue
        n = get_aval(x).shape[axis]
        llen = n if llen is None or llen > n else llen
        rlen = n if rlen is None or rlen > n else rlen
        if (llen == 0 or rlen == 0) and mode in ("maximum", "minimum"):
            raise PlaitValueError("stat_length of 0 yields no value for padding")
        left = func(_axis_slice(x, axis, 0, llen), axis=axis, keepdims=True)
        right = func(_axis_slice(x, axis, n - rlen, n), axis=axis, keepdims=True)
        x = sh.concatenate([_fill(left, axis, lo, dt), x, _fill(right, axis, hi, dt)],
                           axis=axis)
    return x


def _pad_ramp(x, widths, end_values):
    nd = get_aval(x).ndim
    ends = _pairs(0 if end_values is None else end_values, nd, "end_values")
    dt = get_aval(x).dtype
    for axis, ((lo, hi), (elo, ehi)) in enumerate(zip(widths, ends)):
        if lo == hi == 0:
            continue
        n = get_aval(x).shape[axis]
        first = lax.squeeze(_axis_slice(x, axis, 0, 1), (axis,))
        last = lax.squeeze(_axis_slice(x, axis, n - 1, n), (axis,))
        left = linspace(elo, first, lo, endpoint=False, dtype=dt, axis=axis)
        right = sh.flip(linspace(ehi, last, hi, endpoint=False, dtype=dt, axis=axis), axis)
        x = sh.concatenate([left, x, right], axis=axis)
    return x


def pad(array, pad_width, mode: str = "constant", **kwargs):
    """``numpy.pad``: the modes of ``plait.numpy.shapes.pad`` plus ``maximum``,
    ``minimum``, ``mean``, ``median`` and ``linear_ramp``."""
    if mode not in _STATS and mode != "linear_ramp":
        return sh.pad(array, pad_width, mode, **kwargs)
    x = _promote.asarray_strong(array, name="pad")
    nd = get_aval(x).ndim
    widths = sh._pad_pairs(pad_width, nd, "pad_width")
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise PlaitValueError("index can't contain negative values")
    allowed = {"stat_length"} if mode in _STATS else {"end_values"}
    unknown = set(kwargs) - allowed
    if unknown:
        raise PlaitValueError(f"unsupported keyword arguments for mode '{mode}': "
                              f"{sorted(unknown)}")
    for axis, (lo, hi) in enumerate(widths):
        if get_aval(x).shape[axis] == 0 and (lo or hi):
            raise PlaitValueError(f"can't extend empty axis {axis} using modes other than "
                                  f"'constant' or 'empty'")
    if get_aval(x).size == 0:
        return sh.pad(x, pad_width, "constant")
    if mode == "linear_ramp":
        return _pad_ramp(x, widths, kwargs.get("end_values"))
    return _pad_stat(x, widths, mode, kwargs.get("stat_length"))


__all__ = ["pad"]
