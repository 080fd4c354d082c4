"""Hashable, structural keys for node params (part of the trace-cache key).

Params are compared by value; sub-graphs (``jit_call``, ``cond``, ``scan``, ...)
by their printed text, so a control-flow op traced afresh each step still hits the
cache; sub-graph constants by value.
"""
from __future__ import annotations

import weakref

import numpy as np

from plait.core.graph import Graph, ClosedGraph
from plait.core.trace import Tracer, concrete_value

_GRAPH_TEXT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _freeze(v):
    """A hashable, structural stand-in for a param value."""
    if isinstance(v, Graph):
        t = _GRAPH_TEXT.get(v)
        if t is None:
            from plait.core.printer import pp_graph
            t = _GRAPH_TEXT[v] = pp_graph(v)
        return ("graph", t)
    if isinstance(v, ClosedGraph):
        return ("closed", _freeze(v.graph), tuple(_freeze(_const_value(c)) for c in v.consts))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _freeze(x)) for k, x in sorted(v.items()))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype, v.shape, v.tobytes())
    try:
        hash(v)
        return v
    except TypeError:
        return ("object", id(v), v)


def _const_value(c):
    """A sub-graph constant as NumPy (its value is part of the structure)."""
    if isinstance(c, Tracer):
        return ("tracer", object())       # never equal: such a trace is not reused
    return concrete_value(c)


def freeze_params(params: dict):
    """The params of a node as a hashable, structure-based key (graphs by their text)."""
    items = tuple(sorted(params.items())) if len(params) > 1 else tuple(params.items())
    for _, v in items:
        if _has_graph(v):
            break
    else:
        try:
            hash(items)
            return items
        except TypeError:
            pass
    return tuple((k, _freeze(v)) for k, v in items)


def _has_graph(v) -> bool:
    t = type(v)
    if t is Graph or t is ClosedGraph:
        return True
    if t is tuple or t is list:
        for x in v:
            tx = type(x)
            if tx is Graph or tx is ClosedGraph or ((tx is tuple or tx is list) and _has_graph(x)):
                return True
    return False
