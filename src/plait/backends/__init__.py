"""Backends: ``compile(closed_graph) -> Executable``, looked up in :data:`BACKENDS`:
``interp`` (reference), ``native`` (C/OpenMP on the host CPU), ``xla`` (StableHLO
compiled by XLA through PJRT; needs jaxlib), ``opencl`` (OpenCL C on an OpenCL device
through pyopencl)."""
from __future__ import annotations

import importlib

from plait.core.device import register_platform
from plait.core.graph import ClosedGraph

# backend name -> (module, compile function taking a ClosedGraph)
BACKENDS = {
    "interp": ("plait.backends.interp", "compile_interp"),
    "native": ("plait.backends.native", "compile_native_tiered"),
    "xla": ("plait.backends.xla", "compile_xla"),
    "opencl": ("plait.backends.opencl", "compile_opencl"),
}


def _opencl_devices() -> None:
    from plait.backends.opencl.device import register_devices
    register_devices()


def _pjrt_devices(platform: str):
    """``devices(platform)``'s loader: the XLA backend's PJRT devices as plait devices."""
    def load() -> None:
        from plait.backends.xla import pjrt
        from plait.core.device import Device, register_devices
        out = []
        for d in pjrt.platform_devices(platform):
            dev = Device(platform, d.id)
            dev.pjrt_device = d
            out.append(dev)
        register_devices(platform, out)
    return load


register_platform("opencl", _opencl_devices)
for _platform in ("gpu", "tpu"):
    register_platform(_platform, _pjrt_devices(_platform))


def compile(closed: ClosedGraph, backend: str = "interp"):
    """Compile a closed graph with the named backend."""
    from plait.profiler import events
    entry = BACKENDS.get(backend)
    if entry is None:
        from plait.errors import PlaitValueError
        raise PlaitValueError(f"unknown backend {backend!r}; available: "
                              f"{', '.join(repr(b) for b in BACKENDS)}")
    module, fn = entry
    with events.span(f"compile {closed.graph.name or 'graph'} ({backend})", "compile",
                     {"equations": len(closed.graph.eqns)}):
        return getattr(importlib.import_module(module), fn)(closed)
