"""The xla backend: one StableHLO module per signature, compiled by XLA through PJRT.

``compile_xla(closed)`` emits the module (:mod:`plait.backends.xla.emitter`),
compiles it once with the PJRT CPU client (:mod:`plait.backends.xla.pjrt`), and
returns an executable whose constants stay on the device between calls.
Arguments cross as zero-copy host-buffer transfers; results come back as NumPy
views of the device buffers.
"""
from __future__ import annotations

import hashlib
import os
import time

import numpy as np

from plait.backends.xla import pjrt
from plait.backends.xla.emitter import emit_module
from plait.core.graph import ClosedGraph, Literal
from plait.core.printer import pp_graph


class XlaExecutable:
    """Runs a closed graph compiled by XLA."""

    def __init__(self, closed: ClosedGraph):
        pjrt._jaxlib()      # the clear "pip install plait[xla]" error, before any work
        self.closed = closed
        g = closed.graph
        self.n_in = len(g.invars)
        self.text = emit_module(closed, g.name or "plait")
        _dump(closed, self.text)
        t0 = time.perf_counter()
        self.loaded = pjrt.compile_text(self.text, closed.out_avals)
        self.compile_seconds = time.perf_counter() - t0
        consts = [c._value if hasattr(c, "_value") else np.asarray(c) for c in closed.consts]
        self.const_bufs = [self.loaded.put(np.asarray(c, dtype=v.aval.dtype))
                           for c, v in zip(consts, g.constvars)]
        self.in_avals = [self.loaded.aval(v.aval.shape, v.aval.dtype) for v in g.invars]

    def launch(self, *args, deps: tuple = ()) -> None:
        return None

    def __call__(self, *args) -> list:
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        return self.loaded.call(self.const_bufs, args, self.in_avals)

    def as_text(self, stage: str = "stablehlo") -> str:
        """``stablehlo`` (the module) or ``graph``."""
        if stage == "graph":
            return pp_graph(self.closed)
        return self.text


def stablehlo_text(closed: ClosedGraph) -> str:
    """The StableHLO module of ``closed`` (no jaxlib needed)."""
    return emit_module(closed, closed.graph.name or "plait")


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
