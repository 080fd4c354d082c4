"""``fft``: the discrete Fourier transform over the trailing axes (like ``jax.lax.fft``).

``fft(x, fft_type, fft_lengths)`` transforms the last ``len(fft_lengths)`` axes of ``x``:

- ``FFT``: complex -> complex, ``numpy.fft.fftn`` (no scaling);
- ``IFFT``: complex -> complex, ``numpy.fft.ifftn`` (scaled by ``1/prod(fft_lengths)``);
- ``RFFT``: real -> complex, ``numpy.fft.rfftn``; the last axis becomes ``n//2 + 1``;
- ``IRFFT``: complex -> real, ``numpy.fft.irfftn``; the input's last axis has
  ``n//2 + 1`` entries and the output's has ``fft_lengths[-1]``.

The impl runs ``scipy.fft`` when SciPy is installed (faster; see ``_fft_impl``), else
``numpy.fft``. The precision follows the operand: float32/complex64 in,
complex64/float32 out (both compute single precision in single precision; the impl
casts back in case an older NumPy widened it). On the native backend the primitive runs as
a host step with this impl (complex values never enter native kernels; the measured cost
of the host step over calling the library directly is ~2% of a 2^20-point transform and
~25 us per call for a 16-point one, ``python -m benchmarks.fft``), except the transforms
``plait.backends.native.fft.ROUTED`` lists, which call plait's own FFT library.

Autodiff (JAX's complex convention, cotangents pair by ``Re(sum(ct * t))``): the
primitive is linear, so its jvp is the fft of the tangent. The DFT matrix is
symmetric, so ``FFT`` and ``IFFT`` are their own transposes. ``RFFT``'s transpose is
``N * irfftn(conj(ct) * w)`` with ``w = 1/2`` on the bins the Hermitian extension
counts twice (all but the zero and Nyquist bins of the last axis); ``IRFFT``'s is
``conj(rfftn(ct)) * w' / N`` with ``w' = 2`` on those bins. ``N`` is
``prod(fft_lengths)``.
"""
from __future__ import annotations

import enum
import functools
import math
from typing import Sequence

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.trace import get_aval, wrap_array
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lax._base import standard_primitive, as_operand
from plait.lax._ad_helpers import deflinear, full, is_undefined_primal


class FftType(enum.IntEnum):
    """The four transforms of the ``fft`` primitive (the names of ``jax.lax.FftType``)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    def __repr__(self) -> str:
        return f"FftType.{self.name}"

    __str__ = __repr__


_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


def _fft_abstract(x: ShapedArray, *, fft_type: FftType, fft_lengths: tuple) -> ShapedArray:
    k = len(fft_lengths)
    name = f"fft ({fft_type.name})"
    if k < 1 or k > x.ndim:
        raise PlaitValueError(f"{name}: fft_lengths {fft_lengths} must name between 1 and "
                              f"x.ndim = {x.ndim} trailing axes")
    if any(n < 1 for n in fft_lengths):
        raise PlaitValueError(f"{name}: fft_lengths must be positive, got {fft_lengths}")
    dt = np.dtype(x.dtype)
    if fft_type == FftType.RFFT:
        if dt not in _COMPLEX_OF:
            raise PlaitTypeError(f"{name} needs a float32 or float64 operand, got {dt} "
                                 f"(convert it first; plait.numpy.fft does this for you)")
        out_dt = _COMPLEX_OF[dt]
    elif dt not in _REAL_OF:
        raise PlaitTypeError(f"{name} needs a complex64 or complex128 operand, got {dt} "
                             f"(convert it first; plait.numpy.fft does this for you)")
    else:
        out_dt = _REAL_OF[dt] if fft_type == FftType.IRFFT else dt
    lead, trail = x.shape[:x.ndim - k], tuple(x.shape[x.ndim - k:])
    want = tuple(fft_lengths)
    if fft_type == FftType.IRFFT:
        want = want[:-1] + (want[-1] // 2 + 1,)
    if trail != want:
        raise PlaitValueError(f"{name}: the operand's trailing axes {trail} must be {want} "
                              f"for fft_lengths {tuple(fft_lengths)}")
    out = tuple(fft_lengths)
    if fft_type == FftType.RFFT:
        out = out[:-1] + (out[-1] // 2 + 1,)
    return ShapedArray(lead + out, out_dt, False)


@functools.cache
def _scipy_fft():
    """``scipy.fft`` when installed (imported on first use), else None."""
    try:
        import scipy.fft as sfft
    except ImportError:
        return None
    return sfft


def _fft_impl(x, *, fft_type: FftType, fft_lengths: tuple):
    """``scipy.fft`` when installed, else ``numpy.fft``: both are pocketfft, but SciPy's
    build is faster (2^20-point complex64: ~65 ms against NumPy 2.4's ~180 ms, with
    less per-call overhead). One axis goes to the 1-D functions, whose argument
    handling costs half that of the n-D ones (a 16-point transform costs less than
    either); NumPy's n-D transforms run its 1-D functions axis by axis, as its
    ``fftn`` does."""
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    lib = _scipy_fft()
    if fft_type == FftType.RFFT:
        dt = _COMPLEX_OF[x.dtype]
        if lib is not None and k > 1:
            out = lib.rfftn(x, axes=axes)
        else:
            out = (lib or np.fft).rfft(x, axis=-1)
            for a in axes[:-1]:
                out = np.fft.fft(out, axis=a)
    elif fft_type == FftType.IRFFT:
        dt = _REAL_OF[x.dtype]
        if lib is not None and k > 1:
            out = lib.irfftn(x, s=fft_lengths, axes=axes)
        else:
            out = x
            for a in axes[:-1]:
                out = np.fft.ifft(out, axis=a)
            out = (lib or np.fft).irfft(out, fft_lengths[-1], axis=-1)
    else:
        dt = x.dtype
        inverse = fft_type == FftType.IFFT
        if lib is not None and k > 1:
            out = (lib.ifftn if inverse else lib.fftn)(x, axes=axes)
        else:
            mod = lib or np.fft
            fn = mod.ifft if inverse else mod.fft
            out = x
            for a in reversed(axes):
                out = fn(out, axis=a)
    return np.asarray(out).astype(dt, copy=False)


fft_p = standard_primitive("fft", _fft_abstract, _fft_impl)


def _last_axis_weights(fft_lengths: tuple, inner: float, dtype):
    """``[1, inner, ..., inner, 1 (even n only)]`` as an array of the rfft's last axis."""
    n = fft_lengths[-1]
    m = n // 2 + 1
    w = np.full(m, inner)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return wrap_array(w.astype(dtype), False)


