"""Autodiff rules of ``jit_call`` (a nested ``jit``): jvp, partial eval, transpose.

Each rule transforms the called sub-graph once (``jvp_graph``,
``partial_eval_graph``, ``transpose_graph`` cache their results per graph and
masks) and binds ``jit_call`` on the transformed graph, so ``grad(jit(f))`` runs
compiled sub-graphs for the forward and the backward pass, and repeated calls do
not retrace. Sub-graphs with consts get them as leading operands.
"""
from __future__ import annotations


from plait.core.ad_util import Zero, is_undefined_primal
from plait.core.call import jit_call_p
from plait.core.graph import ClosedGraph, closure_convert_cached
from plait.lax._ad_helpers import tangent_aval
from plait.transforms.ad import jvp_graph
from plait.transforms.partial_eval import partial_eval_graph
from plait.transforms.transpose import transpose_graph


def call_closed(closed: ClosedGraph, args, name: str) -> list:
    """Bind ``jit_call`` on a closed graph (its consts become leading operands)."""
    return jit_call_p.bind(*closed.consts, *args, graph=closure_convert_cached(closed), name=name)



def _jit_call_jvp(primals, tangents, *, graph, name):
    nonzeros = [not isinstance(t, Zero) for t in tangents]
    jg, out_nz = jvp_graph(graph, nonzeros)
    outs = call_closed(jg, list(primals) + [t for t in tangents if not isinstance(t, Zero)],
                       f"jvp({name})")
    n = len(graph.outvars)
    nz = iter(outs[n:])
    t_out = [next(nz) if z else Zero(tangent_aval(v.aval))
             for v, z in zip(graph.outvars, out_nz)]
    return outs[:n], t_out


def _jit_call_partial_eval(trace, tracers, *, graph, name):
    unknowns = [not t.is_known for t in tracers]
    known, unknown, out_unknowns, num_res = partial_eval_graph(graph, unknowns)
    kouts = call_closed(known, [t.known for t in tracers if t.is_known], name)
    n_known = len(kouts) - num_res
    known_outs, residuals = kouts[:n_known], kouts[n_known:]
    ins = [trace.pure(r) for r in residuals] + [t for t in tracers if not t.is_known]
    uouts = iter(trace.stage(jit_call_p, ins, dict(graph=unknown, name=name)))
    kouts_it = iter(known_outs)
    return [next(uouts) if u else trace.pure(next(kouts_it)) for u in out_unknowns]


def _jit_call_transpose(cts, *invals, graph, name):
    linear = [is_undefined_primal(x) for x in invals]
    ct_zero = [isinstance(c, Zero) for c in cts]
    tg = transpose_graph(graph, linear, ct_zero)
    outs = iter(call_closed(tg, [x for x, l in zip(invals, linear) if not l] +
                            [c for c in cts if not isinstance(c, Zero)], f"transpose({name})"))
    return [next(outs) if l else None for l in linear]


jit_call_p.def_rule("jvp", _jit_call_jvp)
jit_call_p.def_rule("partial_eval", _jit_call_partial_eval)
jit_call_p.def_rule("transpose", _jit_call_transpose)
