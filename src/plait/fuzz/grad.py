"""Gradient mode: ``grad`` of random smooth float64 programs against finite differences.

A program's loss is ``sum_k sum(w_k * v_k)`` over every node ``v_k`` with fixed random
weights, so every node's derivative is exercised. Checked per program:

* eager ``grad`` against central finite differences of the NumPy loss;
* ``jvp`` along a random tangent against ``<grad, tangent>`` (forward vs reverse;
  skipped for programs with a ``custom_vjp``, whose forward mode is an error by design);
* ``jit(grad)`` (a batch of programs, one native compile; ``interp`` on request)
  against eager ``grad``.

Inputs are kept away from kinks and poles by each op's ``smooth`` domain check
(``ops.py``), with margins far larger than the difference step.
"""
from __future__ import annotations

import time

import numpy as np

import plait
import plait.numpy as pnp
from plait.fuzz.compare import quiet
from plait.fuzz.generate import eval_source, random_program
from plait.fuzz.program import Program
from plait.fuzz.shrink import shrink
from plait.fuzz.engines import Failure
from plait.fuzz.known import known_grad_label
from plait.fuzz.values import Finding, Report

MAX_INPUT_ELEMENTS = 48


def _loss_source(program: Program, weights: list, numpy: bool):
    from plait.fuzz import oracles
    from plait.fuzz.engines import RUN_NAMESPACE
    ns = {"np": np, "fz": oracles} if numpy else dict(RUN_NAMESPACE)
    n_in = len(program.inputs)

    def loss(*xs):
        env = dict(ns)
        vals = list(xs)
        for k in range(len(program.nodes)):
            for i, v in enumerate(vals):
                env[program.name(i)] = v
            vals.append(eval_source(program.node_source(k, numpy), env))
        total = 0.0
        for w, v in zip(weights, vals[n_in:]):
            total = total + (np.sum(w * v) if numpy else pnp.sum(w * v))
        return total
    return loss


def _weights(program: Program, rng) -> list:
    from plait.fuzz.generate import reference_values
    ref = reference_values(program)[len(program.inputs):]
    return [rng.uniform(-1, 1, size=np.shape(v)) for v in ref]


def unit_weights(program: Program) -> list:
    """Weight 1 everywhere: the loss is the sum of every node (what reproducers print)."""
    from plait.fuzz.generate import reference_values
    return [np.ones(np.shape(v)) for v in reference_values(program)[len(program.inputs):]]


def finite_differences(loss_np, inputs: list, step: float = 1e-6) -> list:
    grads = []
    for i, x in enumerate(inputs):
        g = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            h = step * max(1.0, abs(float(x[idx])))
            hi = [a.copy() for a in inputs]
            lo = [a.copy() for a in inputs]
            hi[i][idx] += h
            lo[i][idx] -= h
            g[idx] = (quiet(loss_np, *hi) - quiet(loss_np, *lo)) / (2 * h)
        grads.append(g)
    return grads


def _close(got, want, scale) -> bool:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= 1e-5 * (np.abs(want) + scale)))


def check_grad(program: Program, weights: list, jit_grads=None) -> str | None:
    """A description of the first disagreement, or ``None``."""
    argnums = tuple(range(len(program.inputs)))
    loss_p = _loss_source(program, weights, numpy=False)
    loss_n = _loss_source(program, weights, numpy=True)
    try:
        g = quiet(plait.grad(loss_p, argnums=argnums), *program.inputs)
    except Exception as e:  # noqa: BLE001
        return f"grad raised {type(e).__name__}: {str(e)[:200]}"
    fd = finite_differences(loss_n, program.inputs)
    lval = abs(float(quiet(loss_n, *program.inputs)))
    scale = 1.0 + lval * 1e-3
    fine = None
    for i, (a, b) in enumerate(zip(g, fd)):
        if not _close(a, b, scale):
            # a stiff composition (tan of a large exp) can defeat the difference quotient:
            # trust it only if a 4x smaller step agrees with it, and compare plait with
            # their Richardson extrapolation, which cancels the quotient's h^2 error term
            # (tan(expm1(x)^3) at x = 2.0368 is 3035.79084; the quotient 3035.82120)
            fine = fine or finite_differences(loss_n, program.inputs, step=2.5e-7)
            extrapolated = (16 * fine[i] - b) / 15
            if _close(fine[i], b, scale) and not _close(a, extrapolated, scale):
                return (f"grad vs finite differences, input {i}: plait {np.asarray(a)!r}, "
                        f"FD {b!r} (extrapolated {extrapolated!r})")
    if not all(n.spec.forward for n in program.nodes):
        return _check_jit(g, jit_grads)
    tangent_rng = np.random.default_rng(7)
    t = [tangent_rng.uniform(-1, 1, size=x.shape) for x in program.inputs]
    try:
        _, dl = quiet(plait.jvp, loss_p, tuple(program.inputs), tuple(t))
    except Exception as e:  # noqa: BLE001
        return f"jvp raised {type(e).__name__}: {str(e)[:200]}"
    want = sum(float(np.sum(np.asarray(a) * b)) for a, b in zip(g, t))
    mag = sum(float(np.sum(np.abs(np.asarray(a) * b))) for a, b in zip(g, t))
    if abs(float(dl) - want) > 1e-8 * (1 + mag):
        return f"jvp {float(dl)!r} vs <grad, t> {want!r}"
    return _check_jit(g, jit_grads)


