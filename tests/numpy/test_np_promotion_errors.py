"""NEP 50 promotion against NumPy, NumPy-worded errors, and operators on arrays/tracers."""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import PlaitError, PlaitTypeError, PlaitValueError, PlaitIndexError

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("d1", DTYPES)
def test_array_pairs_match_numpy(d1):
    for d2 in DTYPES:
        x, y = np.ones(2, d1), np.ones(2, d2)
        assert pnp.multiply(x, y).dtype == np.multiply(x, y).dtype, (d1, d2)
        assert pnp.result_type(x, y) == np.result_type(x, y), (d1, d2)
        assert pnp.concatenate([x, y]).dtype == np.concatenate([x, y]).dtype, (d1, d2)
        assert pnp.where(x > 0, x, y).dtype == np.where(x > 0, x, y).dtype, (d1, d2)


@pytest.mark.parametrize("d", DTYPES)
def test_python_scalars_are_weak(d):
    x = np.ones(2, d)
    for s in (True, 1, 2.5, 1j):
        with np.errstate(all="ignore"):
            want = np.multiply(x, s).dtype
        assert pnp.multiply(x, s).dtype == want, (d, s)
        assert (plait.device_put(x) * s).dtype == want, (d, s)
        assert (s * plait.device_put(x)).dtype == want, (d, s)
        assert pnp.result_type(x, s) == np.result_type(x, s)


def test_numpy_scalars_are_strong_and_jit_keeps_dtypes():
    x = np.ones(3, np.float32)
    assert pnp.add(x, np.float64(1)).dtype == np.float64
    assert pnp.add(x, 1.0).dtype == np.float32
    f = plait.jit(lambda a: a * 2 + 1, backend="interp")
    assert f(np.ones(3, np.int8)).dtype == np.int8
    assert f(x).dtype == np.float32
    assert plait.jit(lambda a, b: a + b, backend="interp")(
        np.ones(2, np.uint64), np.ones(2, np.int64)).dtype == np.float64


def test_int_division_and_means_are_float64():
    i = np.arange(1, 5, dtype=np.int16)
    assert pnp.true_divide(i, i).dtype == np.float64
    assert pnp.mean(i).dtype == np.float64
    assert pnp.sum(np.ones(3, np.int8)).dtype == np.int64
    assert pnp.sum(np.ones(3, np.uint8)).dtype == np.uint64
    assert pnp.sum(np.ones(3, bool)).dtype == np.int64


def _msg(excinfo) -> str:
    return str(excinfo.value)


def test_broadcast_error_names_shapes_and_user_line():
    with pytest.raises(PlaitValueError) as e:
        pnp.add(np.ones((2, 3)), np.ones(4))
    assert "operands could not be broadcast together with shapes (2,3) (4,)" in _msg(e)
    assert "test_np_promotion_errors.py" in _msg(e)
    with pytest.raises(ValueError, match="broadcast"):
        plait.device_put(np.ones((2, 3))) + np.ones(4)


