"""Gradients at scalar inputs: every elementwise op of the op tables, differentiated at a
Python float, a NumPy scalar (``np.float32``/``np.float64``) and a 0-d array.

Issue 24 item 11: jvp rules that mixed the primal with a Python constant
(``add(x, 1)`` in log1p's rule) failed when the primal itself was a Python scalar
("add requires arguments to have the same dtype"). The JVP interpreter now holds every
primal as an array; this sweep checks first and second derivatives of every unary and
binary elementwise function (``plait.numpy`` ufuncs from tests/numpy/op_table.py and
``plait.lax`` primitives from tests/lax/prim_table.py) against central finite
differences of an independent float64 oracle (NumPy's function, or the prim table's
oracle).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import plait

_TESTS = os.path.dirname(os.path.dirname(__file__))
for _d in ("lax", "numpy"):
    if os.path.join(_TESTS, _d) not in sys.path:
        sys.path.insert(0, os.path.join(_TESTS, _d))

import op_table      # noqa: E402
import prim_table    # noqa: E402

# input kinds: how a float value is passed to the function
KINDS = {
    "pyfloat": lambda v: float(v),
    "np.float32": lambda v: np.float32(v),
    "np.float64": lambda v: np.float64(v),
    "0d-f32": lambda v: np.array(v, np.float32),
    "0d-f64": lambda v: np.array(v, np.float64),
}
_IS_F32 = {"np.float32", "0d-f32"}

# a point inside each op-table value domain (away from kinks, poles and branch cuts)
_POINT = {"normal": 0.7, "small": 0.7, "pos": 1.3, "unit": 0.4, "ge1": 2.0, "nonzero": 1.3,
          "special": 0.7, "halves": 0.7}
# second operand of a binary op, per its domain: distinct from the first (no ties)
_POINT2 = {"normal": 0.45, "small": 0.45, "pos": 1.7, "unit": 0.3, "ge1": 2.5,
           "nonzero": 0.55, "special": 0.45, "halves": 0.45, "shift": 2.0}

# ops whose derivative plait defines as zero although the function is not locally
# constant (as JAX): nextafter steps by one ulp, so its finite difference is 1
_ZERO_BY_DEFINITION = {"nextafter"}


def _numpy_cases():
    """(name, plait fn, NumPy oracle, points) for every float-valued ufunc of one or two
    real operands in the plait.numpy op table."""
    out, seen = [], set()
    for op in op_table.OPS:
        uf = getattr(np, op.name, None)
        if (not isinstance(uf, np.ufunc) or uf.nout != 1 or uf.signature is not None
                or op.name in seen):
            continue
        if op.name in _ZERO_BY_DEFINITION:
            continue
        float_cases = [c for c in op.cases
                       if len(c.args) == uf.nin and all(isinstance(a, op_table.A) and
                                                        a.dtype == "float64" for a in c.args)]
        if not float_cases:
            continue
        if np.dtype(uf.resolve_dtypes((np.dtype(np.float64),) * uf.nin + (None,))[-1]).kind != "f":
            continue   # comparisons, isnan, signbit, ...: no derivative to check
        seen.add(op.name)
        kinds = [a.kind for a in float_cases[0].args]
        pts = [_POINT[kinds[0]]] + [_POINT2[k] for k in kinds[1:]]
        if op.name in ("floor_divide", "remainder", "mod", "fmod"):
            pts = [2.3, 0.7]          # inside one branch of the floor
        out.append((f"np.{op.name}", op.fn, uf, pts))
    return out


def _lax_cases():
    """(name, lax fn, float64 oracle, points) for the unary and binary float primitives."""
    out = []
    for prim, fn, dts, (lo, hi), orc in prim_table.UNARY:
        if np.dtype("float64") not in dts or prim.name in ("is_finite",):
            continue
        x = lo + 0.37 * (hi - lo)
        out.append((f"lax.{prim.name}", fn, orc, [x]))
    for prim, fn, dts, kx, ky, orc in prim_table.BINARY:
        if np.dtype("float64") not in dts or prim in prim_table._CMP:
            continue
        if prim.name in _ZERO_BY_DEFINITION or prim.name == "complex":
            continue
        x = kx.get("low", -3.0) + 0.61 * (kx.get("high", 3.0) - kx.get("low", -3.0))
        y = ky.get("low", -3.0) + 0.29 * (ky.get("high", 3.0) - ky.get("low", -3.0))
        if ky.get("nonzero") and abs(y) < 0.25:
            y = 0.5
        out.append((f"lax.{prim.name}", fn, orc, [x, y]))
    return out


CASES = _numpy_cases() + _lax_cases()


def _oracle64(oracle, pts, i):
    """The oracle as a float64 function of operand ``i`` (others fixed)."""
    def f(v):
        args = [np.array(p, np.float64) for p in pts]
        args[i] = np.array(v, np.float64)
        with np.errstate(all="ignore"):
            return float(np.real(np.asarray(oracle(*args))))
    return f


def _fd(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def _plait_scalar_fn(fn, pts, i, kind):
    """``fn`` as a function of operand ``i``; the other operands have the same kind."""
    make = KINDS[kind]

    def f(v):
        args = [make(p) for p in pts]
        args[i] = v
        return fn(*args)
    return f


def test_table_is_complete():
    names = {c[0] for c in CASES}
    for must in ("np.log1p", "np.arccosh", "np.logaddexp", "np.hypot", "np.copysign",
                 "np.power", "np.arctan2", "lax.log1p", "lax.acosh", "lax.atan2", "lax.pow"):
        assert must in names, must
    assert len(CASES) > 60


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_grad_at_scalar_inputs(case, kind):
    name, fn, oracle, pts = case
    f32 = kind in _IS_F32
    rtol, atol = (3e-3, 3e-4) if f32 else (2e-6, 1e-8)
    for i in range(len(pts)):
        f = _plait_scalar_fn(fn, pts, i, kind)
        x = KINDS[kind](pts[i])
        g1 = plait.grad(f)(x)
        want1 = _fd(_oracle64(oracle, pts, i), pts[i], 1e-6)
        np.testing.assert_allclose(np.asarray(g1, np.float64), want1, rtol=rtol, atol=atol,
                                   err_msg=f"{name} d/dx{i} at {kind}")
        assert np.asarray(g1).dtype == (np.float32 if f32 else np.float64), (name, kind)
        # second order: finite differences of plait's float64 first derivative
        g2 = plait.grad(plait.grad(f))(x)
        g64 = plait.grad(_plait_scalar_fn(fn, pts, i, "0d-f64"))
        want2 = _fd(lambda v: float(g64(np.float64(v))), pts[i], 1e-4)
        np.testing.assert_allclose(np.asarray(g2, np.float64), want2, rtol=max(rtol, 1e-5),
                                   atol=max(atol, 1e-6), err_msg=f"{name} d2/dx{i}2 at {kind}")


@pytest.mark.parametrize("fn, x, want", [
    ("log1p", 0.5, 1 / 1.5), ("arccosh", 2.0, 1 / np.sqrt(3.0))])
def test_issue_reproducers(fn, x, want):
    import plait.numpy as xp
    np.testing.assert_allclose(float(plait.grad(getattr(xp, fn))(x)), want, rtol=1e-12)
