"""Running programs under plait's engines and checking every node against NumPy.

Engines: ``eager`` (op by op on ``plait.Array``), ``interp``, ``native`` and ``xla``
(``jit`` with that backend). Jitted engines run a *batch*: many programs staged into one
function returning every node of every program, so one native compile serves
dozens of programs. A batch that raises is re-run program by program to find the
culprit.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

import plait
import plait.lax as lax
import plait.nn
import plait.numpy as pnp
from plait.fuzz import custom
from plait.fuzz.compare import check_node, quiet
from plait.fuzz.generate import eval_source, evaluate_numpy, reference_values
from plait.fuzz.known import Case, known_label
from plait.fuzz.ops import s_inputs
from plait.fuzz.tolerance import ULPS
from plait.fuzz.program import Node, Program

# the engines values mode runs by default (xla, which needs the xla extra, on request)
ENGINES = ("eager", "interp", "native")
# the names a generated program sees when it runs on plait (eager, interp, native)
RUN_NAMESPACE = {"pnp": pnp, "lax": lax, "np": np, "nn": plait.nn, "plait": plait, "fzc": custom}


@dataclasses.dataclass
class Failure:
    """One engine disagreeing with NumPy (or raising) at one node of one program."""
    engine: str
    node: int            # node index, -1 when the whole program failed to run
    op: str
    kind: str            # "value", "dtype", "shape" or "error:<ExceptionType>"
    message: str
    known: Optional[str] = None      # label of a known open defect (``known.py``)
    operands: Optional[list] = None  # the engine's operands of the failing node
    got: Optional[object] = None     # the engine's value of the failing node

    @property
    def signature(self) -> tuple:
        return (self.engine, self.op, self.kind)


def _run_nodes(program: Program, values: list) -> list:
    vals = list(values)
    for k in range(len(program.nodes)):
        env = dict(RUN_NAMESPACE)
        for i, v in enumerate(vals):
            env[program.name(i)] = v
        vals.append(eval_source(program.node_source(k, numpy=False), env))
    return vals[len(program.inputs):]


class NodeError(Exception):
    """An engine raised at node ``node``."""

    def __init__(self, node: int, exc: BaseException):
        super().__init__(f"node {node}: {type(exc).__name__}: {exc}")
        self.node, self.exc = node, exc


def run_eager(program: Program):
    """Node values computed op by op on plait arrays, or a :class:`NodeError`."""
    vals = [plait.device_put(x) for x in program.inputs]
    for k in range(len(program.nodes)):
        env = dict(RUN_NAMESPACE)
        for i, v in enumerate(vals):
            env[program.name(i)] = v
        try:
            vals.append(quiet(eval_source, program.node_source(k, numpy=False), env))
        except Exception as e:      # noqa: BLE001 - any exception is a finding
            return NodeError(k, e)
    return vals[len(program.inputs):]


def _batch_fn(programs: list):
    def fn(*flat):
        outs, off = [], 0
        for p in programs:
            n = len(p.inputs)
            outs.extend(_run_nodes(p, list(flat[off:off + n])))
            off += n
        return tuple(outs)
    return fn


def run_jit(programs: list, backend: str) -> list:
    """Per program: node values under ``jit(backend=...)``, or the exception it raised."""
    flat = [x for p in programs for x in p.inputs]
    try:
        outs = quiet(plait.jit(_batch_fn(programs), backend=backend), *flat)
    except Exception:               # noqa: BLE001 - isolate the program that raised
        if len(programs) == 1:
            raise
        results = []
        for p in programs:
            try:
                results.extend(run_jit([p], backend))
            except Exception as e:  # noqa: BLE001
                results.append(NodeError(-1, e))
        return results
    results, off = [], 0
    for p in programs:
        results.append(list(outs[off:off + len(p.nodes)]))
        off += len(p.nodes)
    return results


def run_engine(program: Program, engine: str):
    if engine == "eager":
        return run_eager(program)
    try:
        return run_jit([program], engine)[0]
    except Exception as e:          # noqa: BLE001
        return NodeError(-1, e)


def check_values(program: Program, engine: str, result) -> Optional[Failure]:
    """The first node where ``engine``'s ``result`` disagrees with NumPy, or ``None``."""
    if isinstance(result, NodeError):
        node = result.node
        op = program.nodes[node].op if node >= 0 else "program"
        return Failure(engine, node, op, f"error:{type(result.exc).__name__}", str(result.exc)[:300])
    n_in = len(program.inputs)
    vals = list(program.inputs) + [np.asarray(v) for v in result]
    for k, node in enumerate(program.nodes):
        operands = [vals[a] if isinstance(a, int) else a.value for a in node.args]
        try:
            want = evaluate_numpy(program, node, operands)
        except Exception:           # noqa: BLE001 - engine's operands differ in dtype/shape
            continue
        msg = check_node(node.spec, vals[n_in + k], want, operands, node.params)
        if msg is not None:
            kind = msg.split(" ", 1)[0] if msg.startswith(("dtype", "shape")) else "value"
            known = known_label(node.op, engine, _case(program, node, operands, want, vals[n_in + k])) \
                if kind == "value" else None
            return Failure(engine, k, node.op, kind, msg, known, operands, vals[n_in + k])
    return None


