"""``erf`` and ``erfinv`` composed from plait.numpy (plait has no primitive for them).

``erf`` is accurate to float32 precision: it uses its Maclaurin series for ``|x| < 0.5``
and Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7) beyond; ``erfinv`` uses
M. Giles' single-precision polynomial ("Approximating the erfinv function", GPU
Computing Gems, 2011). Both are differentiable, jittable and vmappable.
"""
from __future__ import annotations

import numpy as np

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


# XLA's ErfInv64 (Giles' double-precision polynomials in w = -log1p(-x*x)), so float64
# normals follow JAX's x64 algorithm step by step.
_GILES64_A = (-3.6444120640178196996e-21, -1.685059138182016589e-19,
              1.2858480715256400167e-18, 1.115787767802518096e-17,
              -1.333171662854620906e-16, 2.0972767875968561637e-17,
              6.6376381343583238325e-15, -4.0545662729752068639e-14,
              -8.1519341976054721522e-14, 2.6335093153082322977e-12,
              -1.2975133253453532498e-11, -5.4154120542946279317e-11,
              1.051212273321532285e-09, -4.1126339803469836976e-09,
              -2.9070369957882005086e-08, 4.2347877827932403518e-07,
              -1.3654692000834678645e-06, -1.3882523362786468719e-05,
              0.0001867342080340571352, -0.00074070253416626697512,
              -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)
_GILES64_B = (2.2137376921775787049e-09, 9.0756561938885390979e-08,
              -2.7517406297064545428e-07, 1.8239629214389227755e-08,
              1.5027403968909827627e-06, -4.013867526981545969e-06,
              2.9234449089955446044e-06, 1.2475304481671778723e-05,
              -4.7318229009055733981e-05, 6.8284851459573175448e-05,
              2.4031110387097893999e-05, -0.0003550375203628474796,
              0.00095328937973738049703, -0.0016882755560235047313,
              0.0024914420961078508066, -0.0037512085075692412107,
              0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)
_GILES64_C = (-2.7109920616438573243e-11, -2.5556418169965252055e-10,
              1.5076572693500548083e-09, -3.7894654401267369937e-09,
              7.6157012080783393804e-09, -1.4960026627149240478e-08,
              2.9147953450901080826e-08, -6.7711997758452339498e-08,
              2.2900482228026654717e-07, -9.9298272942317002539e-07,
              4.5260625972231537039e-06, -1.9681778105531670567e-05,
              7.5995277030017761139e-05, -0.00021503011930044477347,
              -0.00013871931833623122026, 1.0103004648645343977, 4.8499064014085844221)


def _horner_dt(coeffs, t):
    """Horner's rule with each coefficient rounded to ``t``'s dtype first (as XLA does)."""
    acc = pnp.full(t.shape, coeffs[0], t.dtype)
    if t.dtype == np.float32:          # XLA fuses each step into one fma: round once
        t64 = t.astype(np.float64)
        for c in coeffs[1:]:
            acc = (np.float64(np.float32(c)) + acc.astype(np.float64) * t64).astype(t.dtype)
        return acc
    for c in coeffs[1:]:
        acc = pnp.asarray(c, t.dtype) + acc * t
    return acc


def erfinv(y):
    """The inverse error function on ``(-1, 1)`` (``+-inf`` at ``+-1``), computed as XLA
    computes ``lax.erf_inv``: Giles' single-precision polynomials for float32 (and
    narrower, computed in float32), his double-precision ones for float64."""
    y = pnp.asarray(y)
    if not pnp.issubdtype(y.dtype, pnp.floating):
        y = y.astype(pnp.float32)
    out_dt = y.dtype
    if y.dtype.itemsize < 4:
        y = y.astype(pnp.float32)
    dt = y.dtype
    edge = pnp.abs(y) == 1.0
    ys = pnp.where(edge, pnp.asarray(0.0, dt), y)     # keep the polynomials finite
    w = -pnp.log1p(-ys * ys)
    c = lambda v: pnp.asarray(v, dt)
    if dt == np.float64:
        lt6, lt16 = w < 6.25, w < 16.0
        wa = pnp.where(lt6, w, c(6.25)) - c(3.125)
        sw = pnp.sqrt(pnp.where(lt6, c(6.25), w))
        wb = sw - c(3.25)
        wc = sw - c(5.0)
        p = pnp.where(lt6, _horner_dt(_GILES64_A, wa),
                      pnp.where(lt16, _horner_dt(_GILES64_B, wb), _horner_dt(_GILES64_C, wc)))
    else:
        central = w < 5.0
        wc = pnp.where(central, w, c(5.0)) - c(2.5)
        wt = pnp.sqrt(pnp.where(central, c(5.0), w)) - c(3.0)
        p = pnp.where(central, _horner_dt(_GILES_CENTRAL, wc), _horner_dt(_GILES_TAIL, wt))
    res = pnp.where(edge, pnp.where(y > 0, c(np.inf), c(-np.inf)), p * ys)
    return res.astype(out_dt)
