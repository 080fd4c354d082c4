"""``to_stablehlo`` rules of the linalg primitives XLA's CPU client runs through LAPACK:
each is a ``stablehlo.custom_call`` of one of jaxlib's FFI targets
(``lapack_<s|d|c|z><routine>_ffi``, registered by
:func:`plait.backends.xla.pjrt.register_lapack` when a module calls one). Matrices cross
column-major (LAPACK's order, set by the operand and result layouts); a batch entry whose
routine reported failure (``info != 0``) is NaN where the primitive's impl makes it so
(``lu`` keeps getrf's factors of a singular matrix, as its impl does). What jax computes
after a call (pivots to a permutation, the permuted right-hand side) is staged from plait
ops and called as a private function of the module."""
from __future__ import annotations

import functools

import numpy as np

from plait import lax
from plait import numpy as pnp
from plait.backends.xla.emitter import i64_array, tensor_type
from plait.backends.xla.rules import RULE, binary, compare, convert, select
from plait.backends.xla.rules_control import call_traced
from plait.backends.xla.rules_extra import _lower_mask
from plait.core.aval import ShapedArray
from plait.lax import linalg as LA

_LAPACK_LETTER = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                  np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def _lapack_target(dtype, real: str, complex_: str) -> str:
    """``lapack_<letter><routine>_ffi`` for ``dtype`` (``real``/``complex_``: the routine's
    names, e.g. syevd/heevd)."""
    dt = np.dtype(dtype)
    return f"lapack_{_LAPACK_LETTER[dt]}{complex_ if dt.kind == 'c' else real}_ffi"


def _layouts(ranks_and_kinds) -> str:
    """MLIR ``operand_layouts``/``result_layouts``: minor-to-major per operand, a batch
    of column-major matrices for ``"matrix"`` (LAPACK's order), row-major otherwise."""
    out = []
    for rank, kind in ranks_and_kinds:
        if kind == "matrix":
            b = rank - 2
            dims = (b, b + 1) + tuple(range(b - 1, -1, -1))
        else:
            dims = tuple(range(rank - 1, -1, -1))
        body = f"[{', '.join(map(str, dims))}]" if dims else ""
        out.append(f"dense<{body}> : tensor<{len(dims)}xindex>")
    return "[" + ", ".join(out) + "]"


def _lapack_call(ctx, target: str, operands: list, operand_specs: list, result_specs: list,
                 config: str = "", alias: bool = True) -> list:
    """``stablehlo.custom_call`` of jaxlib's LAPACK FFI ``target``: ``*_specs`` are
    ``(shape, dtype, kind)`` per operand/result (``kind`` for :func:`_layouts`);
    ``config`` the ``mhlo.backend_config`` entries; with ``alias`` result 0 reuses
    operand 0's buffer (as LAPACK overwrites the matrix it factors)."""
    index = "[0]" if len(result_specs) > 1 else "[]"
    aliases = (", output_operand_aliases = [#stablehlo.output_operand_alias<"
               f"output_tuple_indices = {index}, operand_index = 0, "
               "operand_tuple_indices = []>]") if alias else ""
    return ctx.op(
        "stablehlo.custom_call", operands, [tensor_type(sh, dt) for sh, dt, _ in operand_specs],
        [tensor_type(sh, dt) for sh, dt, _ in result_specs],
        f'call_target_name = "{target}", mhlo.backend_config = {{{config}}}, '
        f"operand_layouts = {_layouts([(len(sh), k) for sh, _, k in operand_specs])}, "
        f"result_layouts = {_layouts([(len(sh), k) for sh, _, k in result_specs])}"
        + aliases)


def _lapack_custom_call(ctx, target: str, a: str, dtype, config: str, results,
                        aliased: bool) -> list:
    """:func:`_lapack_call` on the one matrix stack ``a`` (``ctx.in_avals[0]``'s shape,
    ``dtype``)."""
    return _lapack_call(ctx, target, [a], [(tuple(ctx.in_avals[0].shape), dtype, "matrix")],
                        results, config, alias=aliased)


