"""The fuzzer's op table: one row per op, the single source of every fact about it.

A row is an :class:`OpSpec`: a Python *template* (``"{ns}.sin({0})"``) that is
evaluated with ``ns = pnp`` for plait and ``ns = np`` for the NumPy oracle (or a
separate ``np_template`` when the oracle is spelled differently), the input dtypes
the fuzzer feeds it, a static-parameter generator, its tolerance class and scale
(``tolerance.py``), whether the sign of zero is defined, where NumPy's result is
undefined (those elements are not compared), and whether gradient mode may use it
(with the domain where it is smooth).

Where plait deliberately differs from NumPy, the row says so once:

* float -> integer conversion of NaN, infinities or out-of-range values is
  undefined in C and platform-defined in NumPy: not compared (``_undefined_cast``).
* sums, products and other reductions start from the identity (``+0.0``), so the
  sign of a zero result is not compared (``signed_zero=False``).
* the native backend contracts ``a*b + c`` into one FMA (``-ffp-contract=fast``):
  additive ops are compared at the ulp of their largest operand (``scale="inputs"``).
* ``floor_divide`` with an infinite operand is ``floor(x / y)`` (the Array API
  standard's cases) where NumPy gives NaN, and integer ``lax.rem(x, 0)`` is 0.
* complex inputs are finite (C99's complex special cases are not NumPy's), and the
  sign of a zero real or imaginary part of a complex result is not compared; complex
  ``expm1`` of a non-finite value (an intermediate, or a shrunk input) follows the Array
  API standard where NumPy gives NaN: not compared there (``_standard_expm1``).
* NumPy's integer round with negative ``decimals`` casts a float64 result that leaves
  the integer range back (undefined in C): not compared there (``_undefined_round``).
* IEEE leaves ``max(-0.0, +0.0)`` open: max/min/clip/clamp/sort do not compare signs of zero.
* NumPy rounds integers with negative ``decimals`` through float64 (inexact above 2**53);
  plait rounds them exactly: not compared there (``_undefined_round``).
* NumPy's ``quantile`` of int64 subtracts in int64 (overflowing near 2**63); the oracle
  converts integer inputs to float64 first (NumPy's result dtype is float64 anyway). At
  an integral position plait (as jax.numpy) interpolates between the order statistic
  there and itself, NumPy toward the next one with weight 0, NaN when their difference
  is infinite: not compared there (``_undefined_quantile_inf``).
* complex ``integer_pow`` whose intermediate power overflows is not compared (NumPy's
  own ``power`` and a scaled division disagree there), nor a real one to a negative
  power (NumPy's ``power`` gives the tiny quotient, repeated multiplication 0).
* products whose value depends on the multiplication order through overflow or
  underflow (``1e300 * 1e300 * 0``) are not compared (``_undefined_prod``): the
  native ``cumprod`` of float32/float64/complex reduces each output lane on its own
  and may vectorize (reassociate) it. float16 ``cumprod`` rounds every running value
  to float16 in NumPy's order on every backend, so it is compared in full.
* NumPy's float16 ``var``/``std`` sums the values, squares the deviations (overflowing
  above 256) and sums the squares in float16 (overflowing above 65504); plait computes
  in float32: such lanes are not compared (``_undefined_var16``).
* reverse-mode ``while_loop`` is unsupported by design (as in JAX): not in grad mode.

The rows cover plait.numpy's elementwise functions, reductions, cumulative ops,
shape and indexing functions, sorting and contractions, ``.at`` updates, a few
``plait.nn`` functions, nested ``jit``, and the ``plait.lax`` primitives that no NumPy
function reaches (``rem``, shifts, ``population_count``, ``clamp``, ``integer_pow``,
``cummax``, ``reduce_window_*``, ``dynamic_slice``, ``conv_general_dilated``,
``reduce_xor``, ``cond``, ``fori_loop``, ``while_loop``, ``scan``, ...): 600 random
programs staged under ``jit`` (and a few gradients) reach 103 of plait's 105 primitives
(``custom.py`` supplies the custom-derivative calls).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import numpy as np

BOOL = ("bool",)
SINTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
INTS = SINTS + UINTS
FLOATS = ("float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
REAL = BOOL + INTS + FLOATS
NUM = INTS + FLOATS + COMPLEX
ALL = REAL + COMPLEX
INEXACT = FLOATS + COMPLEX


class Src(str):
    """A parameter already rendered as Python source (printed without quotes)."""


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """One op: how to call it in plait and NumPy, and how to compare the results."""
    name: str
    arity: int
    template: str
    dtypes: tuple = ALL
    tol: str = "exact"
    params: Optional[Callable[[np.random.Generator, list], Optional[dict]]] = None
    np_template: Optional[str] = None
    scale: Any = "out"                      # "out" | "inputs" | fn(args, params, want)
    signed_zero: bool = True
    undefined: Optional[Callable] = None    # fn(args, params, want) -> bool mask (not compared)
    scalar_ok: bool = False                 # the last operand may be a Python scalar
    grad: bool = False                      # smooth: usable by gradient mode
    smooth: Optional[Callable] = None       # fn(*args) -> bool: inputs far from kinks/poles
    same_dtype: bool = False                # lax rows: all operands share one dtype
    same_shape: bool = False                # lax rows: all operands share one shape
    forward: bool = True                    # forward mode (jvp) defined (not for custom_vjp)

    def source(self, args: list[str], params: dict, numpy: bool) -> str:
        """The call as Python source over argument names ``args``."""
        tpl = self.np_template if (numpy and self.np_template) else self.template
        rendered = {k: (v if isinstance(v, Src) else repr(v)) for k, v in params.items()}
        return tpl.format(*args, ns="np" if numpy else "pnp", **rendered)


# --- parameter generators (rng, avals = [(shape, dtype), ...]) -----------------------------
def _axis(rng, shape, allow_none=True):
    nd = len(shape)
    if nd == 0 or (allow_none and rng.random() < 0.3):
        return None
    return int(rng.integers(-nd, nd))


def p_reduce(rng, avals):
    shape = avals[0][0]
    nd = len(shape)
    r = rng.random()
    if nd >= 2 and r < 0.2:
        ax = tuple(sorted(rng.choice(nd, size=2, replace=False).tolist()))
    else:
        ax = _axis(rng, shape)
    return {"axis": ax, "keepdims": bool(rng.random() < 0.3)}


def p_reduce_nonempty(rng, avals):
    """Reductions without an identity (max, argmax): the reduced extent must be nonempty."""
    p = p_reduce(rng, avals)
    shape = avals[0][0]
    ax = p["axis"]
    axes = range(len(shape)) if ax is None else (ax if isinstance(ax, tuple) else (ax,))
    if any(shape[a] == 0 for a in axes):
        return None
    return p


def p_arg(rng, avals):
    shape = avals[0][0]
    ax = _axis(rng, shape)
    extent = int(np.prod(shape)) if ax is None else shape[ax]
    if extent == 0:
        return None
    return {"axis": ax}


def p_cum(rng, avals):
    return {"axis": _axis(rng, avals[0][0])}


def p_axis_int(rng, avals):
    shape = avals[0][0]
    if not shape:
        return None
    return {"axis": _axis(rng, shape, allow_none=False)}


def p_transpose(rng, avals):
    return {"axes": tuple(int(a) for a in rng.permutation(len(avals[0][0])))}


def p_reshape(rng, avals):
    shape = avals[0][0]
    cands = [(-1,), tuple(reversed(shape)), (1,) + tuple(shape), tuple(shape) + (1,)]
    if 0 not in shape:
        cands.append((1, -1))
    return {"shape": cands[int(rng.integers(len(cands)))]}


def p_expand(rng, avals):
    nd = len(avals[0][0])
    return {"axis": int(rng.integers(-nd - 1, nd + 1))}


def p_squeeze(rng, avals):
    ones = [i for i, s in enumerate(avals[0][0]) if s == 1]
    if not ones:
        return None
    return {"axis": tuple(ones[:int(rng.integers(1, len(ones) + 1))])}


def p_flip(rng, avals):
    return {"axis": _axis(rng, avals[0][0])}


def p_roll(rng, avals):
    return {"shift": int(rng.integers(-4, 5)), "axis": _axis(rng, avals[0][0])}


def p_broadcast_to(rng, avals):
    shape = tuple(3 if s == 1 and rng.random() < 0.5 else s for s in avals[0][0])
    return {"shape": (int(rng.integers(1, 3)),) + shape}


def p_tile(rng, avals):
    return {"reps": tuple(int(r) for r in rng.integers(0, 3, size=int(rng.integers(1, 3))))}


def p_repeat(rng, avals):
    return {"repeats": int(rng.integers(0, 3)), "axis": _axis(rng, avals[0][0])}


def p_pad(rng, avals):
    shape = avals[0][0]
    mode = ["constant", "edge", "wrap", "reflect", "symmetric"][int(rng.integers(5))]
    if mode != "constant" and 0 in shape:
        mode = "constant"
    width = int(rng.integers(0, 3))
    if mode in ("reflect",) and any(s < 2 for s in shape):
        mode = "edge" if 0 not in shape else "constant"
    return {"pad_width": width, "mode": mode}


def p_slice(rng, avals):
    shape = avals[0][0]
    if not shape:
        return None
    parts = []
    for s in shape:
        a = int(rng.integers(-s - 1, s + 2)) if rng.random() < 0.5 else None
        b = int(rng.integers(-s - 1, s + 2)) if rng.random() < 0.5 else None
        st = [None, 1, 2, -1, -2][int(rng.integers(5))]
        parts.append(":".join("" if v is None else str(v) for v in (a, b, st)).rstrip(":") or ":")
    if rng.random() < 0.3:
        parts.insert(int(rng.integers(len(parts) + 1)), "None")
    return {"key": Src(", ".join(parts))}


def p_index_int(rng, avals):
    shape = avals[0][0]
    if not shape or shape[0] == 0:
        return None
    return {"key": Src(str(int(rng.integers(-shape[0], shape[0]))))}


def p_take(rng, avals):
    shape = avals[0][0]
    ax = _axis(rng, shape)
    n = int(np.prod(shape)) if ax is None else shape[ax]
    if n == 0:
        return None
    idx = [int(i) for i in rng.integers(-n, n, size=int(rng.integers(1, 4)))]
    return {"indices": idx, "axis": ax}


def p_astype(rng, avals):
    return {"dtype": ALL[int(rng.integers(len(ALL)))]}


def p_round(rng, avals):
    return {"decimals": int(rng.integers(-2, 3))}


def p_clip(rng, avals):
    lo = float(np.round(rng.uniform(-3, 1), 1)) if rng.random() < 0.8 else None
    hi = float(np.round(rng.uniform(0, 3), 1)) if rng.random() < 0.8 or lo is None else None
    if avals[0][1] in INTS + BOOL:
        lo = None if lo is None else int(lo)
        hi = None if hi is None else int(hi)
    return {"lo": lo, "hi": hi}


def p_shift(rng, avals):
    return None if avals[0][1] not in INTS else {}


def p_int_pow(rng, avals):
    y = int(rng.integers(-2, 4))
    if y < 0 and avals[0][1] not in INEXACT:
        y = -y
    return {"y": y}


def p_window(rng, avals):
    shape = avals[0][0]
    nd = len(shape)
    if nd == 0:
        return None
    w = tuple(int(rng.integers(1, 3)) for _ in shape)
    s = tuple(int(rng.integers(1, 3)) for _ in shape)
    pad = tuple((int(rng.integers(0, 2)), int(rng.integers(0, 2))) for _ in shape)
    return {"w": w, "s": s, "pad": pad}


def p_sort(rng, avals):
    shape = avals[0][0]
    if not shape:
        return None
    return {"axis": _axis(rng, shape, allow_none=False)}


def p_quantile(rng, avals):
    p = p_reduce(rng, avals)
    if p["axis"] is not None and not isinstance(p["axis"], int):
        p["axis"] = None
    shape = avals[0][0]
    ext = int(np.prod(shape)) if p["axis"] is None else shape[p["axis"]]
    if ext == 0:
        return None
    p["q"] = float(np.round(rng.uniform(0, 1), 2))
    return p


def p_nonempty(rng, avals):
    return {} if 0 not in avals[0][0] else None


def p_lax_cum(rng, avals):
    shape = avals[0][0]
    if not shape:
        return None
    return {"axis": int(rng.integers(0, len(shape))), "reverse": bool(rng.random() < 0.5)}


def p_matmul(rng, avals):
    return {} if len(avals[0][0]) >= 2 else None


# --- scales (magnitude whose ulp is allowed) and undefined elements ---------------------
def fabs(x) -> np.ndarray:
    """``|x|`` in float64 with infinities and NaN read as 0: a lane holding an infinity is
    compared exactly anyway, and must not shrink its neighbours' tolerance to zero."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        a = np.abs(x).astype(np.float64)
    return np.where(np.isfinite(a), a, 0.0)


