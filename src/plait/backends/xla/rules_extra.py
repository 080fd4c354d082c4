"""``to_stablehlo`` rules of primitives outside plait.lax's core modules: linear algebra
that StableHLO has ops for, ``eigh`` as a custom call of jaxlib's LAPACK (registered by
:func:`plait.backends.xla.pjrt.register_lapack` when a module needs it), and remat
markers (the special functions lower from their descriptors). The other linalg
primitives are in :data:`plait.backends.xla.rules.REFUSED`."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.emitter import aval_type, i64_array, tensor_type
from plait.backends.xla.rules import REFUSED, RULE, binary, compare, select
from plait.core import remat as RM
from plait.lax import linalg as LA

RM.remat_p.def_rule(RULE, lambda ctx, *args, graph, **_: ctx.call_graph(
    graph, list(args), [aval_type(a) for a in ctx.in_avals]))
RM.checkpoint_name_p.def_rule(RULE, lambda ctx, x, *, name: x)
RM.optimization_barrier_p.def_rule(RULE, lambda ctx, *xs: ctx.op(
    "stablehlo.optimization_barrier", list(xs), [aval_type(a) for a in ctx.in_avals],
    [aval_type(a) for a in ctx.in_avals]) if xs else [])


def _lower_mask(ctx, shape):
    """``row >= col`` over the last two dims of ``shape``."""
    n = len(shape)
    i64 = np.dtype(np.int64)
    r = ctx.op1("stablehlo.iota", [], [], tensor_type(shape, i64), f"iota_dimension = {n - 2} : i64")
    c = ctx.op1("stablehlo.iota", [], [], tensor_type(shape, i64), f"iota_dimension = {n - 1} : i64")
    return compare(ctx, r, c, shape, i64, "GE")


def _cholesky(ctx, a):
    """Lower factor with a zero upper triangle; a failed factorization is all NaN (impl)."""
    av = ctx.in_avals[0]
    sh, dt = tuple(av.shape), np.dtype(av.dtype)
    if 0 in sh:
        return a
    lo = ctx.op1("stablehlo.cholesky", [a], [aval_type(av)], aval_type(av), "lower = true")
    lo = select(ctx, _lower_mask(ctx, sh), lo, ctx.full(0, sh, dt), sh, dt)
    nan = compare(ctx, lo, lo, sh, dt, "NE")
    types = [tensor_type((), np.bool_)] * 2

    def body(sub, args):
        return [binary(sub, "stablehlo.or", args[0], args[1], (), np.bool_)], types[:1]
    bsh = sh[:-2]
    bad = ctx.op1("stablehlo.reduce", [nan, ctx.const(False, np.bool_)],
                  [tensor_type(sh, np.bool_), types[0]], tensor_type(bsh, np.bool_),
                  f"dimensions = {i64_array([len(sh) - 2, len(sh) - 1])}",
                  [ctx.region(types, body)])
    badb = ctx.op1("stablehlo.broadcast_in_dim", [bad], [tensor_type(bsh, np.bool_)],
                   tensor_type(sh, np.bool_),
                   f"broadcast_dimensions = {i64_array(range(len(bsh)))}")
    return select(ctx, badb, ctx.full(np.nan, sh, dt), lo, sh, dt)


def _trsolve(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    av, bv = ctx.in_avals
    if 0 in tuple(bv.shape):
        return ctx.full(0, bv.shape, bv.dtype)
    if conjugate_a and not transpose_a:
        from plait.backends.xla.rules_elementwise import _conj
        from plait.backends.xla.emitter import Ctx
        a = _conj(Ctx(ctx.em, ctx.lines, [av], [av]), a)
    mode = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
    return ctx.op1("stablehlo.triangular_solve", [a, b], [aval_type(av), aval_type(bv)],
                   aval_type(ctx.out_avals[0]),
                   f"left_side = {str(bool(left_side)).lower()}, lower = "
                   f"{str(bool(lower)).lower()}, unit_diagonal = "
                   f"{str(bool(unit_diagonal)).lower()}, transpose_a = "
                   f"#stablehlo<transpose {mode}>")


LA.cholesky_p.def_rule(RULE, _cholesky)
LA.triangular_solve_p.def_rule(RULE, _trsolve)

# -- LAPACK through jaxlib's FFI custom calls (registered by pjrt.register_lapack) ----------
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

_LAPACK = ("needs a LAPACK routine: XLA's CPU client has no StableHLO op for it; its "
           "lowering through jaxlib's LAPACK custom calls (as eigh's) is not written yet; "
           "use the native backend")
for _name in ("lu", "solve", "qr", "eig", "svd", "schur"):
    REFUSED[_name] = _LAPACK
REFUSED["tridiagonal_solve"] = ("no StableHLO op; XLA's CPU lowering calls LAPACK gtsv "
                                "through a jax-registered custom call; use the native backend")
