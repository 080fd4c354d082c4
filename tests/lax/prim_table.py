"""The primitive op table: one row per (primitive, dtype, shape, params) case.

Every row knows how to make its NumPy operands, the static params the primitive
is bound with, the ``plait.lax`` function call that binds it, and an independent
NumPy (or naive loop) oracle. Test columns (values vs oracle, abstract_eval vs
impl, and later jvp/vmap/jit sweeps) iterate over :data:`CASES`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np
import scipy.special as _ss   # oracle of the special-function primitives

import plait.lax as lax
from plait.lax import elementwise as ew, shape_ops as so, reductions as red, cumulative as cu
from plait.lax import contractions as ct, windowed as wi, indexing as ix, sorting as srt
from plait.lax.fft import fft_p, FftType   # (plait.lax.fft itself is the function)
from plait.lax import linalg as la
from plait.lax import special as sp
from plait.core.primitive import Primitive

import references as ref

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
C64, C128 = np.dtype("complex64"), np.dtype("complex128")
I8, I32, I64 = np.dtype("int8"), np.dtype("int32"), np.dtype("int64")
U8, U32 = np.dtype("uint8"), np.dtype("uint32")
BOOL = np.dtype("bool")

FLOATS = (F16, F32, F64)
COMPLEX = (C64, C128)
INTS = (I8, I32, I64)
UINTS = (U8, U32)
INEXACT = FLOATS + COMPLEX
NUMERIC = INTS + UINTS + INEXACT
ORDERED = (BOOL,) + INTS + UINTS + FLOATS
ALLD = ORDERED + COMPLEX
INTEGRAL = (BOOL,) + INTS + UINTS
SHAPES = ((), (0,), (2, 1, 3))


@dataclasses.dataclass
class Case:
    """One row: ``prim.bind(*make_args(rng), **params)`` == ``fn(*args)`` ≈ ``oracle(*args)``."""
    name: str
    prim: Primitive
    make_args: Callable[[np.random.Generator], list]
    params: dict
    fn: Callable[..., Any]
    oracle: Callable[..., Any]
    rtol: float | None = None   # None: chosen from the result dtype

    @property
    def id(self) -> str:
        return self.name


CASES: list[Case] = []


def add(name, prim, make_args, params, fn, oracle, rtol=None):
    CASES.append(Case(name, prim, make_args, params, fn, oracle, rtol))


def sig(dt, shape) -> str:
    return f"{np.dtype(dt).name}[{','.join(map(str, shape))}]"


# --- operand generators --------------------------------------------------------
def rand(rng, shape, dtype, low=-3.0, high=3.0, nonzero=False):
    """Random values of ``dtype`` in ``[low, high)`` (integers and bools too)."""
    dt = np.dtype(dtype)
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = max(int(math.floor(low)), np.iinfo(dt).min)
        hi = min(int(math.ceil(high)), np.iinfo(dt).max)
        v = rng.integers(lo, hi + 1, size=shape).astype(dt)
        if nonzero:
            v = np.where(v == 0, dt.type(1), v).astype(dt)
        return v
    if dt.kind == "c":
        v = rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)
    else:
        v = rng.uniform(low, high, shape)
    if nonzero:
        v = np.where(np.abs(v) < 0.25, 0.5, v)
    return np.asarray(v).astype(dt)


def gen(*specs):
    """``specs`` are ``(shape, dtype, kwargs)``: an argument generator."""
    def make(rng):
        return [rand(rng, s, d, **kw) for s, d, kw in specs]
    return make


# --- elementwise unary ---------------------------------------------------------
def _sign_oracle(x):
    if x.dtype.kind == "c":
        with np.errstate(all="ignore"):
            return np.where(x == 0, 0, x / np.abs(x)).astype(x.dtype)
    if x.dtype == BOOL:
        return x.copy()
    return ((x > 0).astype(np.int64) - (x < 0).astype(np.int64)).astype(x.dtype)


def _popcount_oracle(x):
    """Set bits of the two's-complement pattern (XLA semantics, unlike np.bitwise_count)."""
    bits = x.dtype.itemsize * 8
    counts = [bin(int(v) & ((1 << bits) - 1)).count("1") for v in x.ravel().tolist()]
    return np.array(counts, np.int64).reshape(x.shape).astype(x.dtype)


_real = {C64: F32, C128: F64}

UNARY = [
    # prim, fn, dtypes, domain (low, high), oracle
    (ew.neg_p, lax.neg, NUMERIC, (-3, 3), lambda x: _to_dtype(-x.astype(object), x.dtype) if x.dtype.kind in "iu" else -x),
    (ew.sign_p, lax.sign, NUMERIC, (-3, 3), _sign_oracle),
    (ew.floor_p, lax.floor, FLOATS, (-3, 3), lambda x: np.array([math.floor(v) for v in x.ravel()], x.dtype).reshape(x.shape)),
    (ew.ceil_p, lax.ceil, FLOATS, (-3, 3), lambda x: np.array([math.ceil(v) for v in x.ravel()], x.dtype).reshape(x.shape)),
    (ew.round_p, lax.round, FLOATS, (-3, 3), lambda x: np.array([round(float(v)) for v in x.ravel()], x.dtype).reshape(x.shape)),
    (ew.is_finite_p, lax.is_finite, FLOATS, (-3, 3), lambda x: ~(np.isnan(x) | np.isinf(x))),
    (ew.exp_p, lax.exp, INEXACT, (-3, 3), lambda x: np.e ** x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)),
    (ew.exp2_p, lax.exp2, INEXACT, (-3, 3), lambda x: 2.0 ** x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)),
    (ew.log_p, lax.log, INEXACT, (0.1, 3), np.log),
    (ew.log1p_p, lax.log1p, INEXACT, (0.1, 3), lambda x: np.log(1 + x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))),
    (ew.expm1_p, lax.expm1, INEXACT, (-3, 3), lambda x: np.exp(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)) - 1),
    (ew.tanh_p, lax.tanh, INEXACT, (-3, 3), np.tanh),
    (ew.logistic_p, lax.logistic, INEXACT, (-3, 3), lambda x: 0.5 * (1 + np.tanh(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) / 2))),
    (ew.sin_p, lax.sin, INEXACT, (-3, 3), np.sin),
    (ew.cos_p, lax.cos, INEXACT, (-3, 3), np.cos),
    (ew.tan_p, lax.tan, INEXACT, (-1.2, 1.2), np.tan),
    (ew.asin_p, lax.asin, INEXACT, (-0.9, 0.9), np.arcsin),
    (ew.acos_p, lax.acos, INEXACT, (-0.9, 0.9), np.arccos),
    (ew.atan_p, lax.atan, INEXACT, (-0.9, 0.9), np.arctan),
    (ew.sinh_p, lax.sinh, INEXACT, (-3, 3), np.sinh),
    (ew.cosh_p, lax.cosh, INEXACT, (-3, 3), np.cosh),
    (ew.asinh_p, lax.asinh, INEXACT, (-3, 3), np.arcsinh),
    (ew.acosh_p, lax.acosh, INEXACT, (1.1, 4), np.arccosh),
    (ew.atanh_p, lax.atanh, INEXACT, (-0.9, 0.9), np.arctanh),
    (ew.sqrt_p, lax.sqrt, INEXACT, (0.1, 4), lambda x: x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) ** 0.5),
    (ew.rsqrt_p, lax.rsqrt, INEXACT, (0.1, 4), lambda x: x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) ** -0.5),
    (ew.cbrt_p, lax.cbrt, FLOATS, (-3, 3), lambda x: np.sign(x) * np.abs(x.astype(np.float64)) ** (1 / 3)),
    (ew.abs_p, lax.abs, NUMERIC, (-3, 3), lambda x: np.abs(x) if x.dtype.kind == "c" else np.where(x < 0, -x, x).astype(x.dtype)),
    (ew.not_p, lax.bitwise_not, INTEGRAL, (-3, 3), lambda x: np.logical_not(x) if x.dtype == BOOL else (-1 - x.astype(np.int64)).astype(x.dtype)),
    (ew.real_p, lax.real, COMPLEX, (-3, 3), lambda x: np.array([complex(v).real for v in x.ravel()], _real[x.dtype]).reshape(x.shape)),
    (ew.imag_p, lax.imag, COMPLEX, (-3, 3), lambda x: np.array([complex(v).imag for v in x.ravel()], _real[x.dtype]).reshape(x.shape)),
    (ew.conj_p, lax.conj, COMPLEX, (-3, 3), lambda x: x.real - 1j * x.imag),
    (ew.population_count_p, lax.population_count, INTS + UINTS, (-100, 100), _popcount_oracle),
    (sp.erf_p, lax.erf, FLOATS, (-3, 3), lambda x: _ss.erf(x.astype(np.float64))),
    (sp.erfc_p, lax.erfc, FLOATS, (-3, 3), lambda x: _ss.erfc(x.astype(np.float64))),
    (sp.lgamma_p, lax.lgamma, FLOATS, (-3, 3), lambda x: _ss.gammaln(x.astype(np.float64))),
    (sp.digamma_p, lax.digamma, FLOATS, (0.1, 3), lambda x: _ss.digamma(x.astype(np.float64))),
]


