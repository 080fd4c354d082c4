"""Testing helpers: ``check_grads`` compares derivatives with finite differences.

``check_grads(f, args, order)`` checks, for every order up to ``order``:

- forward mode: ``jvp(f, args, u)`` against the central difference
  ``(f(x + eps u) - f(x - eps u)) / (2 eps)`` (differences taken in float64);
- reverse mode: ``vjp`` against ``jvp`` by the transpose identity
  ``<v, J u> == <Jᵀ v, u>`` for random ``u``, ``v`` (with the pairing
  ``Re(sum(a * b))`` of plait's complex convention).

Higher orders apply the same checks to the jvp and vjp functions themselves.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from plait.core import dtypes
from plait.core.pytree import tree_flatten, tree_unflatten
from plait.core.trace import concrete_value, get_aval, wrap_array
from plait.transforms.api_ad import jvp, vjp

_TOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 2e-2,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 2e-2,
        np.dtype(np.complex128): 1e-5}
_EPS = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-2,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-2,
        np.dtype(np.complex128): 1e-5}


def _np(x) -> np.ndarray:
    return np.asarray(concrete_value(x))


def _wrap(v: np.ndarray):
    return wrap_array(np.asarray(v), False)


def _inexact(x) -> bool:
    return dtypes.is_inexact(get_aval(x).dtype)


def _rand_like(rng, x):
    a = get_aval(x)
    if not dtypes.is_inexact(a.dtype):
        return _wrap(np.zeros(a.shape, a.dtype))
    v = rng.standard_normal(a.shape)
    if dtypes.is_complex(a.dtype):
        v = v + 1j * rng.standard_normal(a.shape)
    return _wrap(np.asarray(v).astype(a.dtype))


def _pair(a_leaves, b_leaves) -> float:
    """``Re(sum(a * b))`` over matching leaves, in float64/complex128."""
    total = 0.0
    for a, b in zip(a_leaves, b_leaves):
        if _inexact(a) and _inexact(b):
            total += float(np.real(np.sum(_np(a).astype(np.complex128) *
                                          _np(b).astype(np.complex128))))
    return total


def _worst_dtype(leaves) -> np.dtype:
    dts = [get_aval(x).dtype for x in leaves if _inexact(x)]
    for d in (np.float16, np.complex64, np.float32):
        if np.dtype(d) in dts:
            return np.dtype(d)
    return np.dtype(np.float64)


def _assert_close(want_leaves, got_leaves, atol, rtol, what: str):
    for k, (w, g) in enumerate(zip(want_leaves, got_leaves)):
        w64, g64 = _np(w).astype(np.complex128), _np(g).astype(np.complex128)
        if w64.shape != g64.shape:
            raise AssertionError(f"{what}: output {k} has shape {g64.shape}, expected "
                                 f"{w64.shape}")
        np.testing.assert_allclose(g64, w64, atol=atol, rtol=rtol,
                                   err_msg=f"{what}: output {k}")


def numerical_jvp(f: Callable, primals: Sequence, tangents: Sequence, eps: float) -> list:
    """Central difference of ``f`` along ``tangents`` (flat output leaves, float64)."""
    def shifted(sign):
        args = []
        for x, t in zip(primals, tangents):
            if _inexact(x):
                v = _np(x).astype(np.complex128 if np.iscomplexobj(_np(x)) else np.float64)
                args.append(_wrap((v + sign * eps * _np(t)).astype(get_aval(x).dtype)))
            else:
                args.append(x)
        return tree_flatten(f(*args))[0]
    hi, lo = shifted(1.0), shifted(-1.0)
    out = []
    for h, l in zip(hi, lo):
        h64, l64 = _np(h), _np(l)
        if np.iscomplexobj(h64):
            out.append((h64.astype(np.complex128) - l64.astype(np.complex128)) / (2 * eps))
        elif dtypes.is_inexact(h64.dtype):
            out.append((h64.astype(np.float64) - l64.astype(np.float64)) / (2 * eps))
        else:
            out.append(np.zeros(h64.shape))
    return out


def check_jvp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None, seed=0) -> None:
    """``jvp(f)`` against central finite differences along a random direction."""
    rng = np.random.default_rng(seed)
    dt = _worst_dtype(list(args) + tree_flatten(f(*args))[0])
    atol = _TOL[dt] if atol is None else atol
    rtol = _TOL[dt] if rtol is None else rtol
    eps = _EPS[dt] if eps is None else eps
    tangents = [_rand_like(rng, x) for x in args]
    _, t_out = jvp(f, tuple(args), tuple(tangents))
    want = numerical_jvp(f, args, tangents, eps)
    _assert_close(want, tree_flatten(t_out)[0], atol, rtol, "jvp vs finite differences")


def check_vjp(f: Callable, args: Sequence, atol=None, rtol=None, seed=0) -> None:
    """``<v, J u> == <Jᵀ v, u>`` for random ``u`` and ``v``."""
    rng = np.random.default_rng(seed + 1)
    dt = _worst_dtype(list(args) + tree_flatten(f(*args))[0])
    atol = _TOL[dt] if atol is None else atol
    rtol = _TOL[dt] if rtol is None else rtol
    u = [_rand_like(rng, x) for x in args]
    out, t_out = jvp(f, tuple(args), tuple(u))
    out_leaves, out_tree = tree_flatten(out)
    v = [_rand_like(rng, o) for o in out_leaves]
    _, f_vjp = vjp(f, *args)
    ct_in = f_vjp(tree_unflatten(out_tree, v))
    lhs = _pair(v, tree_flatten(t_out)[0])
    rhs = _pair(tree_flatten(ct_in)[0], u)
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= atol * scale + rtol * abs(lhs):
        raise AssertionError(f"vjp is not the transpose of jvp: <v, J u> = {lhs!r} but "
                             f"<J^T v, u> = {rhs!r}")


def check_grads(f: Callable, args: Sequence, order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol=None, rtol=None, eps=None) -> None:
    """Check ``f``'s derivatives up to ``order`` in forward and/or reverse mode.

    ``args`` is a tuple of arrays or pytrees; integer arguments are held fixed.
    Tolerances and the finite-difference step default by dtype (float32 is loose).
    """
    leaves, tree = tree_flatten(tuple(args))
    flat_f = _flatten_args(f, tree)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r} (use 'fwd' and/or 'rev')")

    def _check(fun, xs, k):
        if "fwd" in modes:
            check_jvp(fun, xs, atol, rtol, eps, seed=k)
        if "rev" in modes:
            check_vjp(fun, xs, atol, rtol, seed=k)
        if k >= order:
            return
        rng = np.random.default_rng(100 + k)
        n = len(xs)
        if "fwd" in modes:
            ts = tuple(_rand_like(rng, x) for x in xs)

            def f_jvp(*p):
                return jvp(fun, p, ts)[1]
            _check(f_jvp, xs, k + 1)
        if "rev" in modes:
            out = fun(*xs)
            out_leaves, out_tree = tree_flatten(out)
            cts = tree_unflatten(out_tree, [_rand_like(rng, o) for o in out_leaves])

            def f_vjp(*p):
                return vjp(fun, *p[:n])[1](cts)
            _check(f_vjp, xs, k + 1)

    _check(flat_f, tuple(leaves), 1)


def _flatten_args(f: Callable, tree) -> Callable:
    def flat_f(*leaves):
        return f(*tree_unflatten(tree, leaves))
    return flat_f
