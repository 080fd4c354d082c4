"""Everything the explorer page shows, gathered from the native pipeline: the graph's
equations (nodes) with the step that runs each, the kernel partition, each kernel's
Tile, its Stripe program after every pass with a diff against the one before, the
generated C with each kernel's line range, and a profile of one run."""
from __future__ import annotations

import difflib
import re

from plait.backends.native.compile import Prepared
from plait.backends.native.cprogram import CallStep
from plait.backends.native.partition import KernelStep
from plait.core.graph import ClosedGraph, Literal
from plait.core.printer import pp_graph


def _eqn_lines(closed: ClosedGraph) -> list[str] | None:
    """The printed line of each top-level equation (None when sub-graphs make the text
    ambiguous)."""
    lines = [ln[2:] for ln in pp_graph(closed).splitlines()[1:]
             if re.match(r"^  [^ ].* = ", ln)]
    return lines if len(lines) == len(closed.graph.eqns) else None


def _nodes_and_steps(prep: Prepared) -> tuple[list[dict], list[dict]]:
    g = prep.closed.graph
    step_of: dict[int, str] = {}
    steps = []
    host_n = 0
    for st in prep.steps:
        if isinstance(st, KernelStep):
            name, kind, eqns = st.name, "kernel", st.eqns
        elif isinstance(st, CallStep):
            name, kind, eqns = st.name, "call", [st.eqn]
        else:
            name, kind, eqns = f"host{host_n}", "host", [st.eqn]
            host_n += 1
        for e in eqns:
            step_of[id(e)] = name
        steps.append({"id": name, "kind": kind, "label": f"{name} ({kind})" if kind != "kernel"
                      else name, "prims": [e.prim.name for e in eqns]})
    texts = _eqn_lines(prep.closed)
    blocks = _eqn_blocks(prep)
    made_by: dict = {}
    nodes = []
    clusters = list(steps)
    if g.invars or g.constvars:
        clusters.insert(0, {"id": "inputs", "kind": "inputs", "label": "inputs", "prims": []})
    for k, v in enumerate(g.constvars + g.invars):
        nid = f"in{k}"
        made_by[v] = nid
        nodes.append({"id": nid, "cluster": "inputs", "prim": "input", "inputs": [],
                      "label": f"{'const' if k < len(g.constvars) else 'arg'} "
                               f"{v.aval.str_short()}",
                      "text": f"{'constant' if k < len(g.constvars) else 'argument'} "
                              f"{v.aval.str_short()}"})
    for n, e in enumerate(g.eqns):
        nid = f"e{n}"
        ins = [made_by[a] for a in e.inputs if not isinstance(a, Literal) and a in made_by]
        for o in e.outputs:
            made_by[o] = nid
        step = step_of.get(id(e))
        if step is None:                        # not run by any step: shown apart
            step = "unscheduled"
            if not any(c["id"] == step for c in clusters):
                clusters.append({"id": step, "kind": "host", "label": "not run", "prims": []})
        outs = ", ".join(o.aval.str_short() for o in e.outputs)
        holder, block = blocks.get(id(e), (None, None))
        nodes.append({"id": nid, "cluster": step, "prim": e.prim.name, "inputs": ins,
                      "label": e.prim.name, "stripe_kernel": holder, "block": block,
                      "text": texts[n] if texts else f"{e.prim.name} -> {outs}"})
    return nodes, clusters


def _eqn_blocks(prep: Prepared) -> dict[int, tuple[str, str]]:
    """``{id(eqn): (kernel holding the Stripe, top-level Stripe block computing it)}``.

    Tile statement ``n`` lowers to Stripe blocks named ``kernel_n`` (fused ones join the
    names with ``+``); an equation is computed by the first statement emitted once it was
    added (an elementwise one is materialized by the statement that consumes it)."""
    out: dict[int, tuple[str, str]] = {}
    owner: dict[int, str] = {}
    for st in prep.steps:
        if not isinstance(st, KernelStep):
            continue
        after = prep.stripe[st.name][1]
        holder = owner.setdefault(id(after), st.name)
        blocks = [b.name for b in after.entry.stmts if hasattr(b, "idxs")]
        n_stmts = len(st.program.stmts)
        ends = list(getattr(st, "stmt_ends", []))
        for j, e in enumerate(st.eqns):
            if j >= len(ends) or not n_stmts:
                break
            stmt = min(ends[j - 1] if j else 0, n_stmts - 1)
            pat = re.compile(rf"(^|\+)kernel_{stmt}(\+|$)")
            name = next((b for b in blocks if pat.search(b)), None)
            if name is not None:
                out[id(e)] = (holder, name)
    return out


