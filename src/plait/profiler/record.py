"""Recording a native executable's run while a trace is active: one event for the call,
one per kernel and host step (with the step's flops and bytes for the summary)."""
from __future__ import annotations

import weakref

import numpy as np

from plait.profiler import events

_COSTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def step_costs(exe) -> list[tuple[float, float]]:
    """``[(flops, bytes moved)]`` of each step of a native executable: flops from the
    cost rules of its equations (transcendentals counted as one), bytes of the buffers
    the fused step reads and writes."""
    got = _COSTS.get(exe)
    if got is not None:
        return got
    from plait.backends.native.cprogram import CallStep, step_buffers
    from plait.backends.native.partition import KernelStep
    from plait.core.graph import Var
    from plait.cost import eqns_cost
    out = []
    for st in exe.prepared.steps:
        c = eqns_cost(st.eqns if isinstance(st, KernelStep) else [st.eqn])
        seen, nbytes = set(), 0
        buffers = ([a for _, a in step_buffers(st, exe.prepared.stripe)]
                   if isinstance(st, (KernelStep, CallStep)) else st.eqn.inputs + st.eqn.outputs)
        for a in buffers:
            if isinstance(a, Var) and a not in seen:
                seen.add(a)
                nbytes += int(np.prod(a.aval.shape, dtype=np.int64)) * np.dtype(
                    a.aval.dtype).itemsize
        out.append((c["flops"] + c["transcendentals"], float(nbytes)))
    _COSTS[exe] = out
    return out


def run_recorded(exe, args) -> list:
    """Run ``exe`` on ``args``, recording the call and each of its steps."""
    stamps: list[tuple[float, float]] = []
    t0 = events.now()
    out = exe._run(args, stamps)
    t1 = events.now()
    fn = exe.closed.graph.name or "graph"
    events.complete(f"call {fn}", "call", t0, t1, {"steps": len(stamps)})
    for (name, what), (a, b), (flops, nbytes) in zip(exe._step_names(), stamps,
                                                      step_costs(exe)):
        host = name == "host"
        events.complete(f"host {what}" if host else name, "host" if host else "kernel", a, b,
                        {"function": fn, "computes": what, "flops": flops, "bytes": nbytes})
    return out
