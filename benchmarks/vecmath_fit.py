"""Derive the polynomial coefficients of plait's own float32 vector math
(``src/plait/lax/_vecmath_c.py``: the ``expm1`` polynomial of the exp core, which exp,
expm1 and tanh share, and the ``log`` polynomial, which log and log1p share):
near-minimax fits by Lawson's iteratively reweighted least squares on a dense grid, in
float64, of the error measure each kernel needs.

Run ``python -m benchmarks.vecmath_fit``; it prints each fit's coefficients and the maximum
weighted error of the fit (the polynomial's share of the kernel's error; rounding adds
the rest, which ``benchmarks/vecmath_sweep.py`` measures exhaustively).
"""
from __future__ import annotations

import numpy as np


def lawson(t: np.ndarray, target: np.ndarray, weight: np.ndarray, degree: int,
           iters: int = 400) -> tuple[np.ndarray, float]:
    """Coefficients c[0..degree] of ``sum c_k t^k`` minimizing ``max |weight*(p - target)|``
    (approximately: Lawson's algorithm), and that maximum."""
    a = np.vander(t, degree + 1, increasing=True) * weight[:, None]
    b = target * weight
    lw = np.full(t.size, 1.0 / t.size)
    c = None
    for _ in range(iters):
        sw = np.sqrt(lw)
        c, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        err = np.abs(a @ c - b)
        lw = lw * err
        lw /= lw.sum()
    return c, float(np.max(np.abs(a @ c - b)))


def fit_exp() -> tuple[np.ndarray, float]:
    """exp(r) = 1 + r + r^2 q(r) on |r| <= ln2/2; the absolute error of r^2 q counts."""
    r = np.linspace(-np.log(2) / 2 - 1e-3, np.log(2) / 2 + 1e-3, 20001)
    r = r[r != 0]
    q = (np.expm1(r) - r) / (r * r)
    return lawson(r, q, r * r, 4)


def fit_log() -> tuple[np.ndarray, float]:
    """2 atanh(s) = 2s + s z P(z), z = s^2 <= (3 - 2 sqrt 2)^2; the error of z P(z),
    relative to the result ~2s, counts (weight z / 2)."""
    smax = 3 - 2 * np.sqrt(2)
    s = np.linspace(1e-6, smax + 1e-4, 20001)
    z = s * s
    target = (2 * np.arctanh(s) - 2 * s) / (s * z)
    return lawson(z, target, z / 2, 2)


if __name__ == "__main__":
    np.set_printoptions(precision=17)
    for name, (c, e) in (("exp/expm1/tanh q(r)", fit_exp()), ("log/log1p R(z)", fit_log())):
        print(f"{name}: max weighted error {e:.3e} (2^{np.log2(e):.1f})")
        for k, v in enumerate(c):
            print(f"  c{k} = {float(np.float32(v)).hex()}  /* {np.float32(v)!r} */")
