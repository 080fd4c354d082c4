"""plait.numpy.linalg's decompositions and solvers against NumPy and identities:
stacks, 0x0 and 1x1, float32/float64/complex, named results, errors, jit, vmap, grad."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import LinAlgError, PlaitTypeError
from plait.test_util import check_grads

LA = pnp.linalg
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SHAPES = ((3, 3), (2, 4, 4), (1, 1), (0, 0), (2, 0, 0))


def _rand(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a.astype(dt)


def _general(shape, dt, seed=0):
    n = shape[-1]
    return (_rand(shape, dt, seed) + n * np.eye(n)).astype(dt)


def _hpd(shape, dt, seed=0):
    a = _rand(shape, dt, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


def _tol(dt):
    return 2e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10


def _close(got, want, dt, scale=1.0):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=_tol(dt) * scale, atol=_tol(dt) * scale)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dt", DTYPES)
def test_solves_and_determinants_against_numpy(dt):
    for shape in SHAPES:
        a = _general(shape, dt)
        b = _rand(shape[:-1] + (2,), dt, 1)
        x = LA.solve(a, b)
        assert np.asarray(x).dtype == dt
        _close(x, np.linalg.solve(a, b), dt)
        _close(LA.inv(a), np.linalg.inv(a), dt)
        _close(LA.det(a), np.linalg.det(a), dt, 10)
        sign, logdet = LA.slogdet(a)
        ws, wl = np.linalg.slogdet(a)
        _close(sign, ws, dt)
        _close(logdet, wl, dt)
        assert np.asarray(logdet).dtype == wl.dtype and np.asarray(sign).dtype == ws.dtype
    # a vector right-hand side, and broadcasting stacks
    a = _general((2, 1, 3, 3), dt)
    _close(LA.solve(a[0, 0], np.ones(3, dt)), np.linalg.solve(a[0, 0], np.ones(3, dt)), dt)
    b = _rand((4, 3, 2), dt)
    _close(LA.solve(a, b), np.linalg.solve(a, b), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_factorizations_against_numpy_and_identities(dt):
    for shape in SHAPES:
        n = shape[-1]
        eye = np.broadcast_to(np.eye(n), shape)
        s = _hpd(shape, dt)
        L = np.asarray(LA.cholesky(s))
        _close(L, np.linalg.cholesky(s) if s.size else s, dt)
        _close(L @ _H(L), s, dt, 10)
        _close(LA.cholesky(s, upper=True), _H(L), dt)
        w, v = LA.eigh(s)
        w, v = np.asarray(w), np.asarray(v)
        assert w.dtype == np.linalg.eigh(s)[0].dtype
        _close(w, np.linalg.eigvalsh(s), dt, 10)
        _close((v * w[..., None, :]) @ _H(v), s, dt, 10)
        _close(_H(v) @ v, eye, dt)
        _close(LA.eigvalsh(s, UPLO="U"), np.linalg.eigvalsh(s, UPLO="U"), dt, 10)
        g = _general(shape, dt)
        ew, ev = LA.eig(g)
        ew, ev = np.asarray(ew), np.asarray(ev)
        assert ew.dtype == np.result_type(dt, np.complex64)
        _close(g @ ev, ev * ew[..., None, :], dt, 10)
        _close(np.sort_complex(np.asarray(LA.eigvals(g)).ravel()),
               np.sort_complex(np.linalg.eigvals(g).astype(ew.dtype).ravel()), dt, 10)
    for shape in ((4, 3), (3, 4), (2, 5, 3), (3, 3), (0, 2), (1, 1)):
        a = _rand(shape, dt)
        for mode in ("reduced", "complete"):
            q, r = LA.qr(a, mode=mode)
            wq, wr = np.linalg.qr(a, mode=mode)
            _close(q, wq, dt)
            _close(r, wr, dt)
            _close(np.asarray(q) @ np.asarray(r), a, dt, 10)
        _close(LA.qr(a, mode="r"), np.linalg.qr(a, mode="r"), dt)
        for full in (True, False):
            u, sv, vh = LA.svd(a, full_matrices=full)
            wu, ws, wvh = np.linalg.svd(a, full_matrices=full)
            _close(sv, ws, dt)
            k = min(shape[-2:])
            u, vh = np.asarray(u), np.asarray(vh)
            assert u.shape == wu.shape and vh.shape == wvh.shape
            _close((u[..., :, :k] * np.asarray(sv)[..., None, :]) @ vh[..., :k, :], a, dt, 10)
        _close(LA.svdvals(a), np.linalg.svd(a, compute_uv=False), dt)
        _close(LA.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dt)
        _close(LA.pinv(a), np.linalg.pinv(a), dt, 10)
        if a.size:
            np.testing.assert_array_equal(np.asarray(LA.matrix_rank(a)),
                                          np.linalg.matrix_rank(a))


def test_named_results():
    a = _hpd((3, 3), np.float64)
    assert LA.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert type(LA.eigh(a)).__name__ == "EighResult"
    assert LA.eig(a)._fields == ("eigenvalues", "eigenvectors")
    assert LA.svd(a)._fields == ("U", "S", "Vh")
    assert LA.slogdet(a)._fields == ("sign", "logabsdet")
    assert LA.qr(a)._fields == ("Q", "R")


def test_norms_cond_rank_lstsq_tensor_ops():
    rng = np.random.default_rng(3)
    m = rng.standard_normal((2, 3, 4))
    for o in (2, -2, "nuc"):
        np.testing.assert_allclose(np.asarray(LA.norm(m[0], o)), np.linalg.norm(m[0], o))
        np.testing.assert_allclose(np.asarray(LA.norm(m, o, axis=(2, 0))),
                                   np.linalg.norm(m, o, axis=(2, 0)))
        np.testing.assert_allclose(np.asarray(LA.matrix_norm(m, ord=o, keepdims=True)),
                                   np.linalg.matrix_norm(m, ord=o, keepdims=True))
    sq = rng.standard_normal((2, 4, 4))
    for p in (None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"):
        np.testing.assert_allclose(np.asarray(LA.cond(sq, p)), np.linalg.cond(sq, p),
                                   rtol=1e-9)
    low = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))
    assert int(LA.matrix_rank(low)) == 2
    assert int(LA.matrix_rank(np.ones(3))) == 1 and int(LA.matrix_rank(np.zeros(3))) == 0
    assert int(LA.matrix_rank(low, tol=1e-3)) == np.linalg.matrix_rank(low, tol=1e-3)
    assert int(LA.matrix_rank(low, rtol=0.5)) == np.linalg.matrix_rank(low, rtol=0.5)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    for bb in (b, b[:, 0]):
        got, want = LA.lstsq(a, bb), np.linalg.lstsq(a, bb)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
    x = LA.lstsq(low.T, b[:4])[0]                 # rank deficient, M < N: minimum norm
    np.testing.assert_allclose(np.asarray(x), np.linalg.lstsq(low.T, b[:4])[0], atol=1e-10)
    t = rng.standard_normal((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3
    tb = rng.standard_normal((2, 3))
    np.testing.assert_allclose(np.asarray(LA.tensorsolve(t, tb)), np.linalg.tensorsolve(t, tb))
    t4 = rng.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(np.asarray(LA.tensorinv(t4, 2)), np.linalg.tensorinv(t4, 2))
    u, v = rng.standard_normal((4, 3)), rng.standard_normal((3,))
    np.testing.assert_allclose(np.asarray(LA.cross(u, v)), np.linalg.cross(u, v))
    np.testing.assert_allclose(np.asarray(LA.cross(u.T, u.T[:, ::-1], axis=0)),
                               np.linalg.cross(u.T, u.T[:, ::-1], axis=0))
    ints = np.array([[2, 1], [1, 3]])
    assert np.asarray(LA.inv(ints)).dtype == np.float64
    np.testing.assert_allclose(np.asarray(LA.det(ints)), np.linalg.det(ints))


def test_errors_name_the_user_line():
    with pytest.raises(LinAlgError, match="Singular matrix") as e:
        LA.solve(np.ones((2, 2)), np.ones(2))
    assert isinstance(e.value, np.linalg.LinAlgError)
    assert "test_numpy_linalg_decomp.py" in str(e.value)
    with pytest.raises(np.linalg.LinAlgError, match="Singular"):
        LA.inv(np.zeros((3, 3)))
    with pytest.raises(LinAlgError, match="square") as e:
        LA.inv(np.ones((2, 3)))
    assert "test_numpy_linalg_decomp.py" in str(e.value)
    with pytest.raises(LinAlgError, match="two-dimensional"):
        LA.det(np.ones(3))
    with pytest.raises(LinAlgError, match="positive definite"):
        LA.cholesky(-np.eye(2))
    with pytest.raises(PlaitTypeError, match="float16"):
        LA.inv(np.eye(2, dtype=np.float16))
    # singular determinants and slogdet are values, not errors (as in NumPy)
    assert float(LA.det(np.ones((2, 2)))) == 0.0
    sign, logdet = LA.slogdet(np.ones((2, 2)))
    assert float(sign) == 0.0 and float(logdet) == -np.inf


def test_under_jit_many_functions_one_compile():
    """Every function staged in one jitted program, on both backends, against eager;
    a singular solve under jit gives inf/NaN (values are unknown when it is built)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    s = a @ np.swapaxes(a, -1, -2)
    r = rng.standard_normal((5, 3))

    def core(a, s, r):
        return [LA.solve(a, s), LA.inv(a), LA.det(a), *LA.slogdet(a), LA.cholesky(s),
                *LA.eigh(s), *LA.qr(r), *LA.svd(r, full_matrices=False), LA.pinv(r),
                LA.matrix_rank(r), LA.norm(r, 2), LA.cond(a), *LA.lstsq(r, r[:, :2])[:2],
                *LA.eig(a)]

    def f(a, s, r):
        return core(a, s, r) + [LA.solve(pnp.zeros((3, 3)) * a[0, :3, :3], pnp.ones(3))]
    want = core(a, s, r)
    for backend in ("interp", "native"):
        got = plait.jit(f, backend=backend)(a, s, r)
        for g, w in zip(got[:-1], want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9)
        assert not np.all(np.isfinite(np.asarray(got[-1])))


