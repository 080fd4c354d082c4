"""``vmap``: automatic batching, an interpreter that carries a batch dimension.

A ``BatchTracer`` holds a value and the position of its batch dimension (``None``
when the value is the same for every batch element). Each primitive's ``batch``
rule, ``rule(vals, dims, **params) -> (out, out_dim)`` (lists of both for
multiple-result primitives), computes the batched result directly.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from plait.core.graph import Graph, closure_convert
from plait.core.pytree import tree_flatten, tree_unflatten, TreeDef
from plait.core.staging import trace_to_graph
from plait.core.trace import Trace, Tracer, new_main, full_raise, get_aval
from plait.errors import PlaitValueError
from plait.lax import _batch_helpers as bh


class BatchTracer(Tracer):
    """A batched value: ``val`` has an extra dimension at ``batch_dim`` (or none)."""

    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: "BatchTrace", val, batch_dim: int | None):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self):
        a = get_aval(self.val)
        if self.batch_dim is None:
            return a
        shape = a.shape[:self.batch_dim] + a.shape[self.batch_dim + 1:]
        return a.update(shape=shape)

    def full_lower(self):
        if self.batch_dim is None:
            from plait.core.trace import full_lower
            return full_lower(self.val)
        return self


class BatchTrace(Trace):
    """Applies each primitive's ``batch`` rule; the main's payload is the axis size."""

    def pure(self, val):
        return BatchTracer(self, val, None)

    lift = pure

    def process_primitive(self, prim, tracers, params):
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        if all(d is None for d in dims):
            out = prim.bind(*vals, **params)
            outs = out if prim.multiple_results else [out]
            return [BatchTracer(self, o, None) for o in outs]
        rule = prim.rule("batch")
        out, out_dim = rule(vals, dims, axis_size=self.main.payload, **params) \
            if getattr(rule, "wants_axis_size", False) else rule(vals, dims, **params)
        if prim.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return [BatchTracer(self, out, out_dim)]


def _broadcast_prefix(prefix, tree, what: str) -> list:
    """Flatten a pytree-prefix spec (``in_axes``/``out_axes``) against ``tree``'s leaves."""
    leaves, td = tree_flatten(tree)
    if prefix is None or isinstance(prefix, int):
        return [prefix] * len(leaves)
    out: list = []

    def walk(p, t):
        if p is None or isinstance(p, int):
            out.extend([p] * len(tree_flatten(t)[0]))
            return
        if isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)) and len(p) == len(t):
            for pp, tt in zip(p, t):
                walk(pp, tt)
            return
        if isinstance(p, dict) and isinstance(t, dict) and set(p) == set(t):
            for k in sorted(t):
                walk(p[k], t[k])
            return
        raise PlaitValueError(f"vmap {what} specification {prefix!r} is not a prefix of the "
                              f"argument structure {td}")
    walk(prefix, tree)
    return out


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0,
         axis_size: int | None = None) -> Callable:
    """Vectorize ``fun`` over a new axis of its arguments (``in_axes``) and results.

    ``in_axes`` is an int, None (not batched) or a pytree prefix of the arguments;
    ``out_axes`` likewise for the results.
    """
    def batched(*args):
        in_spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(in_spec, tuple) and len(in_spec) != len(args):
            raise PlaitValueError(f"vmap in_axes has {len(in_spec)} entries but the function "
                                  f"got {len(args)} positional arguments")
        dims = _broadcast_prefix(in_spec, args, "in_axes")
        leaves, in_tree = tree_flatten(args)
        sizes = set()
        norm_dims = []
        for x, d in zip(leaves, dims):
            if d is None:
                norm_dims.append(None)
                continue
            a = get_aval(x)
            if not -a.ndim <= d < a.ndim:
                raise PlaitValueError(f"vmap in_axes {d} is out of range for an argument of "
                                      f"shape {a.shape}")
            d = d % a.ndim
            sizes.add(a.shape[d])
            norm_dims.append(d)
        if axis_size is not None:
            sizes.add(axis_size)
        if len(sizes) != 1:
            raise PlaitValueError(
                "vmap got inconsistent sizes for the mapped axes: "
                f"{sorted(sizes)}" if sizes else
                "vmap needs at least one mapped argument or axis_size=")
        size = sizes.pop()
        out_tree_box: list[TreeDef] = []

        def flat_fun(*xs):
            out = fun(*tree_unflatten(in_tree, xs))
            ol, otd = tree_flatten(out)
            out_tree_box.append((otd, out))
            return ol

        # out_axes need the output structure: run, then move dims.
        with new_main(BatchTrace, size, description=f"vmap of {getattr(fun, '__name__', fun)}") as main:
            trace = BatchTrace(main)
            tracers = [BatchTracer(trace, a, d) for a, d in zip(leaves, norm_dims)]
            outs = flat_fun(*tracers)
            otd, out_obj = out_tree_box[0]
            want = _broadcast_prefix(out_axes, out_obj, "out_axes")
            results = []
            for o, w in zip(outs, want):
                t = full_raise(trace, o)
                if w is None and t.batch_dim is not None:
                    raise PlaitValueError("vmap out_axes=None requires an output that does "
                                          "not depend on the mapped axis")
                if w is not None:
                    w = w % (get_aval(t.val).ndim + (1 if t.batch_dim is None else 0))
                results.append(bh.move_batch_dim(t.val, t.batch_dim, w, size))
        return tree_unflatten(otd, results)

    batched.__name__ = f"vmap_{getattr(fun, '__name__', 'fn')}"
    batched.__doc__ = getattr(fun, "__doc__", None)
    return batched


def batch_graph(graph: Graph, axis_size: int, in_dims: Sequence[int | None],
                want_out_dims: Sequence[int | None] | None = None
                ) -> tuple[Graph, list[int | None], list]:
    """Batch a closure-converted graph: returns (graph, output batch dims, extra consts).

    The batched graph takes the extra consts (values the batch rules closed over)
    as leading inputs, then the original inputs.

    Outputs keep whatever batch dim the rules produced unless ``want_out_dims`` is
    given (an int moves the dim there; the graph then always has it batched).
    """
    in_avals = []
    for v, d in zip(graph.invars, in_dims):
        a = v.aval
        if d is not None:
            a = a.update(shape=a.shape[:d] + (axis_size,) + a.shape[d:])
        in_avals.append(a)
    out_dims_box: list = []

    def flat(*xs):
        with new_main(BatchTrace, axis_size, description="vmap") as main:
            trace = BatchTrace(main)
            tracers = [BatchTracer(trace, x, d) for x, d in zip(xs, in_dims)]
            from plait.core.graph import eval_graph
            outs = eval_graph(graph, [], *tracers)
            res, dims = [], []
            for i, o in enumerate(outs):
                t = full_raise(trace, o)
                if want_out_dims is not None and want_out_dims[i] is not None:
                    res.append(bh.move_batch_dim(t.val, t.batch_dim, want_out_dims[i], axis_size))
                    dims.append(want_out_dims[i])
                else:
                    res.append(t.val)
                    dims.append(t.batch_dim)
            out_dims_box.append(dims)
            return res
    closed, _ = trace_to_graph(flat, in_avals, description="vmap of a sub-graph")
    return closure_convert(closed), out_dims_box[0], closed.consts


__all__ = ["vmap", "BatchTrace", "BatchTracer", "batch_graph"]
