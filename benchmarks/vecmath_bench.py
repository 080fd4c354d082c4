"""Speed of plait's own float32 vector math (``plait/lax/_vecmath_c.py``) against glibc's
libmvec, as a kernel loop: ``y[i] = f(x[i])`` over 2^22 float32 with an OpenMP
``parallel for`` (2 threads), compiled with the native backend's flags.

``python -m benchmarks.vecmath_bench DIR`` writes two executables per function,
``DIR/<fn>_plait`` and ``DIR/<fn>_libm``; each fills its input (a typical range of the
function, fixed seed) and runs the loop ``REPS`` times. Time them as whole processes
with any process timer (``/usr/bin/time``, ``hyperfine``) and compare the pair: the
setup is the same in both, so the difference is the loop's. ``--fns exp,log`` picks
functions (default: every helper).
"""
from __future__ import annotations

import argparse
import os
import subprocess

from plait.lax import _vecmath_c

N = 1 << 22
REPS = 200
#: input range of each function's loop (lo, hi): where its callers spend their time
RANGES = {"exp": (-20.0, 20.0), "log": (1e-3, 1e3), "tanh": (-6.0, 6.0),
          "expm1": (-4.0, 4.0), "log1p": (-0.9, 100.0), "sin": (-100.0, 100.0),
          "cos": (-100.0, 100.0)}

_MAIN = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
%(decls)s
%(helpers)s
int main(void) {
  float *x = aligned_alloc(64, sizeof(float) * %(n)d), *y = aligned_alloc(64, sizeof(float) * %(n)d);
  uint32_t s = 12345u;
  for (int i = 0; i < %(n)d; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = %(lo)a + (%(hi)a - %(lo)a) * (float)(s >> 8) * 0x1p-24f;
  }
  double acc = 0;
  for (int r = 0; r < %(reps)d; r++) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < %(n)d; i++) y[i] = %(call)s(x[i]);
    acc += y[r];
  }
  printf("%%g\n", acc);
  return 0;
}
"""

FLAGS = ["-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno", "-fwrapv",
         "-fopenmp", "-std=c11"]


def source(fn: str, own: bool) -> str:
    """The C of one benchmark executable: ``plait_{fn}f`` (``own``) or libm's ``{fn}f``
    with its libmvec SIMD declaration, as the native backend's prelude has it."""
    decl = (f'__attribute__((simd("notinbranch"))) extern float {fn}f(float);\n'
            f'__attribute__((simd("notinbranch"))) extern double {fn}(double);\n')
    lo, hi = RANGES[fn]
    return _MAIN % {"decls": decl, "helpers": "".join(_vecmath_c.HELPERS[fn]), "n": N,
                    "reps": REPS, "lo": lo, "hi": hi,
                    "call": f"plait_{fn}f" if own else f"{fn}f"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--fns", default=",".join(_vecmath_c.HELPERS))
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    for fn in args.fns.split(","):
        for own in (True, False):
            exe = os.path.join(args.dir, f"{fn}_{'plait' if own else 'libm'}")
            with open(exe + ".c", "w") as fh:
                fh.write(source(fn, own))
            subprocess.run(["cc", *FLAGS, exe + ".c", "-o", exe, "-lm"], check=True)
            print(exe)


if __name__ == "__main__":
    main()
