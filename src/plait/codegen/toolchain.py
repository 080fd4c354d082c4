"""The C toolchain: find a compiler at run time, probe OpenMP, build shared objects.

Shared objects are cached on disk by :mod:`plait.runtime.kernel_cache`, keyed by
a hash of the source, the compiler's identity and the flags.

Generated code compiles with or without OpenMP: without it the pragmas are ignored
and kernels run on one core (one :class:`~plait.errors.ToolchainWarning` says so).
The compiler runs with ``TMPDIR`` set to the directory it builds in, so a full system
temporary directory does not break builds, and in the C locale, so its messages can be
read. A failed build is told apart by cause: the machine (full or read-only disk,
compiler killed: :class:`~plait.errors.BuildEnvironmentError`) or the generated code
(a plait bug), and the compiler's first error line leads the message.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass

from plait.config import c_compiler_env, config, subprocess_env
from plait.errors import BuildEnvironmentError, CompileError, ToolchainWarning, warn_user

TIMEOUT_S = 300

# compiler messages that mean the directory being written to is the problem
_STORAGE_ERRORS = ("no space left on device", "read-only file system", "disk quota exceeded",
                   "permission denied", "cannot create temporary file", "file too large")


@dataclass(frozen=True)
class Toolchain:
    """A working C compiler and the flags plait uses with it.

    ``python_include`` is the CPython header directory when it exists: kernels are
    then also exposed as a CPython extension module (cheaper to call than ctypes).
    ``openmp_note`` says why OpenMP is off when the probe could not tell (the
    environment, not the compiler, failed it).
    """

    cc: str
    version: str
    openmp: bool
    flags: tuple
    python_include: str | None = None
    openmp_note: str | None = None

    def identity(self) -> str:
        """What a cached object depends on besides its source."""
        return f"{self.cc}|{self.version}|{' '.join(self.flags)}"


class _Running:
    """How many compiler processes :func:`_run` has started and not yet seen end."""

    def __init__(self):
        self.lock = threading.Lock()
        self.count = 0

    def add(self, n: int) -> None:
        with self.lock:
            self.count += n


_RUNNING = _Running()


def compilers_running() -> int:
    """How many C compiler processes plait is running now, on any thread (background
    builds of tiered execution and of the GEMM library included): each holds a core."""
    return _RUNNING.count


def _run(cmd: list[str], tmpdir: str | None = None) -> subprocess.CompletedProcess:
    """Run a compiler command in the C locale, its temporary files under ``tmpdir``."""
    env = subprocess_env(LC_ALL="C")
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    _RUNNING.add(1)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    finally:
        _RUNNING.add(-1)


def first_error_line(stderr: str) -> str:
    """The line of a compiler's output that names its first error (else its first line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        low = ln.lower()
        if "error" in low or "fatal" in low or "no space" in low or "cannot" in low:
            return ln[:400]
    return lines[0][:400] if lines else "(no output)"


def _storage_problem(stderr: str, directory: str) -> bool:
    """Whether a failed build was stopped by the directory it writes to."""
    low = stderr.lower()
    if any(s in low for s in _STORAGE_ERRORS):
        return True
    try:
        st = os.statvfs(directory)
        return st.f_bavail * st.f_frsize < (1 << 20)
    except OSError:
        return True


def _candidates() -> list[str]:
    env = c_compiler_env()
    names = ([env] if env else []) + ["cc", "gcc", "clang"]
    return [p for p in (shutil.which(n) for n in names) if p]


_OMP_PROBE = ("#include <omp.h>\nint f(void){int s=0;\n#pragma omp parallel for reduction(+:s)\n"
              "for(int i=0;i<4;i++)s+=i;return s+omp_get_max_threads();}\n")
_PLAIN_PROBE = "int f(void){return 0;}\n"


def _probe_openmp(cc: str) -> tuple[bool, str | None]:
    """``(OpenMP works, why the probe could not tell)``. The second item is set when even
    a plain C file fails to build: then the environment, not the compiler, is at fault."""
    try:
        d = tempfile.mkdtemp(prefix="plait-probe-")
    except OSError as e:
        return False, f"no temporary directory to probe in ({e})"
    try:
        r = None
        for src, flags in ((_OMP_PROBE, ["-fopenmp"]), (_PLAIN_PROBE, [])):
            c, so = os.path.join(d, "probe.c"), os.path.join(d, "probe.so")
            try:
                with open(c, "w") as f:
                    f.write(src)
                r = _run([cc, *flags, "-shared", "-fPIC", c, "-o", so], tmpdir=d)
            except OSError as e:
                return False, f"could not write the probe in {d} ({e})"
            except subprocess.TimeoutExpired:
                return False, f"the compiler did not finish within {TIMEOUT_S} s"
            if r.returncode == 0:
                return src is _OMP_PROBE, None
        return False, f"the compiler could not build a trivial file: {first_error_line(r.stderr)}"
    finally:
        shutil.rmtree(d, ignore_errors=True)


