"""plait.export(format="c"): the native program as a standalone C library, built with
``cc`` and called from a small C driver (no Python in that process); programs with a
host step refuse naming it."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import PlaitValueError

W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 7     # an embedded constant

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.h"
static void *load(const char *path, size_t n) {
  void *p = malloc(n); FILE *f = fopen(path, "rb");
  if (!f || fread(p, 1, n, f) != n) { fprintf(stderr, "read %s\n", path); exit(2); }
  fclose(f); return p;
}
static void save(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb"); fwrite(p, 1, n, f); fclose(f);
}
int main(void) {
  const void *ins[2] = {load("x.bin", 5 * 4 * 4), load("b.bin", 3 * 4)};
  float o0[3]; int32_t o1[20]; double o2[5];
  void *outs[3] = {o0, o1, o2};
  int64_t rc = model(ins, outs);
  if (rc) { fprintf(stderr, "status %lld\n", (long long)rc); return 1; }
  save("o0.bin", o0, sizeof o0); save("o1.bin", o1, sizeof o1); save("o2.bin", o2, sizeof o2);
  return 0;
}
"""


def model(x, b):
    h = pnp.tanh(x @ W + b)
    return (h.sum(axis=0), pnp.floor(x * 3).astype(np.int32),
            pnp.cumsum(pnp.exp(x.astype(np.float64)).max(axis=1)))


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_c_library_built_and_called_from_c(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    lib = plait.export(model, format="c")(plait.ShapeDtypeStruct((5, 4), np.float32), b)
    assert "int64_t model(const void *const *ins, void *const *outs);" in lib.header
    assert "int32[5, 4]" in lib.header
    lib.write(str(tmp_path))
    (tmp_path / "driver.c").write_text(DRIVER)
    x.tofile(tmp_path / "x.bin")
    b.tofile(tmp_path / "b.bin")
    # the library as its build line makes it, then a driver linked against it
    subprocess.run(lib.build_line(), shell=True, check=True, cwd=tmp_path)
    omp = ["-fopenmp"] if lib.openmp else []
    subprocess.run(["cc", "driver.c", "-L.", "-lmodel", "-Wl,-rpath,.", *omp, "-lm",
                    "-o", "driver"], check=True, cwd=tmp_path)
    subprocess.run(["./driver"], check=True, cwd=tmp_path)
    syms = subprocess.run(["nm", "-D", "--defined-only", "libmodel.so"], cwd=tmp_path,
                          capture_output=True, text=True).stdout.split()
    assert "model" in syms and not any(s.startswith("k") and s[1:2].isdigit() for s in syms)
    o0 = np.fromfile(tmp_path / "o0.bin", np.float32)
    o1 = np.fromfile(tmp_path / "o1.bin", np.int32).reshape(5, 4)
    o2 = np.fromfile(tmp_path / "o2.bin", np.float64)
    np.testing.assert_allclose(o0, np.tanh(x @ W + b).sum(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(o1, np.floor(x * 3).astype(np.int32))
    np.testing.assert_allclose(o2, np.cumsum(np.exp(x.astype(np.float64)).max(axis=1)),
                               rtol=1e-12)


def test_host_steps_refuse_naming_the_step():
    def f(x):
        y = plait.pure_callback(lambda v: np.asarray(v) * 2,
                                plait.ShapeDtypeStruct((3,), np.float32), x)
        return y + 1
    with pytest.raises(PlaitValueError, match="'pure_callback'.*runs on the host"):
        plait.export(f, format="c")(np.ones(3, np.float32))
    pytest.importorskip("scipy")
    with pytest.raises(PlaitValueError, match="LAPACK"):
        plait.export(pnp.linalg.cholesky, format="c")(np.eye(3, dtype=np.float32) * 2)
    with pytest.raises(PlaitValueError, match="format must be"):
        plait.export(f, format="hlo")
