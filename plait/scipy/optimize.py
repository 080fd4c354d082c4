"""``plait.scipy.optimize.minimize``: BFGS written with ``plait.lax.while_loop``, so it
runs under ``jit`` (as ``jax.scipy.optimize.minimize``).

The line search brackets a step satisfying the weak Wolfe conditions (sufficient
decrease with ``c1 = 1e-4``, curvature with ``c2 = 0.9``) by expansion and bisection
(Lewis and Overton's scheme); the inverse Hessian gets the BFGS update whenever the
curvature ``y.s`` is positive.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import plait.numpy as pnp
from plait import lax
from plait.transforms.api_ad import value_and_grad
from plait.errors import PlaitValueError

__all__ = ["minimize", "OptimizeResults"]

_C1, _C2 = 1e-4, 0.9


class OptimizeResults(NamedTuple):
    """The result of :func:`minimize` (field names as in JAX).

    ``status``: 0 converged, 1 iteration limit reached, 3 the line search failed.
    """
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _line_search(value_and_grad, x, f0, g0, p, maxiter):
    """A step ``a`` along ``p`` with weak Wolfe conditions; ``(a, f, g, ok, nfev)``."""
    d0 = pnp.dot(g0, p)
    dt = x.dtype

    def cond(st):
        return (~st["done"]) & (st["i"] < maxiter)

    def body(st):
        a = st["a"]
        f, g = value_and_grad(x + a * p)
        d = pnp.dot(g, p)
        armijo_fails = (f > f0 + _C1 * a * d0) | pnp.isnan(f)
        curvature_fails = d < _C2 * d0
        hi = pnp.where(armijo_fails, a, st["hi"])
        lo = pnp.where(~armijo_fails & curvature_fails, a, st["lo"])
        expand = ~armijo_fails & curvature_fails & pnp.isinf(st["hi"])
        nxt = pnp.where(expand, 2.0 * a, 0.5 * (lo + hi))
        done = ~armijo_fails & ~curvature_fails
        return dict(i=st["i"] + 1, a=pnp.where(done, a, nxt), lo=lo, hi=hi, done=done,
                    f=pnp.where(done, f, st["f"]), g=pnp.where(done, g, st["g"]))

    st = dict(i=pnp.asarray(0), a=pnp.asarray(1.0, dtype=dt), lo=pnp.asarray(0.0, dtype=dt),
              hi=pnp.asarray(pnp.inf, dtype=dt), done=pnp.asarray(False), f=f0, g=g0)
    st = lax.while_loop(cond, body, st)
    return st["a"], st["f"], st["g"], st["done"], st["i"]


def minimize(fun: Callable, x0, args: tuple = (), *, method: str = "BFGS", tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` over a 1-d float array ``x`` starting at ``x0``.

    ``method`` must be ``"BFGS"``. ``options``: ``maxiter`` (default ``200 * n``),
    ``gtol`` (stop when ``max|grad| <= gtol``; default ``tol`` or 1e-5),
    ``line_search_maxiter`` (default 30).
    """
    if method.lower() != "bfgs":
        raise PlaitValueError(f"minimize: method {method!r} is not supported; use 'BFGS'")
    options = dict(options or {})
    x0 = pnp.asarray(x0)
    if not pnp.issubdtype(x0.dtype, pnp.floating):
        x0 = x0.astype(pnp.float64)
    if x0.ndim != 1:
        raise PlaitValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}")
    n = x0.shape[0]
    maxiter = int(options.pop("maxiter", 200 * n))
    gtol = float(options.pop("gtol", 1e-5 if tol is None else tol))
    ls_maxiter = int(options.pop("line_search_maxiter", 30))
    if options:
        raise PlaitValueError(f"minimize: unknown options {sorted(options)}")

    vg_raw = value_and_grad(lambda x: fun(x, *args))

    def vg(x):
        f, g = vg_raw(x)
        return pnp.asarray(f, dtype=x0.dtype), g

    f0, g0 = vg(x0)
    eye = pnp.eye(n, dtype=x0.dtype)

    def cond(st):
        return ((st["status"] < 0) & (st["k"] < maxiter))

    def body(st):
        x, f, g, h = st["x"], st["f"], st["g"], st["h"]
        p = -(h @ g)
        a, f1, g1, ok, nls = _line_search(vg, x, f, g, p, ls_maxiter)
        s = a * p
        x1 = x + s
        y = g1 - g
        ys = pnp.dot(y, s)
        rho = 1.0 / pnp.where(ys > 0, ys, 1.0)
        v = eye - rho * pnp.outer(s, y)
        h1 = v @ h @ v.T + rho * pnp.outer(s, s)
        h1 = pnp.where(ys > 0, h1, h)
        converged = pnp.max(pnp.abs(g1)) <= gtol
        status = pnp.where(~ok, 3, pnp.where(converged, 0, -1))
        return dict(k=st["k"] + 1, nfev=st["nfev"] + nls,
                    x=pnp.where(ok, x1, x), f=pnp.where(ok, f1, f), g=pnp.where(ok, g1, g),
                    h=pnp.where(ok, h1, h), status=status)

    start = pnp.where(pnp.max(pnp.abs(g0)) <= gtol, 0, -1)
    st = dict(k=pnp.asarray(0), nfev=pnp.asarray(1), x=x0, f=f0, g=g0, h=eye, status=start)
    st = lax.while_loop(cond, body, st)
    status = pnp.where(st["status"] < 0, 1, st["status"])
    return OptimizeResults(x=st["x"], success=status == 0, status=status, fun=st["f"],
                           jac=st["g"], hess_inv=st["h"], nfev=st["nfev"], njev=st["nfev"],
                           nit=st["k"])
