"""Loop-invariant code motion: equations of a loop body that depend only on the loop's
constants are computed once, before the loop, and passed in as new constants.

A loop primitive says where its constants are with a ``loop_invariants`` rule:
``rule(eqn) -> [(graph param, const-count param, index of its first const operand)]``.
Equations with effects stay in the loop. Hoisting is always safe for pure primitives (a loop that runs zero times just
computes an unused value). Sub-graphs are processed first, so nested loops hoist
outward one level per pass.

Equations whose primitive has an ``expands`` rule (``broadcast_in_dim``, ``iota``) and
whose output has more elements than their operands stay in the loop too: hoisted, a
broadcast scalar becomes a full array that every iteration reads from memory, where
in the loop it fuses into its consumers as a register value (Adam's constants
broadcast to each parameter's shape: 39 MB read per step of the VAE example); so do
equations reading only such expansions. They are also copied before the loop, where
the invariant work reading them is hoisted: W3 logistic's CG body compared the
invariant margins with a broadcast zero and took two logistic sigmoids of them, all
recomputed every iteration while the zero stayed in the loop (the copies no hoisted
equation reads are dropped by DCE).
"""
from __future__ import annotations

import math

from plait.core.effects import has_effects
from plait.core.graph import ClosedGraph, Graph, Literal, Var


def _map_graphs(v, fn):
    if isinstance(v, Graph):
        return fn(v)
    if isinstance(v, ClosedGraph):
        return ClosedGraph(fn(v.graph), v.consts)
    if isinstance(v, tuple):
        return tuple(_map_graphs(x, fn) for x in v)
    return v


def _expands(e) -> bool:
    """Whether ``e`` makes a larger array than it reads, cheaply (see the module doc)."""
    if not e.prim.has_rule("expands"):
        return False
    read = sum(math.prod(a.aval.shape) for a in e.inputs if isinstance(a, Var))
    return sum(math.prod(v.aval.shape) for v in e.outputs) > read


def _only_expanded(e, expanded: set) -> bool:
    """Whether ``e`` reads arrays and all of them are invariant expansions (a broadcast
    scalar times another: still a register value in the loop)."""
    vs = [a for a in e.inputs if isinstance(a, Var)]
    return bool(vs) and all(a in expanded for a in vs)


def _hoist(eqn) -> list:
    """The equations to run before ``eqn`` (hoisted out of its body), then ``eqn``."""
    spec = eqn.prim.rules.get("loop_invariants")
    if spec is None:
        return [eqn]
    pre = []
    for gname, cname, first in spec(eqn):
        g: Graph = eqn.params[gname]
        n = eqn.params[cname]
        consts = g.invars[:n]
        ren = {v: eqn.inputs[first + i] for i, v in enumerate(consts)}
        invariant = set(consts)
        expanded: set = set()          # outputs of invariant expansions (see the doc)
        hoisted, rest, copied = [], [], set()
        for e in g.eqns:
            if has_effects(e) or not all(isinstance(a, Literal) or a in invariant
                                         for a in e.inputs):
                rest.append(e)
                continue
            hoisted.append(e)
            invariant.update(e.outputs)
            if _expands(e) or _only_expanded(e, expanded):
                rest.append(e)             # stays in the loop; its copy feeds hoisted work
                copied.add(id(e))
                expanded.update(e.outputs)
        if all(id(e) in copied for e in hoisted):
            continue
        for e in hoisted:
            outs = [Var(v.aval) for v in e.outputs]
            pre.append(e.replace(inputs=[ren.get(a, a) if isinstance(a, Var) else a
                                         for a in e.inputs], outputs=outs))
            ren.update(zip(e.outputs, outs))
        used = {a for e in rest for a in e.inputs if isinstance(a, Var)}
        used |= {a for a in g.outvars if isinstance(a, Var)}
        new_consts = [v for e in hoisted if id(e) not in copied for v in e.outputs
                      if v in used]
        body = Graph([], consts + new_consts + g.invars[n:], rest, g.outvars, g.name)
        inputs = (list(eqn.inputs[:first + n]) + [ren[v] for v in new_consts] +
                  list(eqn.inputs[first + n:]))
        eqn = eqn.replace(inputs=inputs, params={**eqn.params, gname: body,
                                                 cname: n + len(new_consts)})
    return pre + [eqn]


def licm_graph(graph: Graph) -> Graph:
    """Hoist loop invariants in ``graph`` and (first) in all its sub-graphs."""
    eqns = []
    for e in graph.eqns:
        if any(isinstance(v, (Graph, ClosedGraph, tuple)) for v in e.params.values()):
            e = e.replace(params={k: _map_graphs(v, licm_graph) for k, v in e.params.items()})
        eqns.extend(_hoist(e))
    return Graph(graph.constvars, graph.invars, eqns, graph.outvars, graph.name)


def licm(closed: ClosedGraph) -> ClosedGraph:
    return ClosedGraph(licm_graph(closed.graph), closed.consts)
