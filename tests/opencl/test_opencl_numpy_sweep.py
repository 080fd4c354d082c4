"""The plait.numpy op table under jit on the opencl backend, against NumPy.

Cases are compiled in chunks (one jitted function per chunk, one OpenCL program),
each output checked with the table's own tolerance class and exact dtypes. As in the
lax sweep, PoCL's per-kernel code generation makes the whole table slow on a CPU (the
first case of every op: 7 minutes on 2 busy cores), so by default every fourth op runs
its first case; ``PLAIT_OPENCL_FULL=1`` runs every case of every op.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import plait  # noqa: E402
from op_table import OPS  # noqa: E402
from test_np_op_sweep import _materialize, _reference, check_close  # noqa: E402

CHUNK = 300
_FULL = bool(os.environ.get("PLAIT_OPENCL_FULL"))


def _cases():
    out = []
    for op in (OPS if _FULL else OPS[::4]):
        if not op.jit:
            continue
        for i, case in enumerate(op.cases):
            args = _materialize(op, i, case)
            try:
                want = _reference(op, args, case.kwargs)
            except (TypeError, ValueError):
                continue
            out.append((op, case, args, want))
            if not _FULL:
                break
    return out


_ALL = _cases()


@pytest.mark.parametrize("start", range(0, len(_ALL), CHUNK))
def test_numpy_table_on_opencl(start):
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
    got = plait.jit(f, backend="opencl")(*flat)
    bad = []
    for (op, _, _, want), g in zip(chunk, got):
        try:
            check_close(g, want, op.tol, f"{op.name} opencl")
        except AssertionError as e:
            bad.append(str(e)[:300])
    assert not bad, "\n".join(bad)