def test_vmap_matches_loop():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((3, 4))
    got = plait.vmap(lambda a, b: LA.solve(a, b))(a, b)
    want = np.stack([np.linalg.solve(a[i], b[i]) for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    got = plait.vmap(LA.det, in_axes=2)(np.moveaxis(a, 0, 2))
    np.testing.assert_allclose(np.asarray(got), np.linalg.det(a), rtol=1e-10)
    got = plait.vmap(lambda s: LA.eigh(s @ s.T).eigenvalues)(a)
    np.testing.assert_allclose(np.asarray(got), np.linalg.eigvalsh(a @ a.transpose(0, 2, 1)),
                               rtol=1e-10)


def test_grads_of_numpy_functions():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    s = a @ a.T
    b = rng.standard_normal((3, 2))
    check_grads(LA.solve, (a, b), order=2)
    check_grads(LA.inv, (a,), order=1)
    check_grads(LA.det, (a,), order=2)
    check_grads(lambda x: LA.slogdet(x).logabsdet, (a,), order=2)
    check_grads(lambda x: LA.norm(x, 2), (a,), order=1)
    check_grads(lambda x: LA.norm(x, "nuc"), (a,), order=1)
    check_grads(lambda x: LA.eigvalsh(x @ x.T), (a,), order=1)
    check_grads(lambda x: LA.pinv(x), (rng.standard_normal((4, 3)),), order=1)
    check_grads(lambda x: LA.cholesky(x @ x.T), (a,), order=1)
    # d/dA log det A = A^{-T}
    g = plait.grad(lambda x: LA.slogdet(x).logabsdet)(s)
    np.testing.assert_allclose(np.asarray(g), np.linalg.inv(s).T, rtol=1e-9)


def test_gaussian_process_marginal_likelihood_grad():
    """A model-level use: GP negative log marginal likelihood via cholesky and
    triangular solves, its gradient against finite differences."""
    rng = np.random.default_rng(8)
    x = np.sort(rng.uniform(0, 5, 12))
    y = np.sin(x) + 0.1 * rng.standard_normal(12)

    def nll(log_ell):
        d = x[:, None] - x[None, :]
        k = pnp.exp(-0.5 * d ** 2 / pnp.exp(2 * log_ell)) + 0.1 * pnp.eye(12)
        L = LA.cholesky(k)
        alpha = plait.lax.linalg.triangular_solve(L, y[:, None], left_side=True, lower=True)
        return 0.5 * pnp.sum(alpha ** 2) + pnp.sum(pnp.log(pnp.diagonal(L)))
    check_grads(nll, (np.float64(0.2),), order=2)
    k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / np.exp(0.4)) + 0.1 * np.eye(12)
    want = 0.5 * y @ np.linalg.solve(k, y) + 0.5 * np.linalg.slogdet(k)[1]
    np.testing.assert_allclose(float(plait.jit(nll)(0.2)), want, rtol=1e-10)


def test_without_scipy(tmp_path):
    """SciPy is optional: solves and decompositions fall back to NumPy (the native
    backend to host steps); what needs SciPy says so."""
    import os
    import subprocess
    import sys
    code = """
import sys; sys.modules["scipy"] = None
import numpy as np, plait, plait.numpy as pnp
from plait.lax import linalg as L
from plait.errors import PlaitValueError
rng = np.random.default_rng(0)
a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4); b = rng.standard_normal((2, 4, 3))
np.testing.assert_allclose(np.asarray(pnp.linalg.solve(a, b)), np.linalg.solve(a, b), rtol=1e-10)
f = plait.jit(pnp.linalg.solve, backend="native")
np.testing.assert_allclose(np.asarray(f(a, b)), np.linalg.solve(a, b), rtol=1e-10)
assert "host: solve" in f.lower(a, b).compile().as_text("kernels")
np.testing.assert_allclose(np.asarray(pnp.linalg.det(a)), np.linalg.det(a), rtol=1e-10)
try:
    L.tridiagonal_solve(np.ones(3), 4 * np.ones(3), np.ones(3), np.ones((3, 1)))
    raise SystemExit("no error")
except PlaitValueError as e:
    assert "install scipy" in str(e)
print("ok")
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PLAIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(root, "src"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
