"""``pmap_call``: a replica program run once per device, as a primitive, so that
``grad`` (and ``jvp``) of a pmapped function run every replica's forward and backward
pass on its own device, concurrently.

Parameters: the replica ``graph``, ``mapped`` (per operand), ``n`` local replicas on
``devices``, the axis name and its (global) size, and ``outer_axes``, the axes of the
pmaps it is nested in (it then runs inside each of their replicas, on sub-devices).
Operands are the graph's inputs, each either mapped (stacked along a leading axis of
size ``n``, replica ``k`` gets row ``k``) or broadcast (every replica gets it); every
output is stacked along a leading axis of size ``n``. The rules transform the replica
graph once (``jvp_graph``, ``partial_eval_graph``, ``transpose_graph`` cache their
results per graph) and bind ``pmap_call`` again:

- jvp: the JVP graph; a tangent is mapped like its primal;
- partial eval: the known part runs now (residuals come out stacked, one row per
  replica), the unknown part is staged with the residuals as mapped operands;
- transpose: the transposed graph (collectives transpose to their JAX duals inside
  the replicas); the cotangent of a broadcast operand is the sum over replicas.

``impl`` compiles the graph (cached per graph) and runs it like ``pmap`` does. On the
xla backend (one device) its lowering is the replica graph under a named ``vmap`` over
the replica axis, whose collectives are ordinary array operations: the values of the
replicas, computed on one device.
"""
from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from plait.core import named_axes
from plait.core.ad_util import Zero, is_undefined_primal
from plait.core.graph import ClosedGraph, Graph, closure_convert_cached, eval_graph
from plait.core.graph_transforms import graph_transform
from plait.core.primitive import new_primitive
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lax.reductions import reduce_sum

pmap_call_p = new_primitive("pmap_call", multiple_results=True)

# the graph's compiled replica program (set by plait.distributed.pmap: it owns compiling)
_COMPILED: "weakref.WeakKeyDictionary[Graph, object]" = weakref.WeakKeyDictionary()


class Runner:
    """How ``pmap_call``'s impl compiles and runs a graph (set by :mod:`.pmap`)."""

    compile: Callable | None = None
    run: Callable | None = None


def _abstract(*avals, graph: Graph, mapped, n, axis_name, axis_size, devices, outer_axes,
              name):
    want = graph.in_avals
    got = [a.update(shape=a.shape[1:]) if m else a for a, m in zip(avals, mapped)]
    if len(got) != len(want) or any((a.shape, a.dtype) != (w.shape, w.dtype)
                                     for a, w in zip(got, want)) \
            or any(m and a.shape[:1] != (n,) for a, m in zip(avals, mapped)):
        raise PlaitTypeError(f"pmap_call of {name}: operands "
                             f"{[a.str_short() for a in avals]} (mapped {mapped}) do not "
                             f"match the replica program's inputs "
                             f"{[w.str_short() for w in want]} over {n} replicas")
    return [a.update(shape=(n,) + a.shape) for a in graph.out_avals]


def _impl(*args, graph: Graph, mapped, n, axis_name, axis_size, devices, outer_axes, name):
    comp = _COMPILED.get(graph)
    if comp is None:
        comp = _COMPILED[graph] = Runner.compile(graph, devices[0])
    vals = [np.asarray(a) for a in args]
    outs = Runner.run(comp, vals, [0 if m else None for m in mapped], list(devices),
                      axis_name, outer_axes)
    return [np.stack([o[i] for o in outs]) for i in range(len(graph.outvars))]


pmap_call_p.def_abstract_eval(_abstract)
pmap_call_p.def_impl(_impl)


def call(closed: ClosedGraph | Graph, args, mapped, **params) -> list:
    """Bind ``pmap_call`` on ``closed`` (its consts become broadcast leading operands)."""
    if isinstance(closed, ClosedGraph):
        g = closure_convert_cached(closed)
        args, mapped = list(closed.consts) + list(args), \
            (False,) * len(closed.consts) + tuple(mapped)
    else:
        g = closed
    return pmap_call_p.bind(*args, graph=g, mapped=tuple(mapped), **params)



def _bound(params):
    """The replica axis bound while a rule transforms the graph (its collectives'
    rules look the name up), as when ``pmap`` traced it."""
    return named_axes.bind_axis(params["axis_name"], params["axis_size"], None)


def _jvp(primals, tangents, *, graph, mapped, **params):
    nonzeros = [not isinstance(t, Zero) for t in tangents]
    with _bound(params):
        jg, out_nz = graph_transform("jvp_graph")(graph, nonzeros)
    outs = call(jg, list(primals) + [t for t in tangents if not isinstance(t, Zero)],
                tuple(mapped) + tuple(m for m, z in zip(mapped, nonzeros) if z), **params)
    k = len(graph.outvars)
    nz = iter(outs[k:])
    n = params["n"]
    t_out = [next(nz) if z else Zero(v.aval.update(shape=(n,) + v.aval.shape))
             for v, z in zip(graph.outvars, out_nz)]
    return outs[:k], t_out


