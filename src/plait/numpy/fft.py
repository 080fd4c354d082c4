"""``plait.numpy.fft``: ``numpy.fft`` (and the Array API fft extension) over ``lax.fft``.

Every transform resizes the chosen axes per NumPy (``n``/``s``: truncate, or pad with
zeros at the end), moves them to the end, binds the one ``fft`` primitive and moves
them back; ``norm`` (``"backward"``, ``"ortho"``, ``"forward"``; None is
``"backward"``) scales the result. Result dtypes are NumPy 2's: float32 (and float16)
in gives complex64/float32 out, float64, integer and bool inputs give
complex128/float64. Repeated ``axes`` transform an axis repeatedly, as in NumPy.
"""

import math as _math

import numpy as _np

from plait import lax as _lax
from plait.core import dtypes as _dtypes
from plait.core.trace import Tracer as _Tracer, get_aval as _get_aval
from plait.errors import PlaitTypeError as _PlaitTypeError, PlaitValueError as _PlaitValueError
from plait.lax.fft import FftType as _FftType
from plait.numpy import _promote
from plait.numpy.array_api import place as _place

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


# --- argument handling -------------------------------------------------------------------
def _array(x, name: str):
    return _promote.asarray_strong(_promote.arg(x, name), name=name)


def _single(dt) -> bool:
    return _np.dtype(dt) in (_dtypes.float16, _dtypes.float32, _dtypes.complex64)


def _as_complex(x, name: str):
    """``x`` as complex64 (single-precision inputs) or complex128 (the rest)."""
    x = _array(x, name)
    dt = _get_aval(x).dtype
    want = _dtypes.complex64 if _single(dt) else _dtypes.complex128
    return _promote.cast(x, want)


def _as_real(x, name: str):
    """``x`` as float32 (float16/32) or float64 (float64, integers, bool); complex is an error."""
    x = _array(x, name)
    dt = _get_aval(x).dtype
    if _dtypes.is_complex(dt):
        raise _PlaitTypeError(f"{name} needs a real input, got {dt}; use fft for complex input")
    return _promote.cast(x, _dtypes.float32 if _single(dt) else _dtypes.float64)


def _norm(norm, name: str) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise _PlaitValueError(f'{name}: invalid norm value {norm!r}; should be "backward", '
                              f'"ortho" or "forward"')
    return norm


def _length(n, name: str) -> int:
    n = _promote.static_int(n, name, "the number of FFT points")
    if n < 1:
        raise _PlaitValueError(f"{name}: invalid number of FFT data points ({n}) specified")
    return n


def _axis(axis, ndim: int, name: str) -> int:
    if ndim == 0:
        raise _PlaitValueError(f"{name} needs an array of at least one dimension, got a 0-d "
                              f"array")
    return _promote.normalize_axis(axis, ndim, name)


def _resize(x, axes, sizes):
    """``x`` truncated or zero-padded at the end of each of ``axes`` to ``sizes``
    (one ``slice`` and one ``pad`` at most)."""
    if isinstance(axes, int):
        axes, sizes = (axes,), (sizes,)
    a = _get_aval(x)
    limit, extra = list(a.shape), [0] * a.ndim
    for ax, n in zip(axes, sizes):
        limit[ax] = min(a.shape[ax], n)
        extra[ax] = max(n - a.shape[ax], 0)
    if tuple(limit) != a.shape:
        x = _lax.slice(x, (0,) * a.ndim, tuple(limit))
    if any(extra):
        x = _lax.pad(x, _promote.scalar_array(0, a.dtype, weak=False),
                    [(0, e, 0) for e in extra])
    return x


def _scale(x, norm: str, n: int, inverse: bool):
    """Apply ``norm`` to a forward (unscaled) or inverse (``1/n``-scaled) transform."""
    if norm == "backward":
        return x
    if inverse:
        factor = _math.sqrt(n) if norm == "ortho" else float(n)
    else:
        factor = 1 / _math.sqrt(n) if norm == "ortho" else 1 / n
    from plait.numpy.ufuncs import multiply
    return multiply(x, factor)


def _transform(x, fft_type: _FftType, axes: tuple, lengths: tuple):
    """``lax.fft`` over distinct ``axes`` (moved to the end and back)."""
    nd = _get_aval(x).ndim
    perm = [i for i in range(nd) if i not in axes] + list(axes)
    moved = perm != list(range(nd))
    if moved:
        x = _lax.transpose(x, tuple(perm))
    y = _lax.fft(x, fft_type, lengths)
    if moved:
        y = _lax.transpose(y, tuple(int(i) for i in _np.argsort(perm)))
    return y


# --- one-dimensional transforms ---------------------------------------------------------
def _c2c(x, n, axis, norm, inverse: bool, name: str):
    x = _as_complex(x, name)
    ax = _axis(axis, _get_aval(x).ndim, name)
    n = _get_aval(x).shape[ax] if n is None else n
    n = _length(n, name)
    y = _transform(_resize(x, ax, n), _FftType.IFFT if inverse else _FftType.FFT, (ax,), (n,))
    return _scale(y, _norm(norm, name), n, inverse)