def s_logistic(args, params, want):
    """|f| max(1, |1 - f|): near a complex pole of ``1 / (1 + e)`` (x near (2k+1)πi) every
    formula cancels in ``1 + e``, an error of about an ulp of |f| times |e f| = |1 - f|
    (plait's ``e / (1 + e)`` and the oracle's ``1 / (1 + 1/e)`` differed by 100 ulps of
    |f| at x = -7e-221 + 3.1502j, f = 0.5 - 116.5j); real results keep |f|."""
    f = np.asarray(want, np.complex128)
    with np.errstate(all="ignore"):
        return np.abs(f) * np.maximum(1.0, np.abs(1.0 - f))


def s_inputs(args, params, want):
    with np.errstate(all="ignore"):
        mags = [np.abs(np.asarray(a, np.complex128 if np.asarray(a).dtype.kind == "c" else np.float64))
                for a in args if isinstance(a, np.ndarray) or np.isscalar(a)]
        m = np.abs(np.asarray(want, np.complex128 if np.asarray(want).dtype.kind == "c" else np.float64))
        for x in mags:
            m = np.maximum(m, x)
    return m


def _reduced_size(x: np.ndarray, axis) -> int:
    """How many elements a reduction of ``x`` over ``axis`` (None, an int or a tuple) combines."""
    if axis is None:
        return x.size
    return int(np.prod([x.shape[i] for i in (axis if isinstance(axis, tuple) else (axis,))]))


