"""The reference backend: evaluate a graph with each primitive's NumPy ``impl``.

Compilation resolves every equation's rule and operand slots once, so a call is
a flat loop over ``(impl, input slots, params, output slots)``.
"""
from __future__ import annotations

import numpy as np

from plait.core.graph import ClosedGraph, Literal
from plait.core.printer import pp_graph


class InterpExecutable:
    """Runs a closed graph op by op with NumPy."""

    def __init__(self, closed: ClosedGraph):
        g = closed.graph
        self.closed = closed
        slot: dict = {}
        for v in g.constvars + g.invars:
            slot[v] = len(slot)
        self.n_in = len(g.invars)
        self.consts = [np.asarray(c) if not hasattr(c, "_value") else c._value
                       for c in closed.consts]
        known = dict(zip(g.constvars, self.consts))   # values known at compile time
        steps = []
        for eqn in g.eqns:
            ins = []
            for a in eqn.inputs:
                if isinstance(a, Literal):
                    ins.append(("lit", a.val))
                elif a in known:
                    ins.append(("lit", known[a]))
                else:
                    ins.append(("var", slot[a]))
            impl = eqn.prim.rule("impl")
            if all(k == "lit" for k, _ in ins):
                # constant folding at compile time: inputs are all known
                r = impl(*[v for _, v in ins], **eqn.params)
                rs = r if eqn.prim.multiple_results else [r]
                for v, x in zip(eqn.outputs, rs):
                    known[v] = np.asarray(x)
                continue
            for v in eqn.outputs:
                slot[v] = len(slot)
            steps.append((impl, tuple(ins), eqn.params,
                          tuple(slot[v] for v in eqn.outputs), eqn.prim.multiple_results))
        self.steps = steps
        self.n_slots = len(slot)
        self.out = [("lit", a.val) if isinstance(a, Literal) else
                    ("lit", known[a]) if a in known else ("var", slot[a]) for a in g.outvars]

    def launch(self, *args, deps: tuple = ()) -> None:
        """Reference executables run only on the calling thread: always None (call it)."""
        return None

    def __call__(self, *args) -> list:
        env = [None] * self.n_slots
        nc = len(self.consts)
        env[:nc] = self.consts
        env[nc:nc + len(args)] = args
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        for impl, ins, params, outs, multi in self.steps:
            vals = [env[i] if k == "var" else i for k, i in ins]
            r = impl(*vals, **params)
            if multi:
                for o, x in zip(outs, r):
                    env[o] = x if type(x) is np.ndarray else np.asarray(x)
            else:
                env[outs[0]] = r if type(r) is np.ndarray else np.asarray(r)
        return [env[i] if k == "var" else i for k, i in self.out]

    def as_text(self) -> str:
        return pp_graph(self.closed)

    def memory_analysis(self, donated=()) -> dict:
        """Argument, output, constant and temporary bytes (every intermediate is kept
        until the call returns); the interpreter reuses no donated buffer."""
        from plait.cost import interp_memory
        return interp_memory(self.closed)


def compile_interp(closed: ClosedGraph) -> InterpExecutable:
    """Build the reference executable of ``closed``."""
    return InterpExecutable(closed)
