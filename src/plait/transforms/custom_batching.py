"""``custom_vmap`` (``jax.custom_batching.custom_vmap``): a user-defined vmap rule.

``f = custom_vmap(f)`` and ``@f.def_vmap`` register
``rule(axis_size, in_batched, *args) -> (out, out_batched)``: ``in_batched`` has one
pytree of bools per argument (which leaves carry the batch, always at axis 0),
``out_batched`` one bool per output leaf (a pytree like ``out``, or one bool for all).

A call binds ``custom_vmap_call`` (params: the function's closure-converted graph,
the flat rule, the name). Evaluating it runs the graph; its ``batch`` rule calls the
user's rule (under nested ``vmap`` the innermost calls it, and outer ones batch the
rule's operations like any code); its
``jvp`` rule differentiates the graph (tangents do not use the custom rule; the
primal output keeps it). ``sequential_vmap(f)`` is the rule that calls ``f`` once
per batch element.
"""
from __future__ import annotations

import functools
from typing import Callable

from plait.core import trace as _trace
from plait.core.ad_util import Zero
from plait.core.graph import closure_convert, eval_graph, run_graph
from plait.core.primitive import new_primitive
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import Tracer, get_aval
from plait.errors import PlaitError, PlaitTypeError

custom_vmap_call_p = new_primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.def_abstract_eval(lambda *avals, graph, rule, name: graph.out_avals)
custom_vmap_call_p.def_impl(lambda *args, graph, rule, name: run_graph(graph, args))


def _batch(vals, dims, *, graph, rule, name):
    from plait.lax._batch_helpers import batch_size, move_batch_dim
    size = batch_size(vals, dims)
    nc = len(vals) - rule.num_args
    if any(d is not None for d in dims[:nc]):
        raise PlaitTypeError(f"{name} (a custom_vmap function) closes over a value that "
                             f"is being vmapped; pass it as an argument instead")
    args = [move_batch_dim(v, d, 0, size) if d is not None else v
            for v, d in zip(vals[nc:], dims[nc:])]
    outs, out_batched = rule(size, [d is not None for d in dims[nc:]], args)
    _check_outs(outs, out_batched, graph.out_avals, size, name)
    return outs, [0 if b else None for b in out_batched]


def _check_outs(outs, out_batched, avals, size, name):
    if len(outs) != len(avals):
        raise PlaitTypeError(f"the vmap rule of {name} returned {len(outs)} outputs, the "
                             f"function has {len(avals)}")
    for o, b, a in zip(outs, out_batched, avals):
        want = ((size,) if b else ()) + tuple(a.shape)
        if tuple(get_aval(o).shape) != want:
            raise PlaitTypeError(f"the vmap rule of {name} returned shape "
                                 f"{tuple(get_aval(o).shape)} for an output it marks "
                                 f"{'batched' if b else 'unbatched'}; expected {want}")


def _jvp(primals, tangents, *, graph, rule, name):
    from plait.transforms.ad import jvp_graph
    from plait.lax._ad_helpers import tangent_aval
    nz = [not isinstance(t, Zero) for t in tangents]
    jg, out_nz = jvp_graph(graph, nz)
    outs = eval_graph(jg.graph, jg.consts, *primals, *[t for t, z in zip(tangents, nz) if z])
    n = len(graph.outvars)
    p_out = custom_vmap_call_p.bind(*primals, graph=graph, rule=rule, name=name)
    t_iter = iter(outs[n:])
    t_out = [next(t_iter) if z else Zero(tangent_aval(a))
             for z, a in zip(out_nz, graph.out_avals)]
    return p_out, t_out


custom_vmap_call_p.def_rule("batch", _batch)
custom_vmap_call_p.def_rule("jvp", _jvp)


class _FlatRule:
    """The user's ``rule(axis_size, in_batched, *args)`` on flat lists."""

    def __init__(self, rule, in_tree, out_tree, num_args: int, name: str):
        self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree
        self.num_args, self.name = num_args, name

    def __call__(self, size, batched, args):
        a = tree_unflatten(self.in_tree, list(args))
        b = tree_unflatten(self.in_tree, list(batched))
        res = self.rule(size, list(b), *a)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise PlaitTypeError(f"the vmap rule of {self.name} must return "
                                 f"(out, out_batched)")
        out, out_b = res
        leaves, tree = tree_flatten(out)
        if isinstance(out_b, bool):
            flags = [out_b] * len(leaves)
        else:
            flags = tree_flatten(out_b)[0]
        if tree != self.out_tree or len(flags) != len(leaves):
            raise PlaitTypeError(f"the vmap rule of {self.name} returned outputs (or "
                                 f"out_batched) whose structure differs from the function's")
        return leaves, [bool(f) for f in flags]


class custom_vmap:
    """A function with a user-defined ``vmap`` rule (see the module doc)."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self.vmap_rule = None
        functools.update_wrapper(self, fun)

    def def_vmap(self, rule: Callable) -> Callable:
        """Register ``rule(axis_size, in_batched, *args) -> (out, out_batched)``."""
        self.vmap_rule = rule
        return rule

    def __call__(self, *args):
        name = getattr(self.fun, "__name__", "custom_vmap function")
        if self.vmap_rule is None:
            raise PlaitError(f"{name} is a custom_vmap function with no rule: call "
                             f"{name}.def_vmap(rule) before calling it")
        leaves, in_tree = tree_flatten(args)
        if len(_trace.cur_stack()) == 1 and not any(isinstance(x, Tracer) for x in leaves):
            return self.fun(*args)
        box = {}

        def flat(*ls):
            out, box["tree"] = tree_flatten(self.fun(*tree_unflatten(in_tree, ls)))
            return out
        closed, _ = trace_to_graph(flat, [get_aval(x) for x in leaves],
                                   description=f"custom_vmap function {name}", name=name)
        rule = _FlatRule(self.vmap_rule, in_tree, box["tree"], len(leaves), name)
        outs = custom_vmap_call_p.bind(*closed.consts, *leaves, graph=closure_convert(closed),
                                       rule=rule, name=name)
        return tree_unflatten(box["tree"], outs)


def sequential_vmap(f: Callable) -> custom_vmap:
    """``f`` batched by calling it once per batch element (outputs stacked)."""
    from plait.lax.shape_ops import concatenate, expand_dims, squeeze, slice as lax_slice
    g = custom_vmap(f)

    @g.def_vmap
    def _rule(size, in_batched, *args):
        leaves, tree = tree_flatten(args)
        flags = tree_flatten(in_batched)[0]

        def elem(x, b, i):
            if not b:
                return x
            shape = get_aval(x).shape
            return squeeze(lax_slice(x, (i,) + (0,) * (len(shape) - 1), (i + 1,) + shape[1:]),
                           (0,))
        per = [tree_flatten(f(*tree_unflatten(tree, [elem(x, b, i) for x, b in
                                                       zip(leaves, flags)])))
               for i in range(size)]
        out_tree = per[0][1]
        outs = [concatenate([expand_dims(p[0][k], (0,)) for p in per], 0)
                for k in range(len(per[0][0]))]
        return tree_unflatten(out_tree, outs), True
    return g
