"""A bounded map with least-recently-used eviction, for plait's in-process caches.

The caches that grow with every new shape or signature (jit's per-signature
executables, lazy traces, backward graphs, autotile results, ufunc plans) keep at most
``plait.config.max_cache_entries`` entries each; a lookup that hits or an insertion
makes an entry the most recently used, and inserting beyond the limit evicts the
least recently used one. An evicted entry is simply rebuilt the next time it is
needed. Each operation is a few calls on an ``OrderedDict``, so concurrent use from
several threads never corrupts the map (a racing eviction is tolerated).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator

from plait.config import config


class LRUCache:
    """A mapping of at most ``limit`` entries (``config.max_cache_entries`` when
    ``limit`` is None, read at each insertion); ``on_evict(key, value)`` is called for
    each entry it evicts."""

    __slots__ = ("_d", "_limit", "_on_evict")

    def __init__(self, limit: int | None = None,
                 on_evict: Callable[[Hashable, Any], None] | None = None):
        self._d: OrderedDict = OrderedDict()
        self._limit = limit
        self._on_evict = on_evict

    @property
    def limit(self) -> int:
        n = self._limit if self._limit is not None else config.max_cache_entries
        return max(int(n), 1)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of ``key`` (now the most recently used), or ``default``."""
        d = self._d
        try:
            value = d[key]
        except KeyError:
            return default
        try:
            d.move_to_end(key)
        except KeyError:        # evicted by another thread meanwhile
            pass
        return value

    def touch(self, key: Hashable) -> None:
        """Mark ``key`` as just used (no effect when it is absent)."""
        try:
            self._d.move_to_end(key)
        except KeyError:        # evicted by another thread meanwhile
            pass

    def __setitem__(self, key: Hashable, value: Any) -> None:
        d = self._d
        d[key] = value
        d.move_to_end(key)
        limit = self.limit
        while len(d) > limit:
            try:
                old_key, old = d.popitem(last=False)
            except KeyError:
                break
            if self._on_evict is not None:
                self._on_evict(old_key, old)

    def __getitem__(self, key: Hashable) -> Any:
        value = self._d[key]
        self.touch(key)
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator:
        """The keys, least recently used first (a snapshot)."""
        return iter(list(self._d))

    def __delitem__(self, key: Hashable) -> None:
        del self._d[key]

    def values(self) -> list:
        return list(self._d.values())

    def items(self) -> list:
        return list(self._d.items())

    def clear(self) -> None:
        self._d.clear()

    def __repr__(self) -> str:
        return f"<LRUCache {len(self._d)}/{self.limit}>"
