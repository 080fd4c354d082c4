"""``plait.Array``: an immutable concrete array backed by a NumPy buffer on the CPU."""
from __future__ import annotations

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.array_methods import ArrayMethods
from plait.config import config as _config
from plait.core.dtypes import canonical_dtype, narrow_value
from plait.core.device import Device, devices, register_devices  # noqa: F401 (re-exported)
from plait.core.trace import register_runtime
from plait.errors import PlaitTypeError
from plait.profiler import events as _events


_CPU = Device("cpu", 0)


class _Deleted:
    """The buffer of a deleted (e.g. donated) Array: every use raises."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def _fail(self, *a, **k):
        from plait.errors import PlaitValueError
        raise PlaitValueError(f"this Array has been deleted ({self.reason}); use the "
                              f"function's outputs instead, or do not donate it")

    def __getattr__(self, name):
        self._fail()

    __array__ = __len__ = __iter__ = __getitem__ = __bool__ = _fail


class Array(ArrayMethods):
    """An immutable array value. Create with ``plait.numpy.asarray`` or ``device_put``."""

    __slots__ = ("_value", "weak_type", "_aval", "__weakref__")

    def __init__(self, value: np.ndarray, weak_type: bool = False):
        if type(value) is not np.ndarray:
            value = np.asarray(value)
        if not _config.x64:   # float32 mode: no 64-bit value escapes
            value = narrow_value(value)
        self._value = value
        self.weak_type = weak_type
        self._aval = None

    @property
    def aval(self) -> ShapedArray:
        a = self._aval
        if a is None:
            v = self._value
            a = self._aval = ShapedArray(v.shape, v.dtype, self.weak_type)
        return a

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)

    @property
    def nbytes(self) -> int:
        return self._value.nbytes

    def devices(self) -> set:
        return {_CPU}

    @property
    def device(self) -> Device:
        return _CPU

    def __array__(self, dtype=None, copy=None):
        v = self._value
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        view = v.view()          # arrays are immutable: hand out read-only views
        view.flags.writeable = False
        return view

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the (read-only) buffer through DLPack, as the Array API standard says."""
        return self._value.__dlpack__(stream=stream, max_version=max_version,
                                      dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        return self._value.__dlpack_device__()

    def delete(self, reason: str = "delete() was called") -> None:
        """Free the buffer; any later use raises a clear error (JAX's semantics)."""
        self._value = _Deleted(reason)
        self._aval = None

    def is_deleted(self) -> bool:
        return type(self._value) is _Deleted

    def __repr__(self):
        if self.is_deleted():
            return "Array(<deleted>)"
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        extra = "" if self.dtype in (np.float64, np.int64, np.bool_) else f", dtype={self.dtype}"
        if self.weak_type:
            extra += ", weak_type=True"
        return f"Array({body}{extra})"

    def __str__(self):
        return str(self._value)

    def __format__(self, spec):
        if self._value.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if self._value.dtype.kind not in "iub" or self._value.ndim:
            raise PlaitTypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value)

    def __len__(self):
        if self._value.ndim == 0:
            raise PlaitTypeError("len() of unsized object")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise PlaitTypeError("iteration over a 0-d array")
        return (Array(v) for v in self._value)

    def __hash__(self):
        raise PlaitTypeError("plait arrays are not hashable (like NumPy arrays)")

    def __setitem__(self, idx, val):
        raise PlaitTypeError("plait arrays are immutable; use x = x.at[idx].set(val)")

    def __reduce__(self):
        return (Array, (np.array(self._value), self.weak_type))

    def block_until_ready(self) -> "Array":
        """Wait until the value is computed (immediate for CPU arrays); returns self."""
        return self

    def copy(self) -> "Array":
        return Array(self._value.copy(), self.weak_type)


_HOST = Array.__dict__["_value"]        # the slot holding the host value


class DeviceArray(Array):
    """Base of the Arrays whose value lives in a device buffer (``_buf``): shape and
    dtype come from the aval, without a transfer; the host value is made by the
    subclass's ``_to_host()`` the first time anything asks for it, and kept."""

    __slots__ = ("_buf",)

    def __init__(self, buf, aval: ShapedArray, host: np.ndarray | None = None):
        """``buf``: the device buffer; ``host``: its host value when already known."""
        _HOST.__set__(self, host)
        self.weak_type = aval.weak_type
        self._aval = aval
        self._buf = buf

    @property
    def _value(self) -> np.ndarray:
        v = _HOST.__get__(self)
        if v is None:
            v = self._to_host()
            if v.flags.writeable:       # arrays are immutable
                v.flags.writeable = False
            _HOST.__set__(self, v)
        return v

    @_value.setter
    def _value(self, v) -> None:        # delete(): the buffer goes too
        _HOST.__set__(self, v)
        self._buf = None

    def _to_host(self) -> np.ndarray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: int(np.prod(self.aval.shape, dtype=np.int64)))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def aval(self) -> ShapedArray:
        a = self._aval
        if a is None:           # deleted (or donated): say so, as every other use does
            _HOST.__get__(self)._fail()
        return a

    def is_deleted(self) -> bool:
        return type(_HOST.__get__(self)) is _Deleted

    def on_host(self) -> bool:
        """Whether the host value has been made."""
        return isinstance(_HOST.__get__(self), np.ndarray)

    def host_copy(self) -> np.ndarray | None:
        """The host value, if it has been made (never transfers)."""
        v = _HOST.__get__(self)
        return v if isinstance(v, np.ndarray) else None


def _wrap(value, weak_type: bool = False) -> Array:
    return Array(value, weak_type)


register_runtime(array_type=Array, wrap=_wrap)


def device_put(x, device: Device | None = None):
    """Put a value (or pytree of values) on ``device`` as plait arrays.

    ``device`` may be ``plait.devices()[0]`` (the CPU) or a lazy device when the
    lazy runtime is available.
    """
    from plait.core.pytree import tree_map
    put = getattr(device, "put", None) or _to_array
    if _events.ACTIVE:                          # plait.profiler: a transfer event
        with _events.span("device_put", "transfer"):
            return tree_map(put, x)
    return tree_map(put, x)


def _to_array(x) -> Array:
    if isinstance(x, Array):
        return x
    host = getattr(x, "_host_value", None)
    if host is not None:                    # a lazy array: materialize it onto the CPU
        return Array(host(), x.aval.weak_type)
    from plait.core.tracer_check import reject_tracer
    reject_tracer(x, "device_put")
    v = np.asarray(x)
    return Array(np.array(v, dtype=canonical_dtype(v.dtype)))


register_devices("cpu", [_CPU], _to_array)
