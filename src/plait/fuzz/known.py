"""Known differences the fuzzer keeps finding: reported apart, never counted as new.

An entry is one of two kinds:

* an open plait bug (issue 21 lists most of them; none is open now). When its fix
  lands, delete its entry: the fixed-seed CI slice then guards the fix.
* inherited behaviour of a compiler plait hands programs to, which jax.jit shows on
  the same operands (the ``xla`` engine: XLA:CPU flushes subnormal floats to zero,
  its simplifier rewrites a few expressions, its complex formulas are not NumPy's).
  plait cannot change it without fighting XLA; docs/xla.md describes each. These
  entries are restricted to their engine and their predicates recompute what the
  behaviour predicts (NumPy on flushed operands, say) and compare the engine's value
  with it, so a wrong value that merely involves a subnormal is still new.

Each entry recognises its failures from a :class:`Case`: the op, the operands, NumPy's
and the engine's values. Deliberate differences from NumPy are not here; they are
encoded once in the op table (``ops.py``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np


@dataclasses.dataclass
class Case:
    """A failing node as a predicate sees it."""
    operands: list                          # the engine's operands (arrays or Python scalars)
    want: np.ndarray                        # NumPy's value on ``operands``
    got: np.ndarray                         # the engine's value
    numpy: Callable[[list], np.ndarray]     # NumPy's value of the node on other operands
    agrees: Callable[[np.ndarray], bool]    # whether ``got`` matches a value at the op's tolerance
    params: dict = dataclasses.field(default_factory=dict)   # the node's static parameters
    upstream: tuple = ()                    # per operand: the ops it was computed by (at any depth)


def _eps(dt) -> float:
    dt = np.dtype(dt)
    return float(np.finfo(np.float32 if dt == np.complex64 else
                          (np.float64 if dt.kind == "c" else dt)).eps)


def _rel_error(c: Case) -> np.ndarray:
    """|got - want| / |want| per element (0 where both are equal, inf where want is 0)."""
    g, w = c.got.astype(np.complex128), c.want.astype(np.complex128)
    with np.errstate(all="ignore"):
        return np.where(g == w, 0.0, np.abs(g - w) / np.abs(w))


def _finite(*xs) -> bool:
    return all(np.isfinite(np.asarray(x)).all() for x in xs)


# --- XLA:CPU flushes subnormals: its CPU runs with FTZ and DAZ set, as jax.jit's does ----------
def _flush(x):
    """``x`` with every subnormal float (each part of a complex) replaced by a zero of its sign."""
    if isinstance(x, (bool, int)) or not isinstance(x, (float, complex, np.ndarray, np.generic)):
        return x
    a = np.asarray(x)
    if a.dtype.kind == "c":
        out = np.array(a)
        out.real, out.imag = _flush(a.real), _flush(a.imag)
        return out if isinstance(x, np.ndarray) else out[()]
    if a.dtype.kind != "f":
        return x
    tiny = np.finfo(a.dtype).tiny
    with np.errstate(all="ignore"):
        out = np.where((a != 0) & (np.abs(a) < tiny), np.copysign(a.dtype.type(0), a), a)
    out = out.astype(a.dtype)
    return out if isinstance(x, np.ndarray) else (out[()] if isinstance(x, np.generic) else type(x)(out))


def _has_subnormal(x) -> bool:
    a = np.asarray(x)
    if a.dtype.kind == "c":
        return _has_subnormal(a.real) or _has_subnormal(a.imag)
    if a.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        return bool(((a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)).any())


def _flushed_subnormals(c: Case) -> bool:
    """An operand or a result is subnormal and the engine's value is NumPy's with
    subnormal operands read as zero (DAZ), its result flushed to zero (FTZ), or both;
    or, element by element, either that or NumPy's (a select passes a subnormal
    through unflushed: ``fmax(5e-324, nan)`` is 5e-324, ``fmax(5e-324, 0)`` is 0)."""
    daz = [_flush(x) for x in c.operands]
    on_daz = c.numpy(daz)
    if any(_has_subnormal(v) for v in [*c.operands, c.want, on_daz]):
        flushed = _flush(on_daz)
        if any(c.agrees(v) for v in (flushed, _flush(c.want), on_daz)):
            return True
        if flushed.shape != c.want.shape or c.got.shape != c.want.shape:
            return False
        return c.agrees(np.where(c.got == c.want, c.want, flushed).astype(c.want.dtype))
    return _intermediate_underflow(c)


def _sorted_by_flushed_keys(c: Case) -> bool:
    """XLA's sort compares subnormals as zeros (DAZ) but moves the values unflushed:
    NumPy's stable sort by flushed keys, of the original values (or their positions)."""
    x = np.asarray(c.operands[0])
    if x.dtype.kind != "f" or not _has_subnormal(x):
        return False
    axis = c.params.get("axis", -1)
    if axis is None:
        x, axis = x.ravel(), 0
    order = np.argsort(_flush(x), axis=axis, kind="stable")
    model = order if c.want.dtype.kind in "iu" else np.take_along_axis(x, order, axis)
    return c.agrees(model.astype(c.want.dtype))


