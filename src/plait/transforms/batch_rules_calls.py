"""``batch`` (vmap) rules of the call-like primitives: ``jit_call`` and the custom
derivative calls ``custom_jvp_call``, ``custom_vjp_call`` and ``custom_lin``.

``jit_call`` batches its sub-graph once per batch pattern (:func:`batch_graph` is
cached) and calls the batched graph, so ``vmap(jit(f))`` stays one compiled call.
The custom calls batch their graph and wrap the user's rule functions so that
they run under ``vmap`` themselves: a batched ``custom_jvp`` function keeps its
custom JVP, a batched ``custom_vjp`` function its custom VJP. Wrapped outputs,
residuals and cotangents always carry the batch dimension at 0.
"""
from __future__ import annotations

from plait.core.call import jit_call_p
from plait.lax._batch_helpers import batch_size, move_batch_dim
from plait.lax.reductions import reduce_sum
from plait.transforms.batching import batch_flat, batch_graph
from plait.transforms.custom_derivatives import (custom_jvp_call_p, custom_vjp_call_p,
                                                 custom_lin_p)


def _jit_call_batch(vals, dims, *, graph, name):
    g, out_dims, consts = batch_graph(graph, batch_size(vals, dims), dims)
    return jit_call_p.bind(*consts, *vals, graph=g, name=f"vmap({name})"), out_dims


jit_call_p.def_rule("batch", _jit_call_batch)


def _sum_unbatched(cts, dims, size: int) -> list:
    """Cotangents at batch dim 0, for inputs batched along ``dims``: an unbatched
    input (``None``) receives the sum over the batch."""
    out = []
    for c, d in zip(cts, dims):
        if d is None:
            out.append(reduce_sum(c, (0,)))
        else:
            out.append(move_batch_dim(c, 0, d, size))
    return out


class _BatchedJVPRule:
    """A custom_jvp rule ``jvp(primals, tangents)`` mapped over the batch; tangents
    are batched like their primals, outputs come back at batch dim 0."""

    def __init__(self, rule, size: int, dims: list):
        self.rule, self.size, self.dims = rule, size, dims
        self.num_args = rule.num_args

    def __call__(self, primals, tangents):
        n = len(primals)

        def flat(*xs):
            p_out, t_out = self.rule(list(xs[:n]), list(xs[n:]))
            return list(p_out) + list(t_out)
        outs, _ = batch_flat(flat, self.size, list(primals) + list(tangents),
                             self.dims + self.dims, 0, description="vmap of a custom_jvp rule")
        half = len(outs) // 2
        return outs[:half], outs[half:]


def _custom_jvp_call_batch(vals, dims, *, graph, jvp, name):
    size = batch_size(vals, dims)
    n_out = len(graph.outvars)
    g, _, consts = batch_graph(graph, size, dims, [0] * n_out)
    rule = _BatchedJVPRule(jvp, size, list(dims[len(dims) - jvp.num_args:]))
    outs = custom_jvp_call_p.bind(*consts, *vals, graph=g, jvp=rule, name=name)
    return outs, [0] * n_out


custom_jvp_call_p.def_rule("batch", _custom_jvp_call_batch)


class _BatchedFwd:
    """A custom_vjp ``fwd`` mapped over the batch: outputs and residuals at dim 0."""

    def __init__(self, fwd, size: int, dims: list, n_out: int):
        self.fwd, self.size, self.dims, self.n_out = fwd, size, dims, n_out
        self.num_args = fwd.num_args

    def __call__(self, primals):
        def flat(*xs):
            out, res = self.fwd(list(xs))
            return list(out) + list(res)
        outs, _ = batch_flat(flat, self.size, list(primals), self.dims, 0,
                             description="vmap of a custom_vjp fwd")
        return outs[:self.n_out], outs[self.n_out:]


class _BatchedBwd:
    """A custom_vjp ``bwd`` (or custom_lin's) mapped over the batch: residuals and
    cotangents at dim 0; input cotangents go to their inputs' batch dims (summed
    over the batch for unbatched inputs)."""

    def __init__(self, bwd, size: int, dims: list):
        self.bwd, self.size, self.dims = bwd, size, dims

    def __call__(self, res, cts):
        nr = len(res)
        outs, _ = batch_flat(lambda *xs: list(self.bwd(list(xs[:nr]), list(xs[nr:]))),
                             self.size, list(res) + list(cts), [0] * (nr + len(cts)), 0,
                             description="vmap of a custom_vjp bwd")
        return _sum_unbatched(outs, self.dims, self.size)


def _custom_vjp_call_batch(vals, dims, *, graph, fwd, bwd, name):
    size = batch_size(vals, dims)
    n_out = len(graph.outvars)
    g, _, consts = batch_graph(graph, size, dims, [0] * n_out)
    arg_dims = list(dims[len(dims) - fwd.num_args:])
    outs = custom_vjp_call_p.bind(*consts, *vals, graph=g,
                                  fwd=_BatchedFwd(fwd, size, arg_dims, n_out),
                                  bwd=_BatchedBwd(bwd, size, arg_dims), name=name)
    return outs, [0] * n_out


custom_vjp_call_p.def_rule("batch", _custom_vjp_call_batch)


def _custom_lin_batch(vals, dims, *, num_res, bwd, out_avals, name):
    size = batch_size(vals, dims)
    vals = [move_batch_dim(v, d, 0, size) for v, d in zip(vals, dims)]
    out_avals = tuple(a.update(shape=(size,) + a.shape) for a in out_avals)
    outs = custom_lin_p.bind(*vals, num_res=num_res, out_avals=out_avals, name=name,
                             bwd=_BatchedBwd(bwd, size, [0] * (len(vals) - num_res)))
    return outs, [0] * len(out_avals)


custom_lin_p.def_rule("batch", _custom_lin_batch)
