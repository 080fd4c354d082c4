"""The NumPy names added for issue 24 item 13, against NumPy.

Every entry runs eagerly on each of its cases (several shapes and dtypes, empty and
one-element inputs included; where NumPy refuses an input plait must refuse it with
the same exception class). Entries that work under ``jit`` are also compiled with the
default backend (native when a C compiler exists), many entries and cases per jit
so the suite stays fast. Differentiable functions are checked against finite
differences (``check_grads``), ``vectorize`` and a few others under ``vmap``, and the
documented errors (immutable in-place updates, data-dependent shapes under ``jit``)
are checked for their messages.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import ConcretizationError, PlaitError
from plait.test_util import check_grads

RNG = np.random.default_rng(24)
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-11, "complex64": 2e-5,
        "complex128": 1e-11}


def rn(*shape, dtype="float64", lo=None, hi=None):
    """Random values of ``dtype`` (ints in [lo, hi), floats normal or uniform in [lo, hi))."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.random(shape) < 0.5
    if dt.kind in "iu":
        return RNG.integers(0 if lo is None else lo, 9 if hi is None else hi, shape).astype(dt)
    v = RNG.standard_normal(shape) if lo is None else RNG.uniform(lo, hi, shape)
    if dt.kind == "c":
        v = v + 1j * RNG.standard_normal(shape)
    return v.astype(dt)


@dataclass
class E:
    """One entry: plait function, NumPy oracle, argument tuples (NumPy arrays are the
    traced arguments under jit; anything else is static)."""
    name: str
    fn: Callable
    ref: Callable
    cases: list
    rtol: float | None = None
    jit: bool = True
    group: str = "misc"


def _mut(np_fn):
    """NumPy's in-place function as a pure one: copy, update, return the copy."""
    def ref(a, *args):
        b = np.array(a, copy=True)
        np_fn(b, *args)
        return b
    return ref


def _pad_to(v, n, fill):
    v = np.asarray(v)
    return np.concatenate([v, np.full(n - v.size, fill, v.dtype)])


def _nan_free_rows(a, w, q):
    """NumPy 2.4's weighted nanquantile along an axis fails (IndexError); the oracle drops
    each row's NaNs and their weights and takes the weighted quantile of the rest."""
    return np.array([np.quantile(r[~np.isnan(r)], q, method="inverted_cdf",
                                 weights=w[~np.isnan(r)]) if (~np.isnan(r)).any() else np.nan
                     for r in a])


F32, F64, I8, I32, U8, C128 = "float32", "float64", "int8", "int32", "uint8", "complex128"
x64 = rn(7)
xp_sorted = np.sort(rn(6))
fp6 = rn(6)
mat = rn(4, 5)
cube = rn(3, 4, 5)

