"""plait: NumPy-style array programs compiled to fused native code, with autodiff.

Three ways in over one IR: ``plait.jit`` (tracing), ``plait.jit(f, autograph=True)``
(Python control flow compiled), and lazy arrays. See README.md and ARCHITECTURE.md.
"""
# OpenBLAS's idle workers spin ~0.1 s after each call unless told otherwise when it loads:
# first of all, before plait's own imports load NumPy; an OpenBLAS a peer loaded before
# (``import numpy`` first) restarts its workers to take the setting
from plait.config import set_openblas_wait_default as _set_openblas_wait_default
from plait.config import restart_loaded_openblas as _restart_loaded_openblas
if _set_openblas_wait_default():
    _restart_loaded_openblas()
from plait import errors
from plait.config import config, disable_jit
from plait.config import set_openmp_wait_defaults as _set_openmp_wait_defaults

# libgomp reads its wait policy once, when the first library linking it loads, and every
# library of the process shares that one libgomp: a peer imported after plait (torch
# bundles its own libgomp.so.1) would otherwise load it with the 300k-round spin before
# plait's first kernel, and plait's parallel loops then ran 10x slower (the W1 step 14 ->
# 134-175 ms after ``import torch``, 2 busy cores)
_set_openmp_wait_defaults()
from plait.runtime import Array, device_put, devices
from plait.runtime import metrics
from plait import lax
from plait import tile  # the Tile language: plait.tile.op for user operations
from plait import onnx  # ONNX import (needs the optional onnx package when used)
from plait import numpy
from plait import tree_util, tree
from plait.api import jit, make_graph
from plait.abstract import ShapeDtypeStruct, eval_shape
from plait.transforms import (jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev,
                              hessian, custom_jvp, custom_vjp, vmap, custom_vmap,
                              custom_batching)
from plait.lax import stop_gradient
from plait.transforms.autograph import autograph
from plait import ad_checkpoint
from plait.ad_checkpoint import checkpoint, remat, checkpoint_policies, ad_residuals
from plait import lazy
from plait import random
from plait import nn
from plait import example_libraries
from plait.core.graph import check_graph
from plait import debug, experimental
from plait.lax.callbacks import pure_callback
from plait.exporting import export
from plait import profiler
from plait.explorer import explore
from plait import distributed
from plait.distributed import (pmap, process_index, process_count, local_devices,
                               device_count, local_device_count)

# The public names (tests/namespaces/plait.txt is the reviewed list).
__all__ = ["Array", "ShapeDtypeStruct", "ad_checkpoint", "ad_residuals", "autograph",
           "check_graph", "checkpoint", "checkpoint_policies", "config",
           "custom_batching", "custom_jvp", "custom_vjp", "custom_vmap", "debug",
           "device_put", "devices", "disable_jit", "errors", "eval_shape",
           "example_libraries", "experimental", "explore", "export", "grad", "hessian", "jacfwd",
           "jacrev", "jit", "jvp", "lax", "lazy", "linearize", "make_graph", "metrics",
           "nn", "numpy", "onnx", "profiler", "pure_callback", "random", "remat", "stop_gradient", "tile",
           "tree", "tree_util", "value_and_grad", "vjp", "vmap",
           "pmap", "process_index", "process_count", "local_devices", "device_count",
           "local_device_count"]

__version__ = "0.1.0"
