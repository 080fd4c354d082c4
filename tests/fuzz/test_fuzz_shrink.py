"""The fuzzer's own machinery: the shrinker, the comparer, the reproducer printer."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import plait
from plait.fuzz.compare import check_node
from plait.fuzz.generate import reference_values
from plait.fuzz.ops import BY_NAME
from plait.fuzz.program import Node, Program, Scalar
from plait.fuzz.shrink import shrink


def _has_nan_sin(p: Program) -> bool:
    """A synthetic failure: some ``sin`` node reads an operand containing NaN."""
    ref = reference_values(p)
    return any(n.op == "sin" and any(isinstance(a, int) and np.isnan(np.asarray(ref[a], np.complex128)).any()
                                     for a in n.args) for n in p.nodes)


def test_shrinker_reaches_the_minimum():
    x = np.array([[1.0, 2.0, np.nan], [4.0, -0.0, 6.0]], np.float32)
    y = np.arange(6, dtype=np.int32).reshape(2, 3)
    p = Program([x, y, np.ones(3, np.float64)], [
        Node("add", (0, 1), {}),                                  # v3 = x + y (NaN survives)
        Node("exp", (2,), {}),                                    # v4, irrelevant
        Node("multiply", (3, 4), {}),                             # v5
        Node("sin", (5,), {}),                                    # v6 (the failure)
        Node("cos", (6,), {}),                                    # v7, after it
    ])
    assert _has_nan_sin(p)
    small = shrink(p, _has_nan_sin, max_calls=500, max_seconds=60)
    assert _has_nan_sin(small)
    assert [n.op for n in small.nodes] == ["sin"]
    assert len(small.inputs) == 1
    only = np.asarray(small.inputs[0])
    assert only.size == 1 and np.isnan(only).all()


def test_shrinker_keeps_a_program_that_is_already_minimal():
    p = Program([np.array(np.nan, np.float64)], [Node("sin", (0,), {})])
    assert shrink(p, _has_nan_sin) is p


def test_compare_rules():
    spec = BY_NAME["add"]
    nan = np.float32(np.nan)
    args = [np.array([1.0, 2.0], np.float32), np.array([0.0, 0.0], np.float32)]
    want = np.array([1.0, 2.0], np.float32)
    assert check_node(spec, want.copy(), want, args, {}) is None
    assert check_node(spec, np.array([1.0, nan], np.float32), want, args, {}) is not None      # NaN position
    assert check_node(spec, np.nextafter(want, np.float32(3)), want, args, {}) is None         # 1 ulp
    assert check_node(spec, want + np.float32(1e-3), want, args, {}) is not None
    assert check_node(spec, want.astype(np.float64), want, args, {}).startswith("dtype")
    neg = BY_NAME["negative"]
    z = [np.array([0.0], np.float64)]
    assert check_node(neg, np.array([0.0]), np.array([-0.0]), z, {}) is not None               # signed zero
    assert check_node(BY_NAME["sum"], np.array(0.0), np.array(-0.0), z, {"axis": None}) is None  # not defined
    inf = [np.array([np.inf])]
    assert check_node(BY_NAME["exp"], np.array([1e308]), np.array([np.inf]), inf, {}) is not None
    assert check_node(BY_NAME["less"], np.array([True]), np.array([False]), args, {}) is not None
    # integer round to negative decimals: not compared where NumPy's float64 result
    # leaves the dtype's range, compared elsewhere
    u = [np.array([4294967295, 44], np.uint32)]
    assert check_node(BY_NAME["round"], np.array([4, 40], np.uint32), np.array([0, 40], np.uint32),
                      u, {"decimals": -1}) is None
    assert check_node(BY_NAME["round"], np.array([4, 50], np.uint32), np.array([0, 40], np.uint32),
                      u, {"decimals": -1}) is not None
    # complex expm1: the Array API's value at a non-finite input, NumPy's elsewhere
    c = [np.array([complex(-np.inf, -np.inf), 1e-10 + 0j], np.complex128)]
    want_c = np.array([complex(np.nan, np.nan), np.expm1(c[0][1])])
    assert check_node(BY_NAME["expm1"], np.array([-1 + 0j, want_c[1]]), want_c, c, {}) is None
    assert check_node(BY_NAME["expm1"], np.array([-1 + 0j, 2e-10]), want_c, c, {}) is not None


def test_float16_lanes_that_overflow_only_in_numpy_are_not_compared():
    """NumPy sums float16 var's values and squared deviations in float16
    (``var([0, 374])`` and ``std([-65504, -65504])`` are inf; plait and jax.numpy give
    34969 and 0), and the oracle's repeated multiplication makes ``330.5 ** -2`` 0 in
    float16 (plait, as NumPy's ``power``: 9.2e-06). Those lanes are not compared; a
    wrong value where nothing overflows still is."""
    h = np.float16
    over = [np.array([[0.0], [374.0]], h)]
    assert check_node(BY_NAME["var"], np.array([34976.0], h), np.array([np.inf], h), over,
                      {"axis": 0, "keepdims": False}) is None
    fine = [np.array([[0.0], [10.0]], h)]
    assert check_node(BY_NAME["var"], np.array([30.0], h), np.array([25.0], h), fine,
                      {"axis": 0, "keepdims": False}) is not None
    assert check_node(BY_NAME["std"], np.array([187.0], h), np.array([np.inf], h), over,
                      {"axis": 0, "keepdims": False}) is None
    big = [np.array([[-65504.0], [-65504.0]], h)]      # NumPy's float16 sum for the mean
    assert check_node(BY_NAME["std"], np.array([0.0], h), np.array([np.inf], h), big,
                      {"axis": 0, "keepdims": False}) is None
    assert check_node(BY_NAME["std"], np.array([0.0], h), np.array([np.inf], h), fine,
                      {"axis": 0, "keepdims": False}) is not None
    pw = BY_NAME["lax.integer_pow"]
    assert check_node(pw, np.array([9.2e-06], h), np.array([0.0], h), [np.array([330.5], h)],
                      {"y": -2}) is None
    assert check_node(pw, np.array([0.2], h), np.array([0.1111], h), [np.array([3.0], h)],
                      {"y": -2}) is not None
    assert check_node(pw, np.array([0.0], h), np.array([np.inf], h), [np.array([330.5], h)],
                      {"y": 2}) is not None


def test_sigmoid_oracle_keeps_float64_subnormals():
    """The oracle's ``1 / (1 + exp(-x))`` was 0 at -729 (exp overflows), where the value
    2.507972e-317 is a float64 subnormal that plait's sigmoid returns."""
    from plait.fuzz import oracles
    got = oracles.sigmoid(np.array([-729.0, -745.0, -746.0, -30.0, 0.0, 800.0]))
    np.testing.assert_allclose(got, [2.507972e-317, 5e-324, 0.0, 9.357622968839299e-14, 0.5, 1.0],
                               rtol=1e-6, atol=0)
    assert got.dtype == np.float64 and oracles.sigmoid(np.float32(-90.0)).dtype == np.float32


def test_quantile_at_an_integral_position_next_to_an_infinity():
    """NumPy's quantile([inf, 0, 0], 0.5) is NaN (0 + (inf - 0) * 0); plait's is 0, the
    order statistic at position 1 interpolated with itself (as jax.numpy): not compared.
    A wrong value elsewhere still is."""
    spec = BY_NAME["quantile"]
    x = [np.array([[np.inf], [0.0], [0.0]])]
    assert check_node(spec, np.array(0.0), np.array(np.nan), x, {"q": 0.5, "axis": None}) is None
    assert check_node(spec, np.array(1.0), np.array(0.0), x, {"q": 0.25, "axis": None}) is not None
    assert check_node(spec, np.array(7.0), np.array(np.inf), x, {"q": 1.0, "axis": None}) is not None


def test_window_sums_are_compared_at_their_own_scale():
    """A -1.8e308 in one window made every window's tolerance inf (ulp NaN), so a 1-ulp
    difference in a window of small values was reported; each window now has its own
    scale, so that passes and a 1e-9 error beside a huge operand is still reported."""
    spec = BY_NAME["lax.reduce_window_sum"]
    x = np.array([0.0, 0.0, 0.0, 0.0, -1.7976931348623157e+308, -2.6563867537204082, np.nan,
                  4.134219473411766, -1.280533547224938, 0.746692881839008, -8.805638460385424,
                  -0.6859293864438664]).reshape((2, 2, 3))
    p = {"w": (1, 2, 2), "s": (1, 1, 1), "pad": ((1, 1), (0, 0), (0, 0))}
    from plait.fuzz import oracles
    want = oracles.reduce_window(x, "sum", p["w"], p["s"], p["pad"])
    assert want[2, 0, 1] == -6.637881920642463
    got = want.copy()
    got[2, 0, 1] = np.nextafter(want[2, 0, 1], -np.inf)
    assert check_node(spec, got, want, [x], p) is None
    got[2, 0, 1] = want[2, 0, 1] * (1 + 1e-9)
    assert check_node(spec, got, want, [x], p) is not None


def test_reproducer_runs_standalone(tmp_path):
    p = Program([np.array([np.nan, -0.0, 1.5], np.float32)],
                [Node("negative", (0,), {}), Node("add", (1, Scalar(2.5)), {}),
                 Node("sum", (2,), {"axis": None, "keepdims": False})])
    src = p.to_python("interp")
    assert "np.nan" in src and "-0.0" in src and "2.5" in src
    path = tmp_path / "repro.py"
    path.write_text(src)
    root = os.path.dirname(os.path.dirname(plait.__file__))
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr
    assert "-1.5" in out.stdout and "nan" in out.stdout and "2.5" in out.stdout


def test_crash_bisection_finds_the_program(monkeypatch):
    """A child that dies whenever program 13 is in its range is narrowed to program 13."""
    from plait.fuzz import supervise
    calls = []

    def fake_child(mode, seed, programs, minutes, skip=0, extra=(), timeout=None):
        calls.append((skip, programs))
        return None, (-11 if skip <= 13 < skip + programs else 0), ""

    monkeypatch.setattr(supervise, "run_child", fake_child)
    assert supervise.bisect_crash(7, 40, ()) == (13, 13)
    assert len(calls) <= 2 * 6


def test_grad_mode_flags_a_wrong_derivative(monkeypatch):
    """An op whose plait side is sin but whose NumPy side is cos must fail the FD check."""
    from plait.fuzz import ops
    from plait.fuzz.grad import check_grad, unit_weights
    bad = ops.OpSpec("bad_sin", 1, "{ns}.sin({0})", np_template="np.sin({0}) + 0.1 * {0} ** 2")
    monkeypatch.setitem(ops.BY_NAME, "bad_sin", bad)
    p = Program([np.array([0.3, 1.2])], [Node("bad_sin", (0,), {})])
    assert check_grad(p, unit_weights(p)) is not None
    good = Program([np.array([0.3, 1.2])], [Node("sin", (0,), {})])
    assert check_grad(good, unit_weights(good)) is None


def test_grad_mode_trusts_a_stiff_derivative_the_quotient_misses():
    """``tan(expm1(x)^3)`` at x = 2.0368478608201537: plait's derivative is 3035.790836
    (mpmath: 3035.7908355303), the central quotient's 3035.821204 is 1.0e-5 off, and a 4x
    smaller step agrees with the quotient within the check's 1e-5, so the check used to
    report it; compared with the two steps' Richardson extrapolation it passes."""
    from plait.fuzz.grad import check_grad
    p = Program([np.array(2.0368478608201537)],
                [Node("expm1", (0,), {}), Node("custom_vjp", (1,), {}), Node("tan", (2,), {})])
    assert check_grad(p, [np.array(0.0), np.array(0.0), np.array(1.0)]) is None


def test_complex_logistic_near_a_pole_is_compared_at_its_conditioning():
    """Near x = πi, 1 + exp(-x) cancels in every formula: plait's exp(x) / (1 + exp(x))
    and the oracle's 1 / (1 + exp(-x)) differed by 100 ulps of |f| (seed 6161). The
    scale grows with |1 - f|, so that passes; an error of 1e-9 there, or of 1e-12 far
    from the pole, is still reported."""
    spec = BY_NAME["lax.logistic"]
    from plait.fuzz import oracles
    x = np.array([complex(-7.288030735381863e-221, 3.1501788379257265), 0.3 + 0.2j])
    want = oracles.logistic(x)
    got = want.copy()
    got[0] = complex(0.5000000000007352, want[0].imag)
    assert abs(got[0].real - want[0].real) > 1e-12
    assert check_node(spec, got, want, [x], {}) is None
    got[0] = want[0] * (1 + 1e-9)
    assert check_node(spec, got, want, [x], {}) is not None
    got = want.copy()
    got[1] = want[1] + 1e-12
    assert check_node(spec, got, want, [x], {}) is not None
