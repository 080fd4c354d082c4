"""Lazy arrays on the native backend: the same traces, compiled to C (skipped without a
C compiler)."""
import numpy as np
import pytest

import plait
from plait import lazy

import lazy_mlp as M


@pytest.fixture
def native():
    from plait.codegen.toolchain import find_toolchain
    if find_toolchain() is None:
        pytest.skip("no C compiler: the native backend is unavailable")
    plait.config.backend = "native"


def test_mlp_steps_on_native_match_eager(native):
    steps = 4
    xs, ys = M.synthetic_data(steps)
    eager = [plait.device_put(p) for p in M.init_params()]
    lz = [lazy.asarray(p) for p in M.init_params()]
    for i in range(steps):
        le, eager = M.grad_train_step(eager, plait.device_put(xs[i]), plait.device_put(ys[i]))
        ll, lz = M.grad_train_step(lz, lazy.asarray(xs[i]), lazy.asarray(ys[i]))
        lazy.step()
        np.testing.assert_allclose(float(ll), float(le), rtol=1e-5)
    for a, b in zip(lz, eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    m = lazy.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == steps - 1


# --- asynchronous launches: a fully native trace runs on the worker thread -------------

def _train(steps, sync: bool):
    xs, ys = M.synthetic_data(steps)
    params = [lazy.asarray(p) for p in M.init_params()]
    losses, pending = [], []
    with lazy.synchronous(sync):
        for i in range(steps):
            loss, params = M.grad_train_step(params, lazy.asarray(xs[i]), lazy.asarray(ys[i]))
            lazy.step()
            pending.append(params[0]._ref.launch is not None)
            losses.append(loss)
    return [float(l) for l in losses], [np.asarray(p) for p in params], pending


def test_async_steps_match_synchronous_steps(native):
    from plait.backends.native import launch
    la, pa, pend_a = _train(6, sync=False)
    assert len(launch._IN_FLIGHT) <= launch.MAX_IN_FLIGHT
    ls, ps, pend_s = _train(6, sync=True)
    assert all(pend_a) and not any(pend_s)       # launched, and not, respectively
    np.testing.assert_allclose(la, ls, rtol=1e-5)
    for a, b in zip(pa, ps):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_launches_in_flight_are_bounded_and_observation_waits(native):
    from plait.backends.native import launch
    x = lazy.asarray(np.linspace(0, 1, 4096, dtype=np.float32))
    for _ in range(8):
        x = plait.numpy.sin(x) * 0.5 + 0.25
        lazy.step()
        assert len(launch._IN_FLIGHT) <= launch.MAX_IN_FLIGHT
    want = np.linspace(0, 1, 4096, dtype=np.float32)
    for _ in range(8):
        want = np.sin(want) * np.float32(0.5) + np.float32(0.25)
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-6)


def test_fork_with_a_launch_in_flight(native):
    import os
    x = lazy.asarray(np.arange(1 << 16, dtype=np.float32))
    y = plait.numpy.sqrt(x) + 1.0
    lazy.step()
    pid = os.fork()
    if pid == 0:                                 # the child: read, then run a new step
        code = 1
        try:
            z = y * 2.0
            lazy.step()
            ok = np.allclose(np.asarray(z), 2 * (np.sqrt(np.arange(1 << 16)) + 1), rtol=1e-6)
            code = 0 if ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    np.testing.assert_allclose(np.asarray(y), np.sqrt(np.arange(1 << 16)) + 1, rtol=1e-6)


def test_exit_with_launches_in_flight_is_clean(native, tmp_path):
    import subprocess
    import sys
    script = tmp_path / "exit_pending.py"
    script.write_text(
        "import numpy as np, plait\n"
        "from plait import lazy\n"
        "plait.config.backend = 'native'\n"
        "x = lazy.asarray(np.ones((512, 512), np.float32))\n"
        "for _ in range(4):\n"
        "    x = plait.numpy.tanh(x @ x) \n"
        "    lazy.step()\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


def test_a_host_step_trace_waits_for_launched_inputs(native):
    # the first trace is fully native (launched); the second has a host step (sort),
    # so it runs on the calling thread and must wait for the launched values it reads
    x0 = np.random.default_rng(3).standard_normal(50_000).astype(np.float32)
    y = plait.numpy.tanh(lazy.asarray(x0)) * 3.0
    lazy.step()
    assert y._ref.launch is not None
    z = plait.numpy.sort(y) * 2.0
    np.testing.assert_allclose(np.asarray(z), np.sort(np.tanh(x0) * 3.0) * 2.0, rtol=1e-6)
