"""The trace cache with constant promotion (the S4TF design doc's two heuristics).

Traces are grouped by *skeleton* (structure with constants abstracted to their
types). Within a group, a constant is an argument ("promoted") when

- it came from a materialization, or is not a scalar (data enters as arguments), or
- history-based widening: an earlier trace of the same skeleton had a different
  value at that position (``lr`` changing each step, a loop counter).

Other scalars are baked in as literals. Widening only grows the promoted set, so
a skeleton compiles at most once per promoted position plus once; after that
every step with the same structure hits the cache.
"""
from __future__ import annotations

import itertools
import time

from plait.config import config
from plait.core.graph import ClosedGraph, Graph, Eqn, Literal, Var
from plait.lazy import autodiff, modes
from plait.errors import format_site
from plait.lazy.array import graph_lock
from plait.lazy.extract import Extracted
from plait.lru import LRUCache


class Compiled:
    """An executable for one skeleton and promoted set, plus its graph (for printing)."""

    __slots__ = ("closed", "executable", "arg_slots")

    def __init__(self, closed: ClosedGraph, executable, arg_slots: tuple):
        self.closed = closed
        self.executable = executable
        self.arg_slots = arg_slots


class _History:
    __slots__ = ("promoted", "last_vals", "entries")

    def __init__(self, promoted: frozenset, last_vals: tuple):
        self.promoted = promoted
        self.last_vals = last_vals
        self.entries: dict[tuple, Compiled] = {}


_HISTORY = LRUCache()      # skeleton -> _History; least recently used forgotten first
_TRACE_NUMBERS = itertools.count(1)


def clear() -> None:
    """Forget every cached trace, the widening history and the cached backward graphs."""
    with graph_lock():
        _HISTORY.clear()
        autodiff.clear()


def cached_traces() -> list[ClosedGraph]:
    """The graphs of every cached trace (for inspection and tests)."""
    return [c.closed for h in _HISTORY.values() for c in h.entries.values()]


def lookup(ex: Extracted) -> Compiled:
    """The compiled executable for ``ex``: a cache hit, or widen/compile and cache."""
    hist = _HISTORY.get(ex.skeleton)
    vals = ex.const_vals
    reason = "constant values changed"
    if hist is None:
        hist = _HISTORY[ex.skeleton] = _History(ex.forced, vals)
        reason = "new trace structure"
    else:
        need = ex.forced | {k for k, (v, old) in enumerate(zip(vals, hist.last_vals))
                            if v != old}
        if not need <= hist.promoted:
            n_new = len(need - hist.promoted)
            modes.bump("lazy_promoted_constants", n_new)
            hist.promoted = hist.promoted | need
            hist.entries.clear()
            reason = f"widened: {n_new} constant(s) became arguments"
        hist.last_vals = vals
    promoted = hist.promoted
    baked = tuple(v for k, v in enumerate(vals) if k not in promoted)
    entry = hist.entries.get(baked)
    if entry is None:
        entry = hist.entries[baked] = _compile(ex, promoted, reason)
    else:
        modes.bump("lazy_cache_hits")
    return entry


def build_graph(ex: Extracted, promoted: frozenset) -> tuple[Graph, tuple]:
    """The Graph of an extracted trace; promoted constants become inputs (in order)."""
    arg_slots = tuple(k for k in range(len(ex.consts)) if k in promoted)
    const_atoms = {}
    invars = []
    for k in arg_slots:
        v = Var(ex.consts[k].aval)
        const_atoms[k] = v
        invars.append(v)
    for k, c in enumerate(ex.consts):
        if k not in const_atoms:
            const_atoms[k] = Literal(c.value, c.aval)
    outvars_of = []
    eqns = []
    for node, ins in zip(ex.nodes, ex.wiring):
        atoms = [const_atoms[-1 - w] if isinstance(w, int) else outvars_of[w[0]][w[1]]
                 for w in ins]
        outs = [Var(a) for a in node.out_avals]
        outvars_of.append(outs)
        eqns.append(Eqn(node.prim, atoms, node.params, outs, format_site(node.source)))
    outvars = [outvars_of[k][i] for k, i in ex.out_refs]
    return Graph([], invars, eqns, outvars, f"lazy_trace_{next(_TRACE_NUMBERS)}"), arg_slots


def _compile(ex: Extracted, promoted: frozenset, reason: str) -> Compiled:
    from plait.backends import compile as backend_compile
    from plait.passes import optimize
    t0 = time.perf_counter()
    graph, arg_slots = build_graph(ex, promoted)
    closed = optimize(ClosedGraph(graph, []))
    if config.checks:
        from plait.core.graph import check_graph
        check_graph(closed.graph)
    backend = config.resolved_backend()
    exe = backend_compile(closed, backend)
    modes.bump("lazy_compiles")
    modes.bump("lazy_compile_time_s", time.perf_counter() - t0)
    if config.log_compiles:
        import logging
        logging.getLogger("plait").warning(
            "plait.lazy: compiling %s (%s; %d ops, %d arguments, %d outputs) with the %s "
            "backend", graph.name, reason, len(graph.eqns), len(graph.invars),
            len(graph.outvars), backend)
    return Compiled(closed, exe, arg_slots)
