"""Arrays whose value lives in an OpenCL device buffer.

An opencl executable returns its outputs as :class:`OpenCLArray`: a ``plait.Array``
that knows its device and holds the device buffer. Feeding one to the next call of an
opencl executable on the same device passes the buffer (no copy); the value comes to
the host once, the first time anything asks for it (``np.asarray``, printing,
``item()``, an eager NumPy-style op, another backend), and is kept there too.
``block_until_ready()`` waits for the device without copying. Buffers are never
written after the kernel that made them finishes, so arrays may share one.
"""
from __future__ import annotations

import numpy as np

from plait.core.aval import ShapedArray
from plait.runtime.array import DeviceArray


class OpenCLArray(DeviceArray):
    """A plait Array on an OpenCL device (see the module docstring)."""

    __slots__ = ("_dev",)

    def __init__(self, buf, shape: tuple, dtype, weak_type: bool, dev, host=None):
        super().__init__(buf, ShapedArray(tuple(shape), np.dtype(dtype), weak_type), host)
        self._dev = dev

    def _to_host(self) -> np.ndarray:
        """The host copy (one counted transfer)."""
        return download(self._dev, self._buf, self._aval.shape, self._aval.dtype)

    def devices(self) -> set:
        return {self._dev.plait_device}

    @property
    def device(self):
        return self._dev.plait_device

    def on_device(self) -> bool:
        """Whether the value is (still) in a device buffer."""
        return self._buf is not None

    def buffer_for(self, dev):
        """The device buffer, if this array lives on ``dev`` (else None)."""
        return self._buf if dev is self._dev else None

    def block_until_ready(self) -> "OpenCLArray":
        """Wait until the device has computed the value (no copy); returns self."""
        self._dev.queue.finish()
        return self


def download(dev, buf, shape: tuple, dtype) -> np.ndarray:
    """The host copy of a device buffer (counted in ``dev.transfers``)."""
    out = np.empty(shape, dtype)
    if out.nbytes:
        dev.cl.enqueue_copy(dev.queue, out, buf)
    dev.transfers["to_host"] += 1
    return out


def upload(dev, value: np.ndarray):
    """A new device buffer holding ``value`` (counted in ``dev.transfers``)."""
    cl = dev.cl
    a = np.ascontiguousarray(value)
    dev.transfers["to_device"] += 1
    return cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=a if a.nbytes else np.zeros(1, np.uint8))


def put(x, dev) -> OpenCLArray:
    """``device_put(x, opencl device)``: ``x`` as an array on ``dev``."""
    if isinstance(x, OpenCLArray) and x.buffer_for(dev) is not None:
        return x
    from plait.runtime.array import device_put
    host = device_put(x)        # the canonical host array (dtype rules, lazy arrays...)
    v = np.asarray(host)
    return OpenCLArray(upload(dev, v), v.shape, v.dtype, host.weak_type, dev, host=v)