def _out_dtype(prim, dt):
    if prim in (ew.is_finite_p,):
        return BOOL
    if prim in (ew.abs_p, ew.real_p, ew.imag_p):
        return _real.get(dt, dt)
    return dt


for prim, fn, dts, (lo, hi), orc in UNARY:
    for dt in dts:
        for shape in SHAPES:
            def oracle(x, _o=orc, _dt=_out_dtype(prim, dt)):
                with np.errstate(all="ignore"):
                    return np.asarray(_o(x)).astype(_dt)
            add(f"{prim.name}-{sig(dt, shape)}", prim, gen((shape, dt, dict(low=lo, high=hi))),
                {}, fn, oracle)


for dt in ALLD:
    for shape in SHAPES:
        add(f"stop_gradient-{sig(dt, shape)}", ew.stop_gradient_p, gen((shape, dt, {})), {},
            ew.stop_gradient, lambda x: x.copy())


# --- elementwise binary --------------------------------------------------------
def _pyint_binop(op, dt):
    """An oracle applying ``op`` to Python ints element by element, wrapped to ``dt``."""
    def oracle(x, y):
        out = [op(int(a), int(b)) for a, b in zip(x.ravel(), y.ravel())]
        return np.array([int(v) for v in out], dtype=object).reshape(x.shape).astype(np.int64).astype(dt) \
            if x.size else np.zeros(x.shape, dt)
    return oracle


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _wrap(v, dt):
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _shift(kind, dt):
    bits = dt.itemsize * 8

    def op(a, b):
        if kind == "left":
            return _wrap(a << b, dt) if 0 <= b < bits else 0
        if kind == "arith":
            return a >> b if 0 <= b < bits else (-1 if a < 0 else 0)
        ua = a & ((1 << bits) - 1)
        return _wrap(ua >> b, dt) if 0 <= b < bits else 0
    return op


def _float_oracle(op):
    def oracle(x, y):
        with np.errstate(all="ignore"):
            return op(x, y)
    return oracle


def _nextafter_oracle(x, y):
    """Step one ulp towards ``y`` by integer arithmetic on the IEEE bit pattern."""
    it = np.dtype(f"i{x.dtype.itemsize}")
    out = x.copy()
    xb, ob = x.view(it).ravel(), out.view(it).ravel()
    for k, (a, b) in enumerate(zip(x.ravel().tolist(), y.ravel().tolist())):
        if a == b:
            out.ravel()[k] = b
        elif a == 0:
            ob[k] = 1 if b > 0 else (-1 << (8 * x.dtype.itemsize - 1)) + 1
        else:
            ob[k] = xb[k] + (1 if (b > a) == (a > 0) else -1)
    return out


def _div_oracle(x, y):
    if x.dtype.kind in "iu":
        return _pyint_binop(_trunc_div, x.dtype)(x, y)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) / y


def _rem_oracle(x, y):
    if x.dtype.kind in "iu":
        return _pyint_binop(lambda a, b: a - b * _trunc_div(a, b), x.dtype)(x, y)
    return np.array([math.fmod(a, b) for a, b in zip(x.ravel(), y.ravel())],
                    np.float64).reshape(x.shape)


BINARY = [
    # prim, fn, dtypes, operand kwargs (x, y), oracle(x, y)
    (ew.add_p, lax.add, NUMERIC, {}, {}, lambda x, y: (x.astype(object) + y.astype(object)) if x.dtype.kind in "iu" else x + y),
    (ew.sub_p, lax.sub, NUMERIC, {}, {}, lambda x, y: (x.astype(object) - y.astype(object)) if x.dtype.kind in "iu" else x - y),
    (ew.mul_p, lax.mul, NUMERIC, {}, {}, lambda x, y: (x.astype(object) * y.astype(object)) if x.dtype.kind in "iu" else x * y),
    (ew.div_p, lax.div, NUMERIC, {}, dict(nonzero=True), _div_oracle),
    (ew.rem_p, lax.rem, INTS + UINTS + FLOATS, {}, dict(nonzero=True), _rem_oracle),
    (ew.pow_p, lax.pow, INEXACT, dict(low=0.2, high=2), dict(low=-2, high=2), lambda x, y: x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) ** y),
    (ew.max_p, lax.max, ORDERED, {}, {}, lambda x, y: np.where(x >= y, x, y)),
    (ew.min_p, lax.min, ORDERED, {}, {}, lambda x, y: np.where(x <= y, x, y)),
    (ew.atan2_p, lax.atan2, FLOATS, {}, {}, lambda x, y: np.array([math.atan2(a, b) for a, b in zip(x.ravel(), y.ravel())]).reshape(x.shape)),
    (ew.nextafter_p, lax.nextafter, (F32, F64), {}, {}, lambda x, y: _nextafter_oracle(x, y)),
    (ew.copysign_p, lax.copysign, FLOATS, {}, {}, lambda x, y: np.array([math.copysign(a, b) for a, b in zip(x.ravel().tolist(), y.ravel().tolist())]).reshape(x.shape)),
    (ew.logaddexp_p, lax.logaddexp, FLOATS, {}, {}, lambda x, y: np.array([math.log(math.exp(a) + math.exp(b)) for a, b in zip(x.ravel().tolist(), y.ravel().tolist())]).reshape(x.shape)),
    (ew.and_p, lax.bitwise_and, INTEGRAL, {}, {}, lambda x, y: x & y),
    (ew.or_p, lax.bitwise_or, INTEGRAL, {}, {}, lambda x, y: x | y),
    (ew.xor_p, lax.bitwise_xor, INTEGRAL, {}, {}, lambda x, y: x ^ y),
    (ew.eq_p, lax.eq, ALLD, {}, {}, lambda x, y: np.array([a == b for a, b in zip(x.ravel(), y.ravel())], bool).reshape(x.shape)),
    (ew.ne_p, lax.ne, ALLD, {}, {}, lambda x, y: np.array([a != b for a, b in zip(x.ravel(), y.ravel())], bool).reshape(x.shape)),
    (ew.lt_p, lax.lt, ORDERED, {}, {}, lambda x, y: np.array([a < b for a, b in zip(x.ravel(), y.ravel())], bool).reshape(x.shape)),
    (ew.le_p, lax.le, ORDERED, {}, {}, lambda x, y: np.array([a <= b for a, b in zip(x.ravel(), y.ravel())], bool).reshape(x.shape)),
    (ew.gt_p, lax.gt, ORDERED, {}, {}, lambda x, y: np.array([a > b for a, b in zip(x.ravel(), y.ravel())], bool).reshape(x.shape)),
    (ew.ge_p, lax.ge, ORDERED, {}, {}, lambda x, y: np.array([a >= b for a, b in zip(x.ravel(), y.ravel())], bool).reshape(x.shape)),
    (ew.complex_p, lax.complex, FLOATS, {}, {}, lambda x, y: np.array([complex(a, b) for a, b in zip(x.ravel(), y.ravel())]).reshape(x.shape)),
]
_CMP = {ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p}


