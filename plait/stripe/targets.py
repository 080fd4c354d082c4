"""Target configs: the hardware facts and the pass list Stripe passes read.

A target is data. Passes take ``(program, target)`` and read their parameters
from ``target.passes``; knowledge of the hardware lives only here.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    """A compilation target for Stripe passes."""

    name: str
    cores: int
    vector_bytes: int
    line_bytes: int
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    mem_cap_bytes: int
    passes: tuple = field(default_factory=tuple)   # ((pass name, params dict as tuple), ...)

    def to_dict(self) -> dict:
        return {"name": self.name, "cores": self.cores, "vector_bytes": self.vector_bytes,
                "line_bytes": self.line_bytes, "l1_bytes": self.l1_bytes,
                "l2_bytes": self.l2_bytes, "l3_bytes": self.l3_bytes,
                "mem_cap_bytes": self.mem_cap_bytes,
                "passes": [[n, dict(p)] for n, p in self.passes]}


@functools.lru_cache(maxsize=None)
def host_target() -> Target:
    """The CPU this process runs on (detected once)."""
    from plait.runtime.cpuinfo import cpu_info
    info = cpu_info()
    passes = (
        ("elide_init", ()),
        ("stencil", ()),
        ("fuse", ()),
        ("localize", ()),
        ("scalarize", ()),
        ("autotile", (("reqs", ("kernel",)), ("acc_idxs", False), ("only_conflicts", True))),
        ("elide_init", ()),
        ("boundary", ()),
        ("partition", (("min_work", 1 << 15),)),
    )
    return Target("cpu", info.cores, info.simd_bytes, info.line_bytes, info.l1d_bytes,
                  info.l2_bytes, info.l3_bytes, info.l2_bytes // 2, passes)