def _arctan2_of_flushed_zeros(c: Case) -> bool:
    """XLA's arctan2 divides: where both operands flush to zero it is NaN (0/0) where
    NumPy's ``atan2`` of the signed zeros (or of the subnormals) is a multiple of pi/4."""
    y, x = (np.asarray(_flush(v)) for v in c.operands)
    if not any(_has_subnormal(v) for v in c.operands):
        return False
    both = np.broadcast_to((y == 0) & (x == 0), c.want.shape)
    model = np.where(both, np.nan, c.numpy([y, x])).astype(c.want.dtype)
    return bool(both.any()) and c.agrees(model)


def _intermediate_underflow(c: Case) -> bool:
    """A result within 4x the smallest normal float is zero: a formula inside the op
    (``asin x = 2 atan2(x, ...)``) halved it to a subnormal, which was flushed."""
    w = c.want
    if w.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        low = (w != 0) & (np.abs(w) < 4 * np.finfo(w.dtype).tiny)
    zero = np.copysign(np.zeros_like(w), w)
    return bool(low.any()) and c.agrees(np.where(low, zero, w).astype(w.dtype))


# --- XLA's algebraic simplifier --------------------------------------------------------------
def _ones_like(v):
    return type(v)(1) if isinstance(v, (bool, int, float, complex)) else np.ones_like(v)


def _bool_operand_is_select(c: Case) -> bool:
    """``convert(b) * x`` becomes ``select(b, x, 0)`` (and ``convert(b) / x``
    ``select(b, 1 / x, 0)``): where ``b`` is False the value is +0.0 for every ``x``
    (NumPy: -0.0 for negative ``x``, NaN for inf/NaN or a zero divisor)."""
    if len(c.operands) != 2:
        return False
    for i, b in enumerate(c.operands):
        if np.asarray(b).dtype.kind != "b":
            continue
        x = c.operands[1 - i]

        def with_(bv, xv, i=i):
            return c.numpy([bv, xv] if i == 0 else [xv, bv])
        taken = with_(b, _ones_like(x)) != 0        # where b is True, in the result's layout
        value = with_(_ones_like(b), x)             # the op with b True everywhere
        if c.agrees(np.where(taken, value, 0).astype(c.want.dtype)):
            return True
    return False


def _plus_zero_is_identity(c: Case) -> bool:
    """``x + 0.0`` becomes ``x``: ``-0.0 + 0.0`` is -0.0 (IEEE and NumPy: +0.0)."""
    if len(c.operands) != 2:
        return False
    for zero, x in (c.operands, c.operands[::-1]):
        z = np.asarray(zero)
        if z.dtype.kind != "b" and not np.any(z) and not np.signbit(np.real(z)).any():
            return c.agrees(np.broadcast_to(np.asarray(x).astype(c.want.dtype), c.want.shape))
    return False


