"""Spectral decompositions of ``plait.lax.linalg``: ``eigh``, ``eig``, ``svd`` and
``schur``."""
import numpy as _np

from plait.core.aval import ShapedArray as _ShapedArray
from plait.core.trace import get_aval as _get_aval
from plait.errors import PlaitValueError as _PlaitValueError
from plait.lax._base import (standard_primitive as _standard_primitive,
                             as_operand as _as_operand)
from plait.lax._ad_helpers import Zero as _Zero, full as _full
from plait.lax import elementwise as _ew
from plait.lax.reductions import reduce_sum as _reduce_sum
from plait.lax.linalg._common import (_band_mask, _batch_unary, _check_matrix, _col,
                                      _complex_dtype, _conj, _convert, _diag, _diag_embed,
                                      _dtype, _each, _H, _has_scipy, _hermitian_part, _mm,
                                      _ndim, _real, _real_dtype, _row, _scale, _scipy_each,
                                      _scipy_linalg, _shape, _swap, _values_only_dce,
                                      _zero_tangents, _zeros_like)
from plait.lax.linalg.factorizations import solve as _solve


# --- eigh -------------------------------------------------------------------------------
def _subset(subset, n: int, name: str):
    if subset is None:
        return None
    lo, hi = (int(v) for v in subset)
    if not 0 <= lo <= hi <= n:
        raise _PlaitValueError(f"{name}: subset_by_index {subset!r} must satisfy "
                              f"0 <= lo <= hi <= {n}")
    return lo, hi


def _eigh_abstract(a: _ShapedArray, *, lower, sort_eigenvalues, subset_by_index,
                   compute_eigenvectors) -> list:
    _check_matrix("eigh", a)
    n = a.shape[-1]
    lo, hi = _subset(subset_by_index, n, "eigh") or (0, n)
    b = a.shape[:-2]
    w = _ShapedArray(b + (hi - lo,), _real_dtype(a.dtype), False)
    return [_ShapedArray(b + (n, hi - lo), a.dtype, False), w] if compute_eigenvectors else [w]


def _eigh_impl(a, *, lower, sort_eigenvalues, subset_by_index, compute_eigenvectors):
    a = _np.asarray(a)
    n = a.shape[-1]
    lo, hi = subset_by_index or (0, n)
    rd = _real_dtype(a.dtype)
    if a.size == 0:
        w = _np.zeros(a.shape[:-2] + (hi - lo,), rd)
        return [_np.zeros(a.shape[:-1] + (hi - lo,), a.dtype), w] if compute_eigenvectors else [w]
    if not compute_eigenvectors:    # LAPACK's jobz='N': no eigenvector work at all
        if _has_scipy() and a.dtype.kind == "f":
            (w,) = _scipy_each(a, "syevd", dict(compute_v=0, lower=int(lower)), (0,),
                               (a.shape[:-1],))
        else:
            w = _np.linalg.eigvalsh(a, UPLO="L" if lower else "U")
        return [w[..., lo:hi].astype(rd, copy=False)]
    if _has_scipy() and a.dtype.kind == "f":
        w, v = _scipy_each(a, "syevd", dict(compute_v=1, lower=int(lower)), (0, 1),
                           (a.shape[:-1], a.shape))
    else:
        w, v = _np.linalg.eigh(a, UPLO="L" if lower else "U")
    return [v[..., lo:hi].astype(a.dtype, copy=False), w[..., lo:hi].astype(rd, copy=False)]


eigh_p = _standard_primitive("eigh", _eigh_abstract, _eigh_impl, multiple_results=True)
# a graph reading only the eigenvalues runs eigh without eigenvectors
eigh_p.def_rule("dce", _values_only_dce("compute_eigenvectors", 1))


def _inv_gaps(w):
    """``F`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal and 0 on it."""
    n = _shape(w)[-1]
    wj, wi = _row(w, n), _col(w, n)
    eye = _band_mask(_shape(wj), "==")
    one = _full(_shape(wj), 1, _dtype(w))
    gap = _ew.add(_ew.sub(wj, wi), _convert(eye, _dtype(w)))
    return _ew.select(eye, _zeros_like(one), _ew.div(one, gap))