def _abs_reduce(fn):
    def scale(args, params, want):
        x = np.asarray(args[0])
        with np.errstate(all="ignore"):
            a = fabs(x)
            kw = {k: v for k, v in params.items() if k in ("axis", "keepdims")}
            ax = kw.get("axis")
            n = _reduced_size(x, ax)
            return fn(a, **kw) * max(n, 1)
    return scale


def s_sum(args, params, want):
    return _abs_reduce(np.sum)(args, params, want)


def s_mean(args, params, want):
    return _abs_reduce(np.mean)(args, params, want) if np.asarray(args[0]).size else 0.0


def s_var(args, params, want):
    x = np.asarray(args[0])
    if not x.size:
        return 0.0
    with np.errstate(all="ignore"):
        kw = {k: v for k, v in params.items() if k in ("axis", "keepdims")}
        a = fabs(x)
        ax = kw.get("axis")
        n = _reduced_size(x, ax)
        m2 = np.mean(a * a, **kw) * max(n, 1) * 4
        return np.sqrt(m2) * np.sqrt(n) if params.get("_std") else m2


def _undefined_var16(args, params, want):
    """NumPy sums a float16 var's values for their mean, squares the deviations and sums
    the squares, all in float16 (inf above 65504, the squares above 256); plait computes
    in float32: lanes of a float16 var/std where any of them overflows, or a sum comes
    within its float16 rounding of it, are not compared (``var([0, 374])`` and
    ``std([-65504, -65504])`` are inf in NumPy, 34969 and 0 in plait and jax.numpy)."""
    x = np.asarray(args[0])
    if x.dtype != np.float16 or not x.size:
        return None
    kw = {k: v for k, v in params.items() if k in ("axis", "keepdims")}
    ax = kw.get("axis")
    n = _reduced_size(x, ax)
    with np.errstate(all="ignore"):
        w = x.astype(np.float64)
        dev = np.abs(w - np.mean(w, axis=ax, keepdims=True))
        dev = np.where(np.isnan(dev), 0, dev)
        near = 1 + n * 2.0 ** -10                 # a float16 sum's rounding, relative
        return ((np.max(dev, **kw) >= 255) | (np.sum(dev * dev, **kw) * near >= 65504)
                | (np.sum(np.abs(w), **kw) * near >= 65504))


def s_window_sum(args, params, want):
    """Per window: ``|value|`` plus the sum of ``|x|`` over the window times its size (a
    sum's rounding in any order stays within that many ulps of it), at most float64's
    largest value. The operand's largest ``|x|`` times 8 had been the scale of every
    window: a -1.8e308 in one made it inf, whose ulp is NaN, so a 1-ulp difference in a
    window of small values was reported."""
    from plait.fuzz.oracles import reduce_window
    n = int(np.prod(params["w"]))
    with np.errstate(all="ignore"):
        s = np.abs(np.asarray(want, np.float64)) + n * reduce_window(
            fabs(args[0]), "sum", params["w"], params["s"], params["pad"])
    return np.minimum(np.where(np.isnan(s), 0.0, s), np.finfo(np.float64).max)


def s_std(args, params, want):
    return s_var(args, dict(params, _std=True), want)


def _undefined_prod(args, params, want):
    """Lanes of a product where some order of multiplication overflows or underflows
    (``1e300 * 1e300 * 0`` is nan one way and 0 another): the order is not a contract."""
    x = np.asarray(args[0])
    if x.dtype.kind not in "fc":
        return None
    info = np.finfo(x.real.dtype)
    with np.errstate(all="ignore"):
        a = np.abs(x).astype(np.float64)
        lg = np.where(np.isfinite(a) & (a > 0), np.log(np.where(a > 0, a, 1.0)), 0.0)
    pos, neg = np.where(lg > 0, lg, 0.0), np.where(lg < 0, lg, 0.0)
    ax = params.get("axis")
    if "keepdims" in params:                 # prod
        pos = np.sum(pos, axis=ax, keepdims=params["keepdims"])
        neg = np.sum(neg, axis=ax, keepdims=params["keepdims"])
    else:                                    # cumprod
        if ax is None:
            pos, neg, ax = pos.ravel(), neg.ravel(), 0
        pos, neg = np.cumsum(pos, axis=ax), np.cumsum(neg, axis=ax)
    return (pos > np.log(float(info.max)) - 1) | (neg < np.log(float(info.tiny)) + 1)


