"""The differentiation table: one row per differentiable primitive (and variants).

Each row has a function of float arrays binding the primitive and an argument maker
``make(rng, dtype)`` that keeps inputs inside the primitive's smooth domain (no ties,
no branch cuts, away from poles). ``test_ad_table.py`` runs ``check_grads`` at order 2
in both modes on every row, in float32 and float64.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from plait import lax
from plait.core.primitive import Primitive
from plait.lax import elementwise as ew, shape_ops as so, reductions as red
from plait.lax import cumulative as cu, contractions as ct, windowed as wi
from plait.lax import indexing as ix, sorting as srt
from plait.lax.fft import fft_p
from plait.lax import special as sp


@dataclasses.dataclass
class ADCase:
    name: str
    prim: Primitive
    fn: Callable
    make: Callable   # (rng, dtype) -> tuple of args
    complex_ok: bool = False

    @property
    def id(self):
        return self.name


CASES: list[ADCase] = []


def case(name, prim, fn, make, complex_ok=False):
    CASES.append(ADCase(name, prim, fn, make, complex_ok))


def u(lo, hi, shape=(2, 3)):
    return lambda rng, dt: (rng.uniform(lo, hi, shape).astype(dt),)


def distinct(shape=(2, 3), n=1, scale=1.0):
    """Values that are pairwise well separated (no ties for max/sort/argmax)."""
    def make(rng, dt):
        size = int(np.prod(shape))
        out = []
        for k in range(n):
            v = (rng.permutation(size) + 0.5 * k + 0.1 * rng.random(size)) * scale
            out.append(v.reshape(shape).astype(dt))
        return tuple(out)
    return make


def two(lo, hi, shape=(2, 3)):
    return lambda rng, dt: tuple(rng.uniform(lo, hi, shape).astype(dt) for _ in range(2))


N = u(-1.5, 1.5)
P = u(0.5, 2.0)
UNIT = u(-0.8, 0.8)

# --- elementwise unary ----------------------------------------------------------------
for nm, p, mk in [("neg", ew.neg_p, N), ("exp", ew.exp_p, N), ("exp2", ew.exp2_p, N),
                  ("log", ew.log_p, P), ("log1p", ew.log1p_p, P), ("expm1", ew.expm1_p, N),
                  ("tanh", ew.tanh_p, N), ("logistic", ew.logistic_p, N),
                  ("sin", ew.sin_p, N), ("cos", ew.cos_p, N), ("tan", ew.tan_p, UNIT),
                  ("asin", ew.asin_p, UNIT), ("acos", ew.acos_p, UNIT),
                  ("atan", ew.atan_p, N), ("sinh", ew.sinh_p, N), ("cosh", ew.cosh_p, N),
                  ("asinh", ew.asinh_p, N), ("acosh", ew.acosh_p, u(1.5, 3.0)),
                  ("atanh", ew.atanh_p, UNIT), ("sqrt", ew.sqrt_p, P),
                  ("rsqrt", ew.rsqrt_p, P), ("cbrt", ew.cbrt_p, P),
                  ("abs", ew.abs_p, P), ("erf", sp.erf_p, N), ("erfc", sp.erfc_p, N),
                  ("lgamma", sp.lgamma_p, P), ("digamma", sp.digamma_p, P)]:
    case(nm, p, (lambda p: lambda x: p.bind(x))(p), mk,
         complex_ok=nm in ("neg", "exp", "log", "sin", "cos", "tanh", "sqrt"))
case("integer_pow3", ew.integer_pow_p, lambda x: lax.integer_pow(x, 3), N)
case("integer_pow-2", ew.integer_pow_p, lambda x: lax.integer_pow(x, -2), P)
case("real", ew.real_p, lambda x, y: ew.real(lax.complex(x, y)), two(-1, 1))
case("imag", ew.imag_p, lambda x, y: ew.imag(lax.mul(lax.complex(x, y), lax.complex(y, x))),
     two(-1, 1))
case("conj", ew.conj_p, lambda x, y: ew.real(lax.mul(lax.conj(lax.complex(x, y)),
                                                    lax.complex(y, x))), two(-1, 1))
case("complex", ew.complex_p, lambda x, y: lax.abs(lax.complex(x, y)), two(0.5, 1.5))
case("abs_complex", ew.abs_p, lambda x, y: lax.abs(lax.complex(x, y)), two(0.5, 1.5))

# --- elementwise binary -------------------------------------------------------------
for nm, p, mk in [("add", ew.add_p, two(-1, 1)), ("sub", ew.sub_p, two(-1, 1)),
                  ("mul", ew.mul_p, two(-1, 1)), ("div", ew.div_p, two(0.5, 2)),
                  ("pow", ew.pow_p, two(0.5, 2)), ("atan2", ew.atan2_p, two(0.5, 2)),
                  ("logaddexp", ew.logaddexp_p, two(-2, 2)),
                  ("max", ew.max_p, distinct(n=2)), ("min", ew.min_p, distinct(n=2)),
                  ("rem", ew.rem_p, lambda rng, dt: (rng.uniform(2.1, 2.9, (2, 3)).astype(dt),
                                                    rng.uniform(0.6, 0.9, (2, 3)).astype(dt)))]:
    case(nm, p, (lambda p: lambda x, y: p.bind(x, y))(p), mk,
         complex_ok=nm in ("add", "sub", "mul", "div"))
case("copysign", ew.copysign_p, lambda x, y: lax.copysign(x, y), two(-1, 1))
case("select", ew.select_p, lambda x, y: lax.select(lax.gt(x, 0.0), x, y), two(-1, 1))
case("clamp", ew.clamp_p, lambda lo, x, hi: lax.clamp(lo, x, hi),
     lambda rng, dt: (rng.uniform(-2, -1, (2, 3)).astype(dt),
                      rng.uniform(-3, 3, (2, 3)).astype(dt),
                      rng.uniform(1, 2, (2, 3)).astype(dt)))
case("convert", ew.convert_element_type_p,
     lambda x: lax.convert_element_type(lax.mul(x, x), np.float64 if x.dtype == np.float32
                                        else np.float32), N)

# --- shape ops ------------------------------------------------------------------------
case("broadcast_in_dim", so.broadcast_in_dim_p,
     lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)), N)
case("broadcast_in_dim_ones", so.broadcast_in_dim_p,
     lambda x: lax.broadcast_in_dim(x, (2, 2, 3), (0, 2)), u(-1, 1, (2, 1)))
case("reshape", so.reshape_p, lambda x: lax.reshape(x, (3, 2)), N)
case("transpose", so.transpose_p, lambda x: lax.transpose(x, (1, 0)), N)
case("squeeze", so.squeeze_p, lambda x: lax.squeeze(x, (1,)), u(-1, 1, (2, 1, 3)))
case("expand_dims", so.expand_dims_p, lambda x: lax.expand_dims(x, (0, 2)), N)
case("rev", so.rev_p, lambda x: lax.rev(x, (1,)), N)
case("slice", so.slice_p, lambda x: lax.slice(x, (0, 1), (3, 5), (2, 2)), u(-1, 1, (4, 5)))
case("dynamic_slice", so.dynamic_slice_p,
     lambda x: lax.dynamic_slice(x, (np.int64(1), np.int64(3)), (2, 2)), u(-1, 1, (4, 5)))
case("dynamic_update_slice", so.dynamic_update_slice_p,
     lambda x, v: lax.dynamic_update_slice(x, v, (np.int64(1), np.int64(2))),
     lambda rng, dt: (rng.uniform(-1, 1, (4, 5)).astype(dt),
                      rng.uniform(-1, 1, (2, 2)).astype(dt)))
case("concatenate", so.concatenate_p, lambda x, y: lax.concatenate([x, y, x], 1), two(-1, 1))
case("pad", so.pad_p, lambda x, v: lax.pad(x, v, ((1, -1, 1), (2, 0, 0))),
     lambda rng, dt: (rng.uniform(-1, 1, (2, 3)).astype(dt), dt.type(0.5)))

# --- reductions, cumulative -------------------------------------------------------------
case("reduce_sum", red.reduce_sum_p, lambda x: lax.reduce_sum(x, (0,)), N)
case("reduce_prod", red.reduce_prod_p, lambda x: lax.reduce_prod(x, (1,)), N)
case("reduce_prod_all", red.reduce_prod_p, lambda x: lax.reduce_prod(x, (0, 1)), N)
case("reduce_max", red.reduce_max_p, lambda x: lax.reduce_max(x, (1,)), distinct())
case("reduce_min", red.reduce_min_p, lambda x: lax.reduce_min(x, (0, 1)), distinct())
case("cumsum", cu.cumsum_p, lambda x: lax.cumsum(x, 1, reverse=True), N)
case("cumprod", cu.cumprod_p, lambda x: lax.cumprod(x, 1), u(-1.5, 1.5, (2, 5)))
case("cumprod_rev", cu.cumprod_p, lambda x: lax.cumprod(x, 0, reverse=True), N)
case("cummax", cu.cummax_p, lambda x: lax.cummax(x, 1), distinct((2, 5)))
case("cummin", cu.cummin_p, lambda x: lax.cummin(x, 1, reverse=True), distinct((2, 5)))

# --- contractions ---------------------------------------------------------------------
case("dot_general", ct.dot_general_p, lambda x, y: lax.dot(x, lax.transpose(y, (1, 0))),
     two(-1, 1), complex_ok=True)
case("dot_general_batch", ct.dot_general_p,
     lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (2,)))),
     lambda rng, dt: (rng.uniform(-1, 1, (2, 3, 4)).astype(dt),
                      rng.uniform(-1, 1, (5, 4, 2)).astype(dt)))
case("conv", ct.conv_general_dilated_p,
     lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (1, 1)), (1, 2), (1, 1),
                                           ("NHWC", "HWIO", "NHWC")),
     lambda rng, dt: (rng.uniform(-1, 1, (2, 5, 4, 3)).astype(dt),
                      rng.uniform(-1, 1, (3, 2, 3, 4)).astype(dt)))
case("conv_groups", ct.conv_general_dilated_p,
     lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", None, (2, 1),
                                           feature_group_count=2),
     lambda rng, dt: (rng.uniform(-1, 1, (2, 4, 5, 4)).astype(dt),
                      rng.uniform(-1, 1, (6, 2, 2, 3)).astype(dt)))
case("conv_batch_groups", ct.conv_general_dilated_p,
     lambda x, w: lax.conv_general_dilated(x, w, (1, 2), "VALID", batch_group_count=2),
     lambda rng, dt: (rng.uniform(-1, 1, (4, 3, 4, 5)).astype(dt),
                      rng.uniform(-1, 1, (4, 3, 2, 2)).astype(dt)))

# --- windowed -------------------------------------------------------------------------
case("reduce_window_sum", wi.reduce_window_sum_p,
     lambda x: lax.reduce_window_sum(x, (2, 3), (1, 2), ((1, 0), (1, 2))), u(-1, 1, (4, 5)))
case("reduce_window_sum_dil", wi.reduce_window_sum_p,
     lambda x: lax.reduce_window_sum(x, (2, 2), (2, 1), "SAME", (1, 2), (2, 1)),
     u(-1, 1, (4, 5)))
case("reduce_window_max", wi.reduce_window_max_p,
     lambda x: lax.reduce_window_max(x, (2, 2), (2, 2), "VALID"), distinct((4, 6)))
case("reduce_window_min", wi.reduce_window_min_p,
     lambda x: lax.reduce_window_min(x, (3, 2), (1, 1), "SAME"), distinct((4, 5)))

# --- indexing -------------------------------------------------------------------------
_IDX = np.array([[2], [0], [3], [2]], np.int64)
_GDN = ix.GatherDimensionNumbers((1,), (0,), (0,))
_SDN = ix.ScatterDimensionNumbers((1,), (0,), (0,))
case("gather", ix.gather_p, lambda x: lax.gather(x, _IDX, _GDN, (1, 3)), u(-1, 1, (4, 3)))
case("gather_fill", ix.gather_p,
     lambda x: lax.gather(x, np.array([[1], [3], [5]]), _GDN, (1, 3), mode="fill",
                          fill_value=0.0), u(-1, 1, (4, 3)))
_UIDX = np.array([[2], [0]], np.int64)
for nm, p, fn in [("scatter", ix.scatter_p, lax.scatter),
                  ("scatter_add", ix.scatter_add_p, lax.scatter_add),
                  ("scatter_mul", ix.scatter_mul_p, lax.scatter_mul)]:
    case(nm, p, (lambda fn: lambda x, v: fn(x, _IDX, v, _SDN))(fn),
         lambda rng, dt: (rng.uniform(0.5, 1.5, (4, 3)).astype(dt),
                          rng.uniform(0.5, 1.5, (4, 3)).astype(dt)))
case("scatter_mul_unique", ix.scatter_mul_p,
     lambda x, v: lax.scatter_mul(x, _UIDX, v, _SDN, unique_indices=True),
     lambda rng, dt: (rng.uniform(-1, 1, (4, 3)).astype(dt),
                      rng.uniform(-1, 1, (2, 3)).astype(dt)))
for nm, p, fn in [("scatter_max", ix.scatter_max_p, lax.scatter_max),
                  ("scatter_min", ix.scatter_min_p, lax.scatter_min)]:
    case(nm, p, (lambda fn: lambda x, v: fn(x, _IDX, v, _SDN))(fn),
         lambda rng, dt: distinct((4, 3), 1)(rng, dt) + distinct((4, 3), 1, 1.3)(rng, dt))

# --- fft (complex operands built from two real ones) ----------------------------------
case("fft", fft_p, lambda x, y: lax.fft(lax.complex(x, y), "fft", (4,)), two(-1.5, 1.5, (2, 4)))
case("ifft2", fft_p, lambda x, y: lax.fft(lax.complex(x, y), "ifft", (3, 4)),
     two(-1.5, 1.5, (2, 3, 4)))
case("rfft", fft_p, lambda x: lax.fft(x, "rfft", (6,)), u(-1.5, 1.5, (2, 6)))
case("rfft2_odd", fft_p, lambda x: lax.fft(x, "rfft", (3, 5)), u(-1.5, 1.5, (3, 5)))
case("irfft", fft_p, lambda x, y: lax.fft(lax.complex(x, y), "irfft", (6,)),
     two(-1.5, 1.5, (2, 4)))
case("irfft2_odd", fft_p, lambda x, y: lax.fft(lax.complex(x, y), "irfft", (2, 5)),
     two(-1.5, 1.5, (2, 3)))

# --- sorting --------------------------------------------------------------------------
case("sort", srt.sort_p, lambda x: lax.sort(x, 1), distinct((3, 4)))
case("sort_key_val", srt.sort_p, lambda k, v: lax.sort_key_val(k, v, 0)[1],
     lambda rng, dt: distinct((3, 4))(rng, dt) + (rng.uniform(-1, 1, (3, 4)).astype(dt),))

# Primitives that are differentiable but whose derivative is zero almost everywhere
# (or that only accept integers): covered by defjvp_zero, listed here for the sweep.
ZERO_DERIVATIVE = {"sign", "floor", "ceil", "round", "is_finite", "not", "population_count",
                   "nextafter", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
                   "shift_right_logical", "eq", "ne", "lt", "le", "gt", "ge", "iota",
                   "reduce_and", "reduce_or", "reduce_xor", "argmax", "argmin",
                   "stop_gradient"}

# --- linalg (well-conditioned inputs: SPD, distinct eigen/singular values) -------------
from plait.lax import linalg as la  # noqa: E402


def _spd(n, shape=()):
    def make(rng, dt):
        a = rng.uniform(-1, 1, shape + (n, n))
        return ((a @ np.swapaxes(a, -1, -2) + np.diag(np.arange(1.0, n + 1) * n)).astype(dt),)
    return make


def _tri(n, k=2):
    return lambda rng, dt: ((np.tril(rng.uniform(-1, 1, (n, n))) + 3 * np.eye(n)).astype(dt),
                            rng.uniform(-1, 1, (n, k)).astype(dt))


def _gen(shape, shift=0.0):
    return lambda rng, dt: ((rng.uniform(-1, 1, shape) +
                             shift * np.eye(*shape[-2:])).astype(dt),)


def _sv(m, n):
    """Matrices with well separated singular values 1, 2, 3, ..."""
    def make(rng, dt):
        q1 = np.linalg.qr(rng.uniform(-1, 1, (m, m)))[0]
        q2 = np.linalg.qr(rng.uniform(-1, 1, (n, n)))[0]
        s = np.zeros((m, n))
        k = min(m, n)
        s[np.arange(k), np.arange(k)] = np.arange(1.0, k + 1)
        return ((q1 @ s @ q2).astype(dt),)
    return make


case("cholesky", la.cholesky_p, la.cholesky, _spd(3, (2,)), complex_ok=True)
case("triangular_solve_left", la.triangular_solve_p,
     lambda a, b: la.triangular_solve(a, b, left_side=True, lower=True), _tri(3),
     complex_ok=True)
case("triangular_solve_right_t", la.triangular_solve_p,
     lambda a, b: la.triangular_solve(a, b.T, lower=True, transpose_a=True,
                                      unit_diagonal=True), _tri(3))
case("lu", la.lu_p, lambda a: la.lu(a)[0], _gen((3, 3), 3.0), complex_ok=True)
case("solve", la.solve_p, lambda a, b: la.solve_p.bind(a, b),
     lambda rng, dt: (_gen((2, 3, 3), 3.0)(rng, dt)[0], rng.uniform(-1, 1, (2, 3, 2)).astype(dt)),
     complex_ok=True)
case("qr", la.qr_p, lambda a: la.qr(a, full_matrices=False), _gen((4, 3), 1.0))
case("qr_square_complex", la.qr_p, lambda a: la.qr(a)[1], _gen((3, 3), 2.0),
     complex_ok=True)
case("eigh", la.eigh_p, la.eigh, _spd(3, (2,)))
case("eigh_values_complex", la.eigh_p, lambda a: la.eigh(a)[1], _spd(3), complex_ok=True)
case("eig_values", la.eig_p,
     lambda a: la.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0],
     _gen((3, 3), 0.0))
case("eig_vectors_abs", la.eig_p,
     lambda a: lax.abs(la.eig(a, compute_left_eigenvectors=False)[1]), _spd(3))
def _svd_gauge_free(a):
    """Singular values and sign-invariant functions of the singular vectors (each
    vector's sign is arbitrary, so finite differences of raw vectors can jump)."""
    s, u, vt = la.svd(a, full_matrices=False)
    return s, (u * s ** 2) @ vt, (u * s) @ u.T, (vt.T * s) @ vt


case("svd", la.svd_p, _svd_gauge_free, _sv(4, 3))
case("svd_wide", la.svd_p, _svd_gauge_free, _sv(2, 4))
case("svd_values", la.svd_p, lambda a: la.svd(a, compute_uv=False), _sv(3, 4),
     complex_ok=True)
case("tridiagonal_solve", la.tridiagonal_solve_p, la.tridiagonal_solve,
     lambda rng, dt: (rng.uniform(-1, 1, 4).astype(dt), rng.uniform(4, 5, 4).astype(dt),
                      rng.uniform(-1, 1, 4).astype(dt), rng.uniform(-1, 1, (4, 2)).astype(dt)),
     complex_ok=True)
