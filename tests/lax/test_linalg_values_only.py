"""eigh/svd whose vectors are unused run without them (LAPACK jobz='N'): the dce rule
rewrites the equation, values and gradients still match NumPy / finite differences."""
import numpy as np

import plait
import plait.numpy as pnp
from plait.lax import linalg as L
from plait.test_util import check_grads


def _spd(n, batch=()):
    a = np.random.default_rng(0).standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_eigh_values_only_graph_and_values():
    a = _spd(5, (3,))
    f = plait.jit(lambda x: pnp.linalg.eigh(x).eigenvalues)
    graph = f.lower(a).compile().as_text("graph")
    assert "compute_eigenvectors=False" in graph, graph
    np.testing.assert_allclose(np.asarray(f(a)), np.linalg.eigvalsh(a), rtol=1e-12)
    for backend in ("native", "interp"):
        g = plait.jit(lambda x: pnp.linalg.eigvalsh(x, UPLO="U"), backend=backend)
        np.testing.assert_allclose(np.asarray(g(a)), np.linalg.eigvalsh(a, UPLO="U"),
                                   rtol=1e-12)


def test_eigh_vectors_kept_when_used():
    a = _spd(4)
    f = plait.jit(lambda x: pnp.linalg.eigh(x).eigenvectors[:, -1] ** 2)
    assert "compute_eigenvectors=True" in f.lower(a).compile().as_text("graph")
    np.testing.assert_allclose(np.asarray(f(a)), np.linalg.eigh(a)[1][:, -1] ** 2,
                               rtol=1e-10)


def test_eigh_values_only_grad_and_vmap():
    a = _spd(4)
    check_grads(lambda x: L.eigh(x)[1], (a,), order=2, modes=("fwd", "rev"))
    vals = L.eigh_p.bind(_spd(4, (2,)).astype(np.float32), lower=True, sort_eigenvalues=True,
                         subset_by_index=None, compute_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(vals[0]),
                               np.linalg.eigvalsh(_spd(4, (2,)).astype(np.float32)), rtol=1e-5)
    f = plait.vmap(lambda x: L.eigh(x)[1])
    np.testing.assert_allclose(np.asarray(plait.jit(f)(_spd(3, (2, 2)))),
                               np.linalg.eigvalsh(_spd(3, (2, 2))), rtol=1e-12)


def test_svd_values_only_graph():
    a = np.random.default_rng(1).standard_normal((2, 5, 3))
    f = plait.jit(lambda x: pnp.linalg.svd(x, full_matrices=False).S)
    assert "compute_uv=False" in f.lower(a).compile().as_text("graph")
    np.testing.assert_allclose(np.asarray(f(a)), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-12)
