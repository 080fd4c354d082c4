"""The native backend: graph → kernels → Tile → Stripe → C (OpenMP) → shared object.

``compile_native(closed)`` partitions the graph (``partition.py``), lowers each
kernel through its primitives' ``to_tile`` rules to one Tile program, lowers that
to Stripe, runs the Stripe passes of the target config, renders every kernel as a
C function in one source file, builds it (disk-cached) and returns an executable
that runs the kernels and the host steps in order. ``compile_native_tiered`` (the
backend registry's entry) does it in the background while the interpreter answers the
first calls (``tiered.py``).
"""
from plait.backends.native.compile import (compile_native, compile_native_tiered, stage_text,
                                           NativeExecutable)

__all__ = ["compile_native", "compile_native_tiered", "stage_text", "NativeExecutable"]
