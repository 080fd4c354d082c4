"""The oracle check: one engine's value of one node against NumPy on the same operands.

``check_node`` returns ``None`` when the value agrees, else a one-line description.
Rules (see ``tolerance.py``): dtype and shape exactly NumPy's; integers and booleans
exact; NaN positions exact; infinities exact; signed zeros exact where the op row
says so; finite values within the op's ulps at the op's scale. Elements where NumPy's
result is undefined (the row's ``undefined``) are not compared.
"""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from plait.fuzz.ops import OpSpec, s_inputs
from plait.fuzz.tolerance import allowed_error


def quiet(fn, *args, **kwargs):
    """Call ``fn`` with NumPy's floating-point warnings and all warnings silenced."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _scale(spec: OpSpec, args, params, want):
    if spec.scale == "out":
        return np.abs(want)
    fn = s_inputs if spec.scale == "inputs" else spec.scale
    try:
        return np.broadcast_to(quiet(fn, args, params, want), want.shape)
    except Exception:            # a scale that does not broadcast: fall back to the result
        return np.abs(want)


def _first(mask: np.ndarray, got, want) -> str:
    idx = tuple(int(i) for i in np.argwhere(mask)[0]) if mask.ndim else ()
    g, w = np.asarray(got)[idx], np.asarray(want)[idx]
    return f"at {idx}: got {g!r}, NumPy {w!r} ({int(mask.sum())} of {mask.size} differ)"


def check_node(spec: OpSpec, got, want, args, params) -> Optional[str]:
    """Compare ``got`` (an engine's value) with ``want`` (NumPy's) for one node."""
    want = np.asarray(want)
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, NumPy {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape}, NumPy {want.shape}"
    if want.size == 0:
        return None
    skip = None
    if spec.undefined is not None:
        m = quiet(spec.undefined, args, params, want)
        if m is not None:
            skip = np.broadcast_to(np.asarray(m, bool), want.shape)
    kind = want.dtype.kind
    if kind in "biu":
        bad = got != want
    else:
        bad = _float_bad(spec, got, want, args, params)
    if skip is not None:
        bad = bad & ~skip
    if bad.any():
        return _first(bad, got, want)
    return None


def _float_bad(spec, got, want, args, params) -> np.ndarray:
    with np.errstate(all="ignore"):
        if want.dtype.kind == "c":
            gn = np.isnan(got.real) | np.isnan(got.imag)
            wn = np.isnan(want.real) | np.isnan(want.imag)
            parts = [(got.real, want.real), (got.imag, want.imag)]
        else:
            gn, wn = np.isnan(got), np.isnan(want)
            parts = [(got, want)]
        bad = gn != wn
        both = ~(gn | wn)
        tol = allowed_error(spec.tol, want.dtype, _scale(spec, args, params, want))
        for g, w in parts:
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            inf = np.isinf(g64) | np.isinf(w64)
            bad |= both & inf & (g64 != w64)
            fin = both & ~inf
            bad |= fin & (np.abs(g64 - w64) > tol)
            if spec.signed_zero and want.dtype.kind != "c":
                bad |= both & (w64 == 0) & (g64 == 0) & (np.signbit(g64) != np.signbit(w64))
    return bad
