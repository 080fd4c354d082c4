"""Target configs: the hardware facts and the pass list Stripe passes read.

A target is data. Passes take ``(program, target)`` and read their parameters
from ``target.passes``; knowledge of the hardware lives only here.

The CPU pass list, in order: ``elide_init`` (outputs fully overwritten skip their
fill), ``stencil`` (multiply-accumulate contractions become packed panels around a
register block sized for this register file), ``fuse`` (epilogues and chains join
their producer), ``localize`` and ``scalarize`` (fused temporaries shrink to a tile, a
register), ``autotile`` (cache-tile blocks whose views disagree on the contiguous
index), ``elide_init`` again (local temporaries), ``boundary`` (interior tiles without
checks) and ``partition`` (one parallel loop per kernel over disjoint outputs).
"""
from __future__ import annotations

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
    # matrix-vector contractions of at least this many multiply-adds call the host's BLAS
    # (generated code streams them poorly today); 0 disables the library call
    library_matvec_macs: int = 1 << 18

    def to_dict(self) -> dict:
        return {"name": self.name, "cores": self.cores, "vector_bytes": self.vector_bytes,
                "line_bytes": self.line_bytes, "l1_bytes": self.l1_bytes,
                "l2_bytes": self.l2_bytes, "l3_bytes": self.l3_bytes,
                "mem_cap_bytes": self.mem_cap_bytes,
                "library_matvec_macs": self.library_matvec_macs,
                "passes": [[n, dict(p)] for n, p in self.passes]}


def register_blocks(vector_bytes: int) -> tuple:
    """Register-block shapes ``(rows, vectors)`` for the micro-kernel: accumulators plus
    one vector per column block plus a broadcast must fit the vector register file
    (32 registers with AVX-512, 16 otherwise); the two with the fewest loads per FMA."""
    regs = 32 if vector_bytes >= 64 else 16
    fits = [(r, v) for r in range(2, 17) for v in range(1, 5) if r * v + v + 1 <= regs]
    fits.sort(key=lambda s: ((s[0] + s[1]) / (s[0] * s[1]), -s[0] * s[1]))
    return tuple(fits[:2])


def cpu_target(cores: int, simd_bytes: int, line_bytes: int, l1_bytes: int, l2_bytes: int,
               l3_bytes: int, name: str = "cpu") -> Target:
    """The CPU config (pass list and parameters) for a machine with these facts."""
    passes = (
        ("elide_init", ()),
        ("stencil", (("shapes", register_blocks(simd_bytes)),)),
        ("fuse", ()),
        ("localize", ()),
        ("scalarize", ()),
        ("autotile", (("reqs", ("kernel",)), ("acc_idxs", False), ("only_conflicts", True))),
        ("elide_init", ()),
        ("boundary", ()),
        ("partition", (("min_work", 1 << 15),)),
    )
    return Target(name, cores, simd_bytes, line_bytes, l1_bytes, l2_bytes, l3_bytes,
                  l2_bytes // 2, passes)
