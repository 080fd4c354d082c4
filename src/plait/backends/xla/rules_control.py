"""``to_stablehlo`` rules of the higher-order primitives: ``cond`` becomes
``stablehlo.case``, ``while`` and ``scan`` become ``stablehlo.while``, and
``jit_call``, the custom-derivative calls and ``custom_vmap`` calls become ``func.call``s of private
functions (one per sub-graph). A body holding a host callback gets the emitter's token:
``case`` branches take it from outside and return the new one, ``while`` loops carry it
(a ``while`` whose condition holds one evaluates the condition at the end of each
iteration, and once before the loop, so the calls keep their order).
:func:`call_traced` lowers a primitive through the ordinary program it stands for,
staged at lowering time and called as a private function: ``while_lin`` (reverse mode
through ``while``) as its ``while_loop``, and ``pmap_call`` (its rule lives with the
primitive in :mod:`plait.distributed.pmap_call`) as its replica program under a named
``vmap``."""
from __future__ import annotations

from typing import Callable

import numpy as np

from plait.backends.xla.emitter import (TOKEN_TYPE, Ctx, TokenChain, aval_type, const_values,
                                         i64_array, tensor_type)
from plait.backends.xla.rules import RULE, binary, compare, convert
from plait.core.call import jit_call_p
from plait.core.graph import closure_convert
from plait.core.staging import trace_to_graph
from plait.lax.control_flow.cond import cond_p
from plait.lax.control_flow.loops import while_p
from plait.lax.control_flow.scan import scan_p
from plait.lax.control_flow.while_ad import as_loop, while_lin_p
from plait.transforms import custom_derivatives as CD
from plait.transforms.custom_batching import custom_vmap_call_p


def _call(ctx, *args, graph, **_):
    return ctx.call_graph(graph, list(args), [aval_type(a) for a in ctx.in_avals])


for _p in (jit_call_p, CD.custom_jvp_call_p, CD.custom_vjp_call_p, custom_vmap_call_p):
    _p.def_rule(RULE, _call)


def _cond(ctx, index, *ops, branches):
    ia = ctx.in_avals[0]
    i32 = np.dtype(np.int32)
    idx = convert(ctx, index, (), ia.dtype, i32) if np.dtype(ia.dtype) != np.bool_ else \
        convert(ctx, index, (), np.bool_, i32)
    n = len(branches)
    idx = ctx.op1("stablehlo.clamp", [ctx.const(0, i32), idx, ctx.const(n - 1, i32)],
                  [tensor_type((), i32)] * 3, tensor_type((), i32))
    op_types = [aval_type(a) for a in ctx.in_avals[1:]]
    out_types = [aval_type(a) for a in ctx.out_avals]
    threaded = any(ctx.needs_token(b) for b in branches)
    if threaded:
        out_types = [TOKEN_TYPE] + out_types
    regions = []
    for b in branches:
        def body(sub, _args, _b=b):
            if not threaded:
                return sub.call_graph(_b, list(ops), op_types), out_types
            sub.chain = TokenChain(ctx.chain.token, ctx.chain.context)
            outs = sub.call_graph(_b, list(ops), op_types)
            return [sub.chain.token] + outs, out_types
        regions.append(ctx.region([], body))
    if not out_types:
        return []
    outs = ctx.op("stablehlo.case", [idx], [tensor_type((), i32)], out_types, "", regions)
    if threaded:
        ctx.chain.token = outs[0]
        return outs[1:]
    return outs


cond_p.def_rule(RULE, _cond)


