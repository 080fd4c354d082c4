"""Partial evaluation: compute what is known now, stage what is unknown into a Graph.

``PartialEvalTrace`` sees values that are either *known* (a value of a lower
trace: a concrete array, or a tracer of an enclosing ``jit``) or *unknown* (to be
computed later). A primitive whose inputs are all known is simply applied (it
runs eagerly, or stages into the enclosing ``jit`` graph); otherwise it is recorded
as an equation of the unknown graph, whose const vars are the known values it
uses (the *residuals*). Linearization is partial evaluation of a JVP with the
primals known and the tangents unknown.

Higher-order primitives (``jit_call``, ``cond``, ``scan``, ...) may register a
``partial_eval`` rule ``rule(trace, tracers, **params) -> list[PETracer]`` to split
their sub-graphs with :func:`partial_eval_graph` instead of being staged whole.
"""
from __future__ import annotations

import weakref
from typing import Sequence

from plait.core.aval import ShapedArray
from plait.core.graph import Var, Literal, Eqn, Graph, ClosedGraph, eval_graph
from plait.core.staging import trace_to_graph
from plait.core.trace import Trace, Tracer, new_main, full_raise, get_aval, concrete_value
from plait.core.graph_transforms import register_graph_transform
from plait.errors import user_frame

_UNKNOWN = object()


class PETracer(Tracer):
    """A known value (``known``) or an unknown one (staged; only its aval is known)."""

    __slots__ = ("known", "_aval")

    def __init__(self, trace: "PartialEvalTrace", aval: ShapedArray, known=_UNKNOWN):
        self._trace = trace
        self._aval = aval
        self.known = known

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    @property
    def is_known(self) -> bool:
        return self.known is not _UNKNOWN

    def full_lower(self):
        return self.known if self.known is not _UNKNOWN else self


class PEBuilder:
    """The unknown graph under construction: its inputs, equations and residuals."""

    def __init__(self):
        self.eqns: list[Eqn] = []
        self.var_of: dict[int, Var] = {}
        self.res_vars: dict[int, Var] = {}
        self.res_vals: list = []
        self.keepalive: list = []

    def new_arg(self, trace: "PartialEvalTrace", aval: ShapedArray) -> PETracer:
        """A fresh unknown input of the graph being built."""
        t = PETracer(trace, aval)
        self.var_of[id(t)] = Var(aval)
        self.keepalive.append(t)
        return t

    def atom(self, t: PETracer):
        """The graph atom for a tracer: its var, a literal, or a residual const var."""
        if not t.is_known:
            return self.var_of[id(t)]
        val = t.known
        if not isinstance(val, Tracer) and get_aval(val).ndim == 0:
            return Literal(concrete_value(val), get_aval(val))
        v = self.res_vars.get(id(val))
        if v is None:
            v = self.res_vars[id(val)] = Var(get_aval(val))
            self.res_vals.append((v, val))
            self.keepalive.append(val)
        return v

    def stage(self, trace, prim, tracers, params, out_avals) -> list[PETracer]:
        """Record ``prim`` applied to ``tracers`` as an equation; return unknown outputs."""
        ins = [self.atom(t) for t in tracers]
        outs = [PETracer(trace, a) for a in out_avals]
        out_vars = [Var(a) for a in out_avals]
        for t, v in zip(outs, out_vars):
            self.var_of[id(t)] = v
            self.keepalive.append(t)
        self.eqns.append(Eqn(prim, ins, params, out_vars, user_frame()))
        return outs

    def build(self, in_tracers: Sequence[PETracer], out_tracers: Sequence[PETracer],
              name: str = "") -> tuple[Graph, list]:
        """The unknown graph (const vars = residuals) and the residual values.

        Only equations the outputs depend on are kept (dead code is dropped here).
        """
        invars = [self.var_of[id(t)] for t in in_tracers]
        outvars = [self.atom(t) for t in out_tracers]
        live = {v for v in outvars if isinstance(v, Var)}
        eqns = []
        for eqn in reversed(self.eqns):
            if any(o in live for o in eqn.outputs):
                eqns.append(eqn)
                live.update(a for a in eqn.inputs if isinstance(a, Var))
        eqns.reverse()
        res = [(v, val) for v, val in self.res_vals if v in live]
        graph = Graph([v for v, _ in res], invars, eqns, outvars, name)
        return graph, [val for _, val in res]