def _r2c(x, n, axis, norm, name: str):
    x = _as_real(x, name)
    ax = _axis(axis, _get_aval(x).ndim, name)
    n = _get_aval(x).shape[ax] if n is None else n
    n = _length(n, name)
    y = _transform(_resize(x, ax, n), _FftType.RFFT, (ax,), (n,))
    return _scale(y, _norm(norm, name), n, False)


def _c2r(x, n, axis, norm, name: str):
    x = _as_complex(x, name)
    ax = _axis(axis, _get_aval(x).ndim, name)
    n = 2 * (_get_aval(x).shape[ax] - 1) if n is None else n
    n = _length(n, name)
    y = _transform(_resize(x, ax, n // 2 + 1), _FftType.IRFFT, (ax,), (n,))
    return _scale(y, _norm(norm, name), n, True)


def fft(a, n: int | None = None, axis: int = -1, norm: str | None = "backward"):
    """The 1-D discrete Fourier transform along ``axis`` (``numpy.fft.fft``)."""
    return _c2c(a, n, axis, norm, False, "fft")


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = "backward"):
    """The 1-D inverse discrete Fourier transform along ``axis`` (``numpy.fft.ifft``)."""
    return _c2c(a, n, axis, norm, True, "ifft")


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = "backward"):
    """The 1-D DFT of a real input: the ``n//2 + 1`` non-negative frequencies."""
    return _r2c(a, n, axis, norm, "rfft")


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = "backward"):
    """The inverse of :func:`rfft`: a real result of length ``n`` (default
    ``2 * (m - 1)`` for ``m`` input points)."""
    return _c2r(a, n, axis, norm, "irfft")


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = "backward"):
    """The DFT of a Hermitian-symmetric signal given by its first half: a real result
    of length ``n`` (default ``2 * (m - 1)``)."""
    x = _as_complex(a, "hfft")
    return _c2r(_lax.conj(x), n, axis, _SWAP[_norm(norm, "hfft")], "hfft")


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = "backward"):
    """The inverse of :func:`hfft`: ``n//2 + 1`` complex values from a real input."""
    y = _r2c(a, n, axis, _SWAP[_norm(norm, "ihfft")], "ihfft")
    return _lax.conj(y)


# --- n-dimensional transforms -----------------------------------------------------------
def _nd_args(x, s, axes, name: str, inverse_real: bool = False):
    """NumPy's ``(s, axes)`` defaults: ``axes`` the last ``len(s)`` axes (all axes
    without ``s``); ``s`` the axes' lengths (for ``irfftn`` the last is
    ``2 * (m - 1)``); an ``s`` entry of -1 or None keeps that axis' length."""
    shape = _get_aval(x).shape
    nd = len(shape)
    if s is not None and isinstance(s, _Tracer):
        _promote.static_int(s, name, "s")
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
        if s is not None and len(s) > nd:
            raise _PlaitValueError(f"{name}: s {tuple(s)} has more entries than the "
                                  f"array's {nd} dimensions")
    elif isinstance(axes, (int, _np.integer)):
        axes = (axes,)
    axes = tuple(_promote.normalize_axis(a, nd, name) for a in axes)
    if s is None:
        s = [shape[a] for a in axes]
        if inverse_real and axes:
            s[-1] = 2 * (shape[axes[-1]] - 1)
    else:
        s = list(s)
        if len(s) != len(axes):
            raise _PlaitValueError(f"{name}: shape and axes have different lengths "
                                  f"(s={tuple(s)}, axes={axes})")
        s = [shape[a] if v is None or (not isinstance(v, _Tracer) and v == -1) else v
             for v, a in zip(s, axes)]
    return tuple(_length(v, name) for v in s), axes


def _c2c_nd(x, s, axes, norm, inverse: bool, name: str):
    x = _as_complex(x, name)
    s, axes = _nd_args(x, s, axes, name)
    norm = _norm(norm, name)
    if not axes:
        return x
    if len(set(axes)) != len(axes):   # NumPy transforms repeated axes repeatedly
        for n, ax in reversed(list(zip(s, axes))):
            x = _c2c(x, n, ax, norm, inverse, name)
        return x
    y = _transform(_resize(x, axes, s), _FftType.IFFT if inverse else _FftType.FFT, axes, s)
    return _scale(y, norm, _math.prod(s), inverse)


def _r2c_nd(x, s, axes, norm, name: str):
    x = _as_real(x, name)
    s, axes = _nd_args(x, s, axes, name)
    norm = _norm(norm, name)
    if not axes:
        raise _PlaitValueError(f"{name} needs at least one axis")
    if len(set(axes)) != len(axes):
        y = _r2c(x, s[-1], axes[-1], norm, name)
        for n, ax in reversed(list(zip(s[:-1], axes[:-1]))):
            y = _c2c(y, n, ax, norm, False, name)
        return y
    x = _resize(x, axes, s)
    return _scale(_transform(x, _FftType.RFFT, axes, s), norm, _math.prod(s), False)


