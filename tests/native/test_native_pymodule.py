"""The kernels' extension-module wrapper asks the buffer protocol for a writable buffer
exactly where the kernel writes, wherever that buffer stands in the kernel's C order:
a fused kernel's outputs may come before some of its inputs, and read-only arrays
(``np.asarray`` of another library's array, a memory-mapped file) are valid inputs."""
import numpy as np
import pytest

from plait.codegen.c_cpu import PRELUDE
from plait.codegen.c_pymodule import load_module, module_source
from plait.codegen.toolchain import build_shared_object, require_toolchain

# out[i] = a[i] + 2 * b[i] over 4 floats; buffer order: a (read), out (written), b (read)
_KERNEL = """
PLAIT_KERNEL int64_t k0(void **bufs) {
  const float *a = (const float *)bufs[0];
  float *out = (float *)bufs[1];
  const float *b = (const float *)bufs[2];
  for (int i = 0; i < 4; ++i) out[i] = a[i] + 2.0f * b[i];
  return 0;
}
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    tc = require_toolchain()
    if not tc.python_include:
        pytest.skip("Python's C headers are not installed, so plait runs kernels by ctypes")
    name = "plait_test_pymodule"
    src = PRELUDE + _KERNEL + "\n" + module_source(name, {"k0": "ioi"})
    out = str(tmp_path_factory.mktemp("pymodule") / "k.so")
    build_shared_object(src, out, tc)
    return load_module(name, out)


def _readonly(x):
    x = np.array(x, np.float32)
    x.flags.writeable = False
    return x


def test_read_only_inputs_around_an_output(module):
    a, b = _readonly([1, 2, 3, 4]), _readonly([10, 20, 30, 40])
    out = np.zeros(4, np.float32)
    assert module.k0([a, out, b]) == 0
    np.testing.assert_array_equal(out, np.asarray(a) + 2 * np.asarray(b))


def test_read_only_output_is_refused(module):
    a, b = _readonly([1, 2, 3, 4]), _readonly([10, 20, 30, 40])
    out = _readonly(np.zeros(4))
    with pytest.raises((ValueError, BufferError), match="read-only|writable"):
        module.k0([a, out, b])
    np.testing.assert_array_equal(np.asarray(out), 0)


def test_directions_other_than_i_and_o_are_rejected():
    with pytest.raises(ValueError, match="'i' or 'o'"):
        module_source("m", {"k0": "iw"})