def _undefined_cumprod(args, params, want):
    """``_undefined_prod`` for ``cumprod``, except float16, whose steps are exact."""
    if np.asarray(args[0]).dtype == np.float16:
        return None
    return _undefined_prod(args, params, want)


def s_prod(args, params, want):
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):
        return np.abs(np.asarray(want, np.complex128 if x.dtype.kind == "c" else np.float64)) * max(x.size, 1)


def s_cum(args, params, want):
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):
        a = fabs(x)
        ax = params.get("axis")
        if ax is None:
            a = a.ravel()
            ax = 0
        return np.cumsum(a, axis=ax) * max(x.size, 1)


def s_matmul(args, params, want):
    x = fabs(args[0])
    with np.errstate(all="ignore"):
        if x.ndim == 1:
            return np.sum(x * x) * max(x.shape[0], 1)
        return np.matmul(x, np.swapaxes(x, -1, -2)) * max(x.shape[-1], 1)


def _undefined_cast(args, params, want):
    src = np.asarray(args[0])
    dst = np.dtype(params["dtype"])
    if dst.kind not in "iu" or src.dtype.kind not in "fc":
        return None
    with np.errstate(all="ignore"):
        v = src.real.astype(np.float64)
        info = np.iinfo(dst)
        return ~np.isfinite(v) | (v <= info.min - 1.0) | (v >= info.max + 1.0)


# --- smooth domains for gradient mode ----------------------------------------------------
def _far(x, points, margin=0.05):
    x = np.asarray(x, np.float64)
    return all(np.all(np.abs(x - p) > margin) for p in points)


def _pos(m=0.05):
    return lambda x: bool(np.all(np.asarray(x) > m))


def _inside(lo, hi, m=0.05):
    return lambda x: bool(np.all((np.asarray(x) > lo + m) & (np.asarray(x) < hi - m)))


def _bounded(b):
    return lambda *xs: all(bool(np.all(np.abs(np.asarray(x)) < b)) for x in xs)


OPS: list[OpSpec] = []


def op(name, arity, template, **kw) -> OpSpec:
    spec = OpSpec(name, arity, template, **kw)
    OPS.append(spec)
    return spec


def unary(name, dtypes=ALL, tol="libm", grad=False, smooth=None, **kw):
    return op(name, 1, "{ns}.%s({0})" % name, dtypes=dtypes, tol=tol, grad=grad, smooth=smooth, **kw)


def binary(name, dtypes=ALL, tol="round", grad=False, smooth=None, scalar_ok=True, **kw):
    return op(name, 2, "{ns}.%s({0}, {1})" % name, dtypes=dtypes, tol=tol, grad=grad,
              smooth=smooth, scalar_ok=scalar_ok, **kw)


# elementwise unary (ints and bools promote to floats as NumPy does)
for _n in ("sin", "cos"):
    unary(_n, grad=True, smooth=_bounded(1e3))
unary("tan", grad=True, smooth=lambda x: bool(np.all(np.abs(np.cos(np.asarray(x))) > 0.2)))
unary("arcsin", grad=True, smooth=_inside(-1, 1, 0.1))
unary("arccos", grad=True, smooth=_inside(-1, 1, 0.1))
unary("arctan", grad=True)
unary("sinh", grad=True, smooth=_bounded(20))
unary("cosh", grad=True, smooth=_bounded(20))
unary("tanh", grad=True)
unary("arcsinh", grad=True)
unary("arccosh", grad=True, smooth=lambda x: bool(np.all(np.asarray(x) > 1.1)))
unary("arctanh", grad=True, smooth=_inside(-1, 1, 0.1))
unary("exp", grad=True, smooth=_bounded(20))
unary("exp2", grad=True, smooth=_bounded(20))
def _standard_expm1(args, params, want):
    """Complex ``expm1`` at a non-finite part follows the Array API standard (C99's
    ``cexp(z) - 1``: ``expm1(-inf + inf j)`` is ``-1 + 0j``, NumPy's ``nan + nanj``;
    tested on its own in ``test_complex_expm1_at_infinities_follows_the_standard``)."""
    x = np.asarray(args[0])
    return ~np.isfinite(x) if x.dtype.kind == "c" else None


unary("expm1", grad=True, smooth=_bounded(20), undefined=_standard_expm1)
unary("log", grad=True, smooth=_pos(0.1))
unary("log2", grad=True, smooth=_pos(0.1))
unary("log10", grad=True, smooth=_pos(0.1))
unary("log1p", grad=True, smooth=lambda x: bool(np.all(np.asarray(x) > -0.9)))
unary("sqrt", tol="round", grad=True, smooth=_pos(0.1))
unary("cbrt", dtypes=REAL, grad=True, smooth=lambda x: _far(x, [0.0], 0.1))
# NumPy multiplies by 180/pi rounded to the operand's dtype; plait may round differently
unary("deg2rad", dtypes=REAL, tol="libm", grad=True)
unary("rad2deg", dtypes=REAL, tol="libm", grad=True)
unary("square", tol="round", grad=True, smooth=_bounded(1e3))
unary("negative", dtypes=NUM, tol="exact", grad=True)
unary("positive", dtypes=NUM, tol="exact", grad=True)
unary("absolute", tol="round", grad=True, smooth=lambda x: _far(x, [0.0]))
unary("fabs", dtypes=REAL, tol="exact")
unary("sign", dtypes=NUM, tol="round")
unary("reciprocal", dtypes=NUM, tol="round", grad=True, smooth=lambda x: _far(x, [0.0], 0.2))
for _n in ("floor", "ceil", "trunc"):
    unary(_n, dtypes=REAL, tol="exact")
unary("rint", dtypes=REAL + COMPLEX, tol="exact")
unary("fix", dtypes=REAL, tol="exact")
for _n in ("isnan", "isinf", "isfinite", "logical_not"):
    unary(_n, tol="exact")