def _c2r_nd(x, s, axes, norm, name: str):
    x = _as_complex(x, name)
    s, axes = _nd_args(x, s, axes, name, inverse_real=True)
    norm = _norm(norm, name)
    if not axes:
        raise _PlaitValueError(f"{name} needs at least one axis")
    if len(set(axes)) != len(axes):
        for n, ax in zip(s[:-1], axes[:-1]):
            x = _c2c(x, n, ax, norm, True, name)
        return _c2r(x, s[-1], axes[-1], norm, name)
    x = _resize(x, axes, s[:-1] + (s[-1] // 2 + 1,))
    return _scale(_transform(x, _FftType.IRFFT, axes, s), norm, _math.prod(s), True)


def fftn(a, s=None, axes=None, norm: str | None = "backward"):
    """The n-D discrete Fourier transform over ``axes`` (all axes by default)."""
    return _c2c_nd(a, s, axes, norm, False, "fftn")


def ifftn(a, s=None, axes=None, norm: str | None = "backward"):
    """The n-D inverse discrete Fourier transform over ``axes``."""
    return _c2c_nd(a, s, axes, norm, True, "ifftn")


def rfftn(a, s=None, axes=None, norm: str | None = "backward"):
    """The n-D DFT of a real input (the last axis keeps ``s[-1]//2 + 1`` frequencies)."""
    return _r2c_nd(a, s, axes, norm, "rfftn")


def irfftn(a, s=None, axes=None, norm: str | None = "backward"):
    """The inverse of :func:`rfftn`: a real result of lengths ``s`` over ``axes``."""
    return _c2r_nd(a, s, axes, norm, "irfftn")


def fft2(a, s=None, axes=(-2, -1), norm: str | None = "backward"):
    """The 2-D discrete Fourier transform (over the last two axes by default)."""
    return _c2c_nd(a, s, axes, norm, False, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm: str | None = "backward"):
    """The 2-D inverse discrete Fourier transform."""
    return _c2c_nd(a, s, axes, norm, True, "ifft2")


def rfft2(a, s=None, axes=(-2, -1), norm: str | None = "backward"):
    """The 2-D DFT of a real input."""
    return _r2c_nd(a, s, axes, norm, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm: str | None = "backward"):
    """The inverse of :func:`rfft2`."""
    return _c2r_nd(a, s, axes, norm, "irfft2")


# --- frequencies and shifts -------------------------------------------------------------
def _freq_dtype(dtype, name: str):
    if dtype is None:
        return _dtypes.float64
    dt = _dtypes.canonical_dtype(dtype)
    if not _dtypes.is_float(dt):
        raise _PlaitTypeError(f"{name}: dtype must be a real floating dtype, got {dt}")
    return dt


def _freqs(ints: _np.ndarray, n: int, d, dtype, device, name: str):
    from plait.numpy.ufuncs import divide, multiply
    k = _promote.wrap(ints.astype(dtype), False)
    if _promote.is_python_scalar(d):
        out = _promote.cast(multiply(k, 1.0 / (n * d)), dtype)
    else:
        out = _promote.cast(divide(k, multiply(_array(d, name), n)), dtype)
    return _place(out, device, name)


def fftfreq(n: int, d=1.0, device=None, *, dtype=None):
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``:
    ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)``."""
    n = _length(n, "fftfreq")
    ints = _np.concatenate([_np.arange(0, (n - 1) // 2 + 1), _np.arange(-(n // 2), 0)])
    return _freqs(ints, n, d, _freq_dtype(dtype, "fftfreq"), device, "fftfreq")


def rfftfreq(n: int, d=1.0, device=None, *, dtype=None):
    """The sample frequencies of :func:`rfft`: ``[0, 1, ..., n//2] / (d * n)``."""
    n = _length(n, "rfftfreq")
    return _freqs(_np.arange(0, n // 2 + 1), n, d, _freq_dtype(dtype, "rfftfreq"), device,
                  "rfftfreq")


def _shift(x, axes, name: str, sign: int):
    from plait.numpy.shapes import roll
    x = _promote.arg(x, name)
    x = _promote.asarray_strong(x, name=name)
    shape = _get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, _np.integer)):
        axes = (axes,)
    axes = tuple(_promote.normalize_axis(a, len(shape), name) for a in axes)
    if not axes:
        return x
    return roll(x, tuple(sign * (shape[a] // 2) for a in axes), axes)


def fftshift(x, axes=None):
    """Move the zero-frequency term to the centre of ``axes`` (all axes by default)."""
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x, axes=None):
    """The inverse of :func:`fftshift` (differs from it for odd lengths)."""
    return _shift(x, axes, "ifftshift", -1)
