"""Arrays whose value lives in a PJRT device buffer.

An xla executable returns its outputs as :class:`XlaArray`: a ``plait.Array`` holding
the device array jaxlib made. Feeding one to the next xla call passes that buffer (no
transfer); the host value is made the first time anything asks for it (``np.asarray``,
printing, ``item()``, an eager op, another backend) and kept. On the CPU client that is
a read-only view of the device buffer, not a copy. Device buffers are never written
after the computation that made them, so arrays may share one.
"""
from __future__ import annotations

import numpy as np

from plait.core.aval import ShapedArray
from plait.runtime.array import Array, _Deleted

_HOST = Array.__dict__["_value"]        # the slot holding the host value (None: not yet)


class XlaArray(Array):
    """A plait Array whose value is a PJRT device array (see the module docstring)."""

    __slots__ = ("_buf", "_ready")

    def __init__(self, buf, aval: ShapedArray, ready: bool = False):
        _HOST.__set__(self, None)
        self.weak_type = aval.weak_type
        self._aval = aval
        self._buf = buf
        self._ready = ready             # known computed (the call waited for it)

    @property
    def _value(self) -> np.ndarray:
        """The host value, made by the first use that needs it (a view on the CPU)."""
        v = _HOST.__get__(self)
        if v is None:
            v = np.asarray(self._buf)
            if v.flags.writeable:       # arrays are immutable
                v.flags.writeable = False
            _HOST.__set__(self, v)
        return v

    @_value.setter
    def _value(self, v) -> None:        # delete(): the device buffer goes too
        _HOST.__set__(self, v)
        self._buf = None

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: int(np.prod(self._aval.shape, dtype=np.int64)))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def is_deleted(self) -> bool:
        return type(_HOST.__get__(self)) is _Deleted

    def on_host(self) -> bool:
        """Whether the host value has been made."""
        return isinstance(_HOST.__get__(self), np.ndarray)

    def device_buffer(self):
        """The PJRT device array holding the value (None once deleted)."""
        return self._buf

    def block_until_ready(self) -> "XlaArray":
        """Wait until XLA has computed the value (no transfer); returns self."""
        if not self._ready and self._buf is not None:
            self._buf.block_until_ready()
            self._ready = True
        return self
