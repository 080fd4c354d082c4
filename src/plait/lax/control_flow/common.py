"""Shared machinery of the control-flow primitives.

* :func:`trace_fun` stages a user function (a branch, a loop body) on abstract
  values into a closure-converted :class:`Graph`: values it closes over (concrete
  arrays and tracers of outer transformations) become leading input variables,
  and the caller passes them as explicit operands (the Julia paper's closure
  treatment, section 4.2.2). Params then hold plain graphs without const vars.
* Type comparison of branch outputs and loop carries with readable errors that
  print both sides, and JAX-style weak-type promotion of loop initial values.
* Small graph utilities (appending conversions, pruning inputs).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np

from plait.core.dce import dce_graph

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.graph import Eqn, Graph, ClosedGraph, Var, Literal
from plait.core.pytree import TreeDef, tree_flatten, tree_unflatten, leaf_paths
from plait.core.staging import trace_to_graph
from plait.core.trace import Tracer, get_aval
from plait.core.graph_transforms import graph_transform
from plait.errors import ControlFlowError
from plait.lax._base import as_operand


class TracedFun(NamedTuple):
    """A user function staged into a graph whose inputs are ``consts + args``."""

    graph: Graph          # no const vars; invars = const inputs, then argument leaves
    consts: list          # values for the leading inputs (arrays or outer tracers)
    out_tree: TreeDef     # pytree structure of the function's result

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.graph.out_avals

    @property
    def num_consts(self) -> int:
        return len(self.consts)


class _Show:
    """A pytree leaf that prints as a given string (for error messages)."""

    __slots__ = ("s",)

    def __init__(self, s: str):
        self.s = s

    def __repr__(self):
        return self.s


def show_types(tree: TreeDef, avals: Sequence[ShapedArray]) -> str:
    """``(f32[3], {'a': i64[]})``: a pytree of abstract values, printed compactly."""
    return repr(tree_unflatten(tree, [_Show(a.str_short()) for a in avals]))


def flatten_operands(tree_of_values) -> tuple[list, TreeDef]:
    """Pytree leaves as plait operands (Python scalars become weak 0-d arrays)."""
    leaves, tree = tree_flatten(tree_of_values)
    return [as_operand(x) for x in leaves], tree


def _arraylike(x) -> bool:
    if isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex)):
        return True
    try:
        get_aval(x)
        return True
    except Exception:
        return False


def trace_fun(fun: Callable, args_tree: TreeDef, in_avals: Sequence[ShapedArray],
              what: str) -> TracedFun:
    """Stage ``fun(*args)`` where ``args`` is a pytree of structure ``args_tree``
    (a tuple of the positional arguments) whose leaves have abstract values
    ``in_avals``. ``what`` names the function in messages ("body_fun of
    plait.lax.while_loop")."""
    out_tree_box: list[TreeDef] = []

    def flat_fun(*leaves):
        args = tree_unflatten(args_tree, leaves)
        out = fun(*args)
        out_leaves, out_tree = tree_flatten(out)
        for p, o in zip(leaf_paths(out_tree), out_leaves):
            if not _arraylike(o):
                raise ControlFlowError(
                    f"{what} returned a {type(o).__name__} at output{p}; branches and "
                    f"loop bodies must return arrays or pytrees of arrays")
        out_tree_box.append(out_tree)
        return out_leaves

    closed, _ = trace_to_graph(flat_fun, list(in_avals), description=what,
                               name=getattr(fun, "__name__", ""))
    g = closed.graph
    graph = Graph([], g.constvars + g.invars, g.eqns, g.outvars, g.name)
    return TracedFun(graph, list(closed.consts), out_tree_box[-1])


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal shape and dtype (weak types are not compared, as in JAX)."""
    return a.shape == b.shape and a.dtype == b.dtype


def check_tree(what: str, left_name: str, left_tree: TreeDef, left_avals,
               right_name: str, right_tree: TreeDef, right_avals, hint: str) -> None:
    """Raise a ControlFlowError printing both sides when structures or types differ."""
    if left_tree != right_tree:
        raise ControlFlowError(
            f"{what}: {left_name} and {right_name} have different pytree structures:\n"
            f"    {left_name}: {show_types(left_tree, left_avals)}\n"
            f"    {right_name}: {show_types(right_tree, right_avals)}\n{hint}")
    bad = [p for p, a, b in zip(leaf_paths(left_tree), left_avals, right_avals)
           if not same_type(a, b)]
    if bad:
        where = ", ".join(f"value{p or ''}" for p in bad)
        raise ControlFlowError(
            f"{what}: {left_name} and {right_name} have different types at {where}:\n"
            f"    {left_name}: {show_types(left_tree, left_avals)}\n"
            f"    {right_name}: {show_types(right_tree, right_avals)}\n{hint}")


def join_weak(avals: Sequence[ShapedArray]) -> ShapedArray:
    """The common abstract value of equal-typed values: weak only if all are weak."""
    a = avals[0]
    return ShapedArray(a.shape, a.dtype, all(x.weak_type for x in avals))


def promote_weak_inits(init_leaves: list, init_avals: Sequence[ShapedArray],
                       out_avals: Sequence[ShapedArray]) -> tuple[list, bool]:
    """Convert weakly typed initial carries to the type the loop body returns.

    A carry initialised with a Python scalar (``0``) whose body returns ``f32``
    becomes an ``f32`` carry, as in JAX. Returns ``(new_leaves, changed)``.
    """
    from plait.lax.elementwise import convert_element_type
    if len(init_avals) != len(out_avals):
        return init_leaves, False
    changed = False
    new = list(init_leaves)
    for i, (a, o) in enumerate(zip(init_avals, out_avals)):
        if a.weak_type and not same_type(a, o) and a.shape == o.shape:
            dt, _ = dtypes.result_type((a.dtype, True), (o.dtype, o.weak_type))
            if dt != a.dtype:
                new[i] = convert_element_type(init_leaves[i], dt, weak_type=False)
                changed = True
    return new, changed


def dedupe_consts(traced: Sequence[TracedFun]) -> tuple[list, list[Graph]]:
    """Merge the closed-over values of several graphs that will share one operand list.

    Returns ``(consts, graphs)``: every graph takes all of ``consts`` as its
    leading inputs (ignoring the ones it does not use), then its own arguments.
    """
    consts: list = []
    index: dict[int, int] = {}
    for t in traced:
        for c in t.consts:
            if id(c) not in index:
                index[id(c)] = len(consts)
                consts.append(c)
    graphs = []
    for t in traced:
        g = t.graph
        n = t.num_consts
        mine = {index[id(c)]: v for c, v in zip(t.consts, g.invars[:n])}
        lead = [mine[j] if j in mine else Var(get_aval(c)) for j, c in enumerate(consts)]
        graphs.append(Graph([], lead + g.invars[n:], g.eqns, g.outvars, g.name))
    return consts, graphs


def convert_outputs(graph: Graph, targets: Sequence[ShapedArray]) -> Graph:
    """``graph`` with ``convert_element_type`` appended where an output's dtype
    differs from ``targets`` (weak-type differences alone are left alone)."""
    from plait.lax.elementwise import convert_element_type_p
    eqns = list(graph.eqns)
    outs = []
    for v, t in zip(graph.outvars, targets):
        if v.aval.dtype == t.dtype:
            outs.append(v)
            continue
        if isinstance(v, Literal):
            outs.append(Literal(v.val.astype(t.dtype), t))
            continue
        nv = Var(t)
        eqns.append(Eqn(convert_element_type_p, [v], dict(new_dtype=t.dtype,
                                                          weak_type=t.weak_type), [nv]))
        outs.append(nv)
    return Graph([], graph.invars, eqns, outs, graph.name)


def select_inputs(graph: Graph, keep: Sequence[bool]) -> Graph:
    """``graph`` without the input variables where ``keep`` is false (they must be unused)."""
    return Graph([], [v for v, k in zip(graph.invars, keep) if k], graph.eqns,
                 graph.outvars, graph.name)


def check_operands(name: str, avals: Sequence[ShapedArray], want: Sequence[ShapedArray],
                   what: str) -> None:
    """abstract_eval guard: operand types equal a sub-graph's input types."""
    if len(avals) != len(want) or not all(same_type(a, w) for a, w in zip(avals, want)):
        raise ControlFlowError(
            f"{name}: operands {[a.str_short() for a in avals]} do not match the "
            f"inputs of {what} {[w.str_short() for w in want]}")


def dce_sub(graph: Graph, used_outputs: Sequence[bool] | None = None):
    """DCE of a sub-graph (outputs pruned per ``used_outputs``): ``(graph, used_inputs)``."""
    return dce_graph(graph, list(used_outputs) if used_outputs is not None else None)


# --- autodiff helpers (the interpreters live in plait.transforms, which registers them
# with plait.core.graph_transforms; plait.lax imports only plait.core) ---------------
def jvp_graph(graph: Graph, nonzeros: Sequence[bool], instantiate: Sequence[bool]
              ) -> tuple[TracedFun, list[bool]]:
    """The JVP of ``graph`` (the registered ``jvp_graph``) as a const-free graph.

    The result takes its ``consts`` first, then the primal inputs, then the tangents
    of the inputs marked in ``nonzeros``; it returns the primal outputs, then the
    tangents of the outputs marked in the returned ``out_nonzeros`` (those in
    ``instantiate`` always get one).
    """
    _jvp_graph = graph_transform("jvp_graph")
    closed, out_nz = _jvp_graph(graph, nonzeros, list(instantiate))
    return closed_to_traced(closed), out_nz


def closed_to_traced(closed: ClosedGraph, out_tree: TreeDef | None = None) -> TracedFun:
    """A closed graph as a const-free graph taking its consts as leading inputs."""
    g = closed.graph
    return TracedFun(Graph([], g.constvars + g.invars, g.eqns, g.outvars, g.name),
                     list(closed.consts), out_tree)


def permute_inputs(graph: Graph, order: Sequence[int]) -> Graph:
    """``graph`` whose i-th input is the old input ``order[i]``."""
    return Graph([], [graph.invars[i] for i in order], graph.eqns, graph.outvars, graph.name)


def permute_outputs(graph: Graph, order: Sequence[int]) -> Graph:
    """``graph`` whose i-th output is the old output ``order[i]``."""
    return Graph([], graph.invars, graph.eqns, [graph.outvars[i] for i in order], graph.name)


def split_list(xs: Sequence, sizes: Sequence[int]) -> list[list]:
    """Split ``xs`` into consecutive pieces of the given sizes (the rest is last)."""
    out, i = [], 0
    for s in sizes:
        out.append(list(xs[i:i + s]))
        i += s
    out.append(list(xs[i:]))
    return out
