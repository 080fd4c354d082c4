"""User-facing autodiff over pytrees: ``jvp``, ``linearize``, ``vjp``, ``grad``,
``value_and_grad``, ``jacfwd``, ``jacrev`` and ``hessian``.

Reverse mode is linearize-then-transpose: the JVP of the function runs under
partial evaluation with the primals known and the tangents unknown, so the primal
computation happens now (eagerly, or staged into an enclosing ``jit`` graph) and
the tangent computation is staged into a linear graph whose const vars are the
residuals; ``vjp`` runs that graph backwards with :func:`backward_pass`. Under
``jit`` the forward pass, the residuals and the backward pass all land in the one
graph being traced.
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

import numpy as np

from plait.core import dtypes
from plait.core.ad_util import Zero, UndefinedPrimal
from plait.core.graph import ClosedGraph, Graph, eval_graph
from plait.core.graph_transforms import register_graph_transform
from plait.core.pytree import tree_flatten, tree_unflatten, TreeDef
from plait.core.staging import trace_to_graph
from plait.core.trace import (new_main, find_top_trace, full_raise, full_lower, get_aval,
                              wrap_array)
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lax._ad_helpers import tangent_aval, differentiable, instantiate
from plait.transforms.ad import jvp_flat
from plait.transforms.partial_eval import PartialEvalTrace, PEBuilder, PETracer
from plait.transforms.transpose import backward_pass


# ---------------------------------------------------------------------------
# helpers

def _as_array(x):
    """NumPy results (e.g. from literals) become ``plait.Array``; others pass through."""
    if isinstance(x, (np.ndarray, np.generic)):
        return wrap_array(np.asarray(x), False)
    return x


def _fun_name(fun) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


def _leaf_aval(x, what: str):
    try:
        return get_aval(x)
    except PlaitTypeError:
        raise PlaitTypeError(f"{what} is a {type(x).__name__}, which is not an array; "
                             f"differentiable functions take and return arrays or pytrees "
                             f"of arrays") from None


class _Flat:
    """``fun`` as a function of flat leaves returning flat output (+ aux) leaves."""

    def __init__(self, fun: Callable, in_tree: TreeDef, has_aux: bool = False):
        self.fun, self.in_tree, self.has_aux = fun, in_tree, has_aux
        self.out_tree = self.aux_tree = None
        self.num_out = 0

    def __call__(self, *leaves):
        out = self.fun(*tree_unflatten(self.in_tree, leaves))
        aux_leaves = []
        if self.has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise PlaitTypeError(f"{_fun_name(self.fun)} was differentiated with "
                                     f"has_aux=True, so it must return a pair (output, aux); "
                                     f"got {type(out).__name__}")
            out, aux = out
            aux_leaves, self.aux_tree = tree_flatten(aux)
        out_leaves, self.out_tree = tree_flatten(out)
        for o in out_leaves:
            _leaf_aval(o, f"an output of {_fun_name(self.fun)}")
        self.num_out = len(out_leaves)
        return list(out_leaves) + list(aux_leaves)

    def split(self, outs):
        outs = [_as_array(full_lower(o)) for o in outs]
        main = tree_unflatten(self.out_tree, outs[:self.num_out])
        aux = tree_unflatten(self.aux_tree, outs[self.num_out:]) if self.has_aux else None
        return main, aux


def linearize_flat(flat: _Flat, primals: Sequence, description: str
                   ) -> tuple[list, Graph, list, list[bool]]:
    """Linearize ``flat`` at ``primals``.

    Returns ``(primal_outs, linear_graph, residuals, diff)``: the graph's const vars
    are the residuals, its inputs the tangents of the differentiable primals (those
    marked in ``diff``), its outputs the tangents of the first ``flat.num_out``
    outputs (aux outputs have no tangent).
    """
    with new_main(PartialEvalTrace, PEBuilder(), description=description) as main:
        trace = PartialEvalTrace(main)
        diff = [differentiable(get_aval(p)) for p in primals]
        t_in = [trace.new_unknown(tangent_aval(get_aval(p))) if d else None
                for p, d in zip(primals, diff)]
        tangents = [t if t is not None else Zero(tangent_aval(get_aval(p)))
                    for t, p in zip(t_in, primals)]
        out_p, out_t = jvp_flat(flat, primals, tangents, description)
        out_p = [full_lower(p) for p in out_p]
        assert not any(isinstance(p, PETracer) and p._trace.main is main for p in out_p)
        out_t = [full_raise(trace, instantiate(t)) for t in out_t[:flat.num_out]]
        graph, residuals = main.payload.build([t for t in t_in if t is not None], out_t,
                                              name=f"linearized {description}")
    return out_p, graph, residuals, diff


def _argnums(argnums, nargs: int, fun, who: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise PlaitValueError(f"{who}: argnums must name at least one argument")
    out = []
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise PlaitValueError(f"{who} of {_fun_name(fun)}: argnums {argnums!r} is out of "
                                  f"range for a call with {nargs} positional arguments")
        out.append(i % nargs)
    return tuple(out)


def _arg_name(fun, i: int) -> str:
    try:
        params = [p for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if i < len(params):
            return f"'{params[i].name}' (argnums={i})"
    except (TypeError, ValueError):
        pass
    return f"argnums={i}"


def _check_inputs(fun, args, nums, who: str, holomorphic: bool, allow_int: bool,
                  allow_complex: bool) -> None:
    for i in nums:
        leaves, _ = tree_flatten(args[i])
        for x in leaves:
            try:
                a = get_aval(x)
            except PlaitTypeError:
                _leaf_aval(x, f"argument {_arg_name(fun, i)} of {_fun_name(fun)}")
            if not differentiable(a):
                if allow_int:
                    continue
                raise PlaitTypeError(
                    f"{who} of {_fun_name(fun)} with respect to argument {_arg_name(fun, i)}: "
                    f"it has dtype {a.dtype}, and only floating or complex inputs can be "
                    f"differentiated. Pass a float array (e.g. x.astype('float32')), leave "
                    f"the argument out of argnums, or use allow_int=True for zero gradients.")
            if holomorphic and not dtypes.is_complex(a.dtype):
                raise PlaitTypeError(
                    f"{who} with holomorphic=True requires complex inputs, but argument "
                    f"{_arg_name(fun, i)} of {_fun_name(fun)} has dtype {a.dtype}")
            if not holomorphic and not allow_complex and dtypes.is_complex(a.dtype):
                raise PlaitTypeError(
                    f"{who} requires real inputs, but argument {_arg_name(fun, i)} of "
                    f"{_fun_name(fun)} has dtype {a.dtype}; for holomorphic functions pass "
                    f"holomorphic=True")


def _check_output(fun, aval, who: str, holomorphic: bool, scalar: bool) -> None:
    if scalar and aval.shape != ():
        raise PlaitTypeError(
            f"{who} requires a scalar output (shape ()), but {_fun_name(fun)} returned "
            f"{aval.str_short()}. Reduce it to a scalar (e.g. sum it), or use vjp/jacrev "
            f"for non-scalar outputs.")
    if holomorphic:
        if not dtypes.is_complex(aval.dtype):
            raise PlaitTypeError(f"{who} with holomorphic=True requires complex outputs, but "
                                 f"{_fun_name(fun)} returned {aval.str_short()}")
    elif not dtypes.is_float(aval.dtype):
        hint = (" For holomorphic functions pass holomorphic=True; otherwise take the real "
                "part or the absolute value." if dtypes.is_complex(aval.dtype) else "")
        raise PlaitTypeError(f"{who} requires real floating-point outputs, but "
                             f"{_fun_name(fun)} returned {aval.str_short()}.{hint}")


def _partial(fun, args, kwargs, nums):
    def f_part(*dyn):
        a = list(args)
        for i, d in zip(nums, dyn):
            a[i] = d
        return fun(*a, **kwargs)
    f_part.__name__ = _fun_name(fun)
    return f_part


# ---------------------------------------------------------------------------
# forward mode

def jvp(fun: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False):
    """``(fun(*primals), J·tangents)``: the Jacobian-vector product of ``fun`` at ``primals``.

    ``primals`` and ``tangents`` are tuples (or lists) of pytrees of the same structure;
    each tangent has its primal's shape and dtype. Tangents of integer or boolean
    primals are ignored (taken as zero). With ``has_aux`` returns ``(out, tangent, aux)``.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise PlaitTypeError("jvp: primals and tangents must be tuples (or lists) with one "
                             "entry per positional argument of the function")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise PlaitTypeError(f"jvp: primals have structure {p_tree} but tangents have "
                             f"structure {t_tree}; they must match")
    ts = []
    for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pa, ta = _leaf_aval(p, "a primal"), _leaf_aval(t, "a tangent")
        if pa.shape != ta.shape:
            raise PlaitTypeError(f"jvp: tangent {k} has shape {ta.shape} but its primal has "
                                 f"shape {pa.shape}")
        if differentiable(pa) and ta.dtype != pa.dtype:
            if not ta.weak_type:
                raise PlaitTypeError(f"jvp: tangent {k} has dtype {ta.dtype} but its primal "
                                     f"has dtype {pa.dtype}; they must match")
            from plait.lax import convert_element_type
            t = convert_element_type(t, pa.dtype)
        ts.append(t)
    flat = _Flat(fun, p_tree, has_aux)
    out_p, out_t = jvp_flat(flat, p_leaves, ts, description=f"jvp of {_fun_name(fun)}")
    primal_out, aux = flat.split(out_p)
    tangent_out = tree_unflatten(flat.out_tree, [_as_array(full_lower(instantiate(t)))
                                                 for t in out_t[:flat.num_out]])
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the linear map ``J·tangents``.

    The primal computation runs once, now; ``f_jvp`` evaluates only the staged linear
    graph (with the residuals it saved). With ``has_aux`` returns ``(out, f_jvp, aux)``.
    """
    leaves, in_tree = tree_flatten(primals)
    flat = _Flat(fun, in_tree, has_aux)
    out_p, graph, res, diff = linearize_flat(flat, leaves, f"linearize of {_fun_name(fun)}")
    out, aux = flat.split(out_p)

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != in_tree:
            raise PlaitTypeError(f"the linearized function takes tangents of structure "
                                 f"{in_tree}, got {t_tree}")
        outs = eval_graph(graph, res, *[t for t, d in zip(t_leaves, diff) if d])
        return tree_unflatten(flat.out_tree, [_as_array(o) for o in outs])

    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# ---------------------------------------------------------------------------
# reverse mode

def _vjp(fun, primals, has_aux, description):
    leaves, in_tree = tree_flatten(tuple(primals))
    flat = _Flat(fun, in_tree, has_aux)
    recorded = find_top_trace(leaves).process_vjp(flat, leaves, description)
    if recorded is not None:
        out_p, pullback, out_avals = recorded
    else:
        out_p, graph, res, diff = linearize_flat(flat, leaves, description)
        out_avals = [v.aval for v in graph.outvars]

        def pullback(ct_leaves):
            cts = iter(backward_pass(graph, res, [UndefinedPrimal(v.aval)
                                                  for v in graph.invars], ct_leaves))
            return [instantiate(next(cts)) if d else instantiate(Zero(get_aval(x).strip_weak()))
                    for x, d in zip(leaves, diff)]
    out, aux = flat.split(out_p)

    def vjp_fun(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != flat.out_tree:
            raise PlaitTypeError(f"the vjp function takes a cotangent with the structure of "
                                 f"the output, {flat.out_tree}; got {ct_tree}")
        for k, (c, a) in enumerate(zip(ct_leaves, out_avals)):
            ca = _leaf_aval(c, "a cotangent")
            if ca.shape != a.shape:
                raise PlaitTypeError(f"cotangent {k} has shape {ca.shape} but the output "
                                     f"has shape {a.shape}")
        grads = pullback(ct_leaves)
        return tree_unflatten(in_tree, [_as_array(full_lower(g)) for g in grads])

    return out, vjp_fun, aux, flat


def vjp_graph(closed: ClosedGraph, n_primals: int) -> ClosedGraph:
    """The backward graph of ``closed``: its inputs are ``closed``'s inputs followed by
    one cotangent per output; its outputs are the cotangents of the first ``n_primals``
    inputs (the others are held constant). The forward computation is recomputed inside
    (a caller that also runs the forward relies on CSE to share it)."""
    g = closed.graph
    n_in = len(g.invars)
    ct_avals = [tangent_aval(a) for a in g.out_avals]

    def backward(*args):
        others = args[n_primals:n_in]

        def forward(*primals):
            return list(eval_graph(g, closed.consts, *primals, *others))
        _, vjp_fun, _, _ = _vjp(forward, args[:n_primals], False, f"vjp of {g.name}")
        return list(vjp_fun(list(args[n_in:])))
    out, _ = trace_to_graph(backward, list(g.in_avals) + ct_avals,
                            description=f"the backward graph of {g.name}",
                            name=f"vjp_{g.name}")
    return out


register_graph_transform("vjp_graph", vjp_graph)


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), vjp_fun)``; ``vjp_fun(ct)`` returns a tuple ``ctᵀJ`` per primal.

    Complex numbers follow JAX's convention (see plait/transforms/RULES.md). With
    ``has_aux`` returns ``(out, vjp_fun, aux)``.
    """
    out, vjp_fun, aux, _ = _vjp(fun, primals, has_aux, f"vjp of {_fun_name(fun)}")
    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """A function returning ``(fun(*args), gradient)`` (``((out, aux), gradient)`` with aux).

    ``fun`` must return a real scalar (a complex one with ``holomorphic=True``). The
    gradient has the structure of ``args[argnums]`` (a tuple for tuple ``argnums``).
    For complex inputs of a real function the gradient is the conjugate of
    ``2 ∂f/∂z̄`` (JAX's convention): descend with ``z - lr * conj(g)``.
    """
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums(argnums, len(args), fun, "grad")
        _check_inputs(fun, args, nums, "grad", holomorphic, allow_int, allow_complex=True)
        f_part = _partial(fun, args, kwargs, nums)
        out, vjp_fun, aux, flat = _vjp(f_part, [args[i] for i in nums], has_aux,
                                       f"grad of {_fun_name(fun)}")
        out_leaves, _ = tree_flatten(out)
        if len(out_leaves) != 1:
            raise PlaitTypeError(f"grad requires {_fun_name(fun)} to return a single scalar "
                                 f"array, got a pytree with {len(out_leaves)} leaves "
                                 f"({flat.out_tree})")
        a = _leaf_aval(out_leaves[0], f"the output of {_fun_name(fun)}")
        _check_output(fun, a, "grad", holomorphic, scalar=True)
        one = wrap_array(np.ones((), a.dtype), False)
        g = vjp_fun(tree_unflatten(flat.out_tree, [one]))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((out, aux), g) if has_aux else (out, g)

    value_and_grad_f.__name__ = f"value_and_grad({_fun_name(fun)})"
    value_and_grad_f.__wrapped__ = fun
    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The gradient of scalar-valued ``fun`` with respect to ``args[argnums]``.

    ``grad(f)(x)`` is ``vjp(f, x)[1](1.0)``. With ``has_aux`` returns ``(g, aux)``.
    Composes with every transformation: ``grad(grad(f))``, ``jit(grad(f))``, ...
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    def grad_f(*args, **kwargs):
        v, g = vg(*args, **kwargs)
        return (g, v[1]) if has_aux else g

    grad_f.__name__ = f"grad({_fun_name(fun)})"
    grad_f.__wrapped__ = fun
    return grad_f


