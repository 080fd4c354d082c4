"""Convenience constructors for writing Tile programs (used by ``to_tile`` rules).

Example - matmul plus bias and relu::

    b = TileBuilder("dense")
    A = b.input("A", "f32", (4, 8)); W = b.input("W", "f32", (8, 16))
    bias = b.input("bias", "f32", (16,))
    i, j, k = variables("i j k")
    Y = b.contract(b.temp("f32", (4, 16)), (i, j), "add", A[i, k] * W[k, j])
    Z = b.eltwise(b.temp("f32", (4, 16)), call("max", call("add", Y, bias), constant(0.0, "f32")))
    b.output(Z)
    prog = b.build()
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

from .affine import Affine, Constraint, variables
from .ir import (
    Access,
    Call,
    Combination,
    Const,
    Contraction,
    Elementwise,
    Expr,
    IndexValue,
    Input,
    Program,
    Statement,
    Tensor,
    TileError,
    stmt_inputs,
)

ExprLike = Union[Expr, Tensor, str]

__all__ = [
    "TileBuilder",
    "contraction",
    "elementwise",
    "call",
    "constant",
    "iota",
    "as_expr",
    "variables",
]


def as_expr(x: ExprLike) -> Expr:
    """Tensors and tensor names become :class:`Input`; expressions pass through."""
    if isinstance(x, Tensor):
        return Input(x.name)
    if isinstance(x, str):
        return Input(x)
    if isinstance(x, (Input, Const, IndexValue, Call)):
        return x
    raise TypeError(f"not a Tile expression: {x!r}")


def call(op: str, *args: ExprLike, dtype: Optional[str] = None) -> Call:
    """``op(args...)``; ``dtype`` casts the result (``call("cast", X, dtype="f32")``)."""
    return Call(op, tuple(as_expr(a) for a in args), dtype)


def constant(value, dtype: str) -> Const:
    """A typed scalar constant."""
    return Const(value, dtype)


def iota(axis: int, dtype: str = "i64") -> IndexValue:
    """The output coordinate along ``axis``."""
    return IndexValue(axis, dtype)


def _name(x: Union[Tensor, str]) -> str:
    return x.name if isinstance(x, Tensor) else x


def contraction(
    out: Union[Tensor, str],
    out_idxs: Sequence[Union[Affine, int]],
    agg: str,
    body: Union[Access, Combination],
    constraints: Iterable[Constraint] = (),
    default: Union[Tensor, str, None] = None,
) -> Contraction:
    """Build a contraction from an access (``comb='none'``) or a combination."""
    comb = Combination("none", (body,)) if isinstance(body, Access) else body
    return Contraction(
        _name(out),
        tuple(Affine.lift(i) for i in out_idxs),
        agg,
        comb.op,
        comb.inputs,
        tuple(constraints),
        None if default is None else _name(default),
    )


def elementwise(out: Union[Tensor, str], expr: ExprLike) -> Elementwise:
    """Build an elementwise statement."""
    return Elementwise(_name(out), as_expr(expr))


class TileBuilder:
    """Accumulates tensors and statements, then :meth:`build` s a validated Program."""

    def __init__(self, name: str = "tile") -> None:
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.stmts: list[Statement] = []
        self._n = 0

    def fresh(self, prefix: str = "T") -> str:
        """A tensor name not used yet."""
        while True:
            n = f"{prefix}{self._n}"
            self._n += 1
            if n not in self.tensors:
                return n

    def tensor(self, name: str, dtype: str, shape: Sequence[int]) -> Tensor:
        """Declare a tensor."""
        if name in self.tensors:
            raise TileError(f"tensor {name!r} declared twice")
        t = Tensor(name, dtype, tuple(shape))
        self.tensors[name] = t
        return t

    def input(self, name: str, dtype: str, shape: Sequence[int]) -> Tensor:
        """Declare a program input."""
        t = self.tensor(name, dtype, shape)
        self.inputs.append(name)
        return t

    def temp(self, dtype: str, shape: Sequence[int], prefix: str = "T") -> Tensor:
        """Declare a fresh temporary."""
        return self.tensor(self.fresh(prefix), dtype, shape)

    def contract(
        self,
        out: Tensor,
        out_idxs: Sequence[Union[Affine, int]],
        agg: str,
        body: Union[Access, Combination],
        constraints: Iterable[Constraint] = (),
        default: Union[Tensor, str, None] = None,
    ) -> Tensor:
        """Append a contraction writing ``out``; returns ``out``."""
        self.stmts.append(contraction(out, out_idxs, agg, body, constraints, default))
        return out

    def eltwise(self, out: Tensor, expr: ExprLike) -> Tensor:
        """Append an elementwise statement writing ``out``; returns ``out``."""
        self.stmts.append(elementwise(out, expr))
        return out

    def output(self, *ts: Union[Tensor, str]) -> None:
        """Mark tensors as program outputs."""
        self.outputs.extend(_name(t) for t in ts)

    def drop_dead(self) -> list[bool]:
        """Remove the statements whose result no output depends on (a reshape copy whose
        readers read its source instead) with their temporaries; which were kept."""
        live = set(self.outputs)
        keep = []
        for s in reversed(self.stmts):
            keep.append(s.out in live)
            if keep[-1]:
                live.update(stmt_inputs(s))
        keep.reverse()
        for s, k in zip(self.stmts, keep):
            if not k:
                del self.tensors[s.out]
        self.stmts[:] = [s for s, k in zip(self.stmts, keep) if k]
        return keep

    def build(self) -> Program:
        """The validated program."""
        return Program(self.name, tuple(self.tensors.values()), tuple(self.inputs),
                       tuple(self.outputs), tuple(self.stmts))
