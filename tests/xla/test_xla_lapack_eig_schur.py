"""eig and schur on the xla backend: jaxlib's LAPACK geev/gees custom calls, checked
against the reference backend (the same LAPACK routines through NumPy/SciPy, so the
results agree to a few ulps), against NumPy/SciPy directly, by reconstruction, on
batches, every dtype and parameter combination, empty and failing inputs, under vmap
and grad, and through an export round trip in a fresh process."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")
scipy_linalg = pytest.importorskip("scipy.linalg")

from lapack_helpers import call_in_fresh_process, random_matrices  # noqa: E402
import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.errors import PlaitValueError  # noqa: E402
from plait.lax import linalg as la  # noqa: E402

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
FLAGS = ((False, False), (False, True), (True, False), (True, True))


def _ulps(dtype) -> float:
    """A tolerance of a few dozen ulps of ``dtype``'s precision."""
    return 64 * float(np.finfo(dtype).eps)


def _run(f, *args):
    """``f`` on the xla and the interp backend: (xla outputs, interp outputs) as arrays."""
    got = plait.jit(f, backend="xla")(*args)
    want = plait.jit(f, backend="interp")(*args)
    leaves = plait.tree_util.tree_leaves
    return ([np.asarray(g) for g in leaves(got)], [np.asarray(w) for w in leaves(want)])


def _assert_same(got, want, dtype):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=_ulps(dtype), atol=_ulps(dtype))


def _eig(left, right):
    return lambda x: la.eig_p.bind(x, compute_left_eigenvectors=left,
                                   compute_right_eigenvectors=right)


def _schur(vecs):
    return lambda x: la.schur_p.bind(x, compute_schur_vectors=vecs)


def _stablehlo(f, x) -> str:
    return plait.jit(f, backend="xla").lower(x).as_text(stage="stablehlo")


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dtype,left,target", [
    (np.float64, False, "lapack_dgeev_ffi"), (np.float64, True, "lapack_dgeev_ffi"),
    (np.complex128, True, "lapack_zgeev_ffi"), (np.float32, True, "lapack_sgeev_ffi"),
    (np.complex64, True, "lapack_cgeev_ffi"),
    # without left eigenvectors the impl is NumPy's eig, which runs LAPACK in double
    (np.float32, False, "lapack_dgeev_ffi"), (np.complex64, False, "lapack_zgeev_ffi")])
def test_eig_lowers_to_the_geev_custom_call(dtype, left, target):
    text = _stablehlo(_eig(left, True), random_matrices((2, 4, 4), dtype))
    assert "stablehlo.custom_call" in text and target in text


@pytest.mark.parametrize("dtype,letter", [(np.float32, "s"), (np.float64, "d"),
                                          (np.complex64, "c"), (np.complex128, "z")])
