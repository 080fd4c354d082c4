"""The user-facing Tile language: operations written as contractions in Einstein notation.

A user writes a function of tensors with :func:`contract` statements and decorates it
with :func:`op`::

    @plait.tile.op
    def maxplus(A, B):                       # C[i, j] = max_k A[i, k] + B[k, j]
        i, j, k = plait.tile.indices("i j k")
        return plait.tile.contract("max", A[i, k] + B[k, j], out=(i, j))

Calling the result with arrays traces the function once per input shapes into a
:class:`UserProgram` (hashable: it is the parameter of the one ``tile_op`` primitive in
:mod:`plait.tile.user_op`), so the op works eagerly, under ``jit``, ``grad`` and ``vmap``.

Semantics of ``contract(agg, body, out=..., where=..., shape=...)``: every index variable
ranges over ``[0, R)``, where ``R`` is the smallest size of a dimension it indexes alone
(``A[i, ...]``), of an output dimension it indexes alone (``shape=``) or a constraint
``i < R``. The body is evaluated at every point of that box satisfying all constraints
(``i + k < N`` means ``0 <= i + k < N``) and aggregated into ``out`` with ``sum``,
``max``, ``min``, ``prod`` or ``assign`` (no reduction index). Unwritten output elements
hold the identity (0, -inf, inf, 1, 0). Index expressions are affine: strides and
dilations are ``2*i + 3*k``. Every access must stay in range at every such point; an
access the constraints do not keep in range is an error at the user's line, as is an
output index no access, constraint or ``shape=`` bounds.

Bodies combine accesses with ``+ - * /``, unary ``-``, ``** c`` (a constant) and the
functions :func:`exp`, :func:`log`, :func:`tanh`, :func:`sqrt`, :func:`sigmoid`,
:func:`maximum`, :func:`minimum`.
"""
from __future__ import annotations

import functools
import inspect
import linecache
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import numpy as np

from plait.errors import TileSyntaxError
from plait.lru import LRUCache
from plait.tile.affine import Affine, Constraint, variables

__all__ = ["op", "indices", "contract", "exp", "log", "tanh", "sqrt", "sigmoid",
           "maximum", "minimum", "UserProgram", "Stmt", "Ref", "Lit", "Op"]

AGG_ALIASES = {"sum": "sum", "+": "sum", "add": "sum", "max": "max", ">": "max",
               "min": "min", "<": "min", "prod": "prod", "*": "prod", "mul": "prod",
               "assign": "assign", "=": "assign"}
UNARY = ("neg", "exp", "log", "tanh", "sqrt", "logistic")
BINARY = ("add", "sub", "mul", "div", "max", "min", "pow", "gt", "eq")
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "gt": ">",
           "eq": "=="}


class _Arith:
    """Arithmetic operators shared by every body expression node."""

    def __add__(self, o): return Op("add", (self, lift(o)))
    def __radd__(self, o): return Op("add", (lift(o), self))
    def __sub__(self, o): return Op("sub", (self, lift(o)))
    def __rsub__(self, o): return Op("sub", (lift(o), self))
    def __mul__(self, o): return Op("mul", (self, lift(o)))
    def __rmul__(self, o): return Op("mul", (lift(o), self))
    def __truediv__(self, o): return Op("div", (self, lift(o)))
    def __rtruediv__(self, o): return Op("div", (lift(o), self))
    def __neg__(self): return Op("neg", (self,))

    def __pow__(self, c):
        if not isinstance(c, (int, float)):
            raise TileSyntaxError("a Tile power must have a constant exponent (x ** 2.0)")
        return Op("pow", (self, Lit(float(c))))


@dataclass(frozen=True)
class Ref(_Arith):
    """``tensor[idxs]``: one element of a tensor at affine indices."""

    tensor: str
    idxs: tuple

    def __str__(self) -> str:
        return f"{self.tensor}[{', '.join(str(i) for i in self.idxs)}]"


@dataclass(frozen=True)
class Lit(_Arith):
    """A scalar constant."""

    value: float

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Op(_Arith):
    """An elementwise operation (``UNARY`` or ``BINARY`` names) of sub-expressions."""

    op: str
    args: tuple

    def __str__(self) -> str:
        if self.op == "neg":
            return f"-{_paren(self.args[0])}"
        if self.op in _SYMBOL:
            return f"{_paren(self.args[0])} {_SYMBOL[self.op]} {_paren(self.args[1])}"
        name = {"max": "maximum", "min": "minimum", "logistic": "sigmoid"}.get(self.op, self.op)
        return f"{name}({', '.join(str(a) for a in self.args)})"


Expr = Union[Ref, Lit, Op]


def _paren(e) -> str:
    return f"({e})" if isinstance(e, Op) and e.op in _SYMBOL else str(e)