def _eigh_jvp(primals, tangents, *, compute_eigenvectors, **params):
    (a,), (t,) = primals, tangents
    # dw needs the eigenvectors even when they are not returned
    v, w = eigh_p.bind(a, compute_eigenvectors=True, **params)
    outs = [v, w] if compute_eigenvectors else [w]
    subset = params["subset_by_index"]
    if subset is not None and tuple(subset) != (0, _shape(a)[-1]):
        raise _PlaitValueError("eigh: derivatives of a partial eigendecomposition "
                              "(subset_by_index) are not defined")
    if isinstance(t, _Zero):
        return outs, _zero_tangents(outs)
    s = _hermitian_part(t, params["lower"])
    m = _mm(_H(v), _mm(s, v))
    dw = _real(_diag(m))
    if not compute_eigenvectors:
        return outs, [dw]
    dv = _mm(v, _ew.mul(_convert(_inv_gaps(w), _dtype(a)), m))
    return outs, [dv, dw]


eigh_p.def_rule("jvp", _eigh_jvp)
_batch_unary(eigh_p)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None):
    """Eigendecomposition of Hermitian matrices: ``(v, w)`` with ascending real
    eigenvalues ``w`` and eigenvectors in ``v``'s columns (``x v = v diag(w)``).
    ``subset_by_index=(lo, hi)`` keeps eigenvalues ``lo..hi-1``. With
    ``symmetrize_input`` (JAX's default) ``x`` is first replaced by ``(x + xᴴ)/2``;
    otherwise only the ``lower`` (or upper) triangle is read."""
    x = _as_operand(x)
    a = _get_aval(x)
    _check_matrix("eigh", a)
    sub = _subset(subset_by_index, a.shape[-1], "eigh")
    if symmetrize_input:
        x = _scale(_ew.add(x, _H(x)), 0.5)
    return tuple(eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                             subset_by_index=sub, compute_eigenvectors=True))


# --- eig --------------------------------------------------------------------------------
def _eig_abstract(a: _ShapedArray, *, compute_left_eigenvectors,
                  compute_right_eigenvectors) -> list:
    _check_matrix("eig", a)
    c = _complex_dtype(a.dtype)
    out = [_ShapedArray(a.shape[:-1], c, False)]
    out += [_ShapedArray(a.shape, c, False)] * (int(compute_left_eigenvectors) +
                                              int(compute_right_eigenvectors))
    return out


def _eig_impl(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    a = _np.asarray(a)
    c = _complex_dtype(a.dtype)
    if a.size == 0:
        return ([_np.zeros(a.shape[:-1], c)] +
                [_np.zeros(a.shape, c)] * (int(compute_left_eigenvectors) +
                                          int(compute_right_eigenvectors)))
    # geev fails on a non-finite matrix: that batch entry is NaN (as LAPACK failures are
    # elsewhere, and as the xla backend's geev gives it), the others are computed
    w = _np.full(a.shape[:-1], _np.nan, c)
    vl = _np.full(a.shape, _np.nan, c)
    vr = _np.full(a.shape, _np.nan, c)
    finite = _np.isfinite(a).all(axis=(-2, -1))
    if compute_left_eigenvectors:
        sl = _scipy_linalg("eig with compute_left_eigenvectors=True")
        for i in _each(a.shape[:-2]):
            if finite[i]:
                w[i], vl[i], vr[i] = sl.eig(a[i], left=True, right=True, check_finite=False)
        return [w, vl] + ([vr] if compute_right_eigenvectors else [])
    if compute_right_eigenvectors:
        w[finite], vr[finite] = _np.linalg.eig(a[finite])
        return [w, vr]
    w[finite] = _np.linalg.eigvals(a[finite])
    return [w]


eig_p = _standard_primitive("eig", _eig_abstract, _eig_impl, multiple_results=True)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
    (a,), (t,) = primals, tangents
    params = dict(compute_left_eigenvectors=compute_left_eigenvectors,
                  compute_right_eigenvectors=compute_right_eigenvectors)
    outs = eig_p.bind(a, **params)
    if compute_left_eigenvectors:
        raise _PlaitValueError("eig: derivatives of left eigenvectors are not implemented; use "
                              "compute_left_eigenvectors=False")
    if isinstance(t, _Zero):
        return outs, _zero_tangents(outs)
    w, v = (outs if compute_right_eigenvectors else
            eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True))
    c = _dtype(w)
    tc = _convert(t, c)
    vinv_da_v = _solve(v, _mm(tc, v))
    dw = _diag(vinv_da_v)
    if not compute_right_eigenvectors:
        return outs, [dw]
    n = _shape(a)[-1]
    du = _mm(v, _ew.mul(_inv_gaps(w), vinv_da_v))
    # keep the eigenvectors' norm: remove the real part of vᴴ du along v
    proj = _convert(_real(_reduce_sum(_ew.mul(_conj(v), du), (_ndim(v) - 2,))), c)
    dv = _ew.sub(du, _ew.mul(v, _row(proj, n)))
    return outs, [dw, dv]


