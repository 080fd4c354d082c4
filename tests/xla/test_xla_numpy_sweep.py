"""The plait.numpy op table under jit on the xla backend, against NumPy.

Cases are compiled in chunks (one jitted function per chunk, so one XLA compile),
each output checked with the table's own tolerance class and exact dtypes.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
from op_table import OPS  # noqa: E402
from test_np_op_sweep import _materialize, _reference, check_close  # noqa: E402

CHUNK = 300
# complex64 sums whose table tolerance is exact: XLA reassociates the reduction, so the
# last bit can differ from NumPy's pairwise order (seen: 1 ulp); compared to 2 ulp here
_REASSOCIATED = {"trace1", "m_trace"}


def _cases():
    out = []
    for op in OPS:
        if not op.jit:
            continue
        for i, case in enumerate(op.cases):
            args = _materialize(op, i, case)
            try:
                want = _reference(op, args, case.kwargs)
            except (TypeError, ValueError):
                continue
            out.append((op, case, args, want))
    return out


_ALL = _cases()


@pytest.mark.parametrize("start", range(0, len(_ALL), CHUNK))
def test_numpy_table_on_xla(start):
    chunk = _ALL[start:start + CHUNK]
    pos = [[k for k, a in enumerate(args) if isinstance(a, np.ndarray)] for _, _, args, _ in chunk]

    def f(*flat):
        outs, n = [], 0
        for (op, case, args, _), p in zip(chunk, pos):
            full = list(args)
            for k in p:
                full[k] = flat[n]
                n += 1
            outs.append(op.fn(*full, **case.kwargs))
        return outs

    flat = [args[k] for (_, _, args, _), p in zip(chunk, pos) for k in p]
    got = plait.jit(f, backend="xla")(*flat)
    bad = []
    for (op, _, _, want), g in zip(chunk, got):
        try:
            if op.name in _REASSOCIATED:
                np.testing.assert_allclose(g, want, rtol=2 * np.finfo(np.float32).eps,
                                           err_msg=f"{op.name} xla")
                assert np.asarray(g).dtype == np.asarray(want).dtype, op.name
            else:
                check_close(g, want, op.tol, f"{op.name} xla")
        except AssertionError as e:
            bad.append(str(e)[:300])
    assert not bad, "\n".join(bad)
