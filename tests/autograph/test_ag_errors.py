"""Refusals: each says which variable, which ORIGINAL source lines, and what to do."""
import inspect

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import ControlFlowError, PlaitError

from ag_helpers import ag_jit

f32 = np.float32


def line_of(fn, marker: str) -> int:
    """The file line number of the line of ``fn`` that contains ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if marker in text:
            return start + i
    raise AssertionError(marker)


def one_branch(x):
    if x > 0:                   # <if>
        y = x * 2.0             # <assign>
    return y


def one_branch_else(x):
    if x > 0:                   # <if>
        pass
    else:
        y = -x                  # <assign>
    return y + 1.0


def shape_changes(x, n):
    y = x
    i = 0
    while i < n:                # <loop>
        y = pnp.concatenate([y, y])   # <assign>
        i += 1
    return y


def dtype_changes(k, n):
    i = 0
    while i < n:                # <loop>
        k = k / 2               # <assign>
        i += 1
    return k


def only_in_loop(xs):
    for row in xs:              # <loop>
        last = row * 2.0        # <assign>
    return last


def branch_shapes_differ(x):
    if pnp.sum(x) > 0:          # <if>
        y = x
    else:
        y = x[:2]
    return y


def branch_python_values_differ(x):
    if x > 0:                   # <if>
        mode = "up"
    else:
        mode = "down"
    return x, mode


def vector_condition(x):
    if x > 0:                   # <if>
        x = x * 2.0
    return x


def returns_sometimes(x):
    for i in range(3):
        if x > i:
            return x
    x = x + 1.0                 # falls off the end: returns None


def bad_op_in_branch(x):
    if pnp.sum(x) > 0:
        x = x + pnp.ones(5)     # <bad>
    return x


def test_one_branch_variable_names_variable_and_both_lines():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(one_branch)(f32(1.0))
    msg = str(e.value)
    assert "variable 'y'" in msg
    assert f":{line_of(one_branch, '<if>')}" in msg
    assert f"line {line_of(one_branch, '<assign>')}" in msg
    assert "true branch" in msg and "Assign y before the `if`" in msg


def test_one_branch_variable_in_else():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(one_branch_else)(f32(1.0))
    msg = str(e.value)
    assert "assigned in the false branch" in msg
    assert f"line {line_of(one_branch_else, '<assign>')}" in msg


def test_one_branch_variable_is_fine_when_condition_is_python():
    assert float(plait.autograph(one_branch)(f32(2.0))) == 4.0


def test_loop_carry_shape_change():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(shape_changes)(np.ones(2, f32), 3)
    msg = str(e.value)
    assert "variable 'y'" in msg and "changes shape from f32[2] to f32[4]" in msg
    assert f":{line_of(shape_changes, '<loop>')}" in msg
    assert f"line {line_of(shape_changes, '<assign>')}" in msg


def test_loop_carry_dtype_change():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(dtype_changes)(np.int32(40), 3)
    msg = str(e.value)
    assert "variable 'k'" in msg and "changes dtype" in msg
    assert f":{line_of(dtype_changes, '<loop>')}" in msg


def test_variable_defined_only_inside_traced_loop():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(only_in_loop)(np.ones((3, 2), f32))
    msg = str(e.value)
    assert "variable 'last'" in msg and "no value before the loop" in msg
    assert f":{line_of(only_in_loop, '<loop>')}" in msg


def test_branch_shapes_differ():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(branch_shapes_differ)(np.ones(4, f32))
    msg = str(e.value)
    assert "variable 'y'" in msg and "f32[4]" in msg and "f32[2]" in msg
    assert f":{line_of(branch_shapes_differ, '<if>')}" in msg


def test_branch_python_values_differ():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(branch_python_values_differ)(f32(1.0))
    msg = str(e.value)
    assert "variable 'mode'" in msg and "'up'" in msg and "'down'" in msg


def test_vector_condition():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(vector_condition)(np.ones(3, f32))
    msg = str(e.value)
    assert "bool[3]" in msg and ".any() or .all()" in msg
    assert f":{line_of(vector_condition, '<if>')}" in msg


def test_return_on_some_paths_only():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(returns_sometimes)(f32(1.0))
    assert "returns a value on some paths" in str(e.value)
    assert plait.autograph(returns_sometimes)(f32(-1.0)) is None   # Python semantics


def test_user_errors_inside_a_branch_point_at_the_original_line():
    with pytest.raises(PlaitError) as e:
        ag_jit(bad_op_in_branch)(np.ones(3, f32))
    assert f"test_ag_errors.py:{line_of(bad_op_in_branch, '<bad>')}" in str(e.value)


def test_function_without_source():
    ns: dict = {}
    exec("def f(x):\n    if x > 0:\n        x = -x\n    return x\n", ns)
    with pytest.raises(ControlFlowError) as e:
        plait.autograph(ns["f"])
    assert "needs the function's source" in str(e.value)


def test_traced_range_needs_a_for_loop():
    def f(n):
        return len(range(n))
    with pytest.raises(ControlFlowError) as e:
        ag_jit(f)(np.int32(3))
    assert "range() with a traced bound" in str(e.value)


def traced_assert(x):
    assert x > 0, "x must be positive"      # <assert>
    return x


def static_assert(x, n):
    assert n > 0, f"n={n} must be positive"
    return x * n


def list_grows(xs):
    out = []
    for row in xs:                           # <loop>
        out.append(row * 2.0)
    return out


def test_assert_on_traced_value_is_refused_with_line():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(traced_assert)(f32(1.0))
    assert f":{line_of(traced_assert, '<assert>')}" in str(e.value)


def test_assert_on_python_value_keeps_python_semantics():
    f = ag_jit(static_assert, static_argnums=1)
    assert float(f(f32(2.0), 3)) == 6.0
    with pytest.raises(AssertionError, match="n=-1 must be positive"):
        f(f32(2.0), -1)


def test_python_list_growing_in_traced_loop():
    with pytest.raises(ControlFlowError) as e:
        ag_jit(list_grows)(np.ones((3, 2), f32))
    msg = str(e.value)
    assert "variable 'out'" in msg and "changes structure" in msg and ".at[i].set" in msg
    assert f":{line_of(list_grows, '<loop>')}" in msg
