"""Collectives over a named axis: ``psum``, ``pmean``, ``pmax``, ``pmin``,
``all_gather``, ``psum_scatter``, ``all_to_all``, ``ppermute``, ``axis_index``.

A collective names an axis bound by an enclosing ``vmap(f, axis_name=...)`` or
``pmap`` (:mod:`plait.core.named_axes`). Its primitive carries the name and the
axis size as static parameters. Meaning comes from whoever bound the name:

- ``vmap``: the batch trace of that vmap applies the primitive's ``named_batch``
  rule, an ordinary array computation over the batch dimension (this is the
  reference semantics). ``batch`` (an *other* vmap's rule) maps the collective
  over that vmap's lanes.
- ``pmap``: the primitive is staged into the replica program; its ``impl`` calls the
  running replica's communicator (shared memory between local replicas, MPI across
  processes).

Derivatives follow JAX: every collective but ``pmax``/``pmin``/``axis_index`` is
linear; ``psum`` transposes to ``psum``, ``all_gather`` to ``psum_scatter`` (and
back), ``all_to_all`` to the ``all_to_all`` with split and concat axes swapped,
``ppermute`` to the inverse permutation. ``pmax``/``pmin`` share the tangent among
tied replicas (like ``reduce_max``).
"""
from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np

from plait.core import named_axes
from plait.core.ad_util import Zero
from plait.core.aval import ShapedArray
from plait.core.primitive import Primitive, register_primitive
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.trace import bind_at_least, get_aval
from plait.errors import PlaitValueError, UnboundAxisNameError
from plait.lax._ad_helpers import deflinear, defjvp, defjvp_zero, full
from plait.lax._batch_helpers import move_batch_dim
from plait.lax.elementwise import (convert_element_type, div, eq, mul, select)
from plait.lax.reductions import reduce_max, reduce_min, reduce_sum
from plait.lax.shape_ops import concatenate, iota, reshape, slice as lax_slice, transpose


class CollectivePrimitive(Primitive):
    """A primitive over the named axis ``params["axis_name"]``: ``bind`` finds the
    vmap that binds the name, so that vmap processes it even if no operand is batched."""

    collective = True

    def bind(self, *args, **params):
        frame = named_axes.lookup(params["axis_name"])
        if frame is None:
            raise _unbound(self.name, params["axis_name"])
        return bind_at_least(self, args, params, frame.main)


def _unbound(what: str, name) -> UnboundAxisNameError:
    bound = named_axes.bound_names()
    return UnboundAxisNameError(
        f"{what} over axis name {name!r}, which no enclosing vmap(..., axis_name=) or "
        f"pmap(..., axis_name=) binds (bound here: {bound or 'none'}). Call it inside "
        f"a function mapped with that axis name.")


def _collective(name: str, abstract_eval, impl,
                multiple_results: bool = False) -> CollectivePrimitive:
    p = register_primitive(CollectivePrimitive(name, multiple_results))
    p.def_abstract_eval(abstract_eval)
    p.def_impl(impl)
    return p


def _frame(name: Hashable, what: str):
    frame = named_axes.lookup(name)
    if frame is None:
        raise _unbound(what, name)
    return frame


