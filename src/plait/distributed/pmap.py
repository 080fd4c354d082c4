"""``pmap``: compile a function once and run one replica per device, concurrently.

The replica program is traced with the axis name bound (``named_axes``, no batch
trace), so its collectives are staged as primitives and compiled like any other
host step; at run time each replica thread carries its communicator
(``named_axes.replica_scope``) and the collectives' ``impl`` exchange buffers:
through shared memory between the replicas of this process (:mod:`.local`), and
with MPI across processes (:mod:`.mpi`) when ``plait.distributed.initialize()``
joined a job. Each device has one long-lived worker thread pinned to its cores
(:func:`.devices.pin_current_thread`), so a replica's OpenMP threads stay there.

A pmapped function called under ``grad``/``jvp``, ``jit`` or an unnamed ``vmap``
(over eager evaluation) binds a ``pmap_call`` primitive (:mod:`.pmap_call`), whose
rules differentiate the replica program, so the forward and the backward pass each
run concurrently, one replica per device, at any order; ``jit`` stages it as a host
step of the compiled program (``jit(pmap(f))`` keeps its replicas, as in JAX), and
``vmap`` batches the replica program (each replica runs the whole batch). A pmap
nested in another's replica program (within one process) binds ``pmap_call`` too:
each outer replica runs the inner replicas on threads over its own device's cores.
Under a named ``vmap`` (whose axis the replica program may name) or lazy arrays it
runs as ``vmap(f, axis_name=...)`` of the replica function in the caller's trace: the
same values and derivatives (collectives over a vmapped axis are the reference
semantics), on the enclosing device.
"""
from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from plait.config import config
from plait.core import named_axes
from plait.core import trace as _trace
from plait.core.graph_transforms import graph_transform
from plait.core.graph import ClosedGraph, Graph
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.staging import trace_to_graph
from plait.core.trace import Tracer, concrete_value, get_aval
from plait.errors import DistributedError, PlaitValueError
from plait.lax.shape_ops import transpose
from plait.runtime.array import Array
from plait.runtime.heap import keep_heaps

from plait.distributed import pmap_call, runtime
from plait.distributed.devices import (CpuDevice, omp_max_threads,
                                       pin_current_thread, split_cores)
from plait.distributed.local import LocalGroup

