"""Grid and range builders: ``mgrid``, ``ogrid``, ``r_``, ``c_`` and ``geomspace``.

``mgrid[0:4, 0:1:5j]`` and ``ogrid[...]`` take static slices (a complex step is a
number of points, end included) and build the grids with ``lax.iota`` in NumPy's
dtype. ``r_[...]``/``c_[...]`` concatenate slices, scalars and arrays (traced ones
too) along an axis, with NumPy's string directives (``'0,2,1'``, ``'-1'``); the
``'r'``/``'c'`` matrix directives are not supported (plait has no matrix class).
"""
from __future__ import annotations

import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import shapes as sh
from plait.numpy.creation import arange, linspace, logspace


def _static_number(v, what: str):
    if _promote.is_array(v):
        raise PlaitTypeError(f"{what}: slice bounds and steps must be static Python numbers, "
                             f"got an array")
    return v


class _Grid:
    """``mgrid`` (dense) and ``ogrid`` (sparse) index objects."""

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        name = "ogrid" if self.sparse else "mgrid"
        if isinstance(key, slice):
            return self._one(key, name)
        if not isinstance(key, tuple) or not all(isinstance(k, slice) for k in key):
            raise PlaitTypeError(f"{name}[...] takes slices, e.g. {name}[0:3, 0:1:5j]")
        sizes, nums = [], [0]
        for k in key:
            start = _static_number(0 if k.start is None else k.start, name)
            step = _static_number(1 if k.step is None else k.step, name)
            stop = _static_number(k.stop, name)
            if isinstance(step, complex):
                step = abs(step)
                sizes.append(int(step))
            else:
                sizes.append(math.ceil((stop - start) / step))
            nums += [start, stop, step]
        typ = dtypes.canonical_dtype(np.result_type(*nums))
        sizes = [max(s, 0) for s in sizes]
        out = []
        for i, k in enumerate(key):
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if isinstance(step, complex):
                n = int(abs(step))
                step = (k.stop - start) / float(n - 1) if n != 1 else 1
            if self.sparse:
                shape = [1] * len(key)
                shape[i] = sizes[i]
                g = lax.reshape(lax.iota(typ, sizes[i]), tuple(shape))
            else:
                g = lax.broadcasted_iota(typ, tuple(sizes), i)
            out.append(uf.add(uf.multiply(g, step), start))
        if self.sparse:
            return tuple(out)
        return sh.stack(out) if out else _promote.wrap(np.zeros((0,), typ))

    @staticmethod
    def _one(key: slice, name: str):
        start = _static_number(0 if key.start is None else key.start, name)
        stop, step = _static_number(key.stop, name), _static_number(key.step, name)
        if isinstance(step, complex):
            length = int(abs(step))
            typ = dtypes.canonical_dtype(np.result_type(start, stop, abs(step)))
            scale = (stop - start) / float(length - 1) if length != 1 else 1
            return uf.add(uf.multiply(arange(0, length, 1, dtype=typ), scale), start)
        return arange(start, stop, step)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)


