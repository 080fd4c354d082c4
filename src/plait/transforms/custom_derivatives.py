"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules.

A call of a decorated function binds a call-like primitive whose params hold the
function's staged graph and the user's rule functions:

- ``custom_jvp_call`` (params ``graph``, ``jvp``, ``name``): evaluates the graph; its
  ``jvp`` rule calls the user's rule instead of differentiating the graph.
- ``custom_vjp_call`` (params ``graph``, ``fwd``, ``bwd``, ``name``): its ``jvp`` rule
  runs the user's ``fwd`` and emits ``custom_lin`` on the tangents, a linear
  primitive whose ``transpose`` rule calls ``bwd``. Evaluating ``custom_lin`` (forward
  mode through a custom_vjp function) is an error, as in JAX.

Values the function closes over become leading operands (closure conversion); the
rule functions must not close over traced values: pass them as arguments instead.
Arguments listed in ``nondiff_argnums`` are static Python values, passed first to the
rules (``jvp(*nondiff, primals, tangents)``, ``bwd(*nondiff, residuals, ct)``).
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from plait.core import trace as _trace
from plait.core.ad_util import Zero
from plait.core.graph import closure_convert, run_graph
from plait.core.primitive import new_primitive
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import get_aval, Tracer
from plait.errors import PlaitTypeError, PlaitError
from plait.lax._ad_helpers import instantiate, tangent_aval


def _abstract(*avals, graph, **_):
    return graph.out_avals


def _impl(*args, graph, **_):
    return run_graph(graph, args)


def _num_consts(graph, n_args: int) -> int:
    return len(graph.invars) - n_args


def _stage(fun: Callable, args: list, name: str):
    """Trace ``fun`` on flat ``args``; returns (closure-converted graph, consts, out_tree)."""
    box = {}

    def flat(*leaves):
        out_leaves, box["tree"] = tree_flatten(fun(*leaves))
        return out_leaves
    closed, _ = trace_to_graph(flat, [get_aval(a) for a in args],
                               description=f"custom derivative function {name}", name=name)
    return closure_convert(closed), closed.consts, box["tree"]


def _check_closed_over_tangents(tangents, n_consts: int, name: str):
    if any(not isinstance(t, Zero) for t in tangents[:n_consts]):
        raise PlaitTypeError(
            f"{name} is differentiated with respect to a value it closes over. A custom "
            f"derivative rule only covers the function's explicit arguments: pass that "
            f"value as an argument instead of closing over it.")


def _split_pair(out, name: str, what: str):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise PlaitTypeError(f"the {what} of {name} must return a pair, got "
                             f"{type(out).__name__}")
    return out


def _check_like(vals, avals, name: str, what: str):
    if len(vals) != len(avals):
        raise PlaitTypeError(f"the {what} of {name} returned {len(vals)} arrays, expected "
                             f"{len(avals)} (one per output of the function)")
    for v, a in zip(vals, avals):
        va = get_aval(v)
        if va.shape != a.shape:
            raise PlaitTypeError(f"the {what} of {name} returned an array of shape "
                                 f"{va.shape} where the function's output has shape "
                                 f"{a.shape}")


# --- custom_jvp ---------------------------------------------------------------------
custom_jvp_call_p = new_primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_abstract_eval(_abstract)
custom_jvp_call_p.def_impl(_impl)


def _custom_jvp_call_jvp(primals, tangents, *, graph, jvp, name):
    n_consts = _num_consts(graph, jvp.num_args)
    _check_closed_over_tangents(tangents, n_consts, name)
    outs = jvp(primals[n_consts:], [instantiate(t) for t in tangents[n_consts:]])
    p_out, t_out = outs
    _check_like(p_out, graph.out_avals, name, "jvp rule's primal output")
    _check_like(t_out, graph.out_avals, name, "jvp rule's tangent output")
    return p_out, t_out


custom_jvp_call_p.def_rule("jvp", _custom_jvp_call_jvp)


