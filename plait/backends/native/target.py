"""The host's target config: ``stripe.targets.cpu_target`` filled with detected CPU facts."""
from __future__ import annotations

import functools

from plait.runtime.cpuinfo import cpu_info
from plait.stripe.targets import Target, cpu_target


@functools.lru_cache(maxsize=None)
def host_target() -> Target:
    """The CPU this process runs on (detected once)."""
    i = cpu_info()
    return cpu_target(i.cores, i.simd_bytes, i.line_bytes, i.l1d_bytes, i.l2_bytes, i.l3_bytes)