for _n in ("signbit", "isposinf", "isneginf"):
    unary(_n, dtypes=REAL, tol="exact")
unary("invert", dtypes=BOOL + INTS, tol="exact")
unary("bitwise_count", dtypes=BOOL + INTS, tol="exact")
unary("conjugate", tol="exact", grad=True)
unary("real", tol="exact", grad=True)
unary("imag", tol="exact")
unary("angle", tol="libm")
unary("sinc", dtypes=INEXACT + ("int32",), tol="composite", grad=True, smooth=_bounded(10))
unary("nan_to_num", dtypes=NUM, tol="exact")
def _undefined_round(args, params, want):
    """NumPy rounds integers with negative ``decimals`` through float64 (inexact above 2**53;
    plait rounds them exactly) and large floats by scaling (inexact above ~1e15)."""
    x = np.asarray(args[0])
    if x.dtype.kind in "iu":
        if params["decimals"] >= 0:
            return None
        # and the float64 result cast back: undefined where it leaves the integer range
        # (uint32 4294967295 to -1 decimals is 4294967300: NumPy 0, plait's wrap 4)
        info = np.iinfo(x.dtype)
        with np.errstate(all="ignore"):
            r = np.round(x.astype(np.float64), params["decimals"])
        return (np.abs(x.astype(np.float64)) >= 2.0 ** 53) | (r > info.max) | (r < info.min)
    return np.abs(x.astype(np.float64)) > 1e15 if x.dtype.kind == "f" else None


op("round", 1, "{ns}.round({0}, {decimals})", dtypes=REAL, tol="composite", params=p_round,
   undefined=_undefined_round)
op("astype", 1, "{ns}.astype({0}, {dtype})", np_template="{0}.astype({dtype})", tol="exact",
   params=p_astype, undefined=_undefined_cast)
op("clip", 1, "{ns}.clip({0}, {lo}, {hi})", dtypes=REAL, tol="exact", params=p_clip, signed_zero=False)

# elementwise binary
binary("add", dtypes=ALL, scale=s_inputs, grad=True)
binary("subtract", dtypes=NUM, scale=s_inputs, grad=True)
binary("multiply", grad=True, smooth=_bounded(1e3))
binary("divide", grad=True, smooth=lambda x, y: _far(y, [0.0], 0.2))
binary("floor_divide", dtypes=REAL, tol="round", scale=s_inputs,
       np_template="fz.floor_divide({0}, {1})")   # Array API infinities (oracles.floor_divide)
binary("remainder", dtypes=REAL, tol="round", scale=s_inputs)
binary("fmod", dtypes=INTS + FLOATS, tol="round", scale=s_inputs)
binary("power", dtypes=BOOL + INTS + FLOATS + COMPLEX, tol="composite", grad=True,
       smooth=lambda x, y: bool(np.all(np.asarray(x) > 0.2)) and _bounded(3)(y))
binary("float_power", dtypes=INTS + FLOATS + COMPLEX, tol="composite")
binary("arctan2", dtypes=REAL, tol="libm", grad=True, smooth=lambda x, y: bool(np.all(np.hypot(x, y) > 0.2)))
binary("hypot", dtypes=REAL, tol="libm", grad=True, smooth=lambda x, y: bool(np.all(np.hypot(x, y) > 0.2)))
binary("logaddexp", dtypes=REAL, tol="composite", scale=s_inputs)
binary("logaddexp2", dtypes=REAL, tol="composite", scale=s_inputs)
for _n in ("maximum", "minimum"):
    binary(_n, dtypes=REAL + COMPLEX, tol="exact", grad=True, signed_zero=False, smooth=lambda x, y: _far(np.asarray(x) - np.asarray(y), [0.0]))
for _n in ("fmax", "fmin"):
    binary(_n, dtypes=REAL, tol="exact", signed_zero=False)
for _n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_xor"):
    binary(_n, dtypes=REAL if "less" in _n or "greater" in _n else ALL, tol="exact")
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    binary(_n, dtypes=BOOL + INTS, tol="exact")
for _n in ("left_shift", "right_shift"):
    binary(_n, dtypes=INTS, tol="exact", scalar_ok=False)
binary("copysign", dtypes=REAL, tol="exact", grad=True, smooth=lambda x, y: _far(x, [0.0]) and _far(y, [0.0]))
binary("nextafter", dtypes=FLOATS, tol="exact", scalar_ok=False)
binary("heaviside", dtypes=FLOATS, tol="exact")
op("ldexp", 2, "{ns}.ldexp({0}, {ns}.clip({1}, -40, 40))", dtypes=FLOATS + SINTS, tol="round")
op("where", 3, "{ns}.where({0}, {1}, {2})", tol="exact", grad=False)
op("where_cmp", 2, "{ns}.where({0} > {1}, {0}, {1})", dtypes=REAL, tol="exact")

# reductions
op("sum", 1, "{ns}.sum({0}, axis={axis}, keepdims={keepdims})", tol="reduce", params=p_reduce,
   scale=s_sum, signed_zero=False, grad=True)
op("prod", 1, "{ns}.prod({0}, axis={axis}, keepdims={keepdims})", tol="reduce", params=p_reduce,
   scale=s_prod, undefined=_undefined_prod, signed_zero=False, grad=True, smooth=lambda x: _far(x, [0.0], 0.1) and _bounded(3)(x))
op("mean", 1, "{ns}.mean({0}, axis={axis}, keepdims={keepdims})", dtypes=NUM + BOOL, tol="reduce",
   params=p_reduce, scale=s_mean, signed_zero=False, grad=True)
op("var", 1, "{ns}.var({0}, axis={axis}, keepdims={keepdims})", dtypes=NUM + BOOL, tol="reduce",
   params=p_reduce, scale=s_var, undefined=_undefined_var16, signed_zero=False, grad=True)
op("std", 1, "{ns}.std({0}, axis={axis}, keepdims={keepdims})", dtypes=REAL, tol="reduce",
   params=p_reduce, scale=s_std, undefined=_undefined_var16, signed_zero=False)
for _n in ("max", "min"):
    op(_n, 1, "{ns}.%s({0}, axis={axis}, keepdims={keepdims})" % _n, dtypes=REAL, tol="exact",
       params=p_reduce_nonempty, signed_zero=False)