_POOLS: dict[tuple, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


@dataclass(frozen=True)
class ReplicaTimes:
    """Where one replica's time went in a pmap call: ``wall_s`` from start to end on
    its worker thread, ``cpu_s`` the CPU time of that thread (its kernels with one
    core per device; OpenMP helper threads of wider devices are not counted),
    ``collective_wait_s`` the part of ``wall_s`` spent waiting for the other replicas
    (barriers, MPI), ``threads`` the OpenMP threads its kernels may use (read back
    from libgomp), ``native_id`` the worker thread's OS id."""

    device: CpuDevice
    wall_s: float
    cpu_s: float
    collective_wait_s: float
    threads: int
    native_id: int


class _LastRun:
    """The :class:`ReplicaTimes` of the last pmap call that ran replicas."""

    times: tuple[ReplicaTimes, ...] = ()


def last_run_times() -> tuple[ReplicaTimes, ...]:
    """Per-replica timings of the most recent pmap call (one entry per local device;
    for profiling: kernel time alone vs concurrent, time lost at collectives)."""
    return _LastRun.times


class _Worker(threading.local):
    """The replica a worker thread runs: its device and its path (device ids of the
    enclosing replicas, then its own position); None on other threads."""

    device: CpuDevice | None = None
    path: tuple = ()


_WORKER = _Worker()


def _start_worker(device: CpuDevice, path: tuple) -> None:
    keep_heaps()
    pin_current_thread(device)
    _WORKER.device, _WORKER.path = device, path


def _pool(device: CpuDevice, path: tuple) -> ThreadPoolExecutor:
    """The worker thread of ``device`` at ``path`` (one per device for a pmap; one per
    inner replica for a pmap nested in a replica, beside its parent's thread)."""
    key = (path, device.cores)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ThreadPoolExecutor(
                1, thread_name_prefix=f"plait-replica-{'.'.join(map(str, path))}",
                initializer=_start_worker, initargs=(device, path))
    return pool


def _subdevices(parent: CpuDevice, n: int) -> list[CpuDevice]:
    """``n`` devices over ``parent``'s cores (shared round-robin when fewer cores)."""
    return [CpuDevice(parent.id, parent.process_index, g)
            for g in split_cores(parent.cores, n)]


class _Anonymous:
    """The axis name of a pmap given ``axis_name=None`` (no collective can name it)."""

    def __repr__(self):
        return "<unnamed pmap axis>"


def _statics(argnums) -> tuple[int, ...]:
    if isinstance(argnums, int):
        return (argnums,)
    return tuple(int(i) for i in argnums)


def _spec_leaves(spec, tree, what: str) -> list:
    """One axis (int or None) per leaf of ``tree`` from the pytree prefix ``spec``."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(tree_flatten(tree)[0])
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)) \
            and len(spec) == len(tree):
        return [d for p, t in zip(spec, tree) for d in _spec_leaves(p, t, what)]
    if isinstance(spec, dict) and isinstance(tree, dict) and set(spec) == set(tree):
        return [d for k in sorted(tree) for d in _spec_leaves(spec[k], tree[k], what)]
    raise PlaitValueError(f"pmap {what} {spec!r} is not a prefix of the arguments' "
                          f"structure {tree_flatten(tree)[1]}: give an int or None, or a "
                          f"tuple, list or dict matching the structure")


class _Compiled:
    __slots__ = ("exe", "out_tree", "out_weak", "fingerprint")

    def __init__(self, exe, out_tree, out_weak, fingerprint):
        self.exe, self.out_tree, self.out_weak = exe, out_tree, out_weak
        self.fingerprint = fingerprint


def pmap(fun: Callable, axis_name: Hashable | None = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: int | Sequence[int] = (),
         devices: Sequence[CpuDevice] | None = None, backend: str | None = None
         ) -> Callable:
    """Map ``fun`` over the leading axis (``in_axes``) of its arguments, one replica per
    device, running concurrently; results are stacked along ``out_axes``.

    ``axis_name`` names the mapped axis for collectives (``plait.lax.psum`` etc.).
    ``static_broadcasted_argnums`` are passed unmapped to every replica and must be
    hashable (a new value compiles anew). ``devices`` defaults to this process's
    devices (``plait.distributed.local_devices()``; ``PLAIT_CPU_DEVICES`` sets how
    many); after ``plait.distributed.initialize()``, each process maps over its local
    devices and the collectives span all processes' devices.
    """
    name = axis_name if axis_name is not None else _Anonymous()
    statics = _statics(static_broadcasted_argnums)
    cache: dict = {}        # compiled replica programs (concrete arguments)
    graphs: dict = {}       # traced replica programs (arguments under grad/jvp)
    fname = getattr(fun, "__name__", "fn")

    def split(args):
        dyn = [a for i, a in enumerate(args) if i not in statics]
        st = tuple((i, args[i]) for i in statics if i < len(args))
        return dyn, st

    def bound(st):
        def f(*dyn):
            full, it = [], iter(dyn)
            for i in range(len(dyn) + len(st)):
                full.append(dict(st)[i] if i in dict(st) else next(it))
            return fun(*full)
        return f

    def mapped(*args, **kwargs):
        if kwargs:
            raise PlaitValueError(f"pmap of {fname}: pass arguments positionally (keyword "
                                  f"arguments are not mapped)")
        dyn, st = split(args)
        try:
            hash(st)
        except TypeError:
            raise PlaitValueError(f"pmap of {fname}: static_broadcasted_argnums={statics} "
                                  f"need hashable values (a new value compiles anew)") from None
        spec = in_axes
        if isinstance(spec, (tuple, list)) and statics:
            spec = tuple(a for i, a in enumerate(spec) if i not in statics)
        if isinstance(spec, list):
            spec = tuple(spec)
        leaves, in_tree = tree_flatten(tuple(dyn))
        traced = not _trace.at_top_level() or any(isinstance(x, Tracer) for x in leaves)
        outer_axes = _enclosing_pmaps()
        if traced and not _runs_as_call(outer_axes):
            vmap = graph_transform("vmap")
            return vmap(bound(st), in_axes=spec, out_axes=out_axes,
                        axis_name=name)(*dyn)
        dims = _spec_leaves(spec if isinstance(spec, tuple) or spec is None
                            or isinstance(spec, int) else spec, tuple(dyn), "in_axes")
        full = [get_aval(x) for x in leaves]
        sizes = {a.shape[d] for a, d in zip(full, dims) if d is not None}
        if len(sizes) != 1:
            raise PlaitValueError(f"pmap of {fname}: the mapped axes have sizes "
                                  f"{sorted(sizes)}; they must all be equal" if sizes else
                                  f"pmap of {fname} needs at least one mapped argument")
        n = sizes.pop()
        devs = list(devices) if devices is not None else runtime.local_devices()
        if n > len(devs) and not outer_axes:
            raise PlaitValueError(
                f"pmap of {fname}: the mapped axis has size {n} but only {len(devs)} "
                f"device(s) are available ({devs}); set PLAIT_CPU_DEVICES (or "
                f"plait.config.cpu_devices) or map a smaller axis")
        devs = devs[:n]           # nested: replaced by sub-devices of the replica's device
        world = runtime.world()
        if world is not None and n != len(runtime.local_devices()):
            raise PlaitValueError(
                f"pmap of {fname} across {world.size} processes maps each process's "
                f"{len(runtime.local_devices())} local devices; the mapped axis has "
                f"size {n}")
        global_size = n * (world.size if world is not None and not outer_axes else 1)
        dims = [None if d is None else d % a.ndim for a, d in zip(full, dims)]
        avals = [a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1:])
                 for a, d in zip(full, dims)]
        key = (in_tree, tuple(avals), tuple(dims), st, global_size, named_axes.env_key())
        if traced:        # under grad/jvp: the replicas run as a pmap_call primitive
            hit = graphs.get(key)
            if hit is None:
                hit = graphs[key] = _trace_replica(bound(st), in_tree, avals, name,
                                                   global_size, f"pmap of {fname}")
            closed, out_tree = hit
            args = [x if d is None else _to_front(x, d) for x, d in zip(leaves, dims)]
            stacked = pmap_call.call(closed, args, [d is not None for d in dims], n=n,
                                     axis_name=name, axis_size=global_size,
                                     devices=tuple(devs), outer_axes=outer_axes,
                                     name=f"pmap of {fname}")
            want = _spec_leaves(out_axes, tree_unflatten(out_tree, list(stacked)),
                                "out_axes")
            return tree_unflatten(out_tree, [o[0] if w is None else _from_front(o, w)
                                             for o, w in zip(stacked, want)])
        vals = [concrete_value(x) for x in leaves]
        comp = cache.get(key)
        if comp is None:
            comp = cache[key] = _on_device(
                devs[0], _compile, *_trace_replica(bound(st), in_tree, avals, name,
                                                   global_size, f"pmap of {fname}"), backend)
        outs = _run(comp, vals, dims, devs, name, world)
        want = _spec_leaves(out_axes, tree_unflatten(comp.out_tree, list(outs[0])),
                            "out_axes")
        results = []
        for i, (w, weak) in enumerate(zip(want, comp.out_weak)):
            per = [o[i] for o in outs]
            if w is None:
                results.append(Array(np.asarray(per[0]), weak))
            else:
                nd = per[0].ndim + 1
                results.append(Array(np.stack(per, axis=w % nd), weak))
        return tree_unflatten(comp.out_tree, results)

    mapped.__name__ = f"pmap_{fname}"
    mapped.__doc__ = getattr(fun, "__doc__", None)
    return mapped


def _trace_replica(fun, in_tree, avals, name, size: int, description: str):
    """The replica program of ``fun`` on per-replica ``avals`` (``name`` bound to
    ``size`` replicas, so collectives stage as primitives) and its output tree."""
    box: list = []

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        ol, otd = tree_flatten(out)
        box.append(otd)
        return ol

    with named_axes.bind_axis(name, size, None):
        closed, _ = trace_to_graph(flat, avals, description=description)
    return closed, box[-1]


def _compile(closed: ClosedGraph, out_tree, backend=None) -> _Compiled:
    from plait.backends import compile as backend_compile
    from plait.passes import optimize
    closed = optimize(closed)
    exe = backend_compile(closed, backend or config.resolved_backend())
    text = str(closed.graph)
    fp = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little", signed=True)
    return _Compiled(exe, out_tree, [a.weak_type for a in closed.out_avals], fp)


def _enclosing_pmaps() -> tuple:
    """The axis names of the pmaps whose replica program is being traced here."""
    return tuple(a for a in named_axes.bound_names() if named_axes.lookup(a).main is None)


def _runs_as_call(outer_axes: tuple) -> bool:
    """Whether a pmap called on tracers runs its replicas as a ``pmap_call``: every
    active transformation is differentiation, ``jit`` staging (the call becomes a host
    step of the compiled program) or an unnamed ``vmap`` (the batch rule batches the
    replica program) over eager evaluation. Under a named ``vmap`` (the replica program
    could name its axis) or lazy arrays it is a named vmap instead; nested in another
    pmap's replica program only within one process."""
    stack = _trace.cur_stack()
    if stack[0].trace_type.__name__ != "EvalTrace":
        return False
    if any(named_axes.lookup(a).main is not None for a in named_axes.bound_names()):
        return False
    allowed = _AUTODIFF_TRACES | {"BatchTrace"}
    if not outer_axes or runtime.world() is None:
        allowed = allowed | {"GraphTrace"}
    return all(m.trace_type.__name__ in allowed for m in stack[1:])


# the trace classes of jvp and of linearize's partial evaluation
# (plait.transforms, which this package may not import)
_AUTODIFF_TRACES = frozenset({"JVPTrace", "PartialEvalTrace"})


def _to_front(x, d: int):
    nd = get_aval(x).ndim
    return x if d == 0 else transpose(x, (d,) + tuple(i for i in range(nd) if i != d))


def _from_front(x, w: int):
    nd = get_aval(x).ndim
    w %= nd
    perm = list(range(1, nd))
    perm.insert(w, 0)
    return x if w == 0 else transpose(x, tuple(perm))


def _run_call(comp: _Compiled, vals, dims, devs, name, outer_axes) -> list:
    """Run a ``pmap_call``: on ``devs``, or, inside a replica (a nested pmap), on
    sub-devices of the replica's device, each inner replica also joining, for every
    enclosing axis, the group of replicas at its own inner position."""
    if _WORKER.device is None:
        return _run(comp, vals, dims, devs, name, runtime.world())
    n = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
    outer = {a: named_axes.replica_comm(a) for a in outer_axes}
    return _run(comp, vals, dims, _subdevices(_WORKER.device, n), name, None,
                lambda k: {a: c.split((name, k)) for a, c in outer.items()},
                _WORKER.path)


def _compile_graph(graph: Graph, device: CpuDevice) -> _Compiled:
    return _on_device(device, _compile, ClosedGraph(graph, []), None)


def _on_device(device: CpuDevice, fn, *args):
    """``fn(*args)`` on ``device``'s worker thread (pinned to its cores, so the
    kernels are compiled for that many cores), or here when already on a replica."""
    if _WORKER.device is not None:
        return fn(*args)
    return _pool(device, (device.id,)).submit(fn, *args).result()


pmap_call.Runner.compile = _compile_graph
pmap_call.Runner.run = _run_call


def _run(comp: _Compiled, vals, dims, devs, name, world, enclosing=None,
         path: tuple = ()) -> list:
    """One replica of ``comp`` per device, concurrently; ``enclosing(k)`` gives replica
    ``k``'s communicators of the enclosing pmaps' axes (nested pmap)."""
    n = len(devs)
    group = LocalGroup(n, float(config.collective_timeout))

    times: list = [None] * n

    def one(k: int):
        t0, c0 = time.perf_counter(), time.thread_time()
        local = comm = group.member(k)
        if world is not None:
            comm = world.replica_comm(local, comp.fingerprint)
        args = [v if d is None else np.take(v, k, axis=d) for v, d in zip(vals, dims)]
        try:
            comms = {} if enclosing is None else enclosing(k)
            with named_axes.replica_scope({**comms, name: comm}):
                out = comp.exe(*args)
        except BaseException:
            group.abort()
            raise
        waited = local.wait_s + getattr(comm, "mpi_wait_s", 0.0)
        times[k] = ReplicaTimes(devs[k], time.perf_counter() - t0, time.thread_time() - c0,
                                waited, omp_max_threads() or 1, threading.get_native_id())
        return out

    futures = [_pool(d, path + (d.id if not path else k,)).submit(one, k)
               for k, d in enumerate(devs)]
    outs, errors = [], []
    for f in futures:
        try:
            outs.append(f.result())
        except BaseException as e:       # noqa: BLE001  (re-raised below)
            errors.append(e)
    if errors:
        first = next((e for e in errors if not isinstance(e, DistributedError)), errors[0])
        raise first
    _LastRun.times = tuple(times)
    return outs
