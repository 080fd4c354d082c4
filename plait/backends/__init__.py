"""Backends: ``compile(closed_graph) -> Executable``. ``interp`` is the reference."""
from __future__ import annotations

from plait.core.graph import ClosedGraph


def compile(closed: ClosedGraph, backend: str = "interp"):
    """Compile a closed graph with the named backend."""
    if backend == "interp":
        from plait.backends.interp import compile_interp
        return compile_interp(closed)
    from plait.errors import PlaitValueError
    raise PlaitValueError(f"unknown backend {backend!r}; available: 'interp'")