def test_numpy_worded_errors():
    x = pnp.arange(6)
    with pytest.raises(PlaitValueError, match=r"cannot reshape array of size 6 into shape \(4,\)"):
        pnp.reshape(x, 4)
    with pytest.raises(PlaitValueError, match="can only specify one unknown dimension"):
        x.reshape(-1, -1)
    with pytest.raises(PlaitValueError, match="along dimension 1, the array at index 0 has size 3"):
        pnp.concatenate([np.ones((2, 3)), np.ones((2, 2))])
    with pytest.raises(PlaitValueError, match="zero-dimensional arrays cannot be concatenated"):
        pnp.concatenate([1.0, 2.0])
    with pytest.raises(PlaitValueError, match="out of bounds for int8"):
        pnp.add(np.ones(2, np.int8), 300)
    with pytest.raises(PlaitValueError, match="negative integer powers"):
        pnp.power(np.arange(3), -1)
    with pytest.raises(PlaitValueError, match="negative integer powers"):
        pnp.power(np.arange(3), np.array([1, -1, 2]))
    with pytest.raises(PlaitTypeError, match="boolean subtract"):
        pnp.subtract(np.ones(2, bool), np.ones(2, bool))
    with pytest.raises(PlaitIndexError, match="axis 2 is out of bounds for array of dimension 2"):
        pnp.sum(np.ones((2, 2)), axis=2)
    with pytest.raises(PlaitIndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        pnp.ones(3)[3]
    with pytest.raises(PlaitIndexError, match="too many indices"):
        pnp.ones(3)[0, 0]
    with pytest.raises(PlaitValueError, match="equal division"):
        pnp.split(np.ones(5), 2)
    with pytest.raises(PlaitValueError, match="zero-size array to reduction operation maximum"):
        pnp.max(np.ones((0, 2)), axis=0)
    with pytest.raises(PlaitValueError, match="cannot select an axis to squeeze"):
        pnp.squeeze(np.ones((2, 1)), axis=0)
    with pytest.raises(PlaitTypeError, match="not a valid plait array value"):
        pnp.sin("abc")


def test_uint_compare_with_out_of_range_python_int_is_exact():
    u = np.arange(3, dtype=np.uint8)
    np.testing.assert_array_equal(pnp.less(u, -1), np.less(u, -1))
    np.testing.assert_array_equal(pnp.equal(u, 300), np.equal(u, 300))
    np.testing.assert_array_equal(pnp.greater(1000, u), np.greater(1000, u))


def test_static_arguments_must_not_be_traced():
    with pytest.raises(PlaitTypeError, match="static Python int"):
        plait.jit(lambda x, n: pnp.reshape(x, (n, -1)), backend="interp")(np.ones(4), 2)
    with pytest.raises(PlaitTypeError, match="static Python int"):
        plait.jit(lambda x, a: pnp.sum(x, axis=a), backend="interp")(np.ones(4), 0)
    with pytest.raises(PlaitTypeError, match="static numbers"):
        plait.jit(lambda n: pnp.arange(n), backend="interp")(3)
    # marked static, the same functions work
    f = plait.jit(lambda x, a: pnp.sum(x, axis=a), static_argnums=1, backend="interp")
    np.testing.assert_allclose(f(np.ones((2, 3)), 1), [3.0, 3.0])


def test_one_argument_where_is_eager_only():
    x = np.array([[0, 1], [2, 0]])
    got = pnp.where(x)
    for g, w in zip(got, np.where(x)):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(PlaitError) as e:
        plait.jit(lambda a: pnp.where(a)[0], backend="interp")(x)
    assert "where" in str(e.value) or "nonzero" in str(e.value)


def test_operators_and_methods_on_tracers():
    seen = {}

    def f(x):
        seen["type"] = type(x).__name__
        y = (2 - x) * x / 3 + x ** 2 - (x // 2) + (x % 2)
        y = -y + abs(x) + (+x)
        z = y.T.reshape(-1)[::2]
        m = (x > 0.5) & (x <= 2) | ~(x == 1)
        return z.sum(), y.mean(axis=0), m.any(), x[None, 1, ...].shape, pnp.where(m, y, 0.0)

    x = np.linspace(0, 3, 12).reshape(3, 4)
    eager = f(plait.device_put(x))
    staged = plait.jit(f, backend="interp")(x)
    assert seen["type"] != "Array"
    for a, b in zip(eager, staged):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    np.testing.assert_allclose(eager[0], ((-((2 - x) * x / 3 + x ** 2 - x // 2 + x % 2)
                                           + abs(x) + x).T.reshape(-1)[::2]).sum())


def test_numpy_on_the_left_and_inplace_ops():
    a = plait.device_put(np.arange(3.0))
    r = np.arange(3.0) + a
    assert isinstance(r, plait.Array)
    np.testing.assert_allclose(r, [0, 2, 4])
    b = a
    b += 1
    assert isinstance(b, plait.Array)
    np.testing.assert_allclose(a, [0, 1, 2])      # a is unchanged: in-place ops rebind
    np.testing.assert_allclose(b, [1, 2, 3])
    assert (np.float32(2) * plait.device_put(np.ones(2, np.float32))).dtype == np.float32


def test_dtype_names_and_constants():
    assert np.dtype(pnp.float32) == np.float32 and np.dtype(pnp.int8) == np.int8
    assert np.ones(2, np.float32).dtype == pnp.float32
    v = pnp.float32(3)
    assert isinstance(v, plait.Array) and v.dtype == np.float32
    assert pnp.zeros(2, pnp.uint16).dtype == np.uint16
    assert pnp.pi == np.pi and pnp.e == np.e and np.isinf(pnp.inf) and np.isnan(pnp.nan)
    assert pnp.newaxis is None
    assert pnp.iinfo(pnp.int8).max == 127 and pnp.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert pnp.can_cast(np.int8, np.int16) and not pnp.can_cast(np.float64, np.float32)
    assert pnp.shape(np.ones((2, 3))) == (2, 3) and pnp.ndim(3.0) == 0 and pnp.size(np.ones((2, 5))) == 10
    assert pnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert isinstance(plait.device_put(np.ones(2)), pnp.ndarray)


def test_creation_is_staged_under_jit():
    g = plait.make_graph(lambda: pnp.zeros((2, 3)) + pnp.arange(3.0) + pnp.eye(3)[0])()
    text = str(g)
    assert "iota" in text and "broadcast_in_dim" in text


def test_linspace_retstep_and_traced_roll():
    y, step = pnp.linspace(0, 1, 5, retstep=True)
    np.testing.assert_allclose(step, 0.25)
    f = plait.jit(lambda x, s: pnp.roll(x, s), backend="interp")
    for s in (-7, -1, 0, 2, 11):
        np.testing.assert_array_equal(f(np.arange(5), s), np.roll(np.arange(5), s))


def test_traced_integer_index():
    f = plait.jit(lambda x, i: x[i, 1:], backend="interp")
    x = np.arange(12).reshape(3, 4)
    for i in (0, 2, -1, -3):
        np.testing.assert_array_equal(f(x, i), x[i, 1:])
