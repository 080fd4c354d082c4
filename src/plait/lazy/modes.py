"""Switches and counters of the lazy runtime: eager fallback, forbidden materialization,
and ``metrics()``.

``PLAIT_LAZY_EAGER=1`` (or ``with plait.lazy.eager_mode():``) runs lazy arrays op by
op, for debugging. ``PLAIT_LAZY_SYNC=1`` (or ``with plait.lazy.synchronous():``) makes
every materialization wait for its results (by default native traces run on a worker
thread while Python records the next step). ``with plait.lazy.forbid_materialization():`` makes any
materialization an error (for tests that must stay on one trace). Counters go
through :mod:`plait.runtime.metrics` under ``lazy_*`` names.

The blocks set context variables: a block changes the switch for its own thread (and
asyncio task) only. Outside any block (and in a new thread) the process-wide settings
``plait.config.lazy_eager``/``lazy_sync`` apply.
"""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from plait.config import config
from plait.errors import MaterializationForbiddenError
from plait.runtime import metrics as _metrics


# None: the process-wide setting (plait.config.lazy_eager / lazy_sync)
_EAGER: ContextVar[bool | None] = ContextVar("plait_lazy_eager", default=None)
_SYNC: ContextVar[bool | None] = ContextVar("plait_lazy_sync", default=None)
_FORBID: ContextVar[int] = ContextVar("plait_lazy_forbid", default=0)
SITES: Counter = Counter()     # user line -> number of materializations it forced
_BASE: dict = {}               # counter values at the last reset_metrics()

COUNTERS = ("lazy_materializations", "lazy_traces", "lazy_compiles", "lazy_cache_hits",
            "lazy_promoted_constants", "lazy_backward_graphs", "lazy_compile_time_s",
            "lazy_execute_time_s")


def is_eager() -> bool:
    """True when lazy arrays run op by op (``eager_mode()``, else
    ``plait.config.lazy_eager``, set by ``PLAIT_LAZY_EAGER=1``)."""
    v = _EAGER.get()
    return config.lazy_eager if v is None else v


@contextmanager
def eager_mode(enabled: bool = True) -> Iterator[None]:
    """Run lazy-array operations op by op (no traces) inside the block, for debugging.

    Results are identical to lazy execution on the reference backend; symbolic
    arrays made before the block are materialized when an operation uses them.
    """
    token = _EAGER.set(bool(enabled))
    try:
        yield
    finally:
        _EAGER.reset(token)


def is_sync() -> bool:
    """True when materializations run to completion before returning
    (``synchronous()``, else ``plait.config.lazy_sync``, set by ``PLAIT_LAZY_SYNC=1``);
    by default a fully native trace is launched on the native worker thread and only
    observing a value waits for it."""
    v = _SYNC.get()
    return config.lazy_sync if v is None else v


@contextmanager
def synchronous(enabled: bool = True) -> Iterator[None]:
    """Run every materialization inside the block to completion before it returns."""
    token = _SYNC.set(bool(enabled))
    try:
        yield
    finally:
        _SYNC.reset(token)


@contextmanager
def forbid_materialization() -> Iterator[None]:
    """Make any materialization of a lazy array inside the block raise an error."""
    token = _FORBID.set(_FORBID.get() + 1)
    try:
        yield
    finally:
        _FORBID.reset(token)


def check_allowed(site: str) -> None:
    """Raise if materialization is forbidden; ``site`` is the user's line that forced it."""
    if _FORBID.get():
        raise MaterializationForbiddenError(
            f"a lazy array was materialized at {site} inside "
            f"plait.lazy.forbid_materialization(); remove the observation (print, item(), "
            f"float(), numpy conversion, Python control flow on the value) or move it after "
            f"the block", locate=False)


def bump(name: str, n: float = 1) -> None:
    """Add ``n`` to the lazy counter ``name`` (a ``plait.metrics`` counter)."""
    _metrics.bump(name, n)


def metrics() -> dict:
    """Lazy-runtime counters: materializations (and the user lines that forced them),
    traces extracted, compiles, cache hits, promoted constants, backward graphs derived,
    compile time and execute time (for a launched trace, the launch: its run overlaps
    with Python)."""
    out = {name[len("lazy_"):]: _metrics.get(name) - _BASE.get(name, 0) for name in COUNTERS}
    out["materialization_sites"] = dict(SITES)
    return out


def reset_metrics() -> None:
    """Zero the lazy counters and forget the materialization sites."""
    _BASE.update({name: _metrics.get(name) for name in COUNTERS})
    SITES.clear()
