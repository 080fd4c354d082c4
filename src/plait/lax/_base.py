"""Helpers for defining primitives: shape/dtype checks and registrars.

A primitive's rules are written in one block next to it; these helpers make the
common cases one line each (``standard_unop``, ``standard_binop``). Errors
raised here are plait errors naming the user's line.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.primitive import new_primitive, Primitive
from plait.core.trace import Tracer, wrap_array
from plait.errors import PlaitTypeError

# dtype classes accepted by rules
BOOL = "bool"
INT = "int"
UINT = "uint"
FLOAT = "float"
COMPLEX = "complex"
NUMERIC = (INT, UINT, FLOAT, COMPLEX)
INEXACT = (FLOAT, COMPLEX)
ALL = (BOOL, INT, UINT, FLOAT, COMPLEX)
INTEGRAL = (BOOL, INT, UINT)


_DTYPE_CLASS: dict = {}


def dtype_class(dt: np.dtype) -> str:
    c = _DTYPE_CLASS.get(dt)
    if c is None:
        c = _DTYPE_CLASS[dt] = _dtype_class(dt)
    return c


def _dtype_class(dt: np.dtype) -> str:
    if dtypes.is_bool(dt):
        return BOOL
    if dtypes.is_unsigned(dt):
        return UINT
    if dtypes.is_integer(dt):
        return INT
    if dtypes.is_complex(dt):
        return COMPLEX
    return FLOAT


def check_dtype(name: str, aval: ShapedArray, allowed: Sequence[str]) -> None:
    c = _DTYPE_CLASS.get(aval.dtype) or dtype_class(aval.dtype)
    if c not in allowed:
        raise PlaitTypeError(f"{name} does not accept dtype {aval.dtype} "
                             f"(accepted kinds: {', '.join(allowed)})")


def check_same_dtypes(name: str, avals: Sequence[ShapedArray]) -> None:
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        raise PlaitTypeError(f"{name} requires arguments to have the same dtype, got "
                             f"{', '.join(str(a.dtype) for a in avals)}; convert them "
                             f"first (plait.numpy functions promote automatically)")


def check_same_shapes(name: str, avals: Sequence[ShapedArray]) -> None:
    shapes = {a.shape for a in avals}
    if len(shapes) > 1:
        raise PlaitTypeError(f"{name} requires arguments to have the same shape, got "
                             f"{', '.join(str(a.shape) for a in avals)} (plait.numpy "
                             f"functions broadcast automatically)")


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        from plait.errors import PlaitIndexError
        raise PlaitIndexError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def standard_primitive(name: str, abstract_eval: Callable, impl: Callable,
                       multiple_results: bool = False) -> Primitive:
    """A primitive with its ``impl`` and ``abstract_eval`` registered."""
    p = new_primitive(name, multiple_results)
    p.def_abstract_eval(abstract_eval)
    p.def_impl(impl)
    return p


def _unop_abstract(name, kinds, out_dtype):
    def rule(x: ShapedArray, **params) -> ShapedArray:
        check_dtype(name, x, kinds)
        if out_dtype is None:
            return x
        return ShapedArray(x.shape, out_dtype(x.dtype), False)
    return rule


def standard_unop(name: str, kinds: Sequence[str], impl: Callable,
                  out_dtype: Callable | None = None, warn_ok: bool = False) -> Primitive:
    """An elementwise unary primitive; ``out_dtype(dtype)`` overrides the result dtype."""
    if warn_ok:
        raw = impl

        def impl(x, **params):
            with np.errstate(all="ignore"):
                return raw(x, **params)
    return standard_primitive(name, _unop_abstract(name, kinds, out_dtype), impl)


def _binop_abstract(name, kinds, out_dtype):
    def rule(x: ShapedArray, y: ShapedArray, **params) -> ShapedArray:
        check_dtype(name, x, kinds)
        if x.dtype != y.dtype:
            check_same_dtypes(name, (x, y))
        if x.shape != y.shape:
            check_same_shapes(name, (x, y))
        if out_dtype is None:
            if x.weak_type == y.weak_type:
                return x
            return ShapedArray(x.shape, x.dtype, False)
        return ShapedArray(x.shape, out_dtype(x.dtype), False)
    return rule


def standard_binop(name: str, kinds: Sequence[str], impl: Callable,
                   out_dtype: Callable | None = None, warn_ok: bool = False) -> Primitive:
    """An elementwise binary primitive on equal shapes and dtypes."""
    if warn_ok:
        raw = impl

        def impl(x, y, **params):
            with np.errstate(all="ignore"):
                return raw(x, y, **params)
    return standard_primitive(name, _binop_abstract(name, kinds, out_dtype), impl)


def to_bool(dt):
    return dtypes.bool_


def as_operand(x, like_dtype=None):
    """Python/NumPy scalars become weak 0-d arrays (of ``like_dtype`` when given)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        if like_dtype is not None:
            return _weak_scalar(x, like_dtype)
        from plait.core.aval import aval_of
        return _weak_scalar(x, aval_of(x).dtype)
    return x


def _weak_scalar(x, dtype):
    return wrap_array(np.asarray(x, dtype=dtype), True)


def static_ints(name: str, xs, what: str) -> tuple:
    try:
        return tuple(int(operator_index(x)) for x in xs)
    except TypeError:
        raise PlaitTypeError(f"{name}: {what} must be static integers, got {xs!r}") from None


def operator_index(x):
    import operator
    if isinstance(x, Tracer):
        x.__index__()
    return operator.index(x)
