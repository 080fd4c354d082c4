"""Named axes: which axis names are bound in this thread, and by what.

``vmap(f, axis_name="i")`` and ``pmap(f, axis_name="i")`` bind a name for the
duration of their trace; collectives (``plait.lax.psum`` etc.) look the name up to
find its size and the interpreter that gives them meaning:

- a frame bound by ``vmap`` carries that vmap's ``MainTrace``: a collective over the
  name is processed by that batch trace (or a higher one), whose ``named_batch`` rule
  reduces over the batch dimension;
- a frame bound by ``pmap`` carries no main: the collective is staged into the
  replica program and its ``impl`` exchanges data between replicas at run time.

The frames form a per-thread stack (innermost last). Batch rules that re-trace a
sub-graph (``jit_call``, ``scan``, ``cond``) run inside :func:`batching_axis`, so
the sub-graph's own vmap binds the same name.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Hashable


class AxisFrame:
    """One bound axis name: its size and the batch main giving it meaning (or None)."""

    __slots__ = ("name", "size", "main")

    def __init__(self, name: Hashable, size: int, main: Any = None):
        self.name = name
        self.size = size
        self.main = main

    def __repr__(self):
        return f"AxisFrame({self.name!r}, size={self.size})"


class _Local(threading.local):
    def __init__(self):
        self.frames: list[AxisFrame] = []
        self.rule_axis: list = [None]
        self.comms: dict = {}


_LOCAL = _Local()


@contextmanager
def bind_axis(name: Hashable, size: int, main: Any = None):
    """Bind ``name`` (size ``size``) for the duration of the block."""
    frame = AxisFrame(name, size, main)
    _LOCAL.frames.append(frame)
    try:
        yield frame
    finally:
        _LOCAL.frames.remove(frame)


def lookup(name: Hashable) -> AxisFrame | None:
    """The innermost frame binding ``name`` in this thread, or None."""
    for f in reversed(_LOCAL.frames):
        if f.name == name:
            return f
    return None


def frame_of_main(main: Any) -> AxisFrame | None:
    """The frame bound by the batch main ``main`` (None for an unnamed vmap)."""
    if not _LOCAL.frames:
        return None
    for f in reversed(_LOCAL.frames):
        if f.main is main:
            return f
    return None


def has_frames() -> bool:
    """Whether any name is bound in this thread (a fast check for the batch trace)."""
    return bool(_LOCAL.frames)


def bound_names() -> list:
    """The names bound in this thread, innermost last."""
    return [f.name for f in _LOCAL.frames]


def env_key() -> tuple:
    """A hashable summary of the bound names and sizes (part of ``jit``'s cache key:
    a collective's staged parameters depend on them)."""
    if not _LOCAL.frames:
        return ()
    return (("named_axes",) + tuple((f.name, f.size) for f in _LOCAL.frames),)


@contextmanager
def batching_axis(name: Hashable | None):
    """While a batch rule of the vmap over ``name`` runs: sub-graphs it batches bind
    ``name`` too (see :func:`current_batching_axis`)."""
    _LOCAL.rule_axis.append(name)
    try:
        yield
    finally:
        _LOCAL.rule_axis.pop()


def current_batching_axis() -> Hashable | None:
    """The axis name of the vmap whose batch rule is running (None: unnamed)."""
    return _LOCAL.rule_axis[-1]


# --- run time: the communicator a replica thread uses for each pmapped axis ------------
@contextmanager
def replica_scope(comms: dict):
    """While a replica runs: ``{axis name: communicator}`` for the collectives' ``impl``
    (a communicator has ``index``, ``size``, ``allreduce(x, op)`` and ``all_gather(x)``)."""
    prev = _LOCAL.comms
    _LOCAL.comms = {**prev, **comms}
    try:
        yield
    finally:
        _LOCAL.comms = prev


def replica_comms() -> dict:
    """``{axis name: communicator}`` of the running replica (empty outside pmap)."""
    return dict(_LOCAL.comms)


def replica_comm(name: Hashable):
    """The communicator of ``name`` in the running replica, or None."""
    return _LOCAL.comms.get(name)
