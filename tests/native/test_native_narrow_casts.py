"""float -> narrow integer casts in generated C wrap as NumPy does on x86 (C leaves an
out-of-range conversion undefined, and GCC used that: a negative float cast to uint16
and read back in the same kernel stayed negative, so its log was NaN)."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp

X = np.array([-1.2572885751724243, -300.7, 70000.5, 3.9, -0.5, 1e9, -1e9, 255.9],
             np.float32)


@pytest.mark.parametrize("dt", ["int8", "int16", "uint8", "uint16", "uint32", "int32"])
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_cast_then_reuse_matches_numpy(dt, src):
    x = X.astype(src)
    f = plait.jit(lambda x: (pnp.astype(x, dt), pnp.astype(x, dt).astype(np.float64) + 1),
                  backend="native")
    v, w = f(x)
    want = x.astype(dt)
    np.testing.assert_array_equal(np.asarray(v), want)
    np.testing.assert_array_equal(np.asarray(w), want.astype(np.float64) + 1)


def test_fuzz_case_log_of_wrapped_uint16():
    x0 = np.array([-1.2572885751724243], dtype=np.float32)
    v1, v2 = plait.jit(lambda x: (pnp.astype(x, "uint16"), pnp.log(pnp.astype(x, "uint16"))),
                       backend="native")(x0)
    with np.errstate(all="ignore"):
        want = x0.astype("uint16")
    np.testing.assert_array_equal(np.asarray(v1), want)
    np.testing.assert_allclose(np.asarray(v2), np.log(want.astype(np.float32)), rtol=1e-6)
