"""``to_stablehlo`` of ``tile_op`` (user Tile operations): the generic fallback.

StableHLO has no operation for a general affine contraction (affine access indices,
constraints, max/min/prod aggregation), so each statement is decomposed into existing
primitives: static-index gathers over the statement's index box, elementwise ops, a
mask, then a reduction or a scatter with the aggregation
(:func:`plait.tile.user_eval.eval_program` over ``plait.numpy``). The decomposition is
staged into a private function of the module and called.
"""
from __future__ import annotations

from plait.backends.xla.emitter import aval_type
from plait.backends.xla.rules import RULE
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


_GRAPHS: dict = {}


def _lower(ctx, *xs, program):
    g = _GRAPHS.get(program)
    if g is None:
        closed, _ = trace_to_graph(lambda *a: eval_program(program, a, _PlaitOps),
                                   ctx.in_avals, "tile_op")
        g = _GRAPHS[program] = closed.graph
    return ctx.call_graph(g, list(xs), [aval_type(a) for a in ctx.in_avals])


tile_op_p.def_rule(RULE, _lower)
