"""Op-table entries for indexing, linear algebra and sorting (see ``op_table.py``).

Each entry is checked by ``test_np_op_sweep.py`` eagerly and under ``plait.jit``
against NumPy with exact dtype equality. Index arguments that must stay in
range use ``A(..., "int64", "small")`` (values 0..3) on dimensions of size >= 4.
"""
from __future__ import annotations

import numpy as np

import plait.numpy as pnp
from op_table import A, Case, Op

OPS: list = []


def add(name, fn, ref, cases, tol="exact", jit=True):
    OPS.append(Op(name, fn, ref, cases, tol, jit))


def same(name, f, cases, tol="exact", jit=True):
    """An entry whose plait and NumPy forms are the same expression on arrays."""
    add(name, f, f, cases, tol, jit)


X = [Case((A((4, 5, 6), "float32"),)), Case((A((4, 5, 6), "int16"),)),
     Case((A((4, 5, 6), "bool"),)), Case((A((4, 5, 6), "complex64"),))]
MASK = np.random.default_rng(0).random((4, 5)) < 0.5

# --- advanced and boolean indexing --------------------------------------------------------
for nm, f in [
        ("idx_list", lambda x: x[[0, 2, -1]]), ("idx_adv_pair", lambda x: x[[0, 1], [2, 3]]),
        ("idx_adv_separated", lambda x: x[[0, 1], :, [2, 3]]),
        ("idx_int_separates", lambda x: x[0, :, [0, 1]]),
        ("idx_adv_broadcast", lambda x: x[[[0], [1]], [0, 1, 2]]),
        ("idx_adv_none", lambda x: x[[1, 0], None, [0, 1]]),
        ("idx_adv_slices", lambda x: x[1:3, [2, 0, 1], ::-2]),
        ("idx_adv_2d", lambda x: x[:, np.array([[1, 2], [3, 0]]), 0]),
        ("idx_adv_ellipsis", lambda x: x[..., [0, -1]]),
        ("idx_bool_mask", lambda x: x[MASK]), ("idx_bool_axis", lambda x: x[:, MASK[0]]),
        ("idx_bool_scalar", lambda x: x[..., True]),
        ("idx_bool_and_int", lambda x: x[MASK[:, 0], 2]),
        ("m_take", lambda x: x.take([1, 0], axis=1)), ("m_diagonal", lambda x: x.diagonal(1)),
        ("m_trace", lambda x: x.trace(-1, 1, 2)),
        ("m_argsort", lambda x: x.argsort(axis=1, stable=True)),
]:
    same(nm, f, X)
add("m_sort", lambda x: x.sort(axis=0), lambda x: np.sort(x, axis=0), X)   # NumPy's sorts in place

add("idx_traced", lambda x, i: x[i, 1:, i], lambda x, i: x[i, 1:, i],
    [Case((A((4, 5, 6), "float64"), A((2, 3), "int64", "small")))])
add("idx_traced_scalar", lambda x, i: x[:, i], lambda x, i: x[:, i],
    [Case((A((4, 5, 6), "uint8"), A((), "int32", "small")))])

# --- .at updates ------------------------------------------------------------------------
_DUP = np.array([0, 2, 0, 3, 2])


def _at(np_fn, idx):
    def ref(x, v):
        y = x.copy()
        if np_fn is None:
            y[idx] = v
        else:
            np_fn.at(y, idx, v)
        return y
    return ref


for nm, meth, np_fn, idx, vshape in [
        ("at_set", "set", None, (slice(1, 3), 2), (2, 6)),
        ("at_set_adv", "set", None, ([3, 0], slice(None), [1, 4]), (2, 5)),
        ("at_set_strided", "set", None, (slice(None, None, -2), 1), (2, 6)),
        ("at_add_dup", "add", np.add, (_DUP,), (5, 5, 6)),
        ("at_add_mixed", "add", np.add, (_DUP, slice(1, 4), 0), (5, 3)),
        ("at_mul_dup", "multiply", np.multiply, (1, _DUP), (5, 6)),
        ("at_min_dup", "min", np.minimum, (_DUP, 1, _DUP), (5,)),
        ("at_max_dup", "max", np.maximum, (slice(None), _DUP), (4, 5, 6))]:
    add(nm, lambda x, v, meth=meth, idx=idx: getattr(x.at[idx], meth)(v), _at(np_fn, idx),
        [Case((A((4, 5, 6), d), A(vshape, d))) for d in ("float32", "int32", "uint8")])

