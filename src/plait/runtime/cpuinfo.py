"""What the host CPU offers: cores, SIMD width, cache sizes (read from the OS)."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuInfo:
    """Facts about the host that target configs are built from."""

    cores: int
    simd_bytes: int            # widest vector register: 16 (SSE/NEON), 32 (AVX2), 64 (AVX-512)
    flags: frozenset
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    line_bytes: int
    machine: str


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _size(text: str | None, default: int) -> int:
    if not text:
        return default
    t = text.upper()
    mult = 1
    if t.endswith("K"):
        mult, t = 1024, t[:-1]
    elif t.endswith("M"):
        mult, t = 1024 * 1024, t[:-1]
    try:
        return int(t) * mult
    except ValueError:
        return default


def _cache_sizes() -> tuple[int, int, int, int]:
    l1 = l2 = l3 = 0
    line = 64
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        entries = []
    for e in entries:
        if not e.startswith("index"):
            continue
        level = _read(f"{base}/{e}/level")
        kind = _read(f"{base}/{e}/type") or ""
        size = _size(_read(f"{base}/{e}/size"), 0)
        line = _size(_read(f"{base}/{e}/coherency_line_size"), line)
        if level == "1" and kind in ("Data", "Unified"):
            l1 = size
        elif level == "2":
            l2 = size
        elif level == "3":
            l3 = size
    return l1 or 32 * 1024, l2 or 1024 * 1024, l3 or 8 * 1024 * 1024, line


@functools.lru_cache(maxsize=None)
def cpu_info() -> CpuInfo:
    """Detect the host CPU once per process."""
    flags: set = set()
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.split(":", 1)[1].split())
            break
    if "avx512f" in flags:
        simd = 64
    elif "avx2" in flags or "avx" in flags:
        simd = 32
    else:
        simd = 16
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = os.cpu_count() or 1
    l1, l2, l3, line = _cache_sizes()
    return CpuInfo(cores, simd, frozenset(flags), l1, l2, l3, line, os.uname().machine)
