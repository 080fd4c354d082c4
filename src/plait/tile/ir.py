"""The Tile language: contractions in Einstein notation plus elementwise expressions.

A :class:`Program` declares named tensors (dtype, static shape) and a list of statements,
each writing one new tensor (single assignment):

* :class:`Contraction` ``O[o.. : S..] = agg(comb(A[a..], B[b..]...)), c < N ... default D``.
  Index expressions are :class:`~plait.tile.affine.Affine` over index variables.  A full
  assignment of integers to the index variables is *valid* iff every index expression
  (output included) lies inside its tensor and every constraint ``0 <= expr < bound``
  holds; the combination is evaluated at every valid assignment and aggregated into the
  output element with ``agg`` (``assign`` requires at most one writer per element).
  Unwritten output elements keep their initial value: the identity of ``agg`` (0 for
  ``assign``/``add``, 1 for ``mul``, lowest/highest for ``max``/``min``) or the ``default``
  tensor's value.
* :class:`Elementwise` ``O = expr``: ``expr`` is a tree of :class:`Call` (intrinsic name,
  e.g. ``add``, ``tanh``, ``select``, ``cmp_lt``, ``cast``), :class:`Input` (a tensor,
  NumPy-broadcast against the output shape), :class:`Const` and :class:`IndexValue`
  (the output coordinate along an axis, for ``iota``).

Combinations: ``none`` (one input), ``mul``, ``add``, ``eq`` (two inputs, 0/1 result) and
``select`` (three inputs: ``A == B ? C : 0``).  Text: :mod:`plait.tile.printer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from .affine import Affine, Constraint
from plait.errors import TileError

AGGS = ("assign", "add", "mul", "max", "min")
COMBS = {"none": 1, "mul": 2, "add": 2, "eq": 2, "select": 3}
AGG_SYMBOL = {"assign": "=", "add": "+", "mul": "*", "max": ">", "min": "<"}
COMB_SYMBOL = {"mul": " * ", "add": " + ", "eq": " == "}


@dataclass(frozen=True)
class Tensor:
    """A named tensor type."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))

    def __getitem__(self, idxs) -> "Access":
        if not isinstance(idxs, tuple):
            idxs = (idxs,)
        return Access(self.name, tuple(Affine.lift(i) for i in idxs))

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Access:
    """``tensor[idx, ...]`` with affine index expressions."""

    tensor: str
    idxs: tuple[Affine, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "idxs", tuple(Affine.lift(i) for i in self.idxs))

    # Combination builders: A[i, k] * B[k, j], A[i] + B[i], A[i].eq(B[j]), A.eq(B).select(C)
    def __mul__(self, other: "Access") -> "Combination":
        return Combination("mul", (self, other))

    def __add__(self, other: "Access") -> "Combination":
        return Combination("add", (self, other))

    def eq(self, other: "Access") -> "Combination":
        """``A[..] == B[..]`` (1 where equal, else 0)."""
        return Combination("eq", (self, other))

    def __str__(self) -> str:
        return f"{self.tensor}[{', '.join(str(i) for i in self.idxs)}]"


@dataclass(frozen=True)
class Combination:
    """How the input accesses of a contraction combine into one value."""

    op: str
    inputs: tuple[Access, ...]

    def select(self, value: Access) -> "Combination":
        """``(A == B) ? value : 0``."""
        if self.op != "eq":
            raise TileError("select() follows an eq() combination")
        return Combination("select", self.inputs + (value,))


@dataclass(frozen=True)
class Contraction:
    """``out[out_idxs] = agg(comb(inputs)), constraints, default``."""

    out: str
    out_idxs: tuple[Affine, ...]
    agg: str
    comb: str
    inputs: tuple[Access, ...]
    constraints: tuple[Constraint, ...] = ()
    default: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "out_idxs", tuple(Affine.lift(i) for i in self.out_idxs))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        if self.agg not in AGGS:
            raise TileError(f"{self.out}: unknown aggregation {self.agg!r}; use one of {AGGS}")
        if self.comb not in COMBS:
            raise TileError(f"{self.out}: unknown combination {self.comb!r}; use one of {tuple(COMBS)}")
        if len(self.inputs) != COMBS[self.comb]:
            raise TileError(
                f"{self.out}: combination {self.comb!r} takes {COMBS[self.comb]} inputs, "
                f"got {len(self.inputs)}"
            )

    @property
    def index_vars(self) -> tuple[str, ...]:
        """Every index variable used, sorted."""
        names: set[str] = set()
        for a in self.out_idxs:
            names.update(a.vars)
        for acc in self.inputs:
            for a in acc.idxs:
                names.update(a.vars)
        for c in self.constraints:
            names.update(c.expr.vars)
        return tuple(sorted(names))


# ---- elementwise expressions ------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """A whole tensor, broadcast (NumPy rules, right-aligned) to the output shape."""

    tensor: str


