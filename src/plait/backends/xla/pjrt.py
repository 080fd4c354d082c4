"""The one adapter over jaxlib's private PJRT and MLIR entry points.

Everything plait uses from jaxlib lives here (they move between releases; the
``xla`` extra pins the tested range): parsing StableHLO text with jaxlib's MLIR
bindings, compiling it on the PJRT CPU client, moving arrays in and out, and
running a loaded executable. No jax tracing machinery is imported.

The per-call path stays in jaxlib's C++. A signature whose inputs have no 64-bit
dtype is called through jaxlib's jit dispatcher (:meth:`Loaded.dispatcher`): one C++
call matches the arguments, moves host arrays in, runs and wraps the results. The
dispatcher narrows 64-bit host arrays to 32 bits when jax's global x64 flag is off,
so it is never given one: other signatures, and arguments not exactly of the
signature's dtypes, take :meth:`Loaded.call` (``batched_device_put`` in,
``execute_sharded(...).consume_with_handlers`` out, given avals and a single-device
sharding built once per executable). jaxlib's generic helpers (DLPack import,
``LoadedExecutable.execute``) look jax up on every call: an import attempt that fails
where only jaxlib is installed (tens of microseconds each), all of jax imported where
it is.
"""
from __future__ import annotations

import io
import sys
import threading
from collections import namedtuple

import numpy as np

from plait.config import quiet_xla_logs
from plait.errors import PlaitError, XlaUnavailableError

_STATE: dict = {}
_LOCK = threading.Lock()


def _jaxlib():
    quiet_xla_logs()
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
    if "sharding_type" not in _STATE:
        class _OneDevice(_jax.SingleDeviceSharding):
            """A single-device sharding usable without jax: jaxlib's transfer asks a
            sharding for its memory kind and HLO sharding, which jax adds in Python."""
            memory_kind = None
            _replicated = xla_client.HloSharding.replicate()

            def _to_xla_hlo_sharding(self, ndim):
                return self._replicated
        _STATE["sharding_type"] = _OneDevice
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


# platform -> PJRT plugins that provide it: (plugin name, package holding the shared
# library, library file name, the pip package to install)
_PLUGINS = {
    "gpu": [("cuda", "jax_plugins.xla_cuda12", "xla_cuda_plugin.so", "jax-cuda12-plugin"),
            ("cuda", "jax_plugins.xla_cuda13", "xla_cuda_plugin.so", "jax-cuda13-plugin")],
    "tpu": [("tpu", "libtpu", "libtpu.so", "libtpu")],
}


def _plugin_library(package: str, filename: str) -> str | None:
    """The path of ``filename`` in the installed ``package`` (not imported), or None."""
    import importlib.util
    import os
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for d in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(d, filename)
        if os.path.exists(path):
            return path
    return None


def platform_devices(platform: str) -> list:
    """The devices PJRT reports for ``platform`` (``cpu``, ``gpu`` or ``tpu``), through
    the CPU client or the platform's PJRT plugin (loaded once). A platform whose plugin
    is not installed raises :class:`XlaUnavailableError` naming the package to install."""
    if platform == "cpu":
        return devices()
    if platform not in _PLUGINS:
        raise PlaitError(f"unknown PJRT platform {platform!r}; plait knows 'cpu', "
                         f"{', '.join(repr(p) for p in _PLUGINS)}")
    xc, _, _, _ = _jaxlib()
    for name, package, filename, pip_name in _PLUGINS[platform]:
        path = _plugin_library(package, filename)
        if path is None:
            continue
        with _LOCK:
            key = "client:" + name
            if key not in _STATE:
                if not xc.pjrt_plugin_loaded(name):
                    xc.load_pjrt_plugin_dynamically(name, path)
                if not xc.pjrt_plugin_initialized(name):
                    xc.initialize_pjrt_plugin(name)
                try:
                    _STATE[key] = xc.make_c_api_client(name)
                except Exception as e:   # XlaRuntimeError: plugin present, no device
                    raise PlaitError(f"the {name} PJRT plugin ({pip_name}, {path}) is "
                                     f"installed but found no usable device: {e}") from None
            return list(_STATE[key].devices())
    wanted = " or ".join(f'`pip install {p[3]}`' for p in _PLUGINS[platform])
    raise XlaUnavailableError(
        f"no {platform} devices: XLA reaches {platform}s through a PJRT plugin, and none "
        f"is installed ({', '.join(p[3] for p in _PLUGINS[platform])} not found). "
        f"Install it with {wanted} (the versions matching jaxlib {_jaxlib_version()}).")


