"""Cumulative (scan-like) primitives: cumsum, cumprod, cummax, cummin.

Each takes a static ``axis`` and ``reverse`` flag (accumulate from the end when
true) and returns an array of the operand's shape and dtype.
"""
from __future__ import annotations

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import (standard_primitive, check_dtype, canonicalize_axis, as_operand,
                             NUMERIC)
from plait.lax.reductions import ORDERED
from plait.lax import elementwise as ew
from plait.lax.shape_ops import pad, rev
from plait.lax.reductions import lowest, highest
from plait.lax._ad_helpers import defjvp, deflinear
from plait.lax._batch_helpers import defaxis
from plait.errors import PlaitTypeError, PlaitValueError


def _cum_abstract(name, kinds):
    def rule(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        if name in ("cumsum", "cumprod") and dtypes.is_bool(x.dtype):
            raise PlaitTypeError(f"{name} does not accept bool; convert to an integer dtype "
                                 f"first (plait.numpy functions do this for you)")
        check_dtype(name, x, kinds)
        if not 0 <= axis < x.ndim:
            raise PlaitValueError(f"{name}: axis {axis} is out of bounds for array of "
                                  f"dimension {x.ndim}")
        return x
    return rule


def _stepwise_dtype(dt: np.dtype):
    """The dtype in which a running sum or product of ``dt`` values is computed before
    each step is rounded back to ``dt`` (None: NumPy's ufunc ``accumulate`` in ``dt``
    already does that)."""
    if dtypes.bfloat16 is not None and dt == dtypes.bfloat16:
        return dtypes.float32
    return None


def _round_each_step(ufunc):
    """``ufunc.accumulate`` along ``axis`` with every running value rounded to the
    input's dtype, as NumPy does for float16 (computed in float32 for bfloat16, whose
    ufunc loops may not support ``accumulate``)."""
    def accumulate(x, axis):
        wide = _stepwise_dtype(x.dtype)
        if wide is None:
            return ufunc.accumulate(x, axis=axis, dtype=x.dtype)
        out = np.empty_like(x)
        xs, os = np.moveaxis(x, axis, 0), np.moveaxis(out, axis, 0)
        run = None
        for i in range(xs.shape[0]):
            step = xs[i].astype(wide)
            run = step if run is None else ufunc(run.astype(wide), step)
            os[i] = run.astype(x.dtype)
            run = os[i]
        return out
    return accumulate


def _cum_impl(accumulate):
    def impl(x, *, axis, reverse):
        if reverse:
            x = np.flip(x, axis)
        with np.errstate(all="ignore"):
            out = accumulate(x, axis).astype(x.dtype, copy=False)
        return np.ascontiguousarray(np.flip(out, axis)) if reverse else out
    return impl


cumsum_p = standard_primitive("cumsum", _cum_abstract("cumsum", NUMERIC), _cum_impl(
    _round_each_step(np.add)))
cumprod_p = standard_primitive("cumprod", _cum_abstract("cumprod", NUMERIC), _cum_impl(
    _round_each_step(np.multiply)))
cummax_p = standard_primitive("cummax", _cum_abstract("cummax", ORDERED), _cum_impl(
    lambda x, axis: np.maximum.accumulate(x, axis=axis)))
cummin_p = standard_primitive("cummin", _cum_abstract("cummin", ORDERED), _cum_impl(
    lambda x, axis: np.minimum.accumulate(x, axis=axis)))


# cumulative autodiff rules. cumprod/cummax/cummin differentiate a log-depth
# (Hillis-Steele) formulation of the scan: level by level, each element combines with
# the one ``shift`` places before it, so zeros and ties need no special cases.
def _shifted(v, axis, shift, fill):
    a = get_aval(v)
    cfg = [(0, 0, 0)] * a.ndim
    cfg[axis] = (shift, -shift, 0)
    return pad(v, fill, cfg)


def _scan_jvp(combine, identity):
    def rule(g, ans, x, *, axis, reverse):
        if reverse:
            x, g = rev(x, (axis,)), rev(g, (axis,))
        dt = get_aval(x).dtype
        y, t, shift = x, g, 1
        while shift < get_aval(x).shape[axis]:
            y, t = combine(y, t, _shifted(y, axis, shift, identity(dt)),
                           _shifted(t, axis, shift, 0))
            shift *= 2
        return rev(t, (axis,)) if reverse else t
    return rule


def _prod_combine(y, t, y_lo, t_lo):
    return ew.mul(y, y_lo), ew.add(ew.mul(t, y_lo), ew.mul(y, t_lo))


def _extremum_combine(cmp, pick_value):
    """The tangent follows the winner; ties share it equally."""
    def combine(y, t, y_lo, t_lo):
        shared = ew.mul(ew.add(t, t_lo), 0.5)
        return pick_value(y, y_lo), ew.select(cmp(y, y_lo), t,
                                              ew.select(ew.eq(y, y_lo), shared, t_lo))
    return combine


deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum(ct, axis, not reverse)])
defjvp(cumprod_p, _scan_jvp(_prod_combine, lambda dt: 1))
defjvp(cummax_p, _scan_jvp(_extremum_combine(ew.gt, ew.max), lowest))
defjvp(cummin_p, _scan_jvp(_extremum_combine(ew.lt, ew.min), highest))
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p):
    defaxis(_p)


def _cumulative(prim):
    def fn(x, axis: int = 0, reverse: bool = False):
        x = as_operand(x)
        ax = canonicalize_axis(int(axis), get_aval(x).ndim)
        return prim.bind(x, axis=ax, reverse=bool(reverse))
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = (f"``{prim.name}`` of ``x`` along ``axis`` (from the end when ``reverse``); "
                  f"same shape and dtype as ``x``.")
    return fn


cumsum = _cumulative(cumsum_p)
cumprod = _cumulative(cumprod_p)
cummax = _cumulative(cummax_p)
cummin = _cumulative(cummin_p)