# --- take & friends ---------------------------------------------------------------------------
for axis in (None, 0, 2, -1):
    add(f"take_axis{axis}", lambda a, i, axis=axis: pnp.take(a, i, axis=axis),
        lambda a, i, axis=axis: np.take(a, i, axis=axis),
        [Case((A((4, 5, 6), d), A((2, 3), "int64", "small"))) for d in ("float64", "int8", "bool")])
for mode in ("wrap", "clip"):
    add(f"take_{mode}", lambda a, i, mode=mode: pnp.take(a, i, axis=1, mode=mode),
        lambda a, i, mode=mode: np.take(a, i, axis=1, mode=mode),
        [Case((A((4, 5), "float32"), A((7,), "int32")))])
for axis in (0, 1, -1):
    add(f"take_along_axis{axis}",
        lambda a, axis=axis: pnp.take_along_axis(a, pnp.argsort(a, axis), axis),
        lambda a, axis=axis: np.take_along_axis(a, np.argsort(a, axis, stable=True), axis),
        [Case((A((3, 4, 5), d),)) for d in ("float32", "int16")])
add("put_along_axis", lambda a, i: pnp.put_along_axis(a, i, 0, 1, inplace=False),
    lambda a, i: _put_along(a, i), [Case((A((3, 5), "float64"), A((3, 1), "int64", "small")))])


def _put_along(a, i):
    b = a.copy()
    np.put_along_axis(b, i, 0, 1)
    return b


add("nonzero", pnp.nonzero, np.nonzero, [Case((A((3, 4), "int8", "unit"),)),
                                         Case((A((5,), "float32", "special"),))], jit=False)
add("argwhere", pnp.argwhere, np.argwhere, [Case((A((3, 4), "bool"),))], jit=False)
add("flatnonzero", pnp.flatnonzero, np.flatnonzero, [Case((A((3, 4), "int32", "unit"),))],
    jit=False)
add("nonzero_size", lambda a: pnp.nonzero(a, size=a.size, fill_value=-1),
    lambda a: tuple(np.concatenate([i, np.full(a.size - len(i), -1)]) for i in np.nonzero(a)),
    [Case((A((3, 4), "int8", "unit"),)), Case((A((2, 2, 3), "bool"),))])
for offset in (0, 1, -2):
    add(f"diagonal{offset}", lambda a, o=offset: pnp.diagonal(a, o, 2, 0),
        lambda a, o=offset: np.diagonal(a, o, 2, 0), [Case((A((4, 3, 5), "float32"),))])
    add(f"trace{offset}", lambda a, o=offset: pnp.trace(a, o),
        lambda a, o=offset: np.trace(a, o),
        [Case((A((4, 5), d),)) for d in ("bool", "int8", "uint16", "float16", "complex64")])

# --- linear algebra ----------------------------------------------------------------------------
PROD = ["bool", "int8", "int32", "uint16", "float16", "float32", "float64", "complex64"]


def P(shapes, dts=PROD):
    """Cases for a product: each dtype at the first shape pair, the rest at float64."""
    cases = [Case((A(shapes[0][0], d), A(shapes[0][1], d))) for d in dts]
    cases += [Case((A(sa, "float64"), A(sb, "float64"))) for sa, sb in shapes[1:]]
    cases.append(Case((A(shapes[0][0], "int16"), A(shapes[0][1], "float32"))))
    return cases


MM = [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
      ((2, 1, 3, 4), (5, 4, 2))]
add("matmul", pnp.matmul, np.matmul, P(MM), "loose")
add("dot", pnp.dot, np.dot, P(MM[:5] + [((2, 3, 4), (5, 4, 2)), ((), (3,))]), "loose")
add("inner", pnp.inner, np.inner, P([((3, 4), (2, 4)), ((4,), (4,)), ((2, 3, 4), (4,))]), "loose")
add("outer", pnp.outer, np.outer, P([((3,), (4,)), ((2, 2), (3,))]), "loose")
add("vdot", pnp.vdot, np.vdot, P([((3, 4), (3, 4)), ((12,), (3, 4))]), "loose")
add("kron", pnp.kron, np.kron, P([((2, 3), (3, 2)), ((2,), (2, 1, 3))]), "loose")
add("vecdot", pnp.vecdot, np.vecdot, P([((3, 4), (3, 4)), ((2, 1, 4), (3, 4))]), "loose")
add("matvec", pnp.matvec, np.matvec, P([((3, 4), (4,)), ((2, 1, 3, 4), (5, 4))]), "loose")
add("vecmat", pnp.vecmat, np.vecmat, P([((4,), (4, 3)), ((5, 4), (2, 1, 4, 3))]), "loose")
add("tensordot", lambda a, b: pnp.tensordot(a, b, ([0, 2], [1, 0])),
    lambda a, b: np.tensordot(a, b, ([0, 2], [1, 0])), P([((3, 4, 2), (2, 3, 5))]), "loose")