for _n in ("nanmax", "nanmin"):
    op(_n, 1, "{ns}.%s({0}, axis={axis}, keepdims={keepdims})" % _n, dtypes=REAL, tol="exact",
       params=p_reduce_nonempty, signed_zero=False)
op("ptp", 1, "{ns}.ptp({0}, axis={axis}, keepdims={keepdims})", dtypes=INTS + FLOATS, tol="round",
   params=p_reduce_nonempty, scale=s_inputs, signed_zero=False)
for _n in ("any", "all"):
    op(_n, 1, "{ns}.%s({0}, axis={axis}, keepdims={keepdims})" % _n, tol="exact", params=p_reduce)
op("count_nonzero", 1, "{ns}.count_nonzero({0}, axis={axis})", tol="exact",
   params=lambda rng, av: {"axis": _axis(rng, av[0][0])})
for _n in ("argmax", "argmin"):
    op(_n, 1, "{ns}.%s({0}, axis={axis})" % _n, dtypes=REAL, tol="exact", params=p_arg)
op("nansum", 1, "{ns}.nansum({0}, axis={axis}, keepdims={keepdims})", dtypes=INTS + FLOATS,
   tol="reduce", params=p_reduce, scale=lambda a, p, w: s_sum([np.nan_to_num(np.asarray(a[0]), nan=0.0)], p, w),
   signed_zero=False)
op("median", 1, "{ns}.median({0}, axis={axis})", dtypes=INTS + FLOATS, tol="round",
   params=lambda rng, av: p_arg(rng, av), scale=s_inputs, signed_zero=False)


def _undefined_quantile_inf(args, params, want):
    """At an integral position NumPy interpolates toward the next order statistic with
    weight 0 (``a + (b - a) * 0``), NaN when ``b - a`` is infinite, where plait (as
    jax.numpy) interpolates between that statistic and itself: ``quantile([inf, 0, 0],
    0.5)`` is NaN in NumPy and 0 in plait. Such lanes (without a NaN, which both give)
    are not compared."""
    x = np.asarray(args[0])
    if x.dtype.kind != "f":
        return None
    w = x.astype(np.float64)
    s = np.sort(w.ravel() if params["axis"] is None else np.moveaxis(w, params["axis"], -1), axis=-1)
    n = s.shape[-1]
    v = params["q"] * (n - 1)
    lo = int(np.floor(v))
    if v != lo or lo + 1 >= n:
        return None
    with np.errstate(all="ignore"):
        return ~np.isfinite(s[..., lo + 1] - s[..., lo]) & ~np.isnan(s).any(axis=-1)


op("quantile", 1, "{ns}.quantile({0}, {q}, axis={axis})", dtypes=INTS + FLOATS, tol="composite",
   np_template="np.quantile({0}.astype(np.float64) if {0}.dtype.kind in 'iu' else {0}, {q}, axis={axis})",
   params=p_quantile, scale=lambda a, p, w: np.max(fabs(a[0]), initial=0.0),
   undefined=_undefined_quantile_inf, signed_zero=False)
for _n in ("cumsum", "cumprod"):
    op(_n, 1, "{ns}.%s({0}, axis={axis})" % _n, dtypes=NUM + BOOL, tol="reduce", params=p_cum,
       undefined=_undefined_cumprod if _n == "cumprod" else None,
       scale=s_cum if _n == "cumsum" else (lambda a, p, w: np.abs(np.asarray(w, np.complex128)) * max(np.asarray(a[0]).size, 1)),
       signed_zero=False, grad=True, smooth=None if _n == "cumsum" else (lambda x: _far(x, [0.0], 0.1) and _bounded(3)(x)))
op("diff", 1, "{ns}.diff({0}, axis={axis})", dtypes=NUM + BOOL, tol="round", params=p_axis_int,
   scale=s_inputs, grad=True)

# shapes and indexing
op("reshape", 1, "{ns}.reshape({0}, {shape})", tol="exact", params=p_reshape, grad=True)
op("transpose", 1, "{ns}.transpose({0}, {axes})", tol="exact", params=p_transpose, grad=True)
op("expand_dims", 1, "{ns}.expand_dims({0}, {axis})", tol="exact", params=p_expand, grad=True)
op("squeeze", 1, "{ns}.squeeze({0}, {axis})", tol="exact", params=p_squeeze, grad=True)
op("flip", 1, "{ns}.flip({0}, {axis})", tol="exact", params=p_flip, grad=True)
op("roll", 1, "{ns}.roll({0}, {shift}, {axis})", tol="exact", params=p_roll, grad=True)
op("broadcast_to", 1, "{ns}.broadcast_to({0}, {shape})", tol="exact", params=p_broadcast_to, grad=True)
op("tile", 1, "{ns}.tile({0}, {reps})", tol="exact", params=p_tile, grad=True)
op("repeat", 1, "{ns}.repeat({0}, {repeats}, axis={axis})", tol="exact", params=p_repeat, grad=True)
op("pad", 1, "{ns}.pad({0}, {pad_width}, mode={mode})", tol="exact", params=p_pad, grad=True)
op("slice", 1, "{ns}.asarray({0})[{key}]", tol="exact", params=p_slice, grad=True)
op("index", 1, "{ns}.asarray({0})[{key}]", tol="exact", params=p_index_int, grad=True)
op("take", 1, "{ns}.take({0}, {indices}, axis={axis})", tol="exact", params=p_take, grad=True)
op("concatenate", 2, "{ns}.concatenate([{ns}.ravel({0}), {ns}.ravel({1})])", tol="exact", grad=True)
op("stack", 2, "{ns}.stack([{0}, {ns}.broadcast_to({1}, {ns}.shape({0}))])", tol="exact", grad=True)
op("sort", 1, "{ns}.sort({0}, axis={axis})", dtypes=REAL, tol="exact", params=p_sort, grad=True,
   signed_zero=False)
