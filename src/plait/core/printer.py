"""Deterministic text form of a Graph (golden-testable).

::

    graph(a:f32[3,4], b:f32[4]) {
      c:f32[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4)] b
      d:f32[3,4] = add a c
      return (d)
    }

Variables are named ``a, b, ..., z, ba, bb, ...`` in order of definition;
params print sorted by name; sub-graphs print nested and indented.
"""
from __future__ import annotations

import numpy as np

from plait.core.graph import Graph, ClosedGraph, Literal, Var


def _name(i: int) -> str:
    s = ""
    while True:
        s = chr(ord("a") + i % 26) + s
        i //= 26
        if i == 0:
            return s


class _Namer:
    def __init__(self):
        self.names: dict[Var, str] = {}

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            val = v.val.item() if v.val.ndim == 0 else v.val.tolist()
            return f"{val!r}:{v.aval.str_short()}"
        if v not in self.names:
            self.names[v] = _name(len(self.names))
        return self.names[v]

    def binder(self, v: Var) -> str:
        return f"{self(v)}:{v.aval.str_short()}"


def _fmt_param(v, namer, indent) -> str:
    if isinstance(v, ClosedGraph):
        consts = "" if not v.consts else f" consts={len(v.consts)}"
        return _pp(v.graph, namer, indent + 2).lstrip() + consts
    if isinstance(v, Graph):
        return _pp(v, namer, indent + 2).lstrip()
    if isinstance(v, (tuple, list)) and any(isinstance(x, (Graph, ClosedGraph)) for x in v):
        inner = ",\n".join(" " * (indent + 4) + _fmt_param(x, namer, indent + 2) for x in v)
        return "(\n" + inner + ")"
    if isinstance(v, np.dtype):
        from plait.core.dtypes import dtype_short
        return dtype_short(v)
    if isinstance(v, type):
        return v.__name__
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return repr(v)


def _pp(graph: Graph, namer: _Namer, indent: int) -> str:
    pad = " " * indent
    cs = " ".join(namer.binder(v) for v in graph.constvars)
    ins = ", ".join(namer.binder(v) for v in graph.invars)
    head = f"{pad}graph({('[' + cs + '] ') if cs else ''}{ins}) {{"
    lines = [head]
    for eqn in graph.eqns:
        outs = " ".join(namer.binder(v) for v in eqn.outputs) or "_"
        if eqn.params:
            ps = " ".join(f"{k}={_fmt_param(eqn.params[k], namer, indent + 2)}"
                          for k in sorted(eqn.params))
            ps = f"[{ps}]"
        else:
            ps = ""
        args = " ".join(namer(a) for a in eqn.inputs)
        lines.append(f"{pad}  {outs} = {eqn.prim.name}{ps} {args}".rstrip())
    lines.append(f"{pad}  return ({', '.join(namer(a) for a in graph.outvars)})")
    lines.append(pad + "}")
    return "\n".join(lines)


def pp_graph(graph: Graph | ClosedGraph) -> str:
    """Print a graph (or closed graph) deterministically."""
    if isinstance(graph, ClosedGraph):
        graph = graph.graph
    return _pp(graph, _Namer(), 0)