@dataclass(frozen=True, eq=False)
class Const:
    """A scalar constant of a given dtype."""

    value: Union[int, float, bool]
    dtype: str

    def _key(self):
        return (type(self.value).__name__, repr(self.value), self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class IndexValue:
    """The output coordinate along ``axis`` (``iota``), as ``dtype``."""

    axis: int
    dtype: str = "i64"


@dataclass(frozen=True)
class Call:
    """An intrinsic applied to sub-expressions; ``dtype`` casts the result (``cast``)."""

    op: str
    args: tuple["Expr", ...]
    dtype: Optional[str] = None

    def __post_init__(self) -> None:
        args = tuple(self.args)
        object.__setattr__(self, "args", args)
        # cached (not fields, so eq and repr ignore them): a chain of calls is hashed and
        # measured once per node, not once per enclosing expression
        object.__setattr__(self, "_hash", hash((self.op, args, self.dtype)))
        object.__setattr__(self, "size", 1 + sum(a.size if isinstance(a, Call) else 1
                                                 for a in args))
        object.__setattr__(self, "has_index", any(
            isinstance(a, IndexValue) or (isinstance(a, Call) and a.has_index) for a in args))

    def __hash__(self) -> int:
        return self._hash


Expr = Union[Input, Const, IndexValue, Call]


@dataclass(frozen=True)
class Elementwise:
    """``out = expr`` evaluated at every element of ``out``."""

    out: str
    expr: Expr


Statement = Union[Contraction, Elementwise]


def expr_inputs(e: Expr) -> tuple[str, ...]:
    """Tensor names read by an expression, in first-use order."""
    out: list[str] = []
    seen: set[Expr] = set()    # fused chains share sub-expressions: visit each once

    def go(x: Expr) -> None:
        if isinstance(x, Input):
            if x.tensor not in out:
                out.append(x.tensor)
        elif isinstance(x, Call) and x not in seen:
            seen.add(x)
            for a in x.args:
                go(a)

    go(e)
    return tuple(out)


def stmt_inputs(s: Statement) -> tuple[str, ...]:
    """Tensor names a statement reads (default included)."""
    if isinstance(s, Elementwise):
        return expr_inputs(s.expr)
    names = [a.tensor for a in s.inputs]
    if s.default is not None:
        names.append(s.default)
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Program:
    """Tensors (inputs, outputs and temporaries) and the statements computing them."""

    name: str
    tensors: tuple[Tensor, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    stmts: tuple[Statement, ...]

    def __post_init__(self) -> None:
        for f in ("tensors", "inputs", "outputs", "stmts"):
            object.__setattr__(self, f, tuple(getattr(self, f)))
        by_name: dict[str, Tensor] = {}
        for t in self.tensors:
            by_name.setdefault(t.name, t)
        object.__setattr__(self, "_by_name", by_name)   # not a field: eq and repr ignore it
        self.validate()

    def tensor(self, name: str) -> Tensor:
        t = self._by_name.get(name)
        if t is not None:
            return t
        raise TileError(f"program {self.name!r}: unknown tensor {name!r}")

    def validate(self) -> None:
        """Check names, ranks, single assignment and define-before-use."""
        names = [t.name for t in self.tensors]
        if len(set(names)) != len(names):
            raise TileError(f"program {self.name!r}: duplicate tensor names")
        defined = set(self.inputs)
        for n in self.inputs + self.outputs:
            self.tensor(n)
        for s in self.stmts:
            out = self.tensor(s.out)
            if s.out in defined:
                raise TileError(f"tensor {s.out!r} is assigned twice (Tile is single assignment)")
            for n in stmt_inputs(s):
                if n not in defined:
                    raise TileError(f"statement writing {s.out!r} reads {n!r} before it is defined")
            if isinstance(s, Contraction):
                if len(s.out_idxs) != out.rank:
                    raise TileError(f"{s.out!r} has rank {out.rank} but {len(s.out_idxs)} indexes")
                for a in s.inputs:
                    t = self.tensor(a.tensor)
                    if len(a.idxs) != t.rank:
                        raise TileError(
                            f"in the statement writing {s.out!r}: {a.tensor!r} has rank {t.rank} "
                            f"but is accessed with {len(a.idxs)} indexes"
                        )
                if s.default is not None and self.tensor(s.default).shape != out.shape:
                    raise TileError(f"default {s.default!r} of {s.out!r} must have shape {out.shape}")
            else:
                for n in expr_inputs(s.expr):
                    t = self.tensor(n)
                    if len(t.shape) > out.rank or any(
                        a not in (1, b) for a, b in zip(reversed(t.shape), reversed(out.shape))
                    ):
                        raise TileError(
                            f"{n!r} of shape {t.shape} does not broadcast to {s.out!r} of shape {out.shape}"
                        )
            defined.add(s.out)
        for n in self.outputs:
            if n not in defined:
                raise TileError(f"output {n!r} is never computed")

    def __str__(self) -> str:
        from .printer import format_program

        return format_program(self)
