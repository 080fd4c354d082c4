"""Collectives between the replicas of one process: shared memory and a barrier.

Each replica thread puts a reference to its (contiguous NumPy) buffer in its slot,
waits at the barrier, and reads the others' buffers directly: no copy through Python
objects. Every replica combines the slots in the same order, so all get bitwise
equal results. A second barrier keeps slots alive until everyone has read them.
A replica that fails or stops answering breaks the barrier: the others raise
``DistributedError`` instead of waiting forever.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from plait.errors import DistributedError

_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class LocalGroup:
    """The shared state of ``size`` replica threads."""

    def __init__(self, size: int, timeout: float):
        self.size = size
        self.timeout = timeout
        self.slots: list = [None] * size
        self.results: list = [None] * size       # per-replica results of a led exchange
        self.subgroups: dict = {}                # split(color) -> LocalGroup
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(size, timeout=timeout)

    def member(self, index: int) -> "LocalComm":
        return LocalComm(self, index)

    def abort(self) -> None:
        """A replica failed: wake the others (they raise ``DistributedError``)."""
        self.barrier.abort()


class LocalComm:
    """Replica ``index``'s view of a :class:`LocalGroup` (what collectives call)."""

    def __init__(self, group: LocalGroup, index: int):
        self.group = group
        self.index = index
        self.size = group.size
        self.wait_s = 0.0        # seconds this replica spent at barriers (waiting for peers)

    def _sync(self, what: str) -> None:
        t0 = time.perf_counter()
        try:
            self.group.barrier.wait()
        except threading.BrokenBarrierError:
            raise DistributedError(
                f"replica {self.index} of {self.size}: another replica failed or did not "
                f"reach the {what} within {self.group.timeout:g} s (a collective inside "
                f"a branch only some replicas take, or an error in another replica; "
                f"config.collective_timeout sets the wait)") from None
        finally:
            self.wait_s += time.perf_counter() - t0

    def _publish(self, x: np.ndarray, what: str) -> list:
        self.group.slots[self.index] = np.asarray(x, order="C")
        self._sync(what)
        return self.group.slots

    def allreduce(self, x: np.ndarray, op: str) -> np.ndarray:
        """``op`` ("sum", "max", "min") of every replica's ``x``."""
        slots = self._publish(x, f"p{op}")
        out = np.array(slots[0], copy=True)
        combine = _COMBINE[op]
        for s in slots[1:]:
            combine(out, s, out=out)
        self._sync(f"p{op}")
        return out

    def all_gather(self, x: np.ndarray) -> np.ndarray:
        """Every replica's ``x`` stacked along a new leading axis."""
        out = np.stack(self._publish(x, "all_gather"))
        self._sync("all_gather")
        return out

    def ppermute(self, x: np.ndarray, perm: tuple[tuple[int, int], ...]) -> np.ndarray:
        """The ``x`` of the replica that sends to this one in ``perm`` (zeros if none)."""
        slots = self._publish(x, "ppermute")
        src = next((s for s, d in perm if d == self.index), None)
        out = np.zeros_like(slots[self.index]) if src is None else np.array(slots[src])
        self._sync("ppermute")
        return out

    def all_to_all(self, x: np.ndarray, split_axis: int) -> np.ndarray:
        """Block ``index`` of ``split_axis`` of every replica's ``x``, stacked by source
        along a new leading axis (each replica reads only its own blocks)."""
        slots = self._publish(x, "all_to_all")
        out = np.stack([np.take(s, self.index, axis=split_axis) for s in slots])
        self._sync("all_to_all")
        return out

    def led(self, x: np.ndarray, lead, what: str) -> np.ndarray:
        """Replica 0 runs ``lead(slots)`` on every replica's ``x`` and returns one result
        per replica; this replica gets its own (how the MPI level talks for a process)."""
        slots = self._publish(x, what)
        if self.index == 0:
            try:
                self.group.results = lead(slots)
            except BaseException:
                self.group.abort()
                raise
        self._sync(what)
        out = self.group.results[self.index]
        self._sync(what)
        return out

    def split(self, color) -> "LocalComm":
        """This replica's place in the group of the same size that every replica joins
        by calling ``split`` with the same ``color`` (the threads of a nested pmap's
        inner replica ``j`` meet over the enclosing axis this way)."""
        with self.group.lock:
            sub = self.group.subgroups.get(color)
            if sub is None:
                sub = self.group.subgroups[color] = LocalGroup(self.size, self.group.timeout)
        return sub.member(self.index)

    def broadcast(self, x: np.ndarray | None, root: int = 0) -> np.ndarray:
        """Replica ``root``'s ``x`` on every replica."""
        slots = self._publish(x if self.index == root else np.empty(0), "broadcast")
        out = np.array(slots[root], copy=True)
        self._sync("broadcast")
        return out
