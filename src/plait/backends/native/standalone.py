"""A native program as a standalone C library (``plait.export(f, format="c")``).

:func:`c_library` runs the native backend's preparation (partition, Tile, Stripe,
C rendering: :class:`plait.backends.native.compile.Prepared`) on a closed graph
and wraps its whole-program driver in one exported entry point
``int64_t NAME(const void *const *ins, void *const *outs)``: the graph's constants
are embedded as static arrays, ``ins`` are the arguments' row-major buffers and
``outs`` caller-allocated output buffers (overlapping no other buffer: the kernels
assume it, see ``codegen.c_cpu.independent_iterations``); it returns 0, or a nonzero status when an
internal allocation failed. The result carries the source, a header declaring the
entry point (with every buffer's dtype and shape) and a build line for ``cc``; the
library needs only libc and libm (and OpenMP when built with it), no Python.
Programs with a step that runs on the host (a Python callback, an op without a
native kernel) or that call SciPy's LAPACK or plait's FFT library (both found at load
time by Python) refuse with the step's name.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from plait.backends.native.cprogram import CallStep, storage_type
from plait.backends.native.partition import HostStep
from plait.core.graph import ClosedGraph
from plait.errors import PlaitValueError


@dataclass
class CLibrary:
    """A standalone C library: ``source``, ``header``, the ``entry`` point's name and
    how to ``build`` it; :meth:`write` puts ``NAME.c`` and ``NAME.h`` in a folder."""

    name: str
    source: str
    header: str
    in_specs: list
    out_specs: list
    openmp: bool

    @property
    def entry(self) -> str:
        return self.name

    def build_line(self, out: str | None = None) -> str:
        """A shell command building ``lib{name}.so`` from ``{name}.c``, exporting only the
        entry point (link a C program with ``-L. -l{name} -lm``, or compile ``{name}.c``
        into it directly)."""
        omp = " -fopenmp" if self.openmp else ""
        return (f"cc -O3 -fPIC -shared -fvisibility=hidden{omp} {self.name}.c "
                f"-o {out or f'lib{self.name}.so'} -lm")

    def write(self, directory: str) -> list[str]:
        """Write ``NAME.c`` and ``NAME.h`` into ``directory``; returns their paths."""
        os.makedirs(directory, exist_ok=True)
        paths = []
        for ext, text in (("c", self.source), ("h", self.header)):
            p = os.path.join(directory, f"{self.name}.{ext}")
            with open(p, "w") as f:
                f.write(text)
            paths.append(p)
        return paths


def _spec_text(aval) -> str:
    return f"{np.dtype(aval.dtype).name}[{', '.join(str(d) for d in aval.shape)}]"


def _refuse_host_steps(prepared, where: str) -> None:
    host = [s for s in prepared.steps if isinstance(s, HostStep)]
    if prepared.entry is not None and not host:
        return
    if host:
        eqn = host[0].eqn
        at = f" (at {eqn.source})" if eqn.source else ""
        raise PlaitValueError(
            f"{where}: step {eqn.prim.name!r}{at} runs on the host (Python), so the program "
            f"cannot be a standalone C library; remove it (or export with the default "
            f"StableHLO format)")
    raise PlaitValueError(f"{where}: the program has no native kernels to export as C")


def c_library(closed: ClosedGraph, name: str, where: str = "export(format='c')"
              ) -> CLibrary:
    """The standalone C library computing ``closed`` (see the module docstring)."""
    from plait.backends.native.compile import Prepared
    from plait.codegen.toolchain import find_toolchain
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise PlaitValueError(f"{where}: {name!r} is not a C identifier; pass name=")
    prepared = Prepared(closed)
    _refuse_host_steps(prepared, where)
    if "plait_lapack_init" in prepared.source:
        raise PlaitValueError(f"{where}: the program calls LAPACK through SciPy (a linalg "
                              f"step), whose routines are found at load time by Python; "
                              f"it cannot be a standalone C library")
    if "plait_fft_init" in prepared.source:
        eqn = next((s.eqn for s in prepared.steps
                    if isinstance(s, CallStep) and s.eqn.prim.name == "fft"), None)
        at = f" (at {eqn.source})" if eqn is not None and eqn.source else ""
        raise PlaitValueError(f"{where}: step 'fft'{at} calls plait's FFT library, a shared "
                              f"object found at load time by Python; the program cannot be "
                              f"a standalone C library (export with the default StableHLO "
                              f"format)")
    g = closed.graph
    consts, lines = [], []
    for k, (c, v) in enumerate(zip(closed.consts, g.constvars)):
        arr = np.ascontiguousarray(np.asarray(getattr(c, "_value", c), dtype=v.aval.dtype))
        data = ", ".join(str(b) for b in arr.tobytes()) or "0"
        lines.append(f"static const unsigned char {name}_c{k}[] __attribute__((aligned(64)))"
                     f" = {{{data}}};")
        consts.append(f"(void *){name}_c{k}")
    n_in, n_out = len(g.invars), len(g.outvars)
    ins = consts + [f"(void *)ins[{i}]" for i in range(n_in)]
    outs = [f"outs[{i}]" for i in range(n_out)]
    lines.append(f"__attribute__((visibility(\"default\"))) int64_t {name}("
                 f"const void *const *ins, void *const *outs) {{")
    lines.append(f"  void *all_ins[] = {{{', '.join(ins) or '0'}}};")
    lines.append(f"  void *all_outs[] = {{{', '.join(outs) or '0'}}};")
    lines.append("  (void)ins; (void)outs;")
    lines.append(f"  return {prepared.entry}(all_ins, all_outs);")
    lines.append("}")
    body = re.sub(r"^int64_t plait_run\(", "static int64_t plait_run(", prepared.source,
                  flags=re.M)
    source = f'#include "{name}.h"\n' + body + "\n\n" + "\n".join(lines) + "\n"
    doc = [f"/* {name}: generated by plait (standalone; link with -lm). Buffers are "
           f"row-major, C-contiguous. */",
           "/* An output buffer must not overlap another output or an input (the kernels "
           "assume it); inputs may overlap each other. */"]
    doc += [f"/*   ins[{i}]: {storage_type(v.aval)} {_spec_text(v.aval)} */"
            for i, v in enumerate(g.invars)]
    doc += [f"/*   outs[{i}]: {storage_type(a.aval)} {_spec_text(a.aval)} (caller-allocated)"
            f" */" for i, a in enumerate(g.outvars)]
    guard = f"PLAIT_{name.upper()}_H"
    header = "\n".join([f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>", *doc,
                        "/* returns 0, or nonzero when an internal allocation failed */",
                        f"int64_t {name}(const void *const *ins, void *const *outs);",
                        "#endif", ""])
    tc = find_toolchain()
    return CLibrary(name, source, header, [v.aval for v in g.invars],
                    [a.aval for a in g.outvars], bool(tc is not None and tc.openmp))