def test_schur_lowers_to_the_gees_custom_call(dtype, letter):
    for vecs in (True, False):
        assert f"lapack_{letter}gees_ffi" in _stablehlo(_schur(vecs), random_matrices((3, 3), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left,right", FLAGS)
def test_eig_matches_interp_numpy_and_reconstructs(dtype, left, right):
    """Every dtype and flag combination on a (2, 3) batch: the same values as interp
    (to a few ulps), as the library eig the impl calls (SciPy's with left eigenvectors,
    in the input's precision; NumPy's otherwise, in double: a single-precision
    eigenvector's sign or phase depends on which), and ``a vr = vr diag(w)``,
    ``vlᴴ a = diag(w) vlᴴ`` with unit-norm eigenvectors."""
    a = random_matrices((2, 3, 5, 5), dtype, seed=1)
    got, want = _run(_eig(left, right), a)
    _assert_same(got, want, dtype)
    c = np.result_type(dtype, np.complex64)
    assert all(g.dtype == c for g in got)
    if left:
        lib = [np.empty(a.shape[:-1], c), np.empty(a.shape, c), np.empty(a.shape, c)]
        for i in np.ndindex(*a.shape[:-2]):
            for out, v in zip(lib, scipy_linalg.eig(a[i], left=True, right=True)):
                out[i] = v
    else:
        lib = list(np.linalg.eig(a))
    lib = lib[:1] + lib[1:2] * left + lib[-1:] * right
    tol = 1e-4 if np.finfo(dtype).bits == 32 else 1e-11
    for g, v in zip(got, lib):
        np.testing.assert_allclose(g, v, rtol=tol, atol=tol)
    w, vecs = got[0], got[1:]
    a128 = a.astype(np.complex128)
    if right:
        vr = vecs[-1]
        np.testing.assert_allclose(a128 @ vr, vr * w[..., None, :], rtol=tol, atol=tol)
        np.testing.assert_allclose(np.linalg.norm(vr, axis=-2), 1, rtol=tol)
    if left:
        vl = vecs[0]
        np.testing.assert_allclose(_H(vl) @ a128, w[..., :, None] * _H(vl), rtol=tol, atol=tol)
        np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, rtol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vecs", (True, False))
def test_schur_matches_interp_scipy_and_reconstructs(dtype, vecs):
    """A (2, 3) batch: the same values as interp (to a few ulps) and SciPy's schur;
    ``z t zᴴ = a`` with ``z`` unitary and ``t`` upper triangular (complex) or upper
    quasi-triangular with 2x2 blocks only for complex pairs (real)."""
    a = random_matrices((2, 3, 6, 6), dtype, seed=2)
    got, want = _run(_schur(vecs), a)
    _assert_same(got, want, dtype)
    assert len(got) == (2 if vecs else 1) and all(g.dtype == np.dtype(dtype) for g in got)
    tol = 1e-4 if np.finfo(dtype).bits == 32 else 1e-11
    kind = "complex" if np.dtype(dtype).kind == "c" else "real"
    t, z = got[0], (got[1] if vecs else None)
    for i in np.ndindex(*a.shape[:-2]):
        ts, zs = scipy_linalg.schur(a[i], output=kind)
        np.testing.assert_allclose(t[i], ts, rtol=tol, atol=tol)
        if vecs:
            np.testing.assert_allclose(z[i], zs, rtol=tol, atol=tol)
    below = np.tril(np.ones((6, 6), bool), -1 if kind == "complex" else -2)
    assert np.all(t[..., below] == 0)
    if kind == "real":      # a nonzero subdiagonal entry starts a 2x2 block: no two in a row
        sub = np.diagonal(t, -1, -2, -1) != 0
        assert not np.any(sub[..., 1:] & sub[..., :-1])
    if vecs:
        np.testing.assert_allclose(z @ t @ _H(z), a, rtol=tol, atol=tol)
        np.testing.assert_allclose(_H(z) @ z, np.broadcast_to(np.eye(6), z.shape), atol=tol)


def test_eig_of_real_input_pairs_conjugate_eigenvectors():
    """A real matrix with complex eigenvalues: jaxlib's kernel assembles LAPACK's real
    (re, im) column pairs into conjugate complex eigenvectors, as NumPy does."""
    rot = np.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    q, _ = np.linalg.qr(random_matrices((3, 3), np.float64, seed=3))
    a = q @ rot @ q.T
    got, want = _run(_eig(True, True), a)
    _assert_same(got, want, np.float64)
    w, vl, vr = got
    np.testing.assert_allclose(np.sort_complex(w), [-2j, 2j, 3], atol=1e-12)
    pair = np.flatnonzero(w.imag != 0)
    np.testing.assert_allclose(vr[:, pair[1]], np.conj(vr[:, pair[0]]), atol=1e-14)
    np.testing.assert_allclose(vl[:, pair[1]], np.conj(vl[:, pair[0]]), atol=1e-14)


@pytest.mark.parametrize("dtype", (np.float64, np.complex64))
def test_singular_and_defective_inputs_match_interp(dtype):
    """A singular matrix (zero eigenvalue), a defective Jordan block (parallel
    eigenvectors) and the zero matrix: the same results as interp."""
    jordan = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]])
    singular = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5])
    a = np.stack([jordan, singular, np.zeros((3, 3))]).astype(dtype)
    for f in [_eig(*flags) for flags in FLAGS] + [_schur(True), _schur(False)]:
        got, want = _run(f, a)
        _assert_same(got, want, dtype)
    w = _run(_eig(False, False), a)[0][0]
    np.testing.assert_allclose(w[2], 0, atol=0)
    np.testing.assert_allclose(np.abs(w[1]).min(), 0, atol=1e-5)


@pytest.mark.parametrize("shape", ((0, 0), (2, 0, 0), (0, 3, 3)))
def test_empty_matrices_match_interp(shape):
    for dtype in (np.float32, np.complex128):
        a = np.zeros(shape, dtype)
        for f in [_eig(*flags) for flags in FLAGS] + [_schur(True), _schur(False)]:
            got, want = _run(f, a)
            _assert_same(got, want, dtype)