def _scaled(x, w, ndim: int):
    """``x * w`` with ``w`` (1-D) along ``x``'s last axis."""
    from plait.lax.elementwise import mul
    from plait.lax.shape_ops import broadcast_in_dim
    shape = get_aval(x).shape
    return mul(x, broadcast_in_dim(w, shape, (ndim - 1,)))


def _fft_transpose(ct, x, *, fft_type: FftType, fft_lengths: tuple):
    from plait.lax.elementwise import conj, mul
    assert is_undefined_primal(x)
    N = math.prod(fft_lengths)
    ct_aval = get_aval(ct)
    if fft_type in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    if fft_type == FftType.RFFT:
        z = _scaled(conj(ct), _last_axis_weights(fft_lengths, 0.5, ct_aval.dtype), ct_aval.ndim)
        y = fft_p.bind(z, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)
        return [mul(y, full(get_aval(y).shape, N, get_aval(y).dtype))]
    y = conj(fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths))
    ya = get_aval(y)
    w = _last_axis_weights(fft_lengths, 2.0, ya.dtype)
    return [mul(_scaled(y, w, ya.ndim), full(ya.shape, 1.0 / N, ya.dtype))]


deflinear(fft_p, _fft_transpose)


def _fft_batch(vals, dims, *, fft_type: FftType, fft_lengths: tuple):
    """The transformed axes are trailing: a batch dim among the leading axes stays put,
    one among the trailing axes moves to the front."""
    (x,), (bd,) = vals, dims
    if bd >= get_aval(x).ndim - len(fft_lengths):
        from plait.lax._batch_helpers import move_batch_dim
        x, bd = move_batch_dim(x, bd, 0, get_aval(x).shape[bd]), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), bd


fft_p.def_rule("batch", _fft_batch)


def _fft_type(t) -> FftType:
    if isinstance(t, FftType):
        return t
    if isinstance(t, str):
        key = t.rsplit(".", 1)[-1].upper()
        if key in FftType.__members__:
            return FftType[key]
    elif isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= 3:
        return FftType(t)
    raise PlaitValueError(f"fft: unknown fft_type {t!r}; use one of FFT, IFFT, RFFT, IRFFT "
                          f"(plait.lax.FftType or its name as a string)")


def fft(x, fft_type: FftType | str, fft_lengths: Sequence[int]):
    """The DFT of ``x`` over its last ``len(fft_lengths)`` axes (``jax.lax.fft``).

    ``fft_type`` is a :class:`FftType` or its name (``"fft"``, ``"ifft"``, ``"rfft"``,
    ``"irfft"``). For ``FFT``/``IFFT``/``RFFT`` the trailing axes must equal
    ``fft_lengths``; for ``IRFFT`` the last one has ``fft_lengths[-1] // 2 + 1`` entries.
    No padding or truncation happens here (``plait.numpy.fft`` does that).
    """
    x = as_operand(x)
    t = _fft_type(fft_type)
    try:
        lengths = tuple(int(n) for n in fft_lengths)
    except TypeError:
        raise PlaitTypeError(f"fft: fft_lengths must be a sequence of static integers, got "
                             f"{fft_lengths!r}") from None
    return fft_p.bind(x, fft_type=t, fft_lengths=lengths)
