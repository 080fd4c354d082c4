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
from plait.lax._windows import (dilate_dim, window_out_size, pad_and_dilate, window_view,
                                static_seq, resolve_padding)
from plait.lax.reductions import ORDERED, accum_dtype, lowest, highest
from plait.lax._ad_helpers import (Zero, defjvp, deflinear, full, add_tangents,
                                   tangent_aval, aval_of_operand)
from plait.lax._batch_helpers import insert_at
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


# windowed autodiff rules
def _rw_sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation):
    """Spread each output's cotangent over its window: pad the cotangent (interior
    holes for the strides) and sum windows again, striding by the base dilation."""
    from plait.lax.shape_ops import pad
    xa = aval_of_operand(x)
    osz = get_aval(ct).shape
    cfg = []
    for n, k, s, (lo, _), bd, wd, o in zip(xa.shape, window_dimensions, window_strides,
                                           padding, base_dilation, window_dilation, osz):
        kd = dilate_dim(k, wd)
        before = kd - lo - 1
        after = dilate_dim(n, bd) + kd - 1 - dilate_dim(o, s) - before
        cfg.append((before, after, s - 1))
    return [reduce_window_sum_p.bind(
        pad(ct, 0, cfg), window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * xa.ndim, base_dilation=(1,) * xa.ndim,
        window_dilation=window_dilation)]


def _window_taps(v, fill, *, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation, out_shape):
    """The window element at each offset, for all outputs at once (strided slices of
    the padded, base-dilated operand)."""
    from plait.lax.shape_ops import pad, slice as lax_slice
    vp = pad(v, fill, [(lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation)])
    for offset in np.ndindex(*window_dimensions):
        start = [k * wd for k, wd in zip(offset, window_dilation)]
        limit = [st + (o - 1) * s + 1 if o else st
                 for st, o, s in zip(start, out_shape, window_strides)]
        yield lax_slice(vp, start, limit, window_strides)


def _rw_extremum_jvp(identity):
    def rule(g, ans, x, **params):
        """The tangent of the window's extremum, shared equally among ties."""
        from plait.lax.elementwise import eq, select, add, div, convert_element_type
        xa, oa = get_aval(x), get_aval(ans)
        taps = zip(_window_taps(x, identity(xa.dtype), out_shape=oa.shape, **params),
                   _window_taps(g, 0, out_shape=oa.shape, **params))
        zero = full(oa.shape, 0, oa.dtype)
        total = count = None
        for xk, gk in taps:
            hit = eq(xk, ans)
            total = add_tangents(total, select(hit, gk, zero))
            c = convert_element_type(hit, oa.dtype)
            count = c if count is None else add(count, c)
        if total is None:
            return Zero(tangent_aval(oa))
        return div(total, count)
    return rule


deflinear(reduce_window_sum_p, _rw_sum_transpose)
defjvp(reduce_window_max_p, _rw_extremum_jvp(lowest))
defjvp(reduce_window_min_p, _rw_extremum_jvp(highest))


def _rw_batch(prim):
    def rule(vals, dims, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        """A window of size 1 along the batch dim."""
        (x,), (d,) = vals, dims
        return prim.bind(x, window_dimensions=insert_at(window_dimensions, d, 1),
                         window_strides=insert_at(window_strides, d, 1),
                         padding=insert_at(padding, d, (0, 0)),
                         base_dilation=insert_at(base_dilation, d, 1),
                         window_dilation=insert_at(window_dilation, d, 1)), d
    return rule


for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _p.def_rule("batch", _rw_batch(_p))


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