ENTRIES = [
    # --- math functions ------------------------------------------------------------------
    E("frexp", pnp.frexp, np.frexp,
      [(np.array([3.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -5.5, 1e300]),),
       (np.array([1.5, 1e-40, -3e38, 0.75], np.float32),), (np.array([6e4, 1e-6, -2.0], np.float16),),
       (np.zeros((0,), np.float32),), (np.array([7.0]),), (rn(2, 3, dtype=F32),)], group="math"),
    E("gcd", pnp.gcd, np.gcd,
      [(np.array([12, -18, 0, 7, 0, 35]), np.array([8, 27, 5, 0, 0, -49])),
       (rn(3, 4, dtype=I8, lo=-20, hi=20), rn(4, dtype=I8, lo=-20, hi=20)),
       (rn(5, dtype=U8, hi=200), np.uint8(60)), (np.zeros((0,), np.int32), np.int32(4)),
       (np.array([9], np.int16), 6)], group="math"),
    E("lcm", pnp.lcm, np.lcm,
      [(np.array([12, -18, 0, 7, 0, 35]), np.array([8, 27, 5, 0, 0, -49])),
       (rn(3, 4, dtype=I32, lo=-20, hi=20), rn(4, dtype=I32, lo=-20, hi=20)),
       (np.zeros((0,), np.int64), np.int64(3)), (np.array([4], np.uint16), np.array([6], np.uint16))],
      group="math"),
    E("spacing", pnp.spacing, np.spacing,
      [(np.array([1.0, -1.0, 0.0, 1e300, -1e-300, 5e-324, np.nan]),), (rn(3, 3, dtype=F32),),
       (np.array([1.0, 2.0, 0.5], np.float16),), (np.arange(4, dtype=np.int8),), (np.zeros((0,)),)],
      group="math"),
    E("i0", pnp.i0, np.i0,
      [(np.array([0.0, 0.5, -1.0, 5.0, 19.9, 20.1, 30.0, 100.0, 700.0, -3.0]),),
       (rn(3, 4, dtype=F32),), (np.arange(-3, 4, dtype=np.int8),), (np.array([1.0, 5.0], np.float16),),
       (np.zeros((0,)),), (np.array(2.5),)], group="math"),
    E("real_if_close", pnp.real_if_close, np.real_if_close,
      [(np.array([1 + 1e-15j, 2 - 1e-16j]),), (np.array([1 + 1e-3j]),),
       (np.array([1 + 1e-8j], np.complex64),), (rn(3),), (np.zeros((0,), complex),)], jit=False,
      group="math"),
    # --- signal ----------------------------------------------------------------------------
    *[E(f"{nm}_{mode}", lambda a, v, nm=nm, mode=mode: getattr(pnp, nm)(a, v, mode),
        lambda a, v, nm=nm, mode=mode: getattr(np, nm)(a, v, mode),
        [(rn(7), rn(3)), (rn(3), rn(6)), (rn(4, dtype=F32), rn(4, dtype=F32)),
         (rn(5, dtype=I8, lo=-4, hi=4), rn(2, dtype=I8, lo=-4, hi=4)), (rn(1), rn(1)), (rn(1), rn(4)),
         (rn(6, dtype=C128), rn(3, dtype=C128)), (rn(4) > 0, np.array([True, False])),
         (np.zeros((0,)), rn(3))], group="signal")
      for nm in ("convolve", "correlate") for mode in ("full", "same", "valid")],
    E("interp", pnp.interp, np.interp,
      [(np.concatenate([rn(9) * 2, xp_sorted]), xp_sorted, fp6), (rn(3, 4, dtype=F32), xp_sorted, fp6),
       (np.float32(0.3), np.array([1.0]), np.array([2.0])), (np.zeros((0,)), xp_sorted, fp6),
       (rn(5), xp_sorted, rn(6, dtype=C128)), (rn(6), np.array([0, 1, 1, 2.0]), np.array([0, 1, 2, 3.0]))],
      group="signal"),
    E("interp_left_right", lambda x, xp, fp: pnp.interp(x, xp, fp, -1.0, 5.0),
      lambda x, xp, fp: np.interp(x, xp, fp, -1.0, 5.0), [(rn(12) * 3, xp_sorted, fp6)], group="signal"),
    E("interp_period", lambda x, xp, fp: pnp.interp(x, xp, fp, period=2.0),
      lambda x, xp, fp: np.interp(x, xp, fp, period=2.0), [(rn(12) * 3, rn(6), fp6)], group="signal"),
    E("unwrap", pnp.unwrap, np.unwrap,
      [(np.angle(np.exp(1j * np.cumsum(rn(15)) * 2)),), (rn(3, 6, dtype=F32) * 4,),
       (np.array([0.5]),), (np.zeros((0,)),), (np.array([0, 5, 9, 0, 14]),)], group="signal"),
    E("unwrap_axis_period", lambda p: pnp.unwrap(p, axis=0, period=6),
      lambda p: np.unwrap(p, axis=0, period=6), [(rn(6, 3) * 5,), (rn(5, 2, dtype=I32, hi=20),)],
      group="signal"),
    E("unwrap_discont", lambda p: pnp.unwrap(p, discont=4.0), lambda p: np.unwrap(p, discont=4.0),
      [(rn(9) * 4,)], group="signal"),
    E("gradient", pnp.gradient, np.gradient,
      [(rn(6),), (rn(4, 5, dtype=F32),), (rn(5, dtype=I8, lo=-9, hi=9),), (rn(2),), (rn(1),),
       (rn(3, 0),)], group="signal"),
    E("gradient_spacing", lambda f, x: pnp.gradient(f, x, 0.5), lambda f, x: np.gradient(f, x, 0.5),
      [(rn(5, 4), np.cumsum(RNG.uniform(0.5, 1.0, 5)))], group="signal"),
    E("gradient_edge2_axis", lambda f, x: pnp.gradient(f, x, axis=1, edge_order=2),
      lambda f, x: np.gradient(f, x, axis=1, edge_order=2),
      [(rn(3, 6), np.cumsum(RNG.uniform(0.5, 1.0, 6))), (rn(2, 4, dtype=F32), 0.25)], group="signal"),
    E("gradient_edge2", lambda f: pnp.gradient(f, 2.0, edge_order=2),
      lambda f: np.gradient(f, 2.0, edge_order=2), [(rn(5, 3),), (rn(2, 3),)], group="signal"),
    E("trapezoid", pnp.trapezoid, np.trapezoid,
      [(rn(7),), (rn(3, 5, dtype=F32),), (rn(4, dtype=I8, lo=-5, hi=5),), (rn(1),), (np.zeros((0,)),)],
      group="signal"),
    E("trapezoid_x_axis", lambda y, x: pnp.trapezoid(y, x, axis=0),
      lambda y, x: np.trapezoid(y, x, axis=0),
      [(rn(5, 3), np.cumsum(RNG.uniform(0.1, 1, 5))), (rn(4, 2), rn(4, 2))], group="signal"),
    E("trapezoid_dx", lambda y: pnp.trapezoid(y, dx=0.1), lambda y: np.trapezoid(y, dx=0.1),
      [(rn(2, 6),)], group="signal"),
    # --- set operations -----------------------------------------------------------------
    *[E(nm, getattr(pnp, nm), getattr(np, nm),
        [(rn(12, dtype=I8, hi=7), rn(8, dtype=I8, lo=3, hi=11)),
         (rn(3, 4, dtype=F32, lo=0, hi=3).round(), rn(5, dtype=F32, lo=1, hi=5).round()),
         (np.array([np.nan, 1.0, np.nan, 2.0]), np.array([2.0, np.nan, 3.0])),
         (np.zeros((0,), np.int32), np.array([1, 2], np.int32)), (np.array([4]), np.array([4])),
         (np.array([1, 2, 3], np.int8), np.array([2.5, 3.0]))], jit=False, group="setops")
      for nm in ("union1d", "intersect1d", "setdiff1d", "setxor1d")],
    *[E(f"{nm}_assume_unique", lambda a, b, nm=nm: getattr(pnp, nm)(a, b, assume_unique=True),
        lambda a, b, nm=nm: getattr(np, nm)(a, b, assume_unique=True),
        [(np.array([5, 1, 3, 9]), np.array([3, 4, 5])), (np.array([2.0]), np.zeros((0,)))],
        jit=False, group="setops")
      for nm in ("intersect1d", "setdiff1d", "setxor1d")],
    E("intersect1d_indices", lambda a, b: pnp.intersect1d(a, b, return_indices=True),
      lambda a, b: np.intersect1d(a, b, return_indices=True),
      [(rn(10, dtype=I32, hi=6), rn(7, dtype=I32, lo=2, hi=9)), (np.array([1]), np.array([2, 1]))],
      jit=False, group="setops"),
    *[E(f"{nm}_size", lambda a, b, nm=nm: getattr(pnp, nm)(a, b, size=12, fill_value=-1),
        lambda a, b, nm=nm: _pad_to(getattr(np, nm)(a, b), 12, -1),
        [(rn(9, dtype=I32, hi=7), rn(6, dtype=I32, lo=3, hi=11)), (np.zeros((0,), np.int32),
                                                                  np.array([2, 1], np.int32))],
        group="setops") for nm in ("union1d", "intersect1d", "setdiff1d", "setxor1d")],
    E("isin_assume_unique", lambda a, b: pnp.isin(a, b, assume_unique=True),
      lambda a, b: np.isin(a, b, assume_unique=True),
      [(rn(3, 4, dtype=I8), np.array([1, 4, 7], np.int8)), (np.zeros((0,)), np.array([1.0]))],
      group="setops"),
    # --- editing --------------------------------------------------------------------------
    E("delete", lambda a: pnp.delete(a, 1), lambda a: np.delete(a, 1),
      [(mat,), (rn(3, dtype=I8),), (rn(1),)], group="editing"),
    E("delete_axis", lambda a: pnp.delete(a, [0, 2, -1], axis=1),
      lambda a: np.delete(a, [0, 2, -1], axis=1), [(mat,), (rn(2, 5, dtype=U8),)], group="editing"),
    E("delete_slice_mask", lambda a: (pnp.delete(a, slice(1, None, 2), 0),
                                      pnp.delete(a, np.array([True, False, True, False]), 0)),
      lambda a: (np.delete(a, slice(1, None, 2), 0),
                 np.delete(a, np.array([True, False, True, False]), 0)), [(mat,)], group="editing"),
    E("insert", lambda a: pnp.insert(a, 2, 99), lambda a: np.insert(a, 2, 99),
      [(mat,), (rn(3, dtype=I8),), (np.zeros((0,)),)], group="editing"),
    E("insert_axis", lambda a, v: pnp.insert(a, [0, 2, 2], v, axis=1),
      lambda a, v: np.insert(a, [0, 2, 2], v, axis=1), [(mat, rn(3)), (rn(1, 3, dtype=I32), 7.9)],
      group="editing"),
    E("insert_scalar_pos_rows", lambda a, v: pnp.insert(a, 1, v, axis=0),
      lambda a, v: np.insert(a, 1, v, axis=0), [(mat, rn(2, 5)), (mat, rn(5))], group="editing"),
    E("insert_negative", lambda a: (pnp.insert(a, -1, 7.0), pnp.insert(a, [-2, 0, -4], [1.0, 2.0, 3.0]),
                                    pnp.insert(a, -1, [[5.0], [6.0]], axis=1)),
      lambda a: (np.insert(a, -1, 7.0), np.insert(a, [-2, 0, -4], [1.0, 2.0, 3.0]),
                 np.insert(a, -1, [[5.0], [6.0]], axis=1)), [(rn(2, 3),), (rn(2, 2),)], group="editing"),
    E("put", lambda a, i, v: pnp.put(a, i, v, inplace=False), _mut(np.put),
      [(mat, np.array([0, 7, -1]), rn(2)), (rn(5, dtype=I8), np.array([4]), np.array([100], np.int8)),
       (rn(3), np.zeros((0,), np.int64), rn(1))], group="editing"),
    E("put_wrap_clip", lambda a, i, v: (pnp.put(a, i, v, "wrap", inplace=False),
                                        pnp.put(a, i, v, "clip", inplace=False)),
      lambda a, i, v: (_mut(np.put)(a, i, v, "wrap"), _mut(np.put)(a, i, v, "clip")),
      [(mat, np.array([25, -23]), rn(2))], group="editing"),
    E("place", lambda a, m, v: pnp.place(a, m, v, inplace=False), _mut(np.place),
      [(mat, mat > 0, rn(3)), (rn(6, dtype=I32), rn(6) > 0, np.array([7, 8], np.int32)),
       (rn(1), np.array([True]), rn(2))], group="editing"),
    E("putmask", lambda a, m, v: pnp.putmask(a, m, v, inplace=False), _mut(np.putmask),
      [(mat, mat > 0, rn(3)), (rn(6, dtype=U8), rn(6) > 0, np.array([7, 8], np.uint8)),
       (np.zeros((0,)), np.zeros((0,), bool), rn(2))], group="editing"),
    *[E(f"fill_diagonal_{shape}_{wrap}",
        lambda a, v, wrap=wrap: pnp.fill_diagonal(a, v, wrap, inplace=False),
        lambda a, v, wrap=wrap: _mut(lambda b, w: np.fill_diagonal(b, w, wrap))(a, v),
        [(rn(*shape), rn(2)), (rn(*shape, dtype=I8), np.int8(5))], group="editing")
      for shape in [(4, 4), (7, 3), (3, 5), (3, 3, 3), (1, 1)] for wrap in (False, True)],
    E("trim_zeros", pnp.trim_zeros, np.trim_zeros,
      [(np.array([0, 0, 1, 2, 0, 3, 0, 0]),), (np.zeros(3),), (np.array([1.5]),), (np.zeros((0,)),)],
      jit=False, group="editing"),
    E("trim_zeros_modes", lambda a: (pnp.trim_zeros(a, "f"), pnp.trim_zeros(a, "b"),
                                     pnp.trim_zeros(a, axis=1)),
      lambda a: (np.trim_zeros(a, "f"), np.trim_zeros(a, "b"), np.trim_zeros(a, axis=1)),
      [(np.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0]]),)], jit=False, group="editing"),
    E("block", lambda a, b, c: pnp.block([[a, b], [c, c[:, :2]]]),
      lambda a, b, c: np.block([[a, b], [c, c[:, :2]]]),
      [(rn(2, 2), rn(2, 3), rn(1, 3)), (rn(1, 1, dtype=I8), rn(1, 2, dtype=I8), rn(3, 3, dtype=I32))],
      group="editing"),
    E("block_flat", lambda a, b: pnp.block([a, b, 1.5]), lambda a, b: np.block([a, b, 1.5]),
      [(rn(3), rn(2, dtype=F32)), (np.zeros((0,)), rn(1))], group="editing"),
    E("row_stack", lambda a, b: pnp.row_stack((a, b)), lambda a, b: np.vstack((a, b)),
      [(rn(3), rn(2, 3)), (rn(1, dtype=I8), rn(1, dtype=I8))], group="editing"),
    # --- polynomials ----------------------------------------------------------------------
    E("vander", pnp.vander, np.vander,
      [(rn(5),), (rn(3, dtype=I8, lo=-3, hi=3),), (rn(1, dtype=F32),), (np.zeros((0,)),),
       (rn(4) > 0,)], group="poly"),
    E("vander_N_increasing", lambda x: (pnp.vander(x, 3, True), pnp.vander(x, 0), pnp.vander(x, 6)),
      lambda x: (np.vander(x, 3, True), np.vander(x, 0), np.vander(x, 6)), [(rn(4),)], group="poly"),
    E("polyval", pnp.polyval, np.polyval,
      [(rn(4), rn(3, 2)), (rn(3, dtype=I8, lo=-3, hi=3), rn(5, dtype=F32)), (rn(1), rn(2)),
       (np.zeros((0,)), rn(3)), (rn(3, dtype=C128), rn(2))], group="poly"),
    *[E(nm, getattr(pnp, nm), getattr(np, nm),
        [(rn(3), rn(5)), (rn(4, dtype=I8, lo=1, hi=5), rn(2, dtype=I32, lo=1, hi=5)), (rn(1), rn(1)),
         (rn(2, dtype=F32), rn(3, dtype=F32))], group="poly")
      for nm in ("polyadd", "polysub", "polymul")],
    E("polyder", lambda p: (pnp.polyder(p), pnp.polyder(p, 2), pnp.polyder(p, 0), pnp.polyder(p, 6)),
      lambda p: (np.polyder(p), np.polyder(p, 2), np.polyder(p, 0), np.polyder(p, 6)),
      [(rn(5),), (rn(4, dtype=I8, lo=-5, hi=5),), (rn(1),)], group="poly"),
    E("polyint", lambda p: (pnp.polyint(p), pnp.polyint(p, 2, [1.0, 2.0]), pnp.polyint(p, 3, 0.5)),
      lambda p: (np.polyint(p), np.polyint(p, 2, [1.0, 2.0]), np.polyint(p, 3, 0.5)),
      [(rn(4),), (rn(3, dtype=I32, lo=-5, hi=5),), (rn(1),)], group="poly"),
    E("polydiv", pnp.polydiv, np.polydiv,
      [(np.array([1.0, -3.0, 2.0]), np.array([1.0, -1.0])), (rn(5), rn(3)), (rn(2), rn(3)),
       (rn(4), rn(1)), (np.array([1, 2, 3]), np.array([1, 1]))], jit=False, group="poly"),
    E("polydiv_jit", pnp.polydiv, np.polydiv, [(rn(6), rn(3)), (rn(3), rn(2))], group="poly"),
    E("poly", pnp.poly, np.poly,
      [(rn(3),), (np.array([1, 2, 3]),), (rn(1, dtype=F32),), (np.array([1 + 1j, 1 - 1j]),),
       (np.array([1j, 2.0]),)], jit=False, group="poly"),
    E("poly_jit", pnp.poly, np.poly, [(rn(4),), (rn(2, dtype=F32),)], group="poly"),
    E("polyfit", lambda x, y: (pnp.polyfit(x, y, 0), pnp.polyfit(x, y, 1), pnp.polyfit(x, y, 3)),
      lambda x, y: (np.polyfit(x, y, 0), np.polyfit(x, y, 1), np.polyfit(x, y, 3)),
      [(np.linspace(-1, 2, 9), rn(9)), (np.linspace(0, 1, 6), rn(6, 2)), (np.arange(4), rn(4))],
      rtol=1e-8, group="poly"),
    E("polyfit_weighted", lambda x, y, w: pnp.polyfit(x, y, 2, w=w),
      lambda x, y, w: np.polyfit(x, y, 2, w=w),
      [(np.linspace(-1, 1, 8), rn(8), RNG.uniform(0.5, 1, 8))], rtol=1e-8, group="poly"),
    # --- windows ----------------------------------------------------------------------------
    *[E(nm, lambda nm=nm: tuple(getattr(pnp, nm)(m) for m in (0, 1, 2, 7, 12)),
        lambda nm=nm: tuple(getattr(np, nm)(m) for m in (0, 1, 2, 7, 12)), [()], group="windows")
      for nm in ("bartlett", "blackman", "hamming", "hanning")],
    E("kaiser", lambda b: tuple(pnp.kaiser(m, b) for m in (0, 1, 2, 9)),
      lambda b: tuple(np.kaiser(m, b) for m in (0, 1, 2, 9)),
      [(np.float64(0.0),), (np.float64(5.0),), (np.float64(14.0),)], rtol=1e-12, group="windows"),
    # --- grids and ranges -------------------------------------------------------------------
    E("mgrid", lambda: (pnp.mgrid[0:5, 0:3], pnp.mgrid[0:1:3j, -1:1:0.5], pnp.mgrid[0:5],
                        pnp.mgrid[0:1:4j], pnp.mgrid[3:0:-1], pnp.mgrid[0:0, 0:2]),
      lambda: (np.mgrid[0:5, 0:3], np.mgrid[0:1:3j, -1:1:0.5], np.mgrid[0:5], np.mgrid[0:1:4j],
               np.mgrid[3:0:-1], np.mgrid[0:0, 0:2]), [()], group="grids"),
    E("ogrid", lambda: (pnp.ogrid[0:3, 0:2], pnp.ogrid[0:1:3j, 2:5], pnp.ogrid[-1:1:0.5]),
      lambda: (np.ogrid[0:3, 0:2], np.ogrid[0:1:3j, 2:5], np.ogrid[-1:1:0.5]), [()], group="grids"),
    E("r_", lambda a, b: (pnp.r_[1:4, 0, 4, a], pnp.r_[a, 3.5], pnp.r_[-1:1:5j], pnp.r_["-1", b, b],
                          pnp.r_["0,2", a, a], pnp.r_["1,2,0", a, a], pnp.r_[a[:0], b[0]]),
      lambda a, b: (np.r_[1:4, 0, 4, a], np.r_[a, 3.5], np.r_[-1:1:5j], np.r_["-1", b, b],
                    np.r_["0,2", a, a], np.r_["1,2,0", a, a], np.r_[a[:0], b[0]]),
      [(rn(3, dtype=I32), rn(2, 3)), (rn(3, dtype=F32), rn(2, 3, dtype=I8))], group="grids"),
    E("c_", lambda a, b: (pnp.c_[a, a], pnp.c_[b, 0, 0, b], pnp.c_[a, 1:4]),
      lambda a, b: (np.c_[a, a], np.c_[b, 0, 0, b], np.c_[a, 1:4]),
      [(rn(3), rn(1, 3)), (rn(3, dtype=I8), rn(1, 2, dtype=F32))], group="grids"),
    E("geomspace", lambda: (pnp.geomspace(1, 1000, 4), pnp.geomspace(-1000, -1, 4),
                            pnp.geomspace(1, 256, 9, endpoint=False), pnp.geomspace(1j, 1000j, 4),
                            pnp.geomspace(1, 2, 1), pnp.geomspace(1, 2, 0)),
      lambda: (np.geomspace(1, 1000, 4), np.geomspace(-1000, -1, 4),
               np.geomspace(1, 256, 9, endpoint=False), np.geomspace(1j, 1000j, 4),
               np.geomspace(1, 2, 1), np.geomspace(1, 2, 0)), [()], group="grids"),
    E("geomspace_arrays", lambda a, b: (pnp.geomspace(a, b, 5, axis=1), pnp.geomspace(a[0], 100, 3)),
      lambda a, b: (np.geomspace(a, b, 5, axis=1), np.geomspace(a[0], 100, 3)),
      [(np.array([1.0, 2.0]), np.array([10.0, 32.0])), (np.array([1.0, 3.0], np.float32),
                                                       np.array([8.0, 9.0], np.float32)),
       (np.array([0.0, 1.0]), np.array([1.0, 2.0]))],
      group="grids"),
    # --- statistics ---------------------------------------------------------------------------
    *[E(f"nanquantile_{m}", lambda a, m=m: (pnp.nanquantile(a, 0.3, method=m),
                                            pnp.nanquantile(a, [0.0, 0.5, 1.0], 1, method=m),
                                            pnp.nanquantile(a, 0.7, (0, 2), method=m, keepdims=True)),
        lambda a, m=m: (np.nanquantile(a, 0.3, method=m),
                        np.nanquantile(a, [0.0, 0.5, 1.0], 1, method=m),
                        np.nanquantile(a, 0.7, (0, 2), method=m, keepdims=True)),
        [(np.where(RNG.random((3, 4, 5)) < 0.3, np.nan, cube),),
         (np.where(RNG.random((3, 4, 5)) < 0.3, np.nan, cube).astype(np.float32),),
         (rn(2, 3, 2, dtype=I32),), (np.full((1, 1, 1), np.nan),)], group="stats")
      for m in ("linear", "lower", "higher", "midpoint", "nearest")],
    E("nanmedian", lambda a: (pnp.nanmedian(a), pnp.nanmedian(a, 1), pnp.nanmedian(a, (0, 2), keepdims=True)),
      lambda a: (np.nanmedian(a), np.nanmedian(a, 1), np.nanmedian(a, (0, 2), keepdims=True)),
      [(np.where(RNG.random((3, 4, 5)) < 0.3, np.nan, cube),), (rn(2, 3, 4, dtype=F32),),
       (rn(3, 1, 2, dtype=I8),), (np.array([[[np.nan]]]),)], group="stats"),
    E("nanpercentile", lambda a: pnp.nanpercentile(a, [10, 90], axis=0),
      lambda a: np.nanpercentile(a, [10, 90], axis=0),
      [(np.where(RNG.random((6, 3)) < 0.3, np.nan, rn(6, 3)),), (rn(1, 2),)], group="stats"),
    E("quantile_weights", lambda a, w: (pnp.quantile(a, [0.0, 0.3, 1.0], 1, method="inverted_cdf", weights=w),
                                        pnp.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(a.shape))),
      lambda a, w: (np.quantile(a, [0.0, 0.3, 1.0], 1, method="inverted_cdf", weights=w),
                    np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(a.shape))),
      [(rn(3, 6), np.array([0.0, 1, 2, 0.5, 0, 3])), (rn(2, 6, dtype=I32), np.arange(6.0)),
       (rn(1, 1), np.array([2.0]))], group="stats"),
    E("quantile_weights_full", lambda a, w: pnp.quantile(a, 0.4, 0, method="inverted_cdf", weights=w),
      lambda a, w: np.quantile(a, 0.4, 0, method="inverted_cdf", weights=w),
      [(rn(5, 3), RNG.integers(0, 3, (5, 3)).astype(float) + 0.5)], group="stats"),
    E("percentile_weights", lambda a, w: pnp.percentile(a, 30, 0, method="inverted_cdf", weights=w),
      lambda a, w: np.percentile(a, 30, 0, method="inverted_cdf", weights=w),
      [(rn(5, 2), RNG.uniform(0, 1, 5))], group="stats"),
    E("nanquantile_weights", lambda a, w: pnp.nanquantile(a, 0.5, 1, method="inverted_cdf", weights=w),
      lambda a, w: _nan_free_rows(a, w, 0.5),
      [(np.where(RNG.random((4, 5)) < 0.3, np.nan, rn(4, 5)), RNG.uniform(0, 1, 5)),
       (np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 3.0]]), np.array([1.0, 2.0, 0.5]))],
      group="stats"),
    E("cov", pnp.cov, np.cov,
      [(rn(3, 7),), (rn(7),), (rn(2, 5, dtype=F32),), (rn(2, 4, dtype=I8, hi=5),), (rn(2, 4, dtype=C128),),
       (np.ones((1, 1)),), (np.zeros((0, 3)),)], group="stats"),
    E("cov_options", lambda x, y, fw, aw: (pnp.cov(x, y), pnp.cov(x.T, rowvar=False), pnp.cov(x, bias=True),
                                           pnp.cov(x, ddof=2), pnp.cov(x, fweights=fw),
                                           pnp.cov(x, aweights=aw), pnp.cov(x, fweights=fw, aweights=aw),
                                           pnp.cov(x, aweights=aw, ddof=0),
                                           pnp.cov(x, dtype=np.float32)),
      lambda x, y, fw, aw: (np.cov(x, y), np.cov(x.T, rowvar=False), np.cov(x, bias=True),
                            np.cov(x, ddof=2), np.cov(x, fweights=fw), np.cov(x, aweights=aw),
                            np.cov(x, fweights=fw, aweights=aw), np.cov(x, aweights=aw, ddof=0),
                            np.cov(x, dtype=np.float32)),
      [(rn(3, 7), rn(2, 7), RNG.integers(1, 4, 7), RNG.uniform(0.1, 1, 7))], group="stats"),
    E("corrcoef", pnp.corrcoef, np.corrcoef,
      [(rn(3, 7),), (rn(6),), (rn(2, 5, dtype=F32),), (rn(2, 4, dtype=C128),)], group="stats"),
    E("corrcoef_xy", lambda x, y: pnp.corrcoef(x, y, rowvar=False),
      lambda x, y: np.corrcoef(x, y, rowvar=False), [(rn(6, 2), rn(6))], group="stats"),
    # --- histograms -----------------------------------------------------------------------------
    E("histogram2d", lambda x, y: pnp.histogram2d(x, y), lambda x, y: np.histogram2d(x, y),
      [(rn(40), rn(40)), (rn(20, dtype=F32), rn(20, dtype=F32)), (rn(6, dtype=I8), rn(6, dtype=I8)),
       (rn(1), rn(1)), (np.zeros((0,)), np.zeros((0,)))], group="hist"),
    E("histogram2d_options",
      lambda x, y, w: (pnp.histogram2d(x, y, 3), pnp.histogram2d(x, y, [3, 5]),
                       pnp.histogram2d(x, y, np.array([-1, 0, 0.5, 2.0])),
                       pnp.histogram2d(x, y, [np.array([-2, 0, 2.0]), 4]),
                       pnp.histogram2d(x, y, range=[[-1, 1], [0, 2]]),
                       pnp.histogram2d(x, y, density=True), pnp.histogram2d(x, y, 4, weights=w, density=True)),
      lambda x, y, w: (np.histogram2d(x, y, 3), np.histogram2d(x, y, [3, 5]),
                       np.histogram2d(x, y, np.array([-1, 0, 0.5, 2.0])),
                       np.histogram2d(x, y, [np.array([-2, 0, 2.0]), 4]),
                       np.histogram2d(x, y, range=[[-1, 1], [0, 2]]),
                       np.histogram2d(x, y, density=True), np.histogram2d(x, y, 4, weights=w, density=True)),
      [(rn(30), rn(30), RNG.uniform(0, 1, 30))], group="hist"),
    E("histogramdd", lambda s, w: (pnp.histogramdd(s), pnp.histogramdd(s, (2, 3, 4)),
                                   pnp.histogramdd(s, 3, density=True), pnp.histogramdd(s, weights=w),
                                   pnp.histogramdd(s, range=[(-1, 1), (-2, 2), (0, 1)])),
      lambda s, w: (np.histogramdd(s), np.histogramdd(s, (2, 3, 4)),
                    np.histogramdd(s, 3, density=True), np.histogramdd(s, weights=w),
                    np.histogramdd(s, range=[(-1, 1), (-2, 2), (0, 1)])),
      [(rn(25, 3), RNG.uniform(0, 1, 25)), (rn(1, 3), np.ones(1))], group="hist"),
    E("histogramdd_1d", lambda x: pnp.histogramdd(x, bins=4), lambda x: np.histogramdd(x, bins=4),
      [(rn(12),), (np.zeros((0, 2)),)], group="hist"),
    # --- bits -------------------------------------------------------------------------------------
    E("packbits", lambda a: (pnp.packbits(a), pnp.packbits(a, -1), pnp.packbits(a, 0, "little")),
      lambda a: (np.packbits(a), np.packbits(a, -1), np.packbits(a, 0, "little")),
      [(rn(3, 13, dtype=I8, lo=-1, hi=2),), (rn(9, 2) > 0,), (rn(1, 1, dtype=U8),), (np.zeros((0, 3), np.uint8),)],
      group="bits"),
    E("unpackbits", lambda a: (pnp.unpackbits(a), pnp.unpackbits(a, 1), pnp.unpackbits(a, 0, 3, "little"),
                               pnp.unpackbits(a, 1, -5), pnp.unpackbits(a, 1, 30)),
      lambda a: (np.unpackbits(a), np.unpackbits(a, 1), np.unpackbits(a, 0, 3, "little"),
                 np.unpackbits(a, 1, -5), np.unpackbits(a, 1, 30)),
      [(rn(2, 3, dtype=U8, hi=256),), (rn(1, 1, dtype=U8, hi=256),)], group="bits"),
    # --- from* ------------------------------------------------------------------------------------
    E("fromiter", lambda: (pnp.fromiter((i * i for i in range(5)), float),
                           pnp.fromiter(range(10), np.int8, count=3), pnp.fromiter([], np.float32)),
      lambda: (np.fromiter((i * i for i in range(5)), float), np.fromiter(range(10), np.int8, count=3),
               np.fromiter([], np.float32)), [()], group="fromdata"),
    E("frombuffer", lambda: (pnp.frombuffer(np.arange(6, dtype=np.int16).tobytes(), np.int16),
                             pnp.frombuffer(np.arange(6, dtype=np.int16).tobytes(), np.int16, 2, 4),
                             pnp.frombuffer(b"", np.float32)),
      lambda: (np.frombuffer(np.arange(6, dtype=np.int16).tobytes(), np.int16),
               np.frombuffer(np.arange(6, dtype=np.int16).tobytes(), np.int16, 2, 4),
               np.frombuffer(b"", np.float32)), [()], group="fromdata"),
    E("fromstring", lambda: (pnp.fromstring("1 2 3.5", sep=" "), pnp.fromstring("1,2", dtype=int, sep=",")),
      lambda: (np.fromstring("1 2 3.5", sep=" "), np.fromstring("1,2", dtype=int, sep=",")), [()],
      group="fromdata"),
    # --- pad --------------------------------------------------------------------------------------
    *[E(f"pad_{mode}", lambda a, mode=mode: (pnp.pad(a, 2, mode), pnp.pad(a, (1, 3), mode, stat_length=2),
                                             pnp.pad(a, 1, mode, stat_length=(1, 3))),
        lambda a, mode=mode: (np.pad(a, 2, mode), np.pad(a, (1, 3), mode, stat_length=2),
                              np.pad(a, 1, mode, stat_length=(1, 3))),
        [(rn(3, 4),), (rn(3, 4, dtype=I32, lo=-9, hi=9),), (rn(5, dtype=F32),), (rn(1),),
         (rn(2, 3, 2, dtype=U8),)], group="pad")
      for mode in ("maximum", "minimum", "mean", "median")],
    E("pad_linear_ramp", lambda a: (pnp.pad(a, 2, "linear_ramp"), pnp.pad(a, (1, 3), "linear_ramp", end_values=5),
                                    pnp.pad(a, 2, "linear_ramp", end_values=(1, -2))),
      lambda a: (np.pad(a, 2, "linear_ramp"), np.pad(a, (1, 3), "linear_ramp", end_values=5),
                 np.pad(a, 2, "linear_ramp", end_values=(1, -2))),
      [(rn(3, 4),), (rn(3, 4, dtype="int16", lo=-9, hi=9),), (rn(5, dtype=F32),), (rn(1),)],
      group="pad"),
    E("pad_empty_array", lambda a: pnp.pad(a, ((1, 1), (0, 0)), "mean"),
      lambda a: np.pad(a, ((1, 1), (0, 0)), "mean"), [(np.zeros((2, 0)),), (np.zeros((0, 2)),)],
      group="pad"),
    # --- cross --------------------------------------------------------------------------------
    E("cross", pnp.cross, np.cross,
      [(rn(3), rn(3)), (rn(4, 3, dtype=F32), rn(3, dtype=F32)), (rn(2), rn(3)), (rn(3), rn(2)),
       (rn(5, 2), rn(5, 2)), (rn(3, dtype=I8, lo=-5, hi=5), rn(3, dtype=I8, lo=-5, hi=5)),
       (rn(3, dtype=C128), rn(3)), (rn(0, 3), rn(3)), (rn(3, 4), rn(4, 3))], group="cross"),
    E("cross_axes", lambda a, b: (pnp.cross(a, b, axisa=0), pnp.cross(a, a, axis=0),
                                  pnp.cross(a, b, axisa=0, axisc=0)),
      lambda a, b: (np.cross(a, b, axisa=0), np.cross(a, a, axis=0), np.cross(a, b, axisa=0, axisc=0)),
      [(rn(3, 4), rn(4, 3))], group="cross"),
    # --- functional -------------------------------------------------------------------------------
    *[E(f"apply_along_axis_{k}", lambda a, f=f, ax=ax: pnp.apply_along_axis(f[0], ax, a),
        lambda a, f=f, ax=ax: np.apply_along_axis(f[1], ax, a),
        [(cube,), (rn(2, 3, 4, dtype=I32),)], group="functional")
      for k, (f, ax) in enumerate([((lambda v: pnp.sum(v * v), lambda v: np.sum(v * v)), 1),
                                   ((lambda v: pnp.sort(v)[::-1], lambda v: np.sort(v)[::-1]), 0),
                                   ((lambda v: pnp.outer(v, v[:2]), lambda v: np.outer(v, v[:2])), -1)])],
    E("apply_over_axes", lambda a: (pnp.apply_over_axes(pnp.sum, a, [0, 2]),
                                    pnp.apply_over_axes(lambda x, ax: pnp.cumsum(x, ax), a, 1)),
      lambda a: (np.apply_over_axes(np.sum, a, [0, 2]),
                 np.apply_over_axes(lambda x, ax: np.cumsum(x, ax), a, 1)),
      [(cube,), (rn(2, 1, 3, dtype=I8),)], group="functional"),
    E("vectorize", lambda a, b: (pnp.vectorize(lambda x, y: x * 2 + y)(a, b),
                                 pnp.vectorize(lambda x: x + 1, otypes=[np.float32])(a),
                                 pnp.vectorize(lambda x, p: x ** p, excluded={1})(a, 2),
                                 pnp.vectorize(lambda x, y: x - y)(x=a, y=1.0)),
      lambda a, b: (np.vectorize(lambda x, y: x * 2 + y)(a, b),
                    np.vectorize(lambda x: x + 1, otypes=[np.float32])(a),
                    np.vectorize(lambda x, p: x ** p, excluded={1})(a, 2),
                    np.vectorize(lambda x, y: x - y)(x=a, y=1.0)),
      [(rn(3, 4), rn(4)), (rn(5), np.float64(1.5)), (rn(1), rn(1))], group="functional"),
    E("vectorize_signature",
      lambda a, b: (pnp.vectorize(lambda u, v: pnp.dot(u, v), signature="(n),(n)->()")(a, b),
                    pnp.vectorize(lambda u: (pnp.sum(u), pnp.max(u)), signature="(n)->(),()")(a),
                    pnp.vectorize(lambda u: pnp.outer(u, u), signature="(n)->(n,n)")(a)),
      lambda a, b: (np.vectorize(lambda u, v: np.dot(u, v), signature="(n),(n)->()")(a, b),
                    np.vectorize(lambda u: (np.sum(u), np.max(u)), signature="(n)->(),()")(a),
                    np.vectorize(lambda u: np.outer(u, u), signature="(n)->(n,n)")(a)),
      [(rn(2, 3, 4), rn(4)), (rn(4), rn(4))], group="functional"),
    E("piecewise", lambda x: (pnp.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t * t]),
                              pnp.piecewise(x, [x < -1, x > 1], [1, lambda t: t, 7.5]),
                              pnp.piecewise(x, x > 0, [lambda t: t + 1])),
      lambda x: (np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t * t]),
                 np.piecewise(x, [x < -1, x > 1], [1, lambda t: t, 7.5]),
                 np.piecewise(x, x > 0, [lambda t: t + 1])),
      [(np.linspace(-2, 2, 9),), (rn(5, dtype=F32),), (rn(4, dtype=I32, lo=-3, hi=3),), (rn(1),)],
      group="functional"),
]