def _bin_out(prim, dt):
    if prim in _CMP:
        return BOOL
    if prim is ew.complex_p:
        return C128 if dt == F64 else C64
    return dt


def _wrapped(orc, dt):
    def oracle(x, y):
        with np.errstate(all="ignore"):
            r = np.asarray(orc(x, y))
        if r.dtype == object:   # exact Python-int results wrap like fixed-width ints
            return np.array([_wrap(int(v), dt) for v in r.ravel()], dtype=np.int64).reshape(
                r.shape).astype(dt) if r.size else np.zeros(r.shape, dt)
        return r.astype(dt)
    return oracle


for prim, fn, dts, kx, ky, orc in BINARY:
    for dt in dts:
        for shape in SHAPES:
            add(f"{prim.name}-{sig(dt, shape)}", prim, gen((shape, dt, kx), (shape, dt, ky)), {},
                fn, _wrapped(orc, _bin_out(prim, dt)))

for prim, fn, kind in ((ew.shift_left_p, lax.shift_left, "left"),
                       (ew.shift_right_arithmetic_p, lax.shift_right_arithmetic, "arith"),
                       (ew.shift_right_logical_p, lax.shift_right_logical, "logical")):
    for dt in INTS + UINTS:
        bits = dt.itemsize * 8
        for shape in ((), (0,), (3, 7)):
            add(f"{prim.name}-{sig(dt, shape)}", prim,
                gen((shape, dt, dict(low=-100, high=100)), (shape, dt, dict(low=0, high=bits + 2))),
                {}, fn, _pyint_binop(_shift(kind, dt), dt))

# --- select, clamp, convert, integer_pow ---------------------------------------
for dt in (BOOL, I32, F32, C64):
    for shape in SHAPES:
        add(f"select-{sig(dt, shape)}", ew.select_p,
            gen((shape, BOOL, {}), (shape, dt, {}), (shape, dt, {})), {}, lax.select,
            lambda p, t, f: np.array([a if c else b for c, a, b in zip(p.ravel(), t.ravel(), f.ravel())],
                                     t.dtype).reshape(t.shape))
for dt in (I8, U8, F32, F64):
    for shape in SHAPES:
        add(f"clamp-{sig(dt, shape)}", ew.clamp_p, gen(((), dt, dict(low=-1, high=0)), (shape, dt, {}),
                                                       ((), dt, dict(low=1, high=2))), {},
            lax.clamp, lambda lo, x, hi: np.array([min(max(v, lo), hi) for v in x.ravel()], x.dtype).reshape(x.shape))
    add(f"clamp-arraybounds-{sig(dt, (2, 3))}", ew.clamp_p,
        gen(((2, 3), dt, dict(low=-1, high=0)), ((2, 3), dt, {}), ((2, 3), dt, dict(low=1, high=2))),
        {}, lax.clamp, lambda lo, x, hi: np.where(x < lo, lo, np.where(x > hi, hi, x)))

for src, dst in ((F32, I32), (F64, F16), (I8, F32), (I32, U8), (BOOL, F32), (F32, BOOL), (C64, F32),
                 (F64, C128), (U32, I64), (I64, I8)):
    for shape in SHAPES:
        def _conv(x, _d=dst):
            if x.dtype.kind == "c" and _d.kind != "c":
                x = x.real
            if _d == BOOL:
                return x != 0
            if _d.kind in "iu" and x.dtype.kind == "f":
                x = np.trunc(x)
            if _d.kind in "iu":
                return np.array([_wrap(int(v), _d) for v in x.ravel()], np.int64).reshape(x.shape).astype(_d) \
                    if x.size else np.zeros(x.shape, _d)
            return x.astype(_d)
        add(f"convert_element_type-{src.name}-to-{sig(dst, shape)}", ew.convert_element_type_p,
            gen((shape, src, dict(low=-100, high=100))), dict(new_dtype=dst, weak_type=False),
            lambda x, _d=dst: lax.convert_element_type(x, _d), _conv)

for dt in (I32, F32, F64, C64):
    for y in (0, 1, 2, 3, -2):
        if y < 0 and dt.kind == "i":
            continue
        for shape in SHAPES:
            add(f"integer_pow{y}-{sig(dt, shape)}", ew.integer_pow_p,
                gen((shape, dt, dict(low=0.5, high=2) if y < 0 else dict(low=-3, high=3))), dict(y=y),
                lambda x, _y=y: lax.integer_pow(x, _y),
                lambda x, _y=y: np.array([v ** _y for v in x.ravel().tolist()], dtype=x.dtype).reshape(x.shape)
                if x.size else np.zeros(x.shape, x.dtype))

# --- shape ops -------------------------------------------------------------------
SHAPE_DTYPES = (BOOL, I8, F32, C128)


def _bid_oracle(x, shape, dims):
    y = x
    for d in range(len(shape)):
        if d not in dims:
            y = np.expand_dims(y, d)
    return np.broadcast_to(y, shape).copy()


