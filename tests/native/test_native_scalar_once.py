"""A computed scalar operand of a large elementwise expression is stored once per kernel
call, not recomputed at every element (Adam's bias correction ``1 - b ** (i + 1)``)."""
import numpy as np

import plait


def test_scalar_subexpression_is_its_own_statement():
    def f(m, v, i):
        mhat = m / (1 - 0.9 ** (i + 1))
        vhat = v / (1 - 0.999 ** (i + 1))
        return mhat / (plait.numpy.sqrt(vhat) + 1e-8)

    rng = np.random.default_rng(0)
    m = rng.standard_normal((64, 48)).astype(np.float32)
    v = rng.random((64, 48)).astype(np.float32)
    c = plait.jit(f, backend="native").lower(m, v, np.int32(4)).compile()
    tile = c.as_text("tile")
    scalars = {ln.split()[1].rstrip(":") for ln in tile.splitlines()
               if ln.strip().startswith("local") and ln.rstrip().endswith("[]")}
    powers = [ln.strip().split(" = ")[0] for ln in tile.splitlines() if "pow(" in ln]
    assert len(powers) == 2 and set(powers) <= scalars, tile   # each power once, a scalar
    for i in (0, 4, 1000):
        want = plait.jit(f, backend="interp")(m, v, np.int32(i))
        np.testing.assert_allclose(np.asarray(c(m, v, np.int32(i))), np.asarray(want), rtol=1e-6)
