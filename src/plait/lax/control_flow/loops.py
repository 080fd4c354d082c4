"""``while_loop`` and ``fori_loop``.

``while`` is one primitive with operands ``(*cond_consts, *body_consts, *carry)``
and params ``cond_graph`` (carry -> bool scalar), ``body_graph`` (carry ->
carry), ``cond_nconsts`` and ``body_nconsts``; each graph takes its closed-over
values as leading inputs. ``fori_loop`` with static bounds is a ``scan`` (so it
can be reverse-differentiated); with traced bounds it is a ``while``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plait.core import dtypes
from plait.core.ad_util import Zero
from plait.core.graph import Graph, Var, run_graph
from plait.core.primitive import new_primitive
from plait.core.pytree import TreeDef, tree_unflatten
from plait.core.trace import get_aval, is_tracer, concrete_value
from plait.core.graph_transforms import graph_transform
from plait.errors import ControlFlowError, PlaitTypeError
from plait.lax.control_flow.common import (trace_fun, flatten_operands, check_tree,
                                           show_types, promote_weak_inits,
                                           check_operands, select_inputs, dce_sub,
                                           jvp_graph, permute_inputs)

while_p = new_primitive("while", multiple_results=True)


def _split(args, cond_nconsts, body_nconsts):
    return (args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts],
            args[cond_nconsts + body_nconsts:])


def _while_abstract(*avals, cond_graph, body_graph, cond_nconsts, body_nconsts):
    cc, bc, carry = _split(avals, cond_nconsts, body_nconsts)
    check_operands("while", list(cc) + list(carry), cond_graph.in_avals, "cond_graph")
    check_operands("while", list(bc) + list(carry), body_graph.in_avals, "body_graph")
    out = cond_graph.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != dtypes.bool_:
        raise ControlFlowError(f"while: cond_graph must return one bool scalar, got "
                               f"{[a.str_short() for a in out]}")
    check_operands("while", body_graph.out_avals, [a for a in carry], "the carry")
    return list(carry)


def _while_impl(*args, cond_graph, body_graph, cond_nconsts, body_nconsts):
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    cc, bc, carry = list(cc), list(bc), list(carry)
    while run_graph(cond_graph, cc + carry)[0]:
        carry = run_graph(body_graph, bc + carry)
    return carry


while_p.def_abstract_eval(_while_abstract)
# the body's constants follow the cond's (for the loop-invariant code motion pass)
while_p.def_rule("loop_invariants", lambda eqn: [("body_graph", "body_nconsts",
                                                  eqn.params["cond_nconsts"])])
while_p.def_impl(_while_impl)


def _while_dce(eqn, used_outputs):
    """Remove carries nothing live depends on (a fixed point over the body)."""
    if not any(used_outputs):
        return None, []
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    cond_g, cond_used = dce_sub(p["cond_graph"])
    live = [u or c for u, c in zip(used_outputs, cond_used[ncc:])]
    while True:
        body_g, body_used = dce_sub(p["body_graph"], live)
        new_live = [l or u for l, u in zip(live, body_used[nbc:])]
        if new_live == live:
            break
        live = new_live
    keep_cc, keep_bc = cond_used[:ncc], body_used[:nbc]
    cond_g = select_inputs(cond_g, keep_cc + live)
    body_g = select_inputs(body_g, keep_bc + live)
    cc, bc, init = _split(eqn.inputs, ncc, nbc)
    inputs = ([a for a, k in zip(cc, keep_cc) if k] + [a for a, k in zip(bc, keep_bc) if k]
              + [a for a, k in zip(init, live) if k])
    params = dict(p, cond_graph=cond_g, body_graph=body_g, cond_nconsts=sum(keep_cc),
                  body_nconsts=sum(keep_bc))
    new = eqn.replace(inputs=inputs, outputs=[o for o, k in zip(eqn.outputs, live) if k],
                      params=params)
    return new, [True] * len(inputs)


while_p.def_rule("dce", _while_dce)


# --- Python-facing functions ------------------------------------------------------
_CARRY_HINT = ("  The loop carry must keep its pytree structure, shapes and dtypes on every "
               "iteration;\n  cast the initial value (or the body's result) so they agree.")


def trace_loop_body(stage: Callable, init_leaves: list, init_tree, what: str,
                    carry_of: Callable):
    """Stage a loop body on the carry's types, promoting weak initial carries.

    ``stage(carry_avals)`` traces the body; ``carry_of(traced)`` returns the carry
    part of its result as ``(tree, avals)``. A weakly typed initial carry whose
    body result has another dtype is converted and the body traced again.
    Returns ``(traced, init_leaves)``.
    """
    for _ in range(2):
        avals = [get_aval(x) for x in init_leaves]
        traced = stage(avals)
        out_tree, out_avals = carry_of(traced)
        new_leaves, changed = promote_weak_inits(init_leaves, avals, out_avals) \
            if out_tree == init_tree else (init_leaves, False)
        if not changed:
            break
        init_leaves = new_leaves
    check_tree(what, "the initial carry", init_tree, avals, "the body's result", out_tree,
               out_avals, _CARRY_HINT)
    return traced, init_leaves


def while_loop(cond_fun: Callable, body_fun: Callable, init_val, *,
               max_steps: int | None = None):
    """``while cond_fun(val): val = body_fun(val)``, staged as one loop.

    ``val`` is a pytree whose structure, shapes and dtypes ``body_fun`` preserves;
    ``cond_fun`` returns a bool scalar. Differentiable in both modes (unlike JAX):
    reverse mode recomputes each step's primal carry from the nearest of 32 saved
    carries (no storage growing with the trip count; about ``n + n^2/64`` extra body
    evaluations, see ``while_ad``). With ``max_steps=N`` the loop runs at most ``N`` steps as a ``scan``
    whose finished steps pass the carry through: reverse mode then stores every
    step's residuals in a fixed tape of ``N`` entries and needs no recomputation.
    """
    if max_steps is not None:
        return _bounded_while(cond_fun, body_fun, init_val, int(max_steps))
    init_leaves, init_tree = flatten_operands(init_val)
    what = "plait.lax.while_loop"

    def stage_body(avals):
        return trace_fun(body_fun, _args_tree(init_tree), avals, f"body_fun of {what}")

    body, init_leaves = trace_loop_body(stage_body, init_leaves, init_tree, what,
                                        lambda t: (t.out_tree, t.out_avals))
    avals = [get_aval(x) for x in init_leaves]
    cnd = trace_fun(cond_fun, _args_tree(init_tree), avals, f"cond_fun of {what}")
    out = cnd.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != dtypes.bool_:
        raise ControlFlowError(
            f"{what}: cond_fun must return a bool scalar, got "
            f"{show_types(cnd.out_tree, out)}; compare with plait.lax.lt/gt (or "
            f"plait.numpy functions) and reduce arrays with all/any")
    outs = while_p.bind(*cnd.consts, *body.consts, *init_leaves, cond_graph=cnd.graph,
                        body_graph=body.graph, cond_nconsts=cnd.num_consts,
                        body_nconsts=body.num_consts)
    return tree_unflatten(init_tree, outs)


def _bounded_while(cond_fun: Callable, body_fun: Callable, init_val, max_steps: int):
    """``while_loop`` of at most ``max_steps`` steps: a ``scan`` of ``cond`` steps."""
    from plait.lax.control_flow.cond import cond
    from plait.lax.control_flow.scan import scan
    from plait.lax.elementwise import bitwise_and, bitwise_not, convert_element_type
    if max_steps < 0:
        raise PlaitTypeError(f"plait.lax.while_loop: max_steps must be >= 0, got {max_steps}")

    def step(carry, _):
        running, val = carry
        go = bitwise_and(running, convert_element_type(cond_fun(val), dtypes.bool_, False))
        return (go, cond(go, body_fun, lambda v: v, val)), None
    (_, out), _ = scan(step, (np.bool_(True), init_val), None, length=max_steps)
    return out


def _args_tree(carry_tree: TreeDef) -> TreeDef:
    """The argument-tuple structure ``(carry,)`` of a one-argument function."""
    return TreeDef(tuple, None, (carry_tree,))


def _static_int(x):
    """The Python int of a concrete integer scalar, or None if it is traced."""
    return None if is_tracer(x) else int(concrete_value(x))


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int = 1):
    """``for i in range(lower, upper): val = body_fun(i, val)``; returns ``val``.

    With static (concrete) bounds this is a ``scan`` (reverse-differentiable);
    with traced bounds it is a ``while_loop`` (forward mode only).
    """
    from plait.lax.elementwise import add, lt, convert_element_type
    from plait.lax.control_flow.scan import scan
    for b in (lower, upper):
        a = get_aval(b)
        if a.shape != () or not dtypes.is_integer(a.dtype):
            raise PlaitTypeError(f"plait.lax.fori_loop: bounds must be integer scalars, "
                                 f"got {a.str_short()}")
    la, ua = get_aval(lower), get_aval(upper)
    dt, weak = dtypes.result_type((la.dtype, la.weak_type), (ua.dtype, ua.weak_type))
    lo, hi = _static_int(lower), _static_int(upper)
    if lo is not None and hi is not None:
        i0 = convert_element_type(lo, dt, weak)

        def step(carry, _):
            i, x = carry
            return (add(i, 1), body_fun(i, x)), None
        (_, out), _ = scan(step, (i0, init_val), None, length=max(hi - lo, 0),
                           unroll=unroll)
        return out
    lower = convert_element_type(lower, dt, weak)
    upper = convert_element_type(upper, dt, weak)

    def wbody(c):
        i, x, u = c
        return add(i, 1), body_fun(i, x), u
    return while_loop(lambda c: lt(c[0], c[2]), wbody, (lower, init_val, upper))[1]


# --- autodiff rules -------------------------------------------------------------
def _while_jvp(primals, tangents, *, cond_graph, body_graph, cond_nconsts, body_nconsts):
    """Forward mode: the body's JVP carries the tangents; cond ignores them."""
    from plait.lax._ad_helpers import tangent_aval, instantiate
    cc, bc, init = _split(primals, cond_nconsts, body_nconsts)
    _, bct, init_t = _split(tangents, cond_nconsts, body_nconsts)
    bc_nz = [not isinstance(t, Zero) for t in bct]
    n = len(init)

    def step(carry_nz):
        traced, out_nz = jvp_graph(body_graph, bc_nz + carry_nz, carry_nz)
        return (traced, out_nz), out_nz
    init_nz = [not isinstance(t, Zero) for t in init_t]
    jt, carry_nz = None, init_nz
    for _ in range(n + 1):
        (jt, out_nz), flags = step(carry_nz)
        new = [a or b for a, b in zip(carry_nz, flags)]
        if new == carry_nz:
            break
        carry_nz = new
    n_bt, n_ct = sum(bc_nz), sum(carry_nz)
    nj = jt.num_consts
    # jt inputs: jconsts, body consts, carry, body-const tangents, carry tangents
    order = (list(range(nj + body_nconsts)) +
             list(range(nj + body_nconsts + n, nj + body_nconsts + n + n_bt)) +
             list(range(nj + body_nconsts, nj + body_nconsts + n)) +
             list(range(nj + body_nconsts + n + n_bt, nj + body_nconsts + n + n_bt + n_ct)))
    body = permute_inputs(jt.graph, order)
    t_avals = [tangent_aval(a) for a, z in zip(body_graph.out_avals, carry_nz) if z]
    cond = Graph([], cond_graph.invars + [Var(a) for a in t_avals], cond_graph.eqns,
                 cond_graph.outvars, cond_graph.name)
    outs = while_p.bind(*cc, *jt.consts, *bc, *[t for t, z in zip(bct, bc_nz) if z],
                        *init, *[instantiate(t) for t, z in zip(init_t, carry_nz) if z],
                        cond_graph=cond, body_graph=body, cond_nconsts=cond_nconsts,
                        body_nconsts=nj + body_nconsts + n_bt)
    t_iter = iter(outs[n:])
    return outs[:n], [next(t_iter) if z else Zero(tangent_aval(get_aval(p)))
                      for z, p in zip(carry_nz, init)]