def _case(program: Program, node: Node, operands: list, want, got) -> Case:
    """The failing ``node`` as a known-difference predicate sees it."""
    want = np.asarray(want)
    return Case(operands, want, got,
                numpy=lambda ops: np.asarray(evaluate_numpy(program, node, ops)),
                agrees=lambda value: check_node(node.spec, got, value, operands, node.params) is None,
                params=dict(node.params), upstream=tuple(_upstream(program, a) for a in node.args))


def _upstream(program: Program, arg) -> frozenset:
    """The ops that ``arg`` (a node argument) was computed by, directly or further up."""
    n_in, ops, todo = len(program.inputs), set(), [arg]
    while todo:
        a = todo.pop()
        if isinstance(a, int) and a >= n_in:
            node = program.nodes[a - n_in]
            ops.add(node.op)
            todo.extend(node.args)
    return frozenset(ops)


def isolate(program: Program, failure: Failure) -> Program:
    """The failing node alone, its array operands made inputs holding the engine's values."""
    node = program.nodes[failure.node]
    inputs, args = [], []
    for a, v in zip(node.args, failure.operands):
        if isinstance(a, int):
            args.append(len(inputs))
            inputs.append(np.asarray(v))
        else:
            args.append(a)
    return Program(inputs, [Node(node.op, tuple(args), dict(node.params))])


def confirm(program: Program, failure: Failure) -> bool:
    """Whether a value failure stands when the node runs alone on the operands it saw.

    A fused native kernel may recompute an upstream node instead of reading the value
    it returned, and the recomputation may round differently (within that node's
    tolerance); an exact consumer (a comparison, a max) then disagrees with NumPy on
    the returned operands. Such a failure is not confirmed when the node alone is right
    on the returned operands and its value agrees with NumPy on NumPy's own operands.
    """
    if failure.kind != "value" or failure.engine != "native" or failure.operands is None:
        return True
    upstream = [a for a in program.nodes[failure.node].args
                if isinstance(a, int) and a >= len(program.inputs)]
    if not upstream:
        return True
    alone = isolate(program, failure)
    if check_values(alone, "native", run_engine(alone, "native")) is not None:
        return True
    # the node is right on its returned operands. A boolean or integer result (a flipped
    # comparison) cannot say more. A float result must then be right on NumPy's own chain
    # of values (an accurate recomputation), within the loosest tolerance on the way.
    node = program.nodes[failure.node]
    if np.asarray(failure.got).dtype.kind in "biu":
        return False
    ref = reference_values(program)
    operands = [ref[a] if isinstance(a, int) else a.value for a in node.args]
    want = evaluate_numpy(program, node, operands)
    tols = [node.spec.tol] + [program.nodes[a - len(program.inputs)].spec.tol for a in upstream]
    loosest = max(tols, key=lambda t: ULPS[t]["float64"])
    spec = dataclasses.replace(node.spec, tol=loosest, scale=s_inputs)
    return check_node(spec, failure.got, want, operands, node.params) is not None
