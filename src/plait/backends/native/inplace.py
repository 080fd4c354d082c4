"""Which buffers a kernel may write over: loop carries' old values and dying operands.

A ``scan`` or ``while`` keeps two buffers per carry and alternates between them, so the
body reads the old value from one and writes the new value to the other. When the body
writes a carry's new value after its last read of the old one, the loop can pass one
buffer as both: half the memory, and the kernel updating a model's parameters and
optimizer state writes lines its reads just brought into the cache (with two buffers,
every store first fetches a line it will overwrite). :func:`carry_updates` checks the
order of the body's steps; a kernel that reads the old value where it writes the new
one must also show, on its optimized Stripe, that each element is read before it is
written, and only by the iteration writing it (``stripe.alias.pointwise_update``).
"""
from __future__ import annotations

from plait.backends.native.partition import HostStep, KernelStep
from plait.core.graph import Graph, Var


def _reads(step) -> set:
    atoms = step.inputs.values() if isinstance(step, KernelStep) else step.eqn.inputs
    return {a for a in atoms if isinstance(a, Var)}


def _writes(step) -> list:
    return list(step.outputs.values()) if isinstance(step, KernelStep) else list(step.eqn.outputs)


def carry_updates(graph: Graph, steps: list, carries: tuple) -> tuple[dict, dict]:
    """``(checks, updates)`` for the ``(input index, output index)`` pairs ``carries`` of
    ``graph`` run as the partitioned ``steps``.

    ``checks`` maps each output index that may be written over its input, as far as
    the steps' order shows, to None (no step reads the input where the output is
    written) or to ``(kernel name, output buffer)``, whose kernel must agree;
    ``updates`` maps those kernels' names to ``((input buffers, output buffer), ...)``
    for ``CProgram.kernel``. An output qualifies when a step writes it (not an input
    passed through), its input is not also an output, and no later step reads the
    input."""
    checks: dict = {}
    updates: dict = {}
    maker = {v: n for n, st in enumerate(steps) for v in _writes(st)}
    reads = [_reads(st) for st in steps]
    for ki, ko in carries:
        x, y = graph.invars[ki], graph.outvars[ko]
        if (not isinstance(y, Var) or y not in maker or graph.outvars.index(y) != ko
                or x in graph.outvars):
            continue
        w = maker[y]
        if any(x in r for r in reads[w + 1:]):
            continue
        st = steps[w]
        if x not in reads[w]:
            checks[ko] = None
        elif isinstance(st, KernelStep):
            out = next(b for b, v in st.outputs.items() if v is y)
            ins = tuple(sorted(b for b, a in st.inputs.items() if a is x))
            checks[ko] = (st.name, out)
            updates.setdefault(st.name, []).append((ins, out))
    return checks, {k: tuple(v) for k, v in updates.items()}


def buffer_reuses(graph: Graph, steps: list, outputs: bool) -> list:
    """``(maker, kernel, x, y, reads, write)`` for the partitioned ``steps`` of ``graph``:
    the step ``kernel`` may write ``y`` (its output buffer ``write``) into the buffer of
    its operand ``x`` (its input buffers ``reads``), which step ``maker`` makes, as far
    as the steps' order shows. ``CProgram.native_steps`` asks the kernel's Stripe about
    the pairs whose maker turned out native (a host step's result may be a view or
    read-only), and :func:`kept` keeps those it allowed.

    ``x`` qualifies when an earlier step makes it, the kernel is its last reader, it
    is neither an argument nor an output, and it has ``y``'s shape and dtype; each
    ``x`` serves one ``y``, and each ``y`` takes the first of its kernel's operands
    that qualifies. ``y`` is an intermediate, or with ``outputs`` also a graph output."""
    maker = {v: n for n, st in enumerate(steps) for v in _writes(st)}
    last: dict = {}
    for n, st in enumerate(steps):
        for v in _reads(st):
            last[v] = n
    outs = {v for v in graph.outvars if isinstance(v, Var)}
    fixed = set(graph.invars) | outs
    taken: set = set()
    pairs: list = []
    for w, st in enumerate(steps):
        if not isinstance(st, KernelStep):
            continue
        for ob, y in st.outputs.items():
            if y in graph.invars or (y in outs and not outputs):
                continue
            for x in dict.fromkeys(a for a in st.inputs.values() if isinstance(a, Var)):
                if (x in fixed or x in taken or maker.get(x, w) >= w or last.get(x) != w
                        or x.aval.shape != y.aval.shape or x.aval.dtype != y.aval.dtype):
                    continue
                ins = tuple(sorted(b for b, a in st.inputs.items() if a is x))
                pairs.append((maker[x], w, x, y, ins, ob))
                taken.add(x)
                break
    return pairs


def kept(pairs: list, steps: list, allowed: dict) -> dict:
    """``{y: x}`` of the ``pairs`` (:func:`buffer_reuses`) that hold once ``steps`` are
    rendered: ``x`` comes from native code and the kernel's Stripe allows the sharing
    (``allowed``, by kernel name)."""
    return {y: x for m, w, x, y, _, ob in pairs
            if not isinstance(steps[m], HostStep) and ob in allowed.get(steps[w].name, ())}