op("argsort", 1, "{ns}.argsort({0}, axis={axis}, stable=True)", dtypes=REAL, tol="exact", params=p_sort)
op("matmul", 1, "{ns}.matmul({0}, {ns}.swapaxes({0}, -1, -2))", dtypes=NUM,
   np_template="np.matmul({0}, np.swapaxes({0}, -1, -2)) if np.ndim({0}) >= 2 else np.matmul({0}, {0})",
   tol="reduce", params=p_matmul, scale=s_matmul, signed_zero=False, grad=True)
op("matmul_1d", 1, "{ns}.matmul({0}, {0})", dtypes=NUM, tol="reduce",
   params=lambda rng, av: {} if len(av[0][0]) == 1 else None, scale=s_matmul, signed_zero=False)
op("einsum_outer", 2, "{ns}.einsum('...,...->...', {0}, {1})", dtypes=NUM, tol="round",
   signed_zero=False)   # a sum of products: NumPy adds -0.0 to +0.0, native stores it
op("outer", 2, "{ns}.outer({0}, {1})", dtypes=NUM + BOOL, tol="round", grad=True)

# plait.lax primitives no NumPy function reaches (oracles in plait.fuzz.oracles)
op("lax.rem", 2, "lax.rem({0}, {1})", np_template="fz.rem({0}, {1})", dtypes=INTS + FLOATS,
   tol="round", scale=s_inputs, same_dtype=True, same_shape=True)
op("lax.shift_left", 2, "lax.shift_left({0}, {1})", np_template="fz.shift_left({0}, {1})",
   dtypes=INTS, params=p_shift, same_dtype=True, same_shape=True)
op("lax.shift_right_arithmetic", 2, "lax.shift_right_arithmetic({0}, {1})",
   np_template="fz.shift_right_arithmetic({0}, {1})", dtypes=INTS, params=p_shift,
   same_dtype=True, same_shape=True)
op("lax.shift_right_logical", 2, "lax.shift_right_logical({0}, {1})",
   np_template="fz.shift_right_logical({0}, {1})", dtypes=INTS, params=p_shift,
   same_dtype=True, same_shape=True)
op("lax.population_count", 1, "lax.population_count({0})", np_template="fz.population_count({0})",
   dtypes=INTS)
op("lax.clamp", 1, "lax.clamp({ns}.zeros((), {0}.dtype), {0}, {ns}.ones((), {0}.dtype))",
   np_template="np.clip({0}, np.zeros((), {0}.dtype), np.ones((), {0}.dtype))", dtypes=INTS + FLOATS,
   signed_zero=False)
def _undefined_pow_overflow(args, params, want):
    """Powers whose intermediate ``|x|**|y|`` overflows: for complex ``x`` NumPy's own
    ``power`` gives NaN there, repeated multiplication with a scaled division 0; for a
    real ``x`` and ``y < 0`` the oracle's repeated multiplication gives ``1 / inf = 0``
    where plait (as NumPy's ``power``, float16 computed in float32) gives the tiny
    quotient: ``330.5 ** -2`` in float16 is 9.2e-06. Neither is a contract."""
    x = np.asarray(args[0])
    if x.dtype.kind == "c":
        big = float(np.finfo(x.real.dtype).max) / 4
    elif x.dtype.kind == "f" and params["y"] < 0:
        big = float(np.finfo(x.dtype).max) / 4
    else:
        return None
    with np.errstate(all="ignore"):
        return np.abs(x.astype(np.complex128)) ** abs(params["y"]) >= big


op("lax.integer_pow", 1, "lax.integer_pow({0}, {y})", np_template="fz.integer_pow({0}, {y})",
   dtypes=SINTS + FLOATS + COMPLEX, tol="composite", params=p_int_pow, undefined=_undefined_pow_overflow)
op("lax.logistic", 1, "lax.logistic({0})", np_template="fz.logistic({0})", dtypes=INEXACT, tol="composite",
   scale=s_logistic)
op("lax.rsqrt", 1, "lax.rsqrt({0})", np_template="fz.rsqrt({0})", dtypes=INEXACT, tol="libm")
op("lax.round", 1, "lax.round({0})", np_template="np.rint({0})", dtypes=FLOATS)
for _n in ("cummax", "cummin"):
    op("lax." + _n, 1, "lax.%s({0}, {axis}, {reverse})" % _n,
       np_template="fz.%s({0}, {axis}, {reverse})" % _n, dtypes=REAL, params=p_lax_cum, signed_zero=False)
for _n in ("reduce_window_max", "reduce_window_min", "reduce_window_sum"):
    op("lax." + _n, 1, "lax.%s({0}, {w}, {s}, {pad})" % _n,
       np_template="fz.reduce_window({0}, %r, {w}, {s}, {pad})" % _n.split("_")[-1],
       dtypes=(INTS + FLOATS) if _n.endswith("sum") else REAL,
       tol="reduce" if _n.endswith("sum") else "exact", params=p_window, signed_zero=False,
       scale=s_window_sum if _n.endswith("sum") else "out")


# more primitives: dynamic slicing, scatters (.at), conv, xor-reduction, control flow, nested jit
def p_dyn(rng, avals):
    shape = avals[0][0]
    if not shape or 0 in shape:
        return None
    sizes = tuple(int(rng.integers(0, s + 1)) for s in shape)
    starts = tuple(int(rng.integers(-2, s + 2)) for s in shape)
    return {"starts": starts, "sizes": sizes}


def p_at(rng, avals):
    shape = avals[0][0]
    if not shape or shape[0] == 0:
        return None
    n = shape[0]
    idx = [int(i) for i in rng.integers(-n, n, size=int(rng.integers(1, 5)))]
    method = ["set", "add", "multiply", "min", "max"][int(rng.integers(5))]
    dt = avals[0][1]
    if method in ("add", "multiply") and dt == "bool":
        method = "set"
    if method in ("min", "max") and dt in COMPLEX:
        method = "add"
    value = True if dt == "bool" else (2 if dt in INTS else 1.5)
    return {"idx": idx if method != "set" else sorted(set(idx)), "method": Src(method), "value": value}


def p_reduce_axes(rng, avals):
    nd = len(avals[0][0])
    return {"axes": tuple(sorted(int(a) for a in rng.choice(nd, size=int(rng.integers(0, nd + 1)), replace=False)))}


def p_conv(rng, avals):
    shape = avals[0][0]
    return {} if len(shape) == 1 and shape[0] >= 3 else None