def lift(x) -> Expr:
    """Numbers become :class:`Lit`; expressions pass through."""
    if isinstance(x, (Ref, Lit, Op)):
        return x
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return Lit(float(x))
    if isinstance(x, TensorArg):
        raise TileSyntaxError(f"tensor {x.name!r} used without indices: write {x.name}[i, ...]")
    raise TileSyntaxError(f"not a Tile expression: {x!r} (use tensors indexed by "
                          "plait.tile.indices, numbers and plait.tile functions)")


def exp(x) -> Op: return Op("exp", (lift(x),))
def log(x) -> Op: return Op("log", (lift(x),))
def tanh(x) -> Op: return Op("tanh", (lift(x),))
def sqrt(x) -> Op: return Op("sqrt", (lift(x),))
def sigmoid(x) -> Op: return Op("logistic", (lift(x),))
def maximum(x, y) -> Op: return Op("max", (lift(x), lift(y)))
def minimum(x, y) -> Op: return Op("min", (lift(x), lift(y)))


def expr_refs(e: Expr) -> list:
    """The accesses of ``e`` in first-use order (no duplicates)."""
    out: list = []

    def go(x):
        if isinstance(x, Ref):
            if x not in out:
                out.append(x)
        elif isinstance(x, Op):
            for a in x.args:
                go(a)
    go(e)
    return out


@dataclass(frozen=True)
class Stmt:
    """``out[out_idxs : shape] = agg(body), where...``; ``source`` is the user's text.

    ``where`` always holds a range constraint ``v < R`` for every index variable."""

    out: str
    out_idxs: tuple
    shape: tuple
    agg: str
    body: Expr
    where: tuple
    source: str = ""

    @property
    def vars(self) -> tuple:
        names: set = set()
        for a in self.out_idxs:
            names.update(a.vars)
        for r in expr_refs(self.body):
            for a in r.idxs:
                names.update(a.vars)
        for c in self.where:
            names.update(c.expr.vars)
        return tuple(sorted(names))

    def ranges(self) -> dict:
        """``{var: R}`` from the range constraints in ``where``."""
        out: dict = {}
        for c in self.where:
            if len(c.expr.terms) == 1 and c.expr.terms[0][1] == 1 and c.expr.const == 0:
                v = c.expr.terms[0][0]
                out[v] = min(out.get(v, c.bound), c.bound)
        return out

    def __str__(self) -> str:
        lhs = f"{self.out}[{', '.join(str(i) for i in self.out_idxs)}]"
        text = f"{lhs} = {self.agg}({self.body})"
        extra = [str(c) for c in self.where if not _is_range(c)]
        return text + (", " + ", ".join(extra) if extra else "")


def _is_range(c: Constraint) -> bool:
    return len(c.expr.terms) == 1 and c.expr.terms[0][1] == 1 and c.expr.const == 0


@dataclass(frozen=True, repr=False)
class UserProgram:
    """A traced user op: input tensors, statements, outputs; one dtype throughout.

    ``inputs`` and ``tensors`` map names to shapes (``tensors`` includes every statement
    output). ``out_tree`` is ``None`` (one output), a tuple length or a tuple of dict keys.
    """

    name: str
    dtype: str
    inputs: tuple            # ((name, shape), ...)
    stmts: tuple
    outputs: tuple           # names
    out_tree: object = None

    def shape(self, name: str) -> tuple:
        for n, s in self.inputs:
            if n == name:
                return s
        for s in self.stmts:
            if s.out == name:
                return s.shape
        raise KeyError(name)

    def tensor_names(self) -> set:
        return {n for n, _ in self.inputs} | {s.out for s in self.stmts}

    def __repr__(self) -> str:
        """One line (graph text): the name and the statements."""
        return f"<tile {self.name}: " + "; ".join(str(s) for s in self.stmts) + ">"

    def __str__(self) -> str:
        ins = ", ".join(f"{n}: {self.dtype}{list(s)}" for n, s in self.inputs)
        lines = [f"tile op {self.name}({ins}) -> ({', '.join(self.outputs)})"]
        for s in self.stmts:
            lines.append(f"  {s}")
            if s.source:
                lines.append(f"    # {s.source}")
        return "\n".join(lines)


# ---- tracing the user's function ---------------------------------------------------------

@dataclass(eq=False)
class TensorArg:
    """A tensor inside a user's op body: index it (``A[i, k]``) to read elements."""

    name: str
    shape: tuple
    _trace: "_Trace" = field(repr=False, default=None)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, idxs) -> Ref:
        if not isinstance(idxs, tuple):
            idxs = (idxs,)
        try:
            aff = tuple(Affine.lift(i) for i in idxs)
        except TypeError:
            raise TileSyntaxError(
                f"{self.name}[...]: indices must be plait.tile.indices and integers combined "
                f"with + - and * by an integer, got {idxs!r}") from None
        if len(aff) != len(self.shape):
            raise TileSyntaxError(f"{self.name} has {len(self.shape)} dimensions (shape "
                                  f"{self.shape}) but is indexed with {len(aff)} indices")
        return Ref(self.name, aff)


