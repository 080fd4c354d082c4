"""Counters of what plait did: traces, compiles, cache hits, times."""
from __future__ import annotations

from collections import Counter

_COUNTS: Counter = Counter()


def bump(name: str, n: float = 1) -> None:
    """Add ``n`` to counter ``name``."""
    _COUNTS[name] += n


def store() -> Counter:
    """The live counters (the xla backend's C call path bumps ``cache_hits`` in it)."""
    return _COUNTS


def counters() -> dict:
    """A snapshot of all counters (``traces``, ``compiles``, ``cache_hits``, ...)."""
    return dict(_COUNTS)


def get(name: str) -> float:
    return _COUNTS.get(name, 0)


def reset() -> None:
    """Zero every counter."""
    _COUNTS.clear()
