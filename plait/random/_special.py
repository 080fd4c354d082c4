"""``erf`` and ``erfinv`` composed from plait.numpy (plait has no primitive for them).

Accurate to float32 precision: ``erf`` uses its Maclaurin series for ``|x| < 0.5``
and Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7) beyond; ``erfinv`` uses
M. Giles' single-precision polynomial ("Approximating the erfinv function", GPU
Computing Gems, 2011). Both are differentiable, jittable and vmappable.
"""
from __future__ import annotations

import plait.numpy as pnp

_TWO_OVER_SQRT_PI = 1.1283791670955126
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
# Maclaurin coefficients of erf(x) * sqrt(pi) / 2: (-1)^n / (n! (2n + 1)).
_SERIES = (1.0, -1.0 / 3, 1.0 / 10, -1.0 / 42, 1.0 / 216, -1.0 / 1320, 1.0 / 9360)
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, t):
    acc = coeffs[0] + 0 * t
    for c in coeffs[1:]:
        acc = acc * t + c
    return acc


def erf(x):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt`` (float32 accuracy)."""
    x = pnp.asarray(x)
    if not pnp.issubdtype(x.dtype, pnp.floating):
        x = x.astype(pnp.float32)
    ax = pnp.abs(x)
    small = ax < 0.5
    xs = pnp.where(small, x, 0.0)                      # keep each branch finite everywhere
    series = _TWO_OVER_SQRT_PI * xs * _horner(_SERIES[::-1], xs * xs)
    xl = pnp.where(small, 1.0, ax)
    t = 1.0 / (1.0 + _AS_P * xl)
    tail = 1.0 - t * _horner(_AS_A[::-1], t) * pnp.exp(-xl * xl)
    return pnp.where(small, series, pnp.sign(x) * tail)


def erfinv(y):
    """The inverse error function on ``(-1, 1)`` (``+-inf`` at ``+-1``), float32 accuracy."""
    y = pnp.asarray(y)
    if not pnp.issubdtype(y.dtype, pnp.floating):
        y = y.astype(pnp.float32)
    edge = pnp.abs(y) == 1.0
    ys = pnp.where(edge, 0.0, y)                      # keep the polynomials finite
    w = -pnp.log((1.0 - ys) * (1.0 + ys))
    central = w < 5.0
    wc = pnp.where(central, w, 5.0) - 2.5
    wt = pnp.sqrt(pnp.where(central, 5.0, w)) - 3.0
    p = pnp.where(central, _horner(_GILES_CENTRAL, wc), _horner(_GILES_TAIL, wt))
    return pnp.where(edge, pnp.where(y > 0, pnp.inf, -pnp.inf), p * ys)
