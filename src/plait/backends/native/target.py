"""The host's target config: a CPU config (``plait/stripe/targets/cpu-*.toml``) chosen
by the host's vector width, its detected facts filled from the host CPU."""
from __future__ import annotations

import functools

from plait.runtime.cpuinfo import cpu_info
from plait.stripe.targets import Target, load_target


@functools.lru_cache(maxsize=None)
def host_target() -> Target:
    """The CPU this process runs on (detected once)."""
    i = cpu_info()
    name = {64: "cpu-avx512", 32: "cpu-avx2"}.get(i.simd_bytes, "cpu-generic")
    return load_target(name, {"cores": i.cores, "line_bytes": i.line_bytes,
                              "L1_bytes": i.l1d_bytes, "L2_bytes": i.l2_bytes,
                              "L3_bytes": i.l3_bytes})
