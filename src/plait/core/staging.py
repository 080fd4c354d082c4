"""Staging: trace a Python function into a ``Graph`` (the trace behind ``jit``).

The staging main is *dynamic*: while it is active every primitive is recorded,
even on constant inputs. Concrete arrays the function closes over become const
vars; Python and NumPy scalars become literals; tracers of outer
transformations become const vars too, so that callers can pass them as
explicit operands (closure conversion).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.graph import Var, Literal, Eqn, Graph, ClosedGraph
from plait.core.trace import Trace, Tracer, new_main, full_raise, get_aval, concrete_value
from plait.errors import user_frame


class GraphTracer(Tracer):
    """A value being staged into a graph."""

    __slots__ = ("_aval",)

    def __init__(self, trace: "GraphTrace", aval: ShapedArray):
        self._trace = trace
        self._aval = aval

    @property
    def aval(self):
        return self._aval


class GraphBuilder:
    """Collects equations, inputs and constants of the graph being staged."""

    def __init__(self):
        self.eqns: list[Eqn] = []
        self.tracer_to_var: dict[int, Var] = {}
        self.const_tracers: dict[int, GraphTracer] = {}   # id(const) -> tracer
        self.const_vals: list = []
        self.const_vars: list[Var] = []
        self.keepalive: list = []

    def var_for(self, t: GraphTracer) -> Var:
        v = self.tracer_to_var.get(id(t))
        if v is None:
            v = Var(t.aval)
            self.tracer_to_var[id(t)] = v
            self.keepalive.append(t)
        return v

    def new_arg(self, trace, aval) -> GraphTracer:
        t = GraphTracer(trace, aval)
        self.var_for(t)
        return t

    def add_const(self, trace, val) -> GraphTracer:
        t = self.const_tracers.get(id(val))
        if t is None:
            t = GraphTracer(trace, get_aval(val))
            self.const_tracers[id(val)] = t
            self.const_vals.append(val)
            self.const_vars.append(self.var_for(t))
            self.keepalive.append(val)
        return t

    def build(self, in_tracers: Sequence[GraphTracer], out_vals: Sequence,
              name: str = "") -> ClosedGraph:
        invars = [self.tracer_to_var[id(t)] for t in in_tracers]
        outvars = [self.atom(o) for o in out_vals]
        return ClosedGraph(Graph(self.const_vars, invars, self.eqns, outvars, name),
                           self.const_vals)

    def atom(self, t):
        lit = getattr(t, "_literal", None)
        if lit is not None:
            return lit
        return self.tracer_to_var[id(t)]


class LiteralTracer(GraphTracer):
    """A staged scalar constant, inlined as a ``Literal`` wherever it is used."""

    __slots__ = ("_literal",)

    def __init__(self, trace, lit: Literal):
        super().__init__(trace, lit.aval)
        self._literal = lit




class GraphTrace(Trace):
    """Records every primitive as an equation of the graph under construction."""

    def pure(self, val):
        builder: GraphBuilder = self.main.payload
        if not isinstance(val, Tracer):
            if isinstance(val, (bool, int, float, complex, np.generic)) or (
                    isinstance(val, np.ndarray) and val.ndim == 0):
                aval = get_aval(val)
                return LiteralTracer(self, Literal(concrete_value(val), aval))
            aval = get_aval(val)
            if aval.ndim == 0:
                return LiteralTracer(self, Literal(concrete_value(val), aval))
        return builder.add_const(self, val)

    lift = pure

    def process_primitive(self, prim, tracers, params):
        builder: GraphBuilder = self.main.payload
        avals = [t.aval for t in tracers]
        out_avals = prim.rule("abstract_eval")(*avals, **params)
        if not prim.multiple_results:
            out_avals = [out_avals]
        outs = [GraphTracer(self, a) for a in out_avals]
        builder.eqns.append(Eqn(prim, [builder.atom(t) for t in tracers], params,
                                [builder.var_for(o) for o in outs], _source()))
        return outs


def _source() -> str:
    return user_frame()


def trace_to_graph(fun: Callable, in_avals: Sequence[ShapedArray],
                   description: str = "", name: str = "") -> tuple[ClosedGraph, list]:
    """Stage ``fun`` (flat arrays in, flat list out) on ``in_avals`` into a closed graph.

    Returns ``(closed_graph, out_values)``; ``out_values`` are the raw outputs (only
    useful to callers that need the Python objects, e.g. to check their types).
    """
    with new_main(GraphTrace, GraphBuilder(), dynamic=True,
                  description=description) as main:
        trace = GraphTrace(main)
        builder: GraphBuilder = main.payload
        in_tracers = [builder.new_arg(trace, a) for a in in_avals]
        outs = fun(*in_tracers)
        out_tracers = [full_raise(trace, o) for o in outs]
        closed = builder.build(in_tracers, out_tracers, name)
    return closed, outs
