"""plait.lax.linalg's shape and dtype errors name the user's line; jit stages the
primitives with the shapes abstract_eval promises."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import plait
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lax import linalg as L

HERE = "test_lax_linalg.py"


@pytest.mark.parametrize("call,match", [
    (lambda: L.cholesky(np.ones((2, 3))), "square"),
    (lambda: L.cholesky(np.ones(3)), "rank >= 2"),
    (lambda: L.cholesky(np.eye(2, dtype=np.int32)), "floating or complex"),
    (lambda: L.cholesky(np.eye(2, dtype=np.float16)), "half precision"),
    (lambda: L.triangular_solve(np.eye(3), np.ones((2, 2)), left_side=True), "rows"),
    (lambda: L.triangular_solve(np.eye(3), np.ones((3, 2), np.float32)), "same dtype"),
    (lambda: L.triangular_solve(np.eye(3)[None], np.ones((2, 3, 3))), "batch"),
    (lambda: L.eigh(np.ones((3, 3)), subset_by_index=(2, 5)), "subset_by_index"),
    (lambda: L.svd(np.ones((3,))), "rank >= 2"),
    (lambda: L.tridiagonal_solve(np.ones(3), np.ones(4), np.ones(3), np.ones((3, 1))),
     "d must have shape"),
    (lambda: L.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(3), np.ones(3)),
     "b of shape"),
])
def test_errors_name_the_user_line(call, match):
    with pytest.raises((PlaitTypeError, PlaitValueError), match=match) as e:
        call()
    assert HERE in str(e.value)


def test_jit_stages_shapes_of_every_primitive():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 5, 3))

    def f(a):
        sq = a @ a.mT + 5 * np.eye(5)
        return [L.cholesky(sq), *L.lu(a), *L.qr(a, full_matrices=False), *L.eigh(sq),
                *L.svd(a, full_matrices=False), *L.eig(sq, compute_left_eigenvectors=False),
                L.svd(a, compute_uv=False), *L.eigh(sq, subset_by_index=(1, 3))]
    graph = plait.make_graph(f)(a)
    want = [(2, 5, 5), (2, 5, 3), (2, 3), (2, 5), (2, 5, 3), (2, 3, 3), (2, 5, 5), (2, 5),
            (2, 3), (2, 5, 3), (2, 3, 3), (2, 5), (2, 5, 5), (2, 3), (2, 5, 2), (2, 2)]
    assert [v.aval.shape for v in graph.graph.outvars] == want
    got = plait.jit(f, backend="interp")(a)
    assert [np.shape(g) for g in got] == want
    assert np.asarray(got[12]).dtype == np.complex128 and np.asarray(got[2]).dtype == np.int32


def test_schur_is_not_differentiable_and_reconstructs():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 4, 4))
    t, z = (np.asarray(v) for v in L.schur(a))
    np.testing.assert_allclose(z @ t @ z.swapaxes(-1, -2), a, atol=1e-12)
    assert np.allclose(np.tril(t, -2), 0)
    with pytest.raises(PlaitValueError, match="not differentiable") as e:
        plait.jvp(lambda x: L.schur(x)[0], (a,), (a,))
    assert HERE in str(e.value)


def test_cholesky_backward_keeps_the_diagonal_elementwise():
    """The jvp reads the diagonal of the input tangent with a mask, so the backward pass
    places the cotangent's diagonal with the same mask: no reduction over the matrix
    and no broadcast back (a strided 8 MB pass per call in the GP gradient at n=1000)."""
    from plait.test_util import check_grads
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 5))
    a = a @ a.T + 5 * np.eye(5)
    w = rng.standard_normal((5, 5))

    def f(x):
        return plait.numpy.sum(L.cholesky(x, symmetrize_input=False) * w)
    txt = plait.jit(plait.grad(f)).lower(a).as_text("graph")
    assert "reduce_sum" not in txt, txt
    check_grads(lambda x: L.cholesky(x, symmetrize_input=False), (a,), order=2)
    c = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    c = c @ c.conj().T + 4 * np.eye(4)
    check_grads(lambda x: L.cholesky(x, symmetrize_input=False), (c,), order=2)
    check_grads(lambda x: L.eigh(x)[1], (a,), order=1)


def test_svd_of_nonfinite_matrices_is_nan_and_returns():
    """svd on matrices holding inf/NaN, every dtype and mode, and the NumPy functions
    built on it: NaN batch entries, the finite ones unchanged and NumPy's
    (``svd_nonfinite_check.py``, in a child process with a timeout: LAPACK's gesdd
    never returns on one of its matrices, Reference-LAPACK/lapack#1409)."""
    pytest.importorskip("scipy")
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("svd_nonfinite_check.py")),
                          "interp"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "ok"
