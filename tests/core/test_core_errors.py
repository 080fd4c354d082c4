"""Every named error is raised by a realistic mistake and names the user's line."""
import numpy as np
import pytest

import plait
from plait import lax
from plait import errors


def test_python_if_on_tracer():
    def f(x):
        if lax.gt(x, 0.0):   # the offending line
            return x
        return lax.neg(x)
    with pytest.raises(errors.TracerBoolConversionError) as e:
        plait.jit(f)(1.0)
    msg = str(e.value)
    assert "test_core_errors.py" in msg and "lax.cond" in msg and "autograph=True" in msg
    assert "static_argnums" in msg


def test_numpy_on_tracer():
    def f(x):
        return np.sin(np.asarray(x))
    with pytest.raises(errors.TracerArrayConversionError, match="plait.numpy instead"):
        plait.jit(f)(np.ones(2))


def test_int_of_tracer():
    def f(x, n):
        return lax.reshape(x, (int(n),))
    with pytest.raises(errors.TracerIntegerConversionError, match="static_argnums"):
        plait.jit(f)(np.ones(2), 2)


def test_leaked_tracer():
    store = []

    def f(x):
        store.append(x)
        return x
    plait.jit(f)(np.ones(2))
    with pytest.raises(errors.UnexpectedTracerError) as e:
        lax.exp(store[0])
    assert "jit of" in str(e.value) and "f" in str(e.value) and "test_core_errors.py" in str(e.value)


def test_shape_error_at_user_line():
    def f(x, y):
        return lax.add(x, y)     # mismatched shapes
    with pytest.raises(errors.PlaitTypeError) as e:
        plait.jit(f)(np.ones(2), np.ones(3))
    assert "same shape" in str(e.value) and "test_core_errors.py" in str(e.value)


def test_shape_error_eagerly():
    with pytest.raises(errors.PlaitTypeError, match=r"cannot reshape array of size 4 into shape \(3,\)"):
        lax.reshape(np.ones(4), (3,))


def test_missing_rule_names_primitive_and_rule():
    from plait.core.primitive import Primitive
    p = Primitive("mystery")
    with pytest.raises(errors.MissingRuleError, match="'mystery' has no 'jvp' rule"):
        p.rule("jvp")


def test_arrays_are_immutable():
    x = plait.device_put(np.ones(3))
    with pytest.raises(errors.PlaitTypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 2.0