class _Concatenator:
    """``r_`` (rows: axis 0) and ``c_`` (columns: last axis, at least 2-D)."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, kinds = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise PlaitValueError("special directives must be the first entry.")
                axis, ndmin, trans1d = self._directive(item, axis, ndmin, trans1d)
                continue
            if isinstance(item, slice):
                start = _static_number(0 if item.start is None else item.start, self.name)
                step = _static_number(1 if item.step is None else item.step, self.name)
                stop = _static_number(item.stop, self.name)
                obj = linspace(start, stop, num=int(abs(step))) if isinstance(step, complex) \
                    else arange(start, stop, step)
                if ndmin > 1:
                    obj = self._ndmin(obj, ndmin)
                    if trans1d != -1:
                        obj = sh.swapaxes(obj, -1, trans1d)
                objs.append(obj)
                kinds.append(get_aval(obj).dtype)
            elif _promote.is_python_scalar(item) or isinstance(item, np.generic):
                objs.append(item)
                kinds.append(item)
            else:
                obj = _promote.asarray_strong(item, name=self.name)
                nd = get_aval(obj).ndim
                obj = self._ndmin(obj, ndmin)
                if trans1d != -1 and nd < ndmin:
                    k2, k1 = ndmin - nd, trans1d
                    if k1 < 0:
                        k1 += k2 + 1
                    axes = list(range(ndmin))
                    obj = sh.transpose(obj, axes[:k1] + axes[k2:] + axes[k1:k2])
                objs.append(obj)
                kinds.append(get_aval(obj).dtype)
        if not objs:
            return _promote.wrap(np.zeros((0,), np.float64))
        dt = dtypes.canonical_dtype(np.result_type(*kinds))
        objs = [self._ndmin(_promote.asarray_strong(o, dtype=dt), ndmin) for o in objs]
        return sh.concatenate(objs, axis=axis)

    @staticmethod
    def _ndmin(x, ndmin: int):
        s = get_aval(x).shape
        return lax.reshape(x, (1,) * (ndmin - len(s)) + s) if len(s) < ndmin else x

    def _directive(self, item: str, axis, ndmin, trans1d):
        if item in ("r", "c"):
            raise PlaitValueError(f"{self.name}['{item}', ...]: the matrix directives need "
                                  f"numpy.matrix, which plait does not have; use "
                                  f"{self.name}['0,2', ...] or reshape the result")
        try:
            vec = [int(v) for v in item.split(",")]
        except ValueError:
            raise PlaitValueError(f"unknown special directive {item!r}") from None
        if len(vec) == 1:
            return vec[0], ndmin, trans1d
        if len(vec) > 3:
            raise PlaitValueError(f"unknown special directive {item!r}")
        return vec[0], vec[1], (vec[2] if len(vec) == 3 else trans1d)


r_ = _Concatenator(axis=0, ndmin=1, trans1d=-1, name="r_")
c_ = _Concatenator(axis=-1, ndmin=2, trans1d=0, name="c_")


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """``num`` numbers spaced evenly on a log scale from ``start`` to ``stop`` (negative
    and complex endpoints allowed; the endpoints are returned exactly)."""
    num = _promote.static_int(num, "geomspace", "num")
    if num < 0:
        raise PlaitValueError(f"Number of samples, {num}, must be non-negative.")
    s = _promote.asarray_strong(start, name="geomspace")
    e = _promote.asarray_strong(stop, name="geomspace")
    for v in (s, e):   # traced endpoints cannot be checked: a zero gives NaN there
        if not isinstance(v, Tracer) and np.any(concrete_value(v) == 0):
            raise PlaitValueError("Geometric sequence cannot include zero")
    dt = dtypes.canonical_dtype(np.result_type(get_aval(s).dtype, get_aval(e).dtype,
                                               np.float64))
    out_dt = dt if dtype is None else dtypes.canonical_dtype(dtype)
    s, e = _promote.cast(s, dt), _promote.cast(e, dt)
    sign = uf.sign(s)
    s1 = uf.divide(s, sign)
    e1 = uf.divide(e, sign)
    res = logspace(uf.log10(s1), uf.log10(e1), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    if num > 0:   # NumPy puts the exact endpoints back (exp(log(x)) may differ from x)
        bshape = get_aval(res).shape[1:]

        def row(v):
            return lax.reshape(_promote.broadcast_to_shape(v, bshape), (1,) + bshape)

        if num > 1 and endpoint:
            res = sh.concatenate([row(s1), res[1:num - 1], row(e1)])
        else:
            res = sh.concatenate([row(s1), res[1:]])
    res = uf.multiply(res, sign)
    if axis != 0:
        res = sh.moveaxis(res, 0, axis)
    return _promote.cast(res, out_dt)


__all__ = ["mgrid", "ogrid", "r_", "c_", "geomspace"]
