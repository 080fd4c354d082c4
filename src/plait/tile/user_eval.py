"""Evaluate a user Tile program with array operations (NumPy, or plait.numpy for XLA).

Each statement is evaluated over its whole index box: index grids are static NumPy
arrays, accesses are broadcast views (plain indices over whole dimensions) or gathers at
static (clipped) indices, points failing a constraint
get the aggregation's identity, and the result is a reduction over the non-output
indices (outputs indexed by plain variables covering the output) or a scatter with
the aggregation (any other affine output). The box is materialized, so this is the
reference semantics (eager ``impl``) and the XLA decomposition, not a fast kernel.
"""
from __future__ import annotations

import numpy as np

from plait.tile.lang import Lit, Ref, Stmt, UserProgram


class NumpyOps:
    """Array operations on NumPy arrays (the eager reference)."""

    xp = np

    @staticmethod
    def scatter(agg: str, base, flat_idx, vals):
        out = base.copy()
        ufunc = {"sum": np.add, "assign": np.add, "max": np.maximum, "min": np.minimum,
                 "prod": np.multiply}[agg]
        ufunc.at(out, flat_idx, vals)
        return out

    @staticmethod
    def gather(x, idx):
        return x[idx]


def identity(agg: str) -> float:
    """The value of an output element no valid point writes."""
    return {"sum": 0.0, "assign": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[agg]


def _box(s: Stmt):
    vars_ = s.vars
    rng = s.ranges()
    shape = tuple(rng[v] for v in vars_)
    grids = {v: np.arange(shape[k]).reshape([-1 if j == k else 1 for j in range(len(vars_))])
             for k, v in enumerate(vars_)}
    mask = np.ones(shape, bool)
    for c in s.where:
        e = c.expr.eval(grids)
        mask &= (e >= 0) & (e < c.bound)
    return vars_, shape, grids, mask


def _index(a, grids, shape, n):
    return np.clip(np.broadcast_to(np.asarray(a.eval(grids)), shape), 0, n - 1)


def _broadcast_view(r: Ref, tshape, vars_, shape, env, xp):
    """``r`` over the box without a gather when it indexes by distinct plain variables
    spanning whole dimensions (``A[i, k]``): a transpose and a reshape, or None."""
    pos = []
    for a, n in zip(r.idxs, tshape):
        if not (len(a.terms) == 1 and a.terms[0][1] == 1 and a.const == 0):
            return None
        k = vars_.index(a.vars[0])
        if k in pos or shape[k] != n:
            return None
        pos.append(k)
    x = env[r.tensor]
    order = sorted(range(len(pos)), key=lambda d: pos[d])
    if order != list(range(len(pos))):
        x = xp.transpose(x, tuple(order))
    return xp.reshape(x, tuple(shape[k] if k in pos else 1 for k in range(len(shape))))


def eval_stmt(s: Stmt, env: dict, shapes: dict, ops, dtype):
    """The tensor ``s`` writes, from the tensors in ``env``."""
    xp = ops.xp
    vars_, shape, grids, mask = _box(s)
    dt = np.dtype(dtype)

    def go(e):
        if isinstance(e, Ref):
            direct = _broadcast_view(e, shapes[e.tensor], vars_, shape, env, xp)
            if direct is not None:
                return direct
            idx = tuple(_index(a, grids, shape, n) for a, n in zip(e.idxs, shapes[e.tensor]))
            return ops.gather(env[e.tensor], idx) if idx else env[e.tensor]
        if isinstance(e, Lit):
            return xp.asarray(e.value, dtype=dt)
        a = [go(x) for x in e.args]
        o = e.op
        if o == "add": return a[0] + a[1]
        if o == "sub": return a[0] - a[1]
        if o == "mul": return a[0] * a[1]
        if o == "div": return a[0] / a[1]
        if o == "neg": return -a[0]
        if o == "pow": return a[0] ** a[1]
        if o == "exp": return xp.exp(a[0])
        if o == "log": return xp.log(a[0])
        if o == "tanh": return xp.tanh(a[0])
        if o == "sqrt": return xp.sqrt(a[0])
        if o == "logistic": return 1.0 / (1.0 + xp.exp(-a[0]))
        if o == "max": return xp.maximum(a[0], a[1])
        if o == "min": return xp.minimum(a[0], a[1])
        if o == "gt": return xp.where(a[0] > a[1], 1.0, 0.0).astype(dt)
        if o == "eq": return xp.where(a[0] == a[1], 1.0, 0.0).astype(dt)
        raise ValueError(f"unknown Tile operation {o!r}")

    with np.errstate(all="ignore"):
        val = xp.broadcast_to(xp.asarray(go(s.body), dtype=dt), shape)
        ident = identity(s.agg)
        if not mask.all():
            val = xp.where(mask, val, xp.asarray(ident, dtype=dt))
        pos = [vars_.index(a.vars[0]) if len(a.terms) == 1 and a.terms[0][1] == 1
               and a.const == 0 else None for a in s.out_idxs]
        if (None not in pos and len(set(pos)) == len(pos)
                and all(shape[p] == n for p, n in zip(pos, s.shape))):
            red = tuple(k for k in range(len(vars_)) if k not in pos)
            if red:
                fn = {"sum": xp.sum, "assign": xp.sum, "max": xp.max, "min": xp.min,
                      "prod": xp.prod}[s.agg]
                val = fn(val, axis=red)
            kept = [k for k in range(len(vars_)) if k not in red]
            perm = tuple(kept.index(p) for p in pos)
            if perm != tuple(range(len(perm))):
                val = xp.transpose(val, perm)
            return xp.asarray(val, dtype=dt)
        size = int(np.prod(s.shape))
        if s.shape:
            oidx = [_index(a, grids, shape, n) for a, n in zip(s.out_idxs, s.shape)]
            flat = np.ravel_multi_index(oidx, s.shape).reshape(-1)
        else:
            flat = np.zeros(int(np.prod(shape)), np.int64)
        base = xp.full((size,), ident, dtype=dt)
        out = ops.scatter(s.agg, base, flat, xp.reshape(val, (-1,)))
        return xp.reshape(out, s.shape)


def eval_program(p: UserProgram, args, ops=NumpyOps) -> list:
    """The outputs of ``p`` on ``args`` (one array per input)."""
    env = {n: a for (n, _), a in zip(p.inputs, args)}
    shapes = {n: tuple(s) for n, s in p.inputs}
    for s in p.stmts:
        env[s.out] = eval_stmt(s, env, shapes, ops, p.dtype)
        shapes[s.out] = tuple(s.shape)
    return [env[o] for o in p.outputs]
