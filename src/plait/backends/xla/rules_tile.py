"""``to_stablehlo`` of ``tile_op`` (user Tile operations): the generic fallback.

StableHLO has no operation for a general affine contraction (affine access indices,
constraints, max/min/prod aggregation), so each statement is decomposed into existing
primitives: static-index gathers over the statement's index box, elementwise ops, a
mask, then a reduction or a scatter with the aggregation
(:func:`plait.tile.user_eval.eval_program` over ``plait.numpy``). The decomposition is
staged into a private function of the module and called.
"""
from __future__ import annotations

import functools

import numpy as np

from plait.backends.xla.emitter import aval_type
from plait.backends.xla.rules import RULE
from plait.core.graph import closure_convert
from plait.core.staging import trace_to_graph
from plait.tile.user_eval import eval_program
from plait.tile.user_op import tile_op_p


class _PlaitOps:
    """:mod:`plait.tile.user_eval`'s array operations on plait arrays."""

    import plait.numpy as xp

    @staticmethod
    def scatter(agg, base, flat_idx, vals):
        at = base.at[flat_idx]
        return {"sum": at.add, "assign": at.add, "max": at.max, "min": at.min,
                "prod": at.multiply}[agg](vals)

    @staticmethod
    def gather(x, idx):
        return x[idx]


@functools.lru_cache(maxsize=256)
def _decomposition(program, in_avals: tuple):
    """``(graph, consts)``: the program staged over ``plait.numpy`` (cached per program)."""
    closed, _ = trace_to_graph(lambda *a: eval_program(program, a, _PlaitOps),
                               list(in_avals), "tile_op")
    return closure_convert(closed), closed.consts


def _lower(ctx, *xs, program):
    g, consts = _decomposition(program, tuple(ctx.in_avals))
    ops = [ctx.const(np.asarray(c), np.asarray(c).dtype) for c in consts] + list(xs)
    types = [aval_type(v.aval) for v in g.invars]
    return ctx.call_graph(g, ops, types)


tile_op_p.def_rule(RULE, _lower)
