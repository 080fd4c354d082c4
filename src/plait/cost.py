"""Static cost and memory analysis of a graph: ``Compiled.cost_analysis()`` and the
interpreter's ``memory_analysis()``.

Cost rules live in one table here (:data:`RULES`), registered as each primitive's
``cost`` rule ``rule(eqn) -> (flops, transcendentals)``, and elementwise primitives
whose descriptor says ``transcendental`` (``plait.lax.elementwise_spec``) count one
transcendental per element; a primitive without a rule is counted as elementwise (one
flop per output element). Conventions follow XLA's cost
analysis: a transcendental function costs one *transcendental* (not a flop) per
element, a ``dot_general`` ``2*M*N*K`` flops, a reduction of n to m elements n - m,
data movement (reshape, transpose, slices, gathers, broadcasts, conversions) nothing.
``bytes accessed`` is per equation (inputs read plus outputs written), i.e. before
fusion: an upper bound of what the fused native kernels move. Sub-graphs are counted
once per execution: a ``scan`` body ``length`` times, a ``while`` body once (its trip
count is not known statically), every branch of a ``cond`` (an upper bound).
"""
from __future__ import annotations

import numpy as np

from plait.core.graph import ClosedGraph, Graph, Literal, Var, subgraphs_of
from plait.core.primitive import ALL_PRIMITIVES
from plait.lax.elementwise_spec import ops as elementwise_ops, primitive as elementwise_primitive


def _size(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64))


def _nbytes(aval) -> int:
    return _size(aval) * np.dtype(aval.dtype).itemsize


def _elementwise(eqn):
    return sum(_size(o.aval) for o in eqn.outputs), 0


def _transcendental(eqn):
    return 0, sum(_size(o.aval) for o in eqn.outputs)


def _free(eqn):
    return 0, 0


def _reduction(eqn):
    """n inputs combined into m outputs: n - m operations (XLA's count)."""
    return _size(eqn.inputs[0].aval) - sum(_size(o.aval) for o in eqn.outputs), 0


def _scan_like(eqn):
    return sum(_size(a.aval) for a in eqn.inputs if isinstance(a, Var)), 0


def _dot(eqn):
    (lc, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.inputs[0].aval
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    return 2 * _size(eqn.outputs[0].aval) * k, 0


def _conv(eqn):
    rhs = eqn.inputs[1].aval
    dn = eqn.params["dimension_numbers"]
    out_features = rhs.shape[dn[1][0]]       # rhs spec: (out feature, in feature, ...)
    per_output = _size(rhs) // max(out_features, 1)   # in features (per group) x window
    return 2 * _size(eqn.outputs[0].aval) * per_output, 0


def _sort(eqn):
    n = _size(eqn.inputs[0].aval)
    d = eqn.inputs[0].aval.shape[eqn.params.get("dimension", -1)] if eqn.inputs[0].aval.shape \
        else 1
    return int(n * max(np.log2(max(d, 2)), 1)), 0


RULES = {
    _free: ["broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "rev",
            "slice", "dynamic_slice", "dynamic_update_slice", "concatenate", "pad", "iota",
            "gather", "convert_element_type", "stop_gradient", "real", "imag",
            "checkpoint_name", "optimization_barrier", "copy"],
    _reduction: ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
                 "reduce_or", "reduce_xor", "argmax", "argmin"],
    _scan_like: ["cumsum", "cumprod", "cummax", "cummin", "scatter_add", "scatter_mul",
                 "scatter_min", "scatter_max"],
    _dot: ["dot_general"],
    _conv: ["conv_general_dilated"],
    _sort: ["sort"],
}
# views and markers: no bytes move
NO_BYTES = ["reshape", "squeeze", "expand_dims", "checkpoint_name", "optimization_barrier",
            "stop_gradient"]