for dt in SHAPE_DTYPES:
    for xs, shape, dims in (((), (2, 3), ()), ((3,), (2, 3), (1,)), ((1, 3), (4, 1, 3), (1, 2)),
                            ((2, 1), (2, 0), (0, 1)), ((0,), (2, 0), (1,))):
        p = dict(shape=shape, broadcast_dimensions=dims)
        add(f"broadcast_in_dim-{sig(dt, xs)}-to{shape}", so.broadcast_in_dim_p, gen((xs, dt, {})), p,
            lambda x, _p=p: lax.broadcast_in_dim(x, _p["shape"], _p["broadcast_dimensions"]),
            lambda x, _s=shape, _d=dims: _bid_oracle(x, _s, _d))
    for xs, ns in (((2, 3), (3, 2)), ((2, 3), (6,)), ((), (1, 1)), ((0, 3), (3, 0)), ((4,), (2, 1, 2))):
        add(f"reshape-{sig(dt, xs)}-to{ns}", so.reshape_p, gen((xs, dt, {})), dict(new_sizes=ns),
            lambda x, _n=ns: lax.reshape(x, _n),
            lambda x, _n=ns: np.array(x.ravel().tolist(), dtype=x.dtype).reshape(_n))
    for xs, perm in (((2, 3), (1, 0)), ((2, 0, 3), (2, 0, 1)), ((1, 2, 3), (0, 2, 1)), ((), ())):
        add(f"transpose-{sig(dt, xs)}-{perm}", so.transpose_p, gen((xs, dt, {})), dict(permutation=perm),
            lambda x, _p=perm: lax.transpose(x, _p),
            lambda x, _p=perm: np.einsum(x, list(range(x.ndim)), list(_p)) if x.ndim else x.copy())
    for xs, dims in (((1, 3), (0,)), ((2, 1, 1), (1, 2)), ((1,), (0,)), ((0, 1), (1,))):
        add(f"squeeze-{sig(dt, xs)}-{dims}", so.squeeze_p, gen((xs, dt, {})), dict(dimensions=dims),
            lambda x, _d=dims: lax.squeeze(x, _d),
            lambda x, _d=dims: x.reshape([s for i, s in enumerate(x.shape) if i not in _d]))
    for xs, dims in (((3,), (0,)), ((2, 3), (1, 3)), ((), (0,)), ((0,), (1,))):
        add(f"expand_dims-{sig(dt, xs)}-{dims}", so.expand_dims_p, gen((xs, dt, {})), dict(dimensions=dims),
            lambda x, _d=dims: lax.expand_dims(x, _d),
            lambda x, _d=dims: x.reshape(_insert_ones(x.shape, _d)))
    for xs, dims in (((4,), (0,)), ((2, 3), (0, 1)), ((2, 0), (1,)), ((3, 1, 2), (2,))):
        add(f"rev-{sig(dt, xs)}-{dims}", so.rev_p, gen((xs, dt, {})), dict(dimensions=dims),
            lambda x, _d=dims: lax.rev(x, _d),
            lambda x, _d=dims: x[tuple(slice(None, None, -1) if i in _d else slice(None) for i in range(x.ndim))])
    for xs, st, li, sd in (((5,), (1,), (4,), (1,)), ((4, 6), (0, 1), (4, 6), (2, 3)), ((3, 3), (1, 1), (1, 3), (1, 1)),
                           ((0, 2), (0, 0), (0, 2), (1, 1)), ((7,), (2,), (7,), (3,))):
        p = dict(start_indices=st, limit_indices=li, strides=sd)
        add(f"slice-{sig(dt, xs)}-{st}-{li}-{sd}", so.slice_p, gen((xs, dt, {})), p,
            lambda x, _p=p: lax.slice(x, _p["start_indices"], _p["limit_indices"], _p["strides"]),
            lambda x, _p=p: _naive_slice(x, _p))
    for xs, starts, sizes in (((5,), (1,), (3,)), ((5,), (4,), (3,)), ((5,), (-2,), (2,)), ((3, 4), (1, 9), (2, 2)),
                              ((3, 0), (1, 0), (2, 0))):
        def _mk(rng, _xs=xs, _dt=dt, _st=starts):
            return [rand(rng, _xs, _dt)] + [np.array(s, np.int64) for s in _st]
        add(f"dynamic_slice-{sig(dt, xs)}-{starts}-{sizes}", so.dynamic_slice_p, _mk, dict(slice_sizes=sizes),
            lambda x, *i, _z=sizes: lax.dynamic_slice(x, i, _z),
            lambda x, *i, _z=sizes: _naive_dyn_slice(x, i, _z))
    for xs, us, starts in (((5,), (2,), (1,)), ((5,), (3,), (4,)), ((3, 4), (2, 2), (-1, 3)), ((2, 3), (0, 3), (1, 0))):
        def _mk(rng, _xs=xs, _us=us, _dt=dt, _st=starts):
            return [rand(rng, _xs, _dt), rand(rng, _us, _dt)] + [np.array(s, np.int64) for s in _st]
        add(f"dynamic_update_slice-{sig(dt, xs)}-{us}-{starts}", so.dynamic_update_slice_p, _mk, {},
            lambda x, u, *i: lax.dynamic_update_slice(x, u, i),
            lambda x, u, *i: _naive_dyn_update(x, u, i))
    for shapes, dim in ((((2, 3), (4, 3)), 0), (((2, 3), (2, 0), (2, 1)), 1), (((0,), (0,)), 0), (((1,), (2,), (3,)), 0)):
        def _mk(rng, _s=shapes, _dt=dt):
            return [rand(rng, s, _dt) for s in _s]
        add(f"concatenate-{dt.name}-{shapes}-{dim}", so.concatenate_p, _mk, dict(dimension=dim),
            lambda *xs, _d=dim: lax.concatenate(xs, _d),
            lambda *xs, _d=dim: _naive_concat(xs, _d))
    for xs, cfg in (((3,), ((1, 2, 0),)), ((3,), ((0, 0, 2),)), ((2, 3), ((-1, 1, 1), (2, -2, 0))),
                    ((0, 2), ((1, 1, 3), (0, 0, 1))), ((), ()), ((4,), ((-2, -1, 1),))):
        def _mk(rng, _xs=xs, _dt=dt):
            return [rand(rng, _xs, _dt), rand(rng, (), _dt)]
        add(f"pad-{sig(dt, xs)}-{cfg}", so.pad_p, _mk, dict(padding_config=cfg),
            lambda x, v, _c=cfg: lax.pad(x, v, _c),
            lambda x, v, _c=cfg: _naive_pad(x, v, _c))

for dt in (I32, F32, U8, F64):
    for shape, dim in (((4,), 0), ((2, 3), 1), ((0, 3), 0), ((2, 1, 3), 2)):
        add(f"iota-{sig(dt, shape)}-{dim}", so.iota_p, lambda rng: [], dict(dtype=dt, shape=shape, dimension=dim),
            lambda _dt=dt, _s=shape, _d=dim: lax.broadcasted_iota(_dt, _s, _d),
            lambda _dt=dt, _s=shape, _d=dim: np.array([i[_d] for i in np.ndindex(*_s)], dtype=_dt).reshape(_s)
            if int(np.prod(_s)) else np.zeros(_s, _dt))


