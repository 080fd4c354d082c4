"""Run-time settings: every ``PLAIT_*`` variable plait reads, read here and nowhere else.

Each setting is one row of :data:`SETTINGS`: its name (an attribute of
``plait.config``), the environment variable that sets its starting value, how the
variable is parsed, the default, and what it does. Change one in code with
``plait.config.name = value`` or ``plait.config.update("name", value)`` (JAX's names
``jax_enable_x64``, ``jax_disable_jit``, ``jax_debug_nans``, ``jax_debug_infs`` are
accepted). ``print(plait.config.describe())`` lists them with their values.

The few variables of the wider environment plait consults (``CC``, ``OMP_NUM_THREADS``,
``XDG_CACHE_HOME``, glibc's malloc settings; the OpenMP and OpenBLAS waiting defaults it
sets) are
read by the functions at the end of this module, so the rest of plait never touches
``os.environ``.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import threading
from typing import Any, Callable, NamedTuple


def _parse_flag(text: str, name: str, default: bool) -> bool:
    text = text.strip().lower()
    if not text:
        return default
    return text not in ("0", "false", "no", "off")


def _parse_int(text: str, name: str, default: int) -> int:
    text = text.strip()
    try:
        return max(int(text), 1) if text else default
    except ValueError:
        import warnings
        warnings.warn(f"plait: ${name}={text!r} is not an integer; using {default}",
                      stacklevel=4)
        return default


def parse_size(text: str) -> int:
    """Bytes of a size such as ``500M``, ``2G``, ``1.5GiB`` or ``4096`` (ValueError if not one)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    n = float(t[:-1] if scale > 1 else t)
    if n < 0:
        raise ValueError(text)
    return int(n * scale)


def _parse_size(text: str, name: str, default: int) -> int:
    try:
        return parse_size(text) if text.strip() else default
    except ValueError:
        import warnings
        warnings.warn(f"plait: ${name}={text!r} is not a size such as 500M or 2G; using "
                      f"{default} bytes", stacklevel=4)
        return default


def _parse_float(text: str, name: str, default: float) -> float:
    text = text.strip()
    try:
        return float(text) if text else default
    except ValueError:
        import warnings
        warnings.warn(f"plait: ${name}={text!r} is not a number; using {default}",
                      stacklevel=4)
        return default


def _parse_str(text: str, name: str, default):
    return text.strip() or default


def _read_at_use(text: str, name: str, default):
    """For a variable consulted each time it is needed (see ``Config.kernel_cache_dir``)."""
    return default


class Setting(NamedTuple):
    """One setting: ``plait.config.<name>``, started from ``$<env>``."""
    name: str
    env: str
    parse: Callable[[str, str, Any], Any]
    default: Any
    doc: str


