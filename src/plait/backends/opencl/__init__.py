"""The opencl backend: Graph -> Stripe (``opencl-gpu`` config) -> OpenCL C on an OpenCL
device through pyopencl (optional: ``pip install "plait[opencl]"``)."""
from plait.backends.opencl.compile import OpenCLExecutable, compile_opencl

__all__ = ["compile_opencl", "OpenCLExecutable"]
