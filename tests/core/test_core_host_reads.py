"""Hardware knowledge lives in the target (issue 16): partitioning, the Stripe passes and
codegen take a ``Target``; only a short reviewed list of modules reads the host (cores,
SIMD width, caches) by calling the detectors, each for a reason given here."""
import ast
import pathlib

import plait

SRC = pathlib.Path(plait.__file__).parent
# calls that read the machine this process runs on
READERS = {"host_target", "cpu_info", "cpu_count", "process_cpu_count", "sched_getaffinity"}
ALLOWED = {
    "runtime/cpuinfo.py": "detects the host's facts",
    "backends/native/target.py": "fills a CPU config with the detected facts (the target)",
    "backends/native/compile.py": "the native backend picks its target; CPU flags key the cache",
    "backends/native/gemm.py": "library(): the host's when no target is given (tests); "
                               "CPU flags key the library's cache entry",
    "backends/native/fft.py": "CPU flags key the FFT library's cache entry",
    "backends/native/openmp.py": "threads a parallel loop may use when it runs",
    "runtime/blas.py": "cores NumPy's BLAS may use while plait's compilers run",
    "distributed/devices.py": "CPU devices are groups of the process's cores",
    "profiler/peak.py": "the arithmetic peak the profiler's summary compares with",
    "cli/doctor.py": "prints the detected facts",
    "explorer/collect.py": "shows the native backend's pipeline for the host",
}


def _host_reads() -> dict:
    out: dict = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in READERS:
                    out.setdefault(rel, []).append(f"{name} (line {node.lineno})")
    return out


def test_only_reviewed_modules_read_the_host():
    reads = _host_reads()
    extra = {m: calls for m, calls in reads.items() if m not in ALLOWED}
    assert not extra, (f"these modules read the host; take the facts from the Target "
                       f"instead, or add the module to ALLOWED with its reason: {extra}")
    # the compile path proper never appears: passes, codegen, partitioning, opencl
    for m in reads:
        assert not m.startswith(("stripe/", "codegen/", "backends/opencl/", "tile/")), m
        assert m not in ("backends/native/partition.py", "backends/native/cprogram.py"), m


def test_the_reviewed_list_has_no_stale_entries():
    reads = _host_reads()
    assert set(ALLOWED) <= set(reads), sorted(set(ALLOWED) - set(reads))
