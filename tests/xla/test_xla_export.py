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


def _loss(call, x):
    return lambda w: (call(w, x)[0] ** 2).sum()


def test_exported_vjp_differentiates_call():
    rng = np.random.default_rng(2)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    exp = plait.export(_f)(w, x)
    want = plait.jit(plait.grad(_loss(_f, x)), backend="interp")(w)
    g = plait.grad(_loss(exp.call, x))(w)
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)
    gj = plait.jit(plait.grad(_loss(exp.call, x)))(w)       # a host step under jit
    np.testing.assert_allclose(gj, want, rtol=1e-4, atol=1e-6)
    ws = np.stack([w, 2 * w])                                # vmap: one call per element
    np.testing.assert_allclose(plait.vmap(plait.grad(_loss(exp.call, x)))(ws),
                               np.stack([want, plait.grad(_loss(_f, x))(2 * w)]),
                               rtol=1e-4, atol=1e-5)
    v = exp.vjp()      # (w, x, ct0, ct1) -> (ct_w, ct_x); integer output's ct ignored
    assert [s.shape for s in v.in_specs] == [(4, 3), (5, 4), (3,), (5,)]
    assert [s.shape for s in v.out_specs] == [(4, 3), (5, 4)]


def test_deserialized_without_vjp_says_how():
    x = np.ones((5, 4), np.float32)
    w = np.ones((4, 3), np.float32)
    e = plait.export.deserialize(plait.export(_f)(w, x).serialize())
    assert not e.has_vjp()
    np.testing.assert_allclose(plait.jit(lambda w: e.call(w, x)[0])(w), _f(w, x)[0],
                               rtol=1e-5)              # traced (not differentiated) is fine
    with pytest.raises(plait.errors.PlaitTypeError, match="vjp_order=1"):
        plait.grad(_loss(e.call, x))(w)
    with pytest.raises(plait.errors.PlaitValueError, match="vjp_order=1"):
        e.vjp()
    with pytest.raises(plait.errors.PlaitValueError, match="vjp_order"):
        plait.export(_f)(w, x).serialize(vjp_order=-1)


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


def test_vjp_round_trip_in_subprocess(tmp_path):
    """A fresh process differentiates the deserialized function twice (vjp_order=2)."""
    rng = np.random.default_rng(3)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    (tmp_path / "f.bin").write_bytes(plait.export(_f)(w, x).serialize(vjp_order=2))
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np, plait\n"
            "d = sys.argv[1]\n"
            "e = plait.export.deserialize(open(d + '/f.bin', 'rb').read())\n"
            "w, x = np.load(d + '/w.npy'), np.load(d + '/x.npy')\n"
            "L = lambda w: (e.call(w, x)[0] ** 2).sum()\n"
            "np.save(d + '/g.npy', plait.grad(L)(w))\n"
            "np.save(d + '/h.npy', plait.grad(lambda w: plait.grad(L)(w).sum())(w))\n"
            "assert not e.vjp().vjp().has_vjp()\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                   cwd=str(__import__("pathlib").Path(plait.__file__).parent.parent))
    L = _loss(_f, x)
    want_g = plait.jit(plait.grad(L), backend="interp")(w)
    want_h = plait.jit(plait.grad(lambda w: plait.grad(L)(w).sum()), backend="interp")(w)
    np.testing.assert_allclose(np.load(tmp_path / "g.npy"), want_g, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "h.npy"), want_h, rtol=1e-4, atol=1e-5)
