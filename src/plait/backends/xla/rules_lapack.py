"""``to_stablehlo`` rules of the linalg primitives XLA's CPU client runs through LAPACK:
each is a ``stablehlo.custom_call`` of one of jaxlib's FFI targets
(``lapack_<s|d|c|z><routine>_ffi``, registered by
:func:`plait.backends.xla.pjrt.register_lapack` when a module calls one). Matrices cross
column-major (LAPACK's order, set by the operand and result layouts); a batch entry whose
routine reported failure (``info != 0``) is NaN, as the primitives' impls make it."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.emitter import aval_type, i64_array, tensor_type
from plait.backends.xla.rules import REFUSED, RULE, binary, compare, convert, select
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


def _nan_unless_ok(ctx, ok, x, shape, dtype, batch):
    """``x`` where the batch entry's LAPACK ``info`` was 0, NaN elsewhere."""
    okb = ctx.op1("stablehlo.broadcast_in_dim", [ok], [tensor_type(batch, np.bool_)],
                  tensor_type(shape, np.bool_),
                  f"broadcast_dimensions = {i64_array(range(len(batch)))}")
    return select(ctx, okb, x, ctx.full(np.nan, shape, dtype), shape, dtype)


def _last_axis_slice(ctx, x, shape, dtype, lo, hi):
    """``x[..., lo:hi]`` (``x`` itself for the whole axis)."""
    if (lo, hi) == (0, shape[-1]):
        return x
    r = len(shape)
    return ctx.op1("stablehlo.slice", [x], [tensor_type(shape, dtype)],
                   tensor_type(tuple(shape[:-1]) + (hi - lo,), dtype),
                   f"start_indices = {i64_array([0] * (r - 1) + [lo])}, "
                   f"limit_indices = {i64_array(list(shape[:-1]) + [hi])}, "
                   f"strides = {i64_array([1] * r)}")


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
    types = [tensor_type(sh, dt), tensor_type(batch + (n,), rd), tensor_type(batch, np.int32)]
    v, w, info = ctx.op(
        "stablehlo.custom_call", [a], [aval_type(av)], types,
        f'call_target_name = "{_lapack_target(dt, "syevd", "heevd")}", '
        f"mhlo.backend_config = {{mode = {mode} : ui8, uplo = {uplo} : ui8}}, "
        f"operand_layouts = {_layouts([(len(sh), 'matrix')])}, "
        f"result_layouts = {_layouts([(len(sh), 'matrix'), (len(batch) + 1, 'vector'), (len(batch), 'vector')])}, "
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = "
        "[0], operand_index = 0, operand_tuple_indices = []>]")
    ok = compare(ctx, info, ctx.full(0, batch, np.int32), batch, np.int32, "EQ")
    w = _nan_unless_ok(ctx, ok, w, batch + (n,), rd, batch)
    lo, hi = subset_by_index or (0, n)
    w = _last_axis_slice(ctx, w, batch + (n,), rd, lo, hi)
    if not compute_eigenvectors:
        return [w]
    v = _last_axis_slice(ctx, _nan_unless_ok(ctx, ok, v, sh, dt, batch), sh, dt, lo, hi)
    return [v, w]


LA.eigh_p.def_rule(RULE, _eigh)


def _lapack_custom_call(ctx, target: str, a: str, dtype, config: str, results,
                        aliased: bool) -> list:
    """One ``stablehlo.custom_call`` of jaxlib's LAPACK FFI ``target`` on the matrix stack
    ``a`` (``ctx.in_avals[0]``'s shape, ``dtype``); ``config`` is the
    ``mhlo.backend_config`` dictionary's body, ``results`` ``(shape, dtype, kind)``
    triples (kind as in :func:`_layouts`); with ``aliased`` the first result overwrites
    the operand (as LAPACK overwrites the matrix it factors)."""
    sh = tuple(ctx.in_avals[0].shape)
    alias = (", output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices"
             " = [0], operand_index = 0, operand_tuple_indices = []>]" if aliased else "")
    return ctx.op(
        "stablehlo.custom_call", [a], [tensor_type(sh, dtype)],
        [tensor_type(shape, dtype) for shape, dtype, _ in results],
        f'call_target_name = "{target}", mhlo.backend_config = {{{config}}}, '
        f"operand_layouts = {_layouts([(len(sh), 'matrix')])}, "
        f"result_layouts = {_layouts([(len(shape), kind) for shape, _, kind in results])}"
        + alias)


def _info_ok(ctx, info, batch):
    """Where LAPACK's ``info`` (one per batch entry) is 0."""
    return compare(ctx, info, ctx.full(0, batch, np.int32), batch, np.int32, "EQ")


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

_LAPACK = ("needs a LAPACK routine: XLA's CPU client has no StableHLO op for it; its "
           "lowering through jaxlib's LAPACK custom calls (as eigh's) is not written yet; "
           "use the native backend")
for _name in ("lu", "solve", "qr", "svd"):
    REFUSED[_name] = _LAPACK
REFUSED["tridiagonal_solve"] = ("no StableHLO op; XLA's CPU lowering calls LAPACK gtsv "
                                "through a jax-registered custom call; use the native backend")
