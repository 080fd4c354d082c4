"""Host callbacks: ``debug_callback``, ``pure_callback`` and ``io_callback`` primitives.

Each calls a Python function on NumPy values of its operands when the program runs:
eagerly at once, under ``jit`` as an equation the backend runs on the host (on the
native backend a host step between kernels; a loop whose body holds one runs its body
as a native executable per iteration instead of one C loop; on the xla backend XLA's
Python CPU callback custom call, ordered by a token, see
:mod:`plait.backends.xla.rules_callbacks`).

- ``debug_callback`` (effectful, no outputs): ``plait.debug.callback``/``print``.
  Under ``vmap`` it calls once per batch element (as JAX does); under ``jvp``/``grad``
  it sees primal values only.
- ``pure_callback`` (pure: may be removed when unused, merged with an equal call): the
  result has the declared shapes and dtypes. ``vmap`` follows ``vmap_method``:
  ``sequential`` (one call per batch element), ``expand_dims`` (one call; unbatched
  operands get a leading axis of size 1), ``broadcast_all`` (one call; every operand
  broadcast to the batch), ``legacy_vectorized`` (one call; batched operands with the
  batch axis first, unbatched ones unchanged). It has no derivative: wrap the caller in
  ``plait.custom_jvp``/``custom_vjp``.
- ``io_callback`` (effectful, with results): like ``pure_callback`` but never removed,
  merged or hoisted; under ``vmap`` it calls per batch element (unordered only).

Effectful primitives set ``Primitive.effectful`` (see :mod:`plait.core.effects`), so
DCE keeps them, CSE never merges two, and LICM leaves them in their loop; every
graph keeps equations in program order, so effects run in the order the program
wrote them (``ordered=True`` is therefore always honoured).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.primitive import new_primitive
from plait.core.trace import get_aval
from plait.errors import CallbackError, PlaitTypeError, PlaitValueError

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all", "legacy_vectorized")


def _np_args(args) -> list:
    return [np.asarray(a) for a in args]


def _slice_batch(x, dim, i):
    from plait.lax.shape_ops import squeeze, slice as lax_slice
    if dim is None:
        return x
    a = get_aval(x)
    start = [0] * a.ndim
    limit = list(a.shape)
    start[dim], limit[dim] = i, i + 1
    return squeeze(lax_slice(x, start, limit), (dim,))


def _stack(xs):
    from plait.lax.shape_ops import concatenate, expand_dims
    return concatenate([expand_dims(x, (0,)) for x in xs], 0)


def _batch_size(vals, dims) -> int:
    from plait.lax._batch_helpers import batch_size
    return batch_size(vals, dims)


# --- debug_callback -------------------------------------------------------------

debug_callback_p = new_primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True


def _debug_abstract(*avals, callback, ordered):
    return []


def _debug_impl(*args, callback, ordered):
    callback(*_np_args(args))
    return []


def _debug_jvp(primals, tangents, *, callback, ordered):
    debug_callback_p.bind(*primals, callback=callback, ordered=ordered)
    return [], []


def _debug_batch(vals, dims, *, callback, ordered):
    for i in range(_batch_size(vals, dims)):
        debug_callback_p.bind(*[_slice_batch(v, d, i) for v, d in zip(vals, dims)],
                              callback=callback, ordered=ordered)
    return [], []


def _debug_transpose(cts, *args, callback, ordered):
    return [None] * len(args)


debug_callback_p.def_rule("abstract_eval", _debug_abstract)
debug_callback_p.def_rule("impl", _debug_impl)
debug_callback_p.def_rule("jvp", _debug_jvp)
debug_callback_p.def_rule("batch", _debug_batch)
debug_callback_p.def_rule("transpose", _debug_transpose)


def debug_callback(callback: Callable, *args, ordered: bool = False) -> None:
    """Call ``callback(*numpy_args)`` when the program runs (``args`` are arrays)."""
    debug_callback_p.bind(*args, callback=callback, ordered=bool(ordered))


# --- pure_callback / io_callback ------------------------------------------------

pure_callback_p = new_primitive("pure_callback", multiple_results=True)
io_callback_p = new_primitive("io_callback", multiple_results=True)
io_callback_p.effectful = True


def _cb_abstract(*avals, callback, result_avals, **_):
    return list(result_avals)


def _cb_impl(*args, callback, result_avals, **_):
    outs = callback(*_np_args(args))
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if len(outs) != len(result_avals):
        raise CallbackError(f"the callback {getattr(callback, '__name__', callback)!r} "
                            f"returned {len(outs)} arrays, but result_shape_dtypes "
                            f"declares {len(result_avals)}")
    res = []
    for o, a in zip(outs, result_avals):
        o = np.asarray(o)
        if o.shape != a.shape:
            raise CallbackError(f"the callback {getattr(callback, '__name__', callback)!r} "
                                f"returned shape {o.shape}, but result_shape_dtypes "
                                f"declares {a.shape}")
        res.append(o.astype(a.dtype, copy=False))
    return res


def _cb_jvp_error(name):
    def rule(primals, tangents, **params):
        raise CallbackError(
            f"{name} has no derivative: plait cannot differentiate a Python function. Wrap the function that calls it in plait.custom_jvp "
            f"or plait.custom_vjp and give the derivative there")
    return rule


def _pure_batch(vals, dims, *, callback, result_avals, vmap_method):
    from plait.lax._batch_helpers import move_batch_dim
    from plait.lax.shape_ops import expand_dims
    n = _batch_size(vals, dims)
    if vmap_method is None:
        raise CallbackError(
            "pure_callback under vmap needs vmap_method= ('sequential', 'expand_dims', "
            "'broadcast_all' or 'legacy_vectorized') to say how the callback handles "
            "a batch")
    batched_avals = tuple(ShapedArray((n,) + a.shape, a.dtype) for a in result_avals)
    if vmap_method == "sequential":
        per = [pure_callback_p.bind(*[_slice_batch(v, d, i) for v, d in zip(vals, dims)],
                                    callback=callback, result_avals=result_avals,
                                    vmap_method=vmap_method) for i in range(n)]
        return [_stack([p[k] for p in per]) for k in range(len(result_avals))], \
            [0] * len(result_avals)
    if vmap_method == "expand_dims":
        args = [expand_dims(v, (0,)) if d is None else move_batch_dim(v, d, 0, n)
                for v, d in zip(vals, dims)]
    elif vmap_method == "broadcast_all":
        args = [move_batch_dim(v, d, 0, n) for v, d in zip(vals, dims)]
    else:   # legacy_vectorized
        args = [v if d is None else move_batch_dim(v, d, 0, n) for v, d in zip(vals, dims)]
    outs = pure_callback_p.bind(*args, callback=callback, result_avals=batched_avals,
                                vmap_method=vmap_method)
    return list(outs), [0] * len(outs)


def _io_batch(vals, dims, *, callback, result_avals, ordered):
    if ordered:
        raise CallbackError("io_callback with ordered=True cannot be vmapped (the order "
                            "of the per-element calls is not defined)")
    n = _batch_size(vals, dims)
    per = [io_callback_p.bind(*[_slice_batch(v, d, i) for v, d in zip(vals, dims)],
                              callback=callback, result_avals=result_avals, ordered=ordered)
           for i in range(n)]
    return [_stack([p[k] for p in per]) for k in range(len(result_avals))], \
        [0] * len(result_avals)


for _p, _name in ((pure_callback_p, "pure_callback"), (io_callback_p, "io_callback")):
    _p.def_rule("abstract_eval", _cb_abstract)
    _p.def_rule("impl", _cb_impl)
    _p.def_rule("jvp", _cb_jvp_error(_name))
pure_callback_p.def_rule("batch", _pure_batch)
io_callback_p.def_rule("batch", _io_batch)


def _result_avals(result_shape_dtypes) -> tuple:
    from plait.core.pytree import tree_flatten
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            raise PlaitTypeError(f"result_shape_dtypes leaves need .shape and .dtype "
                                 f"(e.g. plait.ShapeDtypeStruct or an array), got {leaf!r}")
        avals.append(ShapedArray(tuple(shape), np.dtype(dtype)))
    return tuple(avals), tree


def _flat_callback(callback, in_tree):
    from plait.core.pytree import tree_flatten, tree_unflatten

    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        return tree_flatten(callback(*args, **kwargs))[0]
    flat.__name__ = getattr(callback, "__name__", "callback")
    return flat


def pure_callback(callback: Callable, result_shape_dtypes, *args,
                  vmap_method: str | None = None, **kwargs):
    """Call a pure Python function on the values of ``args`` (pytrees of arrays) and
    return arrays shaped as ``result_shape_dtypes`` (a pytree of objects with ``shape``
    and ``dtype``). See the module doc for ``vmap_method``."""
    from plait.core.pytree import tree_flatten, tree_unflatten
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise PlaitValueError(f"vmap_method must be one of {VMAP_METHODS}, "
                              f"got {vmap_method!r}")
    avals, out_tree = _result_avals(result_shape_dtypes)
    leaves, in_tree = tree_flatten((args, kwargs))
    outs = pure_callback_p.bind(*leaves, callback=_flat_callback(callback, in_tree),
                                result_avals=avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def io_callback(callback: Callable, result_shape_dtypes, *args, ordered: bool = False,
                **kwargs):
    """Call a Python function with side effects; never removed, merged or reordered."""
    from plait.core.pytree import tree_flatten, tree_unflatten
    avals, out_tree = _result_avals(result_shape_dtypes)
    leaves, in_tree = tree_flatten((args, kwargs))
    outs = io_callback_p.bind(*leaves, callback=_flat_callback(callback, in_tree),
                              result_avals=avals, ordered=bool(ordered))
    return tree_unflatten(out_tree, outs)


def _is_array_leaf(x) -> bool:
    from plait.core.trace import Tracer
    return isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex)) or \
        hasattr(x, "__array__")


def split_static(leaves: Sequence) -> tuple[list, Callable]:
    """Array leaves (to bind) and a function that puts them back among the static ones."""
    is_arr = [_is_array_leaf(x) for x in leaves]
    arrays = [x for x, a in zip(leaves, is_arr) if a]
    static = [None if a else x for x, a in zip(leaves, is_arr)]

    def merge(vals):
        it = iter(vals)
        return [next(it) if a else s for s, a in zip(static, is_arr)]
    return arrays, merge
