"""Reverse mode through ``while``: the linear loop ``while_lin`` and its transpose.

JAX refuses ``grad`` of ``while_loop`` because the trip count is only known at run
time. plait splits the loop when it is linearized (``while``'s partial-eval rule, with
a predicate that depends on known values only):

1. a *known* loop runs the primal carries and counts the trips ``n``;
2. ``while_lin`` (staged in the linear graph) takes the known body constants, the
   initial primal carry ``c0``, ``n`` and the tangents; its value is the tangent loop
   (each step recomputes the primal step to get its residuals).
3. Its transpose runs the transposed body for ``k = n-1 .. 0``. The primal carry of
   step ``k`` is *recomputed*: one forward pass saves ``CHECKPOINTS`` (32) carries,
   at steps ``0, s, 2s, ...`` with ``s = ceil(n / 32)``, and step ``k`` is reached from
   the checkpoint before it in fewer than ``s`` steps. The backward pass needs no
   storage that grows with ``n`` (shapes stay static, the loops stay native C on the
   native backend, the vjp function can be called again or vmapped), at the price of
   about ``n + n^2 / 64`` extra primal body evaluations (``2n`` up to 32 trips).

``while_loop(..., max_steps=N)`` takes the other route: it becomes a ``scan`` of ``N``
steps whose body is a ``cond`` (finished steps pass the carry through), so the
residuals of every step are stored in a fixed tape of ``N`` entries and the backward
pass costs one transposed body per step.
"""
from __future__ import annotations

import numpy as np

from plait.core.ad_util import UndefinedPrimal
from plait.core.effects import drop_output_free_effects
from plait.core.graph import eval_graph, run_graph
from plait.core.graph_transforms import graph_transform
from plait.core.primitive import new_primitive
from plait.core.trace import concrete_value
from plait.lax.control_flow.common import closed_to_traced, split_list

while_lin_p = new_primitive("while_lin", multiple_results=True)


def _split(args, nkc, nkcarry, nuc):
    kc, c0, rest = args[:nkc], args[nkc:nkc + nkcarry], args[nkc + nkcarry:]
    n, uc, u = rest[0], rest[1:1 + nuc], rest[1 + nuc:]
    return list(kc), list(c0), n, list(uc), list(u)


def _abstract(*avals, known_graph, unknown_graph, nkc, nkcarry, nuc):
    return list(unknown_graph.out_avals)


def _impl(*args, known_graph, unknown_graph, nkc, nkcarry, nuc):
    kc, c, n, uc, u = _split(args, nkc, nkcarry, nuc)
    known_graph = drop_output_free_effects(known_graph)
    for _ in range(int(concrete_value(n))):
        outs = run_graph(known_graph, kc + c)
        c, res = outs[:nkcarry], outs[nkcarry:]
        u = run_graph(unknown_graph, res + uc + u)
    return u


CHECKPOINTS = 32   # primal carries kept by the backward pass (a static-size buffer)


def _row_mask(j, shape):
    """Bool array of ``shape`` true on row ``j`` of axis 0 (one-hot row selection keeps
    checkpoint reads and writes elementwise, so the loops compile to native code)."""
    from plait.lax.elementwise import eq
    from plait.lax.shape_ops import broadcast_in_dim, broadcasted_iota
    return eq(broadcasted_iota(np.int32, shape, 0), broadcast_in_dim(j, shape, ()))


def _read_row(buf, j):
    """Row ``j`` of ``buf``."""
    from plait.core.trace import get_aval
    from plait.lax._ad_helpers import zeros
    from plait.lax.elementwise import bitwise_and, select
    from plait.lax.reductions import reduce_or, reduce_sum
    a = get_aval(buf)
    mask = _row_mask(j, a.shape)
    if a.dtype == np.bool_:
        return reduce_or(bitwise_and(mask, buf), (0,))
    return reduce_sum(select(mask, buf, zeros(a)), (0,))


