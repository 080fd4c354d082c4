"""``plait.scipy.signal``: N-d ``convolve``/``correlate`` (direct, by
``lax.conv_general_dilated``, or by FFT) and their 2-d forms, with SciPy's modes.

Real floating inputs (integers promote to float64); ``correlate(a, v)`` is
``convolve(a, flip(v))`` as in SciPy, and mode ``valid`` swaps the inputs when the
second is the larger, as SciPy does.
"""

import plait.numpy as _pnp
from plait import lax as _lax
from plait.errors import PlaitValueError as _PlaitValueError

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve"]

_MODES = ("full", "same", "valid")


def _inputs(in1, in2, mode, name):
    if mode not in _MODES:
        raise _PlaitValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")
    a, b = _pnp.asarray(in1), _pnp.asarray(in2)
    if a.ndim != b.ndim:
        raise _PlaitValueError(f"{name}: in1 and in2 must have the same number of dimensions, "
                              f"got {a.ndim} and {b.ndim}")
    if any(_pnp.issubdtype(v.dtype, _pnp.complexfloating) for v in (a, b)):
        raise _PlaitValueError(f"{name}: complex inputs are not supported; convolve the real "
                              "and imaginary parts separately")
    dt = _pnp.result_type(a, b)
    if not _pnp.issubdtype(dt, _pnp.floating):
        dt = _pnp.float64
    return a.astype(dt), b.astype(dt)


def _swap_for_valid(a, b, mode, name):
    if mode != "valid":
        return a, b
    if all(x >= y for x, y in zip(a.shape, b.shape)):
        return a, b
    if all(x <= y for x, y in zip(a.shape, b.shape)):
        return b, a
    raise _PlaitValueError(f"{name}: for 'valid' mode one input must be at least as large as "
                          f"the other in every dimension, got {a.shape} and {b.shape}")


def _crop(full, a_shape, b_shape, mode):
    if mode == "full":
        return full
    if mode == "same":
        starts = [(k - 1) // 2 for k in b_shape]
        sizes = a_shape
    else:
        starts = [k - 1 for k in b_shape]
        sizes = [n - k + 1 for n, k in zip(a_shape, b_shape)]
    return full[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


def _direct(a, b, mode):
    nd = a.ndim
    if mode == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(k - 1, k - 1) for k in b.shape]
    # conv_general_dilated correlates: flip the kernel for a convolution
    kernel = _pnp.flip(b, axis=tuple(range(nd))) if nd else b
    out = _lax.conv_general_dilated(a[None, None], kernel[None, None], (1,) * nd, pads)[0, 0]
    if mode == "same":
        out = _crop(out, a.shape, b.shape, "same")
    return out


def _fft(a, b, mode):
    shape = [n + k - 1 for n, k in zip(a.shape, b.shape)]
    axes = tuple(range(a.ndim))
    fa = _pnp.fft.rfftn(a, s=shape, axes=axes)
    fb = _pnp.fft.rfftn(b, s=shape, axes=axes)
    full = _pnp.fft.irfftn(fa * fb, s=shape, axes=axes).astype(a.dtype)
    return _crop(full, a.shape, b.shape, mode)


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-d convolution of ``in1`` and ``in2`` (``mode``: full, same, valid;
    ``method``: auto = direct, direct, fft)."""
    a, b = _inputs(in1, in2, mode, "convolve")
    if method not in ("auto", "direct", "fft"):
        raise _PlaitValueError(f"convolve: method must be 'auto', 'direct' or 'fft', "
                               f"got {method!r}")
    if a.ndim == 0:
        return a * b
    a, b = _swap_for_valid(a, b, mode, "convolve")
    return _fft(a, b, mode) if method == "fft" else _direct(a, b, mode)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-d cross-correlation: ``convolve(in1, flip(in2))``, as SciPy defines it."""
    a, b = _inputs(in1, in2, mode, "correlate")
    if a.ndim == 0:
        return a * b
    return convolve(a, _pnp.flip(b, axis=tuple(range(b.ndim))), mode, method, precision)


def fftconvolve(in1, in2, mode: str = "full", axes=None):
    """Convolution by FFT (``axes`` must be None: every axis)."""
    if axes is not None:
        raise _PlaitValueError("fftconvolve: only axes=None is supported")
    return convolve(in1, in2, mode, method="fft")


def _check_2d(in1, in2, boundary, fillvalue, name):
    if boundary != "fill" or fillvalue != 0:
        raise _PlaitValueError(f"{name}: only boundary='fill' with fillvalue=0 is supported "
                              "(as in JAX)")
    if _pnp.ndim(in1) != 2 or _pnp.ndim(in2) != 2:
        raise _PlaitValueError(f"{name}: inputs must be 2-d, got {_pnp.ndim(in1)}-d and "
                              f"{_pnp.ndim(in2)}-d")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0,
               precision=None):
    """2-d convolution (SciPy's ``convolve2d`` with zero fill)."""
    _check_2d(in1, in2, boundary, fillvalue, "convolve2d")
    return convolve(in1, in2, mode, "direct", precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0,
                precision=None):
    """2-d cross-correlation (SciPy's ``correlate2d`` with zero fill)."""
    _check_2d(in1, in2, boundary, fillvalue, "correlate2d")
    return correlate(in1, in2, mode, "direct", precision)
