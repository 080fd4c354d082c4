"""The OpenCL device a process uses, and its target config filled from the device query.

The device is chosen once: ``$PLAIT_OPENCL_DEVICE`` (a substring of the device or
platform name) if set, else the first GPU, else the first device of any kind. Every
use of pyopencl's device API is here and in :mod:`plait.backends.opencl.compile`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from plait.config import config
from plait.errors import DeviceUnavailableError
from plait.stripe.targets import Target, load_target

_HOW = ("Install the optional extra: pip install 'plait[opencl]' (pyopencl plus "
        "pocl-binary-distribution, a portable OpenCL platform running on the CPU), or "
        "Debian's pocl-opencl-icd, or a GPU vendor's OpenCL driver.")


@dataclass(frozen=True)
class Device:
    """An OpenCL device with its context, in-order queue and target config."""

    cl: object          # the pyopencl module
    device: object
    context: object
    queue: object
    target: Target

    @property
    def key(self) -> str:
        """Identifies the device (and driver) in the program-binary cache."""
        d = self.device
        return f"{d.platform.name}|{d.name}|{d.version}|{d.driver_version}"

    @property
    def fp64(self) -> bool:
        return "cl_khr_fp64" in self.device.extensions


def _pyopencl():
    try:
        import pyopencl
    except ImportError as e:
        raise DeviceUnavailableError(f"the opencl backend needs pyopencl, which is not "
                                     f"installed ({e}). {_HOW}") from None
    return pyopencl


@functools.lru_cache(maxsize=None)
def opencl_device() -> Device:
    """The process's OpenCL device (raises DeviceUnavailableError without one)."""
    cl = _pyopencl()
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e:
        raise DeviceUnavailableError(f"no OpenCL platform is installed ({e}). {_HOW}") from None
    want = (config.opencl_device or "").lower()
    if want:
        devices = [d for d in devices if want in f"{d.platform.name} {d.name}".lower()]
    if not devices:
        what = f" matching PLAIT_OPENCL_DEVICE={want!r}" if want else ""
        raise DeviceUnavailableError(f"no OpenCL device{what} was found. {_HOW}")
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    dev = (gpus or devices)[0]
    ctx = cl.Context([dev])
    facts = {"cores": dev.max_compute_units, "max_workgroup": dev.max_work_group_size,
             "local_bytes": dev.local_mem_size, "global_bytes": dev.global_mem_size,
             "unsupported_dtypes": ["f16"] + ([] if "cl_khr_fp64" in dev.extensions
                                              else ["f64"])}
    return Device(cl, dev, ctx, cl.CommandQueue(ctx), load_target("opencl-gpu", facts))
