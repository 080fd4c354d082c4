"""The OpenCL devices, the one a process computes on, and their target configs.

``plait.devices("opencl")`` lists every device of every platform as an
:class:`OpenCLPlaitDevice` (``opencl:<k>``, with its platform, name and kind);
``device_put(x, dev)`` uploads to one. The backend computes on one device, chosen
once: config ``opencl_device`` (``$PLAIT_OPENCL_DEVICE``, a substring of the device or
platform name) if set, else the first GPU, else the first device of any kind. Every
use of pyopencl's device API is here, in :mod:`plait.backends.opencl.array` and in
:mod:`plait.backends.opencl.compile`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from plait.config import config
from plait.core.device import Device as PlaitDevice
from plait.core.device import register_devices as _register
from plait.errors import DeviceUnavailableError
from plait.stripe.targets import Target, load_target

_HOW = ("Install the optional extra: pip install 'plait[opencl]' (pyopencl plus "
        "pocl-binary-distribution, a portable OpenCL platform running on the CPU), or "
        "Debian's pocl-opencl-icd, or a GPU vendor's OpenCL driver.")


@dataclass(frozen=True)
class Device:
    """An OpenCL device with its context, in-order queue and target config;
    ``transfers`` counts the host<->device copies made for it (tests, tuning)."""

    cl: object          # the pyopencl module
    device: object
    context: object
    queue: object
    target: Target
    index: int = 0      # its place in devices("opencl")
    transfers: dict = field(default_factory=lambda: {"to_device": 0, "to_host": 0},
                            compare=False)

    @property
    def key(self) -> str:
        """Identifies the device (and driver) in the program-binary cache."""
        d = self.device
        return f"{d.platform.name}|{d.name}|{d.version}|{d.driver_version}"

    @property
    def fp64(self) -> bool:
        return "cl_khr_fp64" in self.device.extensions

    @property
    def fp16(self) -> bool:
        return "cl_khr_fp16" in self.device.extensions

    @property
    def plait_device(self) -> "OpenCLPlaitDevice":
        return opencl_devices()[self.index]


class OpenCLPlaitDevice(PlaitDevice):
    """``opencl:<k>`` in ``plait.devices("opencl")``: ``platform_name``, ``name`` and
    ``kind`` (``gpu``, ``cpu``, ``accelerator`` or ``other``) of the OpenCL device."""

    def __init__(self, index: int, platform_name: str, name: str, kind: str):
        super().__init__("opencl", index)
        self.platform_name, self.name, self.kind = platform_name, name, kind

    def __repr__(self):
        return f"opencl:{self.id} ({self.kind} {self.name!r} on {self.platform_name!r})"

    def put(self, x):
        """``x`` uploaded to this device (an array already here is returned as is)."""
        from plait.backends.opencl.array import put
        return put(x, device_at(self.id))


def _pyopencl():
    try:
        import pyopencl
    except ImportError as e:
        raise DeviceUnavailableError(f"the opencl backend needs pyopencl, which is not "
                                     f"installed ({e}). {_HOW}") from None
    return pyopencl


@functools.lru_cache(maxsize=None)
def _cl_devices() -> tuple:
    """Every OpenCL device of every platform, in platform order."""
    cl = _pyopencl()
    try:
        return tuple(d for p in cl.get_platforms() for d in p.get_devices())
    except cl.Error as e:
        raise DeviceUnavailableError(f"no OpenCL platform is installed ({e}). {_HOW}") from None


def _kind(cl, d) -> str:
    t = d.type
    return ("gpu" if t & cl.device_type.GPU else "cpu" if t & cl.device_type.CPU
            else "accelerator" if t & cl.device_type.ACCELERATOR else "other")


@functools.lru_cache(maxsize=None)
def opencl_devices() -> list:
    """``plait.devices("opencl")``: every OpenCL device (raises DeviceUnavailableError
    without pyopencl or a platform)."""
    cl = _pyopencl()
    return [OpenCLPlaitDevice(k, d.platform.name.strip(), d.name.strip(), _kind(cl, d))
            for k, d in enumerate(_cl_devices())]


@functools.lru_cache(maxsize=None)
def device_at(index: int) -> Device:
    """The context, queue and target config of OpenCL device number ``index``."""
    cl = _pyopencl()
    dev = _cl_devices()[index]
    ctx = cl.Context([dev])
    facts = {"cores": dev.max_compute_units, "max_workgroup": dev.max_work_group_size,
             "local_bytes": dev.local_mem_size, "global_bytes": dev.global_mem_size,
             "unsupported_dtypes": ["f16"] + ([] if "cl_khr_fp64" in dev.extensions
                                              else ["f64"])}
    return Device(cl, dev, ctx, cl.CommandQueue(ctx), load_target("opencl-gpu", facts), index)


@functools.lru_cache(maxsize=None)
def opencl_device() -> Device:
    """The device the backend computes on (raises DeviceUnavailableError without one)."""
    cl = _pyopencl()
    devices = list(enumerate(_cl_devices()))
    want = (config.opencl_device or "").lower()
    if want:
        devices = [(k, d) for k, d in devices if want in f"{d.platform.name} {d.name}".lower()]
    if not devices:
        what = f" matching PLAIT_OPENCL_DEVICE={want!r}" if want else ""
        raise DeviceUnavailableError(f"no OpenCL device{what} was found. {_HOW}")
    gpus = [(k, d) for k, d in devices if d.type & cl.device_type.GPU]
    return device_at((gpus or devices)[0][0])


def clear_caches() -> None:
    """Forget the device choice and lists (after changing config ``opencl_device``)."""
    for f in (opencl_device, device_at, opencl_devices, _cl_devices):
        f.cache_clear()


def register_devices() -> None:
    """Register ``plait.devices("opencl")`` (``device_put`` to one uploads)."""
    _register("opencl", opencl_devices())