def _checkpoint_carries(c0: list, n, primal_step):
    """``(stride, buffers)``: the primal carries of steps ``0, s, 2s, ...`` with
    ``s = max(1, ceil(n / CHECKPOINTS))``, each leaf in a ``[CHECKPOINTS, ...]`` buffer."""
    from plait.core.trace import get_aval
    from plait.lax._ad_helpers import zeros
    from plait.lax.control_flow.loops import while_loop
    from plait.lax.elementwise import add, bitwise_and, div, eq, lt, max as lmax, rem, select
    from plait.lax.shape_ops import broadcast_in_dim
    K = CHECKPOINTS
    stride = lmax(div(add(n, np.int32(K - 1)), np.int32(K)), np.int32(1))
    bufs = [zeros(get_aval(c).update(shape=(K,) + get_aval(c).shape, weak_type=False))
            for c in c0]

    def body(state):
        k, c, bufs = state
        at = eq(rem(k, stride), np.int32(0))
        j = div(k, stride)
        new = []
        for b, ci in zip(bufs, c):
            shape = get_aval(b).shape
            mask = bitwise_and(_row_mask(j, shape), broadcast_in_dim(at, shape, ()))
            row = broadcast_in_dim(ci, shape, tuple(range(1, len(shape))))
            new.append(select(mask, row, b))
        return add(k, np.int32(1)), primal_step(k, c), new
    _, _, bufs = while_loop(lambda st: lt(st[0], n), body, (np.int32(0), list(c0), bufs))
    return stride, bufs


def _transpose(cts, *args, known_graph, unknown_graph, nkc, nkcarry, nuc):
    """Transposed body for k = n-1 .. 0. The primal carry of step k is recomputed from
    the nearest checkpoint before it (``CHECKPOINTS`` carries saved by one forward
    pass), so the backward pass costs about ``n + n^2 / (2 * CHECKPOINTS)`` primal
    steps and a fixed amount of memory."""
    from plait.lax._ad_helpers import instantiate, zeros
    from plait.lax.control_flow.loops import fori_loop, while_loop
    from plait.lax.elementwise import add, div, gt, mul, sub
    transpose_graph = graph_transform("transpose_graph")
    kc, c0, n, uc, u = _split(args, nkc, nkcarry, nuc)
    known_graph = drop_output_free_effects(known_graph)   # the forward loop printed
    nres = len(unknown_graph.invars) - nuc - len(u)
    tu = closed_to_traced(transpose_graph(unknown_graph, [False] * nres + [True] * (nuc + len(u))))
    ct_u = [instantiate(c) for c in cts]
    acc = [zeros(v.aval) for v in unknown_graph.invars[nres:nres + nuc]]

    def primal_step(_, c):
        return eval_graph(known_graph, [], *kc, *c)[:nkcarry]
    stride, bufs = _checkpoint_carries(c0, n, primal_step)

    def body(state):
        k, ct, acc = state
        k = sub(k, np.int32(1))
        j = div(k, stride)
        start = [_read_row(b, j) for b in bufs]
        ck = fori_loop(mul(j, stride), k, primal_step, start)
        res = eval_graph(known_graph, [], *kc, *ck)[nkcarry:]
        outs = eval_graph(tu.graph, tu.consts, *res, *ct)
        ct_uc, ct_new = split_list(outs, [nuc])
        return k, list(ct_new), [add(a, b) for a, b in zip(acc, ct_uc)]
    _, ct_u, acc = while_loop(lambda s: gt(s[0], np.int32(0)), body,
                              (n, ct_u, acc))
    return ([None] * (nkc + nkcarry + 1)
            + [a if isinstance(x, UndefinedPrimal) else None for a, x in zip(acc, uc)]
            + [c if isinstance(x, UndefinedPrimal) else None for c, x in zip(ct_u, u)])


