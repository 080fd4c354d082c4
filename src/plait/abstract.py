"""Shape-only values: ``ShapeDtypeStruct`` and ``eval_shape``.

A ``ShapeDtypeStruct`` stands for an array of which only the shape and dtype are
known. ``eval_shape(f, *args)`` traces ``f`` on such values (or on arrays, using only
their shapes) without computing anything and returns its output as
``ShapeDtypeStruct``s; ``jit(f).lower(*specs)`` and ``jit(f).trace(*specs)`` take them
in place of arrays. Anything with ``.shape`` and ``.dtype`` counts as a spec.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.dtypes import canonical_dtype
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import Tracer, get_aval
from plait.errors import PlaitTypeError


class ShapeDtypeStruct:
    """The shape, dtype and weak type of an array, without its values."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type: bool = False):
        try:
            self.shape = tuple(int(d) for d in shape)
        except TypeError:
            raise PlaitTypeError(f"ShapeDtypeStruct: shape must be a sequence of ints, "
                                 f"got {shape!r}") from None
        if any(d < 0 for d in self.shape):
            raise PlaitTypeError(f"ShapeDtypeStruct: negative dimension in {self.shape}")
        if dtype is None:
            raise PlaitTypeError("ShapeDtypeStruct: dtype is required")
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d ShapeDtypeStruct")
        return self.shape[0]

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def is_spec(x) -> bool:
    """A shape-only stand-in: a ShapeDtypeStruct or another non-array with shape/dtype."""
    if isinstance(x, ShapeDtypeStruct):
        return True
    if isinstance(x, (np.ndarray, np.generic, Tracer)) or hasattr(x, "aval"):
        return False
    return hasattr(x, "shape") and hasattr(x, "dtype")


def spec_or_aval(x) -> ShapedArray:
    """The abstract value of an array or of a spec (``ShapeDtypeStruct`` or look-alike)."""
    if is_spec(x):
        return ShapedArray(tuple(x.shape), canonical_dtype(np.dtype(x.dtype)),
                           bool(getattr(x, "weak_type", False)))
    return get_aval(x)


def struct_of(aval: ShapedArray) -> ShapeDtypeStruct:
    return ShapeDtypeStruct(aval.shape, aval.dtype, aval.weak_type)


def eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """The output of ``fun(*args, **kwargs)`` as a pytree of ``ShapeDtypeStruct``s.

    Arguments may be arrays, Python scalars or specs; nothing is computed (``fun`` is
    traced once on abstract values).
    """
    leaves, in_tree = tree_flatten((args, kwargs))
    avals = []
    for i, x in enumerate(leaves):
        try:
            avals.append(spec_or_aval(x))
        except PlaitTypeError:
            raise PlaitTypeError(f"eval_shape: argument leaf {i} is a {type(x).__name__}, "
                                 f"not an array or a ShapeDtypeStruct; close over Python "
                                 f"values (functools.partial) instead") from None
    box = []

    def flat(*ls):
        a, k = tree_unflatten(in_tree, ls)
        out, tree = tree_flatten(fun(*a, **k))
        box.append(tree)
        return out

    name = getattr(fun, "__name__", "fn")
    closed, _ = trace_to_graph(flat, avals, description=f"eval_shape of {name}", name=name)
    return tree_unflatten(box[-1], [struct_of(a) for a in closed.out_avals])
