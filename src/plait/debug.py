"""``plait.debug``: print and call back from inside ``jit``, ``vmap``, ``grad`` and loops.

``print(fmt, *args, **kwargs)`` formats with ``str.format`` on the *runtime* values
(NumPy arrays), not on tracers; ``callback(fn, *args)`` calls ``fn`` on them. Both are
effects: never removed by dead-code elimination, never merged, run in program order.
Under ``vmap`` they run once per batch element; under ``grad`` they show primal values.
"""

import builtins as _builtins
from typing import Callable as _Callable

import numpy as _np

from plait.core.pytree import tree_flatten as _tree_flatten, tree_unflatten as _tree_unflatten
from plait.core.trace import Tracer as _Tracer
from plait.lax.callbacks import debug_callback as _debug_callback, split_static as _split_static

__all__ = ["print", "callback"]


def _bindable(x):
    return x if isinstance(x, _Tracer) or hasattr(x, "_value") else _np.asarray(x)


def callback(fn: _Callable, *args, ordered: bool = False, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the runtime values of the array leaves."""
    leaves, tree = _tree_flatten((args, kwargs))
    arrays, merge = _split_static(leaves)

    def run(*vals):
        a, k = _tree_unflatten(tree, merge(vals))
        fn(*a, **k)
    run.__name__ = getattr(fn, "__name__", "callback")
    _debug_callback(run, *[_bindable(x) for x in arrays], ordered=ordered)


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with runtime values (like ``jax.debug.print``)."""
    def show(*a, **k):
        _builtins.print(fmt.format(*a, **k))
    callback(show, *args, ordered=ordered, **kwargs)
