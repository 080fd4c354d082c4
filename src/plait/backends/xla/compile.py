"""The xla backend: one StableHLO module per signature, compiled by XLA through PJRT.

``compile_xla(closed)`` emits the module (:mod:`plait.backends.xla.emitter`),
compiles it once with the PJRT CPU client (:mod:`plait.backends.xla.pjrt`), and
returns an executable. Constants up to :data:`MAX_EMBED_BYTES` are literals of the
module, as in the modules ``jax.jit`` builds: XLA then sees their values (it sinks them
into while loops and folds them; passed as parameters instead, W3's Newton-CG steps
ran 8% (quadratic, n = 50) and 18% (logistic) slower). Larger ones are leading
parameters whose device buffers stay on the device between calls.
Host arguments cross as zero-copy host-buffer transfers, device arguments
(:class:`~plait.backends.xla.array.XlaArray`) in place; jit gets the results as
XlaArrays (:meth:`XlaExecutable.call_arrays`), which reach the host only when asked.
A module with host callbacks or collectives (:mod:`plait.backends.xla.rules_callbacks`)
keeps their Python functions and takes the run's context last; each call returns only
once the program (its callbacks included) ran, so effects happen before the call
returns and a callback's exception is raised by the call as a
:class:`~plait.errors.CallbackError`; it takes that Python path (no jit dispatcher, no C
hot path).
"""
from __future__ import annotations

import hashlib
import os
import time

import numpy as np

from plait.backends.xla import pjrt
from plait.backends.xla.array import XlaArray
from plait.backends.xla.emitter import const_values, embedded_consts, emit_module, \
    takes_context
from plait.backends.xla.rules_callbacks import HostCallbacks, run_context
from plait.core.aval import ShapedArray
from plait.core.graph import ClosedGraph
from plait.core.printer import pp_graph


# A constant larger than this stays a parameter: its literal would cost twice its size in
# module text (hex) and XLA's compile-time passes over it.
MAX_EMBED_BYTES = 16 << 20