_POWERS = ("power", "float_power", "exp", "exp2", "lax.integer_pow", "square")


def _log_of_power(c: Case) -> bool:
    """``log(pow(a, b))`` becomes ``b * log(|a|)`` and ``log(exp(a))`` becomes ``a``:
    where NumPy's log of the power is NaN (a negative power, a NaN power of a negative
    base) or the power overflowed to inf or underflowed to 0, the value is finite;
    elsewhere it is within ``8 eps (1 + |log|)`` of NumPy's (which rounds the power first). Only for an operand computed from a power (XLA sees
    through ops between them that it simplifies away, a one-row cummin say)."""
    if not c.upstream or not c.upstream[0] & set(_POWERS):
        return False
    x = np.asarray(c.operands[0])
    if x.dtype.kind != "f":
        return False
    g, w = c.got.astype(np.float64), c.want.astype(np.float64)
    with np.errstate(all="ignore"):
        free = np.broadcast_to(~np.isfinite(x) | (x <= 0) | np.isnan(c.want) |
                               ((x == 1) & np.isnan(c.got)), c.want.shape)   # 1 ** nan
        near = np.abs(g - w) <= 8 * _eps(c.want.dtype) * (1 + np.abs(w))
    return c.agrees(np.where(free | near, c.got, c.want).astype(c.want.dtype))


def _reciprocal_times(c: Case) -> bool:
    """Division by a constant or broadcast ``d`` becomes multiplication by ``1 / d``
    (rounded once more): ``divide`` and ``round`` with ``decimals`` (which divides by a
    power of ten) are NumPy's computed that way."""
    x = np.asarray(c.operands[0])
    if x.dtype.kind not in "fc":
        return False
    dt = c.want.dtype
    with np.errstate(all="ignore"):
        if "decimals" in c.params:
            d = int(c.params["decimals"])
            if d == 0:
                return False
            f = dt.type(10.0 ** abs(d))
            model = (np.rint(x * f) * (dt.type(1) / f)) if d > 0 else np.rint(x * (dt.type(1) / f)) * f
        elif len(c.operands) == 2:
            model = np.multiply(x, np.reciprocal(np.asarray(c.operands[1]).astype(dt)))
        else:
            return False
    return c.agrees(np.asarray(model).astype(dt))


def _float16_constant_overflow(c: Case) -> bool:
    """Constant factors of a float16 product are folded together (``(r * 100)**3`` becomes
    ``r**3 * 100**3``), and the folded constant overflows: inf or NaN (``0 * inf``)
    where NumPy's value is finite. Only where NumPy's value is finite and the engine's not."""
    if c.want.dtype != np.float16 or c.got.shape != c.want.shape:
        return False
    bad = np.isfinite(c.want) & ~np.isfinite(c.got)
    return bool(bad.any()) and c.agrees(np.where(bad, c.got, c.want).astype(np.float16))


# --- XLA's formulas for transcendental functions -------------------------------------------
def _cbrt_of_subnormal(c: Case) -> bool:
    """XLA's cbrt of a subnormal operand is garbage (a negative number for 1e-45): its
    exponent-halving first guess assumes a normal number. Elsewhere NumPy's value."""
    x = np.asarray(c.operands[0])
    if x.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        sub = (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)
    return bool(sub.any()) and c.agrees(np.where(sub, c.got, c.want).astype(c.want.dtype))


def _within_eps(n: float):
    """A predicate: every finite value within ``n`` eps (absolute) of NumPy's; infinities
    and NaNs NumPy's."""
    def pred(c: Case) -> bool:
        if c.want.dtype.kind != "f" or c.got.shape != c.want.shape:
            return False
        g, w = c.got.astype(np.float64), c.want.astype(np.float64)
        fin = np.isfinite(g) & np.isfinite(w)
        with np.errstate(all="ignore"):
            near = np.abs(g - w) <= n * _eps(c.want.dtype)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        return bool(np.where(fin, near, same).all())
    return pred


