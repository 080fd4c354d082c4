"""The xla backend's per-call path: host arrays of every layout and dtype cross in and
come back with NumPy's values, results fed back stay on the device, and a call never
asks for jax (jaxlib's generic DLPack import and execute look jax up on every call:
an import attempt that costs tens of microseconds where only jaxlib is installed)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402


def test_layouts_and_dtypes_cross_in_and_out():
    """Strided, Fortran-ordered, read-only, 0-d and empty arguments of several dtypes,
    against NumPy; each case is one jitted function compiled once."""
    f = plait.jit(lambda a, b: (a * 2, b), backend="xla")
    ro = np.arange(6.0).reshape(2, 3)
    ro.flags.writeable = False
    cases = [np.arange(6.0).reshape(2, 3), np.arange(12).reshape(3, 4).T,
             np.asfortranarray(np.arange(12.0, dtype=np.float32).reshape(3, 4)), ro,
             np.array(2.5), np.arange(10, dtype=np.int8)[::2],
             np.arange(4) * (1 + 1j), np.zeros((0, 3), np.float32)]
    for x in cases:
        a, b = f(x, x > 1)
        assert np.asarray(a).dtype == x.dtype and np.asarray(a).shape == x.shape
        np.testing.assert_array_equal(np.asarray(a), x * 2)
        np.testing.assert_array_equal(np.asarray(b), x > 1)


def test_passthrough_output_does_not_alias_a_mutated_argument():
    """An output that is an argument (zero-copy in) is not a view of the caller's array."""
    f = plait.jit(lambda a, b: (a, b + 1), backend="xla")
    x = np.arange(4.0)
    a, _ = f(x, x)
    x[0] = 100.0
    np.testing.assert_array_equal(np.asarray(a), np.arange(4.0))


_NO_JAX = """
import sys
attempts = []
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith("jax."):
            attempts.append(name)
            raise ImportError("jax is not installed here")
sys.meta_path.insert(0, Block())
import numpy as np, plait
f = plait.jit(lambda x: x + 1, backend="xla")
x = np.arange(4, dtype=np.float32)
y = f(x)
before = len(attempts)
for _ in range(5):
    y = f(f(x))
np.testing.assert_array_equal(np.asarray(y), x + 2)
print(before, len(attempts) - before)
"""


def test_calls_never_look_for_jax():
    """With jax unimportable (as in CI), neither the first call nor later ones ask for it."""
    src = os.path.dirname(os.path.dirname(plait.__file__))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _NO_JAX], check=True, env=env,
                         capture_output=True, text=True).stdout.split()
    assert out == ["0", "0"], f"jax import attempts (first call, later calls): {out}"