def _while_partial_eval(trace, tracers, *, cond_graph, body_graph, cond_nconsts,
                        body_nconsts):
    """Known carries (those not depending on unknown values) come from a known loop
    that counts its trips; the unknown ones from a staged ``while_lin`` (reverse mode:
    ``while_ad``). A predicate depending on unknown values stages the whole loop."""
    partial_eval_graph = graph_transform("partial_eval_graph")
    params = dict(cond_graph=cond_graph, body_graph=body_graph, cond_nconsts=cond_nconsts,
                  body_nconsts=body_nconsts)
    uk = [not t.is_known for t in tracers]
    cc_uk, bc_uk, carry_uk = _split(uk, cond_nconsts, body_nconsts)
    cc_uk, bc_uk, carry_uk = list(cc_uk), list(bc_uk), list(carry_uk)
    for _ in range(len(carry_uk) + 1):
        out_uk = partial_eval_graph(body_graph, bc_uk + carry_uk)[2]
        new = [a or b for a, b in zip(carry_uk, out_uk)]
        if new == carry_uk:
            break
        carry_uk = new
    cond_uk = partial_eval_graph(cond_graph, cc_uk + carry_uk)[2][0]
    if cond_uk or all(carry_uk):
        return trace.stage(while_p, tracers, params)
    from plait.lax.control_flow.while_ad import stage_while_lin
    return stage_while_lin(trace, tracers, cond_graph, body_graph, cond_nconsts,
                           body_nconsts, cc_uk, bc_uk, carry_uk)