def _comm(name, what: str):
    comm = named_axes.replica_comm(name)
    if comm is None:
        raise _unbound(what, name)
    return comm


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _check_axis(what: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise PlaitValueError(f"{what}: axis {axis} is out of range for rank {ndim}")
    return axis % ndim


# --- psum / pmax / pmin -------------------------------------------------------------
def _same_abstract(x: ShapedArray, **params) -> ShapedArray:
    return x


def _reducing_impl(op: str):
    def impl(x, *, axis_name, axis_size):
        return _comm(axis_name, f"p{op}").allreduce(np.asarray(x), op)
    return impl


def _psum_impl(*xs, axis_name, axis_size):
    """One exchange for all operands: each dtype's operands packed into one buffer."""
    comm = _comm(axis_name, "psum")
    xs = [np.asarray(x) for x in xs]
    outs: list = [None] * len(xs)
    for dt in dict.fromkeys(x.dtype for x in xs):
        idx = [i for i, x in enumerate(xs) if x.dtype == dt]
        if len(idx) == 1:
            outs[idx[0]] = comm.allreduce(xs[idx[0]], "sum")
            continue
        total = comm.allreduce(np.concatenate([xs[i].ravel() for i in idx]), "sum")
        at = 0
        for i in idx:
            outs[i] = total[at:at + xs[i].size].reshape(xs[i].shape)
            at += xs[i].size
    return outs


# psum takes any number of operands (a gradient pytree is one exchange)
psum_p = _collective("psum", lambda *xs, **p: list(xs), _psum_impl, multiple_results=True)
pmax_p = _collective("pmax", _same_abstract, _reducing_impl("max"))
pmin_p = _collective("pmin", _same_abstract, _reducing_impl("min"))

def _psum_nonzero(vals: list, **p) -> list:
    """psum of the operands that are not symbolic zeros (Zero stays Zero)."""
    live = [i for i, v in enumerate(vals) if not isinstance(v, Zero)]
    out = list(vals)
    if live:
        for i, r in zip(live, psum_p.bind(*[vals[i] for i in live], **p)):
            out[i] = r
    return out


def _psum_jvp(primals, tangents, **p):
    return psum_p.bind(*primals, **p), _psum_nonzero(list(tangents), **p)


psum_p.def_rule("jvp", _psum_jvp)
psum_p.def_rule("transpose", lambda cts, *xs, **p: _psum_nonzero(list(cts), **p))


def _extremum_jvp(prim):
    def jvp(g, ans, x, **p):
        a = get_aval(x)
        hit = eq(x, ans)
        zero = full(a.shape, 0, g.dtype)
        # separate binds: the count is a primal value, the total is linear in g
        (count,) = psum_p.bind(convert_element_type(hit, g.dtype), **p)
        (total,) = psum_p.bind(select(hit, g, zero), **p)
        return div(total, count)
    return jvp


defjvp(pmax_p, _extremum_jvp(pmax_p))
defjvp(pmin_p, _extremum_jvp(pmin_p))


def _times(x, n: int):
    a = get_aval(x)
    return mul(x, full(a.shape, n, a.dtype))


def _psum_named(vals, dims, *, axis_name, axis_size):
    outs = [_times(x, axis_size) if d is None else reduce_sum(x, (d,))
            for x, d in zip(vals, dims)]
    return outs, [None] * len(outs)


def _extremum_named(reducer):
    def rule(vals, dims, *, axis_name, axis_size):
        (x,), (d,) = vals, dims
        return (x, None) if d is None else (reducer(x, (d,)), None)
    return rule


def _lane_rule(prim):
    """Batch rule of an elementwise-per-replica collective under another vmap."""
    def rule(vals, dims, **p):
        return prim.bind(vals[0], **p), dims[0]
    return rule


psum_p.def_rule("named_batch", _psum_named)
pmax_p.def_rule("named_batch", _extremum_named(reduce_max))
pmin_p.def_rule("named_batch", _extremum_named(reduce_min))
for _p in (pmax_p, pmin_p):
    _p.def_rule("batch", _lane_rule(_p))
psum_p.def_rule("batch", lambda vals, dims, **p: (psum_p.bind(*vals, **p), list(dims)))


# --- all_gather / psum_scatter ------------------------------------------------------
def _all_gather_abstract(x: ShapedArray, *, axis_name, axis_size, axis, tiled):
    if tiled:
        if x.ndim == 0:
            raise PlaitValueError("all_gather(tiled=True) needs an operand of rank >= 1")
        shape = list(x.shape)
        shape[axis] *= axis_size
        return x.update(shape=tuple(shape))
    return x.update(shape=x.shape[:axis] + (axis_size,) + x.shape[axis:])


def _all_gather_impl(x, *, axis_name, axis_size, axis, tiled):
    g = _comm(axis_name, "all_gather").all_gather(np.asarray(x))   # (size, *x.shape)
    g = np.moveaxis(g, 0, axis)
    if tiled:
        g = g.reshape(g.shape[:axis] + (-1,) + g.shape[axis + 2:])
    return np.asarray(g, order="C")


def _psum_scatter_abstract(x: ShapedArray, *, axis_name, axis_size, scatter_dimension,
                           tiled):
    s = scatter_dimension
    if tiled:
        if x.shape[s] % axis_size:
            raise PlaitValueError(f"psum_scatter(tiled=True): dimension {s} of size "
                                  f"{x.shape[s]} is not a multiple of the axis size "
                                  f"{axis_size}")
        shape = list(x.shape)
        shape[s] //= axis_size
        return x.update(shape=tuple(shape))
    if x.shape[s] != axis_size:
        raise PlaitValueError(f"psum_scatter: dimension {s} has size {x.shape[s]}, it must "
                              f"equal the axis size {axis_size} (or pass tiled=True)")
    return x.update(shape=x.shape[:s] + x.shape[s + 1:])


def _psum_scatter_impl(x, *, axis_name, axis_size, scatter_dimension, tiled):
    comm = _comm(axis_name, "psum_scatter")
    total = comm.allreduce(np.asarray(x), "sum")
    s, k = scatter_dimension, comm.index
    if tiled:
        m = total.shape[s] // axis_size
        block = np.take(total, np.arange(k * m, (k + 1) * m), axis=s)
        return np.asarray(block, order="C")
    return np.asarray(np.take(total, k, axis=s), order="C")


all_gather_p = _collective("all_gather", _all_gather_abstract, _all_gather_impl)
psum_scatter_p = _collective("psum_scatter", _psum_scatter_abstract, _psum_scatter_impl)

deflinear(all_gather_p, lambda ct, x, *, axis, tiled, **p: [
    psum_scatter_p.bind(ct, scatter_dimension=axis, tiled=tiled, **p)])
deflinear(psum_scatter_p, lambda ct, x, *, scatter_dimension, tiled, **p: [
    all_gather_p.bind(ct, axis=scatter_dimension, tiled=tiled, **p)])


def _all_gather_named(vals, dims, *, axis_name, axis_size, axis, tiled):
    (x,), (d,) = vals, dims
    if d is None:
        x, d = move_batch_dim(x, None, 0, axis_size), 0
    nd = get_aval(x).ndim
    perm = [i for i in range(nd) if i != d]
    perm.insert(axis, d)
    out = transpose(x, tuple(perm))
    if tiled:
        sh = get_aval(out).shape
        out = reshape(out, sh[:axis] + (sh[axis] * sh[axis + 1],) + sh[axis + 2:])
    return out, None


def _psum_scatter_named(vals, dims, *, axis_name, axis_size, scatter_dimension, tiled):
    (x,), (d,) = vals, dims
    s = scatter_dimension
    if d is None:
        total = _times(x, axis_size)
    else:
        total = reduce_sum(x, (d,))
    if tiled:
        sh = get_aval(total).shape
        total = reshape(total, sh[:s] + (axis_size, sh[s] // axis_size) + sh[s + 1:])
    return total, s


def _moved_to_front(x, d, axis_size):
    return move_batch_dim(x, d, 0, axis_size)


def _all_gather_lanes(vals, dims, *, axis, **p):
    x = _moved_to_front(vals[0], dims[0], None)
    return all_gather_p.bind(x, axis=axis + 1, **p), 0


def _psum_scatter_lanes(vals, dims, *, scatter_dimension, **p):
    x = _moved_to_front(vals[0], dims[0], None)
    return psum_scatter_p.bind(x, scatter_dimension=scatter_dimension + 1, **p), 0


all_gather_p.def_rule("named_batch", _all_gather_named)
psum_scatter_p.def_rule("named_batch", _psum_scatter_named)
all_gather_p.def_rule("batch", _all_gather_lanes)
psum_scatter_p.def_rule("batch", _psum_scatter_lanes)


# --- all_to_all ---------------------------------------------------------------------
def _all_to_all_abstract(x: ShapedArray, *, axis_name, axis_size, split_axis, concat_axis):
    if x.shape[split_axis] != axis_size:
        raise PlaitValueError(f"all_to_all: split_axis {split_axis} has size "
                              f"{x.shape[split_axis]}, it must equal the axis size "
                              f"{axis_size}")
    rest = x.shape[:split_axis] + x.shape[split_axis + 1:]
    return x.update(shape=rest[:concat_axis] + (axis_size,) + rest[concat_axis:])


def _all_to_all_impl(x, *, axis_name, axis_size, split_axis, concat_axis):
    mine = _comm(axis_name, "all_to_all").all_to_all(np.asarray(x), split_axis)  # (i, rest)
    return np.asarray(np.moveaxis(mine, 0, concat_axis), order="C")


all_to_all_p = _collective("all_to_all", _all_to_all_abstract, _all_to_all_impl)
deflinear(all_to_all_p, lambda ct, x, *, split_axis, concat_axis, **p: [
    all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **p)])


def _all_to_all_named(vals, dims, *, axis_name, axis_size, split_axis, concat_axis):
    (x,), (d,) = vals, dims
    w = move_batch_dim(x, d, 0, axis_size)                 # (i, *x)
    nd = get_aval(w).ndim
    rest = [j for j in range(1, nd) if j != 1 + split_axis]
    lane = rest[:concat_axis] + [0] + rest[concat_axis:]
    return transpose(w, tuple([1 + split_axis] + lane)), 0


def _all_to_all_lanes(vals, dims, *, split_axis, concat_axis, **p):
    x = _moved_to_front(vals[0], dims[0], None)
    return all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                             **p), 0


all_to_all_p.def_rule("named_batch", _all_to_all_named)
all_to_all_p.def_rule("batch", _all_to_all_lanes)


# --- ppermute -----------------------------------------------------------------------
def _ppermute_impl(x, *, axis_name, axis_size, perm):
    return _comm(axis_name, "ppermute").ppermute(np.asarray(x), perm)


ppermute_p = _collective("ppermute", _same_abstract, _ppermute_impl)
deflinear(ppermute_p, lambda ct, x, *, perm, **p: [
    ppermute_p.bind(ct, perm=tuple((d, s) for s, d in perm), **p)])


def _ppermute_named(vals, dims, *, axis_name, axis_size, perm):
    (x,), (d,) = vals, dims
    w = move_batch_dim(x, d, 0, axis_size)
    a = get_aval(w)
    src_of = {dst: src for src, dst in perm}
    lanes = []
    for k in range(axis_size):
        if k in src_of:
            s = src_of[k]
            lanes.append(lax_slice(w, (s,) + (0,) * (a.ndim - 1), (s + 1,) + a.shape[1:]))
        else:
            lanes.append(full((1,) + a.shape[1:], 0, a.dtype))
    return concatenate(lanes, 0), 0


ppermute_p.def_rule("named_batch", _ppermute_named)
ppermute_p.def_rule("batch", _lane_rule(ppermute_p))


# --- axis_index ---------------------------------------------------------------------
def _axis_index_impl(*, axis_name, axis_size):
    return np.asarray(_comm(axis_name, "axis_index").index, np.int32)


axis_index_p = _collective("axis_index",
                           lambda *, axis_name, axis_size: ShapedArray((), np.dtype(np.int32)),
                           _axis_index_impl)
defjvp_zero(axis_index_p)
axis_index_p.def_rule("named_batch",
                      lambda vals, dims, *, axis_name, axis_size:
                      (iota(np.int32, axis_size), 0))
axis_index_p.def_rule("batch", lambda vals, dims, **p: (axis_index_p.bind(**p), None))

COLLECTIVES = (psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p, all_to_all_p,
               ppermute_p, axis_index_p)


# --- the public functions -----------------------------------------------------------
def _map_leaves(fn, x):
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [fn(v) for v in leaves])