class _FlatJVPRule:
    """The user's ``jvp(primals, tangents)`` as a function of flat lists."""

    def __init__(self, rule, in_tree, nondiff, num_args: int, name: str):
        self.rule, self.in_tree, self.nondiff = rule, in_tree, nondiff
        self.num_args, self.name = num_args, name

    def __call__(self, primals, tangents):
        p = tree_unflatten(self.in_tree, list(primals))
        t = tree_unflatten(self.in_tree, list(tangents))
        p_out, t_out = _split_pair(self.rule(*self.nondiff, p, t), self.name, "jvp rule")
        return tree_flatten(p_out)[0], tree_flatten(t_out)[0]


class custom_jvp:
    """A function with a user-defined JVP rule: ``f = custom_jvp(f); f.defjvp(rule)``.

    ``rule(primals, tangents) -> (primal_out, tangent_out)`` with ``primals`` and
    ``tangents`` tuples of the (differentiable) arguments. Reverse mode works too: the
    rule must be linear in the tangents (as every JVP is).
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp_rule = None
        functools.update_wrapper(self, fun)

    def defjvp(self, rule: Callable) -> Callable:
        """Register the JVP rule (usable as a decorator)."""
        self.jvp_rule = rule
        return rule

    def __call__(self, *args):
        name = getattr(self.fun, "__name__", "custom_jvp function")
        if self.jvp_rule is None:
            raise PlaitError(f"{name} is a custom_jvp function with no rule: call "
                             f"{name}.defjvp(rule) before calling it")
        nondiff = [args[i] for i in self.nondiff_argnums]
        dyn = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        fun = _with_nondiff(self.fun, self.nondiff_argnums, nondiff, len(args))
        leaves, in_tree = tree_flatten(dyn)
        if _eager(leaves):
            return fun(*dyn)
        graph, consts, out_tree = _stage(lambda *ls: fun(*tree_unflatten(in_tree, ls)),
                                         leaves, name)
        rule = _FlatJVPRule(self.jvp_rule, in_tree, nondiff, len(leaves), name)
        outs = custom_jvp_call_p.bind(*consts, *leaves, graph=graph, jvp=rule, name=name)
        return tree_unflatten(out_tree, outs)


def _with_nondiff(fun, nums, nondiff, n_total):
    if not nums:
        return fun

    def f(*dyn):
        it_d, it_n = iter(dyn), iter(nondiff)
        return fun(*[next(it_n) if i in nums else next(it_d) for i in range(n_total)])
    return f


def _eager(leaves) -> bool:
    """No transformation is active: just call the function."""
    return len(_trace.cur_stack()) == 1 and not any(isinstance(x, Tracer) for x in leaves)


# --- custom_vjp ---------------------------------------------------------------------
custom_vjp_call_p = new_primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_abstract_eval(_abstract)
custom_vjp_call_p.def_impl(_impl)

custom_lin_p = new_primitive("custom_lin", multiple_results=True)
custom_lin_p.def_abstract_eval(lambda *avals, num_res, bwd, out_avals, name: list(out_avals))


def _custom_lin_impl(*args, num_res, bwd, out_avals, name):
    raise PlaitTypeError(f"forward-mode differentiation (jvp, jacfwd, linearize) of {name}, "
                         f"a custom_vjp function, is not supported: it only has a reverse-"
                         f"mode rule. Use grad/vjp/jacrev, or define it with custom_jvp.")


custom_lin_p.def_impl(_custom_lin_impl)
custom_lin_p.def_rule("jvp", lambda primals, tangents, **params: _custom_lin_impl(**params))


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
    res = args[:num_res]
    cts_in = bwd(list(res), [instantiate(c) for c in cts])
    return [None] * num_res + list(cts_in)


custom_lin_p.def_rule("transpose", _custom_lin_transpose)


def _custom_vjp_call_jvp(primals, tangents, *, graph, fwd, bwd, name):
    n_consts = _num_consts(graph, fwd.num_args)
    _check_closed_over_tangents(tangents, n_consts, name)
    p_out, res = fwd(primals[n_consts:])
    _check_like(p_out, graph.out_avals, name, "fwd function's output")
    t_in = [instantiate(t) for t in tangents[n_consts:]]
    t_out = custom_lin_p.bind(*res, *t_in, num_res=len(res), bwd=bwd,
                              out_avals=tuple(tangent_aval(a) for a in graph.out_avals),
                              name=name)
    return p_out, t_out


custom_vjp_call_p.def_rule("jvp", _custom_vjp_call_jvp)


class _FlatFwd:
    def __init__(self, fwd, in_tree, nondiff_fun_args, num_args, name):
        self.fwd, self.in_tree, self.args = fwd, in_tree, nondiff_fun_args
        self.num_args, self.name = num_args, name
        self.res_tree = None

    def __call__(self, primals):
        dyn = tree_unflatten(self.in_tree, list(primals))
        out, res = _split_pair(self.args(self.fwd, dyn), self.name, "fwd function")
        res_leaves, self.res_tree = tree_flatten(res)
        return tree_flatten(out)[0], res_leaves


class _FlatBwd:
    def __init__(self, bwd, fwd: _FlatFwd, in_tree, out_tree, nondiff, in_avals, name):
        self.bwd, self.fwd, self.in_tree, self.out_tree = bwd, fwd, in_tree, out_tree
        self.nondiff, self.in_avals, self.name = nondiff, in_avals, name

    def __call__(self, res, cts):
        r = tree_unflatten(self.fwd.res_tree, list(res))
        ct = tree_unflatten(self.out_tree, list(cts))
        out = self.bwd(*self.nondiff, r, ct)
        if not isinstance(out, (tuple, list)):
            raise PlaitTypeError(f"the bwd function of {self.name} must return a tuple with "
                                 f"one cotangent per (differentiable) argument, got "
                                 f"{type(out).__name__}")
        leaves = []
        for o, a in zip(out, tree_unflatten(self.in_tree, self.in_avals)):
            sub, _ = tree_flatten(o)
            leaves.extend(sub)
        _check_like(leaves, self.in_avals, self.name, "bwd function")
        return leaves


class custom_vjp:
    """A function with a user-defined VJP: ``f = custom_vjp(f); f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(residuals, ct) -> tuple`` of cotangents,
    one per (differentiable) argument. Forward-mode differentiation is an error.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Register the forward (``(out, residuals)``) and backward functions."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        name = getattr(self.fun, "__name__", "custom_vjp function")
        if self.fwd is None:
            raise PlaitError(f"{name} is a custom_vjp function with no rule: call "
                             f"{name}.defvjp(fwd, bwd) before calling it")
        nums, n_total = self.nondiff_argnums, len(args)
        nondiff = [args[i] for i in nums]
        dyn = tuple(a for i, a in enumerate(args) if i not in nums)
        fun = _with_nondiff(self.fun, nums, nondiff, n_total)
        leaves, in_tree = tree_flatten(dyn)
        if _eager(leaves):
            return fun(*dyn)
        graph, consts, out_tree = _stage(lambda *ls: fun(*tree_unflatten(in_tree, ls)),
                                         leaves, name)

        def call_fwd(fwd, dyn_args):
            return _with_nondiff(fwd, nums, nondiff, n_total)(*dyn_args)
        fwd = _FlatFwd(self.fwd, in_tree, call_fwd, len(leaves), name)
        bwd = _FlatBwd(self.bwd, fwd, in_tree, out_tree, nondiff,
                       [get_aval(x) for x in leaves], name)
        outs = custom_vjp_call_p.bind(*consts, *leaves, graph=graph, fwd=fwd, bwd=bwd,
                                      name=name)
        return tree_unflatten(out_tree, outs)