def test_the_first_call_writes_nothing_to_stderr():
    """XLA's C++ INFO log lines (the client's device count) stay off the user's stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(plait.__file__))
    code = ("import numpy as np, plait; "
            "print(plait.jit(lambda x: x + 1, backend='xla')(np.ones(3)).sum())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["6.0"], out.stderr[-2000:]
    assert out.stderr == "", out.stderr[-2000:]


def test_devices_lists_pjrt_and_names_the_missing_plugin():
    """``devices("cpu")`` is the host; the CPU client reports it too. Here no GPU or
    TPU plugin is installed: the error names the package to install."""
    from plait.backends.xla import pjrt
    assert [d.platform for d in plait.devices("cpu")] == ["cpu"]
    assert len(pjrt.platform_devices("cpu")) == len(plait.devices("cpu"))
    for platform, package in (("gpu", "jax-cuda12-plugin"), ("tpu", "libtpu")):
        if pjrt._plugin_library(*pjrt._PLUGINS[platform][0][1:3]) is not None:
            continue                       # a machine with the plugin: nothing to check
        with pytest.raises(plait.errors.XlaUnavailableError, match=package):
            plait.devices(platform)
    with pytest.raises(plait.errors.PlaitValueError, match="'gpu'"):
        plait.devices("xpu")


def test_results_stay_on_the_device_until_asked():
    """A jitted call's outputs are XlaArrays: their shape and dtype need no transfer,
    fed back they pass the device buffer, and the host value (the interp backend's)
    is made when asked for."""
    from plait.backends.xla.array import XlaArray
    f = plait.jit(lambda x: x * 2 + 1, backend="xla")
    ref = plait.jit(lambda x: x * 2 + 1, backend="interp")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = f(x)
    assert type(y) is XlaArray and (y.shape, y.dtype) == ((2, 3), np.float32)
    z = f(y)
    assert not y.on_host() and not z.on_host()
    np.testing.assert_array_equal(np.asarray(z), np.asarray(ref(ref(x))))
    assert z.on_host() and not np.asarray(z).flags.writeable
    assert float(f(np.array(2.0, np.float32)).block_until_ready()) == 5.0


def test_a_host_argument_may_be_written_after_the_call():
    """XLA runs a large program after the call returns and reads a host argument in
    place: the call waits for its outputs, so writing to the argument afterwards does
    not change the result (jax.jit's result reads the new values)."""
    f = plait.jit(lambda a: (a @ a).sum(), backend="xla")
    a = np.full((600, 600), 0.5, np.float32)
    f(a)
    for dtype in (np.float32, np.float64):      # the C++ dispatcher, then the Python path
        b = np.full((600, 600), 0.5, dtype)
        r = f(b)
        b[:] = 0
        np.testing.assert_allclose(float(r), 600 * 600 * 600 * 0.25, rtol=1e-6)


_X64 = """
import sys
import numpy as np, plait
from plait.backends.xla.array import XlaArray
use_jax = sys.argv[1] == "jax"
x64s = (True, False)
checked = 0
def check(tag):
    global checked
    for x64 in x64s:
        plait.config.update("x64", x64)
        f = plait.jit(lambda x: x * 3 + 1, backend="xla")
        ref = plait.jit(lambda x: x * 3 + 1, backend="interp")
        for dt in (np.float32, np.float64, np.int32, np.int64, np.uint64, np.complex128,
                   np.float16, np.int8, np.bool_):
            x = (np.arange(5) * 7).astype(dt)
            f(x)                            # the second call takes the C++ path
            y, want = f(x), ref(x)
            assert type(y) is XlaArray, (tag, x64, dt)
            assert y.dtype == np.asarray(want).dtype == np.asarray(y).dtype, (tag, x64, dt, y.dtype)
            np.testing.assert_array_equal(np.asarray(y), np.asarray(want))
            assert np.asarray(f(y)).dtype == y.dtype
            checked += 1
    plait.config.update("x64", True)
check("first")                  # plait installed the dispatcher's settings
if use_jax:
    import jax                  # jax replaces them with its own
    check("jax imported")
    jax.config.update("jax_enable_x64", True)
    check("jax x64 on")
    jax.config.update("jax_enable_x64", False)
    check("jax x64 off again")
    with jax.disable_jit():
        check("jax disable_jit")
print(checked)
"""


@pytest.mark.parametrize("peer", ["jaxlib", "jax"])
def test_dtypes_with_x64_on_and_off(peer):
    """jaxlib's C++ dispatcher (float32 and narrower signatures) narrows 64-bit host
    arrays when jax's x64 flag is off: after a float32 call, 64-bit arguments of every
    kind still run their own program, with plait's x64 on and off, under each of jax's
    settings; values and dtypes as the interp backend's."""
    if peer == "jax":
        pytest.importorskip("jax")
    src = os.path.dirname(os.path.dirname(plait.__file__))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _X64, peer], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.split()[-1]) == 18 * (5 if peer == "jax" else 1)


def test_only_narrow_signatures_take_the_cpp_dispatcher():
    """The C++ dispatcher is built for signatures without a 64-bit input; given a
    Python value or another dtype, such a signature's executable converts it in
    Python (the values are NumPy's)."""
    f = plait.jit(lambda x, y: x + y, backend="xla")
    x32, s32 = np.arange(4, dtype=np.float32), np.array(0.5, np.float32)
    f(x32, s32)
    f(np.arange(4.0), np.array(0.5))
    exes = {k[0][1]: e.executable for k, e in f._fast.items()}
    assert exes[np.dtype(np.float32)]._dispatch is not None
    assert exes[np.dtype(np.float64)]._dispatch is None
    exe = exes[np.dtype(np.float32)]
    for a, b in ((x32, 2.5), (np.arange(4.0) + 0.1, s32), ([1, 2, 3, 4], 7),
                 (x32[::-1].astype(">f4"), np.float64(0.25))):
        got = np.asarray(exe(a, b)[0])
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.asarray(a, np.float32) + np.float32(b))
