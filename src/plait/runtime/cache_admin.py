"""Looking after the kernel disk cache: its entries, size and hit counts, pruning to a
size cap (least recently used first), and clearing it (``plait cache info|prune|clear``).

An entry is ``<key>.so`` with its use record ``<key>.use`` beside it (see
:mod:`plait.runtime.kernel_cache`). Pruning removes whole entries; a process that has an
entry loaded keeps its mapping, and one that loses an entry later rebuilds it.
"""
from __future__ import annotations

import dataclasses
import os

from plait.runtime import metrics


@dataclasses.dataclass(frozen=True)
class Entry:
    """One cached kernel library: its key, bytes on disk, loads from disk, last use."""
    key: str
    size: int
    hits: int
    last_use: float


@dataclasses.dataclass(frozen=True)
class CacheInfo:
    """The cache directory's totals."""
    directory: str
    entries: int
    size: int
    hits: int
    max_size: int


def entries(d: str) -> list[Entry]:
    """Every entry in directory ``d``, least recently used first."""
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for n in names:
        if not n.endswith(".so"):
            continue
        key = n[:-3]
        try:
            st = os.stat(os.path.join(d, n))
        except OSError:
            continue                      # removed meanwhile
        size, hits, last = st.st_size, 0, st.st_mtime
        try:
            use = os.stat(os.path.join(d, key + ".use"))
            size, hits, last = size + use.st_size, use.st_size, max(last, use.st_mtime)
        except OSError:         # no use record yet: no hits counted
            pass
        out.append(Entry(key, size, hits, last))
    out.sort(key=lambda e: e.last_use)
    return out


def info(d: str | None = None) -> CacheInfo:
    """Totals of the cache directory ``d`` (default: the one in use)."""
    from plait.config import config
    from plait.runtime.kernel_cache import configured_dir
    d = d or configured_dir()
    es = entries(d)
    return CacheInfo(d, len(es), sum(e.size for e in es), sum(e.hits for e in es),
                     int(config.cache_max_size))


def _remove(d: str, key: str) -> None:
    for ext in (".so", ".use"):
        try:
            os.remove(os.path.join(d, key + ext))
        except OSError:         # already gone (another process pruned it)
            pass


def prune(d: str, max_size: int, keep: str | None = None) -> tuple[int, int]:
    """Remove least recently used entries of ``d`` until it holds at most ``max_size``
    bytes (never the entry at path ``keep``). Returns ``(entries removed, bytes freed)``."""
    es = entries(d)
    total = sum(e.size for e in es)
    removed = freed = 0
    for e in es:
        if total <= max_size:
            break
        if keep is not None and os.path.join(d, e.key + ".so") == keep:
            continue
        _remove(d, e.key)
        total -= e.size
        removed, freed = removed + 1, freed + e.size
    if removed:
        metrics.bump("kernel_cache_pruned", removed)
    return removed, freed


def prune_if_over(d: str, keep: str | None = None) -> None:
    """After a build: prune ``d`` to ``plait.config.cache_max_size`` when it is over."""
    from plait.config import config
    try:
        prune(d, int(config.cache_max_size), keep)
    except OSError:
        pass                              # pruning is best effort; the build succeeded


def clear(d: str | None = None) -> tuple[int, int]:
    """Remove every entry of ``d`` (default: the configured directory), and forget the
    libraries loaded in this process. Returns ``(entries removed, bytes freed)``."""
    from plait.runtime.kernel_cache import clear_index, configured_dir
    d = d or configured_dir()
    es = entries(d)
    for e in es:
        _remove(d, e.key)
    clear_index()
    return len(es), sum(e.size for e in es)