def register_cost_rules() -> None:
    """Attach the ``cost`` rule of every primitive named in :data:`RULES` and of every
    transcendental elementwise primitive."""
    for op in elementwise_ops():
        if op.transcendental and op.dtypes is not None:
            elementwise_primitive(op.name).def_rule("cost", _transcendental)
    for rule, names in RULES.items():
        for n in names:
            p = ALL_PRIMITIVES.get(n)
            if p is not None:
                p.def_rule("cost", rule)
    for n in NO_BYTES:
        p = ALL_PRIMITIVES.get(n)
        if p is not None:
            p.def_rule("cost_no_bytes", True)


def graph_cost(graph: Graph) -> dict:
    """``{"flops", "transcendentals", "bytes accessed"}`` of one run of ``graph``."""
    return eqns_cost(graph.eqns)


def eqns_cost(eqns) -> dict:
    """:func:`graph_cost` of a sequence of equations (a fused kernel's, say)."""
    register_cost_rules()
    flops = trans = nbytes = 0
    for eqn in eqns:
        subs = list(subgraphs_of(eqn.params))
        if subs:
            reps = int(eqn.params.get("length", 1) or 1)
            for g in subs:
                c = graph_cost(g)
                flops += reps * c["flops"]
                trans += reps * c["transcendentals"]
                nbytes += reps * c["bytes accessed"]
            continue
        rule = eqn.prim.rules.get("cost", _elementwise)
        f, t = rule(eqn)
        flops += f
        trans += t
        if not eqn.prim.rules.get("cost_no_bytes", False):
            nbytes += sum(_nbytes(a.aval) for a in eqn.inputs if isinstance(a, Var))
            nbytes += sum(_nbytes(o.aval) for o in eqn.outputs)
    return {"flops": float(flops), "transcendentals": float(trans),
            "bytes accessed": float(nbytes)}


def cost_analysis(closed: ClosedGraph) -> dict:
    """JAX-style cost analysis of a compiled graph (see the module docstring)."""
    register_cost_rules()
    return graph_cost(closed.graph)


class MemoryAnalysis(dict):
    """Byte counts of an executable, readable as a dict or by JAX's attribute names
    (``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes``,
    ``temp_size_in_bytes``, ``generated_code_size_in_bytes``)."""

    def __init__(self, argument_bytes: int, output_bytes: int, constant_bytes: int,
                 peak_temp_bytes: int, alias_bytes: int = 0, code_bytes: int = 0):
        super().__init__(argument_bytes=argument_bytes, output_bytes=output_bytes,
                         constant_bytes=constant_bytes, peak_temp_bytes=peak_temp_bytes,
                         alias_bytes=alias_bytes, code_bytes=code_bytes)

    argument_size_in_bytes = property(lambda self: self["argument_bytes"])
    output_size_in_bytes = property(lambda self: self["output_bytes"])
    alias_size_in_bytes = property(lambda self: self["alias_bytes"])
    temp_size_in_bytes = property(lambda self: self["peak_temp_bytes"])
    host_temp_size_in_bytes = property(lambda self: self["peak_temp_bytes"])
    generated_code_size_in_bytes = property(lambda self: self["code_bytes"])

    def __repr__(self):
        return "MemoryAnalysis(" + ", ".join(f"{k}={v}" for k, v in self.items()) + ")"


def interp_memory(closed: ClosedGraph) -> dict:
    """Bytes of the reference interpreter: it keeps every intermediate until it returns,
    so its temporaries are all non-output intermediates together."""
    g = closed.graph
    outs = {v for v in g.outvars if isinstance(v, Var)}
    temps = sum(_nbytes(o.aval) for e in g.eqns for o in e.outputs if o not in outs)
    return {"argument_bytes": sum(_nbytes(v.aval) for v in g.invars),
            "output_bytes": sum(_nbytes(v.aval) for v in g.outvars if not isinstance(v, Literal)),
            "constant_bytes": sum(np.asarray(c).nbytes for c in closed.consts),
            "peak_temp_bytes": temps, "alias_bytes": 0}
