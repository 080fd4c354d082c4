"""Target configs: the hardware facts and the pass list Stripe passes read.

A target is data: one TOML file per target in this package (``cpu-avx512.toml``,
``cpu-avx2.toml``, ``cpu-generic.toml``, ``opencl-gpu.toml``) holding the hardware facts
(memory levels with sizes and bandwidths, compute units, vector or subgroup width,
work-group limits) and the ordered pass list with each pass's parameters. A fact
written as ``"detect"`` is filled by whoever loads the config for a real device (the
native backend from the host CPU, the OpenCL backend from the device query); see
:func:`load_target`. Passes take ``(program, target)`` and read their parameters from
``target.passes``; knowledge of the hardware lives only here.

The CPU pass list, in order: ``elide_init`` (outputs fully overwritten skip their
fill), ``stencil`` (multiply-accumulate contractions become packed panels around a
register block sized for this register file), ``fuse`` (epilogues and chains join
their producer), ``localize`` and ``scalarize`` (fused temporaries shrink to a tile, a
register), ``autotile`` (cache-tile blocks whose views disagree on the contiguous
index), ``elide_init`` again (local temporaries), ``boundary`` (interior tiles without
checks) and ``partition`` (one parallel loop per kernel over disjoint outputs, where
the cost model priced by its ``fork_ns``/``op_ns``/``transcendental_ns`` says it pays).
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources

from plait.errors import PlaitValueError

DETECT = "detect"


@dataclass(frozen=True)
class MemoryLevel:
    """One level of the memory hierarchy: its name, capacity and bandwidth."""

    name: str
    bytes: int
    bandwidth_gbs: float


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
    kind: str = "cpu"                  # which renderer family: "cpu" or "opencl"
    memory: tuple = ()                 # MemoryLevel, innermost first
    registers: int = 16                # vector registers (CPU) per thread
    subgroup: int = 1                  # work-items that run in lock step (GPU)
    max_workgroup: int = 1             # work-items per work-group at most (GPU)
    local_bytes: int = 0               # local (work-group shared) memory per group (GPU)
    unsupported_dtypes: tuple = ()     # Stripe dtypes its kernels cannot compute
    # GEMM-shaped contractions of at least this many multiply-adds call plait's GEMM
    # library (backends/native/gemm.py), which threads those of gemm_parallel_macs on
    gemm_route_macs: int = 1 << 16
    gemm_parallel_macs: int = 1 << 22

    def level(self, name: str) -> MemoryLevel | None:
        """The memory level called ``name``, or None."""
        return next((m for m in self.memory if m.name == name), None)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "cores": self.cores,
                "vector_bytes": self.vector_bytes, "line_bytes": self.line_bytes,
                "l1_bytes": self.l1_bytes, "l2_bytes": self.l2_bytes,
                "l3_bytes": self.l3_bytes, "mem_cap_bytes": self.mem_cap_bytes,
                "library_matvec_macs": self.library_matvec_macs,
                "registers": self.registers, "subgroup": self.subgroup,
                "max_workgroup": self.max_workgroup, "local_bytes": self.local_bytes,
                "unsupported_dtypes": list(self.unsupported_dtypes),
                "gemm_route_macs": self.gemm_route_macs,
                "gemm_parallel_macs": self.gemm_parallel_macs,
                "memory": [[m.name, m.bytes, m.bandwidth_gbs] for m in self.memory],
                "passes": [[n, dict(p)] for n, p in self.passes]}


def register_blocks(vector_bytes: int) -> tuple:
    """Register-block shapes ``(rows, vectors)`` for the micro-kernel: accumulators plus
    one vector per column block plus a broadcast must fit the vector register file
    (32 registers with AVX-512, 16 otherwise); the two with the fewest loads per FMA.
    The CPU configs list these shapes; a test checks them against this rule."""
    regs = 32 if vector_bytes >= 64 else 16
    fits = [(r, v) for r in range(2, 17) for v in range(1, 5) if r * v + v + 1 <= regs]
    fits.sort(key=lambda s: ((s[0] + s[1]) / (s[0] * s[1]), -s[0] * s[1]))
    return tuple(fits[:2])


def config_names() -> list[str]:
    """Names of the target configs shipped in this package."""
    return sorted(p.name[:-5] for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".toml"))


@functools.lru_cache(maxsize=None)
def _raw(name: str) -> dict:
    path = resources.files(__name__) / f"{name}.toml"
    if not path.is_file():
        raise PlaitValueError(f"no target config {name!r}; available: {config_names()}")
    return tomllib.loads(path.read_text())


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def load_target(name: str, detected: dict | None = None) -> Target:
    """The target config ``name`` with its ``"detect"`` facts taken from ``detected``
    (fact name -> value; a memory level's size is ``"<level>_bytes"``)."""
    raw = _raw(name)
    got = dict(detected or {})

    def fact(key: str, value):
        if value != DETECT:
            return value
        if key not in got:
            raise PlaitValueError(f"target config {name!r} needs the detected fact {key!r}")
        return got[key]

    facts = {k: fact(k, v) for k, v in raw.get("facts", {}).items()}
    memory = tuple(MemoryLevel(m["name"], int(fact(f"{m['name']}_bytes", m["bytes"])),
                               float(m["bandwidth_gbs"])) for m in raw.get("memory", []))
    sizes = {m.name: m.bytes for m in memory}
    passes = tuple((p["pass"], tuple((k, _freeze(v)) for k, v in p.items() if k != "pass"))
                   for p in raw.get("passes", []))
    return Target(
        raw["name"], int(facts.get("cores", 1)), int(facts.get("vector_bytes", 16)),
        int(facts.get("line_bytes", 64)), sizes.get("L1", 0), sizes.get("L2", 0),
        sizes.get("L3", 0), sizes.get("L2", 0) // 2, passes,
        int(facts.get("library_matvec_macs", 0)), raw.get("kind", "cpu"), memory,
        int(facts.get("registers", 16)), int(facts.get("subgroup", 1)),
        int(facts.get("max_workgroup", 1)), sizes.get("local", 0),
        tuple(facts.get("unsupported_dtypes", ())),
        int(facts.get("gemm_route_macs", 0)), int(facts.get("gemm_parallel_macs", 0)))
