"""Dead-code elimination of one graph, seeing into sub-graphs through each primitive's
``dce`` rule.

A primitive may register a ``dce`` rule ``(eqn, used_outputs: list[bool]) ->
(new_eqn | None, used_inputs: list[bool])`` to prune its own sub-graphs (e.g.
unused loop carries); otherwise an equation is kept whole if any output is used.
Equations with effects (:mod:`plait.core.effects`) are always kept.
The pass over closed graphs is ``plait.passes.dce``; loop primitives' rules call
:func:`dce_graph` on their bodies.
"""
from __future__ import annotations

from plait.core.effects import has_effects
from plait.core.graph import Graph, Var


def dce_graph(graph: Graph, used_outputs: list[bool] | None = None,
              prune_invars: bool = False) -> tuple[Graph, list[bool]]:
    """Remove equations whose outputs are unused. Returns the graph and which invars are used."""
    outvars = graph.outvars if used_outputs is None else [
        v for v, u in zip(graph.outvars, used_outputs) if u]
    live: set = {v for v in outvars if isinstance(v, Var)}
    new_eqns = []
    for eqn in reversed(graph.eqns):
        used = [o in live for o in eqn.outputs]
        if has_effects(eqn):   # effects run even when no output is used
            used = [True] * len(used)
            if not eqn.outputs:
                new_eqns.append(eqn)
                live.update(a for a in eqn.inputs if isinstance(a, Var))
                continue
        rule = eqn.prim.rules.get("dce")
        if rule is not None:
            new_eqn, used_in = rule(eqn, used)
            if new_eqn is None:
                continue
            new_eqns.append(new_eqn)
            live.update(a for a, u in zip(new_eqn.inputs, used_in) if u and isinstance(a, Var))
        elif any(used):
            new_eqns.append(eqn)
            live.update(a for a in eqn.inputs if isinstance(a, Var))
    new_eqns.reverse()
    used_in = [v in live for v in graph.invars]
    invars = [v for v, u in zip(graph.invars, used_in) if u] if prune_invars else graph.invars
    return Graph(graph.constvars, invars, new_eqns, outvars, graph.name), used_in