def _partial_eval(trace, tracers, *, graph, mapped, **params):
    unknowns = [not t.is_known for t in tracers]
    with _bound(params):
        known, unknown, out_unknowns, num_res = graph_transform("partial_eval_graph")(
            graph, unknowns)
    kouts = call(known, [t.known for t in tracers if t.is_known],
                 [m for m, u in zip(mapped, unknowns) if not u], **params)
    n_known = len(kouts) - num_res
    known_outs, residuals = kouts[:n_known], kouts[n_known:]
    ins = [trace.pure(r) for r in residuals] + [t for t in tracers if not t.is_known]
    umapped = (True,) * num_res + tuple(m for m, u in zip(mapped, unknowns) if u)
    uouts = iter(trace.stage(pmap_call_p, ins, dict(graph=unknown, mapped=umapped,
                                                    **params)))
    kit = iter(known_outs)
    return [next(uouts) if u else trace.pure(next(kit)) for u in out_unknowns]


def _transpose(cts, *invals, graph, mapped, **params):
    linear = [is_undefined_primal(x) for x in invals]
    ct_zero = [isinstance(c, Zero) for c in cts]
    if all(ct_zero):
        return [None] * len(invals)
    with _bound(params):
        tg = graph_transform("transpose_graph")(graph, linear, ct_zero)
    outs = iter(call(tg, [x for x, lin in zip(invals, linear) if not lin] +
                     [c for c in cts if not isinstance(c, Zero)],
                     [m for m, lin in zip(mapped, linear) if not lin] +
                     [True] * (len(cts) - sum(ct_zero)), **params))
    res = []
    for lin, m in zip(linear, mapped):
        if not lin:
            res.append(None)
            continue
        ct = next(outs)                       # one row per replica
        res.append(ct if m else reduce_sum(ct, (0,)))
    return res


def _batch(vals, dims, *, graph, mapped, **params):
    """vmap over a pmapped call: the replica program is batched (a mapped operand's
    batch dim sits after its replica axis), so each replica runs its whole batch;
    outputs come back stacked as ``(n, batch, ...)``."""
    from plait.lax._batch_helpers import batch_size, move_batch_dim
    size = batch_size(vals, dims)
    moved, in_dims = [], []
    for v, d, m in zip(vals, dims, mapped):
        if d is None:
            moved.append(v)
            in_dims.append(None)
        else:                       # replica axis first, then the batch axis
            moved.append(move_batch_dim(v, d, 1 if m else 0, size))
            in_dims.append(0)
    with _bound(params):
        bg, _, consts = graph_transform("batch_graph")(graph, size, in_dims,
                                                       [0] * len(graph.outvars))
    outs = call(bg, list(consts) + moved, (False,) * len(consts) + tuple(mapped), **params)
    return outs, [1] * len(outs)


def _to_stablehlo(ctx, *args, graph: Graph, mapped, n, axis_name, axis_size, devices,
                  outer_axes, name):
    """The xla lowering: the replica graph under ``vmap(axis_name=)`` over its ``n``
    replicas (a nested pmap_call in it is batched by its batch rule, which keeps the
    enclosing axes' collectives), staged and called as a private function."""
    from plait.backends.xla.rules_control import call_traced
    if axis_size != n:
        raise PlaitValueError(
            f"the xla backend cannot lower {name}: its axis {axis_name!r} spans "
            f"{axis_size} replicas across processes and this process runs {n}; the xla "
            f"backend runs a pmap's replicas on one device, as a named vmap, which cannot "
            f"reach other processes' replicas. Compile a multi-process pmap with "
            f"backend='native' or 'interp'")
    replicas = graph_transform("vmap")(lambda *xs: eval_graph(graph, [], *xs),
                                       in_axes=tuple(0 if m else None for m in mapped),
                                       axis_size=n, axis_name=axis_name)
    return call_traced(ctx, lambda *xs: list(replicas(*xs)), list(args),
                       f"the StableHLO lowering of {name} (its replicas as a named vmap)")


pmap_call_p.def_rule("batch", _batch)
pmap_call_p.def_rule("jvp", _jvp)
pmap_call_p.def_rule("partial_eval", _partial_eval)
pmap_call_p.def_rule("transpose", _transpose)
pmap_call_p.def_rule("to_stablehlo", _to_stablehlo)   # plait.backends.xla.rules.RULE
