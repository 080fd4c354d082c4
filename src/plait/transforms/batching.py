"""``vmap``: automatic batching, an interpreter that carries a batch dimension.

A ``BatchTracer`` holds a value and the position of its batch dimension (``None``
when the value is the same for every batch element). Each primitive's ``batch``
rule, ``rule(vals, dims, **params) -> (out, out_dim)`` (lists of both for
multiple-result primitives), computes the batched result directly; primitives
whose operands are all unbatched are simply applied. Higher-order primitives batch
their sub-graphs with :func:`batch_graph` (cached per graph and batch dims).
"""
from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable, Sequence

from plait.core import named_axes
from plait.core.graph import Graph, closure_convert, eval_graph
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import Trace, Tracer, new_main, full_raise, full_lower, get_aval
from plait.core.graph_transforms import register_graph_transform
from plait.errors import PlaitValueError
from plait.lax._batch_helpers import move_batch_dim


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
        return a.update(shape=a.shape[:self.batch_dim] + a.shape[self.batch_dim + 1:])

    def full_lower(self):
        if self.batch_dim is None:
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
        rule = "batch"
        if getattr(prim, "collective", False):
            frame = named_axes.lookup(params["axis_name"])
            if frame is not None and frame.main is self.main:
                rule = "named_batch"     # a collective over this vmap's own axis name
        if rule == "batch" and all(d is None for d in dims):
            out = prim.bind(*vals, **params)
            outs = out if prim.multiple_results else [out]
            return [BatchTracer(self, o, None) for o in outs]
        if named_axes.has_frames():      # sub-graphs batched by the rule bind our name
            own = named_axes.frame_of_main(self.main)
            with named_axes.batching_axis(None if own is None else own.name):
                out, out_dim = prim.rule(rule)(vals, dims, **params)
        else:
            out, out_dim = prim.rule(rule)(vals, dims, **params)
        if prim.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return [BatchTracer(self, out, out_dim)]


def batch_flat(fun: Callable, axis_size: int, vals: Sequence, in_dims: Sequence[int | None],
               want_out_dims: int | Sequence[int | None] | None = None,
               description: str = "vmap", axis_name: Any = None
               ) -> tuple[list, list[int | None]]:
    """Run ``fun(*vals)`` (a flat list of results) with ``vals[i]`` batched along
    ``in_dims[i]``. Returns ``(outputs, their batch dims)``.

    ``want_out_dims`` moves output batch dims: an int applies to every output, a
    list gives one entry per output (``None`` keeps whatever the rules produced).
    A requested dim is always present (unbatched outputs are broadcast).
    ``axis_name`` (not None) names the mapped axis for collectives inside ``fun``.
    """
    with new_main(BatchTrace, axis_size, description=description) as main, \
            _named(axis_name, axis_size, main):
        trace = BatchTrace(main)
        outs = fun(*[BatchTracer(trace, v, d) for v, d in zip(vals, in_dims)])
        res, dims = [], []
        for i, o in enumerate(outs):
            t = full_raise(trace, o)
            want = want_out_dims if want_out_dims is None or isinstance(want_out_dims, int) \
                else want_out_dims[i]
            if want is None:
                res.append(t.val)
                dims.append(t.batch_dim)
            else:
                res.append(move_batch_dim(t.val, t.batch_dim, want, axis_size))
                dims.append(want)
    return res, dims


def _named(axis_name, axis_size: int, main):
    if axis_name is None:
        return contextlib.nullcontext()
    return named_axes.bind_axis(axis_name, axis_size, main)


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
                              f"structure {td}: give one int/None per leaf, or a tuple, list "
                              f"or dict matching the structure")
    walk(prefix, tree)
    return out


