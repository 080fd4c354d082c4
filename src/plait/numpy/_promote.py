"""Argument conversion, NEP 50 dtype promotion and NumPy broadcasting for plait.numpy.

Python scalars are *weak* (they take the dtype of the array they meet); NumPy
arrays and NumPy scalars are *strong*. ``promote_args(name, *args)`` returns the
arguments as arrays of one common dtype broadcast to one common shape, built
with ``plait.lax`` only, so it works eagerly and under ``jit``.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import Tracer, get_aval, is_concrete_array, wrap_array
from plait import lax
from plait.errors import PlaitTypeError, PlaitValueError

PY_SCALARS = (bool, int, float, complex)


def is_python_scalar(x) -> bool:
    """True for Python ``bool``/``int``/``float``/``complex`` (not NumPy scalars)."""
    return isinstance(x, PY_SCALARS) and not isinstance(x, np.generic)


def is_array(x) -> bool:
    """True for plait arrays and tracers."""
    return isinstance(x, Tracer) or is_concrete_array(x)


def wrap(value: np.ndarray, weak: bool = False):
    """A concrete ``plait.Array`` holding ``value``."""
    return wrap_array(value, weak)


def _contains_traced(x) -> bool:
    if is_array(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_traced(e) for e in x)
    return False


def _from_numpy(v: np.ndarray):
    if v.dtype == object:
        raise PlaitTypeError("cannot make a plait array from an object array (ragged nested "
                             "sequences or non-numeric values)")
    dt = dtypes.canonical_dtype(v.dtype)
    return wrap(np.array(v, dtype=dt), False)


def arg(x, name: str = "argument"):
    """Turn one argument into a plait array or leave it a Python scalar (weak).

    plait arrays and tracers pass through; NumPy arrays/scalars and nested
    lists become strong ``plait.Array`` values.
    """
    if is_array(x) or is_python_scalar(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return _from_numpy(np.asarray(x))
    if isinstance(x, (list, tuple)):
        if _contains_traced(x):
            from plait.numpy.creation import array
            return array(x)
        return _from_numpy(np.asarray(x))
    if hasattr(x, "__array__"):
        return _from_numpy(np.asarray(x))
    raise PlaitTypeError(f"{name}: {type(x).__name__} is not a valid plait array value "
                         f"({x!r:.60}); pass arrays, NumPy arrays, Python scalars or lists")


def aval(x) -> ShapedArray:
    """Abstract value of a converted argument (Python scalars are weak)."""
    return get_aval(x)


def _fmt_shape(s: tuple) -> str:
    return "(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


def broadcast_shapes(*shapes: Sequence[int]) -> tuple:
    """NumPy's broadcast of ``shapes``; a clear error names the incompatible shapes."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s):
            j = nd - len(s) + i
            if d != out[j]:
                if out[j] == 1:
                    out[j] = d
                elif d != 1:
                    raise PlaitValueError(
                        "operands could not be broadcast together with shapes "
                        + " ".join(_fmt_shape(tuple(t)) for t in shapes))
    return tuple(out)


def check_int_fits(value: int, dt: np.dtype) -> None:
    """NumPy 2 refuses Python ints that do not fit the integer dtype they meet."""
    if dtypes.is_integer(dt) and not isinstance(value, bool):
        info = np.iinfo(dt)
        if not info.min <= value <= info.max:
            raise PlaitValueError(f"Python integer {value} out of bounds for {dt}")


def scalar_array(x, dt: np.dtype, weak: bool = True, shape: tuple = ()):
    """An array of dtype ``dt`` and ``shape`` (0-d by default) filled with the Python scalar ``x``."""
    if isinstance(x, int):
        check_int_fits(x, dt)
    if dt.kind == "f" and dt.itemsize >= 4:   # cannot warn short of float overflow (as NumPy)
        return wrap(np.full(shape, x, dtype=dt) if shape else np.asarray(x, dtype=dt), weak)
    with np.errstate(all="ignore"):
        return wrap(np.full(shape, x, dtype=dt) if shape else np.asarray(x, dtype=dt), weak)