class XlaExecutable:
    """Runs a closed graph compiled by XLA."""

    def __init__(self, closed: ClosedGraph):
        pjrt._jaxlib()      # the clear "pip install plait[xla]" error, before any work
        self.closed = closed
        g = closed.graph
        self.n_in = len(g.invars)
        self.host_callbacks = HostCallbacks()
        self.text = stablehlo_text(closed, self.host_callbacks)
        _dump(closed, self.text)
        t0 = time.perf_counter()
        self.loaded = pjrt.compile_text(self.text, closed.out_avals, self.host_callbacks)
        self.compile_seconds = time.perf_counter() - t0
        self.const_bufs = [self.loaded.put(np.asarray(c, dtype=v.aval.dtype)) for c, v, embedded
                           in zip(const_values(closed), g.constvars,
                                  embedded_consts(closed, MAX_EMBED_BYTES)) if not embedded]
        self.in_avals = [self.loaded.aval(v.aval.shape, v.aval.dtype) for v in g.invars]
        self._synced = takes_context(closed)
        self._context_aval = self.loaded.aval((), np.int64)
        self._dispatch = None if self._synced else \
            self.loaded.dispatcher(self.const_bufs, self.in_avals)
        self._dtypes = [a.dtype for a in self.in_avals]
        self._out_avals: dict = {}      # output weak types -> the outputs' avals
        # the last call's weak types, its outputs' avals and their C path (False: none;
        # None: not asked yet), replaced as one tuple: threads read it without a lock
        self._last: tuple = (None, None, None)
        self._strong = [False] * len(closed.out_avals)
        self._wait = self.loaded.wait

    def launch(self, *args, deps: tuple = ()) -> None:
        return None

    def __call__(self, *args) -> list:
        """Run on host values or XlaArrays; the outputs as host arrays."""
        return [np.asarray(a) for a in self.call_arrays(args, self._strong)]

    def call_arrays(self, args, weak: list) -> list:
        """Run on plait arrays or host values; the outputs stay on the device as
        :class:`XlaArray` (weak-typed by ``weak``).

        Through the C++ dispatcher when every argument is an XlaArray or a host array
        exactly of its input's dtype. Host arrays cross without a copy and XLA may run
        after the call returns, so a call given one waits for its outputs: the caller
        may write to its arrays afterwards (``jax.jit`` does not wait, and reads the
        new values)."""
        last_weak, avals, hot = self._last
        if weak is not last_weak:       # jit passes one list per signature
            key = tuple(weak)
            avals = self._out_avals.get(key)
            if avals is None:
                avals = self._out_avals[key] = [ShapedArray(a.shape, a.dtype, w) for a, w
                                                in zip(self.closed.out_avals, weak)]
            self._last = (weak, avals, None)
        elif hot is None:               # the signature's second call: its C path
            hot = self._multi_hot(avals) or False
            self._last = (weak, avals, hot)
        if hot:
            outs = hot(args if type(args) is tuple else tuple(args))
            if outs is not None:
                return outs
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        if self._synced:
            return [XlaArray(b, a, True) for b, a in zip(self._call_synced(args), avals)]
        d = self._dispatch
        if d is not None:
            xs, host = [], False
            for x, dt in zip(args, self._dtypes):
                t = type(x)
                if t is np.ndarray and (x.dtype is dt or x.dtype == dt):
                    host = True
                elif t is XlaArray and x._buf is not None and x._aval.dtype == dt:
                    x = x._buf
                else:
                    break           # a scalar, another dtype or a deleted array
                xs.append(x)
            else:
                outs = d(*self.const_bufs, *xs)
                if host and outs and not outs[0].is_ready():   # one event for all outputs
                    self._wait(outs)
                return [XlaArray(b, a, host) for b, a in zip(outs, avals)]
        outs = self.loaded.call(self.const_bufs, [
            x._buf if type(x) is XlaArray and x._buf is not None else x for x in args],
            self.in_avals, host=False)
        self._wait(outs)                # host arguments may have crossed without a copy
        return [XlaArray(b, a, True) for b, a in zip(outs, avals)]

    def _call_synced(self, args) -> list:
        """Run to the end (host callbacks included) in the calling thread's context: the
        output device arrays; a callback's exception raised as
        :class:`~plait.errors.CallbackError`."""
        args = [x._buf if type(x) is XlaArray and x._buf is not None else x for x in args]
        with run_context() as context:
            try:
                return self.loaded.call(self.const_bufs, args + [context],
                                        self.in_avals + [self._context_aval], host=False,
                                        synced=True)
            except pjrt.runtime_error() as e:      # the run was aborted
                self.host_callbacks.raise_error(e)

    def _multi_hot(self, avals: list):
        """:meth:`call_arrays`' C path for outputs ``avals`` (the list of result
        XlaArrays, or None to decline), or None when there is none."""
        if self._dispatch is None or not avals:
            return None
        from plait.backends.xla.hot import make_hot
        return make_hot(self._dispatch, self.const_bufs, self._wait,
                        [v.aval for v in self.closed.graph.invars], tuple(avals))

    def hot_path(self, weak: list):
        """The C call path of this signature (:mod:`plait.backends.xla.hot`): one output
        XlaArray (weak-typed by ``weak``) per call, or None to decline; None when there
        is none (several outputs, no jit dispatcher for it, or no C toolchain)."""
        if self._dispatch is None or len(self.closed.out_avals) != 1:
            return None
        from plait.backends.xla.hot import make_hot
        out = self.closed.out_avals[0]
        return make_hot(self._dispatch, self.const_bufs, self._wait,
                        [v.aval for v in self.closed.graph.invars],
                        ShapedArray(out.shape, out.dtype, weak[0]))

    def as_text(self, stage: str = "stablehlo") -> str:
        """``stablehlo`` (the module) or ``graph``."""
        if stage == "graph":
            return pp_graph(self.closed)
        return self.text


def stablehlo_text(closed: ClosedGraph, host_callbacks: list | None = None) -> str:
    """The StableHLO module the xla backend compiles for ``closed`` (no jaxlib needed):
    constants up to :data:`MAX_EMBED_BYTES` embedded, larger ones leading parameters;
    the host functions of its callbacks are appended to ``host_callbacks`` (when
    given; else dropped: the text alone is wanted)."""
    return emit_module(closed, closed.graph.name or "plait", embed_consts=True,
                       max_embed_bytes=MAX_EMBED_BYTES,
                       host_callbacks=[] if host_callbacks is None else host_callbacks)


def _dump(closed: ClosedGraph, text: str) -> None:
    from plait.config import config
    if not config.dump_dir:
        return
    d = os.path.join(config.dump_dir, f"{closed.graph.name or 'graph'}_"
                     f"{hashlib.sha256(pp_graph(closed).encode()).hexdigest()[:10]}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "stablehlo.mlir"), "w") as f:
        f.write(text)


def compile_xla(closed: ClosedGraph) -> XlaExecutable:
    """Compile ``closed`` with XLA (raises XlaUnavailableError without jaxlib)."""
    return XlaExecutable(closed)