def _jaxlib_version() -> str:
    import jaxlib
    return getattr(jaxlib, "__version__", "?")


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


def _parse(text: str):
    """The MLIR module of StableHLO ``text`` (inside :func:`_context`; raises
    ``PlaitError`` with MLIR's diagnostics)."""
    _, _, ir, _ = _jaxlib()
    try:
        return ir.Module.parse(text)
    except Exception as e:   # MLIRError: report the text's problem as a plait error
        raise PlaitError(f"the StableHLO module plait emitted does not parse; this is a "
                         f"plait bug, please report it:\n{e}") from None


def to_bytecode(text: str) -> bytes:
    """Parse StableHLO text (raises ``PlaitError`` with MLIR's diagnostics) to bytecode."""
    with _context():
        buf = io.BytesIO()
        _parse(text).operation.write_bytecode(buf)
        return buf.getvalue()


class _Aval:
    """What jaxlib's transfer and result handlers read of an array's type."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: tuple, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = False


def _sharding(device):
    """The process's one sharding object for ``device``: every array plait puts on or
    gets back from the device carries it, which is how :func:`_is_ours` knows them."""
    with _LOCK:
        sh = _STATE.setdefault("shardings", {}).get(device.id)
        if sh is None:
            sh = _STATE["shardings"][device.id] = _STATE["sharding_type"](device)
        return sh


class Loaded:
    """A compiled executable on one device: ``run(list of device arrays) -> list of
    device arrays``; ``put`` moves a host array in; ``call`` does both for host arrays.

    ``out_avals`` (shapes and dtypes of the results, when the caller knows them) give
    one C++ result handler per output, built once: running then never leaves jaxlib's
    C++ (without them each result goes through jaxlib's generic disassembly)."""

    def __init__(self, exe, device, out_avals=None):
        _, jx, _, _ = _jaxlib()
        self.exe = exe
        self.device = device
        self._devs = [device]
        self._sharding = _sharding(device)
        self._put = jx.batched_device_put
        self._zero_copy = jx.HostBufferSemantics.ZERO_COPY
        self._execute = exe.execute_sharded
        self.wait = jx.batched_block_until_ready     # (device arrays) -> when computed
        self._out_avals = None if out_avals is None else [_Aval(a.shape, a.dtype)
                                                          for a in out_avals]
        self._handlers = None if out_avals is None else [
            jx.array_result_handler(a, self._sharding, True, True) for a in self._out_avals]
        self._avals: dict = {}

    def run(self, bufs: list) -> list:
        res = self._execute(bufs)
        if self._handlers is not None:
            return res.consume_with_handlers(self._handlers)
        return [x[0] for x in res.disassemble_into_single_device_arrays()]

    def aval(self, shape: tuple, dtype) -> _Aval:
        """The (cached) transfer type of arrays of ``shape`` and ``dtype``."""
        key = (tuple(shape), np.dtype(dtype))
        av = self._avals.get(key)
        if av is None:
            av = self._avals[key] = _Aval(*key)
        return av

    def put(self, x, aval: _Aval | None = None):
        """A device buffer holding ``x``: the buffer itself when ``x`` is a whole host
        view of an earlier result (see :func:`to_numpy`), so results fed back stay on
        the device; else a zero-copy transfer (a copy when strided or misaligned).
        ``aval``, when given, is ``x``'s (from :meth:`aval`)."""
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if x.base is not None:
            buf = _device_buffer(x)
            if buf is not None and buf._sharding is self._sharding:
                return buf      # ours (another client's array is copied: reusing crashed)
        return self._put(aval or self.aval(x.shape, x.dtype), self._sharding, [x],
                         self._devs, True, False, self._zero_copy, True)

    def dispatcher(self, consts: list, avals: list):
        """A C++ call path for the signature ``avals`` (after the device arrays
        ``consts``), or None when an input has a 64-bit dtype or the results' avals
        are unknown: ``f(*consts, *args) -> list of device arrays``, where each of
        ``args`` is a host array exactly of its aval's dtype or this device's array.

        It is jaxlib's jit dispatcher with one compiled entry: its first call (and any
        call it cannot match, e.g. after jax's x64 flag changed) runs :meth:`call` in
        Python and hands back what the C++ path needs (see the module docstring)."""
        if self._handlers is None or any(av.dtype in _WIDE for av in avals):
            return None
        _, jx, _, _ = _jaxlib()
        _dispatch_states()
        n_out, n_in = len(self._handlers), len(consts) + len(avals)
        registry = jx.pytree.PyTreeRegistry()
        fast = _FastPath(self.exe, registry.flatten([0] * n_out)[1], [self._sharding] * n_in,
                         [self._sharding] * n_out, self._out_avals, [True] * n_out,
                         [True] * n_in, [None] * n_in, [])
        n_c = len(consts)

        def slow(*xs):
            return self.call(consts, xs[n_c:], avals, host=False)

        def first(*xs):
            exact = all(type(x) is np.ndarray and x.shape == a.shape and x.dtype == a.dtype
                        or type(x) is _STATE["array_type"] and x._sharding is self._sharding
                        for x, a in zip(xs[n_c:], avals))
            return slow(*xs), (fast if exact else None), False

        return jx.pjit("plait_xla", slow, first, [], [], "plait", registry, _no_fallback,
                       jx.PjitFunctionCache(4))

    def call(self, consts: list, args, avals: list, host: bool = True,
             synced: bool = False) -> list:
        """Run on device ``consts`` then ``args`` (this device's arrays, or host arrays
        or values, converted to ``avals``' dtypes): host views of the results, or with
        ``host=False`` the device arrays (needs ``out_avals``). One loop, no
        per-argument method call. ``synced``: return once the whole program ran (its
        host callbacks included; a failure raises here), not only its results."""
        bufs = list(consts)
        put, sh, devs, zc = self._put, self._sharding, self._devs, self._zero_copy
        array_type = _STATE["array_type"]
        for x, av in zip(args, avals):
            if type(x) is array_type and x._sharding is sh:
                bufs.append(x)      # one of this device's arrays, of av's type
                continue
            if type(x) is not np.ndarray or x.dtype != av.dtype:
                x = np.asarray(x, dtype=av.dtype)
            if x.base is not None:
                buf = _device_buffer(x)
                if buf is not None and buf._sharding is sh:
                    bufs.append(buf)
                    continue
            bufs.append(put(av, sh, [x], devs, True, False, zc, True))
        if synced:
            res = self._execute(bufs, with_tokens=True)
            res.consume_token().block_until_ready()
            outs = res.consume_with_handlers(self._handlers)
        else:
            outs = self._execute(bufs).consume_with_handlers(self._handlers)
        return [np.asarray(r) for r in outs] if host else outs


# What jaxlib's jit dispatcher reads of a compiled signature on its first call (the
# fields jax's own dispatcher hands it; see Loaded.dispatcher).
_FastPath = namedtuple("_FastPath", "xla_executable out_pytree_def in_shardings out_shardings "
                       "out_avals out_committed kept_var_bitvec in_device_local_layouts "
                       "const_args")

_WIDE = frozenset(np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128))


