"""The known-difference table recognises what it describes and nothing else.

Each case is a failing node as ``engines.check_values`` builds it: the right behaviour
(the one jax.jit shows on XLA:CPU) must get its label, a wrong value on the same
operands must not.
"""
from __future__ import annotations

import numpy as np

from plait.fuzz.compare import check_node, quiet
from plait.fuzz.known import Case, known_label
from plait.fuzz.ops import OpSpec


def _case(fn, operands, got, tol="exact", params=None, upstream=()):
    """The Case ``check_values`` builds when an engine returned ``got`` for ``fn``."""
    spec = OpSpec("t", len(operands), "", tol=tol)
    params = params or {}

    def numpy(ops):
        return np.asarray(quiet(fn, *ops, **params))
    return Case(list(operands), numpy(operands), np.asarray(got), numpy=numpy,
                agrees=lambda v: check_node(spec, np.asarray(got), v, operands, params) is None,
                params=params, upstream=upstream)


def test_flushed_subnormals_match_only_the_flushed_value():
    x = np.array([1e-45, 2.0], np.float32)
    assert known_label("ceil", "xla", _case(np.ceil, [x], np.array([0.0, 2.0], np.float32)))
    assert known_label("ceil", "xla", _case(np.ceil, [x], np.array([0.0, 3.0], np.float32))) is None
    assert known_label("ceil", "native", _case(np.ceil, [x], np.array([0.0, 2.0], np.float32))) is None
    big = np.array([-3.4028234663852886e38], np.float32)    # its reciprocal is subnormal
    assert known_label("reciprocal", "xla", _case(np.reciprocal, [big], np.array([-0.0], np.float32)))
    assert known_label("reciprocal", "xla",
                       _case(np.reciprocal, [big], np.array([0.0], np.float32))) is None
    normal = np.array([1.5], np.float32)                   # no subnormal anywhere
    assert known_label("ceil", "xla", _case(np.ceil, [normal], np.array([1.0], np.float32))) is None


def test_flushed_subnormal_operand_of_a_predicate():
    x = np.array([5e-324, 0.0])
    assert known_label("logical_not", "xla", _case(np.logical_not, [x], np.array([True, True])))
    assert known_label("logical_not", "xla", _case(np.logical_not, [x], np.array([True, False]))) is None


def test_bool_times_and_plus_zero_rewrites():
    b, x = np.array([False, True, False]), np.array([-2.5, 3.0, np.inf])
    assert known_label("multiply", "xla", _case(np.multiply, [b, x], np.array([0.0, 3.0, 0.0])))
    assert known_label("multiply", "xla", _case(np.multiply, [b, x], np.array([0.0, 4.0, 0.0]))) is None
    z = np.array([-0.0, 1.0], np.float32)
    assert known_label("add", "xla", _case(np.add, [z, 0.0], np.array([-0.0, 1.0], np.float32)))
    assert known_label("add", "xla", _case(np.add, [z, 0.0], np.array([-0.0, 2.0], np.float32))) is None


def test_hyperbolic_digits_are_bounded():
    x = np.array([32.0])
    want = np.cosh(x)
    near = want * (1 + 10 * np.finfo(np.float64).eps)
    assert known_label("cosh", "xla", _case(np.cosh, [x], near, tol="libm"))
    far = want * (1 + 1e-9)
    assert known_label("cosh", "xla", _case(np.cosh, [x], far, tol="libm")) is None
    assert known_label("cosh", "xla", _case(np.cosh, [x], -want, tol="libm")) is None


def test_complex_product_overflow_needs_an_overflow():
    x = np.array([complex(1.6439395130290768e207, -8.357388307801402e203)])
    assert known_label("einsum_outer", "xla", _case(np.multiply, [x, x], np.array([complex(-np.inf, -np.inf)])))
    y = np.array([1 + 2j])
    assert known_label("einsum_outer", "xla", _case(np.multiply, [y, y], np.array([3 + 4j]))) is None


def test_intermediate_underflow_and_cbrt_of_subnormal():
    tiny = np.array([np.finfo(np.float32).tiny], np.float32)
    assert known_label("arcsin", "xla", _case(np.arcsin, [tiny], np.zeros(1, np.float32), "libm"))
    two = np.array([2.0], np.float32)
    assert known_label("arcsin", "xla", _case(np.arcsin, [two], np.zeros(1, np.float32), "libm")) is None
    sub = np.array([1e-45, 8.0], np.float32)
    assert known_label("cbrt", "xla", _case(np.cbrt, [sub], np.array([-5.6e-16, 2.0], np.float32), "libm"))
    assert known_label("cbrt", "xla",
                       _case(np.cbrt, [sub], np.array([-5.6e-16, 2.5], np.float32), "libm")) is None


