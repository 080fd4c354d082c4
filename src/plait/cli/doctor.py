"""``plait doctor``: what plait found on this machine (compiler, OpenMP, SIMD, caches)."""
from __future__ import annotations


def doctor() -> str:
    """A report of the toolchain and CPU facts the native backend uses."""
    from plait.codegen.toolchain import find_toolchain
    from plait.config import config
    from plait.runtime.cpuinfo import cpu_info
    from plait.runtime.kernel_cache import cache_dir, configured_dir, writable_problem
    tc = find_toolchain()
    info = cpu_info()
    lines = ["plait doctor"]
    if tc is None:
        lines.append("  C compiler : NOT FOUND (jit falls back to the interp backend; install "
                     "gcc or clang, or set $CC)")
    else:
        lines.append(f"  C compiler : {tc.cc} ({tc.version})")
        if tc.openmp:
            omp = "yes"
        elif tc.openmp_note:
            omp = f"no: its probe could not run ({tc.openmp_note}); kernels run on one core"
        else:
            omp = "no (the compiler lacks -fopenmp); kernels run serially on one core"
        lines.append(f"  OpenMP     : {omp}")
        lines.append(f"  flags      : {' '.join(tc.flags)}")
    lines.append(f"  CPU        : {info.machine}, {info.cores} cores, "
                 f"{info.simd_bytes * 8}-bit SIMD")
    lines.append(f"  caches     : L1d {info.l1d_bytes // 1024} KiB, L2 {info.l2_bytes // 1024} KiB, "
                 f"L3 {info.l3_bytes // 1024} KiB, line {info.line_bytes} B")
    lines.append(f"  backend    : {config.resolved_backend()}")
    wanted, problem = configured_dir(), writable_problem(configured_dir())
    lines.append(f"  cache dir  : {wanted}" if problem is None else
                 f"  cache dir  : {wanted} is unusable ({problem}); kernels are built in "
                 f"{cache_dir()} (set PLAIT_CACHE_DIR to a writable directory)")
    return "\n".join(lines)

