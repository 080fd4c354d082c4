"""Windowed reductions: reduce_window_sum, reduce_window_max, reduce_window_min.

Params (all static tuples, one entry per operand dimension): ``window_dimensions``,
``window_strides``, ``padding`` (``(low, high)`` pairs; negative crops),
``base_dilation`` and ``window_dilation``. Padding and base-dilation holes hold
the reduction's identity (0, ``-inf``/the dtype's minimum, ``+inf``/maximum),
as in XLA's ``ReduceWindow``.
"""
from __future__ import annotations

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import standard_primitive, check_dtype, as_operand, NUMERIC
from plait.lax._windows import (window_out_size, pad_and_dilate, window_view, static_seq,
                                resolve_padding)
from plait.lax.reductions import ORDERED, accum_dtype, lowest, highest
from plait.errors import PlaitTypeError, PlaitValueError


def _rw_abstract(name, kinds):
    def rule(x: ShapedArray, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation) -> ShapedArray:
        if name == "reduce_window_sum" and dtypes.is_bool(x.dtype):
            raise PlaitTypeError(f"{name} does not accept bool; convert to an integer dtype "
                                 f"first")
        check_dtype(name, x, kinds)
        for what, v in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("padding", padding),
                        ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
            if len(v) != x.ndim:
                raise PlaitTypeError(f"{name}: {what} needs {x.ndim} entries (one per operand "
                                     f"dimension, shape {x.shape}), got {v}")
        for what, v in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
            if any(s < 1 for s in v):
                raise PlaitValueError(f"{name}: {what} must be positive, got {v}")
        shape = [window_out_size(n, k, s, lo, hi, bd, wd) for n, k, s, (lo, hi), bd, wd in
                 zip(x.shape, window_dimensions, window_strides, padding, base_dilation,
                     window_dilation)]
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def _rw_impl(reduce, identity):
    def impl(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        out = [window_out_size(n, k, s, lo, hi, bd, wd) for n, k, s, (lo, hi), bd, wd in
               zip(x.shape, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation)]
        fill = identity(x.dtype)
        if 0 in out:
            return np.full(out, fill, x.dtype)
        xp = pad_and_dilate(x, padding, base_dilation, fill)
        win = window_view(xp, range(x.ndim), window_dimensions, window_strides,
                          window_dilation, out)
        axes = tuple(range(x.ndim, 2 * x.ndim))
        with np.errstate(all="ignore"):
            return np.asarray(reduce(win, axes, x.dtype)).astype(x.dtype, copy=False)
    return impl


reduce_window_sum_p = standard_primitive(
    "reduce_window_sum", _rw_abstract("reduce_window_sum", NUMERIC),
    _rw_impl(lambda w, ax, dt: np.sum(w, axis=ax, dtype=accum_dtype(dt)), lambda dt: 0))
reduce_window_max_p = standard_primitive(
    "reduce_window_max", _rw_abstract("reduce_window_max", ORDERED),
    _rw_impl(lambda w, ax, dt: np.max(w, axis=ax), lowest))
reduce_window_min_p = standard_primitive(
    "reduce_window_min", _rw_abstract("reduce_window_min", ORDERED),
    _rw_impl(lambda w, ax, dt: np.min(w, axis=ax), highest))


def _reduce_window(prim):
    def fn(operand, window_dimensions, window_strides=None, padding="VALID",
           base_dilation=None, window_dilation=None):
        x = as_operand(operand)
        a = get_aval(x)
        name = prim.name
        wd = static_seq(name, "window_dimensions", window_dimensions, a.ndim)
        ws = static_seq(name, "window_strides", window_strides, a.ndim)
        bd = static_seq(name, "base_dilation", base_dilation, a.ndim)
        wdl = static_seq(name, "window_dilation", window_dilation, a.ndim)
        pads = resolve_padding(name, padding, a.shape, wd, ws, bd, wdl)
        return prim.bind(x, window_dimensions=wd, window_strides=ws, padding=pads,
                         base_dilation=bd, window_dilation=wdl)
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = (f"``{prim.name}`` over windows of ``window_dimensions`` moved by "
                  f"``window_strides`` (default 1); ``padding`` is 'VALID', 'SAME' or "
                  f"(low, high) pairs per dimension, filled with the reduction's identity.")
    return fn


reduce_window_sum = _reduce_window(reduce_window_sum_p)
reduce_window_max = _reduce_window(reduce_window_max_p)
reduce_window_min = _reduce_window(reduce_window_min_p)
