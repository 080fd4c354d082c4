"""``plait.debug``: print and call back from inside ``jit``, ``vmap``, ``grad`` and loops.

``print(fmt, *args, **kwargs)`` formats with ``str.format`` on the *runtime* values
(NumPy arrays), not on tracers; ``callback(fn, *args)`` calls ``fn`` on them. Both are
effects: never removed by dead-code elimination, never merged, run in program order.
Under ``vmap`` they run once per batch element; under ``grad`` they show primal values.
"""
from __future__ import annotations

import builtins
from typing import Callable

import numpy as np

from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.trace import Tracer
from plait.lax.callbacks import debug_callback, split_static

__all__ = ["print", "callback"]


def _bindable(x):
    return x if isinstance(x, Tracer) or hasattr(x, "_value") else np.asarray(x)


def callback(fn: Callable, *args, ordered: bool = False, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the runtime values of the array leaves."""
    leaves, tree = tree_flatten((args, kwargs))
    arrays, merge = split_static(leaves)

    def run(*vals):
        a, k = tree_unflatten(tree, merge(vals))
        fn(*a, **k)
    run.__name__ = getattr(fn, "__name__", "callback")
    debug_callback(run, *[_bindable(x) for x in arrays], ordered=ordered)


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with runtime values (like ``jax.debug.print``)."""
    def show(*a, **k):
        builtins.print(fmt.format(*a, **k))
    callback(show, *args, ordered=ordered, **kwargs)
