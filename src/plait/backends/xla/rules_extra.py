"""``to_stablehlo`` rules of primitives outside plait.lax's core modules: the linear
algebra that StableHLO has ops for (``cholesky``, ``triangular_solve``) and remat
markers (the special functions lower from their descriptors). The LAPACK-backed
factorizations are in :mod:`plait.backends.xla.rules_lapack`."""
from __future__ import annotations

import numpy as np

from plait.backends.xla.emitter import aval_type, i64_array, tensor_type
from plait.backends.xla.rules import RULE, binary, compare, select
from plait.core import remat as RM
from plait.lax import linalg as LA

RM.remat_p.def_rule(RULE, lambda ctx, *args, graph, **_: ctx.call_graph(
    graph, list(args), [aval_type(a) for a in ctx.in_avals]))
RM.checkpoint_name_p.def_rule(RULE, lambda ctx, x, *, name: x)
RM.optimization_barrier_p.def_rule(RULE, lambda ctx, *xs: ctx.op(
    "stablehlo.optimization_barrier", list(xs), [aval_type(a) for a in ctx.in_avals],
    [aval_type(a) for a in ctx.in_avals]) if xs else [])


def _lower_mask(ctx, shape, direction: str = "GE"):
    """``row <direction> col`` over the last two dims of ``shape`` (the default ``GE``:
    the lower triangle; ``GT`` the strict one, ``EQ`` the diagonal)."""
    n = len(shape)
    i64 = np.dtype(np.int64)
    r = ctx.op1("stablehlo.iota", [], [], tensor_type(shape, i64), f"iota_dimension = {n - 2} : i64")
    c = ctx.op1("stablehlo.iota", [], [], tensor_type(shape, i64), f"iota_dimension = {n - 1} : i64")
    return compare(ctx, r, c, shape, i64, direction)


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