assert len({e.name for e in ENTRIES}) == len(ENTRIES), "duplicate entry names"


def _flatten(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flatten(e)]
    return [x]


def assert_same(got, want, rtol, what: str):
    """``got`` equals NumPy's ``want``: same structure, dtype, shape and values."""
    gl, wl = _flatten(got), _flatten(want)
    assert len(gl) == len(wl), f"{what}: {len(gl)} outputs, NumPy gives {len(wl)}"
    for k, (g, w) in enumerate(zip(gl, wl)):
        if isinstance(w, float) and not isinstance(w, np.generic):   # np.poly([]) is 1.0
            assert g == w, f"{what}[{k}]: {g} != {w}"
            continue
        w = np.asarray(w)
        assert isinstance(g, plait.Array), f"{what}[{k}]: got {type(g).__name__}"
        gv = np.asarray(g)
        assert gv.dtype == w.dtype, f"{what}[{k}]: dtype {gv.dtype}, NumPy gives {w.dtype}"
        assert gv.shape == w.shape, f"{what}[{k}]: shape {gv.shape}, NumPy gives {w.shape}"
        if w.dtype.kind in "fc":
            tol = rtol if rtol is not None else RTOL[w.dtype.name]
            fin = np.isfinite(w)
            scale = float(np.max(np.abs(w[fin]), initial=1.0))
            np.testing.assert_allclose(gv, w, rtol=tol, atol=tol * scale, equal_nan=True,
                                       err_msg=f"{what}[{k}]")
        else:
            np.testing.assert_array_equal(gv, w, err_msg=f"{what}[{k}]")


