"""``cond`` and ``switch``: choose one of several staged branches at run time.

One primitive, ``cond``, with operands ``(index, *operands)`` and param
``branches`` (a tuple of graphs with identical input and output types). The
index is an ``int32`` scalar clamped to ``[0, len(branches) - 1]``; ``cond(pred,
t, f)`` is ``switch(pred, (f, t))``. Values the branches close over are merged
into one list of leading operands that every branch takes (closure conversion).
Outside any transformation a concrete predicate or index just calls the chosen
branch (nothing is staged).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.ad_util import Zero, UndefinedPrimal
from plait.core.graph import Graph, Var, eval_graph, run_graph
from plait.core.primitive import new_primitive
from plait.core.pytree import tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import cur_stack, get_aval, is_tracer, concrete_value
from plait.core.graph_transforms import graph_transform
from plait.errors import ControlFlowError, PlaitTypeError, PlaitValueError
from plait.lax.control_flow.common import (TracedFun, trace_fun, flatten_operands, check_tree,
                                           join_weak, same_type, dedupe_consts,
                                           convert_outputs, select_inputs, check_operands,
                                           dce_sub, jvp_graph, closed_to_traced)

cond_p = new_primitive("cond", multiple_results=True)


def _cond_abstract(index: ShapedArray, *ops: ShapedArray, branches: tuple):
    if index.shape != () or index.dtype != dtypes.int32:
        raise ControlFlowError(f"cond: the branch index must be an i32[] scalar, got "
                               f"{index.str_short()}")
    for i, b in enumerate(branches):
        check_operands("cond", ops, b.in_avals, f"branch {i}")
    outs = branches[0].out_avals
    for i, b in enumerate(branches[1:], 1):
        if len(b.out_avals) != len(outs) or not all(
                same_type(x, y) for x, y in zip(b.out_avals, outs)):
            raise ControlFlowError(
                f"cond: branch 0 returns {[a.str_short() for a in outs]} but branch {i} "
                f"returns {[a.str_short() for a in b.out_avals]}")
    return [join_weak([b.out_avals[k] for b in branches]) for k in range(len(outs))]


def _cond_impl(index, *ops, branches: tuple):
    i = int(np.clip(index, 0, len(branches) - 1))
    return run_graph(branches[i], ops)


cond_p.def_abstract_eval(_cond_abstract)
cond_p.def_impl(_cond_impl)


def _cond_dce(eqn, used_outputs):
    """Drop unused outputs from every branch, then operands no branch still reads."""
    if not any(used_outputs):
        return None, []
    branches = eqn.params["branches"]
    pruned = [dce_sub(b, used_outputs) for b in branches]
    n_ops = len(eqn.inputs) - 1
    used = [any(u[k] for _, u in pruned) for k in range(n_ops)]
    new_branches = tuple(select_inputs(g, used) for g, _ in pruned)
    inputs = [eqn.inputs[0]] + [a for a, u in zip(eqn.inputs[1:], used) if u]
    outputs = [o for o, u in zip(eqn.outputs, used_outputs) if u]
    new = eqn.replace(inputs=inputs, outputs=outputs,
                      params=dict(eqn.params, branches=new_branches))
    return new, [True] * len(inputs)


cond_p.def_rule("dce", _cond_dce)


# --- Python-facing functions ------------------------------------------------------
def _join_branch_outputs(traced, names, what):
    """Check that all branches return the same types; promote weak outputs.

    Returns the branch graphs (with conversions appended where a weakly typed
    output must take another branch's dtype)."""
    first = traced[0]
    for t, nm in zip(traced[1:], names[1:]):
        if t.out_tree != first.out_tree:
            check_tree(what, names[0], first.out_tree, first.out_avals, nm, t.out_tree,
                       t.out_avals, _HINT)
    graphs = [t.graph for t in traced]
    targets = []
    for k in range(len(first.out_avals)):
        col = [t.out_avals[k] for t in traced]
        if all(same_type(a, col[0]) for a in col):
            targets.append(join_weak(col))
            continue
        dt, weak = dtypes.result_type(*[(a.dtype, a.weak_type) for a in col])
        ok = all(a.shape == col[0].shape and (a.dtype == dt or a.weak_type) for a in col)
        if not ok:
            bad = next(i for i, a in enumerate(col) if not same_type(a, col[0]))
            check_tree(what, names[0], first.out_tree, first.out_avals, names[bad],
                       traced[bad].out_tree, traced[bad].out_avals, _HINT)
        targets.append(ShapedArray(col[0].shape, dt, weak))
    return [convert_outputs(g, targets) for g in graphs]


_HINT = ("  Every branch must return the same pytree structure with the same shapes and "
         "dtypes;\n  cast with plait.lax.convert_element_type or build the missing values "
         "(e.g. zeros) in the branch that lacks them.")


def _bind_cond(index, branches: Sequence[Callable], names: Sequence[str], operands: tuple,
               what: str):
    leaves, in_tree = flatten_operands(operands)
    avals = [get_aval(x) for x in leaves]
    traced = [trace_fun(f, in_tree, avals, f"{nm} of {what}")
              for f, nm in zip(branches, names)]
    graphs = _join_branch_outputs(traced, names, what)
    traced = [t._replace(graph=g) for t, g in zip(traced, graphs)]
    consts, graphs = dedupe_consts(traced)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(graphs))
    return tree_unflatten(traced[0].out_tree, outs)