class _Probe:
    """What the process knows of its compiler: the answer of a conclusive probe, or one
    kept only for ``RETRY_PROBE_S`` seconds after an inconclusive one."""

    __slots__ = ("found", "toolchain", "provisional_at", "warned_no_openmp")

    def __init__(self):
        self.found = False                          # a conclusive probe answered
        self.toolchain: Toolchain | None = None
        self.provisional_at: float | None = None    # time of an inconclusive probe
        self.warned_no_openmp = False


RETRY_PROBE_S = 30.0
_PROBE = _Probe()
_FIND_LOCK = threading.Lock()


def find_toolchain() -> Toolchain | None:
    """The first working C compiler (``$CC``, ``cc``, ``gcc``, ``clang``), or None.

    The answer is kept for the process, except when the environment made the OpenMP
    probe inconclusive: then it is kept ``RETRY_PROBE_S`` seconds and probed again."""
    probe = _PROBE
    if probe.found:
        return probe.toolchain
    with _FIND_LOCK:
        if probe.found:
            return probe.toolchain
        if (probe.provisional_at is not None
                and time.monotonic() - probe.provisional_at < RETRY_PROBE_S):
            return probe.toolchain
        tc = _find()
        probe.toolchain = tc
        if tc is None or tc.openmp_note is None:
            probe.found, probe.provisional_at = True, None
        else:
            probe.provisional_at = time.monotonic()
    if tc is not None and not tc.openmp and not probe.warned_no_openmp:
        probe.warned_no_openmp = True
        if tc.openmp_note:
            msg = (f"plait: the OpenMP probe of the C compiler {tc.cc} could not run "
                   f"({tc.openmp_note}), so kernels are built without OpenMP and run serially "
                   f"on one core for now. Free space in the temporary directory (TMPDIR) or "
                   f"point TMPDIR at a writable one.")
        else:
            msg = (f"plait: the C compiler {tc.cc} does not support OpenMP (-fopenmp), so "
                   f"native kernels run serially on one core. Install OpenMP support (gcc: "
                   f"libgomp; clang: libomp) or set $CC to a compiler that has it; "
                   f"`python -m plait doctor` shows what plait sees.")
        warn_user(msg, ToolchainWarning)
    return tc


# The conclusive answers of earlier processes' probes (version line, OpenMP), by the
# compiler driver's resolved path, size and modification time: a process then starts
# without the two compiler runs (~30 ms, most of a warm first call's own work). A build
# the compiler rejects removes the file, so a stale answer costs one failed build.
PROBE_FILE = "toolchain-probe.json"


def _stamp(cc: str) -> str | None:
    try:
        real = os.path.realpath(cc)
        st = os.stat(real)
    except OSError:
        return None
    return f"{real}|{st.st_size}|{st.st_mtime_ns}"


def _probe_path() -> str:
    return os.path.join(config.kernel_cache_dir(), PROBE_FILE)


