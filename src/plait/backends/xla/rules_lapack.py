"""``to_stablehlo`` rules of the linalg primitives XLA's CPU client runs through LAPACK:
each is a ``stablehlo.custom_call`` of one of jaxlib's FFI targets
(``lapack_<s|d|c|z><routine>_ffi``, registered by
:func:`plait.backends.xla.pjrt.register_lapack` when a module calls one). Matrices cross
column-major (LAPACK's order, set by the operand and result layouts); a batch entry whose
routine reported failure (``info != 0``) is NaN, as the primitives' impls make it."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.emitter import aval_type, i64_array, tensor_type
from plait.backends.xla.rules import REFUSED, RULE, compare, convert, select
from plait.backends.xla.rules_extra import _lower_mask
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

def _lapack_call(ctx, target: str, operands: list, operand_specs: list, result_specs: list,
                 config: str = "") -> list:
    """``stablehlo.custom_call`` of jaxlib's LAPACK FFI ``target``: ``*_specs`` are
    ``(shape, dtype, kind)`` per operand/result (``kind`` for :func:`_layouts`);
    ``config`` the ``mhlo.backend_config`` entries; result 0 reuses operand 0's buffer."""
    aliased = "[0]" if len(result_specs) > 1 else "[]"
    return ctx.op(
        "stablehlo.custom_call", operands, [tensor_type(sh, dt) for sh, dt, _ in operand_specs],
        [tensor_type(sh, dt) for sh, dt, _ in result_specs],
        f'call_target_name = "{target}", mhlo.backend_config = {{{config}}}, '
        f"operand_layouts = {_layouts([(len(sh), k) for sh, _, k in operand_specs])}, "
        f"result_layouts = {_layouts([(len(sh), k) for sh, _, k in result_specs])}, "
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = "
        f"{aliased}, operand_index = 0, operand_tuple_indices = []>]")


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


def _svd(ctx, a, *, full_matrices, compute_uv, subset_by_index):
    """LAPACK's gesdd (the impl's routine; its ``mode``: ``A`` full, ``S`` reduced, ``N``
    values only); a batch entry whose routine failed (no convergence, or a NaN input)
    is NaN; ``subset_by_index`` slices the reduced result, as the impl does."""
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
    _, s, u, vt, info = _lapack_call(
        ctx, _lapack_target(dt, "gesdd", "gesdd"), [a], [(sh, dt, "matrix")],
        [(sh, dt, "matrix"), (ssh, rd, "vector"), (ush, dt, "matrix"), (vsh, dt, "matrix"),
         (batch, np.int32, "vector")], f"mode = {ord(mode)} : ui8")
    ok = compare(ctx, info, ctx.full(0, batch, np.int32), batch, np.int32, "EQ")
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

_LAPACK = ("needs a LAPACK routine: XLA's CPU client has no StableHLO op for it; its "
           "lowering through jaxlib's LAPACK custom calls (as eigh's) is not written yet; "
           "use the native backend")
for _name in ("lu", "solve", "eig", "schur"):
    REFUSED[_name] = _LAPACK
REFUSED["tridiagonal_solve"] = ("no StableHLO op; XLA's CPU lowering calls LAPACK gtsv "
                                "through a jax-registered custom call; use the native backend")