def test_log_of_a_power_needs_a_power():
    x = np.array([-1.0, 4.0])
    got = np.array([0.0, np.log(4.0)])
    assert known_label("log", "xla", _case(np.log, [x], got, "libm", upstream=(frozenset({"power", "cummin"}),)))
    assert known_label("log", "xla", _case(np.log, [x], got, "libm", upstream=(frozenset(),))) is None
    assert known_label("log", "xla", _case(np.log, [x], np.array([0.0, 1.0]), "libm",
                                           upstream=(frozenset({"power", "cummin"}),))) is None


def test_reciprocal_division_and_bool_divisions():
    x = np.array([65504.0], np.float16)
    got = (np.rint(x * (np.float16(1) / np.float16(10))) * np.float16(10)).astype(np.float16)
    assert known_label("round", "xla", _case(np.round, [x], got, "composite", {"decimals": -1}))
    assert known_label("round", "xla", _case(np.round, [x], np.array([60000.0], np.float16),
                                             "composite", {"decimals": -1})) is None
    b = np.array([True, False])
    assert known_label("divide", "xla", _case(np.divide, [b, np.float32(0.0)],
                                              np.array([np.inf, 0.0], np.float32)))
    assert known_label("outer", "xla", _case(np.outer, [np.array([-4.2], np.float32), b[1:]],
                                             np.array([[0.0]], np.float32)))


def test_bool_divided_by_a_false_scalar():
    b = np.array([False])
    assert known_label("divide", "xla", _case(np.divide, [b, False], np.array([0.0])))
    assert known_label("divide", "xla", _case(np.divide, [b, False], np.array([1.0]))) is None


def test_log_of_a_power_and_arctanh_digits():
    x = np.array([1.0224981398142539 ** 5])
    got = np.array([5 * np.log(1.0224981398142539)])
    assert known_label("log", "xla", _case(np.log, [x], got, "libm", upstream=(frozenset({"power"}),)))
    assert known_label("log", "xla", _case(np.log, [x], got * (1 + 1e-12), "libm",
                                           upstream=(frozenset({"power"}),))) is None
    t = np.array([-0.385850281345151])
    assert known_label("arctanh", "xla", _case(np.arctanh, [t], np.array([-0.4069152059587433]), "libm"))
    assert known_label("arctanh", "xla", _case(np.arctanh, [t], np.array([-0.40691520]), "libm")) is None


def test_log_of_an_underflowed_exp():
    a = np.array(-2.5836348026217216e+228)
    e = np.exp(a)                                        # 0.0: NumPy's log is -inf
    assert known_label("log", "xla", _case(np.log, [e], a, "libm", upstream=(frozenset({"exp"}),)))
    assert known_label("log", "xla", _case(np.log, [e], a, "libm", upstream=(frozenset({"sin"}),))) is None


def test_a_select_passes_a_subnormal_through():
    x0, x1 = np.array([5e-324, 5e-324]), np.array([0.0, np.nan])
    assert known_label("fmax", "xla", _case(np.fmax, [x0, x1], np.array([0.0, 5e-324])))
    assert known_label("fmax", "xla", _case(np.fmax, [x0, x1], np.array([0.0, 1.0]))) is None


def test_sort_compares_subnormals_as_zeros():
    x = np.array([[5e-324, -0.0, 0.0]])
    sort = lambda v, axis: np.sort(v, axis=axis)              # noqa: E731
    assert known_label("sort", "xla", _case(sort, [x], x.copy(), params={"axis": -1}))
    assert known_label("sort", "xla", _case(sort, [x], x[:, ::-1].copy(), params={"axis": -1})) is None


def test_arctan2_of_two_subnormals():
    d = np.array([-4.203895392974451e-45, 1.0], np.float32)
    assert known_label("arctan2", "xla", _case(np.arctan2, [d, d], np.array([np.nan, np.pi / 4], np.float32), "libm"))
    assert known_label("arctan2", "xla", _case(np.arctan2, [d, d], np.array([np.nan, 0.5], np.float32), "libm")) is None


def test_tanh_digits_and_log_of_one_to_a_nan():
    t = np.array([-18.322994324581646])
    assert known_label("tanh", "xla", _case(np.tanh, [t], np.array([-0.9999999999999992]), "libm"))
    assert known_label("tanh", "xla", _case(np.tanh, [t], np.array([-0.99999999]), "libm")) is None
    one = np.array([1.0])                                 # float_power(1, nan): NumPy 1
    assert known_label("log2", "xla", _case(np.log2, [one], np.array([np.nan]), "libm",
                                            upstream=(frozenset({"float_power"}),)))
    assert known_label("log2", "xla", _case(np.log2, [one], np.array([np.nan]), "libm")) is None
