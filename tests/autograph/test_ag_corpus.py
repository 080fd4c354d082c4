"""A corpus of small functions written with plain Python control flow.

Each runs as plain Python on concrete values (the oracle) and compiled with
``jit(f, autograph=True)``; the results must agree, and the compiled graph must hold
the expected structured control flow (``cond``/``while``/``scan``) instead of
unrolled copies.
"""
import numpy as np
import pytest

import plait.numpy as pnp

from ag_helpers import ag_jit, prim_counts, assert_tree_close

f32 = np.float32


# --- conditionals ------------------------------------------------------------------
def abs_if(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def piecewise(x):
    if x < -1:
        return -x - 1
    elif x < 1:
        return 0.5 * x * x - 0.5
    else:
        return x - 1


def relu_ifexp(x):
    return x if x > 0 else 0.0 * x


def nested_if(x, y):
    if x > 0:
        if y > 0:
            z = x + y
        else:
            z = x - y
    else:
        z = 2.0 * x
    return z * 3.0


def chained_compare(x):
    if 0 < x < 1:
        x = x * 10.0
    return x


def not_condition(x):
    if not x > 2:
        x = x + 100.0
    return x


def or_condition(x, y):
    if x > 1 or y > 1:
        r = x * y
    else:
        r = x + y
    return r


def phi_of_pytree(x):
    if pnp.sum(x) > 0:
        state = {"a": x, "b": (x * 2, 1.0)}
    else:
        state = {"a": -x, "b": (x, 2.0)}
    return state["a"] + state["b"][0] * state["b"][1]


def array_condition_reduced(x):
    y = x
    if (x > 0).all():
        y = pnp.log(x)
    return y


# --- while loops -------------------------------------------------------------------
def newton_sqrt(a):
    y = a
    while pnp.abs(y * y - a) > 1e-6 * a:
        y = 0.5 * (y + a / y)
    return y


def newton_residual(c):
    # solve x**3 + x - c = 0, at most 50 iterations
    x = c * 0.0
    i = 0
    r = x ** 3 + x - c
    while i < 50 and pnp.abs(r) > 1e-10:
        x = x - r / (3 * x * x + 1)
        r = x ** 3 + x - c
        i += 1
    return x, i


def collatz(n):
    steps = 0
    while True:
        if n == 1:
            break
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def while_two_traced_conditions(x, limit):
    total = x * 0.0
    k = 0.0
    while total < limit and k < x:
        k = k + 1.0
        total = total + k
    return total, k


def while_with_else(x):
    n = 0
    while x > 1.0:
        x = x / 3.0
        n += 1
        if n > 4:
            break
    else:
        x = x + 1000.0
    return x, n


def while_early_return(x):
    i = 0
    while i < 100:
        x = x * 1.5
        if x > 50.0:
            return x, i
        i += 1
    return -x, i


# --- for loops ---------------------------------------------------------------------
def sum_positive_rows(xs):
    acc = 0.0
    for row in xs:
        if pnp.sum(row) > 0:
            acc = acc + pnp.sum(row)
    return acc


def running_max_rows(xs):
    best = xs[0]
    for row in xs:
        best = pnp.maximum(best, row)
    return best


def traced_range_sum(n, x):
    acc = x * 0.0
    for i in range(n):
        acc = acc + x * i
    return acc


def traced_range_step(n, x):
    acc = x * 0.0
    for i in range(n, 0, -2):
        acc = acc + i
    return acc


def early_return_search(xs, t):
    for i in range(xs.shape[0] + 0 * t.astype(np.int32)):   # a traced bound
        if xs[i] > t:
            return i
    return -1


def break_over_rows(xs, t):
    acc = xs[0] * 0.0
    for row in xs:
        if pnp.sum(row) > t:
            break
        acc = acc + row
    return acc


def nested_loops_continue(xs):
    acc = 0.0
    for row in xs:
        for v in row:
            if v < 0:
                continue
            acc = acc + v
    return acc


def for_else_no_break(xs):
    s = xs[0] * 0.0
    for row in xs:
        s = s + row
    else:
        s = s * 2.0
    return s


def ifexp_in_loop(xs):
    acc = 0.0
    for v in xs:
        acc = acc + (v if v > 0 else -0.5 * v)
    return acc


def python_range_unrolls(x):
    # a Python range keeps Python semantics: three conditionals, no loop primitive
    for i in range(3):
        if x > i:
            x = x - 0.5
    return x


# --- calls into user functions -------------------------------------------------------
def _clip_helper(v, lo, hi):
    if v < lo:
        return lo + 0.0 * v
    if v > hi:
        return hi + 0.0 * v
    return v


def calls_helper(xs):
    acc = 0.0
    for v in xs:
        acc = acc + _clip_helper(v, -1.0, 1.0)
    return acc


class Scaler:
    """A user class whose method has control flow (converted as a bound method)."""

    def __init__(self, k):
        self.k = k

    def apply(self, x):
        if x > 0:
            return x * self.k
        return x


def method_call(x):
    return Scaler(3.0).apply(x)


rng = np.random.default_rng(0)
M = rng.normal(size=(6, 4)).astype(f32)
V = rng.normal(size=7).astype(f32)

# (function, list of argument tuples, primitives that must appear, primitives that must not)
CASES = [
    (abs_if, [(f32(2.0),), (f32(-3.0),)], {"cond"}, set()),
    (piecewise, [(f32(-2.0),), (f32(0.3),), (f32(4.0),)], {"cond"}, set()),
    (relu_ifexp, [(f32(2.0),), (f32(-1.0),)], {"cond"}, set()),
    (nested_if, [(f32(1.0), f32(2.0)), (f32(1.0), f32(-2.0)), (f32(-1.0), f32(5.0))],
     {"cond"}, set()),
    (chained_compare, [(f32(0.5),), (f32(1.5),), (f32(-0.5),)], {"cond"}, set()),
    (not_condition, [(f32(1.0),), (f32(3.0),)], {"cond"}, set()),
    (or_condition, [(f32(2.0), f32(0.0)), (f32(0.0), f32(0.5))], {"cond"}, set()),
    (phi_of_pytree, [(V,), (-V - 3,)], {"cond"}, set()),
    (array_condition_reduced, [(np.abs(V) + 1,), (V,)], {"cond"}, set()),
    (newton_sqrt, [(f32(2.0),), (f32(10.0),)], {"while"}, set()),
    (newton_residual, [(2.0,), (-5.0,)], {"while"}, set()),
    (collatz, [(np.int32(27),), (np.int32(1),), (np.int32(6),)], {"while"}, set()),
    (while_two_traced_conditions, [(f32(10.0), f32(20.0)), (f32(3.0), f32(100.0))],
     {"while"}, set()),
    (while_with_else, [(f32(5.0),), (f32(1e6),), (f32(0.5),)], {"while"}, set()),
    (while_early_return, [(f32(1.0),), (f32(-1.0),)], {"while"}, set()),
    (sum_positive_rows, [(M,)], {"scan", "cond"}, set()),
    (running_max_rows, [(M,)], {"scan"}, set()),
    (traced_range_sum, [(np.int32(5), f32(1.5)), (np.int32(0), f32(1.5))], {"while"}, set()),
    (traced_range_step, [(np.int32(7), f32(0.0)), (np.int32(-1), f32(0.0))], {"while"},
     set()),
    (early_return_search, [(V, f32(0.5)), (V, f32(10.0))], {"while"}, set()),
    (break_over_rows, [(M, f32(0.0)), (M, f32(100.0))], {"scan"}, set()),
    (nested_loops_continue, [(M,)], {"scan"}, set()),
    (for_else_no_break, [(M,)], {"scan"}, set()),
    (ifexp_in_loop, [(V,)], {"scan", "cond"}, set()),
    (python_range_unrolls, [(f32(2.2),), (f32(0.1),)], {"cond"}, {"while", "scan"}),
    (calls_helper, [(V * 2,)], {"scan", "cond"}, set()),
    (method_call, [(f32(2.0),), (f32(-2.0),)], {"cond"}, set()),
]


@pytest.mark.parametrize("fn,arg_sets,must,must_not", CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_matches_python_and_stages_control_flow(fn, arg_sets, must, must_not):
    compiled = ag_jit(fn)
    for args in arg_sets:
        assert_tree_close(compiled(*args), fn(*args), rtol=1e-5, atol=1e-5)
    counts = prim_counts(compiled.lower(*arg_sets[0]).closed.graph)
    for p in must:
        assert counts[p] >= 1, (p, counts)
    for p in must_not:
        assert counts[p] == 0, (p, counts)


def test_loops_are_not_unrolled():
    # one `while` for the Newton iteration, one scan for the rows: the body's
    # operations appear once in the graph, not once per iteration.
    g = prim_counts(ag_jit(newton_sqrt).lower(f32(2.0)).closed.graph)
    assert g["while"] == 1 and g["div"] == 1
    g = prim_counts(ag_jit(collatz).lower(np.int32(27)).closed.graph)
    assert g["while"] == 1 and g["mul"] == 1      # 3 * n + 1 staged once
    g = prim_counts(ag_jit(sum_positive_rows).lower(M).closed.graph)
    assert g["scan"] == 1 and g["cond"] == 1
    g = prim_counts(ag_jit(python_range_unrolls).lower(f32(1.0)).closed.graph)
    assert g["cond"] == 3                         # a Python range unrolls, as in Python


def test_static_if_is_pruned():
    def choose(x, mode):
        if mode == "double":
            x = x * 2.0
        else:
            x = x - 1.0
        return x
    f = ag_jit(choose, static_argnums=1)
    assert float(f(f32(3.0), "double")) == 6.0
    assert float(f(f32(3.0), "other")) == 2.0
    counts = prim_counts(f.lower(f32(3.0), "double").closed.graph)
    assert counts["cond"] == 0 and counts["sub"] == 0


def test_eager_call_keeps_python_semantics():
    from plait import autograph
    assert_tree_close(autograph(collatz)(27), collatz(27))
    assert_tree_close(autograph(piecewise)(f32(0.3)), piecewise(f32(0.3)))
    assert autograph(early_return_search)(V, f32(100.0)) == -1


def enumerate_rows(xs):
    acc = xs[0] * 0.0
    for i, row in enumerate(xs):
        acc = acc + i * row
    return acc


def zip_rows(xs, ys):
    acc = 0.0
    for x, y in zip(xs, ys):
        if x > y:
            acc = acc + x * y
    return acc


def python_range_traced_break(x):
    found = -1
    for i in range(5):
        if x[i] > 0.5:
            found = i
            break
    return found


def python_tuple_loop(x):
    for scale in (1.0, 2.0, 3.0):
        if x > scale:
            x = x - scale
    return x


MORE_CASES = [
    (enumerate_rows, [(M,)], {"scan"}, set()),
    (zip_rows, [(V, V[::-1].copy())], {"scan", "cond"}, set()),
    (python_range_traced_break, [(V,), (np.zeros(5, f32),)], {"cond"}, {"while", "scan"}),
    (python_tuple_loop, [(f32(5.5),), (f32(0.5),)], {"cond"}, {"while", "scan"}),
]


@pytest.mark.parametrize("fn,arg_sets,must,must_not", MORE_CASES,
                         ids=[c[0].__name__ for c in MORE_CASES])
def test_more_iterables(fn, arg_sets, must, must_not):
    test_matches_python_and_stages_control_flow(fn, arg_sets, must, must_not)