def _nonfinite_batch():
    """Three matrices: a finite one, one with a NaN, one with an infinity."""
    a = random_matrices((3, 4, 4), np.float64, seed=4)
    a[1, 2, 0] = np.nan
    a[2, 0, 3] = np.inf
    return a


def _xla(f, a) -> list:
    return [np.asarray(g) for g in plait.jit(f, backend="xla")(a)]


def _interp(f, a) -> list:
    return [np.asarray(w) for w in plait.jit(f, backend="interp")(a)]


@pytest.mark.parametrize("left,right", FLAGS)
def test_eig_of_a_nonfinite_batch_entry_is_nan(left, right):
    """geev on a non-finite matrix reports failure (``info != 0``): that batch entry
    is NaN on both backends (as eigh's failures are), the finite entry equals interp's
    result for it alone."""
    a, f = _nonfinite_batch(), _eig(left, right)
    got, want = _xla(f, a), _interp(f, a)
    assert all(np.isnan(g[1:]).all() for g in got)
    assert all(np.isnan(w[1:]).all() for w in want)
    _assert_same([g[:1] for g in got], _interp(f, a[:1]), np.float64)


@pytest.mark.parametrize("vecs", (True, False))
def test_schur_of_a_nonfinite_batch_entry_matches_lapack(vecs):
    """gees fails (``info > 0``) on the NaN matrix: NaN on both backends; it returns
    ``info = 0`` on the infinite one, whose (NaN-ridden) result then equals interp's bit
    for bit, as does the finite entry's."""
    a, f = _nonfinite_batch(), _schur(vecs)
    got, want = _xla(f, a), _interp(f, a)
    assert all(np.isnan(g[1]).all() for g in got)
    assert all(np.isnan(w[1]).all() for w in want)
    for k in (0, 2):
        for g, w in zip(got, _interp(f, a[k:k + 1])):
            np.testing.assert_array_equal(g[k:k + 1], w)


def test_vmap_over_a_middle_axis_matches_interp():
    a = random_matrices((4, 2, 4), np.complex128, seed=5).transpose(1, 0, 2)   # (2, 4, 4)
    b = np.stack([a, a + 1j]).transpose(1, 0, 2, 3)                       # batch axis 1
    for f in (_eig(True, True), _schur(True)):
        got, want = _run(plait.vmap(f, in_axes=1), b)
        _assert_same(got, want, np.complex128)


def _eig_loss(x):
    w, vr = la.eig(x, compute_left_eigenvectors=False)
    return pnp.sum(pnp.real(w) ** 2 - pnp.imag(w) ** 3) + pnp.sum(pnp.real(vr[..., 0, :]))


def _eigvals_loss(x):
    (w,) = _eig(False, False)(x)
    return pnp.sum(pnp.real(w) * pnp.imag(w) + pnp.real(w) ** 3)


@pytest.mark.parametrize("loss", (_eig_loss, _eigvals_loss))
def test_eig_gradient_matches_interp(loss):
    """eig's jvp solves with the eigenvectors (the ``solve`` primitive, lowered through
    getrf and trsm): the gradient equals interp's."""
    a = random_matrices((2, 4, 4), np.float64, seed=6)
    g = plait.grad(loss)
    got, want = _run(g, a)
    assert np.abs(want[0]).max() > 0.1
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-9)


def test_schur_gradient_is_refused_on_xla_as_on_interp():
    a = random_matrices((3, 3), np.float64, seed=7)
    g = plait.grad(lambda x: pnp.sum(la.schur(x)[0]))
    for backend in ("interp", "xla"):
        with pytest.raises(PlaitValueError, match="schur is not differentiable"):
            plait.jit(g, backend=backend)(a)


def test_eig_and_schur_export_and_run_in_a_fresh_process(tmp_path):
    """The exported module (geev and gees custom calls) deserializes and runs in a
    process that never traced it, with the results NumPy/SciPy give."""
    a = random_matrices((2, 5, 5), np.float64, seed=8)

    def f(x):
        w, vr = la.eig(x, compute_left_eigenvectors=False)
        t, z = la.schur(x)
        return w, vr, t, z
    w, vr, t, z = call_in_fresh_process(plait.export(plait.jit(f, backend="xla"))(a), [a],
                                        tmp_path)
    wn, vn = np.linalg.eig(a)
    np.testing.assert_allclose(w, wn, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(vr, vn, rtol=1e-13, atol=1e-13)
    for i in range(2):
        ts, zs = scipy_linalg.schur(a[i])
        np.testing.assert_allclose(t[i], ts, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(z[i], zs, rtol=1e-13, atol=1e-13)
