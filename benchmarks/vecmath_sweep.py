"""Exhaustive float32 accuracy sweep of plait's own vector math
(``src/plait/lax/_vecmath_c.py``): every one of the 2^32 float32 bit patterns.

The helpers are compiled exactly as kernels compile them (the same C, ``-O3
-march=native -ffp-contract=fast -fno-math-errno -fno-trapping-math``; the test loop is
auto-vectorized like a kernel loop) and each result is compared with glibc's float64 function of the
same input, vectorized (glibc's libmvec double variants, documented within 4 double
ulp: 2^-27 of a float32 ulp, so the float64 value stands for the exact one); the
error is ``|y - ref| / ulp32(ref)`` (the float32 ulp at ``ref``, subnormal spacing
below 2^-126), maximized over finite references. Special values must match exactly: NaN where the reference is NaN, the
same infinities, the same zeros and signs where the reference rounds to 0 or ±inf.

``python -m benchmarks.vecmath_sweep [--write]`` prints one table row per function
(a few CPU minutes each); ``--write`` replaces the table in
``docs/numpy-differences.md`` (between the ``vecmath-sweep`` markers). ``--lanes``
instead checks that each 16-lane AVX-512 form (``_vecmath_c.V16_C``) returns the scalar
helper's bits for every input (NaN for NaN), and prints the mismatches per function.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

from plait.lax import _vecmath_c

FUNCS = tuple(_vecmath_c.HELPERS)
DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "docs", "numpy-differences.md")

_DRIVER = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
__attribute__((simd("notinbranch"))) extern double %(fn)s(double);
%(helpers)s
#define BLOCK 65536
static void apply(const float *restrict x, float *restrict y, double *restrict ref) {
  for (int i = 0; i < BLOCK; i++) y[i] = plait_%(fn)sf(x[i]);
  for (int i = 0; i < BLOCK; i++) ref[i] = %(fn)s((double)x[i]);
}
static double ulp32(double r) {              /* float32 spacing at |r| */
  int e; frexp(r, &e);                       /* |r| in [2^(e-1), 2^e) */
  if (e - 1 < -126) e = -125;
  return ldexp(1.0, e - 1 - 23);
}
int main(void) {
  double worst = 0; uint32_t worst_bits = 0; long long bad_special = 0, not_rounded = 0;
  #pragma omp parallel
  {
    float *x = malloc(sizeof(float) * BLOCK), *y = malloc(sizeof(float) * BLOCK);
    double *refs = malloc(sizeof(double) * BLOCK);
    double my_worst = 0; uint32_t my_bits = 0; long long my_bad = 0, my_nr = 0;
    #pragma omp for schedule(dynamic)
    for (long long b = 0; b < (1LL << 32) / BLOCK; b++) {
      for (int i = 0; i < BLOCK; i++) { uint32_t u = (uint32_t)(b * BLOCK + i); memcpy(&x[i], &u, 4); }
      apply(x, y, refs);
      for (int i = 0; i < BLOCK; i++) {
        double ref = refs[i];
        float rf = (float)ref;
        if (isnan(ref) || isinf(rf) || rf == 0) {
          int ok = isnan(ref) ? isnan(y[i]) : (y[i] == rf && signbit(y[i]) == signbit(rf));
          if (!ok) { my_bad++; if (my_bad < 5) fprintf(stderr, "special %%a: got %%a want %%a\n", x[i], y[i], rf); }
          continue;
        }
        if (y[i] != rf) my_nr++;
        double err = fabs((double)y[i] - ref) / ulp32(ref);
        if (err > my_worst) { my_worst = err; my_bits = (uint32_t)(b * BLOCK + i); }
      }
    }
    #pragma omp critical
    {
      if (my_worst > worst) { worst = my_worst; worst_bits = my_bits; }
      bad_special += my_bad; not_rounded += my_nr;
    }
    free(x); free(y); free(refs);
  }
  float wx; memcpy(&wx, &worst_bits, 4);
  printf("%%.4f %%a %%lld %%lld\n", worst, wx, not_rounded, bad_special);
  return 0;
}
"""


def sweep(fn: str) -> tuple[float, str, int, int]:
    """(max ulp error, input where it occurs, results not correctly rounded, special-value
    mismatches) of ``plait_{fn}f`` over all float32 inputs."""
    helpers = "".join(_vecmath_c.HELPERS[fn])
    worst, at, nr, bad = _run(_DRIVER % {"helpers": helpers, "fn": fn}).split()
    return float(worst), at, int(nr), int(bad)


_LANES = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
%(helpers)s
int main(void) {
#if PLAIT_V16
  long long bad = 0;
  #pragma omp parallel for reduction(+:bad) schedule(dynamic)
  for (long long b = 0; b < (1LL << 32) / 16; b++) {
    float x[16], y[16];
    for (int i = 0; i < 16; i++) { uint32_t u = (uint32_t)(b * 16 + i); memcpy(&x[i], &u, 4); }
    plait_v16_store(y, plait_%(fn)sf_v16(plait_v16_load(x)));
    for (int i = 0; i < 16; i++) {
      float s = plait_%(fn)sf(x[i]);
      if (memcmp(&s, &y[i], 4) != 0 && !(isnan(s) && isnan(y[i]))) bad++;
    }
  }
  printf("%%lld\n", bad);
  return 0;
#else
  fprintf(stderr, "the compiler does not target AVX-512: no 16-lane forms\n");
  return 1;
#endif
}
"""


def _run(src: str) -> str:
    """Compile ``src`` as kernels are compiled (with OpenMP) and run it; its stdout."""
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "sweep.c"), os.path.join(d, "sweep")
        with open(c, "w") as fh:
            fh.write(src)
        subprocess.run(["cc", "-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno",
                        "-fno-trapping-math", "-fopenmp", "-std=gnu11", c, "-o", exe, "-lm"], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True)
    sys.stderr.write(out.stderr)
    return out.stdout


def lanes(fn: str) -> int:
    """Inputs where ``plait_{fn}f_v16`` and ``plait_{fn}f`` differ (NaN equals NaN)."""
    return int(_run(_LANES % {"helpers": "".join(_vecmath_c.HELPERS[fn]), "fn": fn}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update the docs table")
    ap.add_argument("--only", default=",".join(FUNCS))
    ap.add_argument("--lanes", action="store_true", help="16-lane forms against the scalar ones")
    args = ap.parse_args()
    if args.lanes:
        for fn in _vecmath_c.V16:
            print(f"{fn}: {lanes(fn)} of 2^32 inputs differ between 16 lanes and scalar", flush=True)
        return
    rows = ["| function (float32) | max error (ulp) | at x | not correctly rounded "
            "(of 2^32) | special-value mismatches |", "| --- | --- | --- | --- | --- |"]
    for fn in args.only.split(","):
        worst, at, nr, bad = sweep(fn)
        rows.append(f"| `{fn}` | {worst:.3f} | `{at}` | {nr} | {bad} |")
        print(rows[-1], flush=True)
    if args.write:
        text = open(DOC).read()
        table = "\n".join(rows)
        new = re.sub(r"(<!-- vecmath-sweep -->\n).*?(<!-- /vecmath-sweep -->)",
                     lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)
        with open(DOC, "w") as fh:
            fh.write(new)


if __name__ == "__main__":
    main()
