"""``plait.profiler``: the trace file is Chrome trace-event JSON holding the events of a
known program (trace, compile phases, C compiler, calls, kernels, transfers, threads)."""
import json
import threading

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.cost import cost_analysis
from plait.profiler import events


def _check_trace_event_format(doc):
    """What the trace-event format requires of the JSON object form."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    for e in doc["traceEvents"]:
        assert isinstance(e["name"], str) and e["ph"] in ("X", "M")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
            assert e["dur"] >= 0 and isinstance(e["cat"], str)
        else:
            assert e["name"] == "thread_name" and isinstance(e["args"]["name"], str)
    # complete events of one thread nest properly (viewers stack them by containment)
    by_tid = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for spans in by_tid.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s, t, name in spans:
            while stack and stack[-1][1] <= s + 1e-3:
                stack.pop()
            if stack:
                assert t <= stack[-1][1] + 1e-3, f"{name} overlaps {stack[-1][2]}"
            stack.append((s, t, name))


def loss(w, x):
    return pnp.sum(pnp.tanh(x @ w) ** 2)


def test_trace_file_holds_the_events_of_a_known_program(tmp_path, capsys):
    old = plait.config.cache_dir
    plait.config.cache_dir = str(tmp_path / "cache")    # a cold cache: the C compiler runs
    try:
        w = np.linspace(-1, 1, 64 * 32).reshape(64, 32)
        x = np.linspace(0, 1, 16 * 64).reshape(16, 64)
        g = plait.jit(plait.grad(loss))
        with plait.profiler.trace(str(tmp_path / "tr")) as t:
            for _ in range(3):
                out = g(w, x)
            plait.device_put(w)
            worker = threading.Thread(target=lambda: g(w, x), name="second-thread")
            worker.start()
            worker.join()
    finally:
        plait.config.cache_dir = old
    assert not events.ACTIVE
    np.testing.assert_allclose(np.asarray(out), plait.jit(plait.grad(loss), backend="interp")(w, x),
                               rtol=1e-10)
    with open(t.path) as f:
        doc = json.load(f)
    _check_trace_event_format(doc)
    evs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = [e["name"] for e in evs]
    cats = {e["cat"] for e in evs}
    assert {"trace", "compile", "stripe-pass", "call", "kernel", "transfer"} <= cats
    assert sum(n.startswith("trace grad") for n in names) == 1
    assert names.count("compile grad(loss) (native)") == 1
    assert names.count("C compiler") == 1 and "graph passes" in names
    assert "pass autotile" in names and "device_put" in names
    calls = [e for e in evs if e["cat"] == "call"]
    assert len(calls) == 4
    kernels = [e for e in evs if e["cat"] == "kernel"]
    exe = g.lower(w, x).compile().executable
    n_kernels = exe.kernel_count()
    assert n_kernels >= 1 and len(kernels) == 4 * n_kernels
    # every kernel runs inside its call, and the flops are the cost rules' count
    for k in kernels:
        assert any(c["ts"] - 1e-3 <= k["ts"] and k["ts"] + k["dur"] <= c["ts"] + c["dur"] + 1e-3
                   for c in calls)
    flops = sum(k["args"]["flops"] for k in kernels[:n_kernels])
    want = cost_analysis(exe.prepared.closed)
    assert flops == want["flops"] + want["transcendentals"]
    # threads: the call from the second thread is recorded on its own, named thread
    names_by_tid = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert "second-thread" in names_by_tid.values()
    second = [tid for tid, n in names_by_tid.items() if n == "second-thread"][0]
    assert [e["cat"] for e in evs if e["tid"] == second].count("call") == 1
    # the summary: the kernel, its calls and the rates computed from the events
    text = plait.profiler.summary(top=5)
    assert "grad(loss)/k0" in text and "GFLOP/s" in text and "GB/s" in text
    row = next(line for line in text.splitlines() if line.startswith("grad(loss)/k0"))
    calls_k0 = [k for k in kernels if k["name"] == "k0"]
    secs = sum(k["dur"] for k in calls_k0) * 1e-6
    assert int(row.split()[1]) == len(calls_k0)
    assert float(row.split()[4]) == pytest.approx(
        sum(k["args"]["flops"] for k in calls_k0) / secs / 1e9, rel=0.01, abs=0.01)
    assert plait.profiler.summary(t.path, print_=False) == text   # from the file too
    capsys.readouterr()


def test_off_records_nothing_and_misuse_is_an_error(tmp_path):
    events.start()
    events.stop()
    f = plait.jit(lambda x: pnp.sin(x) + 1.0)
    f(np.ones(3))
    assert events.stop() == []               # nothing recorded while off
    with pytest.raises(plait.errors.PlaitValueError, match="no plait.profiler trace"):
        plait.profiler.stop_trace()
    with plait.profiler.trace(str(tmp_path)):
        with pytest.raises(plait.errors.PlaitValueError, match="already running"):
            plait.profiler.start_trace(str(tmp_path))


def test_lazy_arrays_show_their_cut_launch_and_wait(tmp_path):
    from plait import lazy
    x = lazy.asarray(np.linspace(0, 1, 16 * 16).reshape(16, 16))
    with plait.profiler.trace(str(tmp_path)) as t:
        for _ in range(2):
            y = pnp.tanh(x @ x) * 2.0
            got = np.asarray(lazy.to_host(y))
    xs = np.linspace(0, 1, 16 * 16).reshape(16, 16)
    np.testing.assert_allclose(got, np.tanh(xs @ xs) * 2.0, rtol=1e-12)
    with open(t.path) as f:
        doc = json.load(f)
    _check_trace_event_format(doc)
    names = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X"]
    assert names.count("lazy: cut trace") == 2
    launched = [n for n in names if n.startswith("launch lazy_trace")]
    ran = [n for n in names if n.startswith("call lazy_trace")]
    assert len(launched) + len(ran) == 2            # launched, or run when synchronous
    assert not launched or "wait for launch" in names
