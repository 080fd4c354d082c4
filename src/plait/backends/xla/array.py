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
from plait.runtime.array import _HOST, DeviceArray


class XlaArray(DeviceArray):
    """A plait Array whose value is a PJRT device array (see the module docstring)."""

    __slots__ = ("_ready",)

    def __init__(self, buf, aval: ShapedArray, ready: bool = False):
        _HOST.__set__(self, None)
        self.weak_type = aval.weak_type
        self._aval = aval
        self._buf = buf
        self._ready = ready             # known computed (the call waited for it)

    def _to_host(self) -> np.ndarray:
        """A view of the device buffer (the CPU client's memory), not a copy."""
        return np.asarray(self._buf)

    def device_buffer(self):
        """The PJRT device array holding the value (None once deleted)."""
        return self._buf

    def block_until_ready(self) -> "XlaArray":
        """Wait until XLA has computed the value (no transfer); returns self."""
        if not self._ready and self._buf is not None:
            self._buf.block_until_ready()
            self._ready = True
        return self