class PartialEvalTrace(Trace):
    """Applies primitives on known values; stages the rest into ``main.payload``."""

    def pure(self, val) -> PETracer:
        return PETracer(self, get_aval(val), val)

    lift = pure

    @property
    def builder(self) -> PEBuilder:
        return self.main.payload

    def new_unknown(self, aval: ShapedArray) -> PETracer:
        return self.builder.new_arg(self, aval)

    def process_primitive(self, prim, tracers, params):
        if all(t.is_known for t in tracers):
            outs = prim.bind(*[t.known for t in tracers], **params)
            return [self.pure(o) for o in (outs if prim.multiple_results else [outs])]
        rule = prim.rules.get("partial_eval")
        if rule is not None:
            return rule(self, tracers, **params)
        return self.stage(prim, tracers, params)

    def stage(self, prim, tracers, params, out_avals=None) -> list[PETracer]:
        """Stage ``prim`` into the unknown graph (all outputs unknown)."""
        if out_avals is None:
            out_avals = prim.rule("abstract_eval")(*[t.aval for t in tracers], **params)
            out_avals = list(out_avals) if prim.multiple_results else [out_avals]
        return self.builder.stage(self, prim, tracers, params, out_avals)


# ---------------------------------------------------------------------------
# partial evaluation of a whole graph (for higher-order primitives)

_PE_CACHE: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()


def partial_eval_graph(graph: Graph | ClosedGraph, in_unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False
                       ) -> tuple[ClosedGraph, Graph, list[bool], int]:
    """Split ``graph`` into a known part and an unknown part.

    Returns ``(known, unknown, out_unknowns, num_res)``:

    - ``known``: a ClosedGraph taking the known inputs (in order) and returning the
      known outputs followed by ``num_res`` residuals;
    - ``unknown``: a Graph without const vars taking the residuals followed by the
      unknown inputs and returning the unknown outputs;
    - ``out_unknowns[i]``: whether output ``i`` is computed by ``unknown``.

    An output listed in ``instantiate`` is made unknown even when it is known (it is
    then passed through as a residual). Results are cached per (graph, masks).
    """
    n_out = len((graph.graph if isinstance(graph, ClosedGraph) else graph).outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    key = (tuple(bool(u) for u in in_unknowns), tuple(inst))
    cacheable = isinstance(graph, Graph) and not graph.constvars
    if cacheable:
        hit = _PE_CACHE.setdefault(graph, {}).get(key)
        if hit is not None:
            return hit
    result = _partial_eval_graph(graph, list(key[0]), inst)
    if cacheable:
        _PE_CACHE[graph][key] = result
    return result


def _partial_eval_graph(graph, in_unknowns, inst):
    if isinstance(graph, ClosedGraph):
        g, consts = graph.graph, graph.consts
    else:
        g, consts = graph, []
    known_avals = [v.aval for v, u in zip(g.invars, in_unknowns) if not u]
    box = {}

    def known_fun(*known_vals):
        with new_main(PartialEvalTrace, PEBuilder(),
                      description="partial evaluation of a sub-graph") as main:
            trace = PartialEvalTrace(main)
            vals = iter(known_vals)
            ins = [trace.new_unknown(v.aval) if u else trace.pure(next(vals))
                   for v, u in zip(g.invars, in_unknowns)]
            outs = [full_raise(trace, o) for o in eval_graph(g, consts, *ins)]
            out_unknowns = [not o.is_known or i for o, i in zip(outs, inst)]
            unknown, residuals = main.payload.build(
                [t for t, u in zip(ins, in_unknowns) if u],
                [o for o, u in zip(outs, out_unknowns) if u], g.name)
            box["unknown"], box["out_unknowns"] = unknown, out_unknowns
            known_outs = [o.known for o, u in zip(outs, out_unknowns) if not u]
        return known_outs + residuals

    known, _ = trace_to_graph(known_fun, known_avals, description="partial evaluation",
                              name=g.name)
    unk = box["unknown"]
    unknown = Graph([], unk.constvars + unk.invars, unk.eqns, unk.outvars, unk.name)
    return known, unknown, box["out_unknowns"], len(unk.constvars)


register_graph_transform("partial_eval_graph", partial_eval_graph)
