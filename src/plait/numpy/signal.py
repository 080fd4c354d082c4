"""1-D signal and calculus helpers: convolve, correlate, interp, unwrap, gradient,
trapezoid.

All are compositions of ``plait.numpy``/``plait.lax`` operations, so they run
eagerly, under ``jit`` and under ``grad``. ``convolve``/``correlate`` gather the
sliding windows of the zero-padded longer input with a static index table and
contract them with ``matmul`` (NumPy's dtype rules, bool and complex included);
``interp`` locates each point with ``searchsorted``.
"""
from __future__ import annotations

import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import get_aval
from plait.errors import PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import reductions as red
from plait.numpy import shapes as sh
from plait.numpy.indexing import take
from plait.numpy.linalg_ops import matmul
from plait.numpy.sorting import searchsorted, argsort

_MODES = ("full", "same", "valid")


def _vector(x, name: str, what: str):
    x = _promote.asarray_strong(x, name=name)
    if get_aval(x).ndim > 1:
        raise PlaitValueError(f"{name}: {what} must be 1-D (or a scalar)")
    x = lax.reshape(x, (get_aval(x).size,))
    if get_aval(x).size == 0:
        raise PlaitValueError(f"{name}: {what} cannot be empty")
    return x


def _full_convolution(a, v):
    """``sum_j a[k - j] v[j]`` for ``k`` in ``[0, n + m - 1)``, with ``len(a) >= len(v)``."""
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    padded = lax.pad(a, _promote.cast(0, get_aval(a).dtype), [(m - 1, m - 1, 0)])
    windows = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    return matmul(take(padded, windows), sh.flip(v))


def _mode_slice(full, n: int, m: int, mode: str, flipped: bool = False):
    """The ``mode`` part of a full result; ``flipped``: NumPy computed it reversed (its
    correlate of a shorter first input), which centres ``same`` one place later."""
    lo, hi = min(n, m), max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start, length = (lo - 1) - (lo - 1) // 2 if flipped else (lo - 1) // 2, hi
    elif mode == "valid":
        start, length = lo - 1, hi - lo + 1
    else:
        raise PlaitValueError(f"mode must be one of {', '.join(map(repr, _MODES))}, "
                              f"got {mode!r}")
    return lax.slice(full, (start,), (start + length,))


def convolve(a, v, mode: str = "full"):
    """Discrete linear convolution of two 1-D sequences (modes ``full``, ``same``, ``valid``)."""
    a = _vector(a, "convolve", "a")
    v = _vector(v, "convolve", "v")
    a, v = _promote.promote_dtypes("convolve", a, v)
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    if mode not in _MODES:
        _mode_slice(a, n, m, mode)
    full = _full_convolution(a, v) if n >= m else _full_convolution(v, a)
    return _mode_slice(full, n, m, mode)


