"""Memory on the native backend: allocation failures raise MemoryError (never a crash),
``memory_analysis`` counts every temporary a kernel allocates, and the in-process
caches of compiled functions are bounded (least recently used entries are evicted)."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lazy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def native():
    from plait.codegen.toolchain import find_toolchain
    if find_toolchain() is None:
        pytest.skip("no C compiler: the native backend is unavailable")
    old = plait.config.backend
    plait.config.backend = "native"
    yield
    plait.config.backend = old


# Each case runs under a 2 GiB address-space limit in a child process (so the limit does
# not touch the test process) and prints "case|exception type|is MemoryError|message".
_UNDER_LIMIT = r'''
import resource, sys, numpy as np
import plait, plait.numpy as pnp
from plait import lazy
plait.config.backend = "native"
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

def report(case, fn):
    try:
        fn()
        print(f"{case}|none|0|no error", flush=True)
    except BaseException as e:
        msg = str(e).replace("\n", " ")
        print(f"{case}|{type(e).__name__}|{int(isinstance(e, MemoryError))}|{msg}", flush=True)

# the issue's reproducer: argmax's hidden 8-byte-per-element temporary (2 GiB)
report("argmax", lambda: plait.jit(pnp.argmax)(np.zeros(2**28, np.uint8)))
# per-row temporaries (1.1 GiB each) allocated inside an OpenMP parallel loop
report("parallel", lambda: plait.jit(lambda x: pnp.argmax(x, axis=1))(
    np.zeros((4, 2**27), np.uint8)))
# a loop rendered in C: its carries (2 x 512 MiB) next to a 512 MiB intermediate
def loop(x):
    y = x * 2.0
    return plait.lax.fori_loop(0, 3, lambda i, c: c + y, y)
report("loop", lambda: plait.jit(loop)(np.zeros(2**27, np.float32)))
# host-side buffers: a kernel's 1 GiB result, and NumPy's copy inside a host step (sort)
report("host-result", lambda: plait.jit(lambda x: x * 2.0)(np.zeros(2**27, np.float64)))
report("host-step", lambda: plait.jit(lambda x: pnp.sort(x) + 1.0)(np.zeros(2**27, np.float64)))
# the asynchronous path: the launch worker reports the failure to whoever waits
y = pnp.argmax(lazy.asarray(np.zeros(2**28, np.uint8)))
lazy.step()
report("launch", lambda: np.asarray(y))
report("launch-again", lambda: np.asarray(y))
w = y + 1            # reads the failed launch's output: must not come back as a number
report("launch-dependent", lambda: np.asarray(w))
# after all that, a small program still runs
report("small", lambda: print(int(plait.jit(pnp.argmax)(np.arange(10, dtype=np.uint8)))))
'''


def test_allocation_failures_raise_memory_error_not_a_crash(native):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _UNDER_LIMIT], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (
        f"child exited with {r.returncode}"
        + (f" ({signal.Signals(-r.returncode).name})" if r.returncode < 0 else "")
        + f"\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-3000:]}")
    rows = {}
    for line in r.stdout.splitlines():
        if line.count("|") >= 3:
            case, kind, is_mem, msg = line.split("|", 3)
            rows[case] = (kind, is_mem == "1", msg)
    for case in ("argmax", "parallel", "loop", "host-result", "host-step", "launch",
                 "launch-again", "launch-dependent"):
        kind, is_mem, msg = rows[case]
        assert kind == "PlaitMemoryError" and is_mem, (case, kind, msg)
        assert "could not be allocated" in msg and "memory limit" in msg, (case, msg)
    # the message names the kernel, what it computes and the size
    msg = rows["argmax"][2]
    assert "kernel k0 (argmax)" in msg and "2.0 GiB (2147483648 bytes)" in msg, msg
    assert "kernel k0 (argmax)" in rows["parallel"][2], rows["parallel"][2]
    assert "kernel k0 (argmax)" in rows["launch"][2], rows["launch"][2]
    assert ("the result buffer of kernel k0, shape (134217728,) float64, 1.0 GiB"
            in rows["host-result"][2]), rows["host-result"][2]
    assert "host step (_sort_impl)" in rows["host-step"][2], rows["host-step"][2]
    assert "computed from the outputs of an earlier asynchronous step that failed" in rows["launch-dependent"][2]
    assert rows["small"][0] == "none" and "9\n" in r.stdout


# --- memory_analysis counts every temporary ---------------------------------------------

def _threads() -> int:
    from plait.codegen.toolchain import find_toolchain
    if not find_toolchain().openmp:
        return 1
    n = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(n) if n.isdigit() and int(n) > 0 else len(os.sched_getaffinity(0))


def test_memory_analysis_counts_kernel_temporaries(native):
    # argmax = max, then select(x == max, n - i, 0), then max again: a u8 and an i64
    # accumulator plus an i64 temporary per element
    n = 5000
    exe = plait.jit(pnp.argmax).lower(np.zeros(n, np.uint8)).compile()
    assert exe.memory_analysis()["peak_temp_bytes"] == 1 + 8 * n + 8
    # along rows: the same per row, one set per thread of the parallel loop over rows
    # (the row's max is read broadcast from a (rows, 1) copy: one byte, not a row); rows
    # long enough for the partition's cost model to split them over the cores
    rows, n = 6, 400000
    f = plait.jit(lambda x: pnp.argmax(x, axis=1))
    exe = f.lower(np.zeros((rows, n), np.uint8)).compile()
    assert (exe.memory_analysis()["peak_temp_bytes"]
            == min(_threads(), rows) * (1 + 1 + 8 * n + 8))
    x = np.random.default_rng(0).integers(0, 255, (rows, n), dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(f(x)), np.argmax(x, axis=1))


def test_memory_analysis_counts_loop_carries_and_body_temporaries(native):
    # a scan rendered in C: one buffer for the carry (the add writes the new count over
    # the old, test_native_carry_in_place.py), plus the body's argmax temporary
    n = 3000

    def body(c, row):
        return c + pnp.argmax(row), None

    f = plait.jit(lambda xs: plait.lax.scan(body, np.int64(0), xs)[0])
    xs = np.random.default_rng(1).integers(0, 9, (5, n), dtype=np.uint8)
    exe = f.lower(xs).compile()
    text = exe.as_text("kernels")
    assert "native scan" in text, text
    body_kernel = 1 + 8 * n + 8          # as in the test above
    carries = 8
    # the body's driver holds argmax's i64 result (8 bytes) while the add kernel runs,
    # or fuses both into one kernel: the kernel temporaries dominate either way
    got = exe.memory_analysis()["peak_temp_bytes"]
    assert got in (carries + body_kernel, carries + body_kernel + 8), (got, text)
    assert int(f(xs)) == int(np.argmax(xs, axis=1).sum())


# --- bounded in-process caches ------------------------------------------------------------

@pytest.fixture
def cache_limit():
    old = plait.config.max_cache_entries
    plait.config.max_cache_entries = 3
    yield 3
    plait.config.max_cache_entries = old


def test_lru_cache_evicts_the_least_recently_used_entry():
    from plait.lru import LRUCache
    evicted = []
    c = LRUCache(limit=3, on_evict=lambda k, v: evicted.append((k, v)))
    for k in "abc":
        c[k] = k.upper()
    assert c.get("a") == "A"          # a is now the most recently used
    c["d"] = "D"
    assert evicted == [("b", "B")] and list(c) == ["c", "a", "d"]
    c.touch("c")
    c["e"] = "E"
    assert evicted[-1] == ("a", "A") and list(c) == ["d", "c", "e"] and len(c) == 3
    assert c.get("zz", 7) == 7 and "a" not in c


def test_jit_signature_cache_is_bounded_and_evicted_entries_recompile(native, cache_limit):
    from plait.runtime import metrics
    f = plait.jit(lambda x: x * 2 + 1)
    xs = {n: np.arange(n, dtype=np.float32) for n in (1, 2, 3, 4)}

    def call(n):
        before = metrics.get("traces"), metrics.get("compiles")
        np.testing.assert_array_equal(np.asarray(f(xs[n])), xs[n] * 2 + 1)
        return metrics.get("traces") - before[0], metrics.get("compiles") - before[1]

    assert [call(n) for n in (1, 2, 3)] == [(1, 1)] * 3
    assert call(1) == (0, 0)           # a hit (fast path) refreshes shape 1
    assert call(4) == (1, 1)           # evicts the least recently used: shape 2
    assert len(f._cache) == 3 and len(f._fast) <= 3
    assert call(1) == (0, 0) and call(3) == (0, 0) and call(4) == (0, 0)   # hits stay hits
    assert call(2) == (1, 1)           # evicted: traced and compiled again, correct values
    assert call(2) == (0, 0)
    # the keyword path (no fast path) keeps the same bound
    g = plait.jit(lambda x, s=1.0: x * s, static_argnames="s")
    for s in (1.0, 2.0, 3.0, 4.0, 5.0):
        np.testing.assert_array_equal(np.asarray(g(xs[2], s=s)), xs[2] * s)
    assert len(g._cache) == 3


def test_other_per_shape_caches_are_bounded(native, cache_limit):
    from plait.lazy import autodiff, cache as lazy_cache
    from plait.numpy import ufuncs
    from plait.stripe.passes import autotile
    for n in range(1, 8):
        x = np.ones(n, np.float32)
        pnp.add(x, x)                                   # eager: a ufunc plan per shape
        mm = plait.jit(lambda v: v @ v.T)(np.ones((n + 8, 64), np.float32))   # autotile results
        np.testing.assert_array_equal(np.asarray(mm), np.full((n + 8, n + 8), 64, np.float32))
        v = pnp.sin(lazy.asarray(x)) + 1.0              # a lazy trace per shape
        np.testing.assert_allclose(np.asarray(v), np.sin(x) + 1, rtol=1e-6)
        dv = plait.grad(lambda u: pnp.sum(pnp.sin(u)))(lazy.asarray(x))   # a backward graph
        np.testing.assert_allclose(np.asarray(dv), np.cos(x), rtol=1e-6)
    for c in (ufuncs._PLANS, autotile._CACHE, lazy_cache._HISTORY, autodiff._BACKWARD):
        assert 1 <= len(c) <= 3, c
