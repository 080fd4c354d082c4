"""Materialization: cut the trace, look it up in the cache, run it, memoize the results.

:func:`materialize` is what every observation (``print``, ``item()``,
``np.asarray``, ``bool()``, ...) calls; :func:`step` materializes every live
symbolic array at once (the end of a training step).
"""
from __future__ import annotations

import time

import numpy as np

from plait.lazy import modes
from plait.errors import format_site, user_site
from plait.lazy.array import Const, LazyArray, graph_lock, is_recording, live_arrays
from plait.lazy.cache import lookup
from plait.lazy.extract import extract
from plait.profiler import events


def materialize(arrays: list[LazyArray]) -> None:
    """Compute ``arrays`` (and every other live array their trace computes) in one run."""
    arrays = [a for a in arrays if a._ref.__class__ is not Const]
    if not arrays:
        return
    site = format_site(user_site())
    modes.check_allowed(site)
    with graph_lock():
        # another thread may have computed them while this one waited
        arrays = [a for a in arrays if a._ref.__class__ is not Const]
        if arrays:
            _materialize(arrays, site)


def _materialize(arrays: list[LazyArray], site: str) -> None:
    modes.bump("lazy_materializations")
    modes.SITES[site] += 1
    with events.span("lazy: cut trace", "trace", {"site": site}):
        ex = extract(arrays)
        modes.bump("lazy_traces")
        entry = lookup(ex)
    t0 = time.perf_counter()
    launched = None
    if not modes.is_sync():
        # a fully native program is queued and runs while Python goes on; it may read
        # buffers still being written by earlier launches (they complete in order)
        args = [ex.consts[k] for k in entry.arg_slots]
        launched = entry.executable.launch(*[c.value for c in args], deps=tuple(
            c.launch for c in args if c.launch is not None))
    if launched is None:
        outs = entry.executable(*[ex.consts[k].wait() for k in entry.arg_slots])
        pending = None
    else:
        outs, pending = launched
    modes.bump("lazy_execute_time_s", time.perf_counter() - t0)
    recording = is_recording()
    for (k, i), a, v in zip(ex.out_refs, ex.out_arrays, outs):
        if type(v) is not np.ndarray:
            v = np.asarray(v)
        aval = a._aval
        if v.dtype != aval.dtype:       # a literal output keeps the graph's dtype
            v = v.astype(aval.dtype)
        node = ex.nodes[k]
        c = Const(v, aval.weak_type, True, (node, i) if recording else None, aval)
        c.launch = pending
        node.memoize(i, c)
        a._set_concrete(c)


def step() -> None:
    """Materialize every live lazy array in one trace (call at the end of a training step)."""
    materialize(live_arrays())
