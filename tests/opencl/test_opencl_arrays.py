"""Device-resident results: an opencl jit returns arrays that stay on the device, feed
the next call without a transfer and come to the host only when asked; the device
list, device_put, and the config choosing the device."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.backends.opencl import device as cl_device  # noqa: E402
from plait.backends.opencl.array import OpenCLArray  # noqa: E402
from plait.config import config  # noqa: E402


def _moves(before: dict) -> dict:
    now = cl_device.opencl_device().transfers
    return {k: now[k] - before[k] for k in now}


def test_results_stay_on_the_device_between_calls():
    f = plait.jit(lambda a, b: pnp.tanh(a @ b) * 0.5 + b, backend="opencl")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 24, 24)).astype(np.float32)
    t = dict(cl_device.opencl_device().transfers)
    r = f(a, b)
    assert isinstance(r, OpenCLArray) and isinstance(r, plait.Array)
    assert r.shape == (24, 24) and r.dtype == np.float32 and r.ndim == 2
    assert r.on_device() and not r.on_host()
    assert _moves(t) == {"to_device": 2, "to_host": 0}      # the two arguments
    t = dict(cl_device.opencl_device().transfers)
    r2 = f(r, r).block_until_ready()                         # fed back: no copy at all
    r3 = f(r2, r)
    assert _moves(t) == {"to_device": 0, "to_host": 0}
    # the host asks: one download each, then kept
    want_r = np.tanh(a @ b) * 0.5 + b
    want_r2 = np.tanh(want_r @ want_r) * 0.5 + want_r
    np.testing.assert_allclose(np.asarray(r3), np.tanh(want_r2 @ want_r) * 0.5 + want_r,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(r), want_r, rtol=1e-5, atol=1e-5)
    assert _moves(t) == {"to_device": 0, "to_host": 2}
    str(r), float(r[0, 0]), np.asarray(r)
    assert _moves(t) == {"to_device": 0, "to_host": 2} and r.on_host()
    # a host value and a device value mixed: only the host one goes up
    t = dict(cl_device.opencl_device().transfers)
    np.testing.assert_allclose(np.asarray(f(r, b)), np.tanh(want_r @ b) * 0.5 + b,
                               rtol=1e-4, atol=1e-4)
    assert _moves(t) == {"to_device": 1, "to_host": 1}
    # eager ops and other backends see the host value
    np.testing.assert_allclose(np.asarray(r + 1.0), want_r + 1, rtol=1e-5, atol=1e-5)
    g = plait.jit(lambda x: x * 2.0, backend="interp")
    np.testing.assert_allclose(np.asarray(g(r2)), 2 * want_r2, rtol=1e-4, atol=1e-4)


def test_outputs_never_share_the_callers_memory():
    f = plait.jit(lambda a, b: (a, a * b), backend="opencl")
    a = np.arange(6.0, dtype=np.float32)
    x, y = f(a, a)
    a[:] = -1
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0))
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0) ** 2)


def test_devices_and_device_put():
    devs = plait.devices("opencl")
    assert devs and all(d.platform == "opencl" for d in devs)
    d = devs[0]
    assert d.kind in ("gpu", "cpu", "accelerator", "other") and d.name and d.platform_name
    assert repr(d).startswith("opencl:0")
    x = plait.device_put(np.arange(5, dtype=np.float32), d)
    assert isinstance(x, OpenCLArray) and x.device == d and x.devices() == {d}
    assert plait.device_put(x, d) is x
    # device_put of a pytree, then a jit call reads the buffers in place
    tree = plait.device_put({"w": np.ones((3, 3), np.float32), "v": np.ones(3, np.float32)}, d)
    f = plait.jit(lambda t: t["w"] @ t["v"], backend="opencl")
    f(tree)        # compile
    t = dict(cl_device.opencl_device().transfers)
    r = f(tree)
    assert _moves(t) == {"to_device": 0, "to_host": 0}
    np.testing.assert_allclose(np.asarray(r), np.full(3, 3.0))


def test_config_selects_the_device(monkeypatch):
    name = plait.devices("opencl")[0].name
    cl_device.clear_caches()
    try:
        monkeypatch.setattr(config, "opencl_device", name[:6])
        assert cl_device.opencl_device().device.name.strip() == name
        f = plait.jit(lambda x: x + 1.0, backend="opencl")
        assert f(np.zeros(3, np.float32)).device.name == name
    finally:
        monkeypatch.undo()
        cl_device.clear_caches()


def test_deleted_device_array_is_a_clear_error():
    x = plait.device_put(np.ones(4, np.float32), plait.devices("opencl")[0])
    x.delete()
    assert x.is_deleted() and not x.on_device()
    with pytest.raises(plait.errors.PlaitValueError, match="deleted"):
        np.asarray(x)


def test_float16_runs_on_the_host_and_says_why():
    f = plait.jit(lambda x, y: pnp.tanh(x * y) + x, backend="opencl")
    x = np.linspace(-1, 1, 9).astype(np.float16)
    got = f(x, x)
    want = plait.jit(lambda x, y: pnp.tanh(x * y) + x, backend="interp")(x, x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    text = f.lower(x, x).compile().executable.as_text("kernels").splitlines()
    assert text and all(line.startswith("host:") and "float16" in line and
                        "runs on the host" in line for line in text), text