class _Trace:
    def __init__(self, inputs: dict):
        self.shapes = dict(inputs)
        self.stmts: list = []
        self.count = 0

    def fresh(self, name: Optional[str]) -> str:
        if name is not None:
            if not name.isidentifier() or name in self.shapes:
                raise TileSyntaxError(f"output name {name!r} is not a fresh identifier")
            return name
        while True:
            n = f"T{self.count}"
            self.count += 1
            if n not in self.shapes:
                return n


_ACTIVE = threading.local()


def indices(names: str) -> tuple:
    """Index variables: ``i, j, k = indices("i j k")`` (one name gives one variable)."""
    vs = variables(names)
    return vs[0] if len(vs) == 1 else vs


def _source_text() -> str:
    """``file:line: code`` of the user's ``contract(...)`` call (all its lines)."""
    f = sys._getframe(2)
    fn, ln = f.f_code.co_filename, f.f_lineno
    text, depth, n = [], 0, ln
    while True:
        line = linecache.getline(fn, n)
        if not line:
            break
        text.append(line.strip())
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        n += 1
        if depth <= 0 or n - ln > 20:
            break
    return f"{fn}:{ln}: {' '.join(text)}"


def contract(agg: str, body, out=(), *, where: Sequence[Constraint] = (),
             shape: Optional[Sequence[int]] = None, name: Optional[str] = None) -> TensorArg:
    """One Tile statement: ``out[out] = agg(body)`` over the valid index points.

    ``agg``: ``"sum"``, ``"max"``, ``"min"``, ``"prod"`` or ``"assign"``; ``out``: the
    output's index expressions (one or a tuple); ``where``: constraints such as
    ``i + k < N``; ``shape``: the output shape when an output index is not a plain
    variable bounded elsewhere; ``name``: the output tensor's name (in text and errors).
    Returns the new tensor, usable by later statements."""
    tr: Optional[_Trace] = getattr(_ACTIVE, "trace", None)
    if tr is None:
        raise TileSyntaxError("plait.tile.contract is used inside a function decorated "
                              "with @plait.tile.op")
    if agg not in AGG_ALIASES:
        raise TileSyntaxError(f"unknown aggregation {agg!r}; use one of "
                              "'sum', 'max', 'min', 'prod', 'assign'")
    agg = AGG_ALIASES[agg]
    body = lift(body)
    out_idxs = tuple(Affine.lift(i) for i in (out if isinstance(out, (tuple, list)) else (out,)))
    where = tuple(where)
    for c in where:
        if not isinstance(c, Constraint):
            raise TileSyntaxError(f"constraint {c!r} is not of the form `index expression < N`")
    src = _source_text()
    refs = expr_refs(body)
    for r in refs:
        if r.tensor not in tr.shapes:
            raise TileSyntaxError(f"{r.tensor!r} is not a tensor of this op")
    ranges: dict = {}

    def bound(v: str, n: int) -> None:
        ranges[v] = min(ranges.get(v, n), n)

    for r in refs:
        for a, n in zip(r.idxs, tr.shapes[r.tensor]):
            if _plain(a):
                bound(a.vars[0], n)
    for c in where:
        if _plain(c.expr):
            bound(c.expr.vars[0], c.bound)
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if len(shape) != len(out_idxs):
            raise TileSyntaxError(f"shape={shape} has {len(shape)} dimensions but out= has "
                                  f"{len(out_idxs)} indices")
        for a, n in zip(out_idxs, shape):
            if _plain(a):
                bound(a.vars[0], n)
    all_vars: set = set()
    for a in out_idxs:
        all_vars.update(a.vars)
    for r in refs:
        for a in r.idxs:
            all_vars.update(a.vars)
    for c in where:
        all_vars.update(c.expr.vars)
    out_vars = {v for a in out_idxs for v in a.vars}
    for v in sorted(all_vars):
        if v not in ranges:
            where_used = "on the output" if v in out_vars else "in the body"
            raise TileSyntaxError(
                f"index {v!r} is used {where_used} but bound nowhere: no access uses it "
                f"alone (A[{v}]), and no constraint `{v} < N` or shape= gives its range")
    if agg == "assign":
        extra = sorted(all_vars - out_vars)
        if extra:
            raise TileSyntaxError(f"'assign' has no reduction but index {extra[0]!r} is not "
                                  "on the output; aggregate with 'sum', 'max', 'min' or 'prod'")
    if shape is None:
        dims = []
        for d, a in enumerate(out_idxs):
            if not _plain(a):
                raise TileSyntaxError(f"output dimension {d} is indexed by `{a}`: give the "
                                      "output's size with shape=")
            dims.append(ranges[a.vars[0]])
        shape = tuple(dims)
    full_where = where + tuple(Constraint(Affine(((v, 1),)), ranges[v]) for v in sorted(all_vars))
    for r in refs:
        for d, (a, n) in enumerate(zip(r.idxs, tr.shapes[r.tensor])):
            _check_range(a, n, ranges, where, f"access {r}", f"{r.tensor!r}", d)
    lhs = tr.fresh(name)
    for d, (a, n) in enumerate(zip(out_idxs, shape)):
        _check_range(a, n, ranges, where, f"output index `{a}`", f"the output {lhs!r}", d)
    st = Stmt(lhs, out_idxs, shape, agg, body, full_where, src)
    tr.stmts.append(st)
    tr.shapes[lhs] = shape
    return TensorArg(lhs, shape, tr)