SETTINGS: tuple[Setting, ...] = (
    Setting("backend", "PLAIT_BACKEND", _parse_str, "auto",
            "jit's backend: auto (native when a C compiler is found, else interp with one "
            "warning), native, interp or xla"),
    Setting("tiered", "PLAIT_TIERED", _parse_flag, True,
            "the native backend answers a new program's first calls on the interpreter "
            "while it compiles in the background, then swaps (off: the first call waits "
            "for the C compiler)"),
    Setting("log_compiles", "PLAIT_LOG_COMPILES", _parse_flag, False,
            "log every trace and compile with the reason for the cache miss"),
    Setting("checks", "PLAIT_CHECKS", _parse_flag, False,
            "type-check every graph and verify every Stripe pass"),
    Setting("dump_dir", "PLAIT_DUMP_DIR", _parse_str, None,
            "write every compilation stage (graph, kernels, Tile, Stripe, C) to files here"),
    Setting("profile", "PLAIT_PROFILE", _parse_flag, False,
            "native kernels time each block (read with profile_blocks()); set before the "
            "first call"),
    Setting("max_cache_entries", "PLAIT_MAX_CACHE_ENTRIES", _parse_int, 512,
            "entries each in-process cache of compiled code keeps (plait.lru), least "
            "recently used evicted first"),
    Setting("cache_dir", "PLAIT_CACHE_DIR", _read_at_use, None,
            "directory of the on-disk kernel cache; unset: $PLAIT_CACHE_DIR as it is at "
            "each compile, else $XDG_CACHE_HOME/plait or ~/.cache/plait"),
    Setting("cache_max_size", "PLAIT_CACHE_MAX_SIZE", _parse_size, 2 << 30,
            "bytes the on-disk kernel cache may hold (suffixes K, M, G); after a build "
            "past it the least recently used entries are removed (also: plait cache "
            "prune)"),
    Setting("kernel_cache_size", "PLAIT_KERNEL_CACHE_SIZE", _parse_int, 256,
            "loaded kernel libraries the in-memory index keeps, least recently used "
            "dropped first"),
    Setting("disable_jit", "PLAIT_DISABLE_JIT", _parse_flag, False,
            "jit(f) calls f eagerly, op by op (also: with plait.disable_jit())"),
    Setting("debug_nans", "PLAIT_DEBUG_NANS", _parse_flag, False,
            "a NaN made by an eager op or a jitted function raises PlaitFloatingPointError "
            "naming the primitive and the line"),
    Setting("debug_infs", "PLAIT_DEBUG_INFS", _parse_flag, False,
            "the same for infinities"),
    Setting("x64", "PLAIT_X64", _parse_flag, True,
            "False: float32 mode (JAX's defaults: Python floats and default dtypes are "
            "float32, ints int32; docs/numpy-differences.md); set it at startup, functions "
            "already traced keep their dtypes"),
    Setting("lazy_eager", "PLAIT_LAZY_EAGER", _parse_flag, False,
            "lazy arrays run op by op, for debugging (per block: plait.lazy.eager_mode())"),
    Setting("lazy_sync", "PLAIT_LAZY_SYNC", _parse_flag, False,
            "every lazy materialization waits for its results instead of running on the "
            "native worker thread (per block: plait.lazy.synchronous())"),
    Setting("extra_cflags", "PLAIT_EXTRA_CFLAGS", _parse_str, "",
            "extra C compiler flags (e.g. -fsanitize=address), read when the compiler is "
            "first probed"),
    Setting("cpu_devices", "PLAIT_CPU_DEVICES", _parse_int, 1,
            "how many devices pmap splits this process's cores into (plait.distributed)"),
    Setting("collective_timeout", "PLAIT_COLLECTIVE_TIMEOUT", _parse_float, 120.0,
            "seconds a pmap replica waits at a collective for the others (local replicas "
            "or MPI processes) before raising DistributedError"),
    Setting("opencl_device", "PLAIT_OPENCL_DEVICE", _parse_str, "",
            "the OpenCL device the opencl backend uses: a case-insensitive part of "
            "'<platform> <device>' (default: the first GPU, else the first device)"),
    Setting("opencl_build_options", "PLAIT_OPENCL_BUILD_OPTIONS", _parse_str, "",
            "extra OpenCL C build options, read at each build (e.g. -cl-opt-disable: "
            "PoCL compiles several times faster, its kernels run slower)"),
)

_BY_NAME = {s.name: s for s in SETTINGS}


class Config:
    """The settings object: ``plait.config.log_compiles = True`` etc. (see :data:`SETTINGS`)."""

    def __init__(self):
        for s in SETTINGS:
            setattr(self, s.name, s.parse(os.environ.get(s.env, ""), s.env, s.default))

    def resolved_backend(self) -> str:
        """The backend ``jit`` uses: ``auto`` becomes ``native`` or ``interp``."""
        if self.backend != "auto":
            return self.backend
        from plait.codegen.toolchain import find_toolchain
        if find_toolchain() is not None:
            return "native"
        _warn_no_compiler()
        return "interp"

    def update(self, name: str, value) -> None:
        """Set a setting by name (like ``jax.config.update``)."""
        name = _ALIASES.get(name, name)
        if name not in _BY_NAME:
            raise AttributeError(f"plait.config has no setting {name!r}; the settings are "
                                 f"{', '.join(sorted(_BY_NAME))}")
        setattr(self, name, value)

    def describe(self) -> str:
        """Every setting, its variable, its current value and what it does (one a line)."""
        return "\n".join(f"{s.name} (${s.env}) = {getattr(self, s.name)!r}: {s.doc}"
                         for s in SETTINGS)

    def kernel_cache_dir(self) -> str:
        """The on-disk kernel cache directory the settings ask for (it may not exist)."""
        return (self.cache_dir or os.environ.get("PLAIT_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME")
            or os.path.join(os.path.expanduser("~"), ".cache"), "plait"))


