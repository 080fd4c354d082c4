"""The one adapter over jaxlib's private PJRT and MLIR entry points.

Everything plait uses from jaxlib lives here (they move between releases; the
``xla`` extra pins the tested range): parsing StableHLO text with jaxlib's MLIR
bindings, compiling it on the PJRT CPU client, moving arrays in (DLPack) and
out, and running a loaded executable. No jax tracing machinery is imported.
"""
from __future__ import annotations

import io
import threading
import weakref

import numpy as np

from plait.errors import PlaitError, XlaUnavailableError

_STATE: dict = {}
_LOCK = threading.Lock()


def _jaxlib():
    try:
        import jaxlib  # noqa: F401
        from jaxlib import xla_client
        from jaxlib import _jax
        from jaxlib.mlir import ir
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    except ImportError as e:
        raise XlaUnavailableError(
            f"the xla backend needs jaxlib, which is not importable ({e}). Install it with "
            f'`pip install "plait[xla]"` (jaxlib>=0.10,<0.11).') from None
    _STATE["array_type"] = _jax.ArrayImpl
    return xla_client, _jax, ir, _jax_mlir_ext


def available() -> bool:
    try:
        _jaxlib()
        return True
    except XlaUnavailableError:
        return False


def client():
    """The process's PJRT CPU client (created once)."""
    with _LOCK:
        if "client" not in _STATE:
            xc, _, _, _ = _jaxlib()
            _STATE["client"] = xc.make_cpu_client()
        return _STATE["client"]


def devices() -> list:
    return list(client().devices())


def _context():
    xc, _, ir, ext = _jaxlib()
    reg = ir.DialectRegistry()
    ext.register_dialects(reg)
    ctx = ir.Context()
    ctx.append_dialect_registry(reg)
    ctx.load_all_available_dialects()
    from jaxlib.mlir.dialects import chlo, stablehlo
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    return ctx


def to_bytecode(text: str) -> bytes:
    """Parse StableHLO text (raises ``PlaitError`` with MLIR's diagnostics) to bytecode."""
    _, _, ir, _ = _jaxlib()
    with _context():
        try:
            m = ir.Module.parse(text)
        except Exception as e:   # MLIRError: report the text's problem as a plait error
            raise PlaitError(f"the StableHLO module plait emitted does not parse; this is a "
                             f"plait bug, please report it:\n{e}") from None
        buf = io.BytesIO()
        m.operation.write_bytecode(buf)
        return buf.getvalue()


class Loaded:
    """A compiled executable on one device: ``run(list of arrays) -> list of ndarrays``."""

    def __init__(self, exe, device):
        self.exe = exe
        self.device = device
        self._from_dlpack = _jaxlib()[1].dlpack_managed_tensor_to_buffer
        self.run = exe.execute      # list of device arrays -> list of device arrays

    def put(self, x):
        """A device buffer holding ``x``: the buffer itself when ``x`` is a whole host
        view of an earlier result (see :func:`to_numpy`), so results fed back stay on
        the device; else a zero-copy DLPack import (one copy when misaligned)."""
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        buf = _device_buffer(x)
        if buf is not None and _is_ours(buf):   # another client's buffer is imported
            return buf
        if not x.flags.c_contiguous or not x.flags.writeable:
            x = np.array(x, order="C")  # DLPack import takes neither strided nor read-only
        return self._from_dlpack(x.__dlpack__(), self.device, None, None)


def compile_text(text: str) -> Loaded:
    """Compile a StableHLO module on the CPU client's first device."""
    xc, _, _, _ = _jaxlib()
    bc = to_bytecode(text)
    c = client()
    dev = c.devices()[0]
    try:
        exe = c.compile_and_load(bc, xc.DeviceList((dev,)), xc.CompileOptions())
    except Exception as e:   # XlaRuntimeError
        raise PlaitError(f"XLA could not compile the module: {e}") from None
    return Loaded(exe, dev)


def _device_buffer(x: np.ndarray):
    """The device array that ``x`` views whole, or None. ``np.asarray`` of a PJRT CPU
    array is a read-only ndarray over a memoryview of it; a view covering all of its
    bytes in C order with its shape is the same array (a slice or a reshape is not)."""
    mv = x.base
    if type(mv) is np.ndarray:      # a view of that view (``np.asarray(plait_array)``)
        mv = mv.base
    if type(mv) is not memoryview or x.flags.writeable or not x.flags.c_contiguous:
        return None
    buf = mv.obj
    # the memoryview exports the whole device array: its shape and format are the
    # array's (jaxlib alone gives the array no .shape/.dtype; jax adds them)
    if type(buf) is not _STATE.get("array_type") or x.nbytes != mv.nbytes \
            or x.shape != mv.shape or x.itemsize != mv.itemsize:
        return None
    try:
        if x.dtype != np.dtype(mv.format):
            return None
    except TypeError:                   # a format NumPy cannot name: not reused
        return None
    return buf


# id -> weak reference of each device array our executables returned (arrays from other
# PJRT clients, e.g. jax's, are imported instead: reusing them crashed execute)
_OURS: dict = {}


def _is_ours(buf) -> bool:
    ref = _OURS.get(id(buf))
    return ref is not None and ref() is buf


def to_numpy(x) -> np.ndarray:
    """A host view of a device array our executable returned (the CPU client hands out
    its buffer without a copy; ``__array__`` is several times cheaper than a DLPack round
    trip); the array is remembered so that the view, fed back, reuses it."""
    key = id(x)
    _OURS[key] = weakref.ref(x, lambda _r, k=key: _OURS.pop(k, None))
    return np.asarray(x)
