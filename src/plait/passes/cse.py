"""Common-subexpression elimination: equal primitive, params and inputs -> one equation.

Copies are propagated first: an equation whose primitive's ``is_copy`` rule says its one
output equals its one input (``is_copy(in_aval, **params) -> bool``; a
``convert_element_type`` to the dtype its operand already has, as the lazy runtime's
differentiation markers are) is dropped and its uses read the operand instead, so the
recorded forward pass and a backward graph's recomputation of it meet.

Constants holding equal host values (same type, equal bytes) become one constant first:
a function that converts the same NumPy array at each use closes over equal copies
(W3's logistic step: ``X`` once under ``grad`` and once under the ``jvp`` of the
Hessian-vector product), and only once they are one do the products reading them merge.
"""
from __future__ import annotations

import numpy as np

from plait.core.effects import has_effects
from plait.core.graph import ClosedGraph, Graph, Literal, Var, subgraphs_of
from plait.core.trace import RUNTIME, concrete_value


def _key_atom(a, rename):
    if isinstance(a, Literal):
        return ("lit", a.aval, a.val.tobytes())
    return rename.get(a, a)


def _params_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def _sub_graphs(params: dict, memo: dict) -> dict:
    """``params`` with every sub-graph (also inside tuples) CSE'd, each graph once."""
    def conv(v):
        if isinstance(v, Graph):
            if id(v) not in memo:
                memo[id(v)] = (v, cse_graph(v, memo))
            return memo[id(v)][1]
        if isinstance(v, tuple) and any(isinstance(x, Graph) for x in v):
            return tuple(conv(x) for x in v)
        return v
    return {k: conv(v) for k, v in params.items()}


def cse_graph(graph: Graph, _memo: dict | None = None,
              rename: dict[Var, Var] | None = None) -> Graph:
    """CSE within one graph and, separately, within each of its sub-graphs; ``rename``
    maps variables of ``graph`` to the ones replacing them."""
    memo = {} if _memo is None else _memo
    rename = {} if rename is None else dict(rename)
    seen: dict = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = [rename.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs]
        is_copy = eqn.prim.rules.get("is_copy")
        if is_copy is not None and is_copy(inputs[0].aval, **eqn.params):
            rename[eqn.outputs[0]] = inputs[0]
            continue
        if next(subgraphs_of(eqn.params), None) is not None:
            eqn = eqn.replace(params=_sub_graphs(eqn.params, memo))
        pk = None if has_effects(eqn) else _params_key(eqn.params)   # effects never merge
        if pk is not None:
            key = (eqn.prim, tuple(_key_atom(a, rename) for a in inputs), pk)
            prev = seen.get(key)
            if prev is not None:
                for o, p in zip(eqn.outputs, prev.outputs):
                    rename[o] = p
                continue
            new = eqn.replace(inputs=inputs)
            seen[key] = new
        else:
            new = eqn.replace(inputs=inputs)
        eqns.append(new)
    outvars = [rename.get(a, a) if isinstance(a, Var) else a for a in graph.outvars]
    return Graph(graph.constvars, graph.invars, eqns, outvars, graph.name)


def _host_value(val) -> np.ndarray | None:
    """The NumPy value of a constant held on the host (a NumPy array or the runtime's
    own array type, not a device array's subclass), else None."""
    if type(val) is np.ndarray or (RUNTIME.array_type is not None
                                    and type(val) is RUNTIME.array_type):
        return concrete_value(val)
    return None


def _equal_consts(closed: ClosedGraph) -> dict[Var, Var]:
    """Each constvar whose value equals an earlier one's (same abstract value, host
    values with equal bytes) -> that earlier constvar. Only constants sharing an
    abstract value are compared, so most graphs read no constant's bytes."""
    groups: dict = {}
    for v, val in zip(closed.graph.constvars, closed.consts):
        groups.setdefault(v.aval, []).append((v, val))
    out: dict[Var, Var] = {}
    for members in groups.values():
        kept: list[tuple[Var, np.ndarray]] = []
        for v, val in members:
            host = _host_value(val)
            if host is None:
                continue
            raw = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
            same = next((k for k, r in kept if np.array_equal(r, raw)), None)
            if same is None:
                kept.append((v, raw))
            else:
                out[v] = same
    return out


def cse(closed: ClosedGraph) -> ClosedGraph:
    """CSE of ``closed`` after merging its equal constants."""
    dup = _equal_consts(closed)
    g = closed.graph
    if dup:
        keep = [i for i, v in enumerate(g.constvars) if v not in dup]
        g = Graph([g.constvars[i] for i in keep], g.invars, g.eqns, g.outvars, g.name)
        consts = [closed.consts[i] for i in keep]
    else:
        consts = closed.consts
    return ClosedGraph(cse_graph(g, rename=dup), consts)
