"""``lu``, ``solve`` and ``tridiagonal_solve`` on the xla backend: jaxlib's LAPACK
getrf/trsm/gtsv custom calls, checked against the interp backend (the same LAPACK
routines through SciPy, so equal up to a few ulps) and against NumPy/SciPy's own
functions, for batches, every dtype, empty shapes, singular systems and gradients;
and an exported module that runs in a fresh process."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jaxlib")
scipy_linalg = pytest.importorskip("scipy.linalg")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.lax import linalg as la  # noqa: E402

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# the same LAPACK routine on both sides: a few ulps at most
_ULPS = 8


def _tol(dt) -> float:
    return _ULPS * float(np.finfo(dt).eps)


def _rand(rng, shape, dt):
    x = rng.normal(size=shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dt)


def _both(f, *args, rtol):
    """``f`` on the xla and the interp backends: same dtypes and shapes, values within
    ``rtol`` (inf/NaN in the same places); the xla results."""
    got = plait.jit(f, backend="xla")(*args)
    want = plait.jit(f, backend="interp")(*args)
    gl, wl = plait.tree_util.tree_leaves(got), plait.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    return [np.asarray(g) for g in gl]


def _stablehlo(f, *args) -> str:
    return plait.jit(f, backend="xla").lower(*args).as_text(stage="stablehlo")


def _solve(a, b):
    return la.solve_p.bind(a, b)


@pytest.mark.parametrize("dt", DTYPES)
def test_custom_call_targets(dt):
    rng = np.random.default_rng(0)
    letter = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[dt]
    a, b = _rand(rng, (2, 3, 3), dt), _rand(rng, (2, 3, 2), dt)
    assert f"lapack_{letter}getrf_ffi" in _stablehlo(la.lu, a)
    text = _stablehlo(_solve, a, b)
    assert f"lapack_{letter}getrf_ffi" in text and text.count(f"lapack_{letter}trsm_ffi") == 2
    v = _rand(rng, (2, 3), dt)
    assert f"lapack_{letter}gtsv_ffi" in _stablehlo(la.tridiagonal_solve, v, v, v, b)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (6, 3), (2, 3, 6), (1, 1)])
def test_lu_matches_interp_and_scipy(dt, shape):
    rng = np.random.default_rng(1)
    a = _rand(rng, shape, dt)
    lu, piv, perm = _both(la.lu, a, rtol=_tol(dt))
    assert piv.dtype == perm.dtype == np.int32
    m, n = shape[-2:]
    k = min(m, n)
    for i in np.ndindex(*shape[:-2]):
        p, ll, u = scipy_linalg.lu(a[i])
        want_lu, want_piv = scipy_linalg.lu_factor(a[i]) if m == n else (None, None)
        if m == n:
            np.testing.assert_allclose(lu[i], want_lu, rtol=_tol(dt), atol=_tol(dt))
            np.testing.assert_array_equal(piv[i], want_piv)
        # reconstruction: a[perm] == L U, and SciPy's own factors
        lower = np.tril(lu[i], -1)[:, :k] + np.eye(m, k, dtype=dt)
        upper = np.triu(lu[i])[:k, :]
        scale = 50 * float(np.finfo(dt).eps)
        np.testing.assert_allclose(lower @ upper, a[i][perm[i]], rtol=scale, atol=scale)
        np.testing.assert_allclose(lower, ll, rtol=scale, atol=scale)
        np.testing.assert_allclose(upper, u, rtol=scale, atol=scale)
        np.testing.assert_array_equal(p[perm[i], np.arange(m)], np.ones(m))


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (3, 0), (2, 0, 4), (2, 4, 0)])
def test_lu_empty(shape):
    a = np.zeros(shape, np.float64)
    lu, piv, perm = _both(la.lu, a, rtol=0)
    m = shape[-2]
    np.testing.assert_array_equal(perm, np.broadcast_to(np.arange(m), shape[:-2] + (m,)))
    assert lu.shape == shape and piv.shape == shape[:-2] + (min(shape[-2:]),)


def test_lu_singular_is_factored_not_nan():
    """getrf reports a zero pivot (info > 0) but its factors stand, as in the impl."""
    a = np.array([[[1., 2, 3], [2, 4, 6], [1, 0, 1]], np.zeros((3, 3)),
                  [[0., 1, 2], [0, 3, 4], [0, 5, 6]]])
    lu, piv, perm = _both(la.lu, a, rtol=0)
    assert np.isfinite(lu).all()
    for i in range(3):
        want_lu, want_piv = scipy_linalg.lu_factor(a[i], check_finite=False)
        np.testing.assert_array_equal(lu[i], want_lu)
        np.testing.assert_array_equal(piv[i], want_piv)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [((4, 4), (4, 1)), ((2, 3, 5, 5), (2, 3, 5, 3)),
                                   ((3, 6, 6), (3, 6, 12)), ((1, 1), (1, 2))])
def test_solve_matches_interp_and_numpy(dt, shape):
    rng = np.random.default_rng(2)
    n = shape[0][-1]
    a = _rand(rng, shape[0], dt) + (n * np.eye(n)).astype(dt)
    b = _rand(rng, shape[1], dt)
    x, = _both(_solve, a, b, rtol=_tol(dt))
    scale = 100 * float(np.finfo(dt).eps)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=scale, atol=scale)
    np.testing.assert_allclose(a @ x, b, rtol=scale, atol=scale)
    # the user-facing entry point stages the same primitive under jit
    y, = _both(pnp.linalg.solve, a, b, rtol=_tol(dt))
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("shapes", [((0, 0), (0, 2)), ((2, 0, 0), (2, 0, 3)),
                                    ((3, 3), (3, 0)), ((0, 2, 2), (0, 2, 1))])
def test_solve_empty(shapes):
    x, = _both(_solve, np.ones(shapes[0]), np.ones(shapes[1]), rtol=0)
    assert x.shape == shapes[1]


def test_solve_singular_matches_interp():
    """A zero pivot gives IEEE inf/NaN, in the same places as the impl's substitution;
    the non-singular entry of the batch is solved."""
    a = np.array([[[1., 2, 3], [2, 4, 6], [1, 0, 1]], [[1., 2, 3], [4, 5, 6], [7, 8, 9]],
                  np.zeros((3, 3)), [[2., 1, 0], [1, 3, 1], [0, 1, 4]]])
    for b in (np.ones((4, 3, 2)), np.zeros((4, 3, 2)),
              np.random.default_rng(3).normal(size=(4, 3, 11))):
        for dt in (np.float32, np.float64):
            x, = _both(_solve, a.astype(dt), b.astype(dt), rtol=_tol(dt))
            assert not np.isfinite(x[:3]).all()
            np.testing.assert_allclose(x[3], np.linalg.solve(a[3], b[3]), rtol=1e-5)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("m,k,batch", [(6, 3, (2,)), (2, 1, ()), (5, 2, (2, 3)), (1, 4, (3,))])
def test_tridiagonal_solve_matches_interp_and_numpy(dt, m, k, batch):
    rng = np.random.default_rng(4)
    dl, du = _rand(rng, batch + (m,), dt), _rand(rng, batch + (m,), dt)
    d = _rand(rng, batch + (m,), dt) + 4
    b = _rand(rng, batch + (m, k), dt)
    # gtsv reads neither dl[0] nor du[-1]: non-zero garbage there changes nothing
    x, = _both(la.tridiagonal_solve, dl, d, du, b, rtol=_tol(dt))
    t = np.zeros(batch + (m, m), dt)
    i = np.arange(m)
    t[..., i, i] = d
    t[..., i[1:], i[:-1]] = dl[..., 1:]
    t[..., i[:-1], i[1:]] = du[..., :-1]
    scale = 100 * float(np.finfo(dt).eps)
    np.testing.assert_allclose(x, np.linalg.solve(t, b), rtol=scale, atol=scale)
    np.testing.assert_allclose(t @ x, b, rtol=scale, atol=scale)


@pytest.mark.parametrize("m,k", [(0, 2), (3, 0)])
def test_tridiagonal_solve_empty(m, k):
    v = np.ones((2, m))
    x, = _both(la.tridiagonal_solve, v, v, v, np.ones((2, m, k)), rtol=0)
    assert x.shape == (2, m, k)


def test_tridiagonal_solve_singular_matches_interp():
    """A singular system (gtsv's info > 0) is NaN in its batch entry only; a 1x1 system
    with d == 0 is b / 0 (inf, or NaN for 0 / 0), as in the impl."""
    dl = np.array([[0., 1, 1], [5, 0, 0], [0, 1, 0]])
    d = np.array([[1., 1, 1], [0, 0, 0], [2, 2, 2]])
    du = np.array([[1., 1, 0], [0, 0, 7], [1, 1, 0]])
    x, = _both(la.tridiagonal_solve, dl, d, du, np.ones((3, 3, 2)), rtol=1e-15)
    assert np.isnan(x[1]).all() and np.isfinite(x[[0, 2]]).all()
    z = np.zeros((2, 1))
    x1, = _both(la.tridiagonal_solve, z, np.array([[0.], [2.]]), z,
                np.array([[[1., 0.]], [[1., 0.]]]), rtol=1e-15)
    np.testing.assert_array_equal(x1[0, 0], [np.inf, np.nan])
    np.testing.assert_array_equal(x1[1, 0], [0.5, 0.])


def test_gradients_match_interp():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(2, 4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(2, 4, 3))
    _both(plait.grad(lambda a: pnp.sum(la.lu(a)[0] ** 2)), a, rtol=1e-12)
    _both(plait.grad(lambda a, b: pnp.sum(pnp.sin(_solve(a, b))), argnums=(0, 1)), a, b,
          rtol=1e-12)
    dl, d, du = rng.normal(size=(3, 2, 4))
    d = d + 4
    _both(plait.grad(lambda dl, d, du, b: pnp.sum(la.tridiagonal_solve(dl, d, du, b) ** 3),
                     argnums=(0, 1, 2, 3)), dl, d, du, b, rtol=1e-12)


def test_vmap_matches_interp():
    rng = np.random.default_rng(6)
    a = rng.normal(size=(3, 5, 5)).astype(np.float32)
    b = rng.normal(size=(5, 2)).astype(np.float32)
    _both(plait.vmap(lambda a: _solve(a, b)), a, rtol=_tol(np.float32))
    _both(plait.vmap(la.lu), a, rtol=_tol(np.float32))


def test_export_runs_in_a_fresh_process(tmp_path):
    """One exported module with all three custom calls runs in a new interpreter (which
    registers jaxlib's LAPACK targets itself)."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(4, 2))
    v = rng.normal(size=(3, 4))

    def f(a, b, v):
        lu, _, perm = la.lu(a)
        return lu, perm, _solve(a, b), la.tridiagonal_solve(v[0], v[1] + 4, v[2], b)
    want = [np.asarray(w) for w in plait.jit(f, backend="interp")(a, b, v)]
    exp = plait.export(plait.jit(f, backend="xla"))(a, b, v)
    path = tmp_path / "lu.bin"
    path.write_bytes(exp.serialize())
    np.savez(tmp_path / "args.npz", a=a, b=b, v=v)
    code = ("import numpy as np, plait, sys; "
            "e = plait.export.deserialize(open(sys.argv[1], 'rb').read()); "
            "z = np.load(sys.argv[2]); "
            "print(repr([np.asarray(r).tolist() for r in e.call(z['a'], z['b'], z['v'])]))")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "args.npz")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = eval(out.stdout.strip().splitlines()[-1])
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-14, atol=1e-14)
