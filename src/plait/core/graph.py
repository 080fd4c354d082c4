"""The Graph IR: typed SSA of primitive applications.

A ``Graph`` has const vars, input vars, equations and outputs. Each ``Eqn``
applies a primitive to ``Var``s or ``Literal``s with static ``params`` and
defines new ``Var``s. Higher-order primitives (``cond``, ``while_loop``,
``jit_call``, ...) carry ``ClosedGraph``s in their params. ``check_graph`` is the
type checker; ``eval_graph`` interprets a graph with ``bind`` (so it works under
every transformation).
"""
from __future__ import annotations

import contextvars
import itertools
import weakref
from typing import Any, Sequence

import numpy as np

from plait.errors import replay_sources, GraphTypeError
from plait.core.aval import ShapedArray, aval_of


class Var:
    """An SSA variable with an abstract value. Identity is object identity."""

    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self):
        return f"Var({self.count}:{self.aval.str_short()})"


class Literal:
    """A scalar constant inlined into an equation."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray | None = None):
        self.val = np.asarray(val) if not isinstance(val, np.ndarray) else val
        self.aval = aval if aval is not None else aval_of(self.val)
        if self.val.dtype != self.aval.dtype:
            self.val = self.val.astype(self.aval.dtype)

    def __repr__(self):
        return f"Literal({self.val.item()!r}:{self.aval.str_short()})"




class Eqn:
    """``outputs = prim[params](*inputs)``, with the user's source line."""

    __slots__ = ("prim", "inputs", "params", "outputs", "source")

    def __init__(self, prim, inputs: list, params: dict, outputs: list,
                 source: str | None = None):
        self.prim = prim
        self.inputs = list(inputs)
        self.params = params
        self.outputs = list(outputs)
        self.source = source

    def replace(self, **kw) -> "Eqn":
        d = dict(prim=self.prim, inputs=self.inputs, params=self.params,
                 outputs=self.outputs, source=self.source)
        d.update(kw)
        return Eqn(**d)

    def __repr__(self):
        return f"Eqn({self.prim.name}, {self.inputs} -> {self.outputs})"


class Graph:
    """A function as typed SSA: ``constvars``, ``invars`` -> ``eqns`` -> ``outvars``."""

    __slots__ = ("constvars", "invars", "eqns", "outvars", "name", "__weakref__")

    def __init__(self, constvars: list, invars: list, eqns: list, outvars: list,
                 name: str = ""):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)
        self.name = name

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self):
        from plait.core.printer import pp_graph
        return pp_graph(self)

    __repr__ = __str__


class ClosedGraph:
    """A graph together with the values of its const vars."""

    __slots__ = ("graph", "consts", "__weakref__")

    def __init__(self, graph: Graph, consts: Sequence[Any]):
        assert len(graph.constvars) == len(consts)
        self.graph = graph
        self.consts = list(consts)

    @property
    def in_avals(self):
        return self.graph.in_avals

    @property
    def out_avals(self):
        return self.graph.out_avals

    def __str__(self):
        from plait.core.printer import pp_graph
        return pp_graph(self.graph)

    __repr__ = __str__

    def __call__(self, *args):
        return eval_graph(self.graph, self.consts, *args)


def subgraphs_of(params: dict):
    """Yield every Graph/ClosedGraph held in an equation's params (also inside tuples)."""
    for v in params.values():
        yield from _graphs_in(v)


def _graphs_in(v):
    if isinstance(v, ClosedGraph):
        yield v.graph
    elif isinstance(v, Graph):
        yield v
    elif isinstance(v, (tuple, list)):
        for x in v:
            yield from _graphs_in(x)


def closure_convert(closed: ClosedGraph) -> Graph:
    """A graph whose const vars became leading input vars (consts passed as operands)."""
    g = closed.graph
    return Graph([], g.constvars + g.invars, g.eqns, g.outvars, g.name)


_CONVERTED: "weakref.WeakKeyDictionary[ClosedGraph, Graph]" = weakref.WeakKeyDictionary()


def closure_convert_cached(closed: ClosedGraph) -> Graph:
    """``closure_convert(closed)``, memoized per closed graph, so the graphs derived from
    it (jvp, transpose, batch) and its compiles are reused across calls."""
    g = _CONVERTED.get(closed)
    if g is None:
        g = _CONVERTED[closed] = closure_convert(closed)
    return g


