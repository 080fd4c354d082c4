"""Primitives of rematerialization (``plait.checkpoint``): ``remat``, ``checkpoint_name``
and ``optimization_barrier``.

``remat`` calls a const-free sub-graph like ``jit_call``; its params say which values
its partial-evaluation rule may save for the backward pass (``policy``) and whether the
recomputation must be shielded from common-subexpression elimination (``prevent_cse``).
Its autodiff and batching rules live in ``plait/transforms/remat.py``. Under ``jit`` the
``inline`` pass inlines it; with ``prevent_cse`` the operands first pass through an
``optimization_barrier``, so the recomputed equations read other vars than the forward
pass's and CSE cannot merge them back. ``checkpoint_name`` tags a value for
``save_only_these_names``-style policies; it has the ``erase`` rule (the last graph pass
forwards its operand: no kernel sees it). ``optimization_barrier`` stays in the compiled
graph: it has no ``to_tile`` rule, so on the native backend it is a (free) host step that
ends the fused kernel before the recomputation. That is what lets the backend free the
forward pass's buffers before the backward pass recomputes them: without it the whole
gradient fuses into one kernel whose buffers are all allocated together
(``benchmarks/remat_memory.py --depth 16 --width 256 --batch 2048``: peak temporaries
252.6 MiB plain, 80.6 MiB with checkpoint per block, 196.6 MiB when the barrier was
erased after CSE).
"""
from __future__ import annotations

from plait.core.graph import Eqn, Graph, Var, run_graph
from plait.core.primitive import new_primitive
from plait.errors import PlaitTypeError

remat_p = new_primitive("remat", multiple_results=True)
checkpoint_name_p = new_primitive("checkpoint_name")
optimization_barrier_p = new_primitive("optimization_barrier", multiple_results=True)


def _remat_abstract(*avals, graph: Graph, policy, prevent_cse: bool, name: str):
    want = graph.in_avals
    if len(avals) != len(want) or any((a.shape, a.dtype) != (w.shape, w.dtype)
                                      for a, w in zip(avals, want)):
        raise PlaitTypeError(f"remat of {name}: operands {[a.str_short() for a in avals]} "
                             f"do not match the graph's inputs {[w.str_short() for w in want]}")
    return graph.out_avals


def _remat_inline(eqn: Eqn) -> tuple[list[Eqn], Graph, list]:
    """How the ``inline`` pass inlines a ``remat``: (equations before, graph, operands)."""
    if not eqn.params["prevent_cse"]:
        return [], eqn.params["graph"], eqn.inputs
    vars_in = [a for a in eqn.inputs if isinstance(a, Var)]
    if not vars_in:
        return [], eqn.params["graph"], eqn.inputs
    outs = [Var(a.aval) for a in vars_in]
    barrier = Eqn(optimization_barrier_p, vars_in, {}, outs, eqn.source)
    sub = dict(zip(vars_in, outs))
    return [barrier], eqn.params["graph"], [sub.get(a, a) if isinstance(a, Var) else a
                                            for a in eqn.inputs]


remat_p.def_abstract_eval(_remat_abstract)
remat_p.def_impl(lambda *args, graph, policy, prevent_cse, name: run_graph(graph, args))
remat_p.def_rule("inline", _remat_inline)

checkpoint_name_p.def_abstract_eval(lambda aval, *, name: aval)
checkpoint_name_p.def_impl(lambda x, *, name: x)
checkpoint_name_p.def_rule("erase", True)

optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
optimization_barrier_p.def_impl(lambda *xs: list(xs))
optimization_barrier_p.def_rule("forwards_operands", True)   # memory_analysis: no new buffer
