"""The Array API standard's (2024.12) inspection and interchange surface of ``plait.numpy``.

``__array_namespace_info__()`` (capabilities, devices, default and supported dtypes),
``isdtype`` with the standard's kinds, ``from_dlpack``, device placement for the
creation functions' ``device=`` (:func:`place`), and the array members
``__array_namespace__``, ``device``, ``to_device``, installed on ``ArrayMethods`` so
tracers answer them like concrete arrays (libraries such as xarray then keep a
tracer as a duck array instead of converting it with ``np.asarray``).
"""
from __future__ import annotations

import builtins
import sys

import numpy as np

from plait.core import device as _device
from plait.core import dtypes
from plait.core.array_methods import install_methods
from plait.core.trace import Tracer
from plait.errors import PlaitTypeError, PlaitValueError, TracerArrayConversionError
from plait.numpy import _promote

__array_api_version__ = "2024.12"
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

_KINDS = {
    "bool": lambda dt: dt.kind == "b",
    "signed integer": lambda dt: dt.kind == "i",
    "unsigned integer": lambda dt: dt.kind == "u",
    "integral": lambda dt: dt.kind in "iu",
    "real floating": lambda dt: dtypes.is_float(dt),
    "complex floating": lambda dt: dt.kind == "c",
    "numeric": lambda dt: dt.kind in "iuc" or dtypes.is_float(dt),
}

_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64", "complex64", "complex128")


def _as_dtype(d, name: str) -> np.dtype:
    if isinstance(d, (str, builtins.bool)) or d is None:
        raise PlaitTypeError(f"{name}: expected a dtype, got {d!r}")
    try:
        return np.dtype(d)
    except TypeError:
        raise PlaitTypeError(f"{name}: expected a dtype, got {d!r}") from None


def isdtype(dtype, kind) -> builtins.bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names
    (``'bool'``, ``'signed integer'``, ``'unsigned integer'``, ``'integral'``,
    ``'real floating'``, ``'complex floating'``, ``'numeric'``) or a tuple of those."""
    dt = _as_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return builtins.any(_isdtype_one(dt, k) for k in kind)
    return _isdtype_one(dt, kind)


def _isdtype_one(dt: np.dtype, kind) -> builtins.bool:
    if isinstance(kind, str):
        test = _KINDS.get(kind)
        if test is None:
            raise PlaitValueError(f"isdtype: unknown kind {kind!r}; expected a dtype or one "
                                  f"of {', '.join(map(repr, _KINDS))}")
        return test(dt)
    if isinstance(kind, tuple):
        raise PlaitTypeError("isdtype: kind tuples may not be nested")
    return dt == _as_dtype(kind, "isdtype")


# --- devices --------------------------------------------------------------------------
def _check_device(device, name: str):
    if device is None:
        return None
    if device in _device.all_devices():
        return device
    if isinstance(device, str):
        for d in _device.all_devices():
            if device in (repr(d), d.platform):
                return d
    raise PlaitValueError(f"{name}: unknown device {device!r}; available: "
                          f"{', '.join(map(repr, _device.all_devices()))}")


def place(x, device, name: str):
    """``x`` on ``device`` (None: where it is). Traced values stay where the trace is."""
    d = _check_device(device, name)
    if d is None or isinstance(x, Tracer) and not hasattr(x, "_host_value"):
        return x
    if getattr(x, "device", None) == d:
        return x
    return d.put(x)


# --- the inspection namespace ---------------------------------------------------------
class ArrayNamespaceInfo:
    """What ``plait.numpy`` supports, per the Array API standard's inspection API."""

    __module__ = "plait.numpy"

    def capabilities(self) -> dict:
        """Boolean indexing and data-dependent shapes work eagerly (under ``jit`` they need
        ``size=``-style static arguments); eager arrays are NumPy buffers, hence NumPy's
        limit of 64 dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self):
        """The device arrays are created on (``cpu:0``)."""
        return _device.default_device()

    def devices(self) -> list:
        """Every device arrays can be placed on, the default first."""
        return list(_device.all_devices())

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtypes (NumPy's: float64, complex128, int64, int64 indices)."""
        _check_device(device, "default_dtypes")
        return {"real floating": np.dtype(np.float64), "complex floating":
                np.dtype(np.complex128), "integral": np.dtype(np.int64),
                "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The supported dtypes by name, restricted to ``kind`` (as in :func:`isdtype`)."""
        _check_device(device, "dtypes")
        out = {}
        for n in _DTYPE_NAMES:
            dt = np.dtype(n)
            if kind is None or isdtype(dt, kind):
                out[n] = dt
        return out


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API inspection namespace of ``plait.numpy``."""
    return ArrayNamespaceInfo()


# --- interchange ----------------------------------------------------------------------
def from_dlpack(x, /, *, device=None, copy: builtins.bool | None = None):
    """An array from any object with ``__dlpack__`` (NumPy, PyTorch on CPU, plait).

    The value is copied (plait arrays are immutable) unless ``copy=False``, which
    shares the producer's memory and fails if that is impossible.
    """
    if isinstance(x, Tracer) and not hasattr(x, "_host_value"):
        raise PlaitTypeError("from_dlpack of a traced value: it already is a plait array; "
                             "use it directly")
    if not hasattr(x, "__dlpack__"):
        raise PlaitTypeError(f"from_dlpack: {type(x).__name__} does not support DLPack "
                             f"(no __dlpack__ method)")
    v = np.from_dlpack(x, copy=False if copy is False else None)
    canon = dtypes.canonical_dtype(v.dtype)
    if copy is False and canon != v.dtype:
        raise PlaitValueError(f"from_dlpack: copy=False, but {v.dtype} must be converted to "
                              f"{canon}")
    v = v if copy is False else np.array(v, dtype=canon)
    return place(_promote.wrap(v), device, "from_dlpack")


# --- array members --------------------------------------------------------------------
def _array_namespace(self, /, *, api_version: str | None = None):
    if api_version is not None and api_version not in SUPPORTED_VERSIONS:
        raise PlaitValueError(f"__array_namespace__: unsupported api_version "
                              f"{api_version!r}; plait.numpy implements "
                              f"{', '.join(SUPPORTED_VERSIONS)}")
    return sys.modules["plait.numpy"]


def _to_device(self, device, /, *, stream=None):
    """This array on ``device`` (``x.to_device(plait.devices('lazy')[0])``)."""
    if stream is not None:
        raise PlaitValueError("to_device: plait has no streams; pass stream=None")
    if device is None:
        raise PlaitValueError("to_device: device must be a device, not None")
    return place(self, device, "to_device")


def _dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    host = getattr(self, "_host_value", None)          # a lazy array materializes
    if host is None:
        raise TracerArrayConversionError(
            f"__dlpack__ was called on a traced array of type {self.aval.str_short()}: a "
            f"traced value has no buffer to share. Export the result of the transformed "
            f"function instead.")
    return np.asarray(host()).__dlpack__(stream=stream, max_version=max_version,
                                         dl_device=dl_device, copy=copy)


def _dlpack_device(self) -> tuple:
    return (1, 0)                                       # kDLCPU, device 0


install_methods({"__array_namespace__": _array_namespace, "to_device": _to_device,
                 "device": property(lambda self: _device.default_device()),
                 "__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device})
