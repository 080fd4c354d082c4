"""Traced control flow for autograph: stage branches and loop bodies, merge, call lax.

A converted ``if`` on a traced condition stages both branches ONCE into graphs
(user code runs once per nesting level), then reconciles what the branches give
each output variable — the phi values of the Julia paper, section 5.2:

* arrays: equal shapes; dtypes equal or made equal by weak-type promotion;
* Python numbers: kept static when equal in both branches, otherwise promoted to
  (weakly typed) arrays;
* any other Python value (``None``, strings, functions): must be equal;
* unassigned (``Undefined``) in one branch: an error naming the variable and both
  lines — except for the rewrite's own return value, whose don't-care side is
  filled with zeros.

The reconciled branches replay their graphs (``eval_graph``) inside
``plait.lax.cond``. Loops do the same with the loop-carried values, iterating until
the carry types are stable (a Python ``0`` carry becomes an array when the body
makes it one), then call ``lax.while_loop`` or ``lax.scan``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.array_methods import ArrayMethods
from plait.core.aval import ShapedArray
from plait.core.graph import ClosedGraph, eval_graph
from plait.core.pytree import TreeDef, tree_flatten, tree_unflatten
from plait.core.staging import GraphTrace, trace_to_graph
from plait.core.trace import Tracer, get_aval, cur_stack
from plait.errors import ControlFlowError
from plait.transforms.autograph.info import StmtInfo

_PY_SCALARS = (bool, int, float, complex)


class Undefined:
    """The value of a variable that has not been assigned yet on this path."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"<unassigned {self.name}>"

    def _used(self, *args, **kwargs):
        raise ControlFlowError(
            f"{self.name} is used before it is assigned (autograph passed it through "
            f"control flow unassigned); assign it before using it")

    __getattr__ = _used
    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = _used
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _used
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = _used
    __lt__ = __le__ = __gt__ = __ge__ = __pow__ = __rpow__ = _used


def is_traced(x) -> bool:
    """A value that only exists when the compiled function runs."""
    return isinstance(x, Tracer)


def _is_array(x) -> bool:
    return isinstance(x, (ArrayMethods, np.ndarray, np.generic))


def _is_pyscalar(x) -> bool:
    return type(x) in _PY_SCALARS


