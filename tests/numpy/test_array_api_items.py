"""Issue 24's Array API / NumPy behaviours, each against NumPy (or the standard's text
where NumPy differs, said so at the test)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import plait
import plait.numpy as xp
from plait.errors import ConcretizationError, PlaitTypeError, PlaitValueError

LAZY = plait.devices("lazy")[0]
CPU = plait.devices()[0]


# --- 1: inspection namespace -----------------------------------------------------------
def test_namespace_info():
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert caps["max dimensions"] == 64              # eager arrays are NumPy buffers
    assert info.default_device() == CPU
    assert info.devices()[0] == CPU and LAZY in info.devices()
    assert info.default_dtypes() == {"real floating": np.float64,
                                     "complex floating": np.complex128,
                                     "integral": np.int64, "indexing": np.int64}
    assert info.default_dtypes(device=CPU) == info.default_dtypes()
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float32", "float64", "complex64", "complex128"]
    assert list(info.dtypes()) == names
    assert all(info.dtypes()[n] == np.dtype(n) for n in names)
    assert list(info.dtypes(kind="signed integer")) == ["int8", "int16", "int32", "int64"]
    assert list(info.dtypes(kind=("bool", "complex floating"))) == ["bool", "complex64",
                                                                   "complex128"]
    assert list(info.dtypes(device=CPU, kind="real floating")) == ["float32", "float64"]
    with pytest.raises(PlaitValueError, match="unknown device"):
        info.dtypes(device="tpu")


# --- 2: array members, DLPack, xarray -------------------------------------------------
def test_array_namespace_device_to_device():
    x = xp.ones(3)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(PlaitValueError, match="api_version"):
        x.__array_namespace__(api_version="2099.01")
    assert x.device == CPU and x.to_device(CPU) is x
    lz = x.to_device(LAZY)
    assert lz.device == LAZY and type(lz).__name__ == "LazyArray"
    back = lz.to_device(CPU)
    assert isinstance(back, plait.Array)
    np.testing.assert_array_equal(np.asarray(back), np.ones(3))

    seen = {}

    def f(t):
        seen["ns"] = t.__array_namespace__()
        seen["dev"] = t.device
        return t.to_device(CPU) * 2
    np.testing.assert_array_equal(np.asarray(plait.jit(f)(x)), 2 * np.ones(3))
    assert seen == {"ns": xp, "dev": CPU}


def test_dlpack_roundtrip():
    a = np.arange(6.0).reshape(2, 3)
    x = xp.from_dlpack(a)
    assert isinstance(x, plait.Array)
    np.testing.assert_array_equal(np.asarray(x), a)
    a[0, 0] = 99.0                               # the default copies: x stays immutable
    assert float(x[0, 0]) == 0.0
    shared = xp.from_dlpack(a, copy=False)
    assert float(shared[0, 0]) == 99.0
    assert x.__dlpack_device__() == a.__dlpack_device__()
    back = np.from_dlpack(x)
    np.testing.assert_array_equal(back, np.asarray(x))
    cap = x.__dlpack__(stream=None, max_version=(1, 0), dl_device=None, copy=None)
    assert type(cap).__name__ == "PyCapsule"
    lz = xp.from_dlpack(np.ones(2), device=LAZY)
    assert lz.device == LAZY
    with pytest.raises(PlaitTypeError, match="DLPack"):
        xp.from_dlpack([1, 2])
    with pytest.raises(PlaitTypeError, match="traced"):
        plait.jit(xp.from_dlpack)(np.ones(2))


def test_xarray_keeps_tracers_as_duck_arrays():
    xr = pytest.importorskip("xarray")          # in the test extra
    b = np.array([1.0, 2.0, 3.0])
    g = plait.grad(lambda x: xp.sum((x * xr.DataArray(b)).data))(2.0)
    assert float(g) == b.sum()                     # d/dx sum(x * b) = sum(b)
    h = plait.grad(lambda x: xp.sum((xr.DataArray(b) * x ** 2).data))(3.0)
    assert float(h) == 2 * 3.0 * b.sum()


# --- 3: unique_* named tuples ---------------------------------------------------------
def test_unique_named_results():
    a = np.array([3.0, np.nan, 1.0, np.nan, 3.0])
    for name, fields in [("unique_all", ("values", "indices", "inverse_indices", "counts")),
                         ("unique_counts", ("values", "counts")),
                         ("unique_inverse", ("values", "inverse_indices"))]:
        got, want = getattr(xp, name)(a), getattr(np, name)(a)
        assert got._fields == want._fields == fields
        for f in fields:
            np.testing.assert_array_equal(np.asarray(getattr(got, f)), getattr(want, f))
    np.testing.assert_array_equal(np.asarray(xp.unique_values(a)), np.unique_values(a))
    assert int(xp.unique_counts(xp.asarray([1, 1, 2])).counts[0]) == 2
    sized = plait.jit(lambda v: xp.unique_all(v, size=4))(a)
    assert type(sized).__name__ == "UniqueAllResult"
    np.testing.assert_array_equal(np.asarray(sized.counts), np.unique_all(a).counts)


# --- 4: float correction / ddof -------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning",
                            "ignore:divide by zero:RuntimeWarning")
def test_var_std_float_correction():
    a = np.arange(12.0).reshape(3, 4) ** 1.5
    w = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [1, 1, 1, 1]], bool)
    for c in (0.0, 0.5, 1.0, 1.5, 3.0):
        np.testing.assert_allclose(np.asarray(xp.var(xp.asarray(a), axis=0, correction=c)),
                                   np.var(a, axis=0, correction=c))
        np.testing.assert_allclose(np.asarray(xp.std(a, axis=1, ddof=c)),
                                   np.std(a, axis=1, ddof=c))
        np.testing.assert_allclose(np.asarray(xp.var(a, axis=1, ddof=c, where=w)),
                                   np.var(a, axis=1, ddof=c, where=w))
    got = plait.jit(lambda v: xp.std(v, correction=1.25), backend="interp")(a)
    np.testing.assert_allclose(float(got), np.std(a, correction=1.25))


# --- 5: clip --------------------------------------------------------------------------
def test_clip_keywords_and_no_bounds():
    x = np.array([1.0, 2.0, np.nan, -3.0])
    cases = [((1.5, None), {}), ((), {"a_min": 1.5, "a_max": None}),
             ((), {"a_min": None, "a_max": 1.5}),
             ((), {"min": -1.0, "max": 1.7}), ((), {"min": 1.5}), ((-1.0, 1.5), {}),
             ((None, None), {})]
    for args, kw in cases:
        np.testing.assert_array_equal(np.asarray(xp.clip(x, *args, **kw)),
                                      np.clip(x, *args, **kw))
    np.testing.assert_array_equal(np.asarray(xp.asarray(x).clip(max=1.5)),
                                  x.clip(max=1.5))
    # The Array API standard: with neither bound the input comes back (NumPy raises
    # TypeError for np.clip(x) with both bounds omitted).
    np.testing.assert_array_equal(np.asarray(xp.clip(x)), x)
    with pytest.raises(PlaitTypeError, match="not both"):
        xp.clip(x, 1.0, min=2.0)


# --- 6: repeat with array counts ------------------------------------------------------
def test_repeat_array_counts():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    for reps, axis in [([1, 2], 0), ([0, 3], 1), ([2], None), (np.int64(2), 1)]:
        want = np.repeat(a, reps, axis=axis)
        np.testing.assert_array_equal(np.asarray(xp.repeat(a, xp.asarray(reps), axis=axis)),
                                      want)
        np.testing.assert_array_equal(np.asarray(xp.asarray(a).repeat(xp.asarray(reps),
                                                                      axis=axis)), want)
    np.testing.assert_array_equal(np.asarray(xp.repeat(xp.asarray([1.0, 2.0]),
                                                       xp.asarray([1, 2]))), [1.0, 2.0, 2.0])


def test_repeat_traced_counts_need_total_length():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = plait.jit(lambda v, r: xp.repeat(v, r, axis=0, total_repeat_length=5),
                  backend="interp")
    np.testing.assert_array_equal(np.asarray(f(a, np.array([2, 3]))),
                                  np.repeat(a, [2, 3], axis=0))
    # JAX's rule: a shorter sum repeats the last element, a longer one is cut.
    np.testing.assert_array_equal(np.asarray(f(a, np.array([1, 1]))),
                                  np.repeat(a, [1, 4], axis=0))
    np.testing.assert_array_equal(np.asarray(f(a, np.array([4, 4]))),
                                  np.repeat(a, [4, 1], axis=0))
    g = plait.grad(lambda v: xp.sum(xp.repeat(v, xp.asarray([1, 2]),
                                               total_repeat_length=3) ** 2))
    np.testing.assert_allclose(np.asarray(g(xp.asarray([1.0, 2.0]))), [2.0, 8.0])
    with pytest.raises(ConcretizationError, match="total_repeat_length") as e:
        plait.jit(lambda v, r: xp.repeat(v, r))(np.ones(2), np.array([1, 2]))
    assert "test_array_api_items.py" in str(e.value)


# --- 7: unstack of an empty axis ------------------------------------------------------
def test_unstack_zero_length_axis():
    assert xp.unstack(xp.zeros((0, 2)), axis=0) == np.unstack(np.zeros((0, 2)), axis=0) == ()
    assert xp.unstack(xp.zeros((2, 0)), axis=1) == ()
    parts = xp.unstack(xp.zeros((2, 0)), axis=0)
    assert len(parts) == 2 and parts[0].shape == (0,)


# --- 8: isdtype -----------------------------------------------------------------------
def test_isdtype_kinds():
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
             "complex floating", "numeric"]
    dts = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]
    for d in dts:
        for k in kinds:
            assert xp.isdtype(getattr(xp, d if d != "bool" else "bool_"), k) == \
                np.isdtype(np.dtype(d), k), (d, k)
            assert xp.isdtype(np.dtype(d), k) == np.isdtype(np.dtype(d), k)
    assert xp.isdtype(xp.float32, "real floating")
    assert xp.isdtype(xp.int8, ("integral", xp.float32))
    assert xp.isdtype(xp.float32, ("bool", xp.float32))
    assert not xp.isdtype(xp.float64, xp.float32)
    with pytest.raises(PlaitValueError, match="unknown kind"):
        xp.isdtype(xp.float32, "floating")
    with pytest.raises(PlaitTypeError, match="expected a dtype"):
        xp.isdtype("float32", "numeric")


# --- 10: device= on creation functions ------------------------------------------------
def test_creation_device_keyword():
    made = {
        "asarray": lambda d: xp.asarray([1.0, 2.0], device=d),
        "zeros": lambda d: xp.zeros(2, device=d),
        "ones": lambda d: xp.ones(2, device=d),
        "empty": lambda d: xp.empty(2, device=d),
        "full": lambda d: xp.full(2, 3.0, device=d),
        "zeros_like": lambda d: xp.zeros_like(np.ones(2), device=d),
        "ones_like": lambda d: xp.ones_like(np.ones(2), device=d),
        "empty_like": lambda d: xp.empty_like(np.ones(2), device=d),
        "full_like": lambda d: xp.full_like(np.ones(2), 3.0, device=d),
        "arange": lambda d: xp.arange(2, device=d),
        "linspace": lambda d: xp.linspace(0, 1, 2, device=d),
        "eye": lambda d: xp.eye(2, device=d),
        "astype": lambda d: xp.astype(xp.ones(2), xp.int32, device=d),
        "from_dlpack": lambda d: xp.from_dlpack(np.ones(2), device=d),
    }
    for name, make in made.items():
        cpu, lazy, by_name = make(None), make(LAZY), make("lazy")
        assert cpu.device == CPU and make(CPU).device == CPU, name
        assert lazy.device == LAZY and by_name.device == LAZY, name
        np.testing.assert_array_equal(np.asarray(lazy), np.asarray(cpu))
    with pytest.raises(PlaitValueError, match="unknown device 'gpu'"):
        xp.ones(2, device="gpu")


# --- 12: complex order ----------------------------------------------------------------
NAN, INF = math.nan, math.inf
COMPLEX_CASES = [
    [1 + 2j, 3 + 0j, 3 + 1j], [1 + 2j, complex(1, NAN), 3], [3 + 1j, 3 + 1j, 1],
    [1 + 2j, complex(NAN, 0), complex(2, NAN)], [complex(NAN, 1), complex(NAN, 2)],
    [complex(INF, -INF), complex(INF, -INF), 0], [complex(-INF, INF), 0, complex(-INF, 1)],
]
_FNS = ("max", "min", "argmax", "argmin", "sort", "argsort")


def _all_orders(*arrays):
    return [getattr(xp, f)(a) for a in arrays for f in _FNS]


def test_complex_order_matches_numpy_eager_and_jit():
    arrays = [np.array(c, np.complex128) for c in COMPLEX_CASES]
    want = [getattr(np, f)(a) for a in arrays for f in _FNS]
    runs = {"eager": _all_orders(*arrays)}
    for backend in ("interp", "native"):             # one compile per backend
        runs[backend] = plait.jit(_all_orders, backend=backend)(*arrays)
    for how, got in runs.items():
        for g, w, (a, f) in zip(got, want, [(a, f) for a in COMPLEX_CASES for f in _FNS]):
            g = np.asarray(g)
            assert g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True), (how, f, a)


def test_complex_reductions_axes_keepdims_initial_where():
    m = np.array([[1 + 1j, 2, complex(NAN, 1)], [3j, 1 + 5j, 2 + 0j], [2 + 1j, 2, 1j]],
                 np.complex64)
    for axis in (0, 1, None, (0, 1), ()):
        for kd in (False, True):
            for f in ("max", "min"):
                got, want = getattr(xp, f)(m, axis=axis, keepdims=kd), \
                    getattr(np, f)(m, axis=axis, keepdims=kd)
                assert np.asarray(got).dtype == want.dtype
                np.testing.assert_array_equal(np.asarray(got), want)
            if isinstance(axis, int) or axis is None:
                for f in ("argmax", "argmin"):
                    np.testing.assert_array_equal(
                        np.asarray(getattr(xp, f)(m, axis=axis, keepdims=kd)),
                        getattr(np, f)(m, axis=axis, keepdims=kd))
    w = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(xp.max(m[1:], axis=1, initial=2 + 0.5j, where=w)),
                                  np.max(m[1:], axis=1, initial=2 + 0.5j, where=w))
    np.testing.assert_array_equal(np.asarray(xp.min(np.zeros(0, complex), initial=1j)),
                                  np.min(np.zeros(0, complex), initial=1j))
    with pytest.raises(PlaitValueError, match="zero-size"):
        xp.max(np.zeros(0, complex))


def test_complex_max_gradient_goes_to_the_picked_element():
    z = xp.asarray([1 + 2j, 3 + 0j, 3 + 1j])
    # f = Re(max(z) * (1 + i)) = x - y at the maximum: grad = df/dx - i df/dy = 1 + 1j.
    g = plait.grad(lambda v: xp.real(xp.max(v) * (1 + 1j)))(z)
    np.testing.assert_array_equal(np.asarray(g), [0, 0, 1 + 1j])
