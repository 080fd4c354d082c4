"""The conversion machinery: closures, caching, source, lambdas, methods, recursion."""
import numpy as np

import plait
import plait.numpy as pnp
from plait.transforms.autograph import autograph, to_source, is_library

from ag_helpers import ag_jit, prim_counts

f32 = np.float32


def test_closure_cells_are_shared_with_the_original():
    scale = 2.0

    def f(x):
        if x > 0:
            x = x * scale
        return x

    g = autograph(f)
    assert float(g(f32(3.0))) == 6.0
    scale = 10.0                                   # noqa: F841 (read through the cell)
    assert float(g(f32(3.0))) == 30.0
    assert float(ag_jit(f)(f32(3.0))) == 30.0


def test_nonlocal_and_global_writes_keep_python_semantics():
    calls = 0

    def f(x):
        nonlocal calls
        if x > 0:
            calls += 1
        return x

    g = autograph(f)
    g(1.0)
    g(-1.0)
    g(2.0)
    assert calls == 2


COUNTER = 0


def bump_global(x):
    global COUNTER
    for _ in range(3):
        COUNTER += 1
    return x


def test_global_declaration():
    autograph(bump_global)(1.0)
    assert COUNTER == 3


def test_conversion_is_cached_per_function():
    def f(x):
        return x if x > 0 else -x
    assert autograph(f) is autograph(f)
    assert autograph(autograph(f)) is autograph(f)


def test_to_source_shows_the_rewrite():
    def f(x):
        while x > 1:
            x = x / 2
        return x
    src = to_source(f)
    assert "ag__.while_stmt" in src and "def ag__while_body_" in src
    assert plait.autograph.to_source(f) == src


def test_defaults_and_keywords_survive():
    def f(x, k=2.0, *, sign=1.0):
        if x * sign > 0:
            x = x * k
        return x
    g = autograph(f)
    assert float(g(f32(3.0))) == 6.0
    assert float(g(f32(3.0), sign=-1.0)) == 3.0
    assert float(ag_jit(f)(f32(3.0), k=f32(4.0))) == 12.0


def test_lambda_is_converted():
    f = ag_jit(lambda x: x if x > 0 else -x)
    assert float(f(f32(-2.0))) == 2.0
    assert prim_counts(f.lower(f32(1.0)).closed.graph)["cond"] == 1


def test_nested_function_converted_when_called():
    def outer(x):
        def inner(v):
            if v > 0:
                return v * 2.0
            return v
        return inner(x) + inner(-x)
    f = ag_jit(outer)
    assert float(f(f32(3.0))) == 3.0
    assert prim_counts(f.lower(f32(1.0)).closed.graph)["cond"] >= 2


def power(x, n):
    """Recursion on a Python int: each level converted, the `if n == 0` stays static."""
    if n == 0:
        return 1.0 + 0.0 * x
    return x * power(x, n - 1)


def test_recursive_user_function():
    f = ag_jit(power, static_argnums=1)
    assert float(f(f32(2.0), 5)) == 32.0
    assert prim_counts(f.lower(f32(2.0), 5).closed.graph)["cond"] == 0


def decorated_identity(fn):
    return fn


@decorated_identity
def decorated(x):
    if x > 0:
        x = x + 1.0
    return x


def test_decorated_function():
    assert float(ag_jit(decorated)(f32(1.0))) == 2.0


class Piecewise:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if x > 0:
            return x * self.k
        return -x


def test_bound_methods_and_callable_objects():
    p = Piecewise(3.0)
    assert float(ag_jit(p)(f32(2.0))) == 6.0
    assert float(ag_jit(p.__call__)(f32(-2.0))) == 2.0


def test_library_code_is_not_converted():
    assert is_library(pnp.sum.__wrapped__ if hasattr(pnp.sum, "__wrapped__") else pnp.sum)
    assert is_library(np.linalg.norm)
    import json
    assert is_library(json.dumps)
    assert not is_library(power)


def test_user_functions_without_control_flow_run_unchanged():
    def f(x, y):
        return pnp.dot(x, y) + 1.0
    x = np.arange(3.0)
    assert float(ag_jit(f)(x, x)) == float(np.dot(x, x) + 1.0)


class Base:
    def scale(self, x):
        return x * 2.0


class Child(Base):
    def scale(self, x):
        if x > 0:
            x = super().scale(x)     # zero-argument super() inside a converted branch
        return x


def test_zero_argument_super_in_a_branch():
    assert float(ag_jit(Child().scale)(f32(3.0))) == 6.0
    assert float(ag_jit(Child().scale)(f32(-3.0))) == -3.0


def assigned_in_try(x):
    try:
        y = x * 2.0
    except ValueError:
        pass
    if x > 0:
        y = y + 1.0
    return y


def test_variable_possibly_assigned_before_the_if():
    assert float(ag_jit(assigned_in_try)(f32(3.0))) == 7.0
    assert "except NameError" in to_source(assigned_in_try)


def scatter_positive(xs, n):
    out = pnp.zeros_like(xs)
    for i in range(n):
        if xs[i] > 0:
            out = out.at[i].set(xs[i])
    return out


def test_indexed_updates_in_a_traced_range():
    xs = np.array([1.0, -2.0, 3.0, 4.0])
    got = ag_jit(scatter_positive)(xs, np.int32(3))
    np.testing.assert_array_equal(np.asarray(got), [1.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(np.asarray(scatter_positive(xs, 3)), [1.0, 0.0, 3.0, 0.0])


def test_callable_objects_and_partials_called_from_converted_code():
    import functools
    p = Piecewise(3.0)

    def scaled(v, k):
        if v > 0:
            v = v * k
        return v
    part = functools.partial(scaled, k=10.0)

    def f(x):
        return p(x) + part(x)
    g = ag_jit(f)
    assert float(g(f32(2.0))) == 26.0
    assert float(g(f32(-2.0))) == 0.0
    assert prim_counts(g.lower(f32(1.0)).closed.graph)["cond"] == 2