def _check_spec(spec, what: str) -> None:
    leaves, _ = tree_flatten(spec)
    for x in leaves:
        if not isinstance(x, int) or isinstance(x, bool):
            raise PlaitValueError(f"vmap {what} entries must be ints or None, got {x!r}")


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0,
         axis_size: int | None = None, axis_name: Any = None) -> Callable:
    """Vectorize ``fun`` over a new axis of its arguments (``in_axes``) and results.

    ``in_axes`` is an int (every argument is mapped along that axis; negative counts
    from the end), ``None`` (not mapped) or a pytree prefix of the positional
    arguments (a tuple with one entry per argument, nested as deep as needed).
    Keyword arguments are mapped along axis 0. ``out_axes`` likewise for the
    results (``None``: the result must not depend on the mapped axis).
    ``axis_size`` is needed only when no argument is mapped. ``axis_name`` (any
    hashable) names the mapped axis for collectives (``plait.lax.psum`` etc.) in ``fun``.
    """
    _check_spec(in_axes, "in_axes")
    _check_spec(out_axes, "out_axes")

    def batched(*args, **kwargs):
        in_spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(in_spec, tuple) and len(in_spec) != len(args):
            raise PlaitValueError(f"vmap in_axes has {len(in_spec)} entries but the function "
                                  f"got {len(args)} positional arguments")
        dims = (_broadcast_prefix(in_spec, args, "in_axes")
                + [0] * len(tree_flatten(kwargs)[0]))
        leaves, in_tree = tree_flatten((args, kwargs))
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
            sizes.add(int(axis_size))
        if len(sizes) != 1:
            raise PlaitValueError(
                f"vmap got inconsistent sizes for the mapped axes: {sorted(sizes)}" if sizes
                else "vmap needs at least one mapped argument, or axis_size=")
        size = sizes.pop()
        out_box: list = []

        def flat_fun(*xs):
            a, kw = tree_unflatten(in_tree, xs)
            out = fun(*a, **kw)
            ol, otd = tree_flatten(out)
            out_box.append((otd, out))
            return ol

        name = getattr(fun, "__name__", "a function")
        outs, out_dims = batch_flat(flat_fun, size, leaves, norm_dims,
                                    description=f"vmap of {name}", axis_name=axis_name)
        otd, out_obj = out_box[0]
        want = _broadcast_prefix(out_axes, out_obj, "out_axes")
        results = []
        for o, d, w in zip(outs, out_dims, want):
            if w is None:
                if d is not None:
                    raise PlaitValueError(
                        f"vmap of {name}: out_axes=None for an output that depends on the "
                        f"mapped axis; give it an axis, or make it independent of the "
                        f"mapped inputs")
                results.append(o)
                continue
            nd = get_aval(o).ndim + (1 if d is None else 0)
            if not -nd <= w < nd:
                raise PlaitValueError(f"vmap out_axes {w} is out of range for a result of "
                                      f"rank {nd} (batch axis included)")
            results.append(move_batch_dim(o, d, w % nd, size))
        return tree_unflatten(otd, results)

    batched.__name__ = f"vmap_{getattr(fun, '__name__', 'fn')}"
    batched.__doc__ = getattr(fun, "__doc__", None)
    return batched


_GRAPH_CACHE: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()


def batch_graph(graph: Graph, axis_size: int, in_dims: Sequence[int | None],
                want_out_dims: Sequence[int | None] | None = None
                ) -> tuple[Graph, list[int | None], list]:
    """Batch a const-free graph: returns ``(graph, output batch dims, extra consts)``.

    The batched graph takes the extra consts (arrays the batch rules created) as
    leading inputs, then the original inputs with batch dims at ``in_dims``.
    Outputs keep whatever batch dim the rules produced unless ``want_out_dims``
    gives one (an int moves the dim there; the output is then always batched).
    Results are cached per graph, axis size and dims, and the axis name when a named
    vmap's rule batches the graph (its collectives over that name then get meaning).
    """
    axis_name = named_axes.current_batching_axis()
    key = (axis_size, tuple(in_dims), None if want_out_dims is None else tuple(want_out_dims))
    if axis_name is not None:
        key += (("axis_name", axis_name) + named_axes.env_key(),)
    per_graph = _GRAPH_CACHE.setdefault(graph, {})
    hit = per_graph.get(key)
    if hit is not None:
        return hit
    in_avals = []
    for v, d in zip(graph.invars, in_dims):
        a = v.aval
        if d is not None:
            a = a.update(shape=a.shape[:d] + (axis_size,) + a.shape[d:])
        in_avals.append(a)
    out_dims_box: list = []

    def flat(*xs):
        outs, dims = batch_flat(lambda *ts: eval_graph(graph, [], *ts), axis_size, xs,
                                in_dims, want_out_dims, description="vmap of a sub-graph",
                                axis_name=axis_name)
        out_dims_box.append(dims)
        return outs
    closed, _ = trace_to_graph(flat, in_avals, description="vmap of a sub-graph",
                               name=graph.name)
    result = (closure_convert(closed), out_dims_box[0], list(closed.consts))
    per_graph[key] = result
    return result


__all__ = ["vmap", "BatchTrace", "BatchTracer", "batch_graph", "batch_flat"]


register_graph_transform("batch_graph", batch_graph)
register_graph_transform("vmap", vmap)   # plait.numpy.vectorize/apply_along_axis use it
