"""The key functions compiled once they are hot, as ``jax.random`` jits them.

Called eagerly, ``fold_in`` is a threefry hash of about 130 ``lax`` operations, each
dispatched on its own: 1.07 ms a call (``jax.random.fold_in``: 0.15 ms), a millisecond
of every step of a training loop that folds the step number into its key. A function
wrapped here runs op by op for its first :data:`HOT_CALLS` calls with one signature
(the shapes and dtypes of its arrays and its static arguments), so a signature used
once never waits for a compiler, and through one cached ``plait.jit`` from then on.
Under a transformation (``jit``, ``grad``, ``vmap``, lazy arrays) its operations join
the caller's graph as before, and under ``disable_jit`` (which ``jit`` honours) they run
op by op. The wrapped functions compute integer bits only
(threefry's add, xor and shifts), which are identical on every tier and backend, so
which path answered a call never changes a result.
"""
from __future__ import annotations

import functools
import threading
from typing import Callable

import numpy as np

from plait import Array, jit
from plait.core.trace import at_top_level

HOT_CALLS = 3          # eager calls of one signature before it is compiled
_MAX_SIGNATURES = 256  # signatures counted per function (the oldest forgotten beyond)


def compiled_when_hot(static_argnums: tuple[int, ...] = ()) -> Callable[[Callable], Callable]:
    """Decorate a function of arrays (and hashable static arguments at
    ``static_argnums``) to run through ``plait.jit`` from its ``HOT_CALLS + 1``-th eager
    call with one signature (see the module docstring)."""
    def wrap(fn: Callable) -> Callable:
        jitted = jit(fn, static_argnums=static_argnums, inline=True)
        counts: dict[tuple, int] = {}
        lock = threading.Lock()

        @functools.wraps(fn)
        def call(*args):
            if not at_top_level():
                return fn(*args)
            key = []
            for i, a in enumerate(args):
                if i in static_argnums:
                    key.append(a)
                elif type(a) is np.ndarray or isinstance(a, Array):
                    key.append((a.shape, a.dtype))
                else:                     # a Python scalar, a list, ...: op by op
                    return fn(*args)
            key = tuple(key)
            if counts.get(key, 0) >= HOT_CALLS:
                return jitted(*args)
            with lock:                    # threads may count the same function at once
                if len(counts) >= _MAX_SIGNATURES and key not in counts:
                    counts.pop(next(iter(counts)))
                counts[key] = counts.get(key, 0) + 1
            return fn(*args)
        return call
    return wrap