add("matmul_op", lambda a, b: a @ b, lambda a, b: a @ b, P(MM[:3]), "loose")

for subs, shapes in [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]),
                     ("...ij,...jk", [(5, 2, 3), (3, 4)]), ("bij,bjk->bki", [(2, 2, 3), (2, 3, 4)]),
                     ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 5)]), ("i,j,k", [(2,), (3,), (2,)]),
                     ("ea,fb,abcd,gc,hd->efgh", [(2, 3), (2, 4), (3, 4, 2, 3), (3, 2), (2, 3)])]:
    add(f"einsum[{subs}]", lambda *a, s=subs: pnp.einsum(s, *a),
        lambda *a, s=subs: np.einsum(s, *a),
        [Case(tuple(A(s, d) for s in shapes)) for d in ("float32", "int16", "complex128", "bool")],
        "loose")

for ord_ in (None, 1, 2, 0, np.inf, -np.inf, 3):
    add(f"norm_vec[{ord_}]", lambda a, o=ord_: pnp.linalg.norm(a, o),
        lambda a, o=ord_: np.linalg.norm(a, o),
        [Case((A((6,), d),)) for d in ("float32", "float64", "int8", "complex64")], "loose")
for ord_ in (None, "fro", 1, -1, np.inf, -np.inf):
    add(f"norm_mat[{ord_}]", lambda a, o=ord_: pnp.linalg.norm(a, o, axis=(0, 2), keepdims=True),
        lambda a, o=ord_: np.linalg.norm(a, o, axis=(0, 2), keepdims=True),
        [Case((A((3, 2, 4), d),)) for d in ("float32", "float64", "int32", "complex128")], "loose")
add("matrix_power", lambda a: pnp.linalg.matrix_power(a, 3),
    lambda a: np.linalg.matrix_power(a, 3),
    [Case((A((2, 3, 3), d, "unit"),)) for d in ("int32", "float64")], "loose")
add("multi_dot", lambda a, b: pnp.linalg.multi_dot([a, b, a.T]),
    lambda a, b: np.linalg.multi_dot([a, b, a.T]),
    [Case((A((3, 4), "float64"), A((4, 4), "float64")))], "loose")

# --- decompositions and solvers: operands shifted by 12 I (well conditioned), SPD where needed;
# only outputs without a sign/phase choice (which LAPACK builds may make differently)
LA_DT = ("float32", "float64", "complex64", "int16")
SQ = [Case((A((2, 3, 3), d),)) for d in LA_DT]
SQ_B = [Case((A((2, 3, 3), d), A((2, 3, 2), d))) for d in LA_DT]


def _well(xp, a):
    return a + 12 * xp.eye(a.shape[-1], dtype=a.dtype)


def _spd(xp, a):
    return a @ xp.conj(xp.swapaxes(a, -1, -2)) + 3 * xp.eye(a.shape[-1], dtype=a.dtype)


for nm, f in [("inv", lambda xp, a: xp.linalg.inv(_well(xp, a))),
              ("det", lambda xp, a: xp.linalg.det(_well(xp, a))),
              ("slogdet", lambda xp, a: tuple(xp.linalg.slogdet(_well(xp, a)))),
              ("cholesky", lambda xp, a: xp.linalg.cholesky(_spd(xp, a))),
              ("eigvalsh", lambda xp, a: xp.linalg.eigvalsh(_spd(xp, a))),
              ("svdvals", lambda xp, a: xp.linalg.svd(a, compute_uv=False)),
              ("pinv", lambda xp, a: xp.linalg.pinv(_well(xp, a))),
              ("matrix_rank", lambda xp, a: xp.linalg.matrix_rank(a)),
              ("cond", lambda xp, a: xp.linalg.cond(_well(xp, a))),
              ("norm2", lambda xp, a: xp.linalg.norm(a, 2, axis=(0, 2))),
              ("norm_nuc", lambda xp, a: xp.linalg.matrix_norm(a, ord="nuc"))]:
    add(f"linalg_{nm}", lambda a, f=f: f(pnp, a), lambda a, f=f: f(np, a), SQ, "loose")
