"""Backends: ``compile(closed_graph) -> Executable``: ``interp`` (reference), ``native``,
``xla`` (StableHLO compiled by XLA through PJRT; needs jaxlib)."""
from __future__ import annotations

from plait.core.graph import ClosedGraph


def compile(closed: ClosedGraph, backend: str = "interp"):
    """Compile a closed graph with the named backend."""
    from plait.profiler import events
    with events.span(f"compile {closed.graph.name or 'graph'} ({backend})", "compile",
                     {"equations": len(closed.graph.eqns)}):
        return _compile(closed, backend)


def _compile(closed: ClosedGraph, backend: str):
    if backend == "interp":
        from plait.backends.interp import compile_interp
        return compile_interp(closed)
    if backend == "native":
        from plait.backends.native import compile_native
        return compile_native(closed)
    if backend == "xla":
        from plait.backends.xla import compile_xla
        return compile_xla(closed)
    from plait.errors import PlaitValueError
    raise PlaitValueError(f"unknown backend {backend!r}; available: 'interp', 'native', 'xla'")
