"""The shrinker: reduce a failing program to a small one that still fails the same way.

Greedy passes, repeated until none makes progress (or the budget is spent):

1. drop trailing nodes;
2. *cut* a node: replace it by a new input holding NumPy's value of it (a failure
   local to one op then loses everything upstream);
3. bypass a node: its users read its first operand instead;
4. drop unused inputs;
5. shrink inputs: one element, halves along each axis, drop unit axes, 0-d;
6. simplify elements: replace single elements by 0 or 1, drop negatives' sign.

A candidate is kept only if NumPy still evaluates it and ``still_fails`` says it
fails with the same signature. Candidates are strictly smaller in (nodes, inputs,
elements, non-simple elements), so shrinking terminates.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from plait.fuzz.generate import reference_values
from plait.fuzz.program import Node, Program


def _renumber(program: Program, keep_inputs: list, keep_nodes: list, remap: dict,
              new_inputs: list = ()) -> Program:
    """A program with the kept inputs (plus ``new_inputs``) and nodes; ``remap`` maps old
    value numbers of dropped values to old value numbers that replace them, or to
    ``("new", k)`` for the k-th new input."""
    n_in_old = len(program.inputs)
    inputs = [program.inputs[i] for i in keep_inputs] + list(new_inputs)
    number = {old: new for new, old in enumerate(keep_inputs)}
    base = len(inputs)
    for new, k in enumerate(keep_nodes):
        number[n_in_old + k] = base + new

    def resolve(v):
        seen = set()
        while v in remap and v not in seen:
            seen.add(v)
            v = remap[v]
        if isinstance(v, tuple):
            return len(keep_inputs) + v[1]
        return number[v]

    nodes = []
    for k in keep_nodes:
        n = program.nodes[k]
        nodes.append(Node(n.op, tuple(resolve(a) if isinstance(a, int) else a for a in n.args), dict(n.params)))
    return Program(inputs, nodes)


def _uses(program: Program, value: int) -> bool:
    return any(value in [a for a in n.args if isinstance(a, int)] for n in program.nodes)


def _size(p: Program) -> tuple:
    elems = sum(int(np.asarray(x).size) for x in p.inputs)
    complexity = sum(int(np.count_nonzero(~_simple(x))) for x in p.inputs)
    return (len(p.nodes), len(p.inputs), elems, complexity)


def _simple(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind == "b":
        return ~x
    with np.errstate(all="ignore"):
        return (x == 0) | (x == 1)


def _candidates(p: Program):
    n_in, n_nodes = len(p.inputs), len(p.nodes)
    all_in = list(range(n_in))
    # 1. drop trailing nodes
    for k in range(n_nodes - 1, 0, -1):
        yield _renumber(p, all_in, list(range(k)), {})
    ref = None
    # 2. cut a node into an input (NumPy's value of it)
    for j in range(n_nodes - 1, -1, -1):
        if not _uses(p, n_in + j):
            continue
        if ref is None:
            try:
                ref = reference_values(p)
            except Exception:
                return
        val = np.asarray(ref[n_in + j])
        yield _renumber(p, all_in, [k for k in range(n_nodes) if k != j], {n_in + j: ("new", 0)}, [val])
    # 3. bypass a node
    for j in range(n_nodes):
        arrays = [a for a in p.nodes[j].args if isinstance(a, int)]
        if arrays:
            yield _renumber(p, all_in, [k for k in range(n_nodes) if k != j], {n_in + j: arrays[0]})
    # 4. drop unused inputs
    unused = [i for i in range(n_in) if not _uses(p, i)]
    if unused and n_in > 1:
        yield _renumber(p, [i for i in all_in if i not in unused], list(range(n_nodes)), {})
    # 5. shrink inputs
    for i, x in enumerate(p.inputs):
        for y in _smaller_arrays(np.asarray(x)):
            q = p.copy()
            q.inputs[i] = y
            yield q
    # 6. simplify elements
    for i, x in enumerate(p.inputs):
        x = np.asarray(x)
        if x.size > 16 or x.dtype.kind == "b":
            continue
        for e in range(x.size):
            for v in (0, 1):
                if x.ravel()[e] == v:
                    continue
                y = x.copy()
                y.ravel()[e] = v
                q = p.copy()
                q.inputs[i] = y
                yield q


def _smaller_arrays(x: np.ndarray):
    if x.size > 1:
        yield x.ravel()[:1].reshape((1,) * x.ndim)
        for ax in range(x.ndim):
            n = x.shape[ax]
            if n > 1:
                yield np.take(x, range(n // 2), axis=ax)
                yield np.take(x, range(n // 2, n), axis=ax)
                yield np.take(x, [n - 1], axis=ax)
    for ax in range(x.ndim):
        if x.shape[ax] == 1:
            yield np.squeeze(x, ax)
    if x.ndim and x.size == 0:
        yield np.zeros((0,), x.dtype)


def shrink(program: Program, still_fails: Callable[[Program], bool], max_calls: int = 200,
           max_seconds: float = 120.0) -> Program:
    """The smallest program found that ``still_fails``; ``program`` itself must fail."""
    deadline = time.monotonic() + max_seconds
    calls = 0
    best = program
    progress = True
    while progress:
        progress = False
        for cand in _candidates(best):
            if calls >= max_calls or time.monotonic() > deadline:
                return best
            if _size(cand) >= _size(best):
                continue
            try:
                reference_values(cand)
            except Exception:
                continue
            calls += 1
            try:
                ok = still_fails(cand)
            except Exception:
                ok = False
            if ok:
                best = cand
                progress = True
                break
    return best