def _reference(e: E, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return e.ref(*args)


def _arrays(case):
    return [a for a in case if isinstance(a, np.ndarray)]


def _substitute(case, arrays):
    it = iter(arrays)
    return [next(it) if isinstance(a, np.ndarray) else a for a in case]


@pytest.mark.parametrize("e", ENTRIES, ids=[e.name for e in ENTRIES])
def test_eager(e: E):
    for i, case in enumerate(e.cases):
        try:
            want = _reference(e, case)
        except (TypeError, ValueError, IndexError) as err:   # plait refuses the same way
            cls = next(c for c in (TypeError, ValueError, IndexError) if isinstance(err, c))
            with pytest.raises(cls):
                e.fn(*_substitute(case, [plait.device_put(a) for a in _arrays(case)]))
            continue
        args = _substitute(case, [plait.device_put(a) for a in _arrays(case)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = e.fn(*args)
        assert_same(got, want, e.rtol, f"{e.name} case {i}")


def _jit_items(group: str):
    items = []
    for e in ENTRIES:
        if e.group != group or not e.jit:
            continue
        for i, case in enumerate(e.cases):
            try:
                want = _reference(e, case)
            except (TypeError, ValueError, IndexError):
                continue
            items.append((e, i, case, want))
    return items


GROUPS = sorted({e.group for e in ENTRIES if e.jit})


@pytest.mark.parametrize("group", GROUPS)
def test_jit(group: str):
    """Every jit-able case of a group traced in one ``jit`` (reference backend)."""
    _check_jit(_jit_items(group), "interp")


# One entry per kind of lowering (elementwise math, while loops, sorts, gathers and
# scatters, contractions, cumulative ops, vmap-built functions), first case only: the
# native compiler is exercised without compiling every entry (the interp sweep above
# covers the rest).
NATIVE = ["frexp", "gcd", "i0", "convolve_full", "interp", "unwrap", "gradient_spacing",
          "trapezoid_x_axis", "union1d_size", "put", "place", "fill_diagonal_(4, 4)_False",
          "insert_axis", "block", "polyval", "polyfit_weighted", "hanning", "r_", "geomspace",
          "nanquantile_linear", "nanmedian", "quantile_weights", "cov", "corrcoef",
          "histogram2d", "packbits", "unpackbits", "pad_mean", "pad_linear_ramp", "cross",
          "apply_along_axis_0", "vectorize_signature", "piecewise"]


@pytest.mark.parametrize("chunk", range(0, len(NATIVE), 6))
def test_jit_native(chunk: int):
    """The first case of six ``NATIVE`` entries compiled in one ``jit`` with the default
    backend (native when a C compiler exists)."""
    by_name = {e.name: e for e in ENTRIES}
    assert set(NATIVE) <= set(by_name), set(NATIVE) - set(by_name)
    items = []
    for name in NATIVE[chunk:chunk + 6]:
        e = by_name[name]
        items.append((e, 0, e.cases[0], _reference(e, e.cases[0])))
    _check_jit(items, None)


def _check_jit(items, backend):
    flat_args = [a for _, _, case, _ in items for a in _arrays(case)]

    def all_cases(*arrays):
        outs, k = [], 0
        for e, _, case, _ in items:
            n = len(_arrays(case))
            outs.append(e.fn(*_substitute(case, arrays[k:k + n])))
            k += n
        return outs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jitted = plait.jit(all_cases) if backend is None else plait.jit(all_cases, backend=backend)
        got = jitted(*flat_args)
    for (e, i, _, want), g in zip(items, got):
        assert_same(g, want, e.rtol, f"{e.name} case {i} (jit, {backend or 'default'} backend)")


# --- gradients against finite differences --------------------------------------------------
GRADS = [
    ("convolve", lambda a, v: pnp.convolve(a, v, "same"), (rn(6), rn(3))),
    ("correlate", lambda a, v: pnp.correlate(a, v, "full"), (rn(5), rn(3))),
    ("interp_x_fp", lambda x, fp: pnp.interp(x, xp_sorted, fp), (np.clip(rn(5), -1, 1) * 0.9, fp6)),
    ("interp_period", lambda x: pnp.interp(x, [0.0, 1.0, 2.5], [1.0, -1.0, 2.0], period=3.0), (rn(4),)),
    ("unwrap", pnp.unwrap, (rn(8),)),
    ("gradient", lambda f: pnp.gradient(f, axis=0), (rn(5, 3),)),
    ("gradient_coords", lambda f, x: pnp.gradient(f, x, edge_order=2),
     (rn(6), np.cumsum(RNG.uniform(0.5, 1.0, 6)))),
    ("trapezoid", lambda y, x: pnp.trapezoid(y, x, axis=0), (rn(5, 2), np.cumsum(RNG.uniform(0.5, 1, 5)))),
    ("cov", lambda x, aw: pnp.cov(x, aweights=aw), (rn(2, 6), RNG.uniform(0.5, 1.0, 6))),
    ("corrcoef", pnp.corrcoef, (rn(3, 6),)),
    ("polyval", pnp.polyval, (rn(4), rn(3))),
    ("polyfit", lambda x, y: pnp.polyfit(x, y, 2), (np.linspace(-1, 1, 7), rn(7))),
    ("polymul_polydiv", lambda a, b: pnp.polydiv(pnp.polymul(a, b), b + np.array([2.0, 0, 0]))[0],
     (rn(3), rn(3))),
    ("polyint_polyder", lambda p: pnp.polyder(pnp.polyint(p, 2, [1.0, 2.0]), 1), (rn(4),)),
    ("i0", pnp.i0, (np.array([0.3, -2.0, 8.0, 25.0]),)),
    ("kaiser", lambda b: pnp.kaiser(7, b), (np.float64(4.0),)),
    ("nanmedian", lambda a: pnp.nanmedian(a, axis=1), (np.where(RNG.random((3, 5)) < 0.3, np.nan, rn(3, 5)),)),
    ("nanquantile", lambda a: pnp.nanquantile(a, [0.2, 0.7], axis=0),
     (np.where(RNG.random((6, 2)) < 0.2, np.nan, rn(6, 2)),)),
    ("cross", pnp.cross, (rn(2, 3), rn(3))),
    ("geomspace", lambda a, b: pnp.geomspace(a, b, 5), (np.float64(1.5), np.float64(40.0))),
    ("vectorize", lambda a, b: pnp.vectorize(lambda x, y: pnp.sin(x) * y)(a, b), (rn(3, 2), rn(2))),
    ("apply_along_axis", lambda a: pnp.apply_along_axis(lambda v: pnp.sum(v ** 3), 1, a), (rn(3, 4),)),
    ("piecewise", lambda x: pnp.piecewise(x, [x < 0], [lambda t: t * t, lambda t: pnp.sin(t)]),
     (np.array([-1.3, -0.2, 0.4, 2.0]),)),
    ("pad_mean_ramp", lambda a: pnp.pad(pnp.pad(a, 2, "mean"), 1, "linear_ramp", end_values=1.0),
     (rn(3, 2),)),
    ("place_putmask", lambda a, v: pnp.putmask(pnp.place(a, a > 0, v, inplace=False), a < -1, v,
                                               inplace=False), (rn(8), rn(3))),
    ("fill_diagonal_insert", lambda a, v: pnp.insert(pnp.fill_diagonal(a, v, inplace=False), 1, v[0], axis=0),
     (rn(3, 3), rn(3))),
]


@pytest.mark.parametrize("name,fn,args", GRADS, ids=[g[0] for g in GRADS])
def test_grads_finite_differences(name, fn, args):
    check_grads(fn, args, order=1)


# --- vmap -------------------------------------------------------------------------------------
def test_vmap_of_vectorize_and_friends():
    a, b = rn(4, 3), rn(4, 5)
    vec = pnp.vectorize(lambda x, y: pnp.where(x > 0, x * y, y - x))
    got = plait.vmap(lambda u: vec(u, 2.5))(a)
    np.testing.assert_allclose(np.asarray(got), np.where(a > 0, a * 2.5, 2.5 - a), rtol=1e-12)
    got = plait.vmap(lambda u, v: pnp.convolve(u, v, "same"))(b, a)
    want = np.stack([np.convolve(u, v, "same") for u, v in zip(b, a)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    got = plait.vmap(lambda x: pnp.interp(x, xp_sorted, fp6))(a)
    np.testing.assert_allclose(np.asarray(got), np.interp(a, xp_sorted, fp6), rtol=1e-12)
    got = plait.vmap(lambda u: pnp.polyval(u, 0.7))(b)
    np.testing.assert_allclose(np.asarray(got), [np.polyval(u, 0.7) for u in b], rtol=1e-12)
    sig = pnp.vectorize(lambda u: pnp.cumsum(u), signature="(n)->(n)")
    got = plait.jit(plait.vmap(sig))(rn(2, 3, 4))
    assert got.shape == (2, 3, 4)


def test_spacing_float16_negative_follows_definition():
    """NumPy 2.4's float16 ``spacing`` of a negative number is positive (and of the wrong
    magnitude: ``spacing(float16(-2)) == 0.000977``); plait follows the definition
    ``nextafter(x, -inf) - x``, as NumPy does for float32 and float64."""
    x = np.array([-2.0, -1.0, -0.5], np.float16)
    want = np.nextafter(x, np.float16(-np.inf)) - x
    got = np.asarray(pnp.spacing(x))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


# --- documented errors ------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda a: pnp.put(a, [0], 1.0), lambda a: pnp.place(a, a > 0, [1.0]),
    lambda a: pnp.putmask(a, a > 0, 1.0), lambda a: pnp.fill_diagonal(a, 1.0)])
def test_inplace_updates_are_refused(fn):
    with pytest.raises(PlaitError, match="immutable.*inplace=False"):
        fn(pnp.asarray(rn(3, 3)))


@pytest.mark.parametrize("fn,hint", [
    (lambda a: pnp.union1d(a, a), "size="), (lambda a: pnp.setdiff1d(a, a[:2]), "size="),
    (lambda a: pnp.intersect1d(a, a), "size="), (lambda a: pnp.setxor1d(a, a), "size="),
    (lambda a: pnp.trim_zeros(a), "outside jit"), (lambda a: pnp.real_if_close(a + 0j), "outside jit"),
    (lambda a: pnp.delete(a, pnp.argmax(a)), "static"),
    (lambda a: pnp.insert(a, pnp.argmax(a), 0.0), "static")])
def test_data_dependent_shapes_under_jit(fn, hint):
    with pytest.raises(ConcretizationError, match=hint) as info:
        plait.jit(fn)(rn(5))
    assert "test_extra_names.py" in str(info.value)   # names the user's line


def test_roots_and_matrix_poly_match_numpy():
    """roots: companion-matrix eigenvalues with NumPy's zero stripping (eager), real
    when every root is real; poly of a square matrix: its characteristic polynomial."""
    for p in ([1.0, -3.0, 2.0], [0, 0, 1.0, 2, 5, 0, 0], [1, 0, 1], [3.0], [0.0, 0.0],
              [2, 1], [1, 2, 3, 4, 5, 6.0], np.array([1, -6, 11, -6], np.int32),
              np.array([1.0, 2j, -1.0])):
        got, want = np.asarray(pnp.roots(p)), np.roots(p)
        assert got.dtype == want.dtype and got.shape == want.shape, p
        np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(want),
                                   rtol=1e-10, atol=1e-12)
    got = np.asarray(plait.jit(pnp.roots)(np.array([1.0, -3.0, 2.0])))
    np.testing.assert_allclose(np.sort_complex(got), [1.0, 2.0], atol=1e-12)
    for a in (rn(3, 3), np.eye(2), np.array([[0.0, -1.0], [1.0, 0.0]])):
        got, want = np.asarray(pnp.poly(a)), np.poly(a)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_polyfit_full_cov_rcond_and_underdetermined_match_numpy():
    x = np.linspace(-1, 1, 7)
    y = np.sin(3 * x)
    Y = np.stack([y, y ** 2], 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [((x, y, 3), dict(full=True)), ((x, Y, 2), dict(full=True)),
                 ((x, y, 3), dict(cov=True)), ((x, Y, 2), dict(cov=True)),
                 ((x, y, 2), dict(cov="unscaled")), ((x, y, 2), dict(rcond=1e-3)),
                 (([0.0, 1.0], [1.0, 2.0], 3), {}), ((x, y, 2), dict(w=x + 2, cov=True))]
        for args, kw in cases:
            got, want = pnp.polyfit(*args, **kw), np.polyfit(*args, **kw)
            if not isinstance(want, tuple):
                got, want = (got,), (want,)
            assert len(got) == len(want), (args, kw)
            for g, e in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), e, rtol=1e-9, atol=1e-12,
                                           err_msg=str(kw))
    with pytest.raises(ValueError, match="exceed order"):
        pnp.polyfit([0.0, 1.0], [1.0, 2.0], 1, cov=True)


def test_setops_size_under_jit_matches_eager_prefix():
    a, b = rn(9, dtype=I32, hi=7), rn(6, dtype=I32, lo=3, hi=11)
    got = plait.jit(lambda x, y: pnp.intersect1d(x, y, return_indices=True, size=3))(a, b)
    want = np.intersect1d(a, b, return_indices=True)
    for g, w in zip(got, want):
        n = min(3, w.size)
        np.testing.assert_array_equal(np.asarray(g)[:n], w[:n])


def test_weighted_quantile_rejects_other_methods_and_negative_weights():
    with pytest.raises(ValueError, match="inverted_cdf"):
        pnp.quantile(rn(4), 0.5, weights=np.ones(4))
    with pytest.raises(ValueError, match="non-negative"):
        pnp.quantile(rn(4), 0.5, method="inverted_cdf", weights=-np.ones(4))