def cast(x, dt: np.dtype, weak: bool = False):
    """``x`` (array or Python scalar) converted to dtype ``dt``."""
    if is_python_scalar(x):
        return scalar_array(x, dt, weak)
    a = get_aval(x)
    if a.dtype == dt and a.weak_type == weak:
        return x
    if dt == dtypes.bool_ and a.dtype != dtypes.bool_:
        return lax.ne(x, 0)   # NumPy: nonzero (NaN included) is True
    return lax.convert_element_type(x, dt, weak)


def broadcast_to_shape(x, shape: tuple):
    """Broadcast an array (or Python scalar) to ``shape`` with NumPy's rules."""
    x = arg(x)
    if is_python_scalar(x):
        x = scalar_array(x, dtypes.python_scalar_dtype(x))
    a = get_aval(x)
    if a.shape == tuple(shape):
        return x
    broadcast_shapes(a.shape, shape)
    if len(shape) < a.ndim or broadcast_shapes(a.shape, shape) != tuple(shape):
        raise PlaitValueError(f"operands could not be broadcast together with remapped shapes "
                              f"[original->remapped]: {_fmt_shape(a.shape)} and requested "
                              f"shape {_fmt_shape(tuple(shape))}")
    nd = len(shape)
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(nd - a.ndim, nd)))


def result_type_of(*xs) -> tuple[np.dtype, bool]:
    """NEP 50 result ``(dtype, weak)`` of converted arguments."""
    return dtypes.result_type(*[(a.dtype, a.weak_type) for a in map(get_aval, xs)])


def promote_args(name: str, *args) -> list:
    """Convert, promote (NEP 50) and broadcast ``args`` to one dtype and shape."""
    vals = [arg(a, name) for a in args]
    dt, weak = result_type_of(*vals)
    shape = broadcast_shapes(*[get_aval(v).shape for v in vals])
    return [broadcast_to_shape(cast(v, dt, weak), shape) for v in vals]


def promote_dtypes(name: str, *args) -> list:
    """Convert and promote ``args`` to one dtype (no broadcasting)."""
    vals = [arg(a, name) for a in args]
    dt, weak = result_type_of(*vals)
    return [cast(v, dt, weak) for v in vals]


def asarray_strong(x, dtype=None, name: str = "argument"):
    """An array (Python scalars become 0-d arrays of their default dtype), optionally cast."""
    x = arg(x, name)
    if is_python_scalar(x):
        dt = dtypes.python_scalar_dtype(x) if dtype is None else dtypes.canonical_dtype(dtype)
        return scalar_array(x, dt, weak=False)
    if dtype is not None:
        return cast(x, dtypes.canonical_dtype(dtype), False)
    return x


def static_int(x, name: str, what: str = "argument") -> int:
    """``x`` as a Python int; a traced value is a clear plait error."""
    if isinstance(x, Tracer):
        raise PlaitTypeError(f"{name}: {what} must be a static Python int, got a traced "
                             f"value {x.aval.str_short()}; pass a Python int (mark it "
                             f"static with jit(..., static_argnums=...))")
    try:
        return operator.index(x)
    except TypeError:
        raise PlaitTypeError(f"{name}: {what} must be an int, got {x!r:.60}") from None


def static_axes(axis, ndim: int, name: str) -> tuple:
    """Normalize ``axis`` (None, int or tuple of ints, negative allowed) to sorted ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = [static_int(a, name, "axis") for a in axis]
    else:
        axes = [static_int(axis, name, "axis")]
    out = [normalize_axis(a, ndim, name) for a in axes]
    if len(set(out)) != len(out):
        raise PlaitValueError(f"{name}: duplicate value in 'axis'")
    return tuple(sorted(out))


def normalize_axis(axis, ndim: int, name: str = "") -> int:
    """One static axis in ``[-ndim, ndim)`` normalized to ``[0, ndim)``."""
    a = static_int(axis, name, "axis")
    if not -ndim <= a < ndim:
        from plait.errors import PlaitIndexError
        raise PlaitIndexError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim


def static_shape(shape, name: str) -> tuple:
    """A shape argument (int or sequence of ints) as a tuple of Python ints."""
    if isinstance(shape, (list, tuple)):
        return tuple(static_int(s, name, "shape") for s in shape)
    return (static_int(shape, name, "shape"),)
