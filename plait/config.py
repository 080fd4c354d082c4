"""Run-time settings, read from the environment once and changeable in code.

``PLAIT_BACKEND`` (``auto``: ``native`` when a C compiler is found, else
``interp`` with one warning), ``PLAIT_LOG_COMPILES`` (log every trace and
compile with the reason for the cache miss), ``PLAIT_CHECKS`` (type-check every
graph and verify every pass), ``PLAIT_DUMP_DIR`` (write every stage to files),
``PLAIT_PROFILE`` (native kernels time each block; see ``profile_blocks``),
``PLAIT_MAX_CACHE_ENTRIES`` (entries each in-process cache of compiled code keeps,
least recently used evicted first; default 512),
``PLAIT_CACHE_DIR`` (where compiled kernels are kept; default
``$XDG_CACHE_HOME/plait`` or ``~/.cache/plait``), ``PLAIT_KERNEL_CACHE_SIZE`` (how many
loaded kernel libraries the in-memory index keeps, least recently used dropped first).
``PLAIT_X64`` (``0``: float32 mode, JAX's defaults: Python floats and default dtypes
are float32, ints int32, complex complex64; ``jax_enable_x64`` is accepted as the name),
``PLAIT_DISABLE_JIT`` (``jit(f)`` calls ``f`` eagerly, op by op; also ``disable_jit()``),
``PLAIT_DEBUG_NANS``/``PLAIT_DEBUG_INFS`` (a NaN/infinity produced by an eager op or a
jitted function raises ``PlaitFloatingPointError`` naming the primitive and the line).
``PLAIT_CPU_DEVICES`` (how many devices ``pmap`` splits the cores into; default 1),
``PLAIT_COLLECTIVE_TIMEOUT`` (seconds a replica waits at a collective for the others
before raising ``DistributedError``; default 120).
"""
from __future__ import annotations

import os


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _int(name: str, default: int) -> int:
    v = os.environ.get(name, "").strip()
    try:
        return max(int(v), 1) if v else default
    except ValueError:
        import warnings
        warnings.warn(f"plait: ${name}={v!r} is not an integer; using {default}", stacklevel=3)
        return default


class Config:
    """The settings object: ``plait.config.log_compiles = True`` etc."""

    def __init__(self):
        self.backend: str = os.environ.get("PLAIT_BACKEND", "auto")
        self.log_compiles: bool = _flag("PLAIT_LOG_COMPILES")
        self.checks: bool = _flag("PLAIT_CHECKS")
        self.dump_dir: str | None = os.environ.get("PLAIT_DUMP_DIR") or None
        self.profile: bool = _flag("PLAIT_PROFILE")   # native kernels time their blocks
        self.max_cache_entries: int = _int("PLAIT_MAX_CACHE_ENTRIES", 512)   # see plait.lru
        # None: $PLAIT_CACHE_DIR, read at each compile, else the XDG/home default
        self.cache_dir: str | None = None
        self.kernel_cache_size: int = _int("PLAIT_KERNEL_CACHE_SIZE", 256)
        self.disable_jit: bool = _flag("PLAIT_DISABLE_JIT")
        self.debug_nans: bool = _flag("PLAIT_DEBUG_NANS")   # see plait.runtime.nan_check
        self.debug_infs: bool = _flag("PLAIT_DEBUG_INFS")
        # pmap's CPU devices: the cores split into this many groups (plait.distributed)
        self.cpu_devices: int = _int("PLAIT_CPU_DEVICES", 1)
        self.collective_timeout: float = float(os.environ.get("PLAIT_COLLECTIVE_TIMEOUT",
                                                              "") or 120.0)
        # False: float32 mode (JAX's defaults; docs/numpy-differences.md). Set it at
        # startup: functions already traced keep the dtypes they were traced with
        self.x64: bool = os.environ.get("PLAIT_X64", "1").strip().lower() not in (
            "0", "false", "no")

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
        if not hasattr(self, name):
            raise AttributeError(f"plait.config has no setting {name!r}")
        setattr(self, name, value)


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


_WARNED: list = []


def _warn_no_compiler() -> None:
    if not _WARNED:
        import warnings
        _WARNED.append(True)
        warnings.warn("plait: no C compiler found, so jit uses the reference (interp) "
                      "backend, which is slow. Install gcc or clang (or set $CC); "
                      "`python -m plait doctor` shows what plait sees.", stacklevel=3)
