"""The C toolchain: find a compiler at run time, probe OpenMP, build shared objects.

Shared objects are cached on disk by :mod:`plait.runtime.kernel_cache`, keyed by
a hash of the source, the compiler's identity and the flags.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass

from plait.errors import CompileError


@dataclass(frozen=True)
class Toolchain:
    """A working C compiler and the flags plait uses with it.

    ``python_include`` is the CPython header directory when it exists: kernels are
    then also exposed as a CPython extension module (cheaper to call than ctypes).
    """

    cc: str
    version: str
    openmp: bool
    flags: tuple
    python_include: str | None = None

    def identity(self) -> str:
        """What a cached object depends on besides its source."""
        return f"{self.cc}|{self.version}|{' '.join(self.flags)}"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def _candidates() -> list[str]:
    env = os.environ.get("CC")
    names = ([env] if env else []) + ["cc", "gcc", "clang"]
    return [p for p in (shutil.which(n) for n in names) if p]


def _probe_openmp(cc: str) -> bool:
    src = "#include <omp.h>\nint f(void){int s=0;\n#pragma omp parallel for reduction(+:s)\nfor(int i=0;i<4;i++)s+=i;return s+omp_get_max_threads();}\n"
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "t.c")
        with open(c, "w") as f:
            f.write(src)
        r = _run([cc, "-fopenmp", "-shared", "-fPIC", c, "-o", os.path.join(d, "t.so")])
        return r.returncode == 0


@functools.lru_cache(maxsize=None)
def find_toolchain() -> Toolchain | None:
    """The first working C compiler (``$CC``, ``cc``, ``gcc``, ``clang``), or None."""
    for cc in _candidates():
        try:
            r = _run([cc, "--version"])
        except (OSError, subprocess.SubprocessError):
            continue
        if r.returncode != 0:
            continue
        version = r.stdout.splitlines()[0] if r.stdout else "unknown"
        openmp = _probe_openmp(cc)
        flags = ["-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno",
                 "-fwrapv", "-shared", "-fPIC", "-std=c11"]
        if openmp:
            flags.append("-fopenmp")
        flags += os.environ.get("PLAIT_EXTRA_CFLAGS", "").split()   # e.g. -fsanitize=address
        inc = sysconfig.get_paths().get("include")
        py_inc = inc if inc and os.path.exists(os.path.join(inc, "Python.h")) else None
        if py_inc:
            flags.append(f"-I{py_inc}")
        return Toolchain(cc, version, openmp, tuple(flags), py_inc)
    return None


def require_toolchain() -> Toolchain:
    """A toolchain, or a CompileError that says how to get one."""
    tc = find_toolchain()
    if tc is None:
        raise CompileError(
            "no C compiler found (looked for $CC, cc, gcc, clang). Install one "
            "(Debian/Ubuntu: `apt-get install gcc`; macOS: `xcode-select --install`) or use "
            "the reference backend: plait.config.backend = 'interp'.", locate=False)
    return tc


def build_shared_object(source: str, out_path: str, tc: Toolchain,
                        extra_flags: tuple = ()) -> None:
    """Compile C ``source`` into the shared object ``out_path`` (raises CompileError)."""
    d = os.path.dirname(out_path)
    fd, c_path = tempfile.mkstemp(suffix=".c", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        r = _run([tc.cc, *tc.flags, *extra_flags, c_path, "-o", out_path, "-lm"])
        if r.returncode != 0:
            raise CompileError(f"the C compiler failed on generated code (a plait bug; "
                               f"please report it):\n{r.stderr[-4000:]}", locate=False)
    finally:
        os.unlink(c_path)