def _insert_ones(shape, dims):
    shape = list(shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    return tuple(shape)


def _naive_slice(x, p):
    out_shape = [len(range(s, l, st)) for s, l, st in
                 zip(p["start_indices"], p["limit_indices"], p["strides"])]
    out = np.zeros(out_shape, x.dtype)
    for o in np.ndindex(*out_shape):
        out[o] = x[tuple(s + i * st for s, i, st in zip(p["start_indices"], o, p["strides"]))]
    return out


def _clampi(s, n, z):
    return min(max(int(s), 0), n - z)


def _naive_dyn_slice(x, starts, sizes):
    st = [_clampi(s, n, z) for s, n, z in zip(starts, x.shape, sizes)]
    out = np.zeros(sizes, x.dtype)
    for o in np.ndindex(*sizes):
        out[o] = x[tuple(a + b for a, b in zip(st, o))]
    return out


def _naive_dyn_update(x, u, starts):
    st = [_clampi(s, n, z) for s, n, z in zip(starts, x.shape, u.shape)]
    out = x.copy()
    for o in np.ndindex(*u.shape):
        out[tuple(a + b for a, b in zip(st, o))] = u[o]
    return out


def _naive_concat(xs, d):
    parts = [np.moveaxis(x, d, 0) for x in xs]
    rows = [r for p in parts for r in p]
    shape = list(parts[0].shape)
    shape[0] = len(rows)
    out = np.zeros(shape, xs[0].dtype)
    for i, r in enumerate(rows):
        out[i] = r
    return np.moveaxis(out, 0, d)


def _naive_pad(x, v, cfg):
    shape = [lo + hi + n + max(n - 1, 0) * it for n, (lo, hi, it) in zip(x.shape, cfg)]
    out = np.full(shape, v, x.dtype)
    for i in np.ndindex(*x.shape):
        t = tuple(lo + k * (it + 1) for k, (lo, _, it) in zip(i, cfg))
        if all(0 <= a < n for a, n in zip(t, shape)):
            out[t] = x[i]
    return out


# --- reductions --------------------------------------------------------------------
def _with_nans(dt, shape):
    def make(rng):
        x = rand(rng, shape, dt)
        if dt.kind == "f" and x.size:
            x.ravel()[rng.random(x.size) < 0.2] = np.nan
        return [x]
    return make


def _fold_oracle(op, identity, kind="reduce"):
    """Reduce over ``axes`` by folding ``op`` over Python scalars (start: identity)."""
    def oracle(x, *, axes):
        keep = [d for d in range(x.ndim) if d not in axes]
        out_shape = [x.shape[d] for d in keep]
        out = np.zeros(out_shape, dtype=object)
        for o in np.ndindex(*out_shape):
            sel = [slice(None)] * x.ndim
            for d, i in zip(keep, o):
                sel[d] = i
            acc = identity(x.dtype)
            for v in np.asarray(x[tuple(sel)]).ravel().tolist():
                acc = op(acc, v)
            out[o] = acc
        return out
    return oracle


def _nanmax(a, b):
    if isinstance(a, float) and math.isnan(a):
        return a
    if isinstance(b, float) and math.isnan(b):
        return b
    return max(a, b)


def _nanmin(a, b):
    if isinstance(a, float) and math.isnan(a):
        return a
    if isinstance(b, float) and math.isnan(b):
        return b
    return min(a, b)


def _lowest(dt):
    return False if dt == BOOL else (np.iinfo(dt).min if dt.kind in "iu" else -math.inf)


def _highest(dt):
    return True if dt == BOOL else (np.iinfo(dt).max if dt.kind in "iu" else math.inf)


def _to_dtype(obj, dt):
    """Object array of Python numbers -> ``dt`` with integer wrap-around."""
    obj = np.asarray(obj, dtype=object)
    if dt.kind in "iu":
        return np.array([_wrap(int(v), dt) for v in obj.ravel()], np.int64).reshape(obj.shape).astype(dt) \
            if obj.size else np.zeros(obj.shape, dt)
    return obj.astype(dt) if obj.size else np.zeros(obj.shape, dt)


REDUCERS = [
    (red.reduce_sum_p, lax.reduce_sum, NUMERIC, lambda a, b: a + b, lambda dt: 0),
    (red.reduce_prod_p, lax.reduce_prod, NUMERIC, lambda a, b: a * b, lambda dt: 1),
    (red.reduce_max_p, lax.reduce_max, ORDERED, _nanmax, _lowest),
    (red.reduce_min_p, lax.reduce_min, ORDERED, _nanmin, _highest),
    (red.reduce_and_p, lax.reduce_and, INTEGRAL, lambda a, b: a & b, lambda dt: True if dt == BOOL else -1),
    (red.reduce_or_p, lax.reduce_or, INTEGRAL, lambda a, b: a | b, lambda dt: False if dt == BOOL else 0),
    (red.reduce_xor_p, lax.reduce_xor, INTEGRAL, lambda a, b: a ^ b, lambda dt: False if dt == BOOL else 0),
]
RED_SHAPES = (((), ()), ((4,), (0,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)), ((2, 3, 4), ()),
              ((0, 3), (0,)), ((2, 0), (0,)), ((3, 1), (0, 1)))

for prim, fn, dts, op, ident in REDUCERS:
    for dt in dts:
        for shape, axes in RED_SHAPES:
            low, high = (-2, 2) if prim is red.reduce_prod_p else (-3, 3)
            orc = _fold_oracle(op, ident)
            nan_ok = prim in (red.reduce_max_p, red.reduce_min_p)
            make = _with_nans(dt, shape) if nan_ok else gen((shape, dt, dict(low=low, high=high)))
            add(f"{prim.name}-{sig(dt, shape)}-{axes}", prim, make,
                dict(axes=axes), lambda x, _f=fn, _a=axes: _f(x, _a),
                lambda x, _o=orc, _a=axes, _dt=dt: _to_dtype(_o(x, axes=_a), _dt))


def _naive_arg(x, axis, pick):
    xm = np.moveaxis(x, axis, -1)
    out = np.zeros(xm.shape[:-1], np.int64)
    for o in np.ndindex(*xm.shape[:-1]):
        lane = xm[o].tolist()
        nans = [i for i, v in enumerate(lane) if isinstance(v, float) and math.isnan(v)]
        out[o] = nans[0] if nans else lane.index(pick(lane))
    return out


for prim, fn, pick in ((red.argmax_p, lax.argmax, max), (red.argmin_p, lax.argmin, min)):
    for dt in (BOOL, I8, U32, F32, F64):
        for shape, axis in (((5,), 0), ((3, 4), 1), ((3, 4), 0), ((0, 4), 1), ((2, 1, 3), 1)):
            for idt in (I32, I64):
                add(f"{prim.name}-{sig(dt, shape)}-{axis}-{idt.name}", prim, _with_nans(dt, shape),
                    dict(axis=axis, index_dtype=idt), lambda x, _f=fn, _a=axis, _i=idt: _f(x, _a, _i),
                    lambda x, _a=axis, _p=pick, _i=idt: _naive_arg(x, _a, _p).astype(_i))


# --- cumulative ----------------------------------------------------------------------
def _naive_cum(op):
    def oracle(x, axis, reverse):
        xm = np.moveaxis(x, axis, -1)
        out = np.zeros(xm.shape, dtype=object)
        for o in np.ndindex(*xm.shape[:-1]):
            lane = xm[o].tolist()
            if reverse:
                lane = lane[::-1]
            acc, res = None, []
            for v in lane:
                acc = v if acc is None else op(acc, v)
                res.append(acc)
            out[o] = res[::-1] if reverse else res
        return _to_dtype(np.moveaxis(out, -1, axis), x.dtype)
    return oracle


for prim, fn, dts, op in ((cu.cumsum_p, lax.cumsum, NUMERIC, lambda a, b: a + b),
                          (cu.cumprod_p, lax.cumprod, NUMERIC, lambda a, b: a * b),
                          (cu.cummax_p, lax.cummax, ORDERED, _nanmax),
                          (cu.cummin_p, lax.cummin, ORDERED, _nanmin)):
    for dt in dts:
        for shape, axis in (((5,), 0), ((2, 3), 1), ((0, 3), 0), ((2, 1, 4), 2)):
            for reverse in (False, True):
                low, high = (-2, 2) if prim is cu.cumprod_p else (-3, 3)
                make = (_with_nans(dt, shape) if prim in (cu.cummax_p, cu.cummin_p)
                        else gen((shape, dt, dict(low=low, high=high))))
                add(f"{prim.name}-{sig(dt, shape)}-{axis}-{'rev' if reverse else 'fwd'}", prim,
                    make, dict(axis=axis, reverse=reverse),
                    lambda x, _f=fn, _a=axis, _r=reverse: _f(x, _a, _r),
                    lambda x, _a=axis, _r=reverse, _o=_naive_cum(op): _o(x, _a, _r))


# --- dot_general ----------------------------------------------------------------------
def _einsum_oracle(dn, out_dt):
    (lc, rc), (lb, rb) = dn

    def oracle(x, y):
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        ls = [next(letters) for _ in range(x.ndim)]
        rs = [next(letters) for _ in range(y.ndim)]
        for a, b in zip(lc, rc):
            rs[b] = ls[a]
        for a, b in zip(lb, rb):
            rs[b] = ls[a]
        out = ([ls[a] for a in lb] + [ls[i] for i in range(x.ndim) if i not in lc and i not in lb]
               + [rs[i] for i in range(y.ndim) if i not in rc and i not in rb])
        wide = np.complex128 if x.dtype.kind == "c" else np.float64 if x.dtype.kind == "f" else np.int64
        r = np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", x.astype(wide), y.astype(wide))
        if out_dt == BOOL:
            return r != 0
        return _to_dtype(r.astype(object), out_dt) if out_dt.kind in "iu" else r.astype(out_dt)
    return oracle


DOT_CASES = [  # lhs shape, rhs shape, dimension numbers
    ((3,), (3,), (((0,), (0,)), ((), ()))),
    ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ((2, 3), (4, 3), (((1,), (1,)), ((), ()))),
    ((5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),
    ((2, 3, 4), (4, 2, 3), (((1, 2), (2, 0)), ((0,), (1,)))),   # batch not leading on rhs
    ((2, 3), (4,), (((), ()), ((), ()))),                        # outer product
    ((0, 3), (3, 2), (((1,), (0,)), ((), ()))),
    ((2, 0), (0, 2), (((1,), (0,)), ((), ()))),                  # empty contraction -> zeros
    ((1, 3, 1), (1, 3, 2), (((1,), (1,)), ((0,), (0,)))),
]
for dt in (BOOL, I8, I32, U8, F16, F32, F64, C64, C128):
    for ls_, rs_, dn in DOT_CASES:
        p = dict(dimension_numbers=dn, preferred_element_type=None)
        add(f"dot_general-{sig(dt, ls_)}x{rs_}-{dn}", ct.dot_general_p,
            gen((ls_, dt, dict(low=-2, high=2)), (rs_, dt, dict(low=-2, high=2))), p,
            lambda x, y, _dn=dn: lax.dot_general(x, y, _dn), _einsum_oracle(dn, dt),
            rtol=3e-2 if dt == F16 else None)
for src, dst in ((I8, I32), (F16, F32), (F32, F64), (I32, F32)):
    dn = (((1,), (0,)), ((), ()))
    add(f"dot_general-preferred-{src.name}-to-{dst.name}", ct.dot_general_p,
        gen(((3, 4), src, {}), ((4, 2), src, {})), dict(dimension_numbers=dn, preferred_element_type=dst),
        lambda x, y, _dn=dn, _d=dst: lax.dot_general(x, y, _dn, preferred_element_type=_d),
        _einsum_oracle(dn, dst))


# --- conv_general_dilated ---------------------------------------------------------------
def _conv_case(name, lhs_shape, rhs_shape, dt, strides, padding, ld, rd, dn_in, fgc=1, bgc=1,
               pet=None):
    dn = lax.conv_dimension_numbers(lhs_shape, rhs_shape, dn_in)
    p = dict(window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd,
             dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc,
             preferred_element_type=pet)
    add(f"conv_general_dilated-{name}-{dt.name}", ct.conv_general_dilated_p,
        gen((lhs_shape, dt, dict(low=-2, high=2)), (rhs_shape, dt, dict(low=-2, high=2))), p,
        lambda x, y: lax.conv_general_dilated(x, y, strides, padding, ld, rd, dn_in, fgc, bgc, pet),
        lambda x, y: ref.naive_conv(x, y, strides, padding, ld, rd, dn, fgc, bgc, pet),
        rtol=3e-2 if dt == F16 else None)


for dt in (F32, F64, F16, I32, C64, BOOL):
    _conv_case("1d", (2, 3, 6), (4, 3, 2), dt, (1,), ((0, 0),), (1,), (1,), None)
    _conv_case("2d-nhwc-pad", (1, 5, 4, 2), (3, 2, 2, 3), dt, (2, 1), ((1, 2), (0, -1)), (1, 2), (2, 1),
               ("NHWC", "HWIO", "NHWC"))
for dt in (F32, F64):
    _conv_case("2d-groups", (2, 4, 5, 5), (6, 2, 3, 3), dt, (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), None, fgc=2)
    _conv_case("1d-batch-groups", (6, 3, 5), (4, 3, 2), dt, (1,), ((0, 1),), (1,), (2,), None, bgc=2)
    _conv_case("2d-batch0", (0, 2, 4, 4), (3, 2, 2, 2), dt, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), None)
    _conv_case("2d-window-too-big", (1, 2, 2, 2), (3, 2, 3, 3), dt, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), None)
    _conv_case("3d-ncdhw", (1, 2, 3, 4, 3), (2, 2, 2, 2, 1), dt, (1, 2, 1), ((0, 1), (1, 0), (0, 0)),
               (1, 1, 2), (1, 1, 1), None)
    _conv_case("2d-chwn-layout", (2, 4, 4, 3), (3, 3, 2, 2), dt, (1, 1), ((1, 1), (0, 0)), (1, 1), (1, 1),
               ((3, 0, 1, 2), (3, 2, 0, 1), (3, 0, 1, 2)))