def _read_probes() -> dict:
    try:
        with open(_probe_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember_probe(stamp: str, version: str, openmp: bool) -> None:
    """Add one answer to the probe file (written whole, then renamed into place)."""
    data = _read_probes()
    data[stamp] = [version, openmp]
    path = _probe_path()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".probe-", dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:          # a read-only cache: the next process probes again
        pass


def forget_probes() -> None:
    """Remove the remembered probe answers (the next process probes its compiler)."""
    try:
        os.unlink(_probe_path())
    except OSError:
        pass


def _version_and_openmp(cc: str) -> tuple[str, bool, str | None] | None:
    """``(version line, OpenMP works, inconclusive-probe note)`` of ``cc``, remembered
    across processes when conclusive; None when ``cc --version`` fails."""
    stamp = _stamp(cc)
    known = _read_probes().get(stamp) if stamp else None
    if isinstance(known, list) and len(known) == 2:
        return str(known[0]), bool(known[1]), None
    try:
        r = _run([cc, "--version"])
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    version = r.stdout.splitlines()[0] if r.stdout else "unknown"
    openmp, note = _probe_openmp(cc)
    if note is None and stamp:
        _remember_probe(stamp, version, openmp)
    return version, openmp, note


def _find() -> Toolchain | None:
    for cc in _candidates():
        found = _version_and_openmp(cc)
        if found is None:
            continue
        version, openmp, note = found
        # -fno-trapping-math: plait never reads the floating-point exception flags, and
        # without it GCC cannot if-convert a select whose arm holds a float operation
        # (it may trap) on targets without masked vector instructions (AVX2), so
        # where/maximum/clip kernels stayed scalar there; results are unchanged
        flags = ["-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno",
                 "-fno-trapping-math", "-fwrapv", "-shared", "-fPIC", "-std=c11"]
        if openmp:
            flags.append("-fopenmp")
        flags += config.extra_cflags.split()     # e.g. -fsanitize=address
        inc = sysconfig.get_paths().get("include")
        py_inc = inc if inc and os.path.exists(os.path.join(inc, "Python.h")) else None
        if py_inc:
            flags.append(f"-I{py_inc}")
        return Toolchain(cc, version, openmp, tuple(flags), py_inc, note)
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


def build_shared_object(source: "str | list[str]", out_path: str, tc: Toolchain,
                        extra_flags: tuple = ()) -> None:
    """Compile C ``source`` into the shared object ``out_path``.

    ``source`` may be a list of translation units: they are compiled to objects at the
    same time, one compiler process each (a large program's build then takes about its
    largest unit's time on a machine with that many cores), and linked together.
    The C files and the compiler's temporary files go next to ``out_path``. Raises
    :class:`~plait.errors.BuildEnvironmentError` when the machine stopped the build,
    ``OSError`` when a source cannot be written, and CompileError when the compiler
    rejected the code."""
    d = os.path.dirname(out_path) or "."
    units = [source] if isinstance(source, str) else list(source)
    sources: list[str] = []
    objs: list[str] = []
    try:
        for text in units:
            fd, c_path = tempfile.mkstemp(suffix=".c", dir=d)
            sources.append(c_path)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        flags = [tc.cc, *tc.flags, *extra_flags]
        if len(sources) == 1:
            _compile_step(flags + [sources[0], "-o", out_path, "-lm"], tc, d)
            return
        objs = [c[:-2] + ".o" for c in sources]
        with concurrent.futures.ThreadPoolExecutor(len(objs)) as pool:
            for f in [pool.submit(_compile_step, flags + ["-c", c, "-o", o], tc, d)
                      for c, o in zip(sources, objs)]:
                f.result()
        _compile_step(flags + [*objs, "-o", out_path, "-lm"], tc, d)
    finally:
        for path in sources + objs:
            try:
                os.unlink(path)
            except OSError:     # a build input or an object never written
                pass


def _compile_step(cmd: list[str], tc: Toolchain, d: str) -> None:
    """Run one compiler command, raising plait's errors for its failures."""
    try:
        r = _run(cmd, tmpdir=d)
    except subprocess.TimeoutExpired:
        raise BuildEnvironmentError(
            f"the C compiler {tc.cc} did not finish within {TIMEOUT_S} s; the machine may "
            f"be overloaded. Try again, or use plait.config.backend = 'interp'.") from None
    except OSError as e:
        raise BuildEnvironmentError(
            f"the C compiler {tc.cc} could not be run ({e}). Check that it is still "
            f"installed, or set $CC.") from None
    if r.returncode != 0:
        _raise_build_failure(r, tc, d)


def _raise_build_failure(r: subprocess.CompletedProcess, tc: Toolchain, d: str):
    forget_probes()          # the compiler may have changed since its answer was kept
    first = first_error_line(r.stderr)
    if r.returncode < 0:
        raise BuildEnvironmentError(
            f"the C compiler {tc.cc} was killed by signal {-r.returncode} (out of memory?): "
            f"{first}. Free memory and try again, or use plait.config.backend = 'interp'.",
            cause=f"compiler killed by signal {-r.returncode}")
    if _storage_problem(r.stderr, d):
        raise BuildEnvironmentError(
            f"the C compiler {tc.cc} could not write its output in {d}: {first}. Free disk "
            f"space there, or point PLAIT_CACHE_DIR at a writable directory with room.",
            storage=True, cause=first)
    raise CompileError(f"the C compiler {tc.cc} rejected generated code (a plait bug; please "
                       f"report it with this message): {first}\n{r.stderr[-4000:]}",
                       locate=False)