def _while(ctx, *args, cond_graph, body_graph, cond_nconsts, body_nconsts):
    if ctx.needs_token(cond_graph):
        return _while_cond_effects(ctx, list(args), cond_graph, body_graph, cond_nconsts,
                                   body_nconsts)
    if ctx.needs_token(body_graph):
        return _while_body_effects(ctx, list(args), cond_graph, body_graph, cond_nconsts,
                                   body_nconsts)
    types = [aval_type(a) for a in ctx.in_avals]
    nc, nb = cond_nconsts, body_nconsts

    def cond_body(sub, xs):
        r = sub.call_graph(cond_graph, xs[:nc] + xs[nc + nb:], types[:nc] + types[nc + nb:])
        return r, [tensor_type((), np.bool_)]

    def loop_body(sub, xs):
        r = sub.call_graph(body_graph, xs[nc:], types[nc:])
        return xs[:nc + nb] + r, types

    outs = ctx.op("stablehlo.while", list(args), types, types, "",
                  [ctx.region(types, cond_body), ctx.region(types, loop_body)])
    return outs[nc + nb:]


def _while_body_effects(ctx, args, cond_graph, body_graph, nc, nb):
    """A ``while`` whose body holds a host callback: the token chain is the last carry."""
    k = len(ctx.chain.values())
    types = [aval_type(a) for a in ctx.in_avals] + ctx.chain.types()

    def cond_body(sub, xs):
        r = sub.call_graph(cond_graph, xs[:nc] + xs[nc + nb:-k],
                           types[:nc] + types[nc + nb:-k])
        return r, [tensor_type((), np.bool_)]

    def loop_body(sub, xs):
        sub.chain = TokenChain.of(xs[-k:])
        r = sub.call_graph(body_graph, xs[nc:-k], types[nc:-k])
        return xs[:nc + nb] + r + sub.chain.values(), types

    outs = ctx.op("stablehlo.while", args + ctx.chain.values(), types, types, "",
                  [ctx.region(types, cond_body), ctx.region(types, loop_body)])
    ctx.chain.token = outs[-k]
    return outs[nc + nb:-k]


def _while_cond_effects(ctx, args, cond_graph, body_graph, nc, nb):
    """A ``while`` whose condition holds a host callback: the condition runs once before
    the loop and at the end of each iteration (the order interp calls it in); the loop
    carries its last value and the token."""
    carry_types = [aval_type(a) for a in ctx.in_avals]
    b = tensor_type((), np.bool_)
    k = len(ctx.chain.values())
    n = len(carry_types)
    types = carry_types + [b] + ctx.chain.types()

    def test(c, xs):
        return c.call_graph(cond_graph, xs[:nc] + xs[nc + nb:n],
                            carry_types[:nc] + carry_types[nc + nb:])[0]

    def cond_body(sub, xs):
        return [xs[n]], [b]

    def loop_body(sub, xs):
        sub.chain = TokenChain.of(xs[-k:])
        new = xs[:nc + nb] + sub.call_graph(body_graph, xs[nc:n], carry_types[nc:])
        go = test(sub, new)
        return new + [go] + sub.chain.values(), types

    go = test(ctx, args)
    outs = ctx.op("stablehlo.while", args + [go] + ctx.chain.values(), types, types, "",
                  [ctx.region(types, cond_body), ctx.region(types, loop_body)])
    ctx.chain.token = outs[-k]
    return outs[nc + nb:n]


while_p.def_rule(RULE, _while)