def _c_ranges(source: str, names: list[str]) -> dict[str, tuple[int, int]]:
    """1-based line ranges of each named C function in ``source``."""
    lines = source.splitlines()
    out = {}
    for name in names:
        pat = re.compile(rf"^(PLAIT_KERNEL(_WIDE)? )?int64_t {re.escape(name)}\(")
        for i, ln in enumerate(lines):
            if pat.match(ln):
                end = i
                if not ln.rstrip().endswith("}"):
                    while end + 1 < len(lines) and lines[end] != "}":
                        end += 1
                out[name] = (i + 1, end + 1)
                break
    return out


def _stripe_passes(before, target) -> list[dict]:
    """Stripe text after each pass of ``target``, with a diff against the one before."""
    from plait.stripe import to_text
    from plait.stripe.passes import PASSES
    prog, text = before, to_text(before)
    out = [{"name": "lowered", "text": text, "diff": "", "changed": True}]
    for name, params in target.passes:
        prog = PASSES[name](prog, target, **dict(params))
        new = to_text(prog)
        diff = "\n".join(difflib.unified_diff(text.splitlines(), new.splitlines(),
                                              "before", f"after {name}", lineterm="", n=1))
        out.append({"name": name, "text": new, "diff": diff, "changed": new != text})
        text = new
    return out


def collect(closed: ClosedGraph, args: list, profile: bool = True) -> dict:
    """The page's data for ``closed`` run on ``args``."""
    from plait.backends.native.target import host_target
    from plait.tile.printer import format_program
    prep = Prepared(closed)
    nodes, clusters = _nodes_and_steps(prep)
    target = host_target()
    kernels = []
    seen_stripe: dict = {}
    for st in prep.steps:
        if not isinstance(st, KernelStep):
            continue
        before, after = prep.stripe[st.name]
        same = seen_stripe.get(id(after))
        seen_stripe.setdefault(id(after), st.name)
        kernels.append({"name": st.name, "prims": [e.prim.name for e in st.eqns],
                        "tile": format_program(st.program), "same_as": same,
                        "passes": [] if same else _stripe_passes(before, target)})
    final = {k["name"]: k["passes"][-1]["text"].splitlines() for k in kernels if k["passes"]}
    for n in nodes:                    # the line of the final Stripe text opening the block
        text = final.get(n.get("stripe_kernel") or "", [])
        n["stripe_line"] = next((i for i, ln in enumerate(text, start=1)
                                 if ln.rstrip().endswith(f"( // {n['block']}")), None) \
            if n.get("block") else None
    names = [s["id"] for s in clusters if s["kind"] in ("kernel", "call")]
    lines = prep.source.splitlines()
    ranges = _c_ranges(prep.source, names)
    for n in nodes:                    # the C line where the node's Stripe block begins
        r = ranges.get(n.get("stripe_kernel") or "")
        n["c_line"] = next((i for i in range(r[0], r[1] + 1)
                            if lines[i - 1].strip().startswith(f"/* {n['block']}:")),
                           None) if r and n.get("block") else None
    data = {"name": closed.graph.name or "graph", "graph": pp_graph(prep.closed),
            "kernels_text": prep.as_text("kernels"), "nodes": nodes, "clusters": clusters,
            "kernels": kernels, "c": prep.source, "c_ranges": ranges,
            "profile": None, "profile_note": ""}
    if profile:
        data["profile"], data["profile_note"] = _profile(closed, args)
    return data


def _profile(closed: ClosedGraph, args: list) -> tuple[list | None, str]:
    """Best-of-5 seconds of every step of one compiled run (None and why, when it cannot
    be compiled here)."""
    from plait.backends.native.compile import compile_native
    from plait.errors import CompileError
    try:
        exe = compile_native(closed)
    except CompileError as e:
        return None, f"not profiled: {str(e).splitlines()[0]}"
    rows = exe.profile(*args, repeat=5)
    named, host_n = [], 0
    for name, what, t in rows:
        if name == "host":
            name, host_n = f"host{host_n}", host_n + 1
        named.append({"step": name, "computes": what, "seconds": t})
    return named, "best of 5 runs, each step timed on its own"
