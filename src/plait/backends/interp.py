"""The reference backend: evaluate a graph with each primitive's NumPy ``impl``.

Compilation resolves every equation's rule and operand slots once (``liveness.Slots``,
the slot planner the native backend uses too) and folds equations whose operands are
all known, so a call is a flat loop over :class:`InterpStep`. Every intermediate is
kept until the call returns (the oracle favours simplicity over memory).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from plait.backends.liveness import Slots
from plait.core.effects import has_effects
from plait.core.graph import ClosedGraph
from plait.core.printer import pp_graph


@dataclass(frozen=True)
class InterpStep:
    """``impl(*env[reads], **params)`` stored in ``env[writes]``."""

    impl: Callable
    params: dict
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    multiple_results: bool


class InterpExecutable:
    """Runs a closed graph op by op with NumPy."""

    def __init__(self, closed: ClosedGraph):
        g = closed.graph
        self.closed = closed
        self.n_in = len(g.invars)
        self.consts = [np.asarray(c) if not hasattr(c, "_value") else c._value
                       for c in closed.consts]
        self.slots = slots = Slots(g.constvars, self.consts, g.invars)
        steps = []
        for eqn in g.eqns:
            reads = tuple(slots.read(a) for a in eqn.inputs)
            impl = eqn.prim.rule("impl")
            if all(slots.is_fixed(s) for s in reads) and not has_effects(eqn) \
                    and not getattr(eqn.prim, "collective", False):
                # constant folding at compile time: inputs are all known (a collective
                # needs the running replica: axis_index, psum of a constant)
                r = impl(*[slots.fixed[s] for s in reads], **eqn.params)
                for v, x in zip(eqn.outputs, r if eqn.prim.multiple_results else [r]):
                    slots.bind(v, np.asarray(x))
                continue
            steps.append(InterpStep(impl, eqn.params, reads,
                                    tuple(slots.write(v) for v in eqn.outputs),
                                    eqn.prim.multiple_results))
        self.steps = steps
        self.out = tuple(slots.read(a) for a in g.outvars)
        self._env = slots.environment()               # copied per call

    def launch(self, *args, deps: tuple = ()) -> None:
        """Reference executables run only on the calling thread: always None (call it)."""
        return None

    def __call__(self, *args) -> list:
        return self.run(args, self.steps)

    def run(self, args, steps, frees=None) -> list:
        """Run ``steps`` (this executable's, or a variant with other impls) on ``args``;
        ``frees[i]``, when given, lists the slots dropped after step ``i``."""
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        env = list(self._env)
        nc = len(self.consts)
        env[nc:nc + len(args)] = args
        for i, st in enumerate(steps):
            r = st.impl(*[env[s] for s in st.reads], **st.params)
            if st.multiple_results:
                for o, x in zip(st.writes, r):
                    env[o] = x if type(x) is np.ndarray else np.asarray(x)
            else:
                env[st.writes[0]] = r if type(r) is np.ndarray else np.asarray(r)
            if frees is not None:
                for s in frees[i]:
                    env[s] = None
        return [env[s] for s in self.out]

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
