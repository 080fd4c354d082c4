"""The Stripe data model: programs, blocks, refinements and statements.

Everything is an immutable dataclass whose sequences are tuples and whose tag sets are
frozensets, so ``==`` is structural equality (``parse(print(p)) == p``) and
``dataclasses.replace`` builds modified copies.

Semantics (the rules the interpreter and verifier implement):

* A :class:`Block` is a parallel polyhedral iteration.  Index ``i`` ranges over
  ``base + [0, range)`` where ``base`` is its ``affine`` over the *parent* block's indexes
  (0 if ``affine`` is None).  An iteration runs iff every constraint ``expr >= 0`` holds.
  Statements run in order within an iteration; iterations are independent.
* A :class:`Refinement` is a view: element 0 of the child view sits at
  ``sum(access[d] * strides[d])`` past element 0 of the parent view ``from_``.  Strides are
  element strides of the underlying allocation (equal to the parent's).  ``load``/``store``
  address element 0 of the view; specials read/write the whole view.
* A ``store`` combines its value into memory with the refinement's ``agg`` (``assign``
  overwrites; ``add``/``mul``/``max``/``min`` read-combine-write).
* **Initial values (explicit rule):** every allocation - a program buffer that is not an
  input (``Buffer.init``) or a ``none`` refinement (its ``agg``, fresh per iteration) -
  starts filled with the identity of its aggregation op: add 0, mul 1, max the lowest
  value, min the highest; assign (no identity) and None start at 0.  A Tile ``default``
  tensor is realised as an explicit copy block before the contraction, never as memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Union

import numpy as np

from .affine import Affine

AGG_OPS = ("assign", "add", "mul", "max", "min")
DIRS = ("in", "out", "inout", "none")
BUFFER_KINDS = ("in", "out", "tmp")

DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}


def np_dtype(name: str) -> np.dtype:
    """NumPy dtype of a Stripe dtype name (``f32``, ``i64``, ``bool``...)."""
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown Stripe dtype {name!r}; known: {', '.join(DTYPES)}") from None


def dtype_name(dt: object) -> str:
    """Stripe dtype name of a NumPy dtype (or dtype-like)."""
    d = np.dtype(dt)  # type: ignore[arg-type]
    for k, v in DTYPES.items():
        if v == d:
            return k
    raise ValueError(f"dtype {d} has no Stripe name")


def agg_identity(agg: Optional[str], dtype: str):
    """The initial value of an allocation aggregated with ``agg`` (see module rules)."""
    d = np_dtype(dtype)
    if agg in (None, "assign", "add"):
        return d.type(0)
    if agg == "mul":
        return d.type(1)
    if agg in ("max", "min"):
        if d == np.bool_:
            return np.bool_(agg == "min")
        if d.kind == "f":
            return d.type(-np.inf if agg == "max" else np.inf)
        info = np.iinfo(d)
        return d.type(info.min if agg == "max" else info.max)
    raise ValueError(f"unknown aggregation op {agg!r}")


def row_major_strides(shape: Iterable[int]) -> tuple[int, ...]:
    """Element strides of a dense row-major array of ``shape``."""
    out, acc = [], 1
    for s in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(out))


def _tup(x) -> tuple:
    return tuple(x)


def _tags(x) -> frozenset:
    if isinstance(x, str):
        raise TypeError("tags must be an iterable of strings, not a string")
    return frozenset(x)


@dataclass(frozen=True)
class Index:
    """A block index: values ``affine(parent indexes) + [0, range)``."""

    name: str
    range: int
    affine: Optional[Affine] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "range", int(self.range))


@dataclass(frozen=True)
class Refinement:
    """A view of the parent buffer ``from_`` (``None`` for a ``none`` allocation)."""

    dir: str
    into: str
    from_: Optional[str]
    access: tuple[Affine, ...]
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    agg: Optional[str] = None
    location: Optional[str] = None
    tags: frozenset = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "access", tuple(Affine.lift(a) for a in self.access))
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "strides", tuple(int(s) for s in self.strides))
        object.__setattr__(self, "tags", _tags(self.tags))
        if self.dir not in DIRS:
            raise ValueError(f"refinement {self.into!r}: unknown direction {self.dir!r}")
        if self.agg is not None and self.agg not in AGG_OPS:
            raise ValueError(f"refinement {self.into!r}: unknown aggregation {self.agg!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Load:
    """``into = load(from_)``: read element 0 of a view into a scalar."""

    into: str
    from_: str


@dataclass(frozen=True)
class Store:
    """``into = store(from_)``: aggregate a scalar into element 0 of a view."""

    into: str
    from_: str


@dataclass(frozen=True, eq=False)
class Constant:
    """``into = (dtype)value``."""

    into: str
    value: Union[int, float, bool]
    dtype: str

    def _key(self):
        return (self.into, type(self.value).__name__, repr(self.value), self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Constant) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class LoadIndex:
    """``into = load_index(expr)``: the value of an affine of this block's indexes."""

    into: str
    expr: Affine
    dtype: str = "i64"


