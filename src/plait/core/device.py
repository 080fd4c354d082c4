"""Devices: the places arrays live on, and the registry the Array API inspection reads.

``plait.runtime`` registers the CPU (the default device) and ``plait.lazy`` the lazy
device; ``plait.numpy`` (``asarray(..., device=)``, ``x.to_device``,
``__array_namespace_info__().devices()``) reads the registry here, so it needs no
import of the runtime.
"""
from __future__ import annotations

from typing import Callable


class Device:
    """A place arrays live on (``cpu:0``, ``lazy:0``).

    ``put(x)`` converts one value to an array on this device; devices compare equal
    by platform and id.
    """

    def __init__(self, platform: str, id: int = 0):
        self.platform = platform
        self.id = id

    def __repr__(self):
        return f"{self.platform}:{self.id}"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform,
                                                                          other.id)

    def __hash__(self):
        return hash((self.platform, self.id))

    def put(self, x):
        """``x`` as an array on this device (set by the registering package)."""
        put = _PUT.get(self.platform)
        if put is None:
            from plait.errors import PlaitValueError
            raise PlaitValueError(f"no arrays can be placed on device {self!r} yet")
        return put(x)


_DEVICES: dict[str, list[Device]] = {}
_PUT: dict[str, Callable] = {}
_LOADERS: dict[str, Callable] = {}      # platform -> registers its devices on first use
DEFAULT_PLATFORM = "cpu"


def register_devices(platform: str, devs: list[Device], put: Callable | None = None) -> None:
    """Make ``devices(platform)`` return ``devs``; ``put(x)`` places a value on them
    (a device subclass may instead override :meth:`Device.put`)."""
    _DEVICES[platform] = list(devs)
    if put is not None:
        _PUT[platform] = put


def register_platform(platform: str, loader: Callable) -> None:
    """Make ``devices(platform)`` call ``loader()`` the first time, which registers the
    platform's devices (for platforms whose device query is costly or may fail)."""
    _LOADERS[platform] = loader


def devices(backend: str | None = None) -> list[Device]:
    """The devices of a platform: ``devices()`` is the CPU, ``devices("lazy")`` the lazy
    device, ``devices("opencl")`` the OpenCL devices, ``devices("gpu" | "tpu")`` what
    XLA's PJRT plugin for it reports."""
    if backend is None:
        backend = DEFAULT_PLATFORM
    if backend not in _DEVICES and backend in _LOADERS:
        _LOADERS[backend]()
    if backend not in _DEVICES:
        from plait.errors import PlaitValueError
        raise PlaitValueError(f"unknown device platform {backend!r}; available: "
                              f"{', '.join(repr(k) for k in {**_DEVICES, **_LOADERS})}")
    return list(_DEVICES[backend])


def all_devices() -> tuple:
    """Every registered device, the default first."""
    out = list(_DEVICES.get(DEFAULT_PLATFORM, []))
    for platform, devs in _DEVICES.items():
        if platform != DEFAULT_PLATFORM:
            out.extend(devs)
    return tuple(out)


def default_device() -> Device:
    """The device new arrays are created on (the CPU)."""
    return devices()[0]
