"""The fuzzer's fixed-seed CI slice: values, gradients and threads.

Each test fails on anything new (not in ``plait/fuzz/known.py``) and prints the
shrunk reproducers as runnable Python. A longer campaign: ``python -m plait.fuzz
--minutes 20``.
"""
from __future__ import annotations

import pytest

from plait.fuzz.grad import run_grad
from plait.fuzz.supervise import run_child
from plait.fuzz.values import run_values


def test_values_slice():
    """~300 random programs (about 1,100 nodes) in eager, interp and native vs NumPy."""
    rep = run_values(seed=2026, programs=320, minutes=0, batch=40)
    assert rep.programs >= 300
    assert rep.mismatches == 0 and rep.crashes == 0, rep.summary()


def test_xla_values_slice():
    """~320 random programs (about 1,100 nodes) on the xla backend vs NumPy (~10 s).
    XLA:CPU's own behaviour (jax.jit's too: subnormals flushed, a few simplifier
    rewrites, its complex formulas) is known (``known.py``), counted apart; anything
    else fails."""
    pytest.importorskip("jaxlib")
    rep = run_values(seed=2026, programs=320, minutes=0, batch=40, engines=("xla",))
    assert rep.programs == 320
    assert rep.mismatches == 0 and rep.crashes == 0, rep.summary()


def test_grad_slice():
    """Random smooth programs: grad vs finite differences, jvp vs vjp, jit(grad) vs grad."""
    rep = run_grad(seed=2026, programs=80, minutes=0, batch=20)
    assert rep.programs == 80
    assert rep.mismatches == 0 and rep.crashes == 0, rep.summary()


def test_threads_slice():
    """Four threads tracing and running eagerly at once, beside a long trace (issue 21.2).

    In a child process: a race may leave the tracing state of the process broken."""
    rep, code, err = run_child("threads", seed=2026, programs=24, minutes=1.0)
    assert rep is not None, f"threads child exited {code}: {err}"
    assert rep.programs == 24 * 4 * 3          # 24 programs, 4 threads, 3 rounds each
    assert not rep.notes, rep.summary()
