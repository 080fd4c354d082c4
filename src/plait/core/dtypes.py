"""dtypes: the supported set, canonicalization, and NumPy 2 (NEP 50) promotion.

Python scalars are *weak*: ``float32_array * 2.0`` stays float32, ``int8 + 1``
stays int8. Arrays with ``weak_type=True`` (made from Python scalars) behave the
same way. Promotion between strong dtypes follows ``numpy.result_type``.
"""
from __future__ import annotations

import numpy as np

from plait.config import config as _config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

try:  # bfloat16 is optional: available when ml_dtypes is installed
    import ml_dtypes as _ml
    bfloat16 = np.dtype(_ml.bfloat16)
except ImportError:  # pragma: no cover - depends on environment
    bfloat16 = None

SUPPORTED = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             float16, float32, float64, complex64, complex128}
if bfloat16 is not None:
    SUPPORTED.add(bfloat16)

_SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
          uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16",
          float32: "f32", float64: "f64", complex64: "c64", complex128: "c128"}
if bfloat16 is not None:
    _SHORT[bfloat16] = "bf16"


def dtype_short(dt: np.dtype) -> str:
    """Short printed name of a dtype (``f32``, ``i64``, ...)."""
    return _SHORT.get(dt, str(dt))


# float32 mode (``plait.config.x64 = False``, JAX's default): every 64-bit dtype is
# replaced by its 32-bit sibling wherever a dtype or a value enters plait
_NARROW = {float64: float32, int64: int32, uint64: uint32, complex128: complex64}


def x64_enabled() -> bool:
    """Whether 64-bit dtypes are on (the NumPy default) or narrowed to 32 bits."""
    return _config.x64


def narrow(dt: np.dtype) -> np.dtype:
    """``dt``, or its 32-bit sibling in float32 mode."""
    return dt if _config.x64 else _NARROW.get(dt, dt)


def narrow_value(x: np.ndarray) -> np.ndarray:
    """``x`` converted to its dtype's 32-bit sibling in float32 mode."""
    if _config.x64:
        return x
    d = _NARROW.get(x.dtype)
    return x if d is None else x.astype(d)


def canonical_dtype(dt) -> np.dtype:
    """Turn anything NumPy accepts as a dtype into a supported ``np.dtype`` (narrowed
    to 32 bits in float32 mode)."""
    if dt is float:
        return narrow(float64)
    if dt is int:
        return narrow(int64)
    if dt is complex:
        return narrow(complex128)
    if dt is bool:
        return bool_
    d = np.dtype(dt)
    if not d.isnative:   # big-endian (non-native) values are converted at the boundary
        d = d.newbyteorder("=")
    if d not in SUPPORTED:
        from plait.errors import PlaitTypeError
        raise PlaitTypeError(f"dtype {d} is not supported by plait; supported dtypes are "
                             f"bool, (u)int8-64, float16/32/64, complex64/128")
    return d if _config.x64 else _NARROW.get(d, d)


def is_bool(dt) -> bool:
    return np.dtype(dt) == bool_


def is_integer(dt) -> bool:
    return np.dtype(dt).kind in "iu"


def is_unsigned(dt) -> bool:
    return np.dtype(dt).kind == "u"


def is_float(dt) -> bool:
    d = np.dtype(dt)
    return d.kind == "f" or (bfloat16 is not None and d == bfloat16)


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def is_inexact(dt) -> bool:
    return is_float(dt) or is_complex(dt)


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _kind_rank(dt: np.dtype) -> int:
    if bfloat16 is not None and dt == bfloat16:
        return 2
    return _KIND_RANK[dt.kind]


def python_scalar_dtype(x) -> np.dtype:
    """The default (strong) dtype of a Python scalar: bool, int64, float64, complex128
    (int32, float32, complex64 in float32 mode)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return narrow(int64)
    if isinstance(x, float):
        return narrow(float64)
    if isinstance(x, complex):
        return narrow(complex128)
    raise TypeError(f"not a Python scalar: {x!r}")


def _weak_to_kind(kind_rank: int, strong: np.dtype) -> np.dtype:
    """dtype of a weak value of kind ``kind_rank`` combined with strong dtype."""
    if kind_rank <= _kind_rank(strong):
        return strong
    if kind_rank == 2:   # int/bool array with a Python float -> default float
        return narrow(float64)
    if kind_rank == 3:   # real array with a Python complex
        half = strong in (float16, float32) or (bfloat16 is not None and strong == bfloat16)
        return complex64 if half else narrow(complex128)
    return narrow(int64) if kind_rank == 1 else bool_


def result_type(*items) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak)`` pairs per NEP 50; return ``(dtype, weak)``.

    Each item is a ``(dtype, weak_type)`` pair. Weak items only decide the kind
    (bool < int < float < complex) unless every item is weak.
    """
    strong = [np.dtype(d) for d, w in items if not w]
    weak = [np.dtype(d) for d, w in items if w]
    if not strong:
        dt = weak[0]
        for d in weak[1:]:
            dt = np.promote_types(dt, d)
        return dt, True
    dt = strong[0]
    for d in strong[1:]:
        if bfloat16 is not None and bfloat16 in (dt, d) and dt != d:
            other = d if dt == bfloat16 else dt
            dt = bfloat16 if _kind_rank(other) < 2 else np.promote_types(float32, other)
        else:
            dt = np.promote_types(dt, d)
    for w in weak:
        dt = _weak_to_kind(_kind_rank(w), dt)
    return dt, False


def real_dtype(dt) -> np.dtype:
    """float32 for complex64, float64 for complex128, the dtype itself otherwise."""
    d = np.dtype(dt)
    if d == complex64:
        return float32
    if d == complex128:
        return float64
    return d


def finfo(dt):
    """``numpy.finfo`` that also knows bfloat16."""
    if bfloat16 is not None and np.dtype(dt) == bfloat16:
        return _ml.finfo(bfloat16)
    return np.finfo(dt)


def iinfo(dt):
    return np.iinfo(dt)
