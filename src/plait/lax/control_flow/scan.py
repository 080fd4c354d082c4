"""``scan`` (and ``map``): a loop over the leading axis of its inputs.

One primitive, ``scan``, with operands ``(*consts, *init_carry, *xs)`` and
params ``graph`` (``consts, carry, x -> carry, y``), ``length``, ``reverse``,
``num_consts``, ``num_carry`` and ``unroll``. Outputs are the final carry and
the per-step ``y``s stacked along a new leading axis (in iteration order
reversed when ``reverse``, so ``ys[i]`` always belongs to ``xs[i]``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plait.core.ad_util import Zero, UndefinedPrimal
from plait.core.aval import ShapedArray
from plait.core.graph import Graph, eval_graph, run_graph
from plait.core.primitive import new_primitive
from plait.core.pytree import TreeDef, tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import get_aval
from plait.core.graph_transforms import graph_transform
from plait.errors import ControlFlowError, PlaitValueError
from plait.lax.control_flow.common import (trace_fun, flatten_operands, show_types,
                                           check_operands, select_inputs, dce_sub,
                                           jvp_graph, closed_to_traced, permute_inputs,
                                           permute_outputs, split_list)
from plait.lax.control_flow.loops import trace_loop_body

scan_p = new_primitive("scan", multiple_results=True)


def _scan_abstract(*avals, graph, length, reverse, num_consts, num_carry, unroll):
    consts = avals[:num_consts]
    carry = avals[num_consts:num_consts + num_carry]
    xs = avals[num_consts + num_carry:]
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise ControlFlowError(f"scan: scanned operand {x.str_short()} does not have "
                                   f"leading dimension {length}")
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    check_operands("scan", list(consts) + list(carry) + x_avals, graph.in_avals, "graph")
    outs = graph.out_avals
    check_operands("scan", outs[:num_carry], list(carry), "the carry")
    ys = [ShapedArray((length,) + y.shape, y.dtype, y.weak_type) for y in outs[num_carry:]]
    return list(carry) + ys


def _scan_impl(*args, graph, length, reverse, num_consts, num_carry, unroll):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = args[num_consts + num_carry:]
    y_avals = graph.out_avals[num_carry:]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in y_avals]
    for k in range(length):
        i = length - 1 - k if reverse else k
        outs = run_graph(graph, consts + carry + [x[i] for x in xs])
        carry = outs[:num_carry]
        for buf, y in zip(ys, outs[num_carry:]):
            buf[i] = y
    return carry + ys


scan_p.def_abstract_eval(_scan_abstract)
scan_p.def_rule("loop_invariants", lambda eqn: [("graph", "num_consts", 0)])
scan_p.def_impl(_scan_impl)


def _scan_dce(eqn, used_outputs):
    """Drop unused ``ys``, carries nothing live depends on (fixed point), unused inputs."""
    p = eqn.params
    nc, ncarry = p["num_consts"], p["num_carry"]
    used_ys = list(used_outputs[ncarry:])
    live = list(used_outputs[:ncarry])
    if not any(live) and not any(used_ys):
        return None, []
    while True:
        g, used_in = dce_sub(p["graph"], live + used_ys)
        new_live = [l or u for l, u in zip(live, used_in[nc:nc + ncarry])]
        if new_live == live:
            break
        live = new_live
    keep_c, keep_x = used_in[:nc], used_in[nc + ncarry:]
    g = select_inputs(g, keep_c + live + keep_x)
    consts, init, xs = (eqn.inputs[:nc], eqn.inputs[nc:nc + ncarry],
                        eqn.inputs[nc + ncarry:])
    inputs = ([a for a, k in zip(consts, keep_c) if k] + [a for a, k in zip(init, live) if k]
              + [a for a, k in zip(xs, keep_x) if k])
    outputs = ([o for o, k in zip(eqn.outputs[:ncarry], live) if k]
               + [o for o, k in zip(eqn.outputs[ncarry:], used_ys) if k])
    params = dict(p, graph=g, num_consts=sum(keep_c), num_carry=sum(live))
    return eqn.replace(inputs=inputs, outputs=outputs, params=params), [True] * len(inputs)


scan_p.def_rule("dce", _scan_dce)


# --- Python-facing functions ------------------------------------------------------
def _scan_length(xs_leaves, xs_tree: TreeDef, length) -> int:
    lengths = set()
    for x in xs_leaves:
        a = get_aval(x)
        if not a.shape:
            raise PlaitValueError(f"plait.lax.scan: scanned inputs must have a leading axis "
                                  f"to scan over, got a scalar in xs "
                                  f"{show_types(xs_tree, [get_aval(v) for v in xs_leaves])}")
        lengths.add(a.shape[0])
    if length is not None:
        length = int(length)
        if lengths and lengths != {length}:
            raise PlaitValueError(f"plait.lax.scan: length={length} but the leading axes of "
                                  f"xs have sizes {sorted(lengths)}")
        return length
    if not lengths:
        raise PlaitValueError("plait.lax.scan: pass length= when xs is None or has no arrays")
    if len(lengths) > 1:
        raise PlaitValueError(f"plait.lax.scan: the leading axes of xs must all have the same "
                              f"size, got {show_types(xs_tree, [get_aval(v) for v in xs_leaves])}")
    return lengths.pop()


def _pair_parts(traced, what):
    """Split a body's result tree ``(carry, y)`` into its two subtrees."""
    t = traced.out_tree
    if t.kind not in (tuple, list) or len(t.children) != 2:
        raise ControlFlowError(f"{what}: f must return a pair (new_carry, y), got "
                               f"{show_types(t, traced.out_avals)}")
    return t.children


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int = 1):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``.

    Returns ``(final_carry, ys)`` with the ``y``s stacked along a new leading axis.
    ``init``, ``xs`` and the results may be pytrees; ``xs=None`` with ``length=n``
    scans ``n`` times with ``x = None``. ``reverse=True`` scans from the end.
    ``unroll`` is accepted for compatibility (the loop is not unrolled).
    """
    what = "plait.lax.scan"
    if isinstance(unroll, bool):
        unroll = length if unroll and length else 1
    if int(unroll) < 1:
        raise PlaitValueError(f"{what}: unroll must be a positive integer, got {unroll}")
    xs_leaves, xs_tree = flatten_operands(xs)
    n = _scan_length(xs_leaves, xs_tree, length)
    x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type)
               for a in (get_aval(x) for x in xs_leaves)]
    init_leaves, init_tree = flatten_operands(init)

    def stage(carry_avals):
        args_tree = TreeDef(tuple, None, (init_tree, xs_tree))
        return trace_fun(f, args_tree, list(carry_avals) + x_avals, f"f of {what}")

    def carry_of(traced):
        carry_tree, _ = _pair_parts(traced, what)
        return carry_tree, traced.out_avals[:carry_tree.num_leaves]

    body, init_leaves = trace_loop_body(stage, init_leaves, init_tree, what, carry_of)
    _, y_tree = _pair_parts(body, what)
    outs = scan_p.bind(*body.consts, *init_leaves, *xs_leaves, graph=body.graph, length=n,
                       reverse=bool(reverse), num_consts=body.num_consts,
                       num_carry=len(init_leaves), unroll=int(unroll))
    nc = len(init_leaves)
    return tree_unflatten(init_tree, outs[:nc]), tree_unflatten(y_tree, outs[nc:])


def map(f: Callable, xs):
    """``stack([f(x) for x in xs])`` over the leading axis of the pytree ``xs``, as a scan."""
    return scan(lambda carry, x: (carry, f(x)), (), xs)[1]





# --- autodiff rules -------------------------------------------------------------
def _split_args(args, num_consts, num_carry):
    return (list(args[:num_consts]), list(args[num_consts:num_consts + num_carry]),
            list(args[num_consts + num_carry:]))


def _carry_fixed_point(step, carry_flags):
    """Grow ``carry_flags`` until ``step(flags)`` (the body's carry-out flags) adds none."""
    for _ in range(len(carry_flags) + 1):
        result, out_flags = step(carry_flags)
        new = [a or b for a, b in zip(carry_flags, out_flags)]
        if new == carry_flags:
            return result, carry_flags
        carry_flags = new
    raise AssertionError("carry fixed point did not converge")


def _scan_jvp(primals, tangents, *, graph, length, reverse, num_consts, num_carry, unroll):
    """A scan over the JVP of the body: tangents ride along as extra consts, carries, xs."""
    from plait.lax._ad_helpers import tangent_aval, instantiate
    nz = [not isinstance(t, Zero) for t in tangents]
    const_nz, init_nz, xs_nz = _split_args(nz, num_consts, num_carry)
    ny = len(graph.outvars) - num_carry

    def step(carry_nz):
        traced, out_nz = jvp_graph(graph, const_nz + carry_nz + xs_nz, carry_nz + [False] * ny)
        return (traced, out_nz), out_nz[:num_carry]
    (jt, out_nz), carry_nz = _carry_fixed_point(step, init_nz)
    ys_nz = out_nz[num_carry:]
    # jt inputs: jconsts, consts, carry, xs, then tangents (nonzero consts, carry, xs)
    nj, nx = jt.num_consts, len(xs_nz)
    n_ct, n_cr, n_xt = sum(const_nz), sum(carry_nz), sum(xs_nz)
    p_carry, p_xs = nj + num_consts, nj + num_consts + num_carry   # primal input offsets
    t0 = p_xs + nx                                                  # first tangent input
    idx = (list(range(p_carry)) + list(range(t0, t0 + n_ct))
           + list(range(p_carry, p_xs)) + list(range(t0 + n_ct, t0 + n_ct + n_cr))
           + list(range(p_xs, t0)) + list(range(t0 + n_ct + n_cr, t0 + n_ct + n_cr + n_xt)))
    g = permute_inputs(jt.graph, idx)
    n_po = num_carry + ny
    oidx = (list(range(num_carry)) + list(range(n_po, n_po + n_cr)) +
            list(range(num_carry, n_po)) + list(range(n_po + n_cr, len(g.outvars))))
    g = permute_outputs(g, oidx)
    consts, init, xs = _split_args(primals, num_consts, num_carry)
    c_t, i_t, x_t = _split_args(tangents, num_consts, num_carry)
    init_t = [instantiate(t) for t, z in zip(i_t, carry_nz) if z]
    outs = scan_p.bind(*jt.consts, *consts, *[t for t, z in zip(c_t, const_nz) if z],
                       *init, *init_t, *xs, *[t for t, z in zip(x_t, xs_nz) if z],
                       graph=g, length=length, reverse=reverse,
                       num_consts=nj + num_consts + n_ct, num_carry=num_carry + n_cr,
                       unroll=unroll)
    carry_out, carry_t, ys, ys_t = split_list(outs, [num_carry, n_cr, ny])
    out_avals = _scan_abstract(*[get_aval(p) for p in primals], graph=graph, length=length,
                               reverse=reverse, num_consts=num_consts, num_carry=num_carry,
                               unroll=unroll)
    t_iter = iter(carry_t + ys_t)
    t_out = [next(t_iter) if z else Zero(tangent_aval(a))
             for z, a in zip(carry_nz + ys_nz, out_avals)]
    return carry_out + ys, t_out


def _scan_partial_eval(trace, tracers, *, graph, length, reverse, num_consts, num_carry,
                       unroll):
    """Known scan (known carries and ys, plus per-step residuals stacked as extra ys)
    and an unknown scan that reads the residuals; loop-invariant residuals (known
    consts) and residuals that are known xs are passed through instead of stacked."""
    partial_eval_graph = graph_transform("partial_eval_graph")
    params = dict(length=length, reverse=reverse, unroll=unroll)
    uk = [not t.is_known for t in tracers]
    const_uk, init_uk, xs_uk = _split_args(uk, num_consts, num_carry)
    ny = len(graph.outvars) - num_carry

    def step(carry_uk):
        res = partial_eval_graph(graph, const_uk + carry_uk + xs_uk,
                                 instantiate=carry_uk + [False] * ny)
        return res, res[2][:num_carry]
    (known, unknown, out_uk, nres), carry_uk = _carry_fixed_point(step, init_uk)
    ys_uk = out_uk[num_carry:]
    consts_t, init_t, xs_t = _split_args(tracers, num_consts, num_carry)
    kc = [t.known for t, u in zip(consts_t, const_uk) if not u]
    ki = [t.known for t, u in zip(init_t, carry_uk) if not u]
    kx = [t.known for t, u in zip(xs_t, xs_uk) if not u]
    kg = known.graph
    n_kout = len(kg.outvars) - nres
    # classify residuals: loop-invariant (a known const or a closed-over value) or a
    # known xs passed straight through, else stacked by the known scan
    const_pos = {v: i for i, v in enumerate(kg.invars[:len(kc)])}
    xs_pos = {v: i for i, v in enumerate(kg.invars[len(kc) + len(ki):])}
    closed_pos = {v: i for i, v in enumerate(kg.constvars)}
    kinds = []
    for v in kg.outvars[n_kout:]:
        if v in const_pos:
            kinds.append(("inv", kc[const_pos[v]]))
        elif v in closed_pos:
            kinds.append(("inv", known.consts[closed_pos[v]]))
        elif v in xs_pos:
            kinds.append(("xs", kx[xs_pos[v]]))
        else:
            kinds.append(("stack", None))
    stacked = [k == "stack" for k, _ in kinds]
    kt = closed_to_traced(known)
    kgraph = Graph([], kt.graph.invars, kg.eqns,
                   kg.outvars[:n_kout] + [v for v, s in zip(kg.outvars[n_kout:], stacked) if s],
                   kg.name)
    n_kcarry = len(ki)
    kouts = scan_p.bind(*kt.consts, *kc, *ki, *kx, graph=kgraph,
                        num_consts=kt.num_consts + len(kc), num_carry=n_kcarry, **params)
    k_carry, k_ys, k_res = split_list(kouts, [n_kcarry, n_kout - n_kcarry])
    res_iter = iter(k_res)
    res_vals = [next(res_iter) if k == "stack" else val for k, val in kinds]
    # unknown scan: [invariant residuals, unknown consts] [unknown carries]
    #               [per-step residuals (stacked or xs), unknown xs]
    n_uc, n_ucarry = sum(const_uk), sum(carry_uk)
    inv = [i for i, (k, _) in enumerate(kinds) if k == "inv"]
    per = [i for i, (k, _) in enumerate(kinds) if k != "inv"]
    order = (inv + list(range(nres, nres + n_uc)) + list(range(nres + n_uc, nres + n_uc + n_ucarry))
             + per + list(range(nres + n_uc + n_ucarry, len(unknown.invars))))
    ugraph = permute_inputs(unknown, order)
    u_in = ([trace.pure(res_vals[i]) for i in inv] + [t for t, u in zip(consts_t, const_uk) if u]
            + [t for t, u in zip(init_t, carry_uk) if u] + [trace.pure(res_vals[i]) for i in per]
            + [t for t, u in zip(xs_t, xs_uk) if u])
    u_outs = iter(trace.stage(scan_p, u_in, dict(graph=ugraph, num_consts=len(inv) + n_uc,
                                                 num_carry=n_ucarry, **params)))
    k_iter = iter(k_carry + k_ys)
    return [next(u_outs) if u else trace.pure(next(k_iter)) for u in carry_uk + ys_uk]


def _scan_transpose(cts, *args, graph, length, reverse, num_consts, num_carry, unroll):
    """A reversed scan over the transposed body; cotangents of linear consts accumulate
    in extra carries."""
    transpose_graph = graph_transform("transpose_graph")
    from plait.lax._ad_helpers import instantiate, zeros
    from plait.lax.elementwise import add
    consts, init, xs = _split_args(args, num_consts, num_carry)
    c_lin = [isinstance(c, UndefinedPrimal) for c in consts]
    x_lin = [isinstance(x, UndefinedPrimal) for x in xs]
    # every carry of a linear scan is linear in the body; a carry whose initial value
    # is known (instantiated zeros of a symbolic zero tangent) just gets no cotangent
    init_lin = [isinstance(c, UndefinedPrimal) for c in init]
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    ys_zero = [isinstance(c, Zero) for c in ct_ys]
    body_t = closed_to_traced(transpose_graph(graph, c_lin + [True] * num_carry + x_lin,
                                              [False] * num_carry + ys_zero))
    res_c = [c for c, l in zip(consts, c_lin) if not l]
    res_x = [x for x, l in zip(xs, x_lin) if not l]
    n_rc, n_lc, n_rx = len(res_c), sum(c_lin), len(res_x)
    lin_c_avals = [c.aval.strip_weak() for c, l in zip(consts, c_lin) if l]
    carry_avals = [(c.aval if isinstance(c, UndefinedPrimal) else get_aval(c)).strip_weak()
                   for c in init]

    def body(*vals):
        bc, rc, acc, ctc, rx, cy = split_list(vals, [body_t.num_consts, n_rc, n_lc, num_carry,
                                                     n_rx])
        outs = eval_graph(body_t.graph, [], *bc, *rc, *rx, *ctc, *cy)
        d_c, d_carry, d_x = split_list(outs, [n_lc, num_carry])
        return [add(a, d) for a, d in zip(acc, d_c)] + d_carry + d_x

    x_avals = ([ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in res_x]
               + [ShapedArray(get_aval(c).shape[1:], get_aval(c).dtype)
                  for c, z in zip(ct_ys, ys_zero) if not z])
    in_avals = ([v.aval for v in body_t.graph.invars[:body_t.num_consts]]
                + [get_aval(c) for c in res_c] + lin_c_avals + carry_avals + x_avals)
    closed, _ = trace_to_graph(body, in_avals, description="transposed scan body")
    bt = closed_to_traced(closed)
    outs = scan_p.bind(*bt.consts, *body_t.consts, *res_c,
                       *[zeros(a) for a in lin_c_avals], *[instantiate(c) for c in ct_carry],
                       *res_x, *[c for c, z in zip(ct_ys, ys_zero) if not z],
                       graph=bt.graph, length=length, reverse=not reverse,
                       num_consts=bt.num_consts + body_t.num_consts + n_rc,
                       num_carry=n_lc + num_carry, unroll=unroll)
    ct_consts, ct_init, ct_xs = split_list(outs, [n_lc, num_carry])
    ci, xi = iter(ct_consts), iter(ct_xs)
    return ([next(ci) if l else None for l in c_lin]
            + [c if l else None for c, l in zip(ct_init, init_lin)]
            + [next(xi) if l else None for l in x_lin])


def _scan_batch(vals, dims, *, graph, length, reverse, num_consts, num_carry, unroll):
    """Scanned operands get the batch dim at 1 (the body sees it at 0); carries that
    become batched are found by a fixed point and kept at 0; ``ys`` keep the body's
    batch dim, one place later."""
    batch_graph = graph_transform("batch_graph")
    from plait.lax._batch_helpers import batch_size, move_batch_dim
    size = batch_size(vals, dims)
    consts, init, xs = _split_args(vals, num_consts, num_carry)
    c_d, init_d, xs_d = _split_args(dims, num_consts, num_carry)
    xs = [x if d is None else move_batch_dim(x, d, 1, size) for x, d in zip(xs, xs_d)]
    x_in = [None if d is None else 0 for d in xs_d]

    def step(carry_b):
        carry_d = [0 if b else None for b in carry_b]
        out_d = batch_graph(graph, size, c_d + carry_d + x_in)[1]
        return None, [d is not None for d in out_d[:num_carry]]
    _, carry_b = _carry_fixed_point(step, [d is not None for d in init_d])
    carry_d = [0 if b else None for b in carry_b]
    ny = len(graph.outvars) - num_carry
    g, out_d, k = batch_graph(graph, size, c_d + carry_d + x_in, carry_d + [None] * ny)
    init = [move_batch_dim(x, d, w, size) for x, d, w in zip(init, init_d, carry_d)]
    outs = scan_p.bind(*k, *consts, *init, *xs, graph=g, length=length, reverse=reverse,
                       num_consts=len(k) + num_consts, num_carry=num_carry, unroll=unroll)
    return outs, carry_d + [None if d is None else d + 1 for d in out_d[num_carry:]]


scan_p.def_rule("jvp", _scan_jvp)
scan_p.def_rule("partial_eval", _scan_partial_eval)
scan_p.def_rule("transpose", _scan_transpose)
scan_p.def_rule("batch", _scan_batch)