def _scan(ctx, *args, graph, length, reverse, num_consts, num_carry, unroll):
    avals = ctx.in_avals
    nc, nk = num_consts, num_carry
    xs_avals = avals[nc + nk:]
    ys_avals = ctx.out_avals[nk:]
    if length == 0:     # no iteration: the carry as given, empty ys (a loop would slice 0 rows)
        return list(args[nc:nc + nk]) + [ctx.full(0, a.shape, a.dtype) for a in ys_avals]
    # the position counter is plait's own (not a graph value): int32 as in jax's scans
    # (XLA's dynamic slices index in int32 anyway); int64 only past int32's range
    i64 = np.dtype(np.int32 if length < 2 ** 31 - 1 else np.int64)
    ti = tensor_type((), i64)
    ys0 = [ctx.full(0, a.shape, a.dtype) for a in ys_avals]
    state = [ctx.const(0, i64)] + list(args) + ys0
    types = [ti] + [aval_type(a) for a in avals] + [aval_type(a) for a in ys_avals]
    threaded = ctx.needs_token(graph)
    n_state = len(types)
    if threaded:        # the token chain is the last values the loop carries
        state += ctx.chain.values()
        types += ctx.chain.types()
    body_in = [aval_type(a) for a in graph.in_avals]
    n_args = 1 + len(avals)

    def cond_body(sub, s):
        return [compare(sub, s[0], sub.const(length, i64), (), i64, "LT")], \
            [tensor_type((), np.bool_)]

    def loop_body(sub, s):
        i = s[0]
        pos = binary(sub, "stablehlo.subtract", sub.const(length - 1, i64), i, (), i64) \
            if reverse else i
        zero = sub.const(0, i64)
        consts, carry, xs = s[1:1 + nc], s[1 + nc:1 + nc + nk], s[1 + nc + nk:n_args]
        ys = s[n_args:n_state]
        if threaded:
            sub.chain = TokenChain.of(s[n_state:])
        x_t = []
        for x, a in zip(xs, xs_avals):
            sl = sub.op1("stablehlo.dynamic_slice", [x, pos] + [zero] * (len(a.shape) - 1),
                         [aval_type(a)] + [ti] * len(a.shape),
                         tensor_type((1,) + tuple(a.shape[1:]), a.dtype),
                         f"slice_sizes = {i64_array((1,) + tuple(a.shape[1:]))}")
            x_t.append(sub.op1("stablehlo.reshape", [sl],
                               [tensor_type((1,) + tuple(a.shape[1:]), a.dtype)],
                               tensor_type(a.shape[1:], a.dtype)))
        outs = sub.call_graph(graph, consts + carry + x_t, body_in)
        new_ys = []
        for y, buf, a in zip(outs[nk:], ys, ys_avals):
            one = tensor_type((1,) + tuple(a.shape[1:]), a.dtype)
            y1 = sub.op1("stablehlo.reshape", [y], [tensor_type(a.shape[1:], a.dtype)], one)
            new_ys.append(sub.op1("stablehlo.dynamic_update_slice",
                                  [buf, y1, pos] + [zero] * (len(a.shape) - 1),
                                  [aval_type(a), one] + [ti] * len(a.shape), aval_type(a)))
        i1 = binary(sub, "stablehlo.add", i, sub.const(1, i64), (), i64)
        token = sub.chain.values() if threaded else []
        return [i1] + consts + outs[:nk] + xs + new_ys + token, types

    outs = ctx.op("stablehlo.while", state, types, types, "",
                  [ctx.region(types, cond_body), ctx.region(types, loop_body)])
    if threaded:
        ctx.chain.token = outs[n_state]
    return outs[1 + nc:1 + nc + nk] + outs[n_args:n_state]


scan_p.def_rule(RULE, _scan)


def call_traced(ctx: Ctx, fn: Callable, args: list, description: str,
                in_avals: list | None = None) -> list:
    """``fn`` (flat arrays in, flat list out) staged on ``in_avals`` (by default the
    rule's operands' avals) and emitted as a ``func.call``; the staged graph's constants
    become ``stablehlo.constant`` operands of the call."""
    closed, _ = trace_to_graph(fn, ctx.in_avals if in_avals is None else in_avals,
                               description=description)
    g = closure_convert(closed)
    consts = [ctx.const(c, v.aval.dtype)
              for v, c in zip(closed.graph.constvars, const_values(closed))]
    return ctx.call_graph(g, consts + list(args), [aval_type(v.aval) for v in g.invars])


def _while_lin(ctx, *args, **params):
    return call_traced(ctx, as_loop(**params), list(args),
                       "the StableHLO lowering of while_lin (its while_loop)")


while_lin_p.def_rule(RULE, _while_lin)
