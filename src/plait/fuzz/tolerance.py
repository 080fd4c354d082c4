"""Tolerance classes of the differential fuzzer: how far a result may be from NumPy's.

A class gives a number of ulps per result dtype and a *scale*: the magnitude whose
ulp is allowed. The scale is the result itself for most ops, the largest operand for
sums and differences (the native backend contracts ``a*b + c`` into an FMA, whose
error is an ulp of the operands, not of a cancelled result), and a per-op
expression for reductions (``n * sum(|x|)`` for a sum: summation order differs).

Integers and booleans are always compared exactly. NaN positions are compared
exactly everywhere; infinities must match exactly (sign included); signed zeros
must match where the op's table row says the sign of zero is defined.
"""
from __future__ import annotations

import numpy as np

# ulps allowed per result dtype, per class. Float16 results are computed in float32
# by both NumPy and plait, so one rounding step separates them at most.
ULPS: dict[str, dict[str, float]] = {
    "exact": {"float16": 0, "float32": 0, "float64": 0, "complex64": 0, "complex128": 0},
    # correctly rounded in both (add, mul, div, sqrt), up to double rounding and FMA
    "round": {"float16": 1, "float32": 1, "float64": 1, "complex64": 4, "complex128": 4},
    # libm-quality functions: NumPy's SIMD kernels and the C library differ by a few ulps
    "libm": {"float16": 1, "float32": 4, "float64": 4, "complex64": 8, "complex128": 8},
    # composite functions (several libm calls, different but equally valid formulas)
    "composite": {"float16": 2, "float32": 16, "float64": 16, "complex64": 64, "complex128": 64},
    # reductions: the scale already carries the length; a few ulps of it
    "reduce": {"float16": 4, "float32": 4, "float64": 4, "complex64": 4, "complex128": 4},
}


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def allowed_error(tol: str, dtype: np.dtype, scale: np.ndarray) -> np.ndarray:
    """Absolute error allowed for results of ``dtype`` whose magnitude is ``scale``."""
    ulps = ULPS[tol][dtype.name]
    rd = _real_dtype(dtype)
    with np.errstate(all="ignore"):
        s = np.abs(np.asarray(scale, np.float64))
        s = np.where(np.isfinite(s), s, 0.0)
        spacing = np.spacing(s.astype(rd)).astype(np.float64)
        spacing = np.maximum(spacing, float(np.finfo(rd).smallest_subnormal))
    return ulps * spacing
