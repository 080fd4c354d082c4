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