def _dispatch_states() -> None:
    """jaxlib's jit dispatcher reads three process-wide settings (x64, disable_jit and
    a post-call hook) that jax installs when it is imported. Where jax is not imported,
    plait installs its own once (x64 on: host arrays keep their dtypes); jax, imported
    later, replaces them with its own, which plait never overrides."""
    if "jax" in sys.modules or "dispatch_states" in _STATE:
        return
    with _LOCK:
        if "jax" in sys.modules or "dispatch_states" in _STATE:
            return
        _, jx, _, _ = _jaxlib()
        cfg = jx.config.Config
        states = (cfg("plait_enable_x64", True, include_in_jit_key=True),
                  cfg("plait_disable_jit", False), cfg("plait_post_hook", None))
        jx.jax_jit.set_enable_x64_state(states[0])
        jx.jax_jit.set_disable_jit_state(states[1])
        jx.jax_jit.set_post_hook_state(states[2])
        _STATE["dispatch_states"] = states


# the prefix of the LAPACK custom calls (``lapack_<s|d|c|z><routine>_ffi``) the xla rules
# emit for linear algebra StableHLO has no op for
LAPACK_TARGET_PREFIX = "lapack_"


def register_lapack() -> None:
    """Register jaxlib's LAPACK custom-call targets with XLA's CPU client, once per
    process (``jaxlib.lapack``: its own module, the FFI handlers XLA calls; jax does the
    same when it is imported, and registering them twice is harmless)."""
    with _LOCK:
        if "lapack" in _STATE:
            return
        xc, _, _, _ = _jaxlib()
        from jaxlib import lapack
        for name, fn, api_version in lapack.registrations()["cpu"]:
            xc.register_custom_call_target(name, fn, platform="cpu", api_version=api_version)
        lapack._lapack.initialize()      # binds the LAPACK routines (scipy's)
        _STATE["lapack"] = True


