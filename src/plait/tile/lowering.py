"""Lowering graph equations to a Tile program: the context ``to_tile`` rules use.

A lowered value is a :class:`TVal`: a Tile elementwise expression with its shape
and dtype. Elementwise rules combine expressions without materializing them, so a
chain of elementwise primitives becomes one Tile ``Elementwise`` statement (fused
at the Tile level); structural and reduction rules call :meth:`LowerCtx.tensor`
to materialize their operands and emit contractions.

A primitive's ``to_tile`` rule is ``rule(ctx, *tvals, **params) -> TVal | list``;
``ctx.out_avals`` holds the equation's output types. A rule raises
:class:`NotLowerable` for a case it does not handle (the backend then runs that
equation on the host).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from plait.tile.affine import Affine, var
from plait.tile.builder import TileBuilder
from plait.tile.ir import Call, Const, Expr, IndexValue, Input, Tensor, Program
from plait.errors import NotLowerable

STRIPE_DTYPES = {np.dtype(k): v for k, v in (
    (np.bool_, "bool"), (np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"),
    (np.int64, "i64"), (np.uint8, "u8"), (np.uint16, "u16"), (np.uint32, "u32"),
    (np.uint64, "u64"), (np.float16, "f16"), (np.float32, "f32"), (np.float64, "f64"))}


def np_dtype(name: str) -> np.dtype:
    """NumPy dtype of a Tile dtype name."""
    for k, v in STRIPE_DTYPES.items():
        if v == name:
            return k
    raise NotLowerable(f"unknown Tile dtype {name!r}")


def tile_dtype(dt) -> str:
    try:
        return STRIPE_DTYPES[np.dtype(dt)]
    except KeyError:
        raise NotLowerable(f"dtype {dt} has no Tile type") from None


@dataclass(frozen=True)
class TVal:
    """A lowered value: an elementwise Tile expression of a given shape and dtype."""

    expr: Expr
    shape: tuple
    dtype: str


def _has_index(e: Expr) -> bool:
    return isinstance(e, IndexValue) or (isinstance(e, Call) and e.has_index)


def _size(e: Expr) -> int:
    return e.size if isinstance(e, Call) else 1


class LowerCtx:
    """Builds one Tile program from a sequence of equations."""

    MAX_EXPR = 64   # materialize expressions larger than this (keeps C readable)

    def __init__(self, name: str):
        self.b = TileBuilder(name)
        self.out_avals: list = []
        self.memo: dict[TVal, Tensor] = {}
        self._made: dict[int, tuple] = {}     # id(expr) -> (expr, shape, tensor) materialized
        self._vars = itertools.count()
        # temporaries that are a row-major reshape copy of another value (name -> source),
        # and the zero-filled results of a scatter (pad): name -> (source, out indexes,
        # {index var: range}); an access or a reshape can then address the source instead
        self.reshape_of: dict[str, TVal] = {}
        self.zero_scatter: dict[str, tuple] = {}

    # -- trying an equation --------------------------------------------------------------
    def checkpoint(self) -> tuple[int, ...]:
        """A mark of the program built so far, for :meth:`rollback`."""
        b = self.b
        return len(b.stmts), len(b.tensors), len(b.inputs), len(b.outputs)

    def rollback(self, mark: tuple[int, ...]) -> None:
        """Forget the statements, tensors, inputs and outputs added since ``mark`` (a
        :meth:`checkpoint`), after a rule raised ``NotLowerable`` half way. The tables
        only grow while an equation lowers, so this truncates them (copying them per
        equation would be quadratic in the kernel's size); the memo of materialized
        values needs no rollback: entries naming removed tensors are ignored."""
        b = self.b
        n_stmts, n_tensors, n_inputs, n_outputs = mark
        del b.stmts[n_stmts:]
        del b.inputs[n_inputs:]
        del b.outputs[n_outputs:]
        while len(b.tensors) > n_tensors:
            b.tensors.popitem()

    # -- values -------------------------------------------------------------------------
    def input(self, name: str, shape, dtype) -> TVal:
        t = self.b.input(name, tile_dtype(dtype), tuple(shape))
        return TVal(Input(t.name), t.shape, t.dtype)

    def const(self, value, dtype, shape=()) -> TVal:
        d = tile_dtype(dtype)
        v = value.item() if hasattr(value, "item") else value
        return TVal(Const(v, d), tuple(shape), d)

    def tensor(self, v: TVal) -> Tensor:
        """A tensor holding ``v`` (materialized once by an Elementwise statement if needed)."""
        if isinstance(v.expr, Input):
            t = self.b.tensors[v.expr.tensor]
            if t.shape == v.shape:
                return t
        t = self.memo.get(v)
        if t is None or t.name not in self.b.tensors:
            t = self.b.temp(v.dtype, v.shape)
            self.b.eltwise(t, self._reuse(v.expr, v.shape))
            self.memo[v] = t
            if isinstance(v.expr, Call):
                self._made[id(v.expr)] = (v.expr, v.shape, t)
        return t

    def _reuse(self, e: Expr, shape: tuple) -> Expr:
        """``e`` with every sub-expression that an earlier statement already materialized
        read from that tensor instead of computed again.

        An expression built before one of its parts was materialized (``y = f(x)`` staged
        before a reduction of ``x`` stored it) would otherwise recompute that part; a
        chain of such steps recomputes ever more. A part is reused when its tensor still
        exists (not rolled back) and broadcasts to ``shape`` (exactly equal shapes when
        it reads the output coordinates)."""
        done: dict[int, Expr] = {}

        def go(x: Expr) -> Expr:
            if not isinstance(x, Call):
                return x
            r = done.get(id(x))
            if r is None:
                hit = self._made.get(id(x))
                if hit is not None and hit[2].name in self.b.tensors and (
                        hit[1] == shape or (not x.has_index and _right_aligned(hit[1], shape))):
                    r = Input(hit[2].name)
                else:
                    args = tuple(go(a) for a in x.args)
                    r = x if all(a is b for a, b in zip(args, x.args)) else Call(x.op, args, x.dtype)
                done[id(x)] = r
            return r

        return go(e)

    def broadcast_source(self, v: TVal) -> Tensor | None:
        """The smaller tensor of ``v``'s rank that ``v`` reads broadcast (ones at the
        broadcast axes), or None when ``v`` is not such a read."""
        if isinstance(v.expr, Input):
            t = self.b.tensors[v.expr.tensor]
            if len(t.shape) == len(v.shape) and t.shape != v.shape:
                return t
        return None

    def as_input(self, v: TVal) -> TVal:
        t = self.tensor(v)
        return TVal(Input(t.name), t.shape, t.dtype)

    def fresh_vars(self, n: int) -> list[Affine]:
        return [var(f"x{next(self._vars)}") for _ in range(n)]

    # -- elementwise ----------------------------------------------------------------------
    def call(self, op: str, *args: TVal, dtype: str | None = None, shape=None) -> TVal:
        """``op(args)`` as an expression; operands are broadcast right-aligned."""
        if shape is None:
            shape = max((a.shape for a in args), key=len) if args else ()
        shape = tuple(shape)
        exprs = []
        for a in args:
            m = self.memo.get(a)
            if m is not None and m.name in self.b.tensors:   # reuse a materialized value
                a = TVal(Input(m.name), a.shape, a.dtype)
            if a.shape != shape and (_has_index(a.expr) or
                                     not _right_aligned(a.shape, shape)):
                a = self.broadcast(a, shape, tuple(range(len(shape) - len(a.shape), len(shape))))
            a = self._scalar_once(a, shape)
            exprs.append(a.expr)
        out_dt = dtype or _result_dtype(op, args)
        e = Call(op, tuple(exprs), dtype)
        tv = TVal(e, shape, out_dt)
        if _size(e) > self.MAX_EXPR:
            tv = self.as_input(tv)
        return tv

    def _scalar_once(self, v: TVal, shape: tuple) -> TVal:
        """A computed one-element operand of a larger expression, stored once: fused, it
        would be recomputed at every element (Adam's bias correction ``1 - b ** (i + 1)``:
        two ``powf`` per parameter)."""
        if isinstance(v.expr, Call) and math.prod(v.shape) == 1 and math.prod(shape) > 1:
            return self.as_input(v)
        return v

    def cast(self, v: TVal, dtype) -> TVal:
        d = tile_dtype(dtype)
        if d == v.dtype:
            return v
        return TVal(Call("cast", (v.expr,), d), v.shape, d)

    def iota(self, shape, axis: int, dtype) -> TVal:
        return TVal(IndexValue(axis, tile_dtype(dtype)), tuple(shape), tile_dtype(dtype))

    # -- structural -----------------------------------------------------------------------
    def contract(self, shape, dtype: str, out_idxs, agg: str, comb: str, accesses,
                 constraints=(), default: TVal | None = None) -> TVal:
        out = self.b.temp(dtype, tuple(shape))
        from plait.tile.ir import Combination
        body = Combination(comb, tuple(accesses))
        dflt = self.tensor(default) if default is not None else None
        self.b.contract(out, tuple(out_idxs), agg, body, tuple(constraints), dflt)
        return TVal(Input(out.name), out.shape, out.dtype)

    def access(self, v: TVal, idxs: Sequence[Affine]):
        return self.tensor(v)[tuple(idxs)]

    def access_source(self, v: TVal, idxs: Sequence[Affine], ranges: dict):
        """``access(v, idxs)``, reading through ``v``'s reshape copy when ``v`` is one and
        the position stays affine in the source (:func:`reindex`); ``ranges`` maps each
        index variable to its extent."""
        if isinstance(v.expr, Input):
            src = self.reshape_of.get(v.expr.tensor)
            if src is not None:
                moved = reindex(idxs, v.shape, src.shape, ranges)
                if moved is not None:
                    return self.access(src, moved)
        return self.access(v, idxs)

    def scatter_zero(self, shape, dtype: str, dst: Sequence[Affine], src: TVal,
                     ranges: dict) -> TVal:
        """Zeros of ``shape`` with ``src`` (indexed by the variables of ``ranges``, in
        order) assigned at the positions ``dst``; recorded for :func:`lower_reshape`."""
        xs = [var(n) for n in ranges]
        out = self.contract(shape, dtype, dst, "assign", "none", [self.access(src, xs)])
        self.zero_scatter[out.expr.tensor] = (src, tuple(dst), dict(ranges))
        return out

    def broadcast(self, v: TVal, shape, dims) -> TVal:
        """``broadcast_in_dim``: free when right-aligned, else a copy contraction."""
        shape = tuple(shape)
        if not _has_index(v.expr) and (
                not v.shape or tuple(dims) == tuple(range(len(shape) - len(v.shape), len(shape)))):
            return TVal(self._scalar_once(v, shape).expr, shape, v.dtype)
        kept = _kept_shape(v.shape, shape, dims)
        if kept is not None and not _has_index(v.expr):
            # dims in order: copy the operand once into the output's rank with ones at the
            # new axes, which elementwise statements broadcast as they read it (a per-example
            # norm divides a gradient without a gradient-sized copy of the norm)
            xs = self.fresh_vars(len(shape))
            src = [xs[d] for d in dims]
            small = self.contract(kept, v.dtype, [xs[d] if kept[d] > 1 else Affine((), 0)
                                                  for d in range(len(shape))],
                                  "assign", "none", [self.access(v, src)])
            return TVal(small.expr, shape, v.dtype)
        xs = self.fresh_vars(len(shape))
        src = [xs[d] if v.shape[i] == shape[d] else Affine((), 0) for i, d in enumerate(dims)]
        return self.contract(shape, v.dtype, xs, "assign", "none", [self.access(v, src)])

    def copy_to(self, v: TVal, shape) -> TVal:
        """A value of exactly ``shape`` (materialized)."""
        return self.as_input(TVal(v.expr, tuple(shape), v.dtype))

    def build(self) -> Program:
        return self.b.build()


def _kept_shape(small, big, dims) -> tuple | None:
    """``small`` placed at ``dims`` of ``big``'s rank with ones elsewhere, when ``dims``
    increase, every kept extent is 1 or ``big``'s, and the result is smaller than ``big``
    (a broadcast an elementwise read can do); None otherwise."""
    if list(dims) != sorted(dims) or len(set(dims)) != len(dims):
        return None
    kept = [1] * len(big)
    for n, d in zip(small, dims):
        if n not in (1, big[d]):
            return None
        kept[d] = n
    return tuple(kept) if math.prod(kept) < math.prod(big) else None


def _right_aligned(small, big) -> bool:
    if len(small) > len(big):
        return False
    return all(a in (1, b) for a, b in zip(reversed(small), reversed(big)))


_BOOL_OPS = {"cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge", "is_finite", "is_nan"}


def _result_dtype(op: str, args: Sequence[TVal]) -> str:
    if op in _BOOL_OPS:
        return "bool"
    if op in ("select", "cond"):
        return args[1].dtype
    return args[0].dtype if args else "f32"


def reshape_accesses(in_shape, out_shape, ctx: LowerCtx):
    """Affine accesses for a row-major reshape, or None when it is not affine.

    Uses the common refinement of both shapes' strides: both index tuples are
    affine in the same set of fresh variables when every stride of one shape is
    a multiple or divisor chain of the other's.
    """
    si, n = _row_major_strides(in_shape), math.prod(in_shape)
    so = _row_major_strides(out_shape)
    if n == 0:
        return None
    cuts = sorted({s for s, d in zip(si, in_shape) if d > 1} |
                  {s * d for s, d in zip(si, in_shape) if d > 1} |
                  {s for s, d in zip(so, out_shape) if d > 1} |
                  {s * d for s, d in zip(so, out_shape) if d > 1} | {1, n}, reverse=True)
    for a, b in zip(cuts, cuts[1:]):
        if a % b:
            return None
    # variable for each segment [b, a): value range a // b, weight b
    segs = [(a // b, b) for a, b in zip(cuts, cuts[1:])]
    vs = ctx.fresh_vars(len(segs))

    def idx_for(shape, strd):
        out = []
        for s, d in zip(strd, shape):
            if d == 1:
                out.append(Affine((), 0))
                continue
            e = Affine((), 0)
            for (rng, w), v in zip(segs, vs):
                if s <= w < s * d:
                    e = e + v * (w // s)
            out.append(e)
        return out
    return vs, [rng for rng, _ in segs], idx_for(in_shape, si), idx_for(out_shape, so)


def _row_major_strides(shape) -> list[int]:
    """Element strides of a row-major array of ``shape`` (Tile does not import Stripe's)."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def _digits(value: int, shape) -> list[int]:
    """``value`` in the mixed radix of ``shape`` (row-major), the first digit unbounded."""
    out = []
    for st, d in zip(_row_major_strides(shape), shape):
        q = value // st
        out.append(q if not out else q % d)
        value -= q * st if not out else (q % d) * st
    return out


def reindex(idxs: Sequence[Affine], shape, new_shape, ranges: dict) -> list[Affine] | None:
    """The position ``idxs`` (affine in index variables over ``ranges``) of an array of
    ``shape`` as affine indexes of the same row-major data viewed as ``new_shape``, or
    None when they are not affine there.

    The flat offset ``c + sum(g_v v)`` is split into the digits of ``new_shape``, the
    constant's and each coefficient's alike; summing digits position by position is
    exact when no position can overflow its extent (no carry) at any point of the
    index box. The diagonal of an ``n x m`` matrix read as the flat slice ``(m+1) i``
    becomes ``[i, i]``."""
    if math.prod(new_shape) == 0 or 0 in ranges.values():
        return None
    flat = Affine((), 0)
    for a, st in zip(idxs, _row_major_strides(shape)):
        flat = flat + Affine.lift(a) * st
    if flat.const < 0 or any(c < 0 for _, c in flat.terms):
        return None
    digits = {n: _digits(c, new_shape) for n, c in flat.terms}
    out = []
    for k, (c, extent) in enumerate(zip(_digits(flat.const, new_shape), new_shape)):
        e = Affine.of({n: d[k] for n, d in digits.items()}, c)
        if c + sum(d[k] * (ranges[n] - 1) for n, d in digits.items()) >= extent:
            return None
        out.append(e)
    return out


def index_ranges(vs, shape) -> dict:
    """``{name: extent}`` of fresh index variables ``vs`` over ``shape``."""
    return {v.terms[0][0]: int(r) for v, r in zip(vs, shape)}


def lower_reshape(ctx: LowerCtx, v: TVal, new_shape) -> TVal:
    """Row-major reshape as one affine copy, or two through a flat temporary.

    A reshape of a zero-filled scatter (a pad's result) scatters into the new shape
    directly when its positions stay affine there (:func:`reindex`), so the padded
    value is written once; the copy is recorded in ``ctx.reshape_of`` so that a later
    access can read the source instead (``_slice``), leaving the copy dead."""
    new_shape = tuple(new_shape)
    if v.shape == new_shape:
        return v
    if isinstance(v.expr, Input) and v.expr.tensor in ctx.zero_scatter:
        src, dst, ranges = ctx.zero_scatter[v.expr.tensor]
        moved = reindex(dst, v.shape, new_shape, ranges)
        if moved is not None:
            return ctx.scatter_zero(new_shape, v.dtype, moved, src, ranges)
    r = reshape_accesses(v.shape, new_shape, ctx)
    if r is not None:
        vs, rngs, in_idx, out_idx = r
        # the refinement variables range over rngs; express the output by out_idx
        out = ctx.contract(new_shape, v.dtype, out_idx, "assign", "none",
                           [ctx.access(v, in_idx)])
        ctx.reshape_of[out.expr.tensor] = ctx.reshape_of.get(
            v.expr.tensor, v) if isinstance(v.expr, Input) else v
        return out
    flat = lower_reshape(ctx, v, (int(np.prod(v.shape)),))
    return lower_reshape(ctx, flat, new_shape)