_ALIASES = {"jax_enable_x64": "x64", "jax_disable_jit": "disable_jit",
            "jax_debug_nans": "debug_nans", "jax_debug_infs": "debug_infs"}

config = Config()


class disable_jit:
    """``with plait.disable_jit(): ...``: ``jit(f)(x)`` runs ``f`` eagerly, op by op, so
    Python ``print`` and a debugger see concrete values (like ``jax.disable_jit``)."""

    def __init__(self, disable: bool = True):
        self.disable = disable

    def __enter__(self):
        self._saved = config.disable_jit
        config.disable_jit = self.disable

    def __exit__(self, *exc):
        config.disable_jit = self._saved


@functools.cache
def _warn_no_compiler() -> None:
    """Warn once per process that jit falls back to the interp backend."""
    import warnings
    warnings.warn("plait: no C compiler found, so jit uses the reference (interp) "
                  "backend, which is slow. Install gcc or clang (or set $CC); "
                  "`python -m plait doctor` shows what plait sees.", stacklevel=3)


# --- the wider environment --------------------------------------------------------------

def c_compiler_env() -> str | None:
    """``$CC``: the C compiler the user asked for, or None."""
    return os.environ.get("CC") or None


def omp_num_threads() -> int | None:
    """The first number of ``$OMP_NUM_THREADS`` when it is a positive integer, else None."""
    n = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(n) if n.isdigit() and int(n) > 0 else None


# Threads that spin briefly, then sleep. libgomp's default spins ~300k rounds, which
# makes every barrier cost a scheduler time slice when the cores are shared (measured: a
# 256^2 matmul at 4 GFLOP/s against 150 with passive waiting, on 2 busy cores; the W6 MLP
# step at 3.7 ms against 0.65 ms with two processes on 2 cores; the W1 MLP grad step at
# 222 ms against 9.6 ms on 2 cores under load 16). Purely passive waiting pays a wake-up
# of tens of microseconds per parallel loop on an idle machine (W6 step 0.81 ms alone);
# a 2000-round spin keeps most of both (0.47 ms alone, 0.84-0.96 ms with two processes).
OPENMP_WAIT_POLICY, OPENMP_SPINCOUNT = "PASSIVE", 2000


def set_openmp_wait_defaults(policy: str = OPENMP_WAIT_POLICY,
                             spincount: int = OPENMP_SPINCOUNT) -> None:
    """Set ``OMP_WAIT_POLICY``/``GOMP_SPINCOUNT`` for libgomp unless the user set them:
    threads that spin briefly, then sleep. libgomp's default spins ~300k rounds, which
    makes every barrier cost a scheduler time slice when the cores are shared (a 256^2
    matmul at 4 GFLOP/s against 150 with passive waiting on 2 busy cores); purely
    passive waiting pays a wake-up of tens of microseconds per parallel loop on an idle
    machine, and a 2000-round spin keeps most of both. libgomp reads them once, when
    the first library linking it loads, so every plait library that links it (kernels,
    the GEMM library, the launch runtime, device pinning) calls this before it loads."""
    os.environ.setdefault("OMP_WAIT_POLICY", policy)
    os.environ.setdefault("GOMP_SPINCOUNT", str(spincount))


