"""Speed of plait's own float32 vector math (``plait/lax/_vecmath_c.py``) against glibc's
libmvec and NumPy: ``y[i] = f(x[i])`` over 2^22 float32.

One shared object, compiled with the native backend's flags, holds two kernel loops per
function, ``plait_{fn}f`` (plait's helper) and libm's ``{fn}f`` with its libmvec SIMD
declaration as the native backend's prelude has it, each an OpenMP ``parallel for``
like a kernel's; NumPy's ``np.{fn}(x, out=y)`` is the third column. The three are timed
in interleaved rounds (:func:`benchmarks.harness.compare`) with OpenMP on 1 thread and
on all cores (NumPy is one thread either way); the table gives milliseconds per call and plait's ratio to each peer (below
1: plait faster). ``--fns exp,log`` picks functions (default: every helper).

Run: ``python -m benchmarks.vecmath_bench [--fns exp,tanh] [--rounds 7]``.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import tempfile

import numpy as np

from benchmarks.harness import compare, table
from plait.codegen import toolchain
from plait.lax import _vecmath_c

N = 1 << 22
#: input range of each function's loop (lo, hi): where its callers spend their time
RANGES = {"exp": (-20.0, 20.0), "log": (1e-3, 1e3), "tanh": (-6.0, 6.0),
          "expm1": (-4.0, 4.0), "log1p": (-0.9, 100.0), "sin": (-100.0, 100.0),
          "cos": (-100.0, 100.0)}

_LOOP = r"""
void bench_%(name)s(const float *restrict x, float *restrict y, long n, int threads) {
  #pragma omp parallel for schedule(static) num_threads(threads)
  for (long i = 0; i < n; i++) y[i] = %(call)s(x[i]);
}
"""


def source(fns) -> str:
    """The C of the benchmark library: ``bench_<fn>_plait`` and ``bench_<fn>_libm`` per
    function in ``fns``."""
    decls = "".join(f'__attribute__((simd("notinbranch"))) extern float {fn}f(float);\n'
                    f'__attribute__((simd("notinbranch"))) extern double {fn}(double);\n'
                    for fn in fns)
    helpers = "".join(dict.fromkeys(c for fn in fns for c in _vecmath_c.HELPERS[fn]))
    loops = "".join(_LOOP % {"name": f"{fn}_{kind}", "call": call}
                    for fn in fns for kind, call in (("plait", f"plait_{fn}f"),
                                                     ("libm", f"{fn}f")))
    return "#include <math.h>\n#include <stdint.h>\n" + decls + helpers + loops


def build(fns, directory: str) -> ctypes.CDLL:
    """``source(fns)`` compiled as the native backend compiles kernels."""
    so = os.path.join(directory, "vecmath_bench.so")
    toolchain.build_shared_object(source(fns), so, toolchain.require_toolchain())
    return ctypes.CDLL(so)


def run(fns, rounds: int = 7) -> str:
    """The benchmark table for functions ``fns``."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        lib = build(fns, d)
        fp = ctypes.POINTER(ctypes.c_float)
        for fn in fns:
            lo, hi = RANGES[fn]
            x = np.random.default_rng(0).uniform(lo, hi, N).astype(np.float32)
            y = np.empty_like(x)
            px, py = x.ctypes.data_as(fp), y.ctypes.data_as(fp)
            for threads in (1, os.cpu_count() or 1):
                cands = {k: (lambda f=getattr(lib, f"bench_{fn}_{k}"), t=threads:
                             f(px, py, ctypes.c_long(N), ctypes.c_int(t)))
                         for k in ("plait", "libm")}
                cands["numpy"] = lambda f=getattr(np, fn): f(x, out=y)
                t = compare(cands, rounds=rounds)
                rows.append([fn, str(threads)] + [f"{1e3 * t[k]:.2f}" for k in cands]
                            + [f"{t['plait'] / t['libm']:.2f}", f"{t['plait'] / t['numpy']:.2f}"])
    return table("float32 vector math over 2^22 elements (ms per call)", rows,
                 ["function", "threads", "plait", "libmvec", "numpy", "plait/libmvec",
                  "plait/numpy"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fns", default=",".join(_vecmath_c.HELPERS))
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print(run(args.fns.split(","), args.rounds))


if __name__ == "__main__":
    main()
