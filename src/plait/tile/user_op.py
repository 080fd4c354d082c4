"""``tile_op``: the one primitive behind every user Tile operation (``plait.tile.op``).

Its parameter ``program`` is the traced :class:`~plait.tile.lang.UserProgram`
(hashable). Rules: ``impl`` evaluates the program with NumPy
(:mod:`plait.tile.user_eval`); ``jvp``/``transpose``/``batch`` transform the program
itself (:mod:`plait.tile.derive`), so derivatives of any order and ``vmap`` are again
``tile_op`` applications; ``to_tile`` (native) lowers the statements into the kernel's
Tile program (:mod:`plait.tile.user_lower`); XLA's rule is in
``plait/backends/xla/rules_extra.py``.
"""
from __future__ import annotations

import numpy as np

from plait.core.ad_util import UndefinedPrimal, Zero
from plait.core.aval import ShapedArray
from plait.core.primitive import new_primitive
from plait.core.trace import get_aval
from plait.errors import TileSyntaxError
from plait.lax._ad_helpers import full
from plait.lax._batch_helpers import batch_size, move_batch_dim
from plait.lax.elementwise import convert_element_type
from plait.tile.derive import batch_program, jvp_program, transpose_program
from plait.tile.lang import UserProgram
from plait.tile.user_eval import eval_program

tile_op_p = new_primitive("tile_op", multiple_results=True)


def _abstract(*avals, program: UserProgram):
    for a, (n, s) in zip(avals, program.inputs):
        if tuple(a.shape) != tuple(s) or a.dtype != np.dtype(program.dtype):
            raise TileSyntaxError(f"tile op {program.name}: input {n} must be "
                                  f"{program.dtype}{list(s)}, got {a.str_short()}")
    return [ShapedArray(program.shape(o), program.dtype) for o in program.outputs]


def _impl(*xs, program: UserProgram):
    return [np.asarray(o, dtype=program.dtype) for o in eval_program(program, xs)]


tile_op_p.def_abstract_eval(_abstract)
tile_op_p.def_impl(_impl)


def _jvp(primals, tangents, *, program: UserProgram):
    nonzero = tuple(not isinstance(t, Zero) for t in tangents)
    primal, tangent, out_nz = jvp_program(program, nonzero)
    res = tile_op_p.bind(*primals, program=primal)
    by_name = dict(zip(primal.outputs, res))
    outs = [by_name[o] for o in program.outputs]
    if tangent is None:
        return outs, [Zero(get_aval(o)) for o in outs]
    touts = iter(tile_op_p.bind(*primals, *res, *[t for t in tangents if not isinstance(t, Zero)],
                                program=tangent))
    return outs, [next(touts) if nz else Zero(get_aval(o)) for o, nz in zip(outs, out_nz)]


def _transpose(cts, *invals, program: UserProgram):
    linear = tuple(isinstance(x, UndefinedPrimal) for x in invals)
    present = tuple(not isinstance(c, Zero) for c in cts)
    prog, has_ct = transpose_program(program, linear, present)
    res = iter(())
    if prog is not None:
        res = iter(tile_op_p.bind(*[x for x in invals if not isinstance(x, UndefinedPrimal)],
                                  *[c for c in cts if not isinstance(c, Zero)], program=prog))
    out, flags = [], iter(has_ct)
    for x in invals:
        if isinstance(x, UndefinedPrimal):
            out.append(next(res) if next(flags) else Zero(x.aval))
        else:
            out.append(None)
    return out


def _batch(vals, dims, *, program: UserProgram):
    size = batch_size(vals, dims)
    xs = [move_batch_dim(v, d, 0, size) if d is not None else v for v, d in zip(vals, dims)]
    prog, out_b = batch_program(program, tuple(d is not None for d in dims), size)
    outs = tile_op_p.bind(*xs, program=prog)
    return outs, [0 if b else None for b in out_b]


tile_op_p.def_rule("jvp", _jvp)
tile_op_p.def_rule("transpose", _transpose)
tile_op_p.def_rule("batch", _batch)


def _to_tile(ctx, *xs, program: UserProgram):
    from plait.tile.user_lower import lower_program
    return lower_program(ctx, program, xs)


tile_op_p.def_rule("to_tile", _to_tile)


def _cost(eqn):
    """(flops, transcendentals): each statement's body at every point of its index box."""
    from plait.tile.lang import Op
    flops = trans = 0
    for s in eqn.params["program"].stmts:
        box = int(np.prod(list(s.ranges().values()))) if s.vars else 1

        def count(e):
            if not isinstance(e, Op):
                return 0, 0
            f, t = (0, 1) if e.op in ("exp", "log", "tanh", "logistic", "pow") else (1, 0)
            for a in e.args:
                af, at = count(a)
                f, t = f + af, t + at
            return f, t
        f, t = count(s.body)
        flops += box * (f + (s.agg != "assign"))
        trans += box * t
    return flops, trans


tile_op_p.def_rule("cost", _cost)
tile_op_p.def_rule("tile_comment", lambda program: str(program))


def apply_program(op, arrays):
    """Call a :class:`~plait.tile.lang.TileOp` on arrays: trace, convert, bind."""
    avals = [get_aval(a) if not isinstance(a, (int, float)) else
             ShapedArray((), np.asarray(a).dtype) for a in arrays]
    dt = np.result_type(*[a.dtype for a in avals]) if avals else np.dtype(np.float32)
    if dt.kind != "f":
        dt = np.dtype(np.float32)
    prog = op.program([a.shape for a in avals], dt)
    xs = []
    for a, av in zip(arrays, avals):
        if isinstance(a, (int, float)):
            a = full((), a, dt)
        xs.append(a if av.dtype == dt else convert_element_type(a, dt))
    outs = tile_op_p.bind(*xs, program=prog)
    tree = prog.out_tree
    if tree is None:
        return outs[0]
    if isinstance(tree, int):
        return tuple(outs)
    return dict(zip(tree, outs))
