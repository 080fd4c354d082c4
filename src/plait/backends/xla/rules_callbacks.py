"""``to_stablehlo`` rules of the primitives that run Python when the program runs: the
host callbacks (``debug_callback``, ``pure_callback``, ``io_callback``) and the pmap
collectives (``psum``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``all_to_all``, ``ppermute``, ``axis_index``, whose impls call the running replica's
communicator); and :class:`HostCallbacks`, the Python side the compiled module calls.

Each becomes XLA's FFI custom call ``xla_ffi_python_cpu_callback``: its
``backend_config = {index = N}`` picks the N-th Python function handed to the PJRT
client with the module (``pjrt.compile_text(..., host_callbacks=)``). The function
receives the token, the run's context and NumPy arrays of the operands, and returns the
token and the results, each of exactly its declared shape and dtype. It runs the
primitive's ``impl`` (for the callbacks, the same checks of the results' count and
shapes, and dtype conversion, as on interp) inside the replica scope of the thread
that called the executable (:func:`run_context`): XLA may run it on another thread,
and a collective finds its communicator there. The token (see
:mod:`plait.backends.xla.emitter`) keeps them in program order, as on interp (replicas
meet in their collectives in the order the program wrote them), and all are
``has_side_effect``: XLA neither removes, merges nor hoists any of them (plait's own
passes already did what ``pure_callback``'s purity allows), so the calls are counted
as on interp."""
from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, NoReturn

import numpy as np

from plait.backends.xla.emitter import TOKEN_PRIMS, TOKEN_TYPE, Ctx, aval_type
from plait.backends.xla.rules import RULE
from plait.core import named_axes
from plait.errors import CallbackError, PlaitError
from plait.lax import parallel as P
from plait.lax.callbacks import debug_callback_p, io_callback_p, pure_callback_p

TARGET = "xla_ffi_python_cpu_callback"

# run key -> the replica communicators of the thread that started the run
_CONTEXTS: dict[int, dict] = {}
_KEYS = itertools.count(1)


@contextmanager
def run_context() -> Iterator[np.ndarray]:
    """While one run of a module with host functions lasts: the int64 key of the calling
    thread's replica context, the module's last argument."""
    key = next(_KEYS)
    _CONTEXTS[key] = named_axes.replica_comms()
    try:
        yield np.asarray(key, np.int64)
    finally:
        del _CONTEXTS[key]


class HostCallbacks(list):
    """The host functions of one module, in ``index`` order, and the exception the last
    failing one raised (read by :meth:`raise_error` when XLA reports the failure)."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self._error: tuple | None = None

    def wrap(self, impl: Callable, name: str, prim: str) -> Callable:
        """The function XLA calls: ``(token, context, *arrays) -> (token, *results)``
        with ``impl(*arrays)`` run in the context's replica scope; an exception is kept
        (for :meth:`raise_error`) and re-raised to abort the run."""
        def host(token, context, *xs):
            try:
                with named_axes.replica_scope(_CONTEXTS[int(context)]):
                    outs = impl(*xs)
            except Exception as e:
                with self._lock:
                    self._error = (name, prim, e)
                raise
            return (token, *[np.asarray(o, order="C") for o in outs])
        return host

    def raise_error(self, xla_error: Exception) -> NoReturn:
        """Raise the plait error for a run XLA aborted with ``xla_error``: a plait
        error a host function raised as it is (a collective's, a callback's wrong
        result), another exception as the :class:`CallbackError` of the callback that
        raised it (chained to it)."""
        with self._lock:
            err, self._error = self._error, None
        if err is None:
            raise PlaitError(f"XLA failed running a program with host callbacks: "
                             f"{xla_error}") from None
        name, prim, e = err
        if isinstance(e, PlaitError):
            raise e.with_traceback(None) from None
        raise CallbackError(f"the host callback {name!r} ({prim}) raised "
                            f"{type(e).__name__}: {e}") from e


def _lower(prim, ctx: Ctx, args, params):
    """The token-threaded custom call running ``prim``'s impl on ``args``."""
    callback = params.get("callback")
    name = (getattr(callback, "__name__", None) or repr(callback)) if callback \
        else prim.name
    impl = prim.impl

    def run(*xs) -> list:
        r = impl(*xs, **params)
        return r if prim.multiple_results else [r]
    hosts = ctx.em.host_callbacks
    fn = hosts.wrap(run, name, prim.name) if isinstance(hosts, HostCallbacks) else run
    index = ctx.host_callback(fn, f"{name!r} ({prim.name})")
    outs = ctx.op("stablehlo.custom_call", ctx.chain.values() + list(args),
                  ctx.chain.types() + [aval_type(a) for a in ctx.in_avals],
                  [TOKEN_TYPE] + [aval_type(a) for a in ctx.out_avals],
                  f'call_target_name = "{TARGET}", api_version = 4 : i32, '
                  f'has_side_effect = true, backend_config = {{index = {index} : ui64}}')
    ctx.chain.token = outs[0]
    return outs[1:] if prim.multiple_results else outs[1]


for _p in (debug_callback_p, pure_callback_p, io_callback_p, P.psum_p, P.pmax_p, P.pmin_p,
           P.all_gather_p, P.psum_scatter_p, P.all_to_all_p, P.ppermute_p, P.axis_index_p):
    TOKEN_PRIMS.add(_p.name)
    _p.def_rule(RULE, lambda ctx, *args, _p=_p, **params: _lower(_p, ctx, args, params))
