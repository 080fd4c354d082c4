"""``checkpoint`` / ``remat``: trade compute for memory in reverse mode.

``checkpoint(f)`` stages ``f`` into a sub-graph called by the ``remat`` primitive
(``plait/core/remat.py``). Its rules:

- jvp: ``remat`` of the JVP graph (the policy carries over);
- partial eval (what ``vjp``/``grad`` run): :func:`remat_partial_eval_graph` splits the
  sub-graph; a known value the backward pass needs is saved as a residual only when it
  is an input of the sub-graph or the ``policy`` allows the equation that made it;
  otherwise that equation (and, recursively, what it needs) is copied into the unknown
  graph and recomputed in the backward pass;
- transpose: ``remat`` of the transposed graph, so under ``jit`` the recomputation is
  inlined behind an ``optimization_barrier`` (``prevent_cse``) and is not merged back
  into the forward pass by CSE;
- batch: ``remat`` of the batched graph.

Policies are ``policy(prim, *in_avals, **params) -> bool`` ("may this equation's
outputs be saved?"), as in JAX; :data:`checkpoint_policies` holds the standard ones.
:func:`ad_residuals` lists what a ``vjp`` saves.
"""
from __future__ import annotations

import functools
import types
import weakref
from typing import Any, Callable, NamedTuple, Sequence

from plait.core.ad_util import Zero, is_undefined_primal
from plait.core.dce import dce_graph
from plait.core.graph import ClosedGraph, Graph, Literal, Var, closure_convert, eval_graph
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.remat import checkpoint_name_p, optimization_barrier_p, remat_p
from plait.core.staging import trace_to_graph
from plait.core.trace import get_aval
from plait.errors import PlaitTypeError
from plait.lax._ad_helpers import tangent_aval
from plait.lax._batch_helpers import batch_size
from plait.lax.contractions import conv_general_dilated_p, dot_general_p
from plait.transforms.ad import jvp_graph
from plait.transforms.batching import batch_graph
from plait.transforms.transpose import transpose_graph


# ---------------------------------------------------------------------------
# policies

def nothing_saveable(prim, *avals, **params) -> bool:
    """Save nothing but the checkpointed function's inputs (the default)."""
    return False


def everything_saveable(prim, *avals, **params) -> bool:
    """Save every value the backward pass needs (no recomputation)."""
    return True