# ---------------------------------------------------------------------------
# Jacobians

def _basis_stack(aval):
    """All basis vectors of ``aval``'s space stacked on a leading axis: ``(n,) + shape``."""
    return wrap_array(np.eye(aval.size, dtype=aval.dtype).reshape(
        (aval.size,) + tuple(aval.shape)), False)


def _mapped_over_basis(fn, aval, lead_shape, out_avals, lead_first: bool) -> list:
    """``fn(basis vector) -> list`` run once under ``vmap`` over every basis vector of
    ``aval``; result ``o`` becomes an array of shape ``lead_shape + out_avals[o].shape``
    (``lead_first``) or ``out_avals[o].shape + lead_shape``."""
    from plait.lax import reshape
    from plait.transforms.batching import batch_flat
    n = aval.size
    shapes = [tuple(lead_shape) + tuple(a.shape) if lead_first else
              tuple(a.shape) + tuple(lead_shape) for a in out_avals]
    if n == 0 or any(a.size == 0 for a in out_avals):
        return [wrap_array(np.zeros(s, a.dtype), False) for s, a in zip(shapes, out_avals)]
    want = [0 if lead_first else len(a.shape) for a in out_avals]
    outs, _ = batch_flat(fn, n, [_basis_stack(aval)], [0], want,
                         description="a Jacobian over the basis")
    return [reshape(o, s) for o, s in zip(outs, shapes)]