eig_p.def_rule("jvp", _eig_jvp)
_batch_unary(eig_p)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True):
    """Eigendecomposition of general square matrices, complex results:
    ``[w, vl?, vr?]`` (JAX's order) with unit-norm eigenvectors in the columns
    (``x vr = vr diag(w)``, ``vlᴴ x = diag(w) vlᴴ``). Left eigenvectors need SciPy."""
    return eig_p.bind(_as_operand(x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors))


# --- svd --------------------------------------------------------------------------------
def _svd_abstract(a: _ShapedArray, *, full_matrices, compute_uv, subset_by_index) -> list:
    _check_matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    lo, hi = _subset(subset_by_index, k, "svd") or (0, k)
    b = a.shape[:-2]
    s = _ShapedArray(b + (hi - lo,), _real_dtype(a.dtype), False)
    if not compute_uv:
        return [s]
    if subset_by_index is not None:
        ku = kv = hi - lo
    else:
        ku, kv = (m, n) if full_matrices else (k, k)
    return [s, _ShapedArray(b + (m, ku), a.dtype, False), _ShapedArray(b + (kv, n), a.dtype, False)]


def _svd_impl(a, *, full_matrices, compute_uv, subset_by_index):
    a = _np.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lo, hi = subset_by_index or (0, k)
    rd = _real_dtype(a.dtype)
    if a.size == 0:
        outs = [_np.zeros(a.shape[:-2] + (hi - lo,), rd)]
        if compute_uv:
            avs = _svd_abstract(_ShapedArray(a.shape, a.dtype), full_matrices=full_matrices,
                                compute_uv=True, subset_by_index=subset_by_index)
            for av in avs[1:]:
                e = _np.zeros(av.shape, a.dtype)
                d = min(av.shape[-2:])
                e[..., _np.arange(d), _np.arange(d)] = 1
                outs.append(e)
        return outs
    # gesdd may never return on a matrix holding inf (Reference-LAPACK/lapack#1409) and
    # refuses NaN: such a batch entry runs as zeros and its results are NaN
    finite = _np.isfinite(a).all(axis=(-2, -1))
    if not finite.all():
        a = _np.where(finite[..., None, None], a, _np.zeros((), a.dtype))
    outs = _svd_finite(a, full_uv=full_matrices and subset_by_index is None,
                       compute_uv=compute_uv)
    if not finite.all():
        outs = [_np.where(finite.reshape(finite.shape + (1,) * (o.ndim - finite.ndim)), o,
                          _np.asarray(_np.nan, o.dtype)) for o in outs]
    if subset_by_index is not None:
        outs = [outs[0][..., lo:hi]] + ([outs[1][..., :, lo:hi], outs[2][..., lo:hi, :]]
                                        if compute_uv else [])
    return [outs[0].astype(rd, copy=False)] + [x.astype(a.dtype, copy=False)
                                               for x in outs[1:]]


def _svd_finite(a, *, full_uv: bool, compute_uv: bool) -> list:
    """``[s]`` or ``[s, u, vt]`` of the stack of finite matrices ``a``: SciPy's gesdd on
    each (the routine the native and xla backends call; NaN where it fails), else
    NumPy's."""
    m, n = a.shape[-2:]
    k, b, rd = min(m, n), a.shape[:-2], _real_dtype(a.dtype)
    if not compute_uv:
        if not _has_scipy():
            return [_np.linalg.svd(a, compute_uv=False)]
        return _scipy_each(a, "gesdd", dict(compute_uv=0), (1,), (b + (k,),), (rd,))
    if not _has_scipy():
        u, s, vt = _np.linalg.svd(a, full_matrices=full_uv)
        return [s, u, vt]
    ku, kv = (m, n) if full_uv else (k, k)
    u, s, vt = _scipy_each(a, "gesdd", dict(compute_uv=1, full_matrices=int(full_uv)),
                           (0, 1, 2), (b + (m, ku), b + (k,), b + (kv, n)),
                           (a.dtype, rd, a.dtype))
    return [s, u, vt]