def _hyperbolic_ulps(c: Case) -> bool:
    """XLA's sinh/cosh (``exp(x - ln 2)`` pairs; complex: ``sinh a cos b + i cosh a sin b``
    with ``sinh a`` a difference of exponentials) are off by ``eps * |a|`` relative for a
    large real part ``a`` and, complex, by ``eps`` absolute for a tiny one; NumPy's libm
    is within an ulp. Values that are not finite must be NumPy's."""
    x = np.asarray(c.operands[0])
    if c.got.shape != c.want.shape or np.asarray(x).dtype.kind == "b":
        return False
    a = np.broadcast_to(np.abs(np.real(x)).astype(np.float64), c.want.shape)
    fin = np.isfinite(c.want) & np.isfinite(c.got)
    g, w = c.got.astype(np.complex128), c.want.astype(np.complex128)
    with np.errstate(all="ignore"):
        # relative: eps * |a| from exp of a large argument; complex: plus eps * cosh(a)
        # absolute, the cancellation in exp(a) - exp(-a) for a tiny real part
        bound = 8 * _eps(c.want.dtype) * (np.abs(w) * (2 + a) +
                                          (np.cosh(a) if c.want.dtype.kind == "c" else 0))
        err = np.abs(g - w)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    return bool(np.where(fin, err <= bound, same).all())


def _complex_power_digits(c: Case) -> bool:
    """XLA's complex ``pow(x, y) = exp(y log x)`` loses ``|y log x|`` ulps of the result
    (the rounding of ``y log x`` is amplified by exp); NumPy's loses fewer."""
    if c.want.dtype.kind != "c" or not _finite(*c.operands, c.want, c.got):
        return False
    x, y = (np.asarray(v).astype(np.complex128) for v in c.operands)
    with np.errstate(all="ignore"):
        bound = 8 * _eps(c.want.dtype) * (1 + np.abs(y * np.log(x)))
    return bool((_rel_error(c) <= bound).all())


def _complex_overflow(c: Case) -> bool:
    """A complex product or exponential of finite operands overflows: XLA evaluates
    ``(ac - bd) + (ad + bc)i`` and ``exp(a) (cos b + i sin b)`` with other roundings and
    infinities than NumPy (``inf - inf`` is NaN in one, an infinity in the other;
    ``inf * sin 0`` is NaN in NumPy, 0 in XLA). Only at the elements that overflow."""
    if c.want.dtype.kind != "c" or not _finite(*c.operands):
        return False
    over = ~np.isfinite(c.want) | ~np.isfinite(c.got)
    return bool(over.any()) and c.agrees(np.where(over, c.got, c.want).astype(c.want.dtype))


def _complex_nonfinite_operand(c: Case) -> bool:
    """A complex operand has an infinite or NaN part: XLA's complex exp/sin/... do not
    follow C99's special values as NumPy does (``exp(-inf + inf j)`` is NaN, not 0).
    Only at those elements."""
    x = np.asarray(c.operands[0])
    if x.dtype.kind != "c":
        return False
    odd = np.broadcast_to(~np.isfinite(x), c.want.shape)
    return bool(odd.any()) and c.agrees(np.where(odd, c.got, c.want).astype(c.want.dtype))


def _arctan_branch_point(c: Case) -> bool:
    """Complex arctan within ``sqrt(tiny)`` of a branch point ``±i``: XLA squares the
    distance, which underflows, and returns an infinite imaginary part."""
    x = np.asarray(c.operands[0])
    if x.dtype.kind != "c":
        return False
    rd = np.float32 if x.dtype == np.complex64 else np.float64
    near = np.minimum(np.abs(x - 1j), np.abs(x + 1j)) < 4 * np.sqrt(np.finfo(rd).tiny)
    return bool(near.any()) and c.agrees(np.where(near, c.got, c.want).astype(c.want.dtype))


_XLA = ("xla",)
_PRODUCTS = ("multiply", "outer", "einsum_outer", "matmul", "matmul_1d", "power", "float_power",
             "square", "lax.integer_pow", "exp", "exp2", "expm1", "sinh", "cosh")
