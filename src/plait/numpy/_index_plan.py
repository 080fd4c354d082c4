"""Index normalisation: turn a NumPy index expression into an :class:`IndexPlan`.

The plan says, per index item, which operand dimension it consumes and how;
where the advanced-index ("broadcast") dimensions go in the result (NumPy's
rule: where the first advanced index is when all advanced indices are
adjacent, else first); and the result's layout as a list of tokens. Static
integers and concrete index arrays are bounds-checked here (``IndexError``
like NumPy) and negative values are normalised; traced index arrays are
normalised with ``select`` later. A concrete boolean mask becomes the integer
arrays of its ``nonzero``; a traced one is a :class:`NonConcreteBooleanIndexError`.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import (PlaitIndexError, NonConcreteBooleanIndexError,
                          TracerIntegerConversionError)
from plait.numpy import _promote

_INVALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
            "integer or boolean arrays are valid indices")


class Item:
    """One index item after expansion.

    ``kind`` is ``"slice"`` (``value`` a normalised ``(start, stop, step)``),
    ``"int"`` (a static int, normalised), ``"array"`` (an integer index array: a
    NumPy array when concrete, else a tracer; ``value``), ``"ghost"`` (a 0-d
    boolean index: a NumPy ``arange(0 or 1)`` that consumes no dimension) or
    ``"none"``. ``dim`` is the operand dimension consumed (None for none/ghost).
    """

    __slots__ = ("kind", "value", "dim")

    def __init__(self, kind: str, value: Any = None, dim: int | None = None):
        self.kind, self.value, self.dim = kind, value, dim

    def __repr__(self):
        return f"Item({self.kind}, {self.value!r}, dim={self.dim})"

    @property
    def advanced_shape(self) -> tuple:
        if self.kind in ("array", "ghost"):
            return tuple(np.shape(self.value)) if isinstance(self.value, np.ndarray) \
                else get_aval(self.value).shape
        return ()


class IndexPlan:
    """A normalised index: ``items``, whether advanced indexing is used, the broadcast
    shape of the advanced indices, and the result layout ``tokens``.

    ``tokens`` lists the result's dimension groups in order: ``("item", k)`` for
    the slice or newaxis ``items[k]`` (one dimension each) and ``("adv",)`` for
    the block of ``len(adv_shape)`` broadcast dimensions.
    """

    def __init__(self, shape: tuple, items: list[Item]):
        self.shape = shape
        self.items = items
        self.advanced = any(it.kind in ("array", "ghost") for it in items)
        adv = [k for k, it in enumerate(items) if it.kind in ("array", "ghost", "int")]
        self.adv_shape = _promote.broadcast_shapes(*[items[k].advanced_shape for k in adv]) \
            if self.advanced else ()
        contiguous = bool(adv) and all(items[k].kind in ("array", "ghost", "int")
                                       for k in range(adv[0], adv[-1] + 1))
        tokens: list[tuple] = []
        if adv and not contiguous:
            tokens.append(("adv",))
        for k, it in enumerate(items):
            if it.kind in ("slice", "none"):
                tokens.append(("item", k))
            elif contiguous and k == adv[0]:
                tokens.append(("adv",))
        self.tokens = tokens

    def slice_len(self, k: int) -> int:
        return len(range(*self.items[k].value))

    def result_shape(self) -> tuple:
        out = []
        for t in self.tokens:
            if t[0] == "adv":
                out.extend(self.adv_shape)
            elif self.items[t[1]].kind == "none":
                out.append(1)
            else:
                out.append(self.slice_len(t[1]))
        return tuple(out)


def _static_slice_part(v, what: str):
    if v is None:
        return None
    if isinstance(v, Tracer):
        raise TracerIntegerConversionError(
            f"a slice {what} is a traced value ({v.aval.str_short()}): slice bounds must be "
            f"static because they decide the result's shape. Use "
            f"plait.lax.dynamic_slice(x, starts, sizes) for a slice of static size at a "
            f"traced position, or mark the argument static (jit(..., static_argnums=...)).")
    try:
        return operator.index(v)
    except TypeError:
        raise PlaitIndexError("slice indices must be integers or None or have an __index__ "
                              "method") from None


def _classify(item):
    """``(kind, value, consumed_dims)`` of one raw index item."""
    if item is None:
        return "none", None, 0
    if item is Ellipsis:
        return "ellipsis", None, 0
    if isinstance(item, slice):
        return "slice", slice(_static_slice_part(item.start, "start"),
                              _static_slice_part(item.stop, "stop"),
                              _static_slice_part(item.step, "step")), 1
    if isinstance(item, (bool, np.bool_)):
        return "bool", np.asarray(bool(item)), 0
    if isinstance(item, (int, np.integer)):
        return "int", int(item), 1
    if isinstance(item, (float, complex, np.floating, np.complexfloating, str, bytes)):
        raise PlaitIndexError(_INVALID)
    if isinstance(item, (list, tuple)) and _promote._contains_traced(item):
        item = _promote.arg(list(item), "index")
    if isinstance(item, Tracer):
        a = item.aval
        if dtypes.is_bool(a.dtype):
            raise NonConcreteBooleanIndexError(
                f"boolean mask index of traced type {a.str_short()}: the result's shape "
                f"depends on how many elements are True, which is not known while tracing. "
                f"Use plait.numpy.where(mask, x, other) to keep the shape, or "
                f"plait.numpy.nonzero(mask, size=N) for a fixed number of indices.")
        if not dtypes.is_integer(a.dtype):
            raise PlaitIndexError("arrays used as indices must be of integer (or boolean) type")
        return "array", item, 1
    try:
        v = concrete_value(item) if _promote.is_array(item) else np.asarray(item)
    except Exception:
        raise PlaitIndexError(_INVALID) from None
    if v.dtype == object:
        raise PlaitIndexError(_INVALID)
    if v.dtype.kind == "b":
        return "bool", v, v.ndim
    if v.dtype.kind not in "iu":
        if v.size == 0 and isinstance(item, (list, tuple)):
            v = v.astype(np.int64)       # [] is an (empty) integer index, as in NumPy
        else:
            raise PlaitIndexError("arrays used as indices must be of integer (or boolean) "
                                  "type")
    if v.ndim == 0:
        return "int", int(v), 1
    return "array", v, 1


def _check_array(v: np.ndarray, n: int, dim: int) -> np.ndarray:
    if v.size:
        bad = (v < -n) | (v >= n) if v.dtype.kind == "i" else (v >= n)
        if bad.any():
            raise PlaitIndexError(f"index {v[bad].flat[0]} is out of bounds for axis {dim} "
                                  f"with size {n}")
    return np.where(v < 0, v + n, v).astype(np.int64) if v.dtype.kind == "i" \
        else v.astype(np.int64)


def make_plan(shape: tuple, idx, check: bool = True) -> IndexPlan:
    """Normalise ``idx`` for an array of ``shape``.

    With ``check`` (NumPy semantics) static out-of-range indices raise
    ``IndexError``; without it (gather/scatter modes) they are left as they are.
    """
    raw = idx if isinstance(idx, tuple) else (idx,)
    classified = [_classify(i) for i in raw]
    n_ell = sum(1 for c in classified if c[0] == "ellipsis")
    if n_ell > 1:
        raise PlaitIndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(c[2] for c in classified)
    ndim = len(shape)
    if consumed > ndim:
        raise PlaitIndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                              f"{consumed} were indexed")
    if not n_ell:
        classified.append(("ellipsis", None, 0))
    items: list[Item] = []
    dim = 0
    for kind, v, _ in classified:
        if kind == "ellipsis":
            for _ in range(ndim - consumed):
                items.append(Item("slice", slice(None).indices(shape[dim]), dim))
                dim += 1
        elif kind == "none":
            items.append(Item("none"))
        elif kind == "slice":
            items.append(Item("slice", v.indices(shape[dim]), dim))
            dim += 1
        elif kind == "int":
            n = shape[dim]
            if check and not -n <= v < n:
                raise PlaitIndexError(f"index {v} is out of bounds for axis {dim} with size {n}")
            items.append(Item("int", v + n if v < 0 and (check or v >= -n) else v, dim))
            dim += 1
        elif kind == "bool":
            if v.ndim == 0:
                items.append(Item("ghost", np.arange(1 if v else 0, dtype=np.int64)))
                continue
            for j, s in enumerate(v.shape):
                if shape[dim + j] != s:
                    raise PlaitIndexError(
                        f"boolean index did not match indexed array along axis {dim + j}; "
                        f"size of axis is {shape[dim + j]} but size of corresponding boolean "
                        f"axis is {s}")
            for j, nz in enumerate(np.nonzero(v)):
                items.append(Item("array", nz.astype(np.int64), dim + j))
            dim += v.ndim
        else:   # array
            if isinstance(v, np.ndarray):
                v = _check_array(v, shape[dim], dim) if check else \
                    np.where(v < 0, v + shape[dim], v).astype(np.int64) \
                    if v.dtype.kind == "i" else v.astype(np.int64)
            items.append(Item("array", v, dim))
            dim += 1
    return IndexPlan(tuple(shape), items)