def _same_static(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _describe(x) -> str:
    if _is_array(x):
        return f"an array of type {get_aval(x).str_short()}"
    if isinstance(x, Undefined):
        return "unassigned"
    r = repr(x)
    return f"the {type(x).__name__} {r if len(r) < 40 else r[:37] + '...'}"


def _cast(x, aval: ShapedArray):
    """``x`` (array or Python number) as an array of exactly ``aval``'s dtype and weakness."""
    return lax.convert_element_type(x, aval.dtype, weak_type=aval.weak_type)


def _zeros(aval: ShapedArray):
    z = lax.convert_element_type(0, aval.dtype, weak_type=aval.weak_type)
    return lax.broadcast_in_dim(z, aval.shape, ()) if aval.shape else z


def condition(c, info: StmtInfo):
    """A traced condition as a bool scalar, or a clear error."""
    a = c.aval
    if a.shape != ():
        raise ControlFlowError(
            f"the condition of {info.what} is a traced array of type {a.str_short()}, but "
            f"a condition must be a single value; reduce it with .any() or .all()",
            locate=False)
    if a.dtype != dtypes.bool_:
        if not (dtypes.is_integer(a.dtype) or dtypes.is_float(a.dtype)):
            raise ControlFlowError(f"the condition of {info.what} has dtype {a.dtype}; "
                                   f"use a bool or real number", locate=False)
        c = lax.ne(c, 0)
    return c


# ---------------------------------------------------------------------------
# Staging a Python function of named values

@dataclass
class _Out:
    """A traced output leaf: its position among the graph's outputs and its type."""

    index: int
    aval: ShapedArray


@dataclass
class _Staged:
    closed: ClosedGraph
    trees: list          # one TreeDef per output variable
    leaves: list         # per variable: list of _Out or static Python values


def _split(values: Sequence) -> tuple[list, TreeDef, list[int]]:
    leaves, tree = tree_flatten(tuple(values))
    return leaves, tree, [i for i, x in enumerate(leaves) if _is_array(x)]


def _stage(fn: Callable, values: Sequence, pre_avals: Sequence[ShapedArray],
           description: str) -> _Staged:
    """Trace ``fn(*pre, *values)``: array leaves of ``values`` become graph inputs (after
    ``pre``), everything else stays a Python constant. ``fn`` returns a tuple."""
    leaves, tree, dyn = _split(values)
    n_pre = len(pre_avals)
    box: dict = {}

    def flat(*args):
        ls = list(leaves)
        for p, t in zip(dyn, args[n_pre:]):
            ls[p] = t
        outs = fn(*args[:n_pre], *tree_unflatten(tree, ls))
        trees, per_var, graph_outs = [], [], []
        for v in outs:
            vl, vt = tree_flatten(v)
            trees.append(vt)
            entry = []
            for x in vl:
                if _is_array(x):
                    entry.append(_Out(len(graph_outs), get_aval(x)))
                    graph_outs.append(x)
                else:
                    entry.append(x)
            per_var.append(entry)
        box["trees"], box["leaves"] = trees, per_var
        return graph_outs

    in_avals = list(pre_avals) + [get_aval(leaves[p]) for p in dyn]
    closed, _ = trace_to_graph(flat, in_avals, description=description)
    return _Staged(closed, box["trees"], box["leaves"])


def _replay(staged: _Staged, sources: list, avals: list[ShapedArray]):
    """A function evaluating ``staged``'s graph and returning, for each dynamic result,
    its source (``_Out``, a Python number, or ``None`` for zeros) cast to ``avals``."""
    def f(*args):
        outs = eval_graph(staged.closed.graph, staged.closed.consts, *args)
        res = []
        for src, aval in zip(sources, avals):
            if isinstance(src, _Out):
                res.append(_cast(outs[src.index], aval))
            elif src is None:
                res.append(_zeros(aval))
            else:
                res.append(_cast(src, aval))
        return res
    return f


def _src_aval(x) -> ShapedArray:
    return x.aval if isinstance(x, _Out) else get_aval(x)


def _undefined_leaf(tree: TreeDef, leaves: list) -> bool:
    return tree.num_leaves == 1 and tree.kind == "leaf" and isinstance(leaves[0], Undefined)


# ---------------------------------------------------------------------------
# if

def traced_if(pred, true_fn: Callable, false_fn: Callable, inputs: Sequence,
              info: StmtInfo) -> tuple:
    """Both branches staged and merged into one ``lax.cond``."""
    pred = condition(pred, info)
    leaves, _, dyn = _split(inputs)
    operands = [leaves[p] for p in dyn]
    a = _stage(true_fn, inputs, (), f"the true branch of {info.what}")
    b = _stage(false_fn, inputs, (), f"the false branch of {info.what}")
    results = []      # per variable: (tree, leaves) with leaves static or an index
    src_a, src_b, out_avals = [], [], []
    for j, name in enumerate(info.outputs):
        tree, merged = _merge_var(name, a.trees[j], a.leaves[j], b.trees[j], b.leaves[j],
                                  info)
        leaves_j = []
        for m in merged:
            if isinstance(m, _Phi):
                leaves_j.append(_Out(len(out_avals), m.aval))
                src_a.append(m.a)
                src_b.append(m.b)
                out_avals.append(m.aval)
            else:
                leaves_j.append(m)
        results.append((tree, leaves_j))
    if out_avals:
        outs = lax.cond(pred, _replay(a, src_a, out_avals), _replay(b, src_b, out_avals),
                        *operands)
    else:
        outs = []
    return tuple(tree_unflatten(t, [outs[x.index] if isinstance(x, _Out) else x
                                    for x in ls]) for t, ls in results)


@dataclass
class _Phi:
    """A merged dynamic leaf: type, and what each branch contributes."""

    aval: ShapedArray
    a: Any      # _Out, Python number, or None (zeros)
    b: Any


def _branch_line(info: StmtInfo, name: str, which: str) -> str:
    line = (info.lines_a if which == "a" else info.lines_b).get(name)
    return f" (line {line})" if line else ""


def _merge_var(name: str, ta: TreeDef, la: list, tb: TreeDef, lb: list, info: StmtInfo):
    disp = StmtInfo.display(name)
    ua, ub = _undefined_leaf(ta, la), _undefined_leaf(tb, lb)
    if ua and ub:
        return ta, la
    if ua or ub:
        if StmtInfo.is_special(name):
            tree, side = (tb, lb) if ua else (ta, la)
            merged = [_Phi(x.aval, None if ua else x, x if ua else None)
                      if isinstance(x, _Out) else x for x in side]
            return tree, merged
        has, lacks = ("true", "false") if ub else ("false", "true")
        line = _branch_line(info, name, "a" if ub else "b")
        raise ControlFlowError(
            f"{disp} is assigned in the {has} branch of {info.what}{line} but not in the "
            f"{lacks} branch, and it has no value before the `if`. It is used after the "
            f"`if`, and because the condition is a traced value both branches are "
            f"compiled, so both must give it a value. Assign {name} before the `if` "
            f"(for example {name} = 0 or a zeros array of the right shape), or in both "
            f"branches.", locate=False)
    if ta != tb:
        raise ControlFlowError(
            f"{disp} has a different structure in the two branches of {info.what}: "
            f"{ta} in the true branch{_branch_line(info, name, 'a')} and {tb} in the false "
            f"branch{_branch_line(info, name, 'b')}. Both branches must give it the same "
            f"structure.", locate=False)
    merged = []
    for x, y in zip(la, lb):
        sx, sy = not isinstance(x, _Out), not isinstance(y, _Out)
        if sx and sy and _same_static(x, y):
            merged.append(x)
            continue
        if (sx and not _is_pyscalar(x)) or (sy and not _is_pyscalar(y)):
            raise ControlFlowError(
                f"{disp} is {_describe(x) if sx else 'an array'} in the true branch"
                f"{_branch_line(info, name, 'a')} of {info.what} but "
                f"{_describe(y) if sy else 'an array'} in the false branch"
                f"{_branch_line(info, name, 'b')}. With a traced condition the two must be "
                f"arrays or numbers of one shape; other Python values must be equal.",
                locate=False)
        ax, ay = _src_aval(x), _src_aval(y)
        aval = _join(ax, ay, lambda: (
            f"{disp} is {ax.str_short()} in the true branch{_branch_line(info, name, 'a')}"
            f" of {info.what} but {ay.str_short()} in the false branch"
            f"{_branch_line(info, name, 'b')}"))
        merged.append(_Phi(aval, x, y))
    return ta, merged


def _join(a: ShapedArray, b: ShapedArray, what: Callable[[], str]) -> ShapedArray:
    """The common type of two branch results, or a ControlFlowError."""
    if a.shape != b.shape:
        raise ControlFlowError(f"{what()}: the shapes differ. Both branches must give it "
                               f"the same shape.", locate=False)
    if a.dtype == b.dtype:
        return ShapedArray(a.shape, a.dtype, a.weak_type and b.weak_type)
    if not (a.weak_type or b.weak_type):
        raise ControlFlowError(f"{what()}: the dtypes differ. Cast one branch's value "
                               f"(x.astype(...)) so both agree.", locate=False)
    dt, weak = dtypes.result_type((a.dtype, a.weak_type), (b.dtype, b.weak_type))
    return ShapedArray(a.shape, dt, weak)


# ---------------------------------------------------------------------------
# loops

@dataclass
class _LoopPlan:
    staged: _Staged
    values: list          # initial values (promoted), one per carried variable
    sources: list         # per dynamic carry leaf: _Out or Python number
    avals: list           # per dynamic carry leaf

    def init_leaves(self) -> list:
        leaves, _, dyn = _split(self.values)
        return [leaves[p] for p in dyn]

    def rebuild(self, dyn_vals: Sequence) -> tuple:
        leaves, tree, dyn = _split(self.values)
        for p, v in zip(dyn, dyn_vals):
            leaves[p] = v
        return tree_unflatten(tree, leaves)


def _carry_error(info: StmtInfo, name: str, msg: str) -> ControlFlowError:
    line = info.lines_a.get(name)
    at = f" (assigned at line {line})" if line else ""
    return ControlFlowError(
        f"{StmtInfo.display(name)}{at} {msg} in {info.what}. Because the loop runs on "
        f"traced values it is compiled once, so every loop-carried value must keep its "
        f"structure, shape and dtype from one iteration to the next.", locate=False)


def plan_loop(body_fn: Callable, values: Sequence, pre_avals: Sequence[ShapedArray],
              info: StmtInfo) -> _LoopPlan:
    """Stage ``body_fn(*pre, *values) -> values`` until the carry types are stable."""
    values = list(values)
    for _ in range(2 * len(values) + 3):
        staged = _stage(body_fn, values, pre_avals, f"the body of {info.what}")
        changed = False
        sources, avals = [], []
        for j, name in enumerate(info.outputs):
            vin = values[j]
            lin, tin = tree_flatten(vin)
            tout, lout = staged.trees[j], staged.leaves[j]
            if _undefined_leaf(tin, lin):
                if _undefined_leaf(tout, lout):
                    continue
                if not StmtInfo.is_special(name):
                    raise _carry_error(info, name, (
                        "is assigned inside the loop and used after it (or in the next "
                        "iteration), but has no value before the loop: the loop may run "
                        "zero times. Assign it before the loop (with the shape and dtype "
                        "the loop gives it)")) from None
                values[j] = tree_unflatten(tout, [_zeros(x.aval) if isinstance(x, _Out)
                                                  else x for x in lout])
                changed = True
                continue
            if _undefined_leaf(tout, lout):
                raise _carry_error(info, name, "loses its value inside the loop")
            if tin != tout:
                hint = (" (a Python list cannot grow in a traced loop: preallocate an array "
                        "and write rows with x = x.at[i].set(row))"
                        if tin.kind is list or tout.kind is list else "")
                raise _carry_error(info, name, f"changes structure from {tin} to "
                                               f"{tout}{hint}")
            new_lin, promoted = list(lin), False
            for k, (x, y) in enumerate(zip(lin, lout)):
                res = _carry_leaf(info, name, x, y)
                if res is _KEEP:
                    continue
                if isinstance(res, tuple):       # (source, aval) of a dynamic carry
                    sources.append(res[0])
                    avals.append(res[1])
                else:                            # promoted initial value: stage again
                    new_lin[k] = res
                    changed = promoted = True
            if promoted:
                values[j] = tree_unflatten(tin, new_lin)
        if not changed:
            return _LoopPlan(staged, values, sources, avals)
    raise ControlFlowError(f"the loop-carried types of {info.what} do not settle; "
                           f"give each carried variable a fixed dtype before the loop",
                           locate=False)


_KEEP = object()


def _carry_leaf(info: StmtInfo, name: str, x, y):
    """Compare one carry leaf on entry (``x``) and after the body (``y``).

    Returns ``_KEEP`` (static and unchanged), ``(source, aval)`` for a dynamic carry,
    or a new initial value (the initial value must be promoted)."""
    sx, sy = not _is_array(x), not isinstance(y, _Out)
    if sx and sy and _same_static(x, y):
        return _KEEP
    if (sx and not _is_pyscalar(x)) or (sy and not _is_pyscalar(y)):
        return _raise(_carry_error(info, name, (
            f"changes from {_describe(x)} to "
            f"{_describe(y) if sy else 'an array of type ' + y.aval.str_short()}")))
    ax = get_aval(x)
    ay = _src_aval(y)
    if ax.shape != ay.shape:
        return _raise(_carry_error(info, name, f"changes shape from {ax.str_short()} to "
                                               f"{ay.str_short()}"))
    if sx:      # a Python number that the body changes: make it an array
        dt, weak = dtypes.result_type((ax.dtype, True), (ay.dtype, ay.weak_type))
        return lax.convert_element_type(x, dt, weak_type=weak)
    if ax.dtype != ay.dtype:
        dt, weak = dtypes.result_type((ax.dtype, ax.weak_type), (ay.dtype, ay.weak_type))
        if dt != ax.dtype:
            if ax.weak_type:
                return lax.convert_element_type(x, dt, weak_type=weak)
            return _raise(_carry_error(info, name, f"changes dtype from {ax.str_short()} "
                                                   f"to {ay.str_short()}"))
    return (y, ax)


def _raise(e: Exception):
    raise e


def traced_while(test_fn: Callable, body_fn: Callable, values: Sequence, info: StmtInfo
                 ) -> tuple:
    """``while test_fn(*v): v = body_fn(*v)`` as one ``lax.while_loop``."""
    plan = plan_loop(body_fn, values, (), info)
    body = _replay(plan.staged, plan.sources, plan.avals)

    def cond_fun(carry):
        c = test_fn(*plan.rebuild(carry))
        if not is_traced(c):
            return lax.convert_element_type(bool(c), dtypes.bool_)
        return condition(c, info)

    outs = lax.while_loop(cond_fun, lambda carry: body(*carry), plan.init_leaves())
    return plan.rebuild(outs)


def traced_scan(xs, body_fn: Callable, values: Sequence, info: StmtInfo) -> tuple:
    """``for x in xs: v = body_fn(x, *v)`` over the leading axis of a traced array (or a
    tuple of arrays of one length, giving tuples ``x``): one ``lax.scan``."""
    leaves, tree = tree_flatten(xs)
    item_avals = []
    for leaf in leaves:
        a = get_aval(leaf)
        if not a.shape:
            raise ControlFlowError(f"{info.what} iterates over a 0-d traced array "
                                   f"({a.str_short()}); it needs at least one dimension",
                                   locate=False)
        item_avals.append(ShapedArray(a.shape[1:], a.dtype, a.weak_type))
    n = len(leaves)

    def flat_body(*args):
        return body_fn(tree_unflatten(tree, args[:n]), *args[n:])

    plan = plan_loop(flat_body, values, item_avals, info)
    body = _replay(plan.staged, plan.sources, plan.avals)

    def step(carry, x):
        return body(*x, *carry), None

    outs, _ = lax.scan(step, plan.init_leaves(), list(leaves))
    return plan.rebuild(outs)


def counter_info(info: StmtInfo) -> StmtInfo:
    """``info`` for a loop whose carry gains a leading iteration counter."""
    return replace(info, inputs=("ag__counter",) + info.outputs,
                   outputs=("ag__counter",) + info.outputs)


def becomes_traced(test_fn: Callable, body_fn: Callable, values: Sequence,
                   info: StmtInfo) -> bool:
    """Whether a loop whose test is a Python value now becomes traced after one
    iteration: a Python-number carry (typically a ``break`` flag) that the body turns
    into a traced array makes the test traced. Then the whole loop is staged instead
    of unrolling its first iteration. A Python counter stays a Python loop. Only asked
    while a graph is being staged (under ``jit``)."""
    if not any(issubclass(m.trace_type, GraphTrace) for m in cur_stack()):
        return False      # nothing is being staged: values stay concrete where they can
    leaves, tree, _ = _split(values)
    if not any(_is_pyscalar(x) for x in leaves):
        return False
    staged = _stage(body_fn, values, (), f"the body of {info.what}")
    trial, changed = [], False
    for j, v in enumerate(values):
        lin, tin = tree_flatten(v)
        lout = staged.leaves[j]
        if tin == staged.trees[j]:
            for k, (x, y) in enumerate(zip(lin, lout)):
                if _is_pyscalar(x) and isinstance(y, _Out) and y.aval.shape == ():
                    lin[k] = np.zeros((), y.aval.dtype)
                    changed = True
        trial.append(tree_unflatten(tin, lin))
    if not changed:
        return False
    probe = _stage(lambda *v: (test_fn(*v),), trial, (), f"the test of {info.what}")
    return isinstance(probe.leaves[0][0], _Out) if probe.leaves[0] else False
