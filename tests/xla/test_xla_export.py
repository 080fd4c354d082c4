"""plait.export: StableHLO artifact, serialize, and a round trip in a fresh process."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402


def _f(w, x):
    return pnp.tanh(x @ w + np.arange(3.0, dtype=np.float32)).sum(axis=0), pnp.argmax(x, 1)


def test_export_call_matches_jit():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    exp = plait.export(_f)(plait.ShapeDtypeStruct((4, 3), np.float32), x)
    assert "func.func public @main" in exp.mlir_module
    assert [s.shape for s in exp.out_specs] == [(3,), (5,)]
    got = exp.call(w, x)
    want = plait.jit(_f, backend="interp")(w, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(plait.errors.PlaitTypeError, match="expected float32"):
        exp.call(w.astype(np.float64), x)
    with pytest.raises(plait.errors.PlaitTypeError, match="cannot be traced"):
        plait.grad(lambda w: exp.call(w, x)[0].sum())(w)


def test_round_trip_in_subprocess(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    blob = plait.export(_f)(w, x).serialize()
    (tmp_path / "f.bin").write_bytes(blob)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np, plait\n"
            "e = plait.export.deserialize(open(sys.argv[1] + '/f.bin', 'rb').read())\n"
            "a, b = e.call(np.load(sys.argv[1] + '/w.npy'), np.load(sys.argv[1] + '/x.npy'))\n"
            "np.save(sys.argv[1] + '/a.npy', a); np.save(sys.argv[1] + '/b.npy', b)\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                   cwd=str(__import__("pathlib").Path(plait.__file__).parent.parent))
    want = plait.jit(_f, backend="interp")(w, x)
    np.testing.assert_allclose(np.load(tmp_path / "a.npy"), want[0], rtol=1e-5)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), want[1])