def compile_text(text: str, out_avals=None, host_callbacks: list | None = None) -> Loaded:
    """Compile a StableHLO module on the CPU client's first device (``out_avals``:
    the results' shapes and dtypes, for the fast result path of :class:`Loaded`).
    ``host_callbacks``: the Python functions the module's ``xla_ffi_python_cpu_callback``
    custom calls run, by their ``index`` (the executable keeps them alive)."""
    xc, _, _, _ = _jaxlib()
    if f'"{LAPACK_TARGET_PREFIX}' in text:
        register_lapack()
    c = client()
    dev = c.devices()[0]
    if host_callbacks:
        # jaxlib takes host callbacks only with a parsed module (not its bytecode)
        with _context():
            module = _parse(text)
            try:
                exe = c.compile_and_load(module, xc.DeviceList((dev,)), xc.CompileOptions(),
                                         host_callbacks=list(host_callbacks))
            except Exception as e:   # XlaRuntimeError
                raise PlaitError(f"XLA could not compile the module: {e}") from None
        return Loaded(exe, dev, out_avals)
    bc = to_bytecode(text)
    try:
        exe = c.compile_and_load(bc, xc.DeviceList((dev,)), xc.CompileOptions())
    except Exception as e:   # XlaRuntimeError
        raise PlaitError(f"XLA could not compile the module: {e}") from None
    return Loaded(exe, dev, out_avals)


def runtime_error() -> type:
    """The exception class jaxlib raises for a failed compile or run."""
    return _jaxlib()[1].JaxRuntimeError


def _no_fallback(x, sharding, layout):
    """The dispatcher's per-argument fallback, which it takes only for arguments on
    another device or with a layout: plait's entries have neither."""
    raise PlaitError("plait's xla dispatcher was asked to move an argument between devices")


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


def _is_ours(buf) -> bool:
    """Whether the device array ``buf`` was put on or made by plait's client."""
    shs = _STATE.get("shardings", {})
    return any(buf._sharding is sh for sh in shs.values())


def to_numpy(x) -> np.ndarray:
    """A host view of a device array (the CPU client hands out its buffer without a
    copy; ``__array__`` is several times cheaper than a DLPack round trip); the view,
    fed back whole, reuses the array (see :meth:`Loaded.put`)."""
    return np.asarray(x)
