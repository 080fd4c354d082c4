"""``jit_call``: the call of a staged sub-graph (what a nested ``jit`` becomes).

Operands are the sub-graph's inputs; values it closes over were turned into
leading operands by closure conversion, so ``graph`` has no const vars. The
``impl`` is the reference evaluation; ``plait.api`` replaces it with a cached
compile on the configured backend.
"""
from __future__ import annotations

from plait.core.graph import Graph, run_graph
from plait.core.primitive import new_primitive
from plait.errors import PlaitTypeError

jit_call_p = new_primitive("jit_call", multiple_results=True)


def _abstract(*avals, graph: Graph, name: str):
    want = graph.in_avals
    if len(avals) != len(want) or any((a.shape, a.dtype) != (w.shape, w.dtype)
                                      for a, w in zip(avals, want)):
        raise PlaitTypeError(f"jit_call of {name}: operands "
                             f"{[a.str_short() for a in avals]} do not match the graph's "
                             f"inputs {[w.str_short() for w in want]}")
    return graph.out_avals


jit_call_p.def_abstract_eval(_abstract)
jit_call_p.def_impl(lambda *args, graph, name: run_graph(graph, args))