def _while_transpose(cts, *args, **params):
    raise ControlFlowError(
        "reverse-mode differentiation (grad, vjp, jacrev) of this plait.lax.while_loop is "
        "not supported: its predicate depends on the values being differentiated, so "
        "the trip count itself would need a derivative. Make cond_fun depend on values "
        "computed with plait.lax.stop_gradient, or use scan/fori_loop with static bounds.")


def _while_batch(vals, dims, *, cond_graph, body_graph, cond_nconsts, body_nconsts):
    """Carries that become batched are found by a fixed point. An unbatched predicate
    keeps one loop; a batched one loops while any lane runs, and a lane whose
    predicate is false keeps its carry (finished lanes are frozen by a select)."""
    batch_graph = graph_transform("batch_graph")
    from plait.lax._batch_helpers import batch_size, move_batch_dim
    size = batch_size(vals, dims)
    cc, bc, init = _split(vals, cond_nconsts, body_nconsts)
    cc_d, bc_d, init_d = (list(x) for x in _split(dims, cond_nconsts, body_nconsts))
    carry_b = [d is not None for d in init_d]
    for _ in range(len(carry_b) + 1):
        out_d = batch_graph(body_graph, size, bc_d + [0 if b else None for b in carry_b])[1]
        new = [b or d is not None for b, d in zip(carry_b, out_d)]
        if new == carry_b:
            break
        carry_b = new
    carry_d = [0 if b else None for b in carry_b]
    pred_batched = batch_graph(cond_graph, size, cc_d + carry_d)[1][0] is not None
    if pred_batched:
        carry_d = [0] * len(carry_b)
    init = [move_batch_dim(x, d, w, size) for x, d, w in zip(init, init_d, carry_d)]
    body_g, _, body_k = batch_graph(body_graph, size, bc_d + carry_d, carry_d)
    cond_g, _, cond_k = batch_graph(cond_graph, size, cc_d + carry_d)
    cond_ops, body_ops = list(cond_k) + list(cc), list(body_k) + list(bc)
    if not pred_batched:
        outs = while_p.bind(*cond_ops, *body_ops, *init, cond_graph=cond_g, body_graph=body_g,
                            cond_nconsts=len(cond_ops), body_nconsts=len(body_ops))
        return outs, carry_d
    cond_t, body_t = _lanewise_loop(cond_g, body_g, cond_ops, body_ops, init)
    outs = while_p.bind(*cond_t.consts, *cond_ops, *body_t.consts, *cond_ops, *body_ops,
                        *init, cond_graph=cond_t.graph, body_graph=body_t.graph,
                        cond_nconsts=cond_t.num_consts + len(cond_ops),
                        body_nconsts=body_t.num_consts + len(cond_ops) + len(body_ops))
    return outs, carry_d