_conv_case("preferred-i8-to-i32", (1, 2, 4), (2, 2, 3), I8, (1,), ((1, 1),), (1,), (1,), None, pet=I32)


# --- reduce_window ---------------------------------------------------------------------------
RW_CASES = [  # shape, window, strides, padding, base dilation, window dilation
    ((6,), (2,), (2,), ((0, 0),), (1,), (1,)),
    ((4, 5), (2, 3), (1, 2), ((1, 0), (1, 1)), (1, 1), (1, 1)),
    ((4, 5), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 1), (1, 2)),
    ((3, 4), (3, 1), (2, 1), ((-1, 2), (0, 0)), (1, 1), (1, 1)),
    ((0, 3), (1, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((2, 2), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),   # window too big: empty
    ((2, 3, 4), (1, 2, 2), (1, 1, 2), ((0, 0), (0, 1), (1, 0)), (1, 1, 1), (1, 1, 1)),
]
for prim, fn, dts, op, ident in ((wi.reduce_window_sum_p, lax.reduce_window_sum, (I32, F32, F64, C64, U8),
                                  lambda a, b: a + b, lambda dt: 0),
                                 (wi.reduce_window_max_p, lax.reduce_window_max, (BOOL, I8, U32, F32, F64), _nanmax, _lowest),
                                 (wi.reduce_window_min_p, lax.reduce_window_min, (BOOL, I8, U32, F32, F64), _nanmin, _highest)):
    for dt in dts:
        for shape, w, s, pd, bd, wd in RW_CASES:
            p = dict(window_dimensions=w, window_strides=s, padding=pd, base_dilation=bd, window_dilation=wd)

            def orc(x, _p=p, _op=op, _id=ident, _dt=dt):
                xo = x.astype(object)
                r = ref.naive_reduce_window(xo, _op, _id(_dt), _p["window_dimensions"], _p["window_strides"],
                                            _p["padding"], _p["base_dilation"], _p["window_dilation"])
                return _to_dtype(r, _dt)
            add(f"{prim.name}-{sig(dt, shape)}-w{w}-s{s}-p{pd}-bd{bd}-wd{wd}", prim, gen((shape, dt, {})), p,
                lambda x, _f=fn, _p=p: _f(x, _p["window_dimensions"], _p["window_strides"], _p["padding"],
                                          _p["base_dilation"], _p["window_dilation"]), orc)


# --- gather / scatter ------------------------------------------------------------------------
GATHER_CASES = [  # operand shape, indices (as a list), dnums, slice sizes, mode
    ((5, 3), [[0], [4], [2], [7], [-1]], ((1,), (0,), (0,)), (1, 3), "clip"),          # rows (x[idx])
    ((5, 3), [[0], [4], [7], [-1]], ((1,), (0,), (0,)), (1, 3), "fill"),
    ((4, 5), [[[0, 1], [2, 3]], [[3, 4], [1, 0]]], ((), (0, 1), (0, 1)), (1, 1), "clip"),  # points
    ((4, 5), [[1, 1], [3, 4], [0, 2]], ((1, 2), (), (0, 1)), (2, 3), "clip"),           # 2-d windows
    ((4, 5), [[1, 1], [3, 4], [0, 2]], ((1, 2), (), (0, 1)), (2, 3), "fill"),
    ((3, 4, 2), [[2], [0]], ((0, 2), (1,), (1,)), (3, 1, 2), "clip"),                   # offset dims first
    ((5, 3), np.zeros((0, 1), np.int64), ((1,), (0,), (0,)), (1, 3), "clip"),            # no indices
    ((5, 0), [[1], [3]], ((1,), (0,), (0,)), (1, 0), "clip"),
    ((6,), [[1], [2]], ((1,), (), (0,)), (3,), "clip"),
    ((3, 3), np.zeros((2, 0), np.int64), ((1, 2), (), ()), (2, 2), "clip"),             # no index dims
]
for dt in (F32, I32, BOOL, C64):
    for k, (xs, idx, dnums, sizes, mode) in enumerate(GATHER_CASES):
        idx = np.asarray(idx, np.int64)
        for idt in (I32, U8) if k == 0 else (I64,):
            def mk(rng, _xs=xs, _dt=dt, _idx=idx, _idt=idt):
                ii = _idx.astype(_idt) if _idt.kind == "i" else np.where(_idx < 0, 200, _idx).astype(_idt)
                return [rand(rng, _xs, _dt), ii]
            dn = ix.GatherDimensionNumbers(*dnums)
            p = dict(dimension_numbers=dn, slice_sizes=sizes, mode=mode, fill_value=None)
            add(f"gather-{k}-{sig(dt, xs)}-{idt.name}-{mode}", ix.gather_p, mk, p,
                lambda x, i, _dn=dn, _s=sizes, _m=mode: lax.gather(x, i, _dn, _s, mode=_m),
                lambda x, i, _dn=dn, _s=sizes, _m=mode: ref.naive_gather(
                    x, i, _dn.offset_dims, _dn.collapsed_slice_dims, _dn.start_index_map, _s, _m,
                    ix.default_fill(x.dtype)))

SCATTER_CASES = [  # operand shape, indices, updates shape, dnums
    ((5, 3), [[0], [4], [0], [9], [-1]], (5, 3), ((1,), (0,), (0,))),        # rows, dup + out of bounds
    ((4, 5), [[0, 1], [2, 3], [0, 1], [3, 4]], (4,), ((), (0, 1), (0, 1))),  # points with duplicates
    ((4, 5), [[1, 1], [3, 3], [0, 0]], (3, 2, 2), ((1, 2), (), (0, 1))),     # 2x2 windows; [3,3] dropped
    ((3, 4), [[2], [0]], (3, 2), ((0,), (1,), (1,))),                         # columns; window dim first
    ((5, 3), np.zeros((0, 1), np.int64), (0, 3), ((1,), (0,), (0,))),
    ((3,), [[1], [1], [2]], (3,), ((), (0,), (0,))),
]
SCATTERS = [
    (ix.scatter_p, lax.scatter, ALLD, lambda a, b: b),
    (ix.scatter_add_p, lax.scatter_add, NUMERIC + (BOOL,), lambda a, b: (a or b) if isinstance(a, (bool, np.bool_)) else a + b),
    (ix.scatter_mul_p, lax.scatter_mul, (I32, F32, F64, C64, BOOL), lambda a, b: (a and b) if isinstance(a, (bool, np.bool_)) else a * b),
    (ix.scatter_min_p, lax.scatter_min, (I8, U8, F32, BOOL), lambda a, b: min(a, b)),
    (ix.scatter_max_p, lax.scatter_max, (I8, U8, F32, BOOL), lambda a, b: max(a, b)),
]
for prim, fn, dts, comb in SCATTERS:
    for dt in dts:
        for k, (xs, idx, us, dnums) in enumerate(SCATTER_CASES):
            if dt not in (F32, I32, BOOL) and k not in (0, 2):
                continue
            idx = np.asarray(idx, np.int64)
            for mode in ("drop", "clip") if k in (0, 2) else ("drop",):
                def mk(rng, _xs=xs, _dt=dt, _idx=idx, _us=us):
                    return [rand(rng, _xs, _dt), _idx, rand(rng, _us, _dt)]
                dn = ix.ScatterDimensionNumbers(*dnums)
                p = dict(dimension_numbers=dn, mode=mode, unique_indices=False)

                def orc(x, i, u, _dn=dn, _c=comb, _m=mode):
                    r = ref.naive_scatter(x.astype(object), i, u.astype(object), _dn.update_window_dims,
                                          _dn.inserted_window_dims, _dn.scatter_dims_to_operand_dims, _c, _m)
                    return _to_dtype(r, x.dtype)
                add(f"{prim.name}-{k}-{sig(dt, xs)}-{mode}", prim, mk, p,
                    lambda x, i, u, _f=fn, _dn=dn, _m=mode: _f(x, i, u, _dn, mode=_m), orc)


# --- sort ------------------------------------------------------------------------------------
def _sort_args(shapes_dts, nan=False, ties=False):
    def make(rng):
        out = []
        for s, d in shapes_dts:
            x = rand(rng, s, d, low=-2, high=2) if ties else rand(rng, s, d)
            if ties and d.kind in "fc":
                x = np.round(x).astype(d)
            if nan and d.kind == "f" and x.size:   # complex NaN order in NumPy is not total
                x.ravel()[rng.random(x.size) < 0.25] = np.nan
            out.append(x)
        return out
    return make


for dt in (BOOL, I8, U32, F32, F64, C64):
    for shape, dim in (((6,), 0), ((3, 5), 1), ((3, 5), 0), ((0, 4), 1), ((2, 1, 4), 2)):
        for nk, extra in ((1, ()), (1, (I32,)), (2, (F32, I64))):
            dts = (dt,) + extra
            p = dict(dimension=dim, is_stable=True, num_keys=nk)
            add(f"sort-{sig(dt, shape)}-{dim}-k{nk}-n{len(dts)}", srt.sort_p,
                _sort_args([(shape, d) for d in dts], nan=True, ties=True), p,
                lambda *xs, _d=dim, _k=nk: list(lax.sort(xs, _d, True, _k)),
                lambda *xs, _d=dim, _k=nk: ref.naive_sort(xs, _d, _k))


# --- linalg ----------------------------------------------------------------------------------
# Well-conditioned operands; oracles are NumPy's (or SciPy's) LAPACK calls, a dense solve
# for the triangular and tridiagonal systems.
LA_DTYPES = (F32, F64, C64, C128)
LA_SHAPES = ((4, 4), (2, 3, 3), (1, 1), (0, 0), (2, 0, 0))


def _mat(rng, shape, dt, kind="general"):
    a = rand(rng, shape, dt, low=-1, high=1)
    n = shape[-1]
    if kind == "spd":
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    elif kind == "tri":
        a = a + (n + 1) * np.eye(n)
    return np.asarray(a).astype(dt)


def _tri_dense(dl, d, du):
    m = d.shape[-1]
    t = np.zeros(d.shape + (m,), d.dtype)
    i = np.arange(m)
    t[..., i, i] = d
    t[..., i[1:], i[:-1]] = dl[..., 1:]
    t[..., i[:-1], i[1:]] = du[..., :-1]
    return t


def _np_trsolve(a, b, left_side, lower, transpose_a, unit):
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t.copy()
        t[..., np.arange(a.shape[-1]), np.arange(a.shape[-1])] = 1
    t = np.swapaxes(t, -1, -2) if transpose_a else t
    if left_side:
        return np.linalg.solve(t, b).astype(b.dtype)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)),
                       -1, -2).astype(b.dtype)


