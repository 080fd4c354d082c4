"""The lazy device: ``plait.device_put(x, plait.devices("lazy")[0])`` makes lazy arrays."""
from __future__ import annotations

from plait.runtime.array import Device, register_devices


class LazyDevice(Device):
    """Arrays put here record their operations and compile them when observed."""

    def __init__(self):
        super().__init__("lazy", 0)

    def put(self, x):
        """Convert one value to a :class:`~plait.lazy.array.LazyArray`."""
        from plait.lazy.array import asarray
        return asarray(x)


LAZY_DEVICE = LazyDevice()
register_devices("lazy", [LAZY_DEVICE])