def _lanewise_loop(cond_g: Graph, body_g: Graph, cond_ops: list, body_ops: list, init: list):
    """Loop graphs for a batched predicate (lanes at dim 0): ``cond`` is 'any lane
    runs'; ``body`` takes the cond operands too and updates only running lanes."""
    from plait.core.graph import eval_graph
    from plait.core.staging import trace_to_graph
    from plait.lax.control_flow.common import closed_to_traced
    from plait.lax.elementwise import select
    from plait.lax.reductions import reduce_or
    from plait.lax.shape_ops import broadcast_in_dim
    nc, nb = len(cond_ops), len(body_ops)

    def cond(*args):
        return [reduce_or(eval_graph(cond_g, [], *args)[0], (0,))]

    def body(*args):
        c_ops, b_ops, carry = args[:nc], args[nc:nc + nb], args[nc + nb:]
        running = eval_graph(cond_g, [], *c_ops, *carry)[0]
        new = eval_graph(body_g, [], *b_ops, *carry)
        return [select(broadcast_in_dim(running, get_aval(c).shape, (0,)), n, c)
                for n, c in zip(new, carry)]
    c_avals = [get_aval(x) for x in cond_ops]
    b_avals = [get_aval(x) for x in body_ops]
    carry_avals = [get_aval(x) for x in init]
    cond_c, _ = trace_to_graph(cond, c_avals + carry_avals, description="vmap of a while cond")
    body_c, _ = trace_to_graph(body, c_avals + b_avals + carry_avals,
                               description="vmap of a while body")
    return closed_to_traced(cond_c), closed_to_traced(body_c)


while_p.def_rule("jvp", _while_jvp)
while_p.def_rule("partial_eval", _while_partial_eval)
while_p.def_rule("transpose", _while_transpose)
while_p.def_rule("batch", _while_batch)