def _np_lu(a):
    import scipy.linalg
    m = a.shape[-1]
    lu_ = np.empty_like(a)
    piv = np.empty(a.shape[:-1], np.int32)
    for i in np.ndindex(*a.shape[:-2]):
        lu_[i], piv[i] = scipy.linalg.lu_factor(a[i]) if m else (a[i], piv[i])
    perm = la.lu_pivots_to_permutation(piv, m)
    return [lu_, piv, perm]


def _np_svd(a, full, uv):
    if not uv:
        return [np.linalg.svd(a, compute_uv=False).astype(_real.get(a.dtype, a.dtype))]
    u, s_, vt = np.linalg.svd(a, full_matrices=full)
    return [s_.astype(_real.get(a.dtype, a.dtype)), u, vt]


for dt in LA_DTYPES:
    rt = 2e-4 if dt in (F32, C64) else 1e-10
    for shape in LA_SHAPES:
        nm = sig(dt, shape)
        add(f"cholesky-{nm}", la.cholesky_p,
            lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d, "spd")], {}, la.cholesky,
            lambda a: np.linalg.cholesky(a) if a.size else a.copy(), rt)
        b_shape = shape[:-1] + (2,)
        for left, lower, trans, unit in ((True, True, False, False), (False, False, True, True),
                                         (True, False, True, False)):
            bs = b_shape if left else shape[:-2] + (2, shape[-1])
            p = dict(left_side=left, lower=lower, transpose_a=trans, conjugate_a=False,
                     unit_diagonal=unit)
            add(f"triangular_solve-{nm}-{int(left)}{int(lower)}{int(trans)}{int(unit)}",
                la.triangular_solve_p,
                lambda rng, _s=shape, _b=bs, _d=dt: [_mat(rng, _s, _d, "tri"), rand(rng, _b, _d)],
                p, lambda a, b, _p=p: la.triangular_solve(a, b, **_p),
                lambda a, b, _p=p: _np_trsolve(a, b, _p["left_side"], _p["lower"],
                                               _p["transpose_a"], _p["unit_diagonal"]), rt)
        add(f"lu-{nm}", la.lu_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)], {},
            lambda a: list(la.lu(a)), _np_lu, rt)
        add(f"solve-{nm}", la.solve_p,
            lambda rng, _s=shape, _b=b_shape, _d=dt: [_mat(rng, _s, _d, "tri"),
                                                      rand(rng, _b, _d)],
            {}, lambda a, b: la.solve_p.bind(a, b), np.linalg.solve, rt)
        for full in (False, True):
            add(f"qr-{nm}-{full}", la.qr_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
                dict(full_matrices=full), lambda a, _f=full: list(la.qr(a, full_matrices=_f)),
                lambda a, _f=full: list(np.linalg.qr(a, mode="complete" if _f else "reduced")),
                rt)
        add(f"eigh-{nm}", la.eigh_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d, "spd")],
            dict(lower=True, sort_eigenvalues=True, subset_by_index=None,
                 compute_eigenvectors=True),
            lambda a: list(la.eigh(a, symmetrize_input=False)),
            lambda a: list(np.linalg.eigh(a))[::-1], rt)
        add(f"eigh-values-{nm}", la.eigh_p,
            lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d, "spd")],
            dict(lower=False, sort_eigenvalues=True, subset_by_index=None,
                 compute_eigenvectors=False),
            lambda a: la.eigh_p.bind(a, lower=False, sort_eigenvalues=True,
                                     subset_by_index=None, compute_eigenvectors=False),
            lambda a: [np.linalg.eigvalsh(a, UPLO="U")], rt)
        add(f"eig-{nm}", la.eig_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
            dict(compute_left_eigenvectors=False, compute_right_eigenvectors=True),
            lambda a: list(la.eig(a, compute_left_eigenvectors=False)),
            lambda a: [x.astype(np.result_type(a.dtype, np.complex64))
                       for x in np.linalg.eig(a)], rt)
        for full, uv in ((False, True), (True, True), (False, False)):
            add(f"svd-{nm}-{full}-{uv}", la.svd_p,
                lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
                dict(full_matrices=full, compute_uv=uv, subset_by_index=None),
                lambda a, _f=full, _u=uv: (la.svd(a, full_matrices=_f, compute_uv=_u)
                                           if _u else [la.svd(a, compute_uv=False)]),
                lambda a, _f=full, _u=uv: _np_svd(a, _f, _u), rt)
    for shape, m in (((3, 5), 5), ((), 4), ((2,), 1)):
        def mk(rng, _s=shape, _m=m, _d=dt):
            return [rand(rng, _s + (_m,), _d), rand(rng, _s + (_m,), _d, low=4, high=6),
                    rand(rng, _s + (_m,), _d), rand(rng, _s + (_m, 2), _d)]
        add(f"tridiagonal_solve-{sig(dt, shape + (m,))}", la.tridiagonal_solve_p, mk, {},
            la.tridiagonal_solve,
            lambda dl, d, du, b: np.linalg.solve(_tri_dense(dl, d, du), b).astype(b.dtype), rt)
