"""Build once per key across threads: the first thread builds, the others wait for it.

``jit`` traces and compiles each signature once even when many threads call it at the
same moment. A thread whose wait could never end (a traced function calling itself on
the same signature, or two threads each tracing a function the other one calls) builds
on its own instead, which is what a single thread would do.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable, Hashable

_LOCK = threading.RLock()       # RLock: keys hash and compare with user code (statics)
_WAITING: dict[int, "_Job"] = {}     # thread ident -> the job that thread waits for
_INSTANCES: "weakref.WeakSet[Once]" = weakref.WeakSet()


class _Job:
    """One build in progress: the thread running it and an event set when it ends."""

    __slots__ = ("owner", "done")

    def __init__(self, owner: int):
        self.owner = owner
        self.done = threading.Event()


def _would_deadlock(owner: int, me: int) -> bool:
    """Whether waiting for ``owner`` waits, through a chain of waits, for ``me``."""
    seen = set()
    t = owner
    while t not in seen:
        if t == me:
            return True
        seen.add(t)
        job = _WAITING.get(t)
        if job is None:
            return False
        t = job.owner
    return False


class Once:
    """Runs at most one build per key at a time; concurrent callers wait and reuse it."""

    def __init__(self):
        self._jobs: dict[Hashable, _Job] = {}
        _INSTANCES.add(self)

    def run(self, key: Hashable, find: Callable[[], Any],
            build: Callable[[], Any]) -> tuple[Any, bool]:
        """``(value, built)``: what ``find()`` returns if that is not None, else the
        result of ``build()``, which must make later ``find()`` calls return it.

        While one thread builds ``key``, other threads asking for it wait and then
        ``find()`` the value; if the build raised, one of them builds in turn (so each
        thread sees its own error).
        """
        me = threading.get_ident()
        while True:
            with _LOCK:
                value = find()
                if value is not None:
                    return value, False
                job = self._jobs.get(key)
                if job is None:
                    job = self._jobs[key] = _Job(me)
                    mine = True
                elif _would_deadlock(job.owner, me):
                    job = mine = None
                else:
                    _WAITING[me] = job
                    mine = False
            if job is None:
                return build(), True
            if mine:
                try:
                    return build(), True
                finally:
                    with _LOCK:
                        self._jobs.pop(key, None)   # (gone if a fork cleared it)
                    job.done.set()
            try:
                job.done.wait()
            finally:
                with _LOCK:
                    _WAITING.pop(me, None)


def _after_fork_in_child() -> None:
    """A child has only the forking thread: builds of other threads never finish there."""
    global _LOCK
    _LOCK = threading.RLock()
    _WAITING.clear()
    for once in list(_INSTANCES):
        once._jobs.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