@dataclass(frozen=True)
class Intrinsic:
    """Scalar op ``outputs = name(inputs)``; ``dtype`` (if set) casts the result."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dtype: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", _tup(self.inputs))
        object.__setattr__(self, "outputs", _tup(self.outputs))


@dataclass(frozen=True)
class Special:
    """A named whole-view op (``gather``, ``scatter``, ``sort``...) on refinements.

    ``params`` are static values (ints, floats, strings, bools, tuples of them), kept as a
    sorted tuple of ``(key, value)`` pairs.
    """

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", _tup(self.inputs))
        object.__setattr__(self, "outputs", _tup(self.outputs))
        p = self.params.items() if isinstance(self.params, Mapping) else self.params
        object.__setattr__(self, "params", tuple(sorted((str(k), _freeze(v)) for k, v in p)))

    @property
    def param_dict(self) -> dict[str, object]:
        return dict(self.params)


@dataclass(frozen=True)
class Barrier:
    """``barrier()``: the work-items of a work-group wait here until all arrive, and
    their earlier writes to local memory are visible after it. Only GPU-model kernels
    hold one (inside a ``workgroups`` block, outside any ``items_<n>`` block; the
    verifier checks). It orders nothing in the Stripe semantics, where each iteration
    runs its statements in order: the interpreter skips it."""


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    return v


@dataclass(frozen=True)
class Block:
    """A parallel polyhedral block (also a statement when nested)."""

    name: str = ""
    idxs: tuple[Index, ...] = ()
    constraints: tuple[Affine, ...] = ()
    refs: tuple[Refinement, ...] = ()
    stmts: tuple["Statement", ...] = ()
    tags: frozenset = frozenset()
    comments: tuple[str, ...] = ()
    location: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "idxs", _tup(self.idxs))
        object.__setattr__(self, "constraints", tuple(Affine.lift(c) for c in self.constraints))
        object.__setattr__(self, "refs", _tup(self.refs))
        object.__setattr__(self, "stmts", _tup(self.stmts))
        object.__setattr__(self, "tags", _tags(self.tags))
        c = self.comments
        object.__setattr__(self, "comments", tuple(c.splitlines()) if isinstance(c, str) else _tup(c))

    def ref(self, name: str) -> Refinement:
        """The refinement named ``name`` (KeyError with a clear message if absent)."""
        for r in self.refs:
            if r.into == name:
                return r
        raise KeyError(f"block {self.name!r} has no refinement {name!r}")

    def idx(self, name: str) -> Index:
        """The index named ``name``."""
        for i in self.idxs:
            if i.name == name:
                return i
        raise KeyError(f"block {self.name!r} has no index {name!r}")

    @property
    def idx_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.idxs)

    @property
    def iterations(self) -> int:
        """Size of the index box (before constraints)."""
        return math.prod(i.range for i in self.idxs)


Statement = Union[Load, Store, Constant, LoadIndex, Intrinsic, Special, Barrier, Block]


@dataclass(frozen=True)
class Buffer:
    """A program-level buffer: dense row-major ``shape``.

    ``kind`` is ``in`` (supplied by the caller), ``out`` (returned) or ``tmp``.  ``init`` is
    the aggregation op whose identity fills a non-input buffer before the program runs.
    """

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    init: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.kind not in BUFFER_KINDS:
            raise ValueError(f"buffer {self.name!r}: unknown kind {self.kind!r}")
        if self.init is not None and self.init not in AGG_OPS:
            raise ValueError(f"buffer {self.name!r}: unknown init op {self.init!r}")

    @property
    def strides(self) -> tuple[int, ...]:
        return row_major_strides(self.shape)


@dataclass(frozen=True)
class Program:
    """Buffers plus the entry block whose refinements refine them."""

    name: str
    buffers: tuple[Buffer, ...]
    entry: Block

    def __post_init__(self) -> None:
        object.__setattr__(self, "buffers", _tup(self.buffers))

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(f"program {self.name!r} has no buffer {name!r}")

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if b.kind == "in")

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if b.kind == "out")


def walk_blocks(block: Block):
    """Yield ``block`` and every nested block, depth first."""
    yield block
    for s in block.stmts:
        if isinstance(s, Block):
            yield from walk_blocks(s)


def replace_stmt(block: Block, old: Block, new: Statement) -> Block:
    """Copy of ``block`` with the (identity-matched) nested block ``old`` replaced by ``new``."""
    from dataclasses import replace

    stmts = []
    changed = False
    for s in block.stmts:
        if s is old:
            stmts.append(new)
            changed = True
        elif isinstance(s, Block):
            r = replace_stmt(s, old, new)
            changed = changed or r is not s
            stmts.append(r)
        else:
            stmts.append(s)
    return replace(block, stmts=tuple(stmts)) if changed else block