def _is_eager(x) -> bool:
    return not is_tracer(x) and len(cur_stack()) == 1


def _scalar(x, what: str, name: str):
    try:
        a = get_aval(x)
    except PlaitTypeError:
        raise PlaitTypeError(f"{name}: the {what} must be a scalar array, got a "
                             f"{type(x).__name__}") from None
    if a.shape != ():
        raise PlaitTypeError(f"{name}: the {what} must be a scalar, got {a.str_short()}; "
                             f"reduce it first (e.g. with plait.numpy.all/any) or use "
                             f"plait.numpy.where for elementwise choices")
    return a


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one staged
    conditional: under ``jit`` both branches are compiled and one runs.

    ``pred`` is a scalar bool (or number: nonzero is true). Both branches must
    return the same pytree structure, shapes and dtypes. Outside any
    transformation a concrete ``pred`` simply calls the chosen branch.
    """
    from plait.lax.elementwise import convert_element_type, ne
    a = _scalar(pred, "predicate", "plait.lax.cond")
    if _is_eager(pred):
        return true_fun(*operands) if bool(concrete_value(pred)) else false_fun(*operands)
    if a.dtype != dtypes.bool_:
        if not (dtypes.is_integer(a.dtype) or dtypes.is_float(a.dtype)):
            raise PlaitTypeError(f"plait.lax.cond: the predicate must be bool or a real "
                                 f"number, got {a.str_short()}")
        pred = ne(pred, 0)
    index = convert_element_type(pred, dtypes.int32)
    return _bind_cond(index, (false_fun, true_fun), ("false_fun", "true_fun"), operands,
                      "plait.lax.cond")


def switch(index, branches: Sequence[Callable], *operands):
    """``branches[clamp(index, 0, n - 1)](*operands)`` as one staged n-way conditional."""
    from plait.lax.elementwise import convert_element_type, clamp
    branches = tuple(branches)
    if not branches:
        raise PlaitValueError("plait.lax.switch: needs at least one branch")
    for b in branches:
        if not callable(b):
            raise PlaitTypeError(f"plait.lax.switch: branches must be callables, got a "
                                 f"{type(b).__name__}")
    a = _scalar(index, "index", "plait.lax.switch")
    if not dtypes.is_integer(a.dtype):
        raise PlaitTypeError(f"plait.lax.switch: the index must be an integer scalar, got "
                             f"{a.str_short()}")
    n = len(branches)
    if _is_eager(index):
        return branches[int(np.clip(concrete_value(index), 0, n - 1))](*operands)
    if n == 1:
        return branches[0](*operands)
    index = convert_element_type(clamp(0, index, n - 1), dtypes.int32)
    return _bind_cond(index, branches, [f"branches[{i}]" for i in range(n)], operands,
                      "plait.lax.switch")


# --- autodiff rules -------------------------------------------------------------
def _cond_jvp(primals, tangents, *, branches):
    """Differentiate every branch with the same tangent pattern; one cond runs them."""
    from plait.lax._ad_helpers import tangent_aval
    index, ops = primals[0], primals[1:]
    tans = tangents[1:]
    nz = [not isinstance(t, Zero) for t in tans]
    n_out = len(branches[0].outvars)
    out_nz = [False] * n_out
    for b in branches:
        _, onz = jvp_graph(b, nz, [False] * n_out)
        out_nz = [a or c for a, c in zip(out_nz, onz)]
    traced = [jvp_graph(b, nz, out_nz)[0] for b in branches]
    consts, graphs = dedupe_consts(traced)
    outs = cond_p.bind(index, *consts, *ops, *[t for t in tans if not isinstance(t, Zero)],
                       branches=tuple(graphs))
    t_iter = iter(outs[n_out:])
    t_out = [next(t_iter) if z else Zero(tangent_aval(a))
             for z, a in zip(out_nz, branches[0].out_avals)]
    return outs[:n_out], t_out


def _cond_partial_eval(trace, tracers, *, branches):
    """Split each branch into a known cond (known outputs + residuals) and an unknown
    cond over the residuals; residuals of all branches are joined (zeros elsewhere)."""
    partial_eval_graph = graph_transform("partial_eval_graph")
    from plait.lax._ad_helpers import zeros
    index_t, ops_t = tracers[0], tracers[1:]
    if not index_t.is_known:
        return trace.stage(cond_p, tracers, dict(branches=branches))
    in_uk = [not t.is_known for t in ops_t]
    n_out = len(branches[0].outvars)
    out_uk = [False] * n_out
    for b in branches:
        out_uk = [a or c for a, c in zip(out_uk, partial_eval_graph(b, in_uk)[2])]
    splits = [partial_eval_graph(b, in_uk, instantiate=out_uk) for b in branches]
    res_avals = [[v.aval for v in k.graph.outvars[n_out - sum(out_uk):]] for k, *_ in splits]
    n_known_out = n_out - sum(out_uk)

    def known_branch(i):
        known = splits[i][0]

        def fun(*ins):
            outs = eval_graph(known.graph, known.consts, *ins)
            res = [zeros(a) if j != i else None for j, avs in enumerate(res_avals) for a in avs]
            own = iter(outs[n_known_out:])
            return outs[:n_known_out] + [next(own) if r is None else r for r in res]
        closed, _ = trace_to_graph(fun, known.in_avals, description="cond partial eval")
        return closed_to_traced(closed)

    known_consts, known_graphs = dedupe_consts([known_branch(i) for i in range(len(branches))])
    known_ops = [t.known for t in ops_t if t.is_known]
    kouts = cond_p.bind(index_t.known, *known_consts, *known_ops, branches=tuple(known_graphs))
    residuals = kouts[n_known_out:]
    all_res = [a for avs in res_avals for a in avs]
    unknown_graphs = []
    for i, (_, unk, _, nres) in enumerate(splits):
        before = sum(len(a) for a in res_avals[:i])
        lead = ([Var(a) for a in all_res[:before]] + unk.invars[:nres]
                + [Var(a) for a in all_res[before + nres:]])
        unknown_graphs.append(Graph([], lead + unk.invars[nres:], unk.eqns, unk.outvars,
                                    unk.name))
    uk_in = [index_t] + [trace.pure(r) for r in residuals] + [t for t in ops_t if not t.is_known]
    uk_outs = iter(trace.stage(cond_p, uk_in, dict(branches=tuple(unknown_graphs))))
    k_outs = iter(kouts[:n_known_out])
    return [next(uk_outs) if u else trace.pure(next(k_outs)) for u in out_uk]


def _cond_transpose(cts, index, *ops, branches):
    """Transpose every branch for the same linear inputs; one cond runs the chosen one."""
    transpose_graph = graph_transform("transpose_graph")
    linear = [isinstance(x, UndefinedPrimal) for x in ops]
    ct_zero = [isinstance(c, Zero) for c in cts]
    if all(ct_zero):
        return [None] + [Zero(x.aval) if lin else None for x, lin in zip(ops, linear)]
    traced = [closed_to_traced(transpose_graph(b, linear, ct_zero)) for b in branches]
    consts, graphs = dedupe_consts(traced)
    nonlin = [x for x, lin in zip(ops, linear) if not lin]
    outs = iter(cond_p.bind(index, *consts, *nonlin,
                            *[c for c, z in zip(cts, ct_zero) if not z],
                            branches=tuple(graphs)))
    return [None] + [next(outs) if lin else None for lin in linear]


def _cond_batch(vals, dims, *, branches):
    """An unbatched index picks one batched branch. A batched index runs every branch
    on the whole batch and selects each lane's result (so both sides are computed)."""
    batch_graph = graph_transform("batch_graph")
    from plait.lax._batch_helpers import batch_size, move_batch_dim
    from plait.lax.elementwise import select, eq, clamp
    from plait.lax.shape_ops import broadcast_in_dim
    index, ops = vals[0], vals[1:]
    index_d, ops_d = dims[0], list(dims[1:])
    size = batch_size(vals, dims)
    n_out = len(branches[0].outvars)
    if index_d is None:
        batched = [False] * n_out
        for b in branches:
            batched = [x or d is not None for x, d in zip(batched, batch_graph(b, size, ops_d)[1])]
        want = [0 if x else None for x in batched]
        traced = [TracedFun(g, k, None) for g, _, k in
                  (batch_graph(b, size, ops_d, want) for b in branches)]
        consts, graphs = dedupe_consts(traced)
        return cond_p.bind(index, *consts, *ops, branches=tuple(graphs)), want
    results = []
    for b in branches:
        g, _, k = batch_graph(b, size, ops_d, [0] * n_out)
        results.append(eval_graph(g, [], *k, *ops))
    index = clamp(0, move_batch_dim(index, index_d, 0, size), len(branches) - 1)
    out = results[0]
    for i, res in enumerate(results[1:], 1):
        pick = eq(index, i)
        out = [select(broadcast_in_dim(pick, get_aval(r).shape, (0,)), r, o)
               for r, o in zip(res, out)]
    return out, [0] * n_out


cond_p.def_rule("jvp", _cond_jvp)
cond_p.def_rule("partial_eval", _cond_partial_eval)
cond_p.def_rule("transpose", _cond_transpose)
cond_p.def_rule("batch", _cond_batch)
