"""Abstract values: what a tracer knows about an array (shape, dtype, weak_type)."""
from __future__ import annotations

import numpy as np

from plait.core.dtypes import dtype_short, canonical_dtype, python_scalar_dtype


class ShapedArray:
    """The abstract value of an array: a static shape, a dtype and a weak-type flag."""

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = shape if type(shape) is tuple else tuple(int(d) for d in shape)
        self.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self.weak_type = weak_type is True or bool(weak_type)
        self._hash = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        """A copy with some fields replaced."""
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak(self) -> "ShapedArray":
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def __eq__(self, other):
        return self is other or (
            isinstance(other, ShapedArray) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash((self.shape, self.dtype, self.weak_type))
        return h

    def str_short(self) -> str:
        """``f32[3,4]`` (with a trailing ``~`` for weak types)."""
        s = f"{dtype_short(self.dtype)}[{','.join(map(str, self.shape))}]"
        return s + "~" if self.weak_type else s

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


def aval_of(x) -> ShapedArray:
    """Abstract value of a concrete value: NumPy array/scalar or Python scalar."""
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return ShapedArray(np.shape(x), canonical_dtype(x.dtype), False)
    if isinstance(x, (bool, int, float, complex)):
        return ShapedArray((), python_scalar_dtype(x), True)
    raise TypeError(f"{type(x).__name__} is not a valid plait array value")
