"""The op-table sweep: every plait.numpy entry, eagerly and under jit, against NumPy.

Results must have exactly NumPy's dtype and shape, and values within the
entry's tolerance class (per dtype). Binary ufuncs also get hypothesis-drawn
broadcasting shape pairs.
"""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import plait
import plait.numpy as pnp
from op_table import OPS, TOLERANCES, A

CASES = [(op, i, case) for op in OPS for i, case in enumerate(op.cases)]


def _materialize(op, i, case):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}/{i}".encode()))
    return [a.make(rng) if isinstance(a, A) else a for a in case.args]


def _flatten(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flatten(e)]
    return [x]


def check_close(got, want, tol: str, what: str):
    gl, wl = _flatten(got), _flatten(want)
    assert len(gl) == len(wl), f"{what}: {len(gl)} outputs, NumPy gives {len(wl)}"
    for g, w in zip(gl, wl):
        if isinstance(w, (int, float, bool)) and not isinstance(w, np.generic) and not hasattr(g, "dtype"):
            assert g == w, f"{what}: {g} != {w}"
            continue
        w = np.asarray(w)
        assert isinstance(g, plait.Array), f"{what}: got {type(g).__name__}, not plait.Array"
        gv = np.asarray(g)
        assert gv.dtype == w.dtype, f"{what}: dtype {gv.dtype}, NumPy gives {w.dtype}"
        assert gv.shape == w.shape, f"{what}: shape {gv.shape}, NumPy gives {w.shape}"
        rtol = TOLERANCES[tol].get(w.dtype.name)
        if rtol is None:
            np.testing.assert_array_equal(gv, w, err_msg=what)
        else:
            np.testing.assert_allclose(gv, w, rtol=rtol, atol=rtol, equal_nan=True, err_msg=what)


def _reference(op, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return op.ref(*args, **kwargs)


@pytest.mark.parametrize("op,i,case", CASES, ids=[f"{op.name}-{i}" for op, i, _ in CASES])
def test_op(op, i, case):
    args = _materialize(op, i, case)
    eager_args = [plait.device_put(a) if isinstance(a, np.ndarray) else a for a in args]
    try:
        want = _reference(op, args, case.kwargs)
    except (TypeError, ValueError) as e:   # NumPy refuses: plait must refuse the same way
        expected = TypeError if isinstance(e, TypeError) else ValueError
        with pytest.raises(expected):
            op.fn(*eager_args, **case.kwargs)
        return
    got = op.fn(*eager_args, **case.kwargs)
    check_close(got, want, op.tol, f"{op.name} eager")
    if not op.jit:
        return
    pos = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]

    def staged(*arrays):
        full = list(args)
        for k, a in zip(pos, arrays):
            full[k] = a
        return op.fn(*full, **case.kwargs)

    got_jit = plait.jit(staged, backend="interp")(*[args[k] for k in pos])
    check_close(got_jit, want, op.tol, f"{op.name} jit")


BROADCAST_UFUNCS = ["add", "subtract", "multiply", "divide", "maximum", "fmin", "arctan2",
                    "less_equal", "logaddexp", "hypot", "floor_divide", "copysign"]


@pytest.mark.parametrize("name", BROADCAST_UFUNCS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       dt=st.sampled_from(["float32", "float64", "int16"]), seed=st.integers(0, 2**16))
def test_broadcasting_binary(name, shapes, dt, seed):
    rng = np.random.default_rng(seed)
    x = A(shapes.input_shapes[0], dt).make(rng)
    y = A(shapes.input_shapes[1], dt, "nonzero").make(rng)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x, y)
    got = getattr(pnp, name)(x, y)
    assert got.shape == shapes.result_shape
    check_close(got, want, "transcendental", name)
    got_jit = plait.jit(getattr(pnp, name), backend="interp")(x, y)
    check_close(got_jit, want, "transcendental", name + " jit")


def test_op_table_size():
    """The table stays broad: a regression guard against accidentally dropped entries."""
    assert len(OPS) >= 250
    assert len(CASES) >= 1200


NATIVE_CASES = [pytest.param(op, i, case, id=f"{op.name}-{i}") for op, i, case in CASES[::37]]


@pytest.mark.parametrize("op,i,case", NATIVE_CASES)
def test_op_default_backend(op, i, case):
    """A fixed subsample of the table under jit with the default (native when available) backend."""
    args = _materialize(op, i, case)
    try:
        want = _reference(op, args, case.kwargs)
    except (TypeError, ValueError):
        return
    pos = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]

    def staged(*arrays):
        full = list(args)
        for k, a in zip(pos, arrays):
            full[k] = a
        return op.fn(*full, **case.kwargs)

    if not op.jit:
        return
    check_close(plait.jit(staged)(*[args[k] for k in pos]), want, op.tol, f"{op.name} jit")