def _reduce_over(prim, x, axis_name):
    leaves, tree = tree_flatten(x)
    for name in _names(axis_name):
        f = _frame(name, prim.name)
        if prim.multiple_results:
            leaves = prim.bind(*leaves, axis_name=name, axis_size=f.size) if leaves else []
        else:
            leaves = [prim.bind(v, axis_name=name, axis_size=f.size) for v in leaves]
    return tree_unflatten(tree, leaves)


def psum(x: Any, axis_name: Hashable | Sequence[Hashable]) -> Any:
    """Sum ``x`` (a pytree of arrays) over the replicas of ``axis_name`` (a name or a
    tuple of names); every replica gets the total."""
    return _reduce_over(psum_p, x, axis_name)


def pmax(x: Any, axis_name: Hashable | Sequence[Hashable]) -> Any:
    """Elementwise maximum of ``x`` over the replicas of ``axis_name``."""
    return _reduce_over(pmax_p, x, axis_name)


def pmin(x: Any, axis_name: Hashable | Sequence[Hashable]) -> Any:
    """Elementwise minimum of ``x`` over the replicas of ``axis_name``."""
    return _reduce_over(pmin_p, x, axis_name)


def axis_size(axis_name: Hashable | Sequence[Hashable]) -> int:
    """How many replicas ``axis_name`` (or the product of a tuple of names) has."""
    n = 1
    for name in _names(axis_name):
        n *= _frame(name, "axis_size").size
    return n


