"""Lower a user Tile program into the kernel's internal Tile program (``to_tile``).

A statement whose body is one access, or the sum or product of two accesses, is one
internal contraction (combination ``none``/``add``/``mul``). Any other body is split:
a top-level ``*`` or ``+`` keeps its two sides apart, and each side that is not a plain
access is materialized over the box of its own indices (each access gathered by an
``assign`` contraction under the statement's constraints on those indices, then one
elementwise statement); the aggregation then reads the materialized tensors. The final
contraction carries every constraint, so points a constraint excludes never count.
"""
from __future__ import annotations

from plait.tile.affine import Affine
from plait.tile.ir import Access, Call, Combination, Const, Input
from plait.tile.lang import Lit, Op, Ref, Stmt, UserProgram, expr_refs
from plait.tile.lowering import LowerCtx, TVal, tile_dtype

AGG = {"sum": "add", "max": "max", "min": "min", "prod": "mul", "assign": "assign"}
_CMP = {"gt": "cmp_gt", "eq": "cmp_eq"}


def lower_program(ctx: LowerCtx, p: UserProgram, xs) -> list:
    """Emit ``p``'s statements into ``ctx``; one :class:`TVal` per output."""
    dt = tile_dtype(p.dtype)
    names = {n: ctx.tensor(x) for (n, _), x in zip(p.inputs, xs)}
    for s in p.stmts:
        names[s.out] = _stmt(ctx, s, names, dt)
    return [TVal(Input(names[o].name), names[o].shape, dt) for o in p.outputs]


def _vars_of(e) -> list:
    vs: set = set()
    for r in expr_refs(e):
        for a in r.idxs:
            vs.update(a.vars)
    return sorted(vs)


def _access(names, r: Ref) -> Access:
    return names[r.tensor][r.idxs]


def _stmt(ctx: LowerCtx, s: Stmt, names: dict, dt: str):
    rng = s.ranges()
    b = s.body
    if isinstance(b, Ref):
        comb, accs = "none", [_access(names, b)]
    elif isinstance(b, Op) and b.op in ("add", "mul"):
        comb = b.op
        accs = [_access(names, a) if isinstance(a, Ref) else
                _materialize(ctx, a, s.where, rng, names, dt) for a in b.args]
    else:
        comb, accs = "none", [_materialize(ctx, b, s.where, rng, names, dt)]
    out = ctx.b.temp(dt, tuple(s.shape))
    ctx.b.contract(out, s.out_idxs, AGG[s.agg], Combination(comb, tuple(accs))
                   if comb != "none" else accs[0], s.where)
    return out


def _materialize(ctx: LowerCtx, e, where, rng: dict, names: dict, dt: str) -> Access:
    """``e`` computed over the box of its own indices; an access to the result."""
    vs = _vars_of(e)
    shape = tuple(rng[v] for v in vs)
    idx = tuple(Affine(((v, 1),)) for v in vs)
    cons = tuple(c for c in where if set(c.expr.vars) <= set(vs))
    gathered = {}
    for r in expr_refs(e):
        t = names[r.tensor]
        if r.idxs == idx and t.shape == shape:
            gathered[r] = t
        else:
            g = ctx.b.temp(dt, shape)
            ctx.b.contract(g, idx, "assign", t[r.idxs], cons)
            gathered[r] = g

    def conv(x):
        if isinstance(x, Ref):
            return Input(gathered[x].name)
        if isinstance(x, Lit):
            return Const(float(x.value), dt)
        args = tuple(conv(a) for a in x.args)
        if x.op in _CMP:
            return Call("cast", (Call(_CMP[x.op], args),), dt)
        return Call(x.op, args)
    out = ctx.b.temp(dt, shape)
    ctx.b.eltwise(out, conv(e))
    return out[idx]
