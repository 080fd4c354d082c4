"""Applying Python functions over arrays: vectorize, apply_along_axis, apply_over_axes,
piecewise.

``vectorize`` and ``apply_along_axis`` are built on ``vmap`` (looked up through
``plait.core.graph_transforms``, where ``plait.transforms`` registers it, so this
module keeps to the core/lax import rule): the function is traced once, not called
per element, so it must be written with plait operations (Python ``if`` on its
argument's values is an error, as under ``jit``; use ``where``). ``piecewise``
evaluates every function on the whole input and selects with ``where``, so the
functions must accept the full array (NumPy passes each only the selected values).
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.graph_transforms import graph_transform
from plait.core.trace import get_aval
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import shapes as sh


def _vmap(f, times: int):
    vmap = graph_transform("vmap")
    for _ in range(times):
        f = vmap(f)
    return f


def _as_array(x):
    return _promote.asarray_strong(x)


def apply_along_axis(func1d: Callable, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis``; the function's
    result dimensions replace ``axis`` in the output."""
    x = _promote.asarray_strong(arr, name="apply_along_axis")
    nd = get_aval(x).ndim
    if nd == 0:
        raise PlaitValueError("apply_along_axis: arr must have at least one dimension")
    axis = _promote.normalize_axis(axis, nd, "apply_along_axis")
    moved = sh.moveaxis(x, axis, -1)
    out = _vmap(lambda v: _as_array(func1d(v, *args, **kwargs)), nd - 1)(moved)
    k = get_aval(out).ndim - (nd - 1)
    perm = list(range(axis)) + list(range(nd - 1, nd - 1 + k)) + list(range(axis, nd - 1))
    return lax.transpose(out, tuple(perm))


def apply_over_axes(func: Callable, a, axes):
    """``func(a, axis)`` repeatedly over ``axes``, keeping the number of dimensions."""
    val = _promote.asarray_strong(a, name="apply_over_axes")
    nd = get_aval(val).ndim
    for axis in (axes if isinstance(axes, (tuple, list)) else [axes]):
        axis = _promote.normalize_axis(axis, nd, "apply_over_axes")
        res = _as_array(func(val, axis))
        if get_aval(res).ndim != nd:
            res = sh.expand_dims(res, axis)
            if get_aval(res).ndim != nd:
                raise PlaitValueError("function is not returning an array of the correct "
                                      "shape")
        val = res
    return val


_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature: str):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise PlaitValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")
    parse = lambda s: [tuple(re.findall(_DIM, arg)) for arg in re.findall(_CORE, s)]  # noqa: E731
    return parse(ins), parse(outs)


class vectorize:
    """NumPy's ``vectorize`` over plait arrays, built on ``vmap``.

    ``pyfunc`` is traced once per call with scalar (or core-shaped, with
    ``signature``) arguments and mapped over the broadcast loop dimensions. It must
    be written with plait operations (see the module docstring). ``excluded``
    names positional indices or keywords passed through unmapped; ``otypes`` casts
    the outputs.
    """

    def __init__(self, pyfunc: Callable, otypes=None, doc: str | None = None,
                 excluded=None, cache: bool = False, signature: str | None = None):
        self.pyfunc = pyfunc
        self.otypes = otypes
        if isinstance(otypes, str):
            self.otypes = [np.dtype(c) for c in otypes]
        self.excluded = set(excluded or ())
        self.signature = signature
        self._sig = _parse_signature(signature) if signature is not None else None
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)

    def __call__(self, *args, **kwargs):
        names = [i for i in range(len(args)) if i not in self.excluded]
        names += [k for k in kwargs if k not in self.excluded]
        values = [_promote.asarray_strong(args[n] if isinstance(n, int) else kwargs[n],
                                          name="vectorize") for n in names]
        if self._sig is None:
            cores = [()] * len(values)
        else:
            cores = self._sig[0]
            if len(cores) != len(values):
                raise PlaitTypeError(f"wrong number of positional arguments: expected "
                                     f"{len(cores)}, got {len(values)}")
        sizes: dict = {}
        loops = []
        for v, core in zip(values, cores):
            shape = get_aval(v).shape
            if len(shape) < len(core):
                raise PlaitValueError(f"input with shape {shape} does not have enough "
                                      f"dimensions for its core dimensions {core}")
            for d, n in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(d, n) != n:
                    raise PlaitValueError(f"inconsistent size for core dimension {d!r}: "
                                          f"{n} vs {sizes[d]}")
            loops.append(shape[:len(shape) - len(core)])
        loop = _promote.broadcast_shapes(*loops) if loops else ()
        values = [_promote.broadcast_to_shape(v, loop + get_aval(v).shape[len(s):])
                  for v, s in zip(values, loops)]

        def call(*vals):
            a, kw = list(args), dict(kwargs)
            for n, v in zip(names, vals):
                if isinstance(n, int):
                    a[n] = v
                else:
                    kw[n] = v
            out = self.pyfunc(*a, **kw)
            return tuple(map(_as_array, out)) if isinstance(out, tuple) else _as_array(out)

        out = _vmap(call, len(loop))(*values) if values else call()
        if self.otypes:
            if isinstance(out, tuple):
                out = tuple(_promote.cast(o, dtypes.canonical_dtype(t))
                            for o, t in zip(out, self.otypes))
            else:
                out = _promote.cast(out, dtypes.canonical_dtype(self.otypes[0]))
        return out


def piecewise(x, condlist, funclist, *args, **kw):
    """Values of ``funclist[i](x)`` (or constants) where ``condlist[i]`` holds; an extra
    last function gives the value where no condition holds; 0 elsewhere."""
    xv = _promote.asarray_strong(x, name="piecewise")
    shape, dt = get_aval(xv).shape, get_aval(xv).dtype
    if _promote.is_array(condlist) or isinstance(condlist, np.ndarray) or \
            isinstance(condlist, bool) or (isinstance(condlist, list) and condlist
                                           and not isinstance(condlist[0], (list, tuple))
                                           and not _promote.is_array(condlist[0])
                                           and not isinstance(condlist[0], np.ndarray)
                                           and len(shape) and len(condlist) == shape[0]):
        condlist = [condlist]
    conds = [_promote.broadcast_to_shape(
        _promote.cast(_promote.asarray_strong(c, name="piecewise"), dtypes.bool_), shape)
        for c in condlist]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise PlaitValueError(f"with {n} condition(s), either {n} or {n + 1} functions are "
                              f"expected")
    if len(funclist) == n + 1:
        none = lax.bitwise_not(conds[0]) if n == 1 else uf.logical_not(
            _reduce_or(conds))
        conds.append(none)
    out = _promote.broadcast_to_shape(_promote.cast(0, dt), shape)
    for c, f in zip(conds, funclist):
        val = f(xv, *args, **kw) if callable(f) else f
        val = _promote.broadcast_to_shape(_promote.cast(_promote.arg(val, "piecewise"), dt),
                                          shape)
        out = lax.select(c, val, out)
    return out


def _reduce_or(conds):
    acc = conds[0]
    for c in conds[1:]:
        acc = lax.bitwise_or(acc, c)
    return acc


__all__ = ["apply_along_axis", "apply_over_axes", "vectorize", "piecewise"]