def s_global(args, params, want):
    """The result or the largest finite operand: f16 softmax-like ops lose absolute, not
    relative, precision (``1 + exp(-6)`` rounds in float16)."""
    return np.abs(np.asarray(want, np.float64)) + np.max(fabs(args[0]), initial=0.0)


def p_softmax_axis(rng, avals):
    shape = avals[0][0]
    if not shape or 0 in shape:
        return None
    return {"axis": int(rng.integers(-len(shape), len(shape)))}


op("lax.dynamic_slice", 1, "lax.dynamic_slice({0}, {starts}, {sizes})",
   np_template="fz.dynamic_slice({0}, {starts}, {sizes})", params=p_dyn, grad=True)
op("lax.dynamic_update_slice", 1, "lax.dynamic_update_slice({0}, {ns}.ones({sizes}, {0}.dtype), {starts})",
   np_template="fz.dynamic_update_slice({0}, np.ones({sizes}, {0}.dtype), {starts})", params=p_dyn, grad=True)
op("at", 1, "pnp.asarray({0}).at[{idx}].{method}({value})",
   np_template="fz.at({0}, {idx}, '{method}', {value})", params=p_at, signed_zero=False)
op("lax.reduce_xor", 1, "lax.reduce_xor({0}, {axes})", np_template="fz.reduce_xor({0}, {axes})",
   dtypes=BOOL + INTS, params=p_reduce_axes)
op("lax.expand_dims", 1, "lax.expand_dims({0}, (0,))", np_template="np.expand_dims({0}, 0)", grad=True)
op("lax.stop_gradient", 1, "lax.stop_gradient({0})", np_template="np.copy({0})")
op("lax.conv", 1, "lax.conv_general_dilated({0}[None, None, :], {ns}.asarray([[[1.0, -2.0, 0.5]]], {0}.dtype), (1,), 'VALID')[0, 0]",
   np_template="fz.conv1d({0}, np.asarray([1.0, -2.0, 0.5], {0}.dtype))", dtypes=FLOATS, tol="reduce",
   params=p_conv, signed_zero=False, grad=True,
   scale=lambda a, p, w: np.abs(np.asarray(w, np.float64)) + 12 * np.max(fabs(a[0]), initial=0))
op("lax.cond", 1, "lax.cond({ns}.sum({0}) > 0, lambda v: pnp.sin(v), lambda v: pnp.cos(v), {0})",
   np_template="np.sin({0}) if np.sum({0}) > 0 else np.cos({0})", dtypes=FLOATS, tol="libm", grad=True,
   smooth=lambda x: abs(float(np.sum(x))) > 0.05)
op("lax.fori_loop", 1, "lax.fori_loop(0, 3, lambda i, v: v * 0.5 + 1, {0})", np_template="fz.fori({0})",
   dtypes=FLOATS, tol="composite", scale=s_inputs, grad=True)
op("lax.while_loop", 1, "lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, {0}))[1]",
   # three doublings, not one times 8: a complex part that overflows at the second makes
   # the third's imaginary part inf * 0 = NaN, in NumPy as in plait
   np_template="{0} * {0}.dtype.type(2) * {0}.dtype.type(2) * {0}.dtype.type(2)",
   dtypes=NUM, tol="round")   # reverse mode: unsupported, as JAX
op("lax.scan", 1, "lax.scan(lambda c, v: (c + v, c * v), {ns}.zeros({0}.shape[1:], {0}.dtype), {0})[1]",
   np_template="fz.scan_cum({0})", dtypes=INTS + FLOATS, tol="composite", params=lambda rng, av: {} if len(av[0][0]) >= 1 else None, scale=lambda a, p, w: s_cum(a, {"axis": 0}, w), grad=True,
   signed_zero=False)
op("jit", 1, "plait.jit(lambda v: pnp.sin(v) * 2)({0})", np_template="np.sin({0}) * 2",
   dtypes=FLOATS, tol="libm", grad=True)
op("nn.relu", 1, "nn.relu({0})", np_template="np.maximum({0}, 0)", dtypes=FLOATS, signed_zero=False)
op("nn.sigmoid", 1, "nn.sigmoid({0})", np_template="fz.sigmoid({0})", dtypes=FLOATS, tol="composite", grad=True)
op("nn.softplus", 1, "nn.softplus({0})", np_template="fz.softplus({0})", dtypes=FLOATS, tol="composite",
   scale=s_inputs, grad=True, smooth=_bounded(30))
op("nn.silu", 1, "nn.silu({0})", np_template="fz.silu({0})", dtypes=FLOATS, tol="composite", scale=s_inputs,
   grad=True)
op("nn.logsumexp", 1, "nn.logsumexp({0}, axis={axis})", np_template="fz.logsumexp({0}, {axis})",
   dtypes=FLOATS, tol="composite", params=p_softmax_axis, scale=s_global, grad=True, signed_zero=False)
op("nn.softmax", 1, "nn.softmax({0}, axis={axis})", np_template="fz.softmax({0}, {axis})",
   dtypes=FLOATS, tol="composite", params=p_softmax_axis, grad=True,
   scale=lambda a, p, w: np.abs(np.asarray(w, np.float64)) + np.max(fabs(a[0]), initial=1) * 1e-3)
op("nn.log_softmax", 1, "nn.log_softmax({0}, axis={axis})", np_template="fz.log_softmax({0}, {axis})",
   dtypes=FLOATS, tol="composite", params=p_softmax_axis, scale=s_global, grad=True,
   signed_zero=False)   # x - lse(x) of a dominant entry: a zero whose sign is rounding's
op("custom_jvp", 1, "fzc.log1pexp({0})", np_template="fz.softplus({0})", dtypes=FLOATS, tol="composite",
   scale=s_inputs, grad=True, smooth=_bounded(30))
op("custom_vjp", 1, "fzc.cube({0})", np_template="{0} * {0} * {0}", dtypes=FLOATS, tol="composite",
   grad=True, smooth=_bounded(100), forward=False)   # forward mode of custom_vjp: an error by design

BY_NAME: dict[str, OpSpec] = {o.name: o for o in OPS}
GRAD_OPS: list[OpSpec] = [o for o in OPS if o.grad]