def correlate(a, v, mode: str = "valid"):
    """Cross-correlation ``c[k] = sum_n a[n + k] * conj(v[n])`` of two 1-D sequences."""
    a = _vector(a, "correlate", "a")
    v = _vector(v, "correlate", "v")
    if dtypes.is_complex(get_aval(v).dtype):
        v = uf.conjugate(v)
    full = convolve(a, sh.flip(v), "full")
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    return _mode_slice(full, n, m, mode, flipped=n < m)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolant of ``(xp, fp)`` at ``x`` (``xp`` increasing).

    Results are float64 (complex128 for complex ``fp``), as in NumPy.
    """
    xv = _promote.asarray_strong(x, name="interp")
    xpv = _promote.asarray_strong(xp, name="interp")
    fpv = _promote.asarray_strong(fp, name="interp")
    if get_aval(xpv).ndim != 1 or get_aval(fpv).ndim != 1:
        raise PlaitValueError("interp: xp and fp must be 1-D sequences")
    n = get_aval(xpv).shape[0]
    if get_aval(fpv).shape[0] != n:
        raise PlaitValueError("fp and xp are not of the same length.")
    if n == 0:
        raise PlaitValueError("array of sample points is empty")
    if dtypes.is_complex(get_aval(xv).dtype) or dtypes.is_complex(get_aval(xpv).dtype):
        from plait.errors import PlaitTypeError
        raise PlaitTypeError("interp: x and xp must be real")
    out_dt = dtypes.complex128 if dtypes.is_complex(get_aval(fpv).dtype) else dtypes.float64
    xv, xpv = _promote.cast(xv, dtypes.float64), _promote.cast(xpv, dtypes.float64)
    fpv = _promote.cast(fpv, out_dt)
    if period is not None:
        if period == 0:
            raise PlaitValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        xv = uf.remainder(xv, period)
        xpv = uf.remainder(xpv, period)
        order = argsort(xpv)
        xpv, fpv = take(xpv, order), take(fpv, order)
        xpv = sh.concatenate([uf.subtract(xpv[-1:], period), xpv, uf.add(xpv[:1], period)])
        fpv = sh.concatenate([fpv[-1:], fpv, fpv[:1]])
        n += 2
    if n == 1:
        res = sh.broadcast_to(fpv[0], get_aval(xv).shape)
    else:
        j = lax.clamp(0, lax.sub(searchsorted(xpv, xv, side="right"), 1), n - 2)
        x0, x1 = take(xpv, j), take(xpv, lax.add(j, 1))
        f0, f1 = take(fpv, j), take(fpv, lax.add(j, 1))
        slope = uf.divide(uf.subtract(f1, f0), uf.subtract(x1, x0))
        res = uf.add(uf.multiply(slope, uf.subtract(xv, x0)), f0)
        # NumPy's fallbacks when the slope is inf/nan (repeated xp, infinite values)
        alt = uf.add(uf.multiply(slope, uf.subtract(xv, x1)), f1)
        res = uf.where(uf.isnan(res), alt, res)
        res = uf.where(uf.logical_and(uf.isnan(res), uf.equal(f0, f1)), f0, res)
        res = uf.where(uf.equal(xv, xpv[-1]), fpv[-1], res)
    lo = fpv[0] if left is None else _promote.cast(_promote.asarray_strong(left), out_dt)
    hi = fpv[-1] if right is None else _promote.cast(_promote.asarray_strong(right), out_dt)
    res = uf.where(uf.less(xv, xpv[0]), lo, res)
    res = uf.where(uf.greater(xv, xpv[-1]), hi, res)
    return _promote.cast(res, out_dt)


def unwrap(p, discont=None, axis: int = -1, *, period=2 * math.pi):
    """Unwrap by taking the complement of large deltas with respect to ``period``."""
    pv = _promote.asarray_strong(p, name="unwrap")
    nd = get_aval(pv).ndim
    axis = _promote.normalize_axis(axis, nd, "unwrap")
    dd = sh.diff(pv, axis=axis)
    if discont is None:
        discont = period / 2
    if dtypes.is_integer(get_aval(dd).dtype) and isinstance(period, int):
        interval_high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        interval_high, ambiguous = period / 2, True
    interval_low = -interval_high
    ddmod = uf.add(uf.mod(uf.subtract(dd, interval_low), period), interval_low)
    if ambiguous:
        ddmod = uf.where(uf.logical_and(uf.equal(ddmod, interval_low), uf.greater(dd, 0)),
                         interval_high, ddmod)
    correct = uf.subtract(ddmod, dd)
    correct = uf.where(uf.less(uf.absolute(dd), discont), 0, correct)
    n = get_aval(pv).shape[axis]
    dt = np.result_type(get_aval(dd).dtype, period)   # NumPy's: the corrections are cast back
    if n == 0:
        return _promote.cast(pv, dt)
    head = _slice(pv, axis, 0, 1)
    tail = uf.add(_slice(pv, axis, 1, n), red.cumsum(correct, axis=axis))
    return sh.concatenate([_promote.cast(head, dt), _promote.cast(tail, dt)], axis=axis)


def _slice(x, axis: int, start: int, stop: int):
    shape = get_aval(x).shape
    lo = [0] * len(shape)
    hi = list(shape)
    start = min(start, shape[axis])
    lo[axis], hi[axis] = start, max(min(stop, shape[axis]), start)
    return lax.slice(x, tuple(lo), tuple(hi))


def _spacings(varargs, f_shape, axes, name):
    """One spacing per axis: a Python/0-d scalar or a 1-D coordinate array."""
    if len(varargs) == 0:
        return [1.0] * len(axes)
    if len(varargs) == 1:
        h = _promote.arg(varargs[0], name)
        if _promote.is_python_scalar(h) or get_aval(h).ndim == 0:
            return [h] * len(axes)
    if len(varargs) != len(axes):
        raise PlaitValueError(f"{name}: invalid number of arguments")
    out = []
    for v, ax in zip(varargs, axes):
        v = _promote.arg(v, name)
        if _promote.is_python_scalar(v) or get_aval(v).ndim == 0:
            out.append(v)
            continue
        if get_aval(v).ndim != 1:
            raise PlaitValueError("distances must be either scalars or 1d")
        if get_aval(v).shape[0] != f_shape[ax]:
            raise PlaitValueError("when 1d, distances must match the length of the "
                                  "corresponding dimension")
        out.append(v)
    return out


def _bcast_along(v, axis: int, nd: int):
    """A 1-D array as an ``nd``-D array varying along ``axis``."""
    shape = [1] * nd
    shape[axis] = get_aval(v).shape[0]
    return lax.reshape(v, tuple(shape))


def _gradient_axis(f, h, axis: int, edge_order: int):
    nd = get_aval(f).ndim
    n = get_aval(f).shape[axis]

    def s(a, b):
        return _slice(f, axis, a % (n + 1) if a >= 0 else n + a, b if b >= 0 else n + b)

    if _promote.is_python_scalar(h) or get_aval(h).ndim == 0:
        interior = uf.divide(uf.subtract(s(2, n), s(0, -2)), uf.multiply(2, h))
        if edge_order == 1:
            first = uf.divide(uf.subtract(s(1, 2), s(0, 1)), h)
            last = uf.divide(uf.subtract(s(n - 1, n), s(n - 2, n - 1)), h)
        else:
            first = uf.divide(uf.add(uf.add(uf.multiply(-1.5, s(0, 1)), uf.multiply(2.0, s(1, 2))),
                                     uf.multiply(-0.5, s(2, 3))), h)
            last = uf.divide(uf.add(uf.add(uf.multiply(0.5, s(n - 3, n - 2)),
                                           uf.multiply(-2.0, s(n - 2, n - 1))),
                                    uf.multiply(1.5, s(n - 1, n))), h)
        return sh.concatenate([first, interior, last], axis=axis)
    dx = sh.diff(h)
    dx1, dx2 = dx[:-1], dx[1:]
    a = uf.divide(uf.negative(dx2), uf.multiply(dx1, uf.add(dx1, dx2)))
    b = uf.divide(uf.subtract(dx2, dx1), uf.multiply(dx1, dx2))
    c = uf.divide(dx1, uf.multiply(dx2, uf.add(dx1, dx2)))
    a, b, c = (_bcast_along(t, axis, nd) for t in (a, b, c))
    interior = uf.add(uf.add(uf.multiply(a, s(0, -2)), uf.multiply(b, s(1, -1))),
                      uf.multiply(c, s(2, n)))
    if edge_order == 1:
        first = uf.divide(uf.subtract(s(1, 2), s(0, 1)), dx[0])
        last = uf.divide(uf.subtract(s(n - 1, n), s(n - 2, n - 1)), dx[-1])
    else:
        d1, d2 = dx[0], dx[1]
        a0 = uf.divide(uf.negative(uf.add(uf.multiply(2.0, d1), d2)),
                       uf.multiply(d1, uf.add(d1, d2)))
        b0 = uf.divide(uf.add(d1, d2), uf.multiply(d1, d2))
        c0 = uf.divide(uf.negative(d1), uf.multiply(d2, uf.add(d1, d2)))
        first = uf.add(uf.add(uf.multiply(a0, s(0, 1)), uf.multiply(b0, s(1, 2))),
                       uf.multiply(c0, s(2, 3)))
        d1, d2 = dx[-2], dx[-1]
        a1 = uf.divide(d2, uf.multiply(d1, uf.add(d1, d2)))
        b1 = uf.divide(uf.negative(uf.add(d2, d1)), uf.multiply(d1, d2))
        c1 = uf.divide(uf.add(uf.multiply(2.0, d2), d1), uf.multiply(d2, uf.add(d1, d2)))
        last = uf.add(uf.add(uf.multiply(a1, s(n - 3, n - 2)), uf.multiply(b1, s(n - 2, n - 1))),
                      uf.multiply(c1, s(n - 1, n)))
    return sh.concatenate([first, interior, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """Second-order central differences inside, one-sided (order 1 or 2) at the edges.

    Returns one array, or a tuple with one array per axis when several axes are asked.
    """
    fv = _promote.asarray_strong(f, name="gradient")
    av = get_aval(fv)
    if axis is None:
        axes = tuple(range(av.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(_promote.normalize_axis(a, av.ndim, "gradient") for a in axis)
    else:
        axes = (_promote.normalize_axis(axis, av.ndim, "gradient"),)
    if edge_order not in (1, 2):
        raise PlaitValueError("'edge_order' greater than 2 not supported")
    spacings = _spacings(varargs, av.shape, axes, "gradient")
    otype = av.dtype if dtypes.is_inexact(av.dtype) else dtypes.float64
    fv = _promote.cast(fv, otype)
    outs = []
    for ax, h in zip(axes, spacings):
        if av.shape[ax] < edge_order + 1:
            raise PlaitValueError("Shape of array too small to calculate a numerical "
                                  "gradient, at least (edge_order + 1) elements are required.")
        if _promote.is_array(h) and not dtypes.is_inexact(get_aval(h).dtype):
            h = _promote.cast(h, dtypes.float64)
        outs.append(_promote.cast(_gradient_axis(fv, h, ax, edge_order), otype))
    return outs[0] if len(outs) == 1 else tuple(outs)


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """Integral of ``y`` along ``axis`` by the composite trapezoidal rule."""
    yv = _promote.asarray_strong(y, name="trapezoid")
    nd = get_aval(yv).ndim
    axis = _promote.normalize_axis(axis, nd, "trapezoid")
    if x is None:
        d = dx
    else:
        xv = _promote.asarray_strong(x, name="trapezoid")
        if get_aval(xv).ndim == 1:
            d = _bcast_along(sh.diff(xv), axis, nd)
        else:
            d = sh.diff(xv, axis=axis)
    n = get_aval(yv).shape[axis]
    mid = uf.add(_slice(yv, axis, 1, n), _slice(yv, axis, 0, n - 1))
    return red.sum(uf.divide(uf.multiply(d, mid), 2.0), axis=axis)
