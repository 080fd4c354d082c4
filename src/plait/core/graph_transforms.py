"""The graph transformations that higher-order primitives' rules call.

Control-flow primitives live in ``plait.lax``, which imports only ``plait.core``, yet
their jvp, partial-eval, transpose and batch rules must transform sub-graphs.
``plait.transforms`` registers those functions here when it is imported
(``jvp_graph``, ``partial_eval_graph``, ``transpose_graph``, ``batch_graph``), and a
rule looks one up with :func:`graph_transform` when it runs.
"""
from __future__ import annotations

from typing import Callable

_REGISTRY: dict[str, Callable] = {}


def register_graph_transform(name: str, fn: Callable) -> Callable:
    """Make ``fn`` available to primitive rules as ``graph_transform(name)``."""
    _REGISTRY[name] = fn
    return fn


def graph_transform(name: str) -> Callable:
    """The registered transformation ``name`` (``import plait`` registers them all)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        from plait.errors import PlaitError
        raise PlaitError(f"graph transformation {name!r} is not registered; import plait "
                         f"(plait.transforms registers it)", locate=False) from None