add("linalg_solve", lambda a, b: pnp.linalg.solve(_well(pnp, a), b),
    lambda a, b: np.linalg.solve(_well(np, a), b), SQ_B, "loose")

# --- sorting and searching -----------------------------------------------------------------------
SORTABLE = ["bool", "int8", "uint32", "int64", "float16", "float32", "float64", "complex64"]
for axis in (-1, 0, None):
    add(f"sort_axis{axis}", lambda a, axis=axis: pnp.sort(a, axis),
        lambda a, axis=axis: np.sort(a, axis),
        [Case((A((3, 5), d, "special" if d.startswith("f") else "normal"),)) for d in SORTABLE])
    add(f"argsort_axis{axis}", lambda a, axis=axis: pnp.argsort(a, axis),
        lambda a, axis=axis: np.argsort(a, axis, stable=True),
        [Case((A((3, 5), d, "special" if d.startswith("f") else "small"),)) for d in SORTABLE])
add("lexsort", lambda a, b: pnp.lexsort((a, b)), lambda a, b: np.lexsort((a, b)),
    [Case((A((9,), "int8", "small"), A((9,), "int8", "small"))),
     Case((A((2, 7), "float32", "halves"), A((2, 7), "float32", "halves")))])
add("sort_complex", pnp.sort_complex, np.sort_complex,
    [Case((A((6,), d),)) for d in ("int8", "int32", "float32", "complex128")])
for side in ("left", "right"):
    add(f"searchsorted_{side}", lambda a, v, s=side: pnp.searchsorted(pnp.sort(a), v, s),
        lambda a, v, s=side: np.searchsorted(np.sort(a), v, s),
        [Case((A((9,), d, "special" if d.startswith("f") else "small"),
               A((2, 3), d, "special" if d.startswith("f") else "small")))
         for d in ("int32", "float32", "float64", "uint8", "bool")])
add("digitize", lambda x, b: pnp.digitize(x, pnp.sort(b)), lambda x, b: np.digitize(x, np.sort(b)),
    [Case((A((7,), "float64", "halves"), A((4,), "float64", "halves")))])
add("unique", lambda a: pnp.unique(a, True, True, True), lambda a: np.unique(a, True, True, True),
    [Case((A((4, 5), d, "small"),)) for d in ("int16", "float32", "bool")], jit=False)
add("bincount_length", lambda a: pnp.bincount(a, length=6), lambda a: np.bincount(a, minlength=6),
    [Case((A((10,), "int64", "small"),))])
add("histogram", lambda a: pnp.histogram(a, 5), lambda a: np.histogram(a, 5),
    [Case((A((20,), "float64"),))], jit=False)

# --- index helpers ------------------------------------------------------------------------------
add("unravel_index", lambda i: pnp.unravel_index(i, (4, 2, 3)),
    lambda i: np.unravel_index(i, (4, 2, 3)),
    [Case((A((2, 3), "int64", "small"),)), Case((A((5,), "int32", "small"),))])
add("ravel_multi_index", lambda a, b: pnp.ravel_multi_index((a, b), (4, 5)),
    lambda a, b: np.ravel_multi_index((a, b), (4, 5)),
    [Case((A((3,), "int64", "small"), A((2, 1), "int64", "small")))])
add("choose", lambda a, b, c: pnp.choose(pnp.clip(a, 0, 1), [b, c]),
    lambda a, b, c: np.choose(np.clip(a, 0, 1), [b, c]),
    [Case((A((3, 4), "int32", "small"), A((4,), d), A((3, 4), d))) for d in ("float32", "int8")])
add("select", lambda c, a, b: pnp.select([c, ~c & (a > 0)], [a, b], 0),
    lambda c, a, b: np.select([c, ~c & (a > 0)], [a, b], 0),
    [Case((A((3, 4), "bool"), A((3, 4), d), A((4,), d))) for d in ("float64", "int16", "uint8")])
add("isin", lambda a, b: pnp.isin(a, b), lambda a, b: np.isin(a, b),
    [Case((A((3, 4), d, "small"), A((2, 2), d, "small"))) for d in ("int8", "float32")])
add("compress", lambda c, a: pnp.compress(c, a, axis=1), lambda c, a: np.compress(c, a, axis=1),
    [Case((A((4,), "bool"), A((3, 4), "float32")))], jit=False)