def _info_ok(ctx, info, batch):
    """Where LAPACK's ``info`` (one per batch entry) is 0."""
    return compare(ctx, info, ctx.full(0, batch, np.int32), batch, np.int32, "EQ")


def _nan_unless_ok(ctx, ok, x, shape, dtype, batch):
    """``x`` where the batch entry's LAPACK ``info`` was 0, NaN elsewhere."""
    okb = ctx.op1("stablehlo.broadcast_in_dim", [ok], [tensor_type(batch, np.bool_)],
                  tensor_type(shape, np.bool_),
                  f"broadcast_dimensions = {i64_array(range(len(batch)))}")
    return select(ctx, okb, x, ctx.full(np.nan, shape, dtype), shape, dtype)


def _axis_slice(ctx, x, shape, dtype, axis: int, lo: int, hi: int):
    """``x`` sliced to ``lo:hi`` along ``axis`` (``x`` itself for the whole axis)."""
    if (lo, hi) == (0, shape[axis]):
        return x
    start, limit, out = [0] * len(shape), list(shape), list(shape)
    start[axis], limit[axis], out[axis] = lo, hi, hi - lo
    return ctx.op1("stablehlo.slice", [x], [tensor_type(shape, dtype)],
                   tensor_type(tuple(out), dtype),
                   f"start_indices = {i64_array(start)}, limit_indices = {i64_array(limit)}, "
                   f"strides = {i64_array([1] * len(shape))}")


def _last_axis_slice(ctx, x, shape, dtype, lo, hi):
    """``x[..., lo:hi]`` (``x`` itself for the whole axis)."""
    return _axis_slice(ctx, x, shape, dtype, len(shape) - 1, lo, hi)