def dots_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix products and convolutions; recompute the rest."""
    return prim is dot_general_p or prim is conv_general_dilated_p


def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
    """Save the results of ``dot_general``s without batch dimensions."""
    if prim is dot_general_p:
        (_, _), (lb, rb) = params["dimension_numbers"]
        return not lb and not rb
    return False


def save_only_these_names(*names: str) -> Callable:
    """Save only values tagged with ``checkpoint_name(x, name)`` for one of ``names``."""
    keep = frozenset(names)

    def policy(prim, *avals, **params):
        return prim is checkpoint_name_p and params["name"] in keep
    return policy


def save_any_names_but_these(*names: str) -> Callable:
    """Save every value tagged with ``checkpoint_name`` except those named ``names``."""
    drop = frozenset(names)

    def policy(prim, *avals, **params):
        return prim is checkpoint_name_p and params["name"] not in drop
    return policy


def save_from_both_policies(a: Callable, b: Callable) -> Callable:
    """Save what either policy saves."""
    return lambda prim, *avals, **params: a(prim, *avals, **params) or b(prim, *avals, **params)


checkpoint_policies = types.SimpleNamespace(
    nothing_saveable=nothing_saveable, everything_saveable=everything_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_from_both_policies=save_from_both_policies)


def checkpoint_name(x, name: str):
    """Tag ``x`` with ``name`` for ``save_only_these_names`` policies (an identity)."""
    return checkpoint_name_p.bind(x, name=str(name))


# ---------------------------------------------------------------------------
# the public transform

def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True,
               policy: Callable | None = None, static_argnums: int | Sequence[int] = ()):
    """``fun`` whose intermediate values are recomputed in the backward pass.

    ``policy(prim, *avals, **params) -> bool`` decides which values may be saved
    instead (see :data:`checkpoint_policies`); by default only ``fun``'s inputs are.
    ``prevent_cse`` keeps ``jit``'s CSE from merging the recomputation with the forward
    pass (turn it off only inside ``scan``-like loops, where it cannot happen).
    ``static_argnums`` marks arguments that are Python values (hashable), not arrays.
    Usable as ``checkpoint(f, ...)`` or ``@checkpoint(policy=...)``.
    """
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy,
                                    static_argnums=static_argnums)
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    policy = nothing_saveable if policy is None else policy
    name = getattr(fun, "__name__", "fn")
    cache: dict = {}

    @functools.wraps(fun)
    def remat_f(*args, **kwargs):
        n = len(args)
        snums = {i if i >= 0 else n + i for i in statics}
        static_vals = tuple((i, args[i]) for i in sorted(snums) if i < n)
        dyn = tuple(a for i, a in enumerate(args) if i not in snums)
        leaves, in_tree = tree_flatten((dyn, kwargs))
        avals = []
        for k, x in enumerate(leaves):
            try:
                avals.append(get_aval(x))
            except PlaitTypeError:
                raise PlaitTypeError(
                    f"checkpoint of {name}: argument leaf {k} is a {type(x).__name__}, not an "
                    f"array; mark Python-valued arguments with static_argnums") from None
        try:
            key = (in_tree, tuple(avals), static_vals)
            hit = cache.get(key)
        except TypeError:
            raise PlaitTypeError(f"checkpoint of {name}: static arguments must be hashable; "
                                 f"got {static_vals}") from None
        if hit is None:
            hit = cache[key] = _trace(fun, in_tree, avals, static_vals, n, name)
        graph, consts, out_tree = hit
        outs = remat_p.bind(*consts, *leaves, graph=graph, policy=policy,
                            prevent_cse=bool(prevent_cse), name=name)
        return tree_unflatten(out_tree, outs)

    return remat_f


remat = checkpoint


def _trace(fun, in_tree, avals, static_vals, n_args, name):
    box = []

    def flat(*leaves):
        dyn, kwargs = tree_unflatten(in_tree, leaves)
        args, it = [], iter(dyn)
        static = dict(static_vals)
        for i in range(n_args):
            args.append(static[i] if i in static else next(it))
        out_leaves, out_tree = tree_flatten(fun(*args, **kwargs))
        box.append(out_tree)
        return out_leaves

    closed, _ = trace_to_graph(flat, avals, description=f"checkpoint of {name}", name=name)
    return closure_convert(closed), list(closed.consts), box[-1]


# ---------------------------------------------------------------------------
# partial evaluation under a policy

_PE_CACHE: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()


def remat_partial_eval_graph(graph: Graph, in_unknowns: Sequence[bool], policy: Callable
                             ) -> tuple[Graph, Graph, list[bool], int]:
    """Split ``graph`` into ``(known, unknown, out_unknowns, num_res)`` like
    ``partial_eval_graph``, but save a known value for the unknown part only when it
    is an input of ``graph`` or ``policy`` allows the equation that computed it; the
    unknown graph recomputes every other known value it needs. ``known`` returns the
    known outputs followed by the residuals; ``unknown`` takes the residuals followed
    by the unknown inputs. Cached per (graph, unknowns, policy)."""
    key = (tuple(map(bool, in_unknowns)), policy)
    per = _PE_CACHE.setdefault(graph, {})
    if key not in per:
        per[key] = _split(graph, key[0], policy)
    return per[key]


def _split(graph: Graph, in_unknowns, policy):
    unknown = {v for v, u in zip(graph.invars, in_unknowns) if u}
    producer: dict[Var, Any] = {}
    unknown_eqns = set()
    for e in graph.eqns:
        if any(isinstance(a, Var) and a in unknown for a in e.inputs):
            unknown_eqns.add(id(e))
            unknown.update(e.outputs)
        else:
            producer.update((o, e) for o in e.outputs)
    out_unknowns = [isinstance(v, Var) and v in unknown for v in graph.outvars]

    residuals: list[Var] = []
    recompute: set[int] = set()
    seen: set[Var] = set()
    saveable: dict[int, bool] = {}
    stack = [a for e in graph.eqns if id(e) in unknown_eqns
             for a in e.inputs if isinstance(a, Var) and a not in unknown]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        e = producer.get(v)
        if e is None:                         # a known input of the graph
            residuals.append(v)
            continue
        if id(e) not in saveable:
            saveable[id(e)] = bool(policy(e.prim, *[a.aval for a in e.inputs], **e.params))
        if saveable[id(e)]:
            residuals.append(v)
        else:
            recompute.add(id(e))
            stack.extend(a for a in e.inputs if isinstance(a, Var))
    order = {v: i for i, v in enumerate(graph.invars)}
    pos = {o: (len(order) + i) for i, e in enumerate(graph.eqns) for o in e.outputs}
    residuals.sort(key=lambda v: order.get(v, pos.get(v, 0)))

    known_in = [v for v, u in zip(graph.invars, in_unknowns) if not u]
    known_out = [v for v, u in zip(graph.outvars, out_unknowns) if not u]
    known = Graph([], known_in, [e for e in graph.eqns if id(e) not in unknown_eqns],
                  known_out + residuals, f"{graph.name} (forward)")
    known, _ = dce_graph(known)
    res_in = [Var(v.aval) for v in residuals]
    rename = dict(zip(residuals, res_in))

    def sub(a):
        return rename.get(a, a) if isinstance(a, Var) else a
    eqns = [e.replace(inputs=[sub(a) for a in e.inputs]) for e in graph.eqns
            if id(e) in unknown_eqns or id(e) in recompute]
    unknown_g = Graph([], res_in + [v for v, u in zip(graph.invars, in_unknowns) if u], eqns,
                      [sub(v) for v, u in zip(graph.outvars, out_unknowns) if u],
                      f"{graph.name} (recomputed)")
    unknown_g, _ = dce_graph(unknown_g)
    return known, unknown_g, out_unknowns, len(residuals)


# ---------------------------------------------------------------------------
# rules of the remat primitive

_CONVERTED: "weakref.WeakKeyDictionary[ClosedGraph, Graph]" = weakref.WeakKeyDictionary()


def _bind_closed(closed: ClosedGraph, args, **params) -> list:
    g = _CONVERTED.get(closed)
    if g is None:
        g = _CONVERTED[closed] = closure_convert(closed)
    return remat_p.bind(*closed.consts, *args, graph=g, **params)


def _remat_jvp(primals, tangents, *, graph, policy, prevent_cse, name):
    nonzeros = [not isinstance(t, Zero) for t in tangents]
    jg, out_nz = jvp_graph(graph, nonzeros)
    outs = _bind_closed(jg, list(primals) + [t for t in tangents if not isinstance(t, Zero)],
                        policy=policy, prevent_cse=prevent_cse, name=f"jvp({name})")
    n = len(graph.outvars)
    nz = iter(outs[n:])
    return outs[:n], [next(nz) if z else Zero(tangent_aval(v.aval))
                      for v, z in zip(graph.outvars, out_nz)]


def _remat_partial_eval(trace, tracers, *, graph, policy, prevent_cse, name):
    unknowns = [not t.is_known for t in tracers]
    known, unknown, out_unknowns, num_res = remat_partial_eval_graph(graph, unknowns, policy)
    kouts = eval_graph(known, [], *[t.known for t in tracers if t.is_known])
    n_known = len(kouts) - num_res
    ins = [trace.pure(r) for r in kouts[n_known:]] + [t for t in tracers if not t.is_known]
    uouts = iter(trace.stage(remat_p, ins, dict(graph=unknown, policy=policy,
                                                prevent_cse=prevent_cse, name=name)))
    kit = iter(kouts[:n_known])
    return [next(uouts) if u else trace.pure(next(kit)) for u in out_unknowns]


def _remat_transpose(cts, *invals, graph, policy, prevent_cse, name):
    linear = [is_undefined_primal(x) for x in invals]
    ct_zero = [isinstance(c, Zero) for c in cts]
    tg = transpose_graph(graph, linear, ct_zero)
    outs = iter(_bind_closed(tg, [x for x, l in zip(invals, linear) if not l] +
                             [c for c in cts if not isinstance(c, Zero)],
                             policy=policy, prevent_cse=prevent_cse,
                             name=f"transpose({name})"))
    return [next(outs) if l else None for l in linear]


def _remat_batch(vals, dims, *, graph, policy, prevent_cse, name):
    g, out_dims, consts = batch_graph(graph, batch_size(vals, dims), dims)
    return remat_p.bind(*consts, *vals, graph=g, policy=policy, prevent_cse=prevent_cse,
                        name=f"vmap({name})"), out_dims


def _name_jvp(primals, tangents, *, name):
    return checkpoint_name_p.bind(primals[0], name=name), tangents[0]


def _name_batch(vals, dims, *, name):
    return checkpoint_name_p.bind(vals[0], name=name), dims[0]


def _barrier_jvp(primals, tangents):
    nz = [t for t in tangents if not isinstance(t, Zero)]     # two barriers: partial eval
    it = iter(optimization_barrier_p.bind(*nz))                 # keeps the primals known
    return (optimization_barrier_p.bind(*primals),
            [t if isinstance(t, Zero) else next(it) for t in tangents])


def _barrier_transpose(cts, *invals):
    return [None if not is_undefined_primal(x) else c for x, c in zip(invals, cts)]


remat_p.def_rule("jvp", _remat_jvp)
remat_p.def_rule("partial_eval", _remat_partial_eval)
remat_p.def_rule("transpose", _remat_transpose)
remat_p.def_rule("batch", _remat_batch)
checkpoint_name_p.def_rule("jvp", _name_jvp)
checkpoint_name_p.def_rule("transpose", lambda ct, x, *, name: [ct])
checkpoint_name_p.def_rule("batch", _name_batch)
optimization_barrier_p.def_rule("jvp", _barrier_jvp)
optimization_barrier_p.def_rule("transpose", _barrier_transpose)
optimization_barrier_p.def_rule(
    "batch", lambda vals, dims: (optimization_barrier_p.bind(*vals), list(dims)))


# ---------------------------------------------------------------------------
# listing residuals

class Residual(NamedTuple):
    """One value the backward pass keeps: its shape and dtype, and where it comes from
    (``primitive`` is None for an argument of the function)."""
    shape: tuple
    dtype: Any
    primitive: str | None
    source: str

    def __str__(self):
        if self.primitive is None:
            return f"{self.dtype}{list(self.shape)} {self.source}"
        return f"{self.dtype}{list(self.shape)} from {self.primitive} at {self.source}"


def ad_residuals(fun: Callable, *args, **kwargs) -> list[Residual]:
    """The residuals ``vjp(fun, *args)`` (and so ``grad``) saves for the backward pass,
    each with shape, dtype, the primitive that produced it (None for an argument) and
    the user's source line; like ``jax.ad_checkpoint.print_saved_residuals``.
    Scalars folded into the backward graph as literals are not residuals."""
    from plait.transforms.api_ad import _Flat, linearize_flat
    leaves, in_tree = tree_flatten(tuple(args))
    flat = _Flat(lambda *a: fun(*a, **kwargs), in_tree)
    name = getattr(fun, "__name__", "fn")

    def residuals_of(*ls):
        _, _, res, _ = linearize_flat(flat, list(ls), f"ad_residuals of {name}")
        return list(res)

    closed, _ = trace_to_graph(residuals_of, [get_aval(x) for x in leaves],
                               description=f"ad_residuals of {name}", name=name)
    g = closed.graph
    producer = {o: e for e in g.eqns for o in e.outputs}
    argnames = _arg_paths(fun, in_tree, len(leaves))
    out = []
    for v in g.outvars:
        if isinstance(v, Literal):
            continue
        e = producer.get(v)
        if e is None:
            where = (argnames[g.invars.index(v)] if v in g.invars else "a closed-over constant")
            out.append(Residual(v.aval.shape, v.aval.dtype, None, where))
        else:
            out.append(Residual(v.aval.shape, v.aval.dtype, e.prim.name, e.source or "?"))
    return out


def print_saved_residuals(fun: Callable, *args, **kwargs) -> None:
    """Print :func:`ad_residuals` one per line (JAX's ``print_saved_residuals``)."""
    for r in ad_residuals(fun, *args, **kwargs):
        print(r)


def _arg_paths(fun, in_tree, n: int) -> list[str]:
    from plait.core.pytree import leaf_paths
    import inspect
    try:
        names = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        names = []
    out = []
    for p in leaf_paths(in_tree)[:n]:
        idx, _, tail = p[1:].partition("]")
        i = int(idx) if idx.isdigit() else -1
        base = names[i] if 0 <= i < len(names) else f"args[{idx}]"
        out.append(f"argument {base}{tail}")
    return out
