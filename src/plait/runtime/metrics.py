"""Counters of what plait did: traces, compiles, cache hits, times."""
from __future__ import annotations

from collections import Counter
from typing import Callable

_COUNTS: Counter = Counter()
# counts kept elsewhere, folded in when read: take() returns them and forgets them
_PENDING: list[Callable[[], dict]] = []


def bump(name: str, n: float = 1) -> None:
    """Add ``n`` to counter ``name``."""
    _COUNTS[name] += n


def add_pending(take: Callable[[], dict]) -> None:
    """Register ``take()``, which returns the counts kept outside this module since its
    last call and forgets them (the xla backend's C call path counts its cache hits in
    C); every read folds them in."""
    _PENDING.append(take)


def _fold() -> None:
    for take in _PENDING:
        for name, n in take().items():
            if n:
                _COUNTS[name] += n


def counters() -> dict:
    """A snapshot of all counters (``traces``, ``compiles``, ``cache_hits``, ...)."""
    _fold()
    return dict(_COUNTS)


def get(name: str) -> float:
    _fold()
    return _COUNTS.get(name, 0)


def reset() -> None:
    """Zero every counter."""
    _fold()
    _COUNTS.clear()
