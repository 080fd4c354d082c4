"""Transposition: run a linear graph backwards, accumulating cotangents.

``backward_pass`` interprets a graph whose inputs are partly *linear* (passed as
:class:`~plait.core.ad_util.UndefinedPrimal`): equations that do not depend on a
linear input are evaluated forward; the others are visited in reverse order and
each primitive's ``transpose`` rule maps the cotangent of its outputs to
cotangents of its linear inputs. Symbolic ``Zero`` cotangents are never built,
and an equation whose output cotangents are all zero is skipped. The operations
bind under the current traces, so the backward pass stages into an enclosing
``jit`` and is itself differentiable.
"""
from __future__ import annotations

import weakref
from typing import Sequence

from plait.core.ad_util import Zero, UndefinedPrimal
from plait.core.graph import Var, Literal, Graph, ClosedGraph
from plait.core.staging import trace_to_graph
from plait.core.graph_transforms import register_graph_transform
from plait.lax._ad_helpers import add_tangents, instantiate


def backward_pass(graph: Graph, consts: Sequence, args: Sequence,
                  cts_out: Sequence) -> list:
    """Cotangents of the linear inputs of ``graph``.

    ``args`` holds a value for each non-linear input and an ``UndefinedPrimal`` for
    each linear one; ``cts_out`` holds one cotangent (or ``Zero``) per output. The
    result has one entry (a cotangent or ``Zero``) per linear input, in order.
    """
    primal: dict[Var, object] = dict(zip(graph.constvars, consts))
    linear: set[Var] = set()
    for v, a in zip(graph.invars, args):
        if isinstance(a, UndefinedPrimal):
            linear.add(v)
        else:
            primal[v] = a

    def read(a):
        return a.val if isinstance(a, Literal) else primal[a]

    lin_eqns = []
    for eqn in graph.eqns:
        if any(isinstance(a, Var) and a in linear for a in eqn.inputs):
            lin_eqns.append(eqn)
            linear.update(eqn.outputs)
        else:
            outs = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
            primal.update(zip(eqn.outputs, outs if eqn.prim.multiple_results else [outs]))

    ct_env: dict[Var, object] = {}

    def write(v, ct):
        if isinstance(v, Var) and v in linear and ct is not None and not isinstance(ct, Zero):
            ct_env[v] = add_tangents(ct_env.get(v), ct)

    for v, ct in zip(graph.outvars, cts_out):
        write(v, ct)
    for eqn in reversed(lin_eqns):
        cts = [ct_env.pop(o, None) for o in eqn.outputs]
        if all(c is None for c in cts):
            continue
        cts = [Zero(o.aval.strip_weak()) if c is None else c for c, o in zip(cts, eqn.outputs)]
        invals = [UndefinedPrimal(a.aval) if isinstance(a, Var) and a in linear else read(a)
                  for a in eqn.inputs]
        rule = eqn.prim.rule("transpose")
        cts_in = rule(cts if eqn.prim.multiple_results else cts[0], *invals, **eqn.params)
        for a, ct in zip(eqn.inputs, cts_in):
            write(a, ct)
    return [ct_env.get(v, Zero(v.aval.strip_weak()))
            for v, a in zip(graph.invars, args) if isinstance(a, UndefinedPrimal)]


_T_CACHE: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()


def transpose_graph(graph: Graph, linear: Sequence[bool],
                    ct_zero: Sequence[bool] = ()) -> ClosedGraph:
    """The transpose of ``graph`` (no const vars) as a new graph.

    The result takes the non-linear inputs (in order) followed by the cotangents of
    the outputs not marked in ``ct_zero``, and returns one cotangent per linear
    input (zeros instantiated). Its consts are usually empty; callers that need a
    graph without consts use ``closure_convert``. Cached per (graph, masks).
    """
    ct_zero = list(ct_zero) or [False] * len(graph.outvars)
    key = (tuple(map(bool, linear)), tuple(map(bool, ct_zero)))
    hit = _T_CACHE.setdefault(graph, {}).get(key)
    if hit is not None:
        return hit
    nonlin_avals = [v.aval for v, l in zip(graph.invars, linear) if not l]
    ct_avals = [v.aval.strip_weak() for v, z in zip(graph.outvars, ct_zero) if not z]

    def fun(*vals):
        nonlin, cts = iter(vals[:len(nonlin_avals)]), iter(vals[len(nonlin_avals):])
        args = [UndefinedPrimal(v.aval) if l else next(nonlin)
                for v, l in zip(graph.invars, linear)]
        cts_out = [Zero(v.aval.strip_weak()) if z else next(cts)
                   for v, z in zip(graph.outvars, ct_zero)]
        return [instantiate(c) for c in backward_pass(graph, [], args, cts_out)]

    closed, _ = trace_to_graph(fun, nonlin_avals + ct_avals,
                               description="transposition of a sub-graph",
                               name=f"transpose({graph.name})")
    _T_CACHE[graph][key] = closed
    return closed


register_graph_transform("transpose_graph", transpose_graph)
