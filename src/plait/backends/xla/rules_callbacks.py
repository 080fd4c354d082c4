"""``to_stablehlo`` rules of the host callbacks (``debug_callback``, ``pure_callback``,
``io_callback``) and :class:`HostCallbacks`, the Python side the compiled module calls.

Each callback becomes XLA's FFI custom call ``xla_ffi_python_cpu_callback``: its
``backend_config = {index = N}`` picks the N-th Python function handed to the PJRT
client with the module (``pjrt.compile_text(..., host_callbacks=)``). The function
receives NumPy arrays of the operands and returns the results, each of exactly its
declared shape and dtype. All three take and return the emitter's token (see
:mod:`plait.backends.xla.emitter`), so they run in program order, as on interp, and
all are ``has_side_effect``: XLA neither removes, merges nor hoists any of them (plait's
own passes already did what ``pure_callback``'s purity allows), so the calls are counted
as on interp. The host function is the primitive's ``impl`` (the same checks of the
results' count and shapes, and dtype conversion, as on interp)."""
from __future__ import annotations

import threading
from typing import Callable, NoReturn

import numpy as np

from plait.backends.xla.emitter import TOKEN_PRIMS, TOKEN_TYPE, Ctx, aval_type
from plait.backends.xla.rules import RULE
from plait.errors import CallbackError, PlaitError
from plait.lax.callbacks import debug_callback_p, io_callback_p, pure_callback_p

TARGET = "xla_ffi_python_cpu_callback"


class HostCallbacks(list):
    """The host functions of one module, in ``index`` order, and the exception the last
    failing one raised (read by :meth:`raise_error` when XLA reports the failure)."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self._error: tuple | None = None

    def wrap(self, impl: Callable, name: str, prim: str) -> Callable:
        """The function XLA calls: ``(token, *arrays) -> (token, *results)``; an
        exception is kept (for :meth:`raise_error`) and re-raised to abort the run."""
        def host(token, *xs):
            try:
                outs = impl(*xs)
            except Exception as e:
                with self._lock:
                    self._error = (name, prim, e)
                raise
            return (token, *[np.asarray(o, order="C") for o in outs])
        return host

    def raise_error(self, xla_error: Exception) -> NoReturn:
        """Raise the plait error for a run XLA aborted with ``xla_error``: the
        :class:`CallbackError` of the callback that raised (chained to its exception)."""
        with self._lock:
            err, self._error = self._error, None
        if err is None:
            raise PlaitError(f"XLA failed running a program with host callbacks: "
                             f"{xla_error}") from None
        name, prim, e = err
        if isinstance(e, CallbackError):
            raise e.with_traceback(None) from None
        raise CallbackError(f"the host callback {name!r} ({prim}) raised "
                            f"{type(e).__name__}: {e}") from e


def _callback_name(callback) -> str:
    return getattr(callback, "__name__", None) or repr(callback)


def _lower(prim, ctx: Ctx, args, params) -> list:
    """The token-threaded custom call running ``prim``'s impl on ``args``."""
    name = _callback_name(params["callback"])
    impl = prim.impl

    def run(*xs):
        return impl(*xs, **params)
    hosts = ctx.em.host_callbacks
    fn = hosts.wrap(run, name, prim.name) if isinstance(hosts, HostCallbacks) else run
    index = ctx.host_callback(fn, f"{name!r} ({prim.name})")
    out_types = [aval_type(a) for a in ctx.out_avals]
    outs = ctx.op("stablehlo.custom_call", [ctx.chain.token] + list(args),
                  [TOKEN_TYPE] + [aval_type(a) for a in ctx.in_avals],
                  [TOKEN_TYPE] + out_types,
                  f'call_target_name = "{TARGET}", api_version = 4 : i32, '
                  f'has_side_effect = true, backend_config = {{index = {index} : ui64}}')
    ctx.chain.token = outs[0]
    return outs[1:]


for _p in (debug_callback_p, pure_callback_p, io_callback_p):
    TOKEN_PRIMS.add(_p.name)
    _p.def_rule(RULE, lambda ctx, *args, _p=_p, **params: _lower(_p, ctx, args, params))
