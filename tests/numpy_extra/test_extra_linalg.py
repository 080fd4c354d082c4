"""Linear algebra vs NumPy: einsum (every subscripts form, paths), dot, matmul/@,
tensordot, inner, outer, vdot, kron, vecdot, matvec, vecmat, linalg.norm & friends."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import PlaitValueError
from plait.numpy.einsum import greedy_path, parse_subscripts

from extra_helpers import assert_same, check, rand, ijit

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,kj->ki", [(2, 3), (4, 3)]),
    ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->i", [(4,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("Ba,aC->BC", [(2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk", [(2, 3), (7, 3, 4)]),
    ("b...,b...->...", [(3, 2, 4), (3, 2, 4)]),
    ("...,...", [(2, 3), (3,)]),
    ("i...->...", [(3, 2, 2)]),
    ("...i->i...", [(2, 3, 4)]),
    ("ij...,jk...->ik...", [(2, 3, 5), (3, 4, 1)]),
    ("bij,bjk->bik", [(4, 2, 3), (4, 3, 5)]),
    ("bij,bjk->bki", [(4, 2, 3), (4, 3, 5)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl,lm->mi", [(2, 8), (8, 3), (3, 9), (9, 2)]),
    ("a,b,c->abc", [(2,), (3,), (4,)]),
    ("ab,bc,ca->", [(3, 4), (4, 5), (5, 3)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
    ("ij,ij,ij->i", [(3, 4), (3, 4), (3, 4)]),
    ("ea,fb,abcd,gc,hd->efgh", [(2, 3), (2, 4), (3, 4, 2, 3), (3, 2), (2, 3)]),
    (",ij->ij", [(), (2, 3)]),
    ("i,->i", [(3,), ()]),
    ("ijk", [(2, 3, 4)]),
    ("kji", [(2, 3, 4)]),
]


@pytest.mark.parametrize("subs,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_matches_numpy(subs, shapes):
    ops = [rand(s, np.float32, i) for i, s in enumerate(shapes)]
    check(lambda *a: pnp.einsum(subs, *a), lambda *a: np.einsum(subs, *a), *ops)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.int64, np.float16,
                                   np.complex64, np.complex128])
def test_einsum_dtypes(dtype):
    for subs, shapes in [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->", [(3, 3)]),
                         ("ij->i", [(2, 3)]), ("i,j,j->i", [(2,), (3,), (3,)])]:
        ops = [rand(s, dtype, i) for i, s in enumerate(shapes)]
        check(lambda *a: pnp.einsum(subs, *a), lambda *a: np.einsum(subs, *a), *ops, jit=False)


def test_einsum_mixed_dtypes_and_interleaved_form():
    a, b = rand((2, 3), np.int32), rand((3,), np.float32)
    check(lambda a, b: pnp.einsum("ij,j->i", a, b), lambda a, b: np.einsum("ij,j->i", a, b), a, b)
    check(lambda a, b: pnp.einsum(a, [0, 1], b, [1], [0]),
          lambda a, b: np.einsum(a, [0, 1], b, [1], [0]), a, b)
    check(lambda a, b: pnp.einsum(a, [Ellipsis, 1], b, [1]),
          lambda a, b: np.einsum(a, [Ellipsis, 1], b, [1]), a, b)
    check(lambda a: pnp.einsum("ij->i", a, dtype=np.float64),
          lambda a: np.einsum("ij->i", a, dtype=np.float64), a)


def test_einsum_optimize_options():
    ops = [rand(s, np.float64, i) for i, s in enumerate([(2, 3), (3, 4), (4, 5)])]
    want = np.einsum("ij,jk,kl->il", *ops)
    for opt in (False, True, "greedy", "optimal", ["einsum_path", (0, 2), (0, 1)]):
        assert_same(pnp.einsum("ij,jk,kl->il", *ops, optimize=opt), want)


def test_einsum_path():
    ops = [np.ones(s) for s in [(2, 3), (3, 4), (4, 5)]]
    path, report = pnp.einsum_path("ij,jk,kl->il", *ops)
    assert path == np.einsum_path("ij,jk,kl->il", *ops, optimize="greedy")[0]
    assert "ij,jk,kl->il" in report
    assert pnp.einsum_path("ij,jk", ops[0], ops[1])[0] == ["einsum_path", (0, 1)]
    assert pnp.einsum_path("ii", np.ones((2, 2)))[0] == ["einsum_path", (0,)]


def test_greedy_path_avoids_large_intermediates():
    # a(10x1000) b(1000x10) c(10x1000): contracting a,b first keeps intermediates tiny
    ins, out = parse_subscripts("ij,jk,kl->il", [2, 2, 2])
    sizes = {"i": 10, "j": 1000, "k": 10, "l": 1000}
    assert greedy_path([frozenset(l) for l in ins], frozenset(out), sizes) == [(0, 1), (0, 1)]
    sizes = {"i": 1000, "j": 10, "k": 1000, "l": 10}
    assert greedy_path([frozenset(l) for l in ins], frozenset(out), sizes) == [(1, 2), (0, 1)]


def test_einsum_graph_uses_dot_general_per_pair():
    ops = [np.ones(s, np.float32) for s in [(2, 3), (3, 4), (4, 5)]]
    text = str(plait.make_graph(lambda *a: pnp.einsum("ij,jk,kl->il", *a))(*ops))
    assert text.count("dot_general") == 2


def test_einsum_errors():
    a = np.ones((2, 3))
    bad = [("ij,jk", [a]), ("ijk", [a]), ("i", [a]), ("ij->k", [a]), ("ij->ii", [a]),
           ("i1", [a]), ("ij,jk", [a, np.ones((4, 2))]), ("...ij->ij", [np.ones((4, 2, 3))]),
           ("i..j", [a])]
    for subs, ops in bad:
        with pytest.raises(PlaitValueError):
            pnp.einsum(subs, *ops)


# --- products -----------------------------------------------------------------------------
PRODUCT_SHAPES = [((), (3,)), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                  ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
                  ((2, 1, 2, 3), (5, 3, 4)), ((1, 3), (3, 1))]


@pytest.mark.parametrize("sa,sb", PRODUCT_SHAPES)
def test_dot_matmul_inner_outer(sa, sb):
    a, b = rand(sa, np.float64, 1), rand(sb, np.float64, 2)
    check(pnp.dot, np.dot, a, b)
    check(pnp.outer, np.outer, a, b)
    check(pnp.kron, np.kron, a, b)
    if sa and sb:
        check(pnp.matmul, np.matmul, a, b)
        check(lambda x, y: x @ y, lambda x, y: x @ y, a, b)
        check(lambda x, y: y.T @ x.T if len(sa) == len(sb) == 2 else x @ y,
              lambda x, y: y.T @ x.T if len(sa) == len(sb) == 2 else x @ y, a, b)
    if not sa or not sb or sa[-1] == sb[-1]:
        check(pnp.inner, np.inner, a, b)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint16, np.float16,
                                   np.float32, np.complex64])
def test_product_dtypes(dtype):
    a, b = rand((2, 3), dtype, 1), rand((3, 4), dtype, 2)
    for fp, fn in [(pnp.dot, np.dot), (pnp.matmul, np.matmul), (pnp.outer, np.outer),
                   (pnp.kron, np.kron)]:
        check(fp, fn, a, b, jit=fp is pnp.matmul)
    check(pnp.vdot, np.vdot, a, a)
    check(pnp.inner, np.inner, a, b.T)
    check(lambda x: pnp.tensordot(x, x, 2), lambda x: np.tensordot(x, x, 2), a)


def test_python_scalars_follow_numpy():
    a = rand((2, 3), np.int32)
    for fp, fn in [(pnp.dot, np.dot), (pnp.inner, np.inner), (pnp.outer, np.outer),
                   (pnp.kron, np.kron)]:
        assert_same(fp(pnp.asarray(a), 2), fn(a, 2))
    with pytest.raises(PlaitValueError, match="enough dimensions"):
        pnp.vecdot(np.ones(3, np.float32), 2.0)


def test_mixed_dtype_products():
    a, b = rand((2, 3), np.int16), rand((3, 2), np.float32)
    check(pnp.dot, np.dot, a, b)
    check(pnp.matmul, np.matmul, a, b)
    check(lambda x, y: pnp.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1), a, b)


TENSORDOT = [(0, (2, 3), (4,)), (1, (3, 4), (4, 5)), (2, (3, 4, 2), (4, 2, 5)),
             (([1, 0], [0, 1]), (3, 4, 2), (4, 3, 5)), (([2], [0]), (3, 4, 2), (2, 3)),
             ((1, 0), (3, 4), (4, 5)), (([0, 2], [1, 0]), (3, 4, 2), (2, 3, 5)),
             (([-1], [-2]), (3, 4), (2, 4, 5))]


@pytest.mark.parametrize("axes,sa,sb", TENSORDOT)
def test_tensordot(axes, sa, sb):
    a, b = rand(sa, np.float32, 1), rand(sb, np.float32, 2)
    check(lambda x, y: pnp.tensordot(x, y, axes), lambda x, y: np.tensordot(x, y, axes), a, b)


def test_vecdot_matvec_vecmat():
    a, b = rand((2, 1, 3), np.complex64, 1), rand((4, 3), np.complex64, 2)
    check(pnp.vecdot, np.vecdot, a, b)
    check(lambda x, y: pnp.vecdot(x, y, axis=0), lambda x, y: np.vecdot(x, y, axis=0),
          rand((3, 2), np.float32), rand((3, 1), np.float32))
    m = rand((5, 4, 3), np.float32, 3)
    check(pnp.matvec, np.matvec, m, rand((3,), np.float32))
    check(pnp.matvec, np.matvec, m, rand((2, 1, 1, 3), np.float32))
    check(pnp.vecmat, np.vecmat, rand((4,), np.complex64), rand((2, 4, 3), np.complex64))
    check(pnp.vecdot, np.vecdot, rand((3,), np.int8), rand((3,), np.int8))
    check(pnp.vecdot, np.vecdot, rand((3,), np.bool_), rand((3,), np.bool_))


def test_product_errors():
    with pytest.raises(PlaitValueError, match="not aligned"):
        pnp.dot(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(PlaitValueError, match="mismatch in its core dimension"):
        pnp.matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(PlaitValueError, match="enough dimensions"):
        pnp.matmul(np.ones(3), 2.0)
    with pytest.raises(PlaitValueError, match="broadcast"):
        pnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 4)))
    with pytest.raises(PlaitValueError, match="different lengths"):
        pnp.vdot(np.ones(3), np.ones(4))


# --- linalg namespace ----------------------------------------------------------------------
VECTOR_ORDS = [None, 1, 2, 0, np.inf, -np.inf, 3, 0.5, -1]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64, np.float16])
def test_norms(dtype):
    v, m = rand((7,), dtype, 1), rand((3, 4), dtype, 2)
    t = rand((2, 3, 4), dtype, 3)
    for o in VECTOR_ORDS:
        check(lambda x: pnp.linalg.norm(x, o), lambda x: np.linalg.norm(x, o), v)
        check(lambda x: pnp.linalg.norm(x, o, axis=1, keepdims=True),
              lambda x: np.linalg.norm(x, o, axis=1, keepdims=True), t, jit=False)
    for o in MATRIX_ORDS:
        check(lambda x: pnp.linalg.norm(x, o), lambda x: np.linalg.norm(x, o), m)
        check(lambda x: pnp.linalg.norm(x, o, axis=(2, 0)),
              lambda x: np.linalg.norm(x, o, axis=(2, 0)), t, jit=False)
    check(lambda x: pnp.linalg.norm(x), lambda x: np.linalg.norm(x), t)
    check(lambda x: pnp.linalg.norm(x, keepdims=True),
          lambda x: np.linalg.norm(x, keepdims=True), t)
    check(lambda x: pnp.linalg.vector_norm(x, ord=3, axis=(0, 2)),
          lambda x: np.linalg.vector_norm(x, ord=3, axis=(0, 2)), t)
    check(lambda x: pnp.linalg.matrix_norm(x, ord=1), lambda x: np.linalg.matrix_norm(x, ord=1), t)


def test_norm_errors():
    with pytest.raises(PlaitValueError, match="for vectors"):
        pnp.linalg.norm(np.ones(3), "fro")
    with pytest.raises(PlaitValueError, match="Improper number"):
        pnp.linalg.norm(np.ones((2, 2, 2)), 1)


def test_linalg_namespace_functions():
    t = rand((2, 3, 3), np.int16)
    check(pnp.linalg.trace, np.linalg.trace, t)
    check(lambda x: pnp.linalg.diagonal(x, offset=1), lambda x: np.linalg.diagonal(x, offset=1), t)
    check(pnp.linalg.matrix_transpose, np.linalg.matrix_transpose, t)
    check(pnp.linalg.outer, np.linalg.outer, rand((3,), np.float32), rand((2,), np.float32))
    check(lambda a, b: pnp.linalg.tensordot(a, b, axes=1),
          lambda a, b: np.linalg.tensordot(a, b, axes=1), t, t.T)
    check(pnp.linalg.vecdot, np.linalg.vecdot, t, t)
    check(pnp.linalg.matmul, np.linalg.matmul, t, t)
    for n in (0, 1, 2, 5):
        check(lambda x: pnp.linalg.matrix_power(x, n), lambda x: np.linalg.matrix_power(x, n), t)
    chain = [rand(s, np.float64, i) for i, s in enumerate([(4,), (4, 6), (6, 2), (2, 5), (5,)])]
    check(lambda *a: pnp.linalg.multi_dot(a), lambda *a: np.linalg.multi_dot(a), *chain)
    chain = [rand(s, np.float32, i) for i, s in enumerate([(3, 4), (4, 6), (6, 2)])]
    check(lambda *a: pnp.linalg.multi_dot(a), lambda *a: np.linalg.multi_dot(a), *chain)
    well = rand((2, 3, 3), np.float64) + 4 * np.eye(3)
    for n in (-1, -3):
        np.testing.assert_allclose(np.asarray(pnp.linalg.matrix_power(well, n)),
                                   np.linalg.matrix_power(well, n), rtol=1e-10)


GRAD_FUNCS = {
    "getitem": lambda x: pnp.sum(x[[0, 1, 1], ::-1][:, [2, 0]] ** 2),
    "at_add": lambda x: pnp.sum(x.at[0, [1, 1]].add(x[1, :2]) ** 2),
    "einsum": lambda x: pnp.einsum("ij,kj,ik->", x, x, x[:, :2]),
    "matmul_trace": lambda x: pnp.trace(x @ x.T @ x[:, :2]),
    "norm": lambda x: pnp.linalg.norm(x, 1) + pnp.linalg.norm(x, axis=0)[1],
    "sort_take": lambda x: pnp.sum(pnp.take_along_axis(x, pnp.argsort(x, 1), 1)[:, :2] ** 2),
}


@pytest.mark.parametrize("name", list(GRAD_FUNCS))
def test_gradients_match_finite_differences(name):
    f = GRAD_FUNCS[name]
    x = rand((2, 3), np.float64, 7)
    g = np.asarray(plait.grad(f)(x))
    eps, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        fd[i] = (float(f(pnp.asarray(x + d))) - float(f(pnp.asarray(x - d)))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
