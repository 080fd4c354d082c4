"""Forward-mode autodiff: the JVP interpreter (``JVPTrace``) and ``jvp_flat``.

A ``JVPTracer`` carries a primal value and its tangent; a tangent may be the
symbolic :class:`~plait.core.ad_util.Zero`, so values that do not depend on the
differentiated inputs cost nothing. Each primitive's ``jvp`` rule (written with
``plait.lax`` ops, so that it is itself differentiable and stages under ``jit``)
maps primals and tangents to the output primal and tangent. Values of integer or
boolean dtype always have Zero tangents.
"""
from __future__ import annotations

import weakref
from typing import Callable, Sequence

import numpy as np

from plait.core.ad_util import Zero
from plait.core.graph import Graph, ClosedGraph, eval_graph
from plait.core.staging import trace_to_graph
from plait.core.trace import (Trace, Tracer, new_main, full_raise, full_lower, get_aval,
                              wrap_array)
from plait.core.graph_transforms import register_graph_transform
from plait.lax._ad_helpers import tangent_aval, differentiable
from plait.lax._ad_helpers import instantiate as instantiate_zeros
from plait.lax._base import as_operand


class JVPTracer(Tracer):
    """A primal value together with its tangent (an array, a tracer or a Zero)."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace: "JVPTrace", primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def full_lower(self):
        if isinstance(self.tangent, Zero):
            return full_lower(self.primal)
        return self


def _zero_like(val) -> Zero:
    return Zero(tangent_aval(get_aval(val)))


def _as_primal(val):
    """A primal as an array: a Python scalar becomes a weak 0-d array, a NumPy scalar a
    0-d array of its dtype, so jvp rules can mix it with Python constants
    (``add(x, 1)``) as they do with arrays."""
    if isinstance(val, np.generic):
        return wrap_array(np.asarray(val), False)
    return as_operand(val)


class JVPTrace(Trace):
    """Applies each primitive's ``jvp`` rule to (primal, tangent) pairs."""

    def pure(self, val) -> JVPTracer:
        val = _as_primal(val)
        return JVPTracer(self, val, _zero_like(val))

    lift = pure

    def process_primitive(self, prim, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(isinstance(t, Zero) for t in tangents):
            outs = prim.bind(*primals, **params)
            outs = outs if prim.multiple_results else [outs]
            return [JVPTracer(self, o, _zero_like(o)) for o in outs]
        p_out, t_out = prim.rule("jvp")(primals, tangents, **params)
        if not prim.multiple_results:
            p_out, t_out = [p_out], [t_out]
        return [JVPTracer(self, p, t if differentiable(get_aval(p)) else _zero_like(p))
                for p, t in zip(p_out, t_out)]


def jvp_flat(fun: Callable, primals: Sequence, tangents: Sequence,
             description: str = "jvp") -> tuple[list, list]:
    """Run ``fun`` (flat arrays in, flat list out) on primals with tangents.

    Tangents of non-differentiable (integer/bool) primals are forced to Zero.
    Returns ``(primal_outs, tangent_outs)``; tangent outs may be ``Zero``.
    """
    with new_main(JVPTrace, description=description) as main:
        trace = JVPTrace(main)
        primals = [_as_primal(p) for p in primals]
        ins = [JVPTracer(trace, p, t if differentiable(get_aval(p)) else _zero_like(p))
               for p, t in zip(primals, tangents)]
        outs = [full_raise(trace, o) for o in fun(*ins)]
        return [o.primal for o in outs], [o.tangent for o in outs]


# ---------------------------------------------------------------------------
# JVP of a whole graph (for higher-order primitives)

_JVP_CACHE: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()


def jvp_graph(graph: Graph | ClosedGraph, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[ClosedGraph, list[bool]]:
    """The JVP of ``graph`` as a new graph.

    The result takes all primal inputs followed by the tangents of the inputs marked
    in ``nonzeros``, and returns all primal outputs followed by the tangents of the
    outputs marked in the returned ``out_nonzeros`` (outputs listed in
    ``instantiate`` always get a tangent, zeros if need be). Cached per (graph, masks).
    """
    g, consts = (graph.graph, graph.consts) if isinstance(graph, ClosedGraph) else (graph, [])
    inst = ([instantiate] * len(g.outvars) if isinstance(instantiate, bool)
            else list(instantiate))
    key = (tuple(map(bool, nonzeros)), tuple(map(bool, inst)))
    cacheable = isinstance(graph, Graph) and not graph.constvars
    if cacheable:
        hit = _JVP_CACHE.setdefault(graph, {}).get(key)
        if hit is not None:
            return hit
    n = len(g.invars)
    t_avals = [tangent_aval(v.aval) for v, nz in zip(g.invars, nonzeros) if nz]
    box = {}

    def fun(*vals):
        tans = iter(vals[n:])
        tangents = [next(tans) if nz else Zero(tangent_aval(v.aval))
                    for v, nz in zip(g.invars, nonzeros)]
        p_out, t_out = jvp_flat(lambda *a: eval_graph(g, consts, *a), vals[:n], tangents,
                                description="jvp of a sub-graph")
        t_out = [instantiate_zeros(t) if i else t for t, i in zip(t_out, inst)]
        box["nz"] = [not isinstance(t, Zero) for t in t_out]
        return list(p_out) + [t for t in t_out if not isinstance(t, Zero)]

    closed, _ = trace_to_graph(fun, list(g.in_avals) + t_avals,
                               description="jvp of a sub-graph", name=f"jvp({g.name})")
    result = (closed, box["nz"])
    if cacheable:
        _JVP_CACHE[graph][key] = result
    return result


register_graph_transform("jvp_graph", jvp_graph)