svd_p = _standard_primitive("svd", _svd_abstract, _svd_impl, multiple_results=True)
# a graph reading only the singular values runs svd without singular vectors
svd_p.def_rule("dce", _values_only_dce("compute_uv", 0))


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index):
    (a,), (t,) = primals, tangents
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index)
    outs = svd_p.bind(a, **params)
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise _PlaitValueError("svd: derivatives of a partial SVD (subset_by_index) are not "
                              "implemented")
    if compute_uv and full_matrices and m != n:
        raise _PlaitValueError(f"svd: derivatives of full_matrices=True need square matrices "
                              f"(got shape {_shape(a)}); use full_matrices=False")
    if isinstance(t, _Zero):
        return outs, _zero_tangents(outs)
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, subset_by_index=None)
    dt = _dtype(a)
    ut, v = _H(u), _H(vt)
    ds_mat = _mm(_mm(ut, t), v)
    ds = _real(_diag(ds_mat))
    if not compute_uv:
        return outs, [ds]
    sj = _row(s, k)          # s_j in column j
    si = _swap(sj)           # s_i in row i
    eye = _band_mask(_shape(sj), "==")
    eyef = _convert(eye, _dtype(s))
    diffs = _ew.mul(_ew.add(sj, si), _ew.sub(sj, si))     # s_j² - s_i²
    one = _full(_shape(sj), 1, _dtype(s))
    f = _ew.sub(_ew.div(one, _ew.add(diffs, eyef)), eyef)
    f = _convert(f, dt)
    s_zero = _convert(_ew.eq(s, _zeros_like(s)), _dtype(s))
    s_inv = _ew.sub(_ew.div(_full(_shape(s), 1, _dtype(s)), _ew.add(s, s_zero)), s_zero)
    dss = _ew.mul(_convert(sj, dt), ds_mat)
    sds = _ew.mul(_convert(si, dt), ds_mat)
    duv_diag = _ew.mul(_scale(_ew.sub(ds_mat, _H(ds_mat)), 0.5),
                      _convert(_diag_embed(s_inv), dt))
    du = _mm(u, _ew.add(_ew.mul(f, _ew.add(dss, _H(dss))), duv_diag))
    dv = _mm(v, _ew.mul(f, _ew.add(sds, _H(sds))))
    sinv_row = _convert(_row(s_inv, m), dt)
    if m > n:
        dav = _mm(t, v)
        du = _ew.add(du, _ew.mul(_ew.sub(dav, _mm(u, _mm(ut, dav))), sinv_row))
    if n > m:
        dahu = _mm(_H(t), u)
        dv = _ew.add(dv, _ew.mul(_ew.sub(dahu, _mm(v, _mm(vt, dahu))),
                               _convert(_row(s_inv, n), dt)))
    return outs, [ds, du, _H(dv)]


svd_p.def_rule("jvp", _svd_jvp)
_batch_unary(svd_p)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None):
    """Singular value decomposition: ``[s, u, vh]`` (``x = u diag(s) vh``, ``s``
    descending) or ``[s]`` without ``compute_uv``; ``subset_by_index=(lo, hi)`` keeps
    singular values ``lo..hi-1`` (and their vectors)."""
    x = _as_operand(x)
    a = _get_aval(x)
    _check_matrix("svd", a, square=False)
    sub = _subset(subset_by_index, min(a.shape[-2:]), "svd")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=sub)
    return outs if compute_uv else outs[0]


# --- schur -------------------------------------------------------------------------------
def _schur_abstract(a: _ShapedArray, *, compute_schur_vectors: bool) -> list:
    _check_matrix("schur", a)
    out = _ShapedArray(a.shape, a.dtype, False)
    return [out, out] if compute_schur_vectors else [out]


def _schur_impl(a, *, compute_schur_vectors: bool):
    a = _np.asarray(a)
    if a.size == 0:
        return [_np.zeros(a.shape, a.dtype)] * (2 if compute_schur_vectors else 1)
    sl = _scipy_linalg("schur")
    t = _np.empty_like(a)
    z = _np.empty_like(a)
    kind = "complex" if a.dtype.kind == "c" else "real"
    for i in _each(a.shape[:-2]):
        try:
            t[i], z[i] = sl.schur(a[i], output=kind, check_finite=False)
        except _np.linalg.LinAlgError:      # gees did not converge (info > 0): NaN entry
            t[i] = z[i] = _np.nan
    return [t, z] if compute_schur_vectors else [t]


schur_p = _standard_primitive("schur", _schur_abstract, _schur_impl, multiple_results=True)


def _schur_jvp(primals, tangents, **params):
    raise _PlaitValueError("schur is not differentiable (JAX has no derivative for it "
                          "either); for eigenvalues use eig or eigh")


schur_p.def_rule("jvp", _schur_jvp)
_batch_unary(schur_p)


def schur(x, *, compute_schur_vectors: bool = True):
    """Schur decomposition ``x = z t zᴴ``: ``t`` quasi-upper-triangular (real input,
    2x2 blocks for complex conjugate eigenvalue pairs) or upper triangular (complex
    input), ``z`` unitary; ``[t, z]``, or ``[t]`` without vectors. Needs SciPy."""
    outs = schur_p.bind(_as_operand(x), compute_schur_vectors=bool(compute_schur_vectors))
    return tuple(outs)