def _plain(a: Affine) -> bool:
    return len(a.terms) == 1 and a.terms[0][1] == 1 and a.const == 0


def _check_range(a: Affine, n: int, ranges: dict, where, what: str, tensor: str, d: int) -> None:
    """``a`` over the box, narrowed by constraints on the same linear part, is in [0, n)."""
    lo = hi = a.const
    for v, c in a.terms:
        top = c * (ranges[v] - 1)
        lo, hi = lo + min(0, top), hi + max(0, top)
    for c in where:
        if c.expr.terms == a.terms:
            shift = a.const - c.expr.const
            lo, hi = max(lo, shift), min(hi, c.bound - 1 + shift)
    if lo < 0 or hi >= n:
        raise TileSyntaxError(
            f"{what} can go out of range: `{a}` takes values in [{lo}, {hi}] but {tensor} "
            f"has size {n} along dimension {d}; add a constraint such as `{a} < {n}` "
            "(which also means >= 0) or narrow the index ranges")


class TileOp:
    """A user's Tile operation: call it with arrays (eagerly or under transformations)."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = fun.__name__
        params = list(inspect.signature(fun).parameters.values())
        self.arg_names = tuple(p.name for p in params)
        self._cache = LRUCache()      # (shapes, dtype) -> UserProgram

    def program(self, shapes: Sequence[tuple], dtype) -> UserProgram:
        """The traced program for these input shapes and dtype (cached)."""
        key = (tuple(tuple(s) for s in shapes), str(np.dtype(dtype)))
        p = self._cache.get(key)
        if p is None:
            p = self._cache[key] = self._trace(*key)
        return p

    def _trace(self, shapes, dtype) -> UserProgram:
        if len(shapes) != len(self.arg_names):
            raise TileSyntaxError(f"{self.name} takes {len(self.arg_names)} tensors "
                                  f"({', '.join(self.arg_names)}), got {len(shapes)}")
        tr = _Trace(dict(zip(self.arg_names, shapes)))
        args = [TensorArg(n, s, tr) for n, s in zip(self.arg_names, shapes)]
        prev = getattr(_ACTIVE, "trace", None)
        _ACTIVE.trace = tr
        try:
            res = self.fun(*args)
        finally:
            _ACTIVE.trace = prev
        if isinstance(res, dict):
            keys, outs = tuple(res), list(res.values())
            tree = keys
        elif isinstance(res, (tuple, list)):
            outs, tree = list(res), len(res)
        else:
            outs, tree = [res], None
        for o in outs:
            if not isinstance(o, TensorArg) or o._trace is not tr:
                raise TileSyntaxError(f"{self.name} must return tensors made by "
                                      "plait.tile.contract (one, a tuple or a dict)")
            if o.name in self.arg_names:
                raise TileSyntaxError(f"{self.name} returns its input {o.name!r} unchanged")
        if not outs:
            raise TileSyntaxError(f"{self.name} returns no tensor")
        return UserProgram(self.name, dtype, tuple(zip(self.arg_names, shapes)),
                           tuple(tr.stmts), tuple(o.name for o in outs), tree)

    def __call__(self, *arrays):
        from plait.tile.user_op import apply_program
        return apply_program(self, arrays)

    def as_text(self, *arrays) -> str:
        """The traced program for these example inputs (statements as the user wrote them)."""
        shapes = [np.shape(a) for a in arrays]
        dt = np.result_type(*[getattr(a, "dtype", np.float32) for a in arrays])
        if dt.kind != "f":
            dt = np.dtype(np.float32)
        return str(self.program(shapes, dt))


def op(fun: Callable) -> TileOp:
    """Decorator: the function's body, written with :func:`contract`, becomes a plait op
    usable eagerly and under ``jit`` (every backend), ``grad`` (any order) and ``vmap``."""
    return TileOp(fun)
