"""Compile a closed graph for an OpenCL device and run it there.

The graph is partitioned as for the native backend, with the device's target config
(``opencl-gpu``): kernel steps lower to Stripe, go through the config's passes and
render as OpenCL C (:mod:`plait.codegen.opencl_c`); all kernels of an executable form
one OpenCL program, whose binary is cached on disk per device and source under the
kernel cache directory (``<cache>/opencl/<sha256>.bin``). Equations without a lowering run on the host
with their ``impl``. Values move lazily: a value lives where it was made (device
buffer or host array) and is copied only when a step on the other side reads it, so
consecutive kernels never leave the device. A host step whose equation runs sub-graphs
(``while``, ``scan``, ``cond``...) runs them as opencl executables of their own and
hands them its device inputs in place, keeping their results on the device, so a loop
whose body is device kernels copies only what its Python driver reads (a ``while``
predicate per iteration); ``as_text("kernels")`` says which host steps copy what.
Called through ``jit``, arguments that are already on the device
(:class:`~plait.backends.opencl.array.OpenCLArray`) are used in place, others are
uploaded once, and outputs stay on the device as OpenCLArrays (:meth:`call_arrays`);
called directly, the executable takes and returns host arrays.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import weakref
from dataclasses import replace

import numpy as np

from plait.backends.native.partition import HostStep, KernelStep, partition
from plait.backends.opencl.array import OpenCLArray, download, upload
from plait.backends.opencl.device import Device, opencl_device
from plait.codegen.opencl_c import KernelSet, needs_fp64, prelude, render_kernels
from plait.config import config
from plait.core.trace import concrete_value
from plait.core.graph import (ClosedGraph, Literal, reset_graph_runner, set_graph_runner,
                              subgraphs_of)
from plait.core.printer import pp_graph
from plait.errors import CompileError, PlaitValueError
from plait.passes.inline import inline
from plait.runtime import kernel_cache
from plait.runtime.array import Array
from plait.stripe import lower as stripe_lower
from plait.stripe.ir import np_dtype
from plait.stripe.passes import run_passes


class _DeviceKernel:
    """A kernel step rendered for the device: buffer atoms in argument order, its kernels
    (``same``: an earlier kernel with an equal Tile program, whose kernels it calls)."""

    def __init__(self, st: KernelStep, dev: Device, same: "_DeviceKernel | None" = None):
        self.step = st
        self.same = same
        if same is not None:
            self.stripe, self.kernels = same.stripe, same.kernels
            self.args = [("in", st.inputs[b.name]) if b.kind == "in"
                         else ("out", st.outputs[b.name]) for b in self.stripe[1].buffers]
            return
        before = stripe_lower(st.program)
        self.stripe = (before, run_passes(before, dev.target, verify=config.checks))
        after = self.stripe[1]
        if needs_fp64(after) and not dev.fp64:
            raise CompileError(f"kernel {st.name} computes in float64, which OpenCL device "
                               f"{dev.device.name!r} does not support (no cl_khr_fp64); use "
                               f"float32 or another device")
        self.kernels: KernelSet = render_kernels(after, st.name)
        self.args = [("in", st.inputs[b.name]) if b.kind == "in" else ("out", st.outputs[b.name])
                     for b in after.buffers]


def _device_steps(steps: list, dev: Device) -> list:
    """Kernel steps rendered for ``dev``; a kernel whose Tile program equals an earlier
    one's (up to its name: a repeated layer, an unrolled loop's step) reuses its kernels."""
    seen: dict = {}
    out = []
    for st in steps:
        if isinstance(st, KernelStep):
            key = replace(st.program, name="")
            st = _DeviceKernel(st, dev, seen.get(key))
            seen.setdefault(key, st)
        out.append(st)
    return out


class _Value:
    """A value on the host, on the device, or both."""

    __slots__ = ("host", "dev", "aval")

    def __init__(self, aval, host=None, dev=None):
        self.aval, self.host, self.dev = aval, host, dev


class OpenCLExecutable:
    """Runs device kernels and host steps in order, moving values only when needed."""

    def __init__(self, closed: ClosedGraph):
        self.closed = inline(closed)
        self.dev = dev = opencl_device()
        g = self.closed.graph
        self.steps = _device_steps(partition(g, dev.target), dev)
        kernels = [s for s in self.steps if isinstance(s, _DeviceKernel) and s.same is None]
        self.source = prelude() + "\n\n" + "\n\n".join(k.kernels.source for k in kernels)
        self.program = None
        if kernels:
            try:
                self.program = _build(dev, self.source)
            except dev.cl.Error as e:
                raise CompileError(f"the OpenCL compiler of {dev.device.name!r} rejected the "
                                   f"generated kernels: {e}") from None
        # one kernel object per kernel (pyopencl makes a new one per attribute lookup)
        self.cl_kernels = {la.name: dev.cl.Kernel(self.program, la.name) for k in kernels
                           for la in k.kernels.launches}
        self.shapes = self.launch_shapes()
        self.consts = [np.asarray(getattr(c, "_value", c)) for c in self.closed.consts]
        self.transfers = dev.transfers      # the device's copy counts (tests, tuning)
        self._last = self._last_uses()

    def launch_shapes(self, limit: int | None = None) -> dict:
        """``{launch name: (NDRange, work-group shape)}``, each group within its
        kernel's work-group limit as the driver reports it (or ``limit``)."""
        info = self.dev.cl.kernel_work_group_info.WORK_GROUP_SIZE
        return {la.name: la.shape(limit or self.cl_kernels[la.name].get_work_group_info(
                    info, self.dev.device))
                for s in self.steps if isinstance(s, _DeviceKernel) and s.same is None
                for la in s.kernels.launches}

    def _last_uses(self) -> dict:
        last = {}
        for n, st in enumerate(self.steps):
            atoms = ([a for d, a in st.args if d == "in"] if isinstance(st, _DeviceKernel)
                     else list(st.eqn.inputs))
            for a in atoms:
                if not isinstance(a, Literal):
                    last[a] = n
        return last

    # --- moving values ---------------------------------------------------------------
    def _on_device(self, v: _Value):
        if v.dev is None:
            v.dev = upload(self.dev, v.host)
        return v.dev

    def _on_host(self, v: _Value) -> np.ndarray:
        if v.host is None:
            v.host = download(self.dev, v.dev, v.aval.shape, v.aval.dtype)
        return v.host

    def _new_buffer(self, nbytes: int):
        cl = self.dev.cl
        return cl.Buffer(self.dev.context, cl.mem_flags.READ_WRITE, size=max(int(nbytes), 1))

    # --- running ---------------------------------------------------------------------
    def __call__(self, *args) -> list:
        """Run on host arrays; the outputs come back as host arrays."""
        env = self._run([_Value(v.aval, host=np.asarray(x))
                         for v, x in zip(self.closed.graph.invars, args)], len(args))
        return [np.asarray(a.val) if isinstance(a, Literal) else self._on_host(env[a])
                for a in self.closed.graph.outvars]

    def call_arrays(self, args: list, weak: list, uploaded: dict | None = None) -> list:
        """Run on plait arrays (or host values): arguments on this device are used in
        place; the outputs stay on the device as OpenCLArrays (weak-typed by ``weak``).
        ``uploaded`` (``id(host value) -> (host value, buffer or None)``) names host
        values several calls share (a loop's constants and initial carries): the first
        call that uploads one records its buffer, later calls reuse it."""
        g = self.closed.graph
        vals = []
        for v, x in zip(g.invars, args):
            buf = x.buffer_for(self.dev) if isinstance(x, OpenCLArray) else None
            if buf is None and uploaded and uploaded.get(id(x), (None,))[0] is x:
                buf = uploaded[id(x)][1]
            vals.append(_Value(v.aval, dev=buf) if buf is not None
                        else _Value(v.aval, host=concrete_value(x)))
        env = self._run(vals, len(args))
        for x, val in zip(args, vals) if uploaded else ():
            if val.host is not None and val.dev is not None and \
                    uploaded.get(id(x), (None,))[0] is x:
                uploaded[id(x)] = (x, val.dev)
        outs = []
        for a, w in zip(g.outvars, weak):
            if isinstance(a, Literal):
                outs.append(Array(np.asarray(a.val), w))
                continue
            v = env[a]
            host = v.host
            if host is not None and (host.base is not None or any(host is x for x in args)):
                host = np.array(host)       # plait arrays never share a caller's memory
            outs.append(Array(host, w) if v.dev is None else
                        OpenCLArray(v.dev, v.aval.shape, v.aval.dtype, w, self.dev, host))
        return outs

    def _run(self, vals: list, nargs: int) -> dict:
        """Run every step; the environment holding the outputs."""
        g = self.closed.graph
        if nargs != len(g.invars):
            raise TypeError(f"executable takes {len(g.invars)} arguments, got {nargs}")
        env = {v: _Value(v.aval, host=x) for v, x in zip(g.constvars, self.consts)}
        env.update(zip(g.invars, vals))
        keep = set(g.outvars)
        for n, st in enumerate(self.steps):
            if isinstance(st, _DeviceKernel):
                self._run_kernel(st, env)
            else:
                self._run_host(st, env)
            for v in [v for v, k in self._last.items() if k == n and v not in keep]:
                env.pop(v, None)
        return env

    def _run_kernel(self, k: _DeviceKernel, env: dict) -> None:
        bufs = []
        for d, a in k.args:
            if d == "in":
                v = (_Value(a.aval, host=np.asarray(a.val)) if isinstance(a, Literal)
                     else env[a])
                bufs.append(self._on_device(v))
            else:
                nbytes = int(np.prod(a.aval.shape)) * np.dtype(a.aval.dtype).itemsize
                env[a] = _Value(a.aval, dev=self._new_buffer(nbytes))
                bufs.append(env[a].dev)
        for _, dt, n in k.kernels.temps:
            bufs.append(self._new_buffer(n * np_dtype(dt).itemsize))
        for launch in k.kernels.launches:
            scratch = [self._new_buffer(n * np_dtype(dt).itemsize) for dt, n in launch.scratch]
            self.cl_kernels[launch.name](self.dev.queue, *self.shapes[launch.name],
                                         *launch.arguments(bufs, scratch))

    def _run_host(self, st: HostStep, env: dict) -> None:
        e = st.eqn
        graphs = _runs_graphs(e)
        ins = [a.val if isinstance(a, Literal) else
               self._as_array(env[a]) if graphs else self._on_host(env[a]) for a in e.inputs]
        # sub-graphs run on the device too, uploading each of this step's host inputs
        # once (a loop's constants), whatever the number of iterations
        shared = {id(x): (x, None) for x in ins if isinstance(x, np.ndarray)} if graphs else {}
        token = set_graph_runner(functools.partial(_run_subgraph, uploaded=shared))
        try:
            r = e.prim.rule("impl")(*ins, **e.params)
        finally:
            reset_graph_runner(token)
        for a, x in zip(e.inputs, ins):     # a device input the step read: keep its copy
            if isinstance(x, OpenCLArray) and x.host_copy() is not None:
                env[a].host = x.host_copy()
        outs = r if e.prim.multiple_results else [r]
        for v, x in zip(e.outputs, outs):
            buf = x.buffer_for(self.dev) if isinstance(x, OpenCLArray) else None
            env[v] = (_Value(v.aval, dev=buf, host=x.host_copy()) if buf is not None
                      else _Value(v.aval, host=np.asarray(x)))

    def _as_array(self, v: _Value):
        """``v`` for an equation that runs sub-graphs: a host-only value as is, else its
        device buffer as an OpenCLArray (with the host copy if there is one; else
        copied only if the equation reads it on the host)."""
        if v.dev is None:
            return v.host
        return OpenCLArray(v.dev, v.aval.shape, v.aval.dtype, v.aval.weak_type, self.dev,
                           v.host)

    def kernel_count(self) -> int:
        return sum(len(s.kernels.launches) for s in self.steps if isinstance(s, _DeviceKernel))

    def as_text(self, stage: str = "opencl") -> str:
        """``opencl`` (kernel source), ``kernels`` (steps and their transfers), ``stripe``/
        ``stripe-opt``, ``graph``."""
        if stage in ("opencl", "c"):
            return self.source
        if stage == "kernels":
            return "\n".join(self._describe(n, st) for n, st in enumerate(self.steps))
        if stage in ("stripe", "stripe-opt"):
            from plait.stripe import to_text
            return "\n\n".join(to_text(s.stripe[0 if stage == "stripe" else 1])
                               for s in self.steps if isinstance(s, _DeviceKernel))
        if stage == "graph":
            return pp_graph(self.closed)
        raise PlaitValueError(f"unknown stage {stage!r}: use graph, kernels, stripe, "
                              f"stripe-opt or opencl")

    def _describe(self, n: int, st) -> str:
        if isinstance(st, _DeviceKernel):
            ops = ", ".join(e.prim.name for e in st.step.eqns)
            runs = (f"{st.same.step.name}'s kernels" if st.same is not None
                    else f"{len(st.kernels.launches)} kernels")
            return f"{st.step.name}: {ops} [device: {runs}]"
        e = st.eqn
        made_on_device = {a for s in self.steps[:n] if isinstance(s, _DeviceKernel)
                          for d, a in s.args if d == "out"}
        back = sum(1 for a in e.inputs if a in made_on_device)
        if _runs_graphs(e):
            moves = ("sub-graphs on the device: inputs passed in place, host ones "
                     "uploaded once; copies only what the host reads; results stay "
                     "where they are made")
        else:
            moves = (f"copies {back} input{'s' if back != 1 else ''} device->host"
                     if back else "no copy in")
            args = len(set(e.inputs) & set(self.closed.graph.invars))
            if args:
                moves += (f", {args} argument{'s' if args != 1 else ''} copied down only "
                          f"if passed on the device")
            outs = set(e.outputs)
            readers = [s.step.name for s in self.steps[n + 1:] if isinstance(s, _DeviceKernel)
                       and any(d == "in" and a in outs for d, a in s.args)]
            moves += (f"; results copied host->device for {', '.join(readers)}" if readers
                      else "; results stay on the host")
        return f"host: {e.prim.name} ({moves}){self._why_host(e)}"

    def _why_host(self, e) -> str:
        """Why an equation runs on the host, when a dtype the device lacks is the reason."""
        names = {"f16": ("float16", "cl_khr_fp16"), "f64": ("float64", "cl_khr_fp64")}
        dts = {np.dtype(v.aval.dtype) for v in list(e.inputs) + list(e.outputs)
               if hasattr(v.aval, "dtype")}
        for sdt in self.dev.target.unsupported_dtypes:
            if sdt in names and np_dtype(sdt) in dts:
                what, ext = names[sdt]
                if ext in self.dev.device.extensions:   # float16 with cl_khr_fp16
                    return f" [{what}: no OpenCL rendering of {what} yet, so it runs on the host]"
                return (f" [{what}: device {self.dev.device.name.strip()!r} has no {ext}, "
                        f"so {what} runs on the host]")
        return ""