def eval_graph(graph: Graph, consts: Sequence, *args) -> list:
    """Interpret ``graph`` by binding each equation under the current traces."""
    env: dict[Var, Any] = {}

    def read(a):
        return a.val if isinstance(a, Literal) else env[a]

    if len(args) != len(graph.invars):
        raise TypeError(f"graph takes {len(graph.invars)} inputs, got {len(args)}")
    env.update(zip(graph.constvars, consts))
    env.update(zip(graph.invars, args))
    replaying = replay_sources()
    for eqn in graph.eqns:
        replaying.append(eqn.source)
        try:
            outs = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        finally:
            replaying.pop()
        if not eqn.prim.multiple_results:
            outs = [outs]
        env.update(zip(eqn.outputs, outs))
    return [read(a) for a in graph.outvars]


def check_graph(graph: Graph, _outer: set | None = None) -> None:
    """Type-check a graph: every var defined once before use, every eqn's output
    types equal its primitive's abstract_eval, sub-graphs checked recursively."""
    defined: set[Var] = set()

    def define(v):
        if not isinstance(v, Var):
            raise GraphTypeError(f"binder {v!r} is not a Var")
        if v in defined:
            raise GraphTypeError(f"variable {v!r} defined twice")
        defined.add(v)

    def use(a, where):
        if isinstance(a, Literal):
            return a.aval
        if a not in defined:
            raise GraphTypeError(f"variable {a!r} used before definition in {where}")
        return a.aval

    for v in graph.constvars + graph.invars:
        define(v)
    for eqn in graph.eqns:
        in_avals = [use(a, eqn.prim.name) for a in eqn.inputs]
        for sub in subgraphs_of(eqn.params):
            check_graph(sub)
        out = eqn.prim.rule("abstract_eval")(*in_avals, **eqn.params)
        out = list(out) if eqn.prim.multiple_results else [out]
        if len(out) != len(eqn.outputs):
            raise GraphTypeError(f"{eqn.prim.name}: {len(eqn.outputs)} outputs, "
                                 f"abstract_eval gives {len(out)}")
        for o, v in zip(out, eqn.outputs):
            if (o.shape, o.dtype) != (v.aval.shape, v.aval.dtype):
                raise GraphTypeError(f"{eqn.prim.name}: output typed {v.aval.str_short()}"
                                     f" but abstract_eval gives {o.str_short()}")
            define(v)
    for a in graph.outvars:
        use(a, "outputs")


_GRAPH_RUNNER: contextvars.ContextVar = contextvars.ContextVar("plait_graph_runner",
                                                               default=None)


def run_graph(graph: Graph, args: Sequence) -> list:
    """Run a const-free sub-graph on NumPy values (used by higher-order impls).

    A backend that is executing can install a faster runner with
    :func:`set_graph_runner` (the native backend runs compiled sub-graphs); the
    default is :func:`eval_graph_impl`.
    """
    runner = _GRAPH_RUNNER.get()
    if runner is None:
        return eval_graph_impl(graph, [], args)
    return runner(graph, args)


def set_graph_runner(runner):
    """Install ``runner(graph, args) -> list`` for the current context; returns a reset token."""
    return _GRAPH_RUNNER.set(runner)


def reset_graph_runner(token) -> None:
    _GRAPH_RUNNER.reset(token)


def eval_graph_impl(graph: Graph, consts: Sequence, args: Sequence) -> list:
    """Reference evaluation: apply each equation's ``impl`` to NumPy values (no tracing)."""
    env: dict[Var, Any] = dict(zip(graph.constvars, consts))
    env.update(zip(graph.invars, args))
    for eqn in graph.eqns:
        ins = [a.val if isinstance(a, Literal) else env[a] for a in eqn.inputs]
        outs = eqn.prim.rule("impl")(*ins, **eqn.params)
        if eqn.prim.multiple_results:
            for v, o in zip(eqn.outputs, outs):
                env[v] = np.asarray(o)
        else:
            env[eqn.outputs[0]] = np.asarray(outs)
    return [a.val if isinstance(a, Literal) else env[a] for a in graph.outvars]
