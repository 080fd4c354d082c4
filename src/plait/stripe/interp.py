"""Reference interpreter: run any Stripe program with NumPy.

Each block is executed *vectorized over its whole iteration space*: the interpreter keeps
a batch of "rows" (one per live iteration of the enclosing blocks), expands it by the
block's index box (``np.unravel_index`` over the flattened box), drops rows that violate a
constraint, computes every refinement's element-0 offset in its flat storage as an array,
and runs the statement list once over all rows (scalars are arrays of shape ``(rows,)``).
That is exact because iterations of a parallel block are independent (Definition 2 of
the paper).  Stores aggregate with ``ufunc.at`` (``np.add.at``, ``np.maximum.at``...), so
reductions over many rows are correct; ``assign`` overwrites.  Big spaces are processed
in chunks of at most ``CHUNK`` rows.

Initial values follow the IR rule (see :mod:`.ir`): non-input buffers and ``none``
allocations start at the identity of their aggregation op.

Specials (whole-view ops) run through :data:`SPECIALS`, a registry of NumPy
implementations ``fn(inputs, params, out_shapes, out_dtypes) -> outputs``; add entries
with :func:`register_special`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from .intrinsics import INTRINSICS
from .ir import (
    Barrier,
    Block,
    Constant,
    Intrinsic,
    Load,
    LoadIndex,
    Program,
    Special,
    Store,
    agg_identity,
    np_dtype,
)
from plait.errors import StripeRuntimeError

CHUNK = 1 << 20

SpecialFn = Callable[[list, dict, list, list], list]
SPECIALS: dict[str, SpecialFn] = {}


def register_special(name: str, fn: SpecialFn) -> None:
    """Register ``fn(inputs, params, out_shapes, out_dtypes) -> list of arrays``."""
    SPECIALS[name] = fn


@dataclass
class _View:
    storage: np.ndarray  # flat
    base: np.ndarray  # (rows,) int64 offset of element 0
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    agg: str | None
    name: str


_AT = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _rows(x, n: int) -> np.ndarray:
    a = np.asarray(x)
    return a if a.shape == (n,) else np.broadcast_to(a, (n,))


def _check(v: _View, off: np.ndarray, what: str) -> None:
    if off.size and (off.min() < 0 or off.max() >= v.storage.size):
        raise StripeRuntimeError(f"{what} of {v.name!r} outside its storage (run the verifier)")


def _view_offsets(v: _View, r: int) -> np.ndarray:
    off = np.full(v.shape, v.base[r], dtype=np.int64)
    for d, (n, s) in enumerate(zip(v.shape, v.strides)):
        shp = [1] * len(v.shape)
        shp[d] = n
        off = off + (np.arange(n, dtype=np.int64) * s).reshape(shp)
    return off


def _store(v: _View, off: np.ndarray, vals: np.ndarray, agg: str | None) -> None:
    vals = np.asarray(vals).astype(v.storage.dtype, copy=False)
    if agg in (None, "assign"):
        v.storage[off] = vals
    else:
        _AT[agg].at(v.storage, off, vals)


def _exec_block(block: Block, rows: int, env: dict, views: dict[str, _View]) -> None:
    ranges = [i.range for i in block.idxs]
    q = math.prod(ranges)
    total = rows * q
    for start in range(0, total, CHUNK):
        flat = np.arange(start, min(total, start + CHUNK), dtype=np.int64)
        prow = flat // q if q else flat
        local = np.unravel_index(flat % q, ranges) if ranges else ()
        cenv: dict[str, np.ndarray] = {}
        for ix, loc in zip(block.idxs, local):
            base = 0
            if ix.affine is not None:
                base = _rows(ix.affine.eval(env), rows)[prow] if ix.affine.terms else ix.affine.const
            cenv[ix.name] = loc.astype(np.int64) + base
        n = len(prow)
        if block.constraints:
            keep = np.ones(n, dtype=bool)
            for c in block.constraints:
                keep &= _rows(c.eval(cenv), n) >= 0
            if not keep.all():
                prow = prow[keep]
                cenv = {k: a[keep] for k, a in cenv.items()}
                n = len(prow)
        if n == 0:
            continue
        _exec_rows(block, n, prow, cenv, views)


def _exec_rows(block: Block, n: int, prow: np.ndarray, env: dict, pviews: dict[str, _View]) -> None:
    views: dict[str, _View] = {}
    for r in block.refs:
        if r.dir == "none":
            size = 1 + sum((s - 1) * abs(st) for s, st in zip(r.shape, r.strides)) if r.shape else 1
            store = np.full(n * size, agg_identity(r.agg, r.dtype), dtype=np_dtype(r.dtype))
            views[r.into] = _View(store, np.arange(n, dtype=np.int64) * size, r.shape, r.strides, r.agg, r.into)
            continue
        if r.from_ not in pviews:
            raise StripeRuntimeError(f"block {block.name!r}: refinement {r.into!r} refines unknown {r.from_!r}")
        pv = pviews[r.from_]
        base = pv.base[prow]
        for a, st in zip(r.access, r.strides):
            if a.terms or a.const:
                base = base + _rows(a.eval(env), n) * st
        views[r.into] = _View(pv.storage, base, r.shape, r.strides, r.agg, r.into)
    sc: dict[str, np.ndarray] = {}
    for s in block.stmts:
        if isinstance(s, Load):
            v = views[s.from_]
            _check(v, v.base, "load")
            sc[s.into] = v.storage[v.base]
        elif isinstance(s, Store):
            v = views[s.into]
            _check(v, v.base, "store")
            _store(v, v.base, _rows(sc[s.from_], n), v.agg)
        elif isinstance(s, Constant):
            sc[s.into] = np.full(n, s.value, dtype=np_dtype(s.dtype))
        elif isinstance(s, LoadIndex):
            sc[s.into] = _rows(s.expr.eval(env), n).astype(np_dtype(s.dtype))
        elif isinstance(s, Intrinsic):
            d = INTRINSICS.get(s.name)
            if d is None:
                raise StripeRuntimeError(f"block {block.name!r}: unknown intrinsic {s.name!r}")
            res = d.fn(*(sc[a] for a in s.inputs))
            res = res if isinstance(res, tuple) else (res,)
            for o, val in zip(s.outputs, res):
                val = _rows(val, n)
                sc[o] = val.astype(np_dtype(s.dtype)) if s.dtype is not None else val
        elif isinstance(s, Special):
            _exec_special(block, s, n, views)
        elif isinstance(s, Block):
            _exec_block(s, n, env, views)
        elif isinstance(s, Barrier):
            pass    # orders work-items on a device; nothing in the semantics
        else:
            raise StripeRuntimeError(f"unknown statement {s!r}")


def _exec_special(block: Block, s: Special, n: int, views: dict[str, _View]) -> None:
    fn = SPECIALS.get(s.name)
    if fn is None:
        raise StripeRuntimeError(
            f"block {block.name!r}: no interpreter implementation for special {s.name!r}; "
            f"register one with plait.stripe.interp.register_special"
        )
    params = s.param_dict
    outs = [views[o] for o in s.outputs]
    for r in range(n):
        ins = []
        for i in s.inputs:
            v = views[i]
            off = _view_offsets(v, r)
            _check(v, off, f"special {s.name} input")
            ins.append(v.storage[off])
        res = fn(ins, params, [v.shape for v in outs], [v.storage.dtype for v in outs])
        for v, val in zip(outs, res):
            off = _view_offsets(v, r)
            _check(v, off, f"special {s.name} output")
            _store(v, off, np.broadcast_to(np.asarray(val), v.shape), v.agg)


def run(program: Program, inputs: Mapping[str, object], *, all_buffers: bool = False) -> dict[str, np.ndarray]:
    """Run ``program`` on ``{input name: array}``; returns ``{output name: array}``.

    With ``all_buffers=True`` every program buffer is returned.
    """
    storage: dict[str, _View] = {}
    for b in program.buffers:
        dt = np_dtype(b.dtype)
        if b.kind == "in":
            if b.name not in inputs:
                raise StripeRuntimeError(f"program {program.name!r}: missing input {b.name!r}")
            a = np.asarray(inputs[b.name])
            if a.shape != b.shape:
                raise StripeRuntimeError(
                    f"program {program.name!r}: input {b.name!r} has shape {a.shape}, expected {b.shape}"
                )
            flat = np.array(a, dtype=dt).reshape(-1)
        else:
            flat = np.full(math.prod(b.shape), agg_identity(b.init, b.dtype), dtype=dt)
        storage[b.name] = _View(flat, np.zeros(1, dtype=np.int64), b.shape, b.strides, None, b.name)
    _exec_block(program.entry, 1, {}, storage)
    keep = program.buffers if all_buffers else program.outputs
    return {b.name: storage[b.name].storage.reshape(b.shape) for b in keep}


# ---- built-in specials -------------------------------------------------------------------


def _copy(ins, params, shapes, dtypes):
    return [np.asarray(ins[0]).reshape(shapes[0])]


def _sort(ins, params, shapes, dtypes):
    axis = int(params.get("axis", -1))
    out = np.sort(ins[0], axis=axis, kind="stable")
    return [np.flip(out, axis) if params.get("descending") else out]


def _argsort(ins, params, shapes, dtypes):
    return [np.argsort(ins[0], axis=int(params.get("axis", -1)), kind="stable")]


def _gather(ins, params, shapes, dtypes):
    """``out = take(operand, indices, axis)`` with clipped indices."""
    x, idx = ins
    axis = int(params.get("axis", 0))
    idx = np.clip(idx.astype(np.int64), 0, x.shape[axis] - 1)
    return [np.take(x, idx, axis=axis)]


def _scatter(ins, params, shapes, dtypes):
    """``out = operand`` with ``updates`` combined at ``indices`` along ``axis`` (``mode``).

    Out-of-range indices are dropped.
    """
    x, idx, upd = ins
    axis = int(params.get("axis", 0))
    mode = params.get("mode", "set")
    out = np.array(x, copy=True)
    idx = idx.astype(np.int64)
    ok = (idx >= 0) & (idx < x.shape[axis])
    om = np.moveaxis(out, axis, 0)
    um = np.moveaxis(np.asarray(upd), axis, 0) if np.ndim(upd) == np.ndim(x) else np.asarray(upd)
    sel = idx[ok]
    vals = um[ok] if um.shape[:1] == idx.shape else um
    if mode == "set":
        om[sel] = vals
    else:
        _AT[mode].at(om, sel, vals)
    return [out]


for _n, _f in {"copy": _copy, "reshape": _copy, "sort": _sort, "argsort": _argsort,
               "gather": _gather, "scatter": _scatter}.items():
    register_special(_n, _f)