_COMPLEX_FUNCTIONS = ("exp", "exp2", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh", "log",
                      "log1p", "sqrt", "lax.rsqrt", "arctan", "arcsin", "arccos", "arcsinh",
                      "arccosh", "arctanh", "power", "square", "reciprocal", "lax.logistic",
                      "mean")

# (label, op names or None for every op, engines or None for all, predicate(Case) -> bool)
KNOWN: list[tuple[str, Optional[tuple], Optional[tuple], Callable[[Case], bool]]] = [
    ("XLA:CPU flushes subnormal floats to zero (FTZ/DAZ, as jax.jit on CPU)", None, _XLA,
     _flushed_subnormals),
    ("XLA:CPU's arctan2 of two subnormals is NaN (0/0 once flushed)", ("arctan2",), _XLA,
     _arctan2_of_flushed_zeros),
    ("XLA:CPU sorts subnormals as zeros (DAZ comparisons), moving them unflushed",
     ("sort", "argsort"), _XLA, _sorted_by_flushed_keys),
    ("XLA rewrites convert(bool) * x as select(bool, x, 0): False * x is +0.0",
     ("multiply", "divide", "outer", "einsum_outer"), _XLA, _bool_operand_is_select),
    ("XLA rewrites x + 0.0 as x: -0.0 + 0.0 is -0.0", ("add",), _XLA, _plus_zero_is_identity),
    ("XLA rewrites log(pow(a, b)) as b * log(|a|), log(exp(a)) as a (finite where NumPy's is not)",
     ("log", "log2", "log10", "arccosh", "arcsinh"), _XLA, _log_of_power),
    ("XLA divides by a constant as a multiplication by its reciprocal",
     ("divide", "round"), _XLA, _reciprocal_times),
    ("XLA folds constant factors of a float16 product, and the folded constant overflows",
     ("lax.integer_pow",), _XLA, _float16_constant_overflow),
    ("XLA's cbrt of a subnormal is wrong (jax.jit's too)", ("cbrt",), _XLA, _cbrt_of_subnormal),
    # measured against NumPy on 2e5 points: arctanh up to 33 eps (129 ulps near 0.41 in
    # float64), tanh up to 3.5 eps (6 ulps near -1); NumPy's libm is within an ulp
    ("XLA's arctanh is off by up to 33 eps (jax.jit's too)", ("arctanh",), _XLA, _within_eps(64)),
    ("XLA's tanh is off by up to 3.5 eps (jax.jit's too)", ("tanh",), _XLA, _within_eps(8)),
    ("XLA's sinh/cosh lose digits at large or tiny real parts (jax.jit's too)",
     ("sinh", "cosh"), _XLA, _hyperbolic_ulps),
    ("XLA's complex pow loses |y log x| ulps (jax.jit's too)",
     ("power", "float_power"), _XLA, _complex_power_digits),
    ("XLA's complex products and exponentials overflow differently from NumPy's (jax.jit's too)",
     _PRODUCTS, _XLA, _complex_overflow),
    ("XLA's complex functions ignore C99's special values of infinite parts (jax.jit's too)",
     _COMPLEX_FUNCTIONS, _XLA, _complex_nonfinite_operand),
    ("XLA's complex arctan is infinite within sqrt(tiny) of ±i (jax.jit's too)",
     ("arctan",), _XLA, _arctan_branch_point),
]


def known_label(op: str, engine: str, case: Case) -> Optional[str]:
    """The known difference explaining a failure of ``op`` in ``engine``, if any."""
    for label, ops, engines, pred in KNOWN:
        if (ops is None or op in ops) and (engines is None or engine in engines):
            try:
                if pred(case):
                    return label
            except Exception:   # noqa: BLE001 - a predicate that cannot judge does not match
                continue
    return None


def known_grad_label(program, message: str) -> Optional[str]:
    """The known defect explaining a gradient-mode failure of ``program``, if any (none
    is open: the empty-sort gradient of issue 21.8 is fixed)."""
    return None
