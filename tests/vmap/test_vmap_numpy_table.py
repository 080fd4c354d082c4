"""The plait.numpy op table's vmap column: for every traceable entry, ``vmap`` over
the array arguments (leading axis, and last axis for a sample) equals stacking the
function's eager results over a Python loop of 3 lanes with different operands."""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import plait
from plait import vmap
from op_table import OPS, TOLERANCES, A

B = 3


def _refuses(op, i, case) -> bool:
    """NumPy-refused argument families are checked by the numpy sweep, not here."""
    try:
        for la in _lanes(op, i, case):
            _eager(op, la, case.kwargs)
    except (TypeError, ValueError):
        return True
    return False


def _flatten(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flatten(e)]
    return [x]


def _lanes(op, i, case):
    out = []
    for k in range(B):
        rng = np.random.default_rng(zlib.crc32(f"{op.name}/{i}/{k}".encode()))
        out.append([a.make(rng) if isinstance(a, A) else a for a in case.args])
    return out


def _eager(op, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return op.fn(*[plait.device_put(a) if isinstance(a, np.ndarray) else a for a in args],
                     **kwargs)


def _check(got, want, tol, what):
    gl, wl = _flatten(got), _flatten(want)
    assert len(gl) == len(wl), what
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
        assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
        rtol = TOLERANCES[tol].get(w.dtype.name)
        if rtol is None:
            np.testing.assert_array_equal(g, w, err_msg=what)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True, err_msg=what)


# entries with array arguments to map over, whose arguments the function accepts
CASES = [(op, i, case) for op in OPS for i, case in enumerate(op.cases)
         if op.jit and any(isinstance(a, A) for a in case.args) and not _refuses(op, i, case)]


@pytest.mark.parametrize("op,i,case", CASES, ids=[f"{op.name}-{i}" for op, i, _ in CASES])
def test_vmap_matches_loop(op, i, case):
    lanes = _lanes(op, i, case)
    pos = [k for k, a in enumerate(case.args) if isinstance(a, A)]
    per_lane = [_eager(op, la, case.kwargs) for la in lanes]
    axes = [0] + ([-1] if zlib.crc32(op.name.encode()) % 4 == 0 else [])
    for axis in axes:
        def staged(*arrays):
            full = list(lanes[0])
            for k, a in zip(pos, arrays):
                full[k] = a
            return op.fn(*full, **case.kwargs)
        batched = [np.stack([la[k] for la in lanes], axis if axis >= 0 else lanes[0][k].ndim)
                   for k in pos]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = vmap(staged, in_axes=axis, out_axes=axis)(*batched)
        lists = [_flatten(o) for o in per_lane]
        want = [np.stack([np.asarray(o[j]) for o in lists],
                         axis if axis >= 0 else np.ndim(lists[0][j])) for j in range(len(lists[0]))]
        _check(got, want, op.tol, f"{op.name} vmap in_axes={axis}")