def _options() -> str:
    """Build options: no warnings (the NaN self-comparisons are intended), then config
    ``opencl_build_options``."""
    return f"-w {config.opencl_build_options or ''}".strip()


def _build(dev: Device, source: str):
    """The built program of ``source``: from the binary cached for this device and
    source under ``<kernel cache>/opencl`` when there is one, else compiled and its
    binary cached (written to a private file, then renamed into place). An entry that
    does not load is rebuilt; a cache that cannot be written is skipped."""
    cl = dev.cl
    options = _options()
    key = hashlib.sha256(f"{dev.key}\0{options}\0{source}".encode()).hexdigest()
    d = os.path.join(kernel_cache.cache_dir(), "opencl")
    path = os.path.join(d, key + ".bin")
    if os.path.isfile(path):
        try:
            with open(path, "rb") as f:
                return cl.Program(dev.context, [dev.device], [f.read()]).build(options=options)
        except (OSError, cl.Error):     # unreadable or stale entry: rebuilt below
            pass
    prg = cl.Program(dev.context, source).build(options=options)
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".stage-")
        with os.fdopen(fd, "wb") as f:
            f.write(prg.binaries[0])
        os.replace(tmp, path)
    except OSError:                     # a cache that cannot be written is skipped
        pass
    return prg


def compile_opencl(closed: ClosedGraph) -> OpenCLExecutable:
    """Compile ``closed`` for the process's OpenCL device (raises
    DeviceUnavailableError without pyopencl or a platform)."""
    return OpenCLExecutable(closed)


_SUBGRAPHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _runs_graphs(eqn) -> bool:
    """Whether a host step's equation runs sub-graphs (control flow, custom rules)."""
    return next(subgraphs_of(eqn.params), None) is not None


def _run_subgraph(graph, args, uploaded: dict) -> list:
    """Run a control-flow body or branch with its cached OpenCL executable: device
    arguments in place, host ones uploaded once per host step (``uploaded``, see
    :meth:`OpenCLExecutable.call_arrays`), results left on the device (OpenCLArrays)."""
    exe = _SUBGRAPHS.get(graph)
    if exe is None:
        exe = _SUBGRAPHS[graph] = compile_opencl(ClosedGraph(graph, []))
    return exe.call_arrays(list(args), [v.aval.weak_type for v in graph.outvars], uploaded)
