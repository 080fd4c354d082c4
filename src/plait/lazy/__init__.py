"""``plait.lazy``: lazy arrays — eager-looking code, compiled traces (the S4TF Lazy Tensor
design; ``docs/design.md`` tells how it maps onto plait).

Operations on a :class:`LazyArray` are recorded (with shape checks at the user's
line) instead of run. Observing a value — ``print``, ``item()``, ``float()``,
``np.asarray``, ``to_host``, ``block_until_ready()``, or the end-of-step barrier
:func:`step` — cuts the pending operations into a trace, compiles it once per
structure with the configured backend, runs it, and memoizes the results. Every
still-referenced array the trace computes is an output of the same run.

    x = plait.lazy.asarray(data)          # or plait.device_put(data, plait.devices("lazy")[0])
    y = plait.numpy.tanh(x @ w)           # recorded
    print(y.sum())                        # compiled and run here
"""
from plait.errors import MaterializationForbiddenError
from plait.lazy.modes import (eager_mode, forbid_materialization, metrics, reset_metrics,
                              is_eager, is_sync, synchronous)
from plait.lazy.array import LazyArray, asarray, live_count
from plait.lazy import trace as _trace      # noqa: F401  (installs the lazy interpreter)
from plait.lazy.materialize import materialize, step
from plait.lazy.cache import clear as clear_cache, cached_traces
from plait.lazy.device import LAZY_DEVICE as device
from plait.lazy.host import to_host

__all__ = ["LazyArray", "asarray", "to_host", "step", "materialize", "eager_mode",
           "forbid_materialization", "metrics", "reset_metrics", "clear_cache",
           "cached_traces", "live_count", "is_eager", "is_sync", "synchronous", "device",
           "MaterializationForbiddenError"]