def _zeros_of(aval):
    return wrap_array(np.zeros(aval.shape, aval.dtype), False)


def _assemble(flat: _Flat, in_tree: TreeDef, single: bool, blocks):
    """``blocks[o][i]``: Jacobian of output leaf o w.r.t. input leaf i, as a pytree."""
    per_out = []
    for row in blocks:
        t = tree_unflatten(in_tree, [_as_array(full_lower(b)) for b in row])
        per_out.append(t[0] if single else t)
    return tree_unflatten(flat.out_tree, per_out)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` by forward mode (the linearized function ``vmap``-ed over
    the basis of each input). Each leaf has shape ``out.shape + in.shape``."""
    def jac_f(*args, **kwargs):
        nums = _argnums(argnums, len(args), fun, "jacfwd")
        _check_inputs(fun, args, nums, "jacfwd", holomorphic, False, allow_complex=False)
        dyn = tuple(args[i] for i in nums)
        leaves, in_tree = tree_flatten(dyn)
        flat = _Flat(_partial(fun, args, kwargs, nums), in_tree, has_aux)
        out_p, graph, res, _ = linearize_flat(flat, leaves, f"jacfwd of {_fun_name(fun)}")
        out, aux = flat.split(out_p)
        in_avals = [get_aval(x).strip_weak() for x in leaves]
        out_avals = [v.aval for v in graph.outvars]

        def push(i):
            def fn(t):
                return eval_graph(graph, res, *[t if j == i else _zeros_of(a)
                                                for j, a in enumerate(in_avals)])
            return fn
        cols = [_mapped_over_basis(push(i), ia, ia.shape, out_avals, False)
                for i, ia in enumerate(in_avals)]
        blocks = [[cols[i][o] for i in range(len(in_avals))] for o in range(len(out_avals))]
        jac = _assemble(flat, in_tree, isinstance(argnums, int), blocks)
        return (jac, aux) if has_aux else jac

    jac_f.__name__ = f"jacfwd({_fun_name(fun)})"
    return jac_f


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` by reverse mode (the transposed linear function
    ``vmap``-ed over the basis of each output). Each leaf has shape
    ``out.shape + in.shape``."""
    def jac_f(*args, **kwargs):
        nums = _argnums(argnums, len(args), fun, "jacrev")
        _check_inputs(fun, args, nums, "jacrev", holomorphic, allow_int, allow_complex=True)
        dyn = tuple(args[i] for i in nums)
        leaves, in_tree = tree_flatten(dyn)
        flat = _Flat(_partial(fun, args, kwargs, nums), in_tree, has_aux)
        out_p, graph, res, diff = linearize_flat(flat, leaves, f"jacrev of {_fun_name(fun)}")
        out, aux = flat.split(out_p)
        out_avals = [v.aval for v in graph.outvars]
        for a in out_avals:
            _check_output(fun, a, "jacrev", holomorphic, scalar=False)
        in_avals = [get_aval(x).strip_weak() for x in leaves]
        undefined = [UndefinedPrimal(v.aval) for v in graph.invars]

        def pull(o):
            def fn(ct):
                cts = [ct if j == o else Zero(a) for j, a in enumerate(out_avals)]
                g = backward_pass(graph, res, undefined, cts)
                return [instantiate(c) if d else _zeros_of(ia)
                        for c, d, ia in zip(g, diff, in_avals)]
            return fn
        blocks = [_mapped_over_basis(pull(o), oa, oa.shape, in_avals, True)
                  for o, oa in enumerate(out_avals)]
        jac = _assemble(flat, in_tree, isinstance(argnums, int), blocks)
        return (jac, aux) if has_aux else jac

    jac_f.__name__ = f"jacrev({_fun_name(fun)})"
    return jac_f


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