def _eigh(ctx, a, *, lower, sort_eigenvalues, subset_by_index, compute_eigenvectors):
    """LAPACK's syevd/heevd (ascending eigenvalues, as the impl's); a batch entry whose
    factorization failed is NaN; ``subset_by_index`` slices the full result."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    n, batch = sh[-1], sh[:-2]
    rd = np.dtype(np.finfo(dt).dtype)
    if 0 in sh:
        return [ctx.full(0, o.shape, o.dtype) for o in ctx.out_avals]
    mode, uplo = ord("V" if compute_eigenvectors else "N"), ord("L" if lower else "U")
    v, w, info = _lapack_custom_call(
        ctx, _lapack_target(dt, "syevd", "heevd"), a, dt,
        f"mode = {mode} : ui8, uplo = {uplo} : ui8",
        [(sh, dt, "matrix"), (batch + (n,), rd, "vector"), (batch, np.int32, "vector")], True)
    ok = _info_ok(ctx, info, batch)
    w = _nan_unless_ok(ctx, ok, w, batch + (n,), rd, batch)
    lo, hi = subset_by_index or (0, n)
    w = _last_axis_slice(ctx, w, batch + (n,), rd, lo, hi)
    if not compute_eigenvectors:
        return [w]
    v = _last_axis_slice(ctx, _nan_unless_ok(ctx, ok, v, sh, dt, batch), sh, dt, lo, hi)
    return [v, w]


LA.eigh_p.def_rule(RULE, _eigh)


def _pivots_to_permutation(piv, m: int):
    """The permutation (int32, ``(..., m)``) that LAPACK's sequential 0-based row swaps
    ``piv`` (``(..., k)``) apply, in plait ops: a scan over the swaps, each a
    compare-and-select over the rows (as the impl's ``_lu_pivots_to_permutation_np``)."""
    batch, k = tuple(piv.shape[:-1]), piv.shape[-1]
    nb, shape = len(batch), tuple(piv.shape[:-1]) + (m,)
    rows = lax.broadcasted_iota(np.int32, shape, nb)
    zero = lax.full(shape, 0, np.int32)

    def swap(perm, x):
        i, j = x
        at_i = lax.eq(rows, lax.broadcast_in_dim(i, shape, ()))
        at_j = lax.eq(rows, lax.broadcast_in_dim(j, shape, tuple(range(nb))))
        p_i, p_j = (lax.broadcast_in_dim(lax.reduce_sum(lax.select(at, perm, zero), (nb,)),
                                         shape, tuple(range(nb))) for at in (at_i, at_j))
        return lax.select(at_i, p_j, lax.select(at_j, p_i, perm)), None
    cols = lax.transpose(piv, (nb,) + tuple(range(nb)))
    perm, _ = lax.scan(swap, rows, (lax.iota(np.int32, k), cols))
    return [perm]


def _take_rows(perm, b):
    """``b[..., perm[i], :]`` (the impl's ``take_along_axis``: exact, NaN stays put)."""
    return [pnp.take_along_axis(b, lax.broadcast_in_dim(perm, tuple(perm.shape) + (1,),
                                                        tuple(range(len(perm.shape)))),
                                axis=-2)]


def _trsm(ctx, a, b, ash: tuple, bsh: tuple, dt, *, lower: bool, unit_diagonal: bool) -> str:
    """LAPACK/BLAS trsm: ``a⁻¹ b`` for triangular ``a`` (the routine SciPy's ``trtrs``
    runs, so the impl's values; a zero on the diagonal gives IEEE inf/NaN as the impl's
    substitution does)."""
    flags = (f"diag = {ord('U' if unit_diagonal else 'N')} : ui8, side = {ord('L')} : ui8, "
             f"trans_x = {ord('N')} : ui8, uplo = {ord('L' if lower else 'U')} : ui8")
    return ctx.op1(
        "stablehlo.custom_call", [a, b], [tensor_type(ash, dt), tensor_type(bsh, dt)],
        tensor_type(bsh, dt),
        f'call_target_name = "{_lapack_target(dt, "trsm", "trsm")}", '
        f"mhlo.backend_config = {{{flags}}}, "
        f"operand_layouts = {_layouts([(len(ash), 'matrix'), (len(bsh), 'matrix')])}, "
        f"result_layouts = {_layouts([(len(bsh), 'matrix')])}, "
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = "
        "[], operand_index = 1, operand_tuple_indices = []>]")


def _getrf(ctx, a, sh: tuple, dt) -> tuple:
    """LAPACK getrf of the batch of ``(m, n)`` matrices ``a`` (non-empty): ``(lu, pivots,
    permutation)`` as the impl gives them. A singular matrix is factored all the same
    (``info > 0`` marks a zero pivot; the impl keeps those factors, so do we)."""
    batch, (m, n) = sh[:-2], sh[-2:]
    k = min(m, n)
    lu, ipiv, _info = _lapack_custom_call(
        ctx, _lapack_target(dt, "getrf", "getrf"), a, dt, "",
        [(sh, dt, "matrix"), (batch + (k,), np.int32, "vector"), (batch, np.int32, "vector")],
        True)
    piv = binary(ctx, "stablehlo.subtract", ipiv, ctx.full(1, batch + (k,), np.int32),
                 batch + (k,), np.int32)
    perm, = call_traced(ctx, functools.partial(_pivots_to_permutation, m=m), [piv],
                        "lu's pivots as a permutation", [ShapedArray(batch + (k,), np.int32)])
    return lu, piv, perm


def _lu(ctx, a):
    """LAPACK getrf (partial pivoting; 0-based pivots and their permutation)."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    if 0 in sh:
        m = sh[-2]
        perm = ctx.op1("stablehlo.iota", [], [], tensor_type(sh[:-2] + (m,), np.int32),
                       f"iota_dimension = {len(sh) - 2} : i64")
        return [ctx.full(0, sh, dt), ctx.full(0, ctx.out_avals[1].shape, np.int32), perm]
    return list(_getrf(ctx, a, sh, dt))


def _solve(ctx, a, b):
    """``a⁻¹ b`` as the impl computes it: getrf, the rows of ``b`` permuted, then a
    unit-lower and an upper triangular solve (trsm, the routine of the impl's trtrs)."""
    av, bv = ctx.in_avals
    sh, bsh, dt = tuple(av.shape), tuple(bv.shape), np.dtype(av.dtype)
    if 0 in bsh:
        return ctx.full(0, bsh, dt)
    lu, _piv, perm = _getrf(ctx, a, sh, dt)
    pb, = call_traced(ctx, _take_rows, [perm, b], "solve's permuted right-hand side",
                      [ShapedArray(sh[:-1], np.int32), bv])
    y = _trsm(ctx, lu, pb, sh, bsh, dt, lower=True, unit_diagonal=True)
    return _trsm(ctx, lu, y, sh, bsh, dt, lower=False, unit_diagonal=False)


def _tridiagonal_solve(ctx, dl, d, du, b):
    """LAPACK gtsv (partial pivoting; ``dl[..., 0]`` and ``du[..., -1]`` unread). As in
    the impl, a batch entry whose matrix is singular (``info != 0``) is NaN, except a 1x1
    system, which is ``b / d`` (IEEE inf/NaN where ``d == 0``)."""
    sh, dt = tuple(ctx.out_avals[0].shape), np.dtype(ctx.out_avals[0].dtype)
    batch = sh[:-2]
    if 0 in sh:
        return ctx.full(0, sh, dt)
    vt, bt = tensor_type(sh[:-1], dt), tensor_type(sh, dt)
    vec = (len(sh) - 1, "vector")
    aliases = ", ".join("#stablehlo.output_operand_alias<output_tuple_indices = "
                        f"[{i}], operand_index = {i}, operand_tuple_indices = []>"
                        for i in range(4))
    *_, x, info = ctx.op(
        "stablehlo.custom_call", [dl, d, du, b], [vt, vt, vt, bt],
        [vt, vt, vt, bt, tensor_type(batch, np.int32)],
        f'call_target_name = "{_lapack_target(dt, "gtsv", "gtsv")}", '
        "mhlo.backend_config = {}, "
        f"operand_layouts = {_layouts([vec, vec, vec, (len(sh), 'matrix')])}, "
        f"result_layouts = {_layouts([vec, vec, vec, (len(sh), 'matrix'), (len(batch), 'vector')])}, "
        f"output_operand_aliases = [{aliases}]")
    ok = _info_ok(ctx, info, batch)
    if sh[-2] > 1:
        return _nan_unless_ok(ctx, ok, x, sh, dt, batch)
    d_col = ctx.op1("stablehlo.broadcast_in_dim", [d], [vt], bt,
                    f"broadcast_dimensions = {i64_array(range(len(sh) - 1))}")
    okb = ctx.op1("stablehlo.broadcast_in_dim", [ok], [tensor_type(batch, np.bool_)],
                  tensor_type(sh, np.bool_), f"broadcast_dimensions = {i64_array(range(len(batch)))}")
    return select(ctx, okb, x, binary(ctx, "stablehlo.divide", b, d_col, sh, dt), sh, dt)


LA.lu_p.def_rule(RULE, _lu)
LA.solve_p.def_rule(RULE, _solve)
LA.tridiagonal_solve_p.def_rule(RULE, _tridiagonal_solve)


def _eig(ctx, a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    """LAPACK's geev as the impl runs it: with left eigenvectors SciPy's call (right ones
    computed too, in the input's precision), otherwise NumPy's (``jobvl='N'``, in double
    precision, the results rounded to the input's). jaxlib's kernel assembles a real
    input's eigenvector pairs into complex columns, unit-norm as LAPACK leaves them; a
    batch entry whose iteration failed is NaN."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    n, batch = sh[-1], sh[:-2]
    if 0 in sh:
        return [ctx.full(0, o.shape, o.dtype) for o in ctx.out_avals]
    left = compute_left_eigenvectors
    wdt = dt if left else np.dtype(np.float64 if dt.kind == "f" else np.complex128)
    cw = np.result_type(wdt, np.complex64)
    x = convert(ctx, a, sh, dt, wdt)
    vl_job = ord("V" if left else "N")
    vr_job = ord("V" if left or compute_right_eigenvectors else "N")
    config = f"compute_left = {vl_job} : ui8, compute_right = {vr_job} : ui8"
    vec = (sh, cw, "matrix")
    tail = [vec, vec, (batch, np.int32, "vector")]
    target = _lapack_target(wdt, "geev", "geev")
    if wdt.kind == "f":
        wr, wi, vl, vr, info = _lapack_custom_call(
            ctx, target, x, wdt, config, [(batch + (n,), wdt, "vector")] * 2 + tail, False)
        w = binary(ctx, "stablehlo.complex", wr, wi, batch + (n,), wdt, cw)
    else:
        w, vl, vr, info = _lapack_custom_call(
            ctx, target, x, wdt, config, [(batch + (n,), cw, "vector")] + tail, False)
    ok = _info_ok(ctx, info, batch)
    outs = [(w, batch + (n,))] + [(vl, sh)] * left + [(vr, sh)] * compute_right_eigenvectors
    c = np.dtype(ctx.out_avals[0].dtype)
    return [convert(ctx, _nan_unless_ok(ctx, ok, v, s, cw, batch), s, cw, c) for v, s in outs]


LA.eig_p.def_rule(RULE, _eig)


def _schur(ctx, a, *, compute_schur_vectors):
    """LAPACK's gees unsorted (SciPy's ``schur``, the impl): ``t`` real quasi-triangular
    (real input) or triangular (complex), the Schur vectors only when asked for; a batch
    entry whose iteration failed is NaN."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    n, batch = sh[-1], sh[:-2]
    if 0 in sh:
        return [ctx.full(0, o.shape, o.dtype) for o in ctx.out_avals]
    values = [(batch + (n,), dt, "vector")] if dt.kind == "c" else \
        [(batch + (n,), dt, "vector")] * 2
    results = [(sh, dt, "matrix")] * 2 + values + [(batch, np.int32, "vector")] * 2
    config = f"mode = {ord('V' if compute_schur_vectors else 'N')} : ui8, sort = {ord('N')} : ui8"
    outs = _lapack_custom_call(ctx, _lapack_target(dt, "gees", "gees"), a, dt, config, results,
                               True)
    ok = _info_ok(ctx, outs[-1], batch)
    return [_nan_unless_ok(ctx, ok, v, sh, dt, batch)
            for v in outs[:2 if compute_schur_vectors else 1]]


LA.schur_p.def_rule(RULE, _schur)


def _eye(ctx, shape, dtype):
    """Identity matrices of ``shape`` (ones on the leading diagonal), as the impls give
    for the orthogonal factors of an empty matrix."""
    return convert(ctx, _lower_mask(ctx, shape, "EQ"), shape, np.bool_, dtype)


def _qr(ctx, a, *, full_matrices):
    """LAPACK's geqrf, then orgqr/ungqr forming ``q`` from the Householder reflectors
    (numpy.linalg.qr's routines, which the impl calls); ``r`` is the factored matrix's
    upper triangle. ``q``'s input is the factored matrix cut (wide) or zero-padded (tall,
    ``full_matrices``) to ``q``'s shape; geqrf cannot fail, so no ``info``."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    (m, n), batch = sh[-2:], sh[:-2]
    qsh, rsh = (tuple(o.shape) for o in ctx.out_avals)
    if 0 in sh:
        return [_eye(ctx, qsh, dt), ctx.full(0, rsh, dt)]
    k = min(m, n)
    taus = (batch + (k,), dt, "vector")
    f, tau = _lapack_call(ctx, _lapack_target(dt, "geqrf", "geqrf"), [a], [(sh, dt, "matrix")],
                          [(sh, dt, "matrix"), taus])
    if qsh[-1] > n:
        pad = [0] * (len(sh) - 1) + [qsh[-1] - n]
        v = ctx.op1("stablehlo.pad", [f, ctx.const(0, dt)], [tensor_type(sh, dt),
                    tensor_type((), dt)], tensor_type(qsh, dt),
                    f"edge_padding_low = {i64_array([0] * len(sh))}, "
                    f"edge_padding_high = {i64_array(pad)}, "
                    f"interior_padding = {i64_array([0] * len(sh))}")
    else:
        v = _last_axis_slice(ctx, f, sh, dt, 0, qsh[-1])
    (q,) = _lapack_call(ctx, _lapack_target(dt, "orgqr", "ungqr"), [v, tau],
                        [(qsh, dt, "matrix"), taus], [(qsh, dt, "matrix")])
    r = _axis_slice(ctx, f, sh, dt, len(sh) - 2, 0, rsh[-2])
    r = select(ctx, _lower_mask(ctx, rsh, "GT"), ctx.full(0, rsh, dt), r, rsh, dt)
    return [q, r]


LA.qr_p.def_rule(RULE, _qr)


def _finite_or_zero(a):
    """``[finite, a']``: whether each matrix of the stack ``a`` is all finite, and ``a``
    with every other matrix replaced by zeros."""
    finite = pnp.all(pnp.isfinite(a), axis=(-2, -1))
    return [finite, pnp.where(finite[..., None, None], a, pnp.zeros((), a.dtype))]


def _svd(ctx, a, *, full_matrices, compute_uv, subset_by_index):
    """LAPACK's gesdd (the impl's routine; its ``mode``: ``A`` full, ``S`` reduced, ``N``
    values only); a batch entry whose routine failed (no convergence) or whose matrix
    holds inf/NaN is NaN (such a matrix reaches gesdd as zeros: it may never return on
    an inf, Reference-LAPACK/lapack#1409); ``subset_by_index`` slices the reduced
    result, as the impl does."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    (m, n), batch = sh[-2:], sh[:-2]
    k, rd = min(m, n), np.dtype(np.finfo(dt).dtype)
    if 0 in sh:
        return [ctx.full(0, o.shape, o.dtype) if i == 0 else _eye(ctx, tuple(o.shape), dt)
                for i, o in enumerate(ctx.out_avals)]
    full_uv = compute_uv and full_matrices and subset_by_index is None
    mode = "A" if full_uv else "S" if compute_uv else "N"
    ku, kv = (m, n) if full_uv else (k, k)
    ush, vsh, ssh = batch + (m, ku), batch + (kv, n), batch + (k,)
    finite, a = call_traced(ctx, _finite_or_zero, [a], "svd's finite matrices")
    _, s, u, vt, info = _lapack_call(
        ctx, _lapack_target(dt, "gesdd", "gesdd"), [a], [(sh, dt, "matrix")],
        [(sh, dt, "matrix"), (ssh, rd, "vector"), (ush, dt, "matrix"), (vsh, dt, "matrix"),
         (batch, np.int32, "vector")], f"mode = {ord(mode)} : ui8")
    ok = binary(ctx, "stablehlo.and", _info_ok(ctx, info, batch), finite, batch, np.bool_)
    lo, hi = subset_by_index or (0, k)
    s = _last_axis_slice(ctx, _nan_unless_ok(ctx, ok, s, ssh, rd, batch), ssh, rd, lo, hi)
    if not compute_uv:
        return [s]
    u, vt = _nan_unless_ok(ctx, ok, u, ush, dt, batch), _nan_unless_ok(ctx, ok, vt, vsh, dt, batch)
    if subset_by_index is None:
        return [s, u, vt]
    return [s, _last_axis_slice(ctx, u, ush, dt, lo, hi),
            _axis_slice(ctx, vt, vsh, dt, len(vsh) - 2, lo, hi)]


LA.svd_p.def_rule(RULE, _svd)
