"""The host's target config: a CPU config (``plait/stripe/targets/cpu-*.toml``) chosen
by the host's vector width, its detected facts filled from the host CPU."""
from __future__ import annotations

import functools
import os

from plait.runtime.cpuinfo import cpu_info
from plait.stripe.targets import Target, load_target


def host_target() -> Target:
    """The CPU this process runs on (detected once), with as many cores as the calling
    thread may run on: a pmap replica's worker thread, pinned to its device's cores,
    compiles kernels partitioned for those cores only."""
    try:
        cores = len(os.sched_getaffinity(0))      # 0: the calling thread on Linux
    except (AttributeError, OSError):
        cores = cpu_info().cores
    return _target(min(cores, cpu_info().cores))


@functools.lru_cache(maxsize=None)
def _target(cores: int) -> Target:
    i = cpu_info()
    name = {64: "cpu-avx512", 32: "cpu-avx2"}.get(i.simd_bytes, "cpu-generic")
    return load_target(name, {"cores": cores, "line_bytes": i.line_bytes,
                              "L1_bytes": i.l1d_bytes, "L2_bytes": i.l2_bytes,
                              "L3_bytes": i.l3_bytes})