for dt in (F64, C64):
    for shape in ((5, 3), (2, 3, 5)):
        add(f"qr-{sig(dt, shape)}", la.qr_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
            dict(full_matrices=False), lambda a: list(la.qr(a, full_matrices=False)),
            lambda a: list(np.linalg.qr(a)), 2e-4)
        add(f"svd-{sig(dt, shape)}", la.svd_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
            dict(full_matrices=True, compute_uv=True, subset_by_index=None),
            lambda a: la.svd(a), lambda a: _np_svd(a, True, True), 2e-4)
        add(f"lu-{sig(dt, shape)}", la.lu_p, lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
            {}, lambda a: list(la.lu(a)), lambda a: list(la.lu_p.impl(a)), 2e-4)
add("eigh-subset", la.eigh_p, lambda rng: [_mat(rng, (2, 5, 5), F64, "spd")],
    dict(lower=False, sort_eigenvalues=True, subset_by_index=(1, 3), compute_eigenvectors=True),
    lambda a: list(la.eigh(a, lower=False, symmetrize_input=False, subset_by_index=(1, 3))),
    lambda a: [np.linalg.eigh(a, UPLO="U")[1][..., 1:3], np.linalg.eigh(a, UPLO="U")[0][..., 1:3]])
add("svd-subset", la.svd_p, lambda rng: [_mat(rng, (2, 5, 4), F64)],
    dict(full_matrices=False, compute_uv=True, subset_by_index=(0, 2)),
    lambda a: la.svd(a, full_matrices=False, subset_by_index=(0, 2)),
    lambda a: [v[..., :2] if i < 2 else v[..., :2, :]
               for i, v in enumerate(_np_svd(a, False, True))])
add("eig-left", la.eig_p, lambda rng: [_mat(rng, (2, 4, 4), F64)],
    dict(compute_left_eigenvectors=True, compute_right_eigenvectors=True),
    lambda a: list(la.eig(a)),
    lambda a: [np.stack(v) for v in zip(*[__import__("scipy.linalg").linalg.eig(m, left=True)
                                          for m in a])])

def _np_schur(a, vecs):
    import scipy.linalg
    t, z = np.zeros_like(a), np.zeros_like(a)
    if a.size:
        for i in np.ndindex(*a.shape[:-2]):
            t[i], z[i] = scipy.linalg.schur(a[i], output="complex" if a.dtype.kind == "c"
                                            else "real")
    return [t, z] if vecs else [t]


for dt in LA_DTYPES:
    for shape in ((4, 4), (2, 3, 3), (0, 0)):
        for vecs in (True, False):
            add(f"schur-{sig(dt, shape)}-{vecs}", la.schur_p,
                lambda rng, _s=shape, _d=dt: [_mat(rng, _s, _d)],
                dict(compute_schur_vectors=vecs),
                lambda a, _v=vecs: list(la.schur(a, compute_schur_vectors=_v)),
                lambda a, _v=vecs: _np_schur(a, _v), 2e-4 if dt in (F32, C64) else 1e-10)


# --- fft -------------------------------------------------------------------------------------
def _dft(x, axis, inverse=False):
    """The DFT along ``axis`` as a product with the naive DFT matrix (complex128)."""
    n = x.shape[axis]
    k = np.arange(n)
    m = np.exp((2j if inverse else -2j) * np.pi * np.outer(k, k) / n)
    if inverse:
        m /= n
    return np.moveaxis(np.tensordot(np.moveaxis(x, axis, -1), m, axes=([-1], [0])), -1, axis)


def _naive_fft(x, fft_type, lengths):
    """The ``fft`` primitive by DFT matrices: complex transforms axis by axis, the real
    inverse through the Hermitian extension of the last axis (real part of the sum)."""
    k = len(lengths)
    axes = range(x.ndim - k, x.ndim)
    wide = x.astype(np.complex128)
    if fft_type in ("FFT", "IFFT", "RFFT"):
        for a in axes:
            wide = _dft(wide, a, fft_type == "IFFT")
        if fft_type == "RFFT":
            return wide[..., :lengths[-1] // 2 + 1].astype(C64 if x.dtype == F32 else C128)
        return wide.astype(x.dtype)
    for a in list(axes)[:-1]:
        wide = _dft(wide, a, inverse=True)
    n = lengths[-1]
    full = np.concatenate([wide, np.conj(wide[..., 1:(n + 1) // 2][..., ::-1])], axis=-1)
    return np.real(_dft(full, x.ndim - 1, inverse=True)).astype(F32 if x.dtype == C64 else F64)


FFT_CASES = [  # fft_type, operand shape, fft_lengths
    ("FFT", (8,), (8,)), ("FFT", (3, 5), (5,)), ("FFT", (2, 3, 4), (3, 4)), ("FFT", (1,), (1,)),
    ("FFT", (0, 4), (4,)), ("FFT", (2, 2, 3), (2, 2, 3)),
    ("IFFT", (6,), (6,)), ("IFFT", (2, 3, 5), (3, 5)), ("IFFT", (3, 1), (1,)),
    ("RFFT", (8,), (8,)), ("RFFT", (2, 7), (7,)), ("RFFT", (2, 3, 4), (3, 4)), ("RFFT", (1,), (1,)),
    ("IRFFT", (5,), (8,)), ("IRFFT", (2, 4), (7,)), ("IRFFT", (2, 3, 3), (3, 4)),
    ("IRFFT", (2, 1), (1,)), ("IRFFT", (3, 2), (2,)),
]
for fft_type, shape, lengths in FFT_CASES:
    for dt in ((F32, F64) if fft_type == "RFFT" else COMPLEX):
        add(f"fft-{fft_type}-{sig(dt, shape)}-{'x'.join(map(str, lengths))}", fft_p,
            gen((shape, dt, {})), dict(fft_type=FftType[fft_type], fft_lengths=lengths),
            lambda x, _t=fft_type, _l=lengths: lax.fft(x, _t, _l),
            lambda x, _t=fft_type, _l=lengths: _naive_fft(x, _t, _l),
            rtol=1e-4 if dt in (F32, C64) else 1e-12)