def as_loop(known_graph, unknown_graph, nkc, nkcarry, nuc):
    """``while_lin`` written as a ``while_loop`` (for transformations other than transpose,
    and for the xla backend, which lowers that loop)."""
    from plait.lax.control_flow.loops import while_loop
    from plait.lax.elementwise import add, lt

    known_graph = drop_output_free_effects(known_graph)

    def run(*args):
        kc, c0, n, uc, u0 = _split(args, nkc, nkcarry, nuc)

        def body(s):
            k, c, u = s
            outs = eval_graph(known_graph, [], *kc, *c)
            u = eval_graph(unknown_graph, [], *outs[nkcarry:], *uc, *u)
            return add(k, np.int32(1)), outs[:nkcarry], u
        return while_loop(lambda s: lt(s[0], n), body, (np.int32(0), c0, u0))[2]
    return run


def _jvp(primals, tangents, **params):
    """Forward mode of the loop form (e.g. forward-over-reverse through ``linearize``)."""
    from plait.core.ad_util import Zero
    from plait.core.staging import trace_to_graph
    from plait.core.trace import get_aval
    from plait.lax._ad_helpers import tangent_aval
    jvp_graph = graph_transform("jvp_graph")
    closed, _ = trace_to_graph(as_loop(**params), [get_aval(p) for p in primals],
                               description="jvp of while_lin")
    nz = [not isinstance(t, Zero) for t in tangents]
    jg, out_nz = jvp_graph(closed, nz)
    outs = eval_graph(jg.graph, jg.consts, *primals, *[t for t, z in zip(tangents, nz) if z])
    n = len(closed.graph.outvars)
    t_iter = iter(outs[n:])
    return outs[:n], [next(t_iter) if z else Zero(tangent_aval(a))
                      for z, a in zip(out_nz, closed.out_avals)]


def _batch(vals, dims, **params):
    vmap = graph_transform("vmap")
    outs = vmap(as_loop(**params), in_axes=tuple(dims))(*vals)
    return list(outs), [0] * len(outs)


while_lin_p.def_abstract_eval(_abstract)
while_lin_p.def_rule("batch", _batch)
while_lin_p.def_rule("jvp", _jvp)
while_lin_p.def_impl(_impl)
while_lin_p.def_rule("transpose", _transpose)


def stage_while_lin(trace, tracers, cond_graph, body_graph, cond_nconsts, body_nconsts,
                    cc_uk, bc_uk, carry_uk):
    """The partial evaluation of a ``while`` whose predicate is known: a known loop
    (counting its trips) and a staged ``while_lin`` for the unknown carries."""
    from plait.lax.control_flow.common import select_inputs
    from plait.lax.control_flow.loops import while_loop, _split as split3
    from plait.lax.elementwise import add
    partial_eval_graph = graph_transform("partial_eval_graph")
    known_cg, unknown_g, _, _ = partial_eval_graph(body_graph, bc_uk + carry_uk,
                                                      instantiate=carry_uk)
    kt = closed_to_traced(known_cg)
    cc, bc, init = split3(tracers, cond_nconsts, body_nconsts)
    kcc = [t.known for t, u in zip(cc, cc_uk) if not u]
    kbc = [t.known for t, u in zip(bc, bc_uk) if not u]
    c0 = [t.known for t, u in zip(init, carry_uk) if not u]
    cond_k = select_inputs(cond_graph, [not u for u in cc_uk] + [not u for u in carry_uk])
    kconsts = list(kt.consts) + kbc
    nk = len(c0)

    def cond(state):
        return eval_graph(cond_k, [], *kcc, *state[1])[0]

    def body(state):
        return add(state[0], np.int32(1)), eval_graph(kt.graph, [], *kconsts,
                                                      *state[1])[:nk]
    n, c_final = while_loop(cond, body, (np.int32(0), c0))
    ubc = [t for t, u in zip(bc, bc_uk) if u]
    uinit = [t for t, u in zip(init, carry_uk) if u]
    params = dict(known_graph=kt.graph, unknown_graph=unknown_g, nkc=len(kconsts),
                  nkcarry=nk, nuc=len(ubc))
    u_out = iter(trace.stage(while_lin_p, [*map(trace.pure, kconsts + c0 + [n]), *ubc, *uinit],
                             params))
    k_out = iter(c_final)
    return [next(u_out) if u else trace.pure(next(k_out)) for u in carry_uk]