# OpenBLAS's worker threads (NumPy's bundled pthreads build) spin 2**28 TSC ticks (about
# 0.1 s) after every parallel BLAS call before they sleep, holding a core plait's kernels
# need: plait's W2 layer took 22 ms right after a NumPy matmul against 11 ms alone on 2
# cores, and 20 threaded 512^2 matmuls cost 469 ms of CPU against 335 ms with a 2**18-tick
# (~0.1 ms) spin. OpenBLAS reads the variable once, when it loads.
OPENBLAS_THREAD_TIMEOUT = 18


def set_openblas_wait_default(timeout: int = OPENBLAS_THREAD_TIMEOUT) -> bool:
    """Set ``OPENBLAS_THREAD_TIMEOUT`` (log2 of the TSC ticks OpenBLAS's idle workers spin
    before they sleep) unless the user set it or its older name ``GOTO_THREAD_TIMEOUT``;
    returns whether plait set it. An OpenBLAS loaded afterwards reads it when it loads;
    one loaded before (``import numpy`` before ``import plait``) reads it only when
    :func:`restart_loaded_openblas` restarts its workers."""
    if "GOTO_THREAD_TIMEOUT" in os.environ or "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return False
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(timeout)
    return True


# The OpenBLAS builds a peer loads: NumPy's and SciPy's wheels (libscipy_openblas64_-*.so),
# older wheels and distributions (libopenblas64_p-r0-*.so, libopenblas.so.0)
_OPENBLAS_LIB = re.compile(r"lib(scipy_)?openblas[^/]*\.so[^/]*$")
# read the environment again, stop the workers, start them: the new ones take the timeout
_OPENBLAS_RESTART = ("openblas_read_env", "blas_thread_shutdown_", "blas_thread_init")


def loaded_openblas() -> list[tuple[str, ctypes.CDLL]]:
    """``(path, library)`` of each OpenBLAS this process has loaded (``[]`` where
    ``/proc/self/maps`` does not exist)."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split(None, 5)[5].strip() for line in f
                            if _OPENBLAS_LIB.search(line.rstrip())})
    except OSError:                 # not Linux: nothing plait can find this way
        return []
    out = []
    for path in paths:
        try:
            out.append((path, ctypes.CDLL(path)))   # loaded: the same library, one more reference
        except OSError:
            continue
    return out


def restart_loaded_openblas() -> list[str]:
    """Restart the worker threads of every OpenBLAS this process already loaded, so they
    take the ``OPENBLAS_THREAD_TIMEOUT`` set since it loaded (OpenBLAS reads its
    environment once, when it loads; its workers then kept the 0.1 s spin). Only while
    this is the process's one Python thread, so no BLAS call can be running; a library
    without the three entry points it calls is left alone. Returns the paths restarted."""
    if threading.active_count() != 1:
        return []
    restarted = []
    for path, lib in loaded_openblas():
        steps = [getattr(lib, name, None) for name in _OPENBLAS_RESTART]
        if None in steps:
            continue
        for step in steps:
            step.restype, step.argtypes = ctypes.c_int, []
            step()
        restarted.append(path)
    return restarted


def malloc_set_by_user() -> bool:
    """Whether the user tuned glibc's malloc thresholds (``GLIBC_TUNABLES`` naming a
    ``glibc.malloc`` tunable, or the ``MALLOC_*_`` variables): plait leaves them as set."""
    return ("glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")
            or any(v in os.environ for v in ("MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_",
                                             "MALLOC_MMAP_THRESHOLD_")))


def launched_by_mpirun() -> bool:
    """Whether an MPI launcher (``mpirun``/``mpiexec`` of Open MPI, MPICH, PMIx) started
    this process: the variables it gives its ranks."""
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"))


def subprocess_env(**overrides: str) -> dict[str, str]:
    """The process environment with ``overrides``, for tools plait runs (the compiler)."""
    return dict(os.environ, **overrides)


def quiet_xla_logs() -> None:
    """Keep XLA's C++ INFO lines (a PJRT client's device count) off stderr: set
    ``TF_CPP_MIN_LOG_LEVEL=1`` unless the user set it, before jaxlib loads (jax sets the
    same default when it is imported)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
