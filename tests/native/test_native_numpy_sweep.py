"""The plait.numpy op table under jit on the native backend, against NumPy.

Cases are compiled in chunks (one jitted function per chunk, so one C compile),
each output checked with the table's own tolerance class and exact dtypes.
"""
from __future__ import annotations

import numpy as np
import pytest

import plait
from op_table import OPS
from test_np_op_sweep import _materialize, _reference, check_close

CHUNK = 150


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
def test_numpy_table_on_native(start):
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
    got = plait.jit(f, backend="native")(*flat)
    for (op, _, _, want), g in zip(chunk, got):
        check_close(g, want, op.tol, f"{op.name} native")