def pmean(x: Any, axis_name: Hashable | Sequence[Hashable]) -> Any:
    """Mean of ``x`` over the replicas of ``axis_name``."""
    n = axis_size(axis_name)
    return _map_leaves(lambda v: div(v, full(get_aval(v).shape, n, get_aval(v).dtype)),
                       psum(x, axis_name))


def all_gather(x: Any, axis_name: Hashable, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every replica gets all replicas' ``x`` stacked along a new axis ``axis`` (or
    concatenated along ``axis`` with ``tiled=True``)."""
    f = _frame(axis_name, "all_gather")

    def one(v):
        nd = get_aval(v).ndim
        ax = _check_axis("all_gather", axis, nd if tiled else nd + 1)
        return all_gather_p.bind(v, axis_name=axis_name, axis_size=f.size, axis=ax,
                                 tiled=bool(tiled))
    return _map_leaves(one, x)


def psum_scatter(x: Any, axis_name: Hashable, *, scatter_dimension: int = 0,
                 tiled: bool = False) -> Any:
    """Sum over the replicas, replica ``k`` keeping block ``k`` of ``scatter_dimension``
    (that dimension's size must be the axis size; with ``tiled=True`` a multiple of it)."""
    f = _frame(axis_name, "psum_scatter")

    def one(v):
        s = _check_axis("psum_scatter", scatter_dimension, get_aval(v).ndim)
        return psum_scatter_p.bind(v, axis_name=axis_name, axis_size=f.size,
                                   scatter_dimension=s, tiled=bool(tiled))
    return _map_leaves(one, x)


def all_to_all(x: Any, axis_name: Hashable, split_axis: int, concat_axis: int, *,
               tiled: bool = False) -> Any:
    """Replica ``k`` gets block ``k`` of ``split_axis`` from every replica, stacked along
    ``concat_axis`` (JAX's convention: ``split_axis`` is removed and the new axis is at
    ``concat_axis`` of the result). ``tiled=True``: ``split_axis`` is cut into axis-size
    blocks and the received blocks are concatenated along ``concat_axis``."""
    f = _frame(axis_name, "all_to_all")
    n = f.size

    def one(v):
        a = get_aval(v)
        s = _check_axis("all_to_all", split_axis, a.ndim)
        c = _check_axis("all_to_all", concat_axis, a.ndim)
        if not tiled:
            return all_to_all_p.bind(v, axis_name=axis_name, axis_size=n, split_axis=s,
                                     concat_axis=c)
        if a.shape[s] % n:
            raise PlaitValueError(f"all_to_all(tiled=True): split_axis {s} of size "
                                  f"{a.shape[s]} is not a multiple of the axis size {n}")
        blocks = reshape(v, a.shape[:s] + (n, a.shape[s] // n) + a.shape[s + 1:])
        out = all_to_all_p.bind(blocks, axis_name=axis_name, axis_size=n, split_axis=s,
                                concat_axis=c)          # blocks stacked at c, before dim c
        sh = get_aval(out).shape
        return reshape(out, sh[:c] + (sh[c] * sh[c + 1],) + sh[c + 2:])
    return _map_leaves(one, x)


def ppermute(x: Any, axis_name: Hashable, perm: Sequence[tuple[int, int]]) -> Any:
    """Send ``x`` from replica ``src`` to replica ``dst`` for each ``(src, dst)`` pair of
    ``perm``; a replica that receives nothing gets zeros."""
    f = _frame(axis_name, "ppermute")
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise PlaitValueError(f"ppermute: perm {perm} sends from or to a replica twice; "
                              f"each source and each destination may appear once")
    bad = [k for k in srcs + dsts if not 0 <= k < f.size]
    if bad:
        raise PlaitValueError(f"ppermute: perm {perm} names replicas {bad} outside "
                              f"0..{f.size - 1} of axis {axis_name!r}")
    return _map_leaves(lambda v: ppermute_p.bind(v, axis_name=axis_name, axis_size=f.size,
                                                 perm=perm), x)


def pshuffle(x: Any, axis_name: Hashable, perm: Sequence[int]) -> Any:
    """Replica ``k`` gets the ``x`` of replica ``perm[k]``."""
    return ppermute(x, axis_name, [(int(s), d) for d, s in enumerate(perm)])


def axis_index(axis_name: Hashable) -> Any:
    """This replica's position along ``axis_name`` (an int32 scalar)."""
    f = _frame(axis_name, "axis_index")
    return axis_index_p.bind(axis_name=axis_name, axis_size=f.size)


__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
           "ppermute", "pshuffle", "axis_index", "axis_size", "COLLECTIVES"]