def _check_jit(g, jit_grads) -> str | None:
    if jit_grads is not None:
        for i, (a, b) in enumerate(zip(jit_grads, g)):
            if not _close(a, b, 1e-6):
                return f"jit(grad) vs eager grad, input {i}: jit {np.asarray(a)!r}, eager {np.asarray(b)!r}"
    return None


def _random_grad_program(rng):
    while True:
        p = random_program(rng, grad=True)
        if p.nodes and sum(x.size for x in p.inputs) <= MAX_INPUT_ELEMENTS:
            return p


def _jit_grads(items: list, backend: str = "native"):
    def fn(*flat):
        outs, off = [], 0
        for p, w in items:
            n = len(p.inputs)
            outs.append(plait.grad(_loss_source(p, w, numpy=False), argnums=tuple(range(n)))(*flat[off:off + n]))
            off += n
        return tuple(outs)
    flat = [x for p, _ in items for x in p.inputs]
    try:
        return list(quiet(plait.jit(fn, backend=backend), *flat))
    except Exception:  # noqa: BLE001 - one program breaks the batch: run them alone
        if len(items) == 1:
            return [None]
        return [_jit_grads([it], backend)[0] for it in items]


def run_grad(seed: int, programs: int, minutes: float, batch: int = 20, do_shrink: bool = True,
             log=None, backend: str = "native") -> Report:
    """``programs`` gradient programs (or until ``minutes`` pass); ``jit(grad)`` batches run
    on ``backend``."""
    rep = Report("grad")
    rng = np.random.default_rng(seed)
    t0 = time.monotonic()
    deadline = t0 + minutes * 60 if minutes else float("inf")
    while rep.programs < programs and time.monotonic() < deadline:
        items = []
        for _ in range(min(batch, programs - rep.programs)):
            p = _random_grad_program(rng)
            items.append((p, _weights(p, rng)))
        jg = _jit_grads(items, backend)
        for (p, w), g in zip(items, jg):
            msg = check_grad(p, w, jit_grads=g)
            if msg is None and g is None:
                msg = "jit(grad) raised"
            label = known_grad_label(p, msg) if msg is not None else None
            if label is not None:
                rep.known += 1
                rep.known_labels[label] = rep.known_labels.get(label, 0) + 1
            elif msg is not None:
                rep.mismatches += 1
                sig = ("grad", " ".join(sorted({n.op for n in p.nodes})), msg.split(",")[0][:40])
                if sig not in rep.findings:
                    def still(q, _kind=msg.split(":")[0].split(",")[0]):
                        try:
                            m = check_grad(q, unit_weights(q)) if q.nodes else None
                            return m is not None and m.startswith(_kind)
                        except Exception:  # noqa: BLE001
                            return False
                    small = shrink(p, still, max_calls=40, max_seconds=30) if do_shrink else p
                    rep.findings[sig] = Finding(Failure("grad", -1, sig[1], "grad", msg[:400]), small, len(p.nodes))
                else:
                    rep.findings[sig].count += 1
        rep.programs += len(items)
        rep.nodes += sum(len(p.nodes) for p, _ in items)
        rep.seconds = time.monotonic() - t0
        if log:
            log(f"grad: {rep.programs} programs, {rep.mismatches} mismatches, {rep.seconds:.0f} s")
    rep.seconds = time.monotonic() - t0
    return rep

