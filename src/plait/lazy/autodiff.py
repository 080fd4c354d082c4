"""Reverse mode over lazy arrays: record the function once, differentiate the recording.

``vjp``/``grad`` of a function of lazy arrays (at top level, outside any other
transformation) does not push a JVP interpreter through every operation. It runs
the user's function on *markers* — identity nodes standing for the primals — so
the forward pass is recorded like any lazy code, then cuts the recorded region
(the nodes made since the markers) into a graph and asks for its backward graph
(``vjp_graph``), cached by the region's structure. The pullback records one
``jit_call`` of that backward graph. At materialization the call is inlined and
its recomputed forward pass is merged with the recorded one by CSE (the markers
are identity conversions, which CSE forwards), so a training step is one fused
trace, and a step that repeats costs a Python run of the forward pass plus a
dictionary lookup, not a re-derivation of the gradient.

Values observed while the function runs (``print``, ``float()``) are materialized
as usual; their nodes keep their inputs and remember where they came from, so the
gradient still flows through them.
"""
from __future__ import annotations

from plait.core.call import jit_call_p
from plait.core.graph import ClosedGraph, Eqn, Graph, Var, closure_convert
from plait.core.graph_transforms import graph_transform
from plait.core.trace import Tracer, at_top_level
from plait.errors import PlaitTypeError, format_site, user_site
from plait.lax.elementwise import convert_element_type_p
from plait.lazy import modes
from plait.lazy.array import Const, LazyArray, Node, graph_lock, recording, symbolic
from plait.lru import LRUCache
from plait.runtime.once import Once

_BACKWARD = LRUCache()      # region structure -> backward graph; least recently used go first
_DERIVING = Once()          # backward graphs being derived


def clear() -> None:
    """Forget every cached backward graph."""
    _BACKWARD.clear()


def _marker(a: LazyArray, site) -> LazyArray:
    """A fresh symbolic array equal to ``a`` (an identity conversion node)."""
    aval = a._aval
    node = Node(convert_element_type_p, {"new_dtype": aval.dtype, "weak_type": aval.weak_type},
                [a._ref], [aval], site)
    return symbolic(node, 0)


class _Region:
    """The nodes recorded since ``start`` that the outputs depend on, as a graph.

    Inputs are the markers (in order) and then *outside* values: constants and
    nodes made before the region. ``key`` identifies the region by structure.
    """

    def __init__(self, out_refs: list, markers: dict, start: int):
        n_markers = len(markers)
        self.nodes: list[Node] = []
        self.wiring: list[tuple] = []
        self.outside: list = []             # refs of outside inputs
        outside_index: dict = {}
        index: dict[int, int] = {}          # id(node) -> position; -1 while on the stack
        structure = []

        def resolve(ref):
            """``(kind, value)``: a region node to visit, or a finished wiring atom."""
            if ref.__class__ is Const:
                o = ref.origin      # materialized inside the region: stands for its node
                if o is None or o[0].seq < start:
                    key = id(ref)
                    j = outside_index.get(key)
                    if j is None:
                        j = outside_index[key] = len(self.outside)
                        self.outside.append(ref)
                    return None, -1 - n_markers - j
                ref = o
            node, i = ref
            k = markers.get(id(node))
            if k is not None:
                return None, -1 - k
            if node.seq >= start:
                return node, i
            key = (id(node), i)
            j = outside_index.get(key)
            if j is None:
                j = outside_index[key] = len(self.outside)
                self.outside.append(ref)
            return None, -1 - n_markers - j

        def atom(resolved):
            node, w = resolved
            return w if node is None else (index[id(node)], w)

        def enter(node):
            index[id(node)] = -1
            ins = [resolve(r) for r in node.inputs]
            return node, ins, iter(ins)

        for root in out_refs:
            node, _ = resolve(root)
            if node is None or id(node) in index:
                continue
            stack = [enter(node)]
            while stack:
                node, ins, it = stack[-1]
                for child, _ in it:
                    if child is not None and id(child) not in index:
                        stack.append(enter(child))
                        break
                else:
                    stack.pop()
                    wiring = tuple([atom(r) for r in ins])
                    index[id(node)] = len(self.nodes)
                    self.nodes.append(node)
                    self.wiring.append(wiring)
                    structure.append((node.pkey(), wiring))
        self.outs = tuple([atom(resolve(r)) for r in out_refs])
        self.key = (tuple(structure), tuple(r[0].out_avals[r[1]] if r.__class__ is tuple
                                            else r.aval for r in self.outside),
                    self.outs)

    def graph(self, marker_avals: list, name: str) -> ClosedGraph:
        """The recorded region as a graph: markers, then outside values, to outputs."""
        invars = [Var(a) for a in marker_avals] + [Var(a) for a in self.key[1]]
        outs_of: list[list[Var]] = []
        eqns = []
        atom = lambda w: invars[-1 - w] if isinstance(w, int) else outs_of[w[0]][w[1]]
        for node, ins in zip(self.nodes, self.wiring):
            outs = [Var(a) for a in node.out_avals]
            outs_of.append(outs)
            eqns.append(Eqn(node.prim, [atom(w) for w in ins], node.params, outs,
                            format_site(node.source)))
        return ClosedGraph(Graph([], invars, eqns, [atom(w) for w in self.outs], name), [])


def _as_lazy(trace, x, what: str) -> LazyArray:
    if isinstance(x, LazyArray):
        return x
    if isinstance(x, Tracer):
        raise PlaitTypeError(f"{what} is a value of another transformation "
                             f"({x.aval.str_short()}) inside the differentiation of a function "
                             f"of lazy arrays; pass it in as an argument instead of closing "
                             f"over it")
    return trace.pure(x)


def record_vjp(trace, flat, primals: list, description: str):
    """``Trace.process_vjp`` for the lazy trace (see the module docstring)."""
    if modes.is_eager() or not at_top_level():
        return None
    site = user_site()
    lazy_primals = [_as_lazy(trace, p, "a primal") for p in primals]
    markers = [_marker(a, site) for a in lazy_primals]
    marker_nodes = {id(m._ref[0]): k for k, m in enumerate(markers)}
    start = markers[0]._ref[0].seq
    with recording():
        outs = flat(*markers)
    main = [_as_lazy(trace, o, f"an output of {description}") for o in outs[:flat.num_out]]
    with graph_lock():
        region = _Region([o._ref for o in main], marker_nodes, start)
    marker_avals = [a._aval for a in lazy_primals]
    key = (region.key, tuple(marker_avals))
    outside = [LazyArray(r, r.aval) if r.__class__ is Const
               else LazyArray(r, r[0].out_avals[r[1]]) for r in region.outside]
    out_avals = [o._aval.strip_weak() for o in main]

    def derive():
        closed = region.graph(marker_avals, f"region of {description}")
        backward = graph_transform("vjp_graph")(closed, len(markers))
        entry = _BACKWARD[key] = (closure_convert(backward), tuple(backward.consts))
        modes.bump("lazy_backward_graphs")
        return entry

    def pullback(cts: list) -> list:
        entry = _BACKWARD.get(key)
        if entry is None:       # one thread derives a region's backward graph
            entry, _ = _DERIVING.run(key, lambda: _BACKWARD.get(key), derive)
        graph, consts = entry
        cts = [c if c._aval.dtype == a.dtype else c.astype(a.dtype)
               for c, a in zip((_as_lazy(trace, c, "a cotangent") for c in cts), out_avals)]
        return jit_call_p.bind(*consts, *lazy_primals, *outside, *cts, graph=graph,
                               name=graph.name)

    return list(main) + list(outs[flat.num_out:]), pullback, out_avals
