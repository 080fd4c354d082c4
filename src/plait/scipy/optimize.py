"""``plait.scipy.optimize.minimize``: BFGS written with ``plait.lax.while_loop``, so it
runs under ``jit`` (as ``jax.scipy.optimize.minimize``).

The line search brackets a step satisfying the weak Wolfe conditions (sufficient
decrease with ``c1 = 1e-4``, curvature with ``c2 = 0.9``) by expansion and bisection
(Lewis and Overton's scheme); the inverse Hessian gets the BFGS update whenever the
curvature ``y.s`` is positive.
"""

from typing import Any as _Any, Callable as _Callable, NamedTuple as _NamedTuple

import plait.numpy as _pnp
from plait import lax as _lax
from plait.transforms.api_ad import value_and_grad as _value_and_grad
from plait.errors import PlaitValueError as _PlaitValueError

__all__ = ["minimize", "OptimizeResults"]

_C1, _C2 = 1e-4, 0.9


class OptimizeResults(_NamedTuple):
    """The result of :func:`minimize` (field names as in JAX).

    ``status``: 0 converged, 1 iteration limit reached, 3 the line search failed.
    """
    x: _Any
    success: _Any
    status: _Any
    fun: _Any
    jac: _Any
    hess_inv: _Any
    nfev: _Any
    njev: _Any
    nit: _Any


def _line_search(vg, x, f0, g0, p, maxiter):
    """A step ``a`` along ``p`` with weak Wolfe conditions; ``(a, f, g, ok, nfev)``."""
    d0 = _pnp.dot(g0, p)
    dt = x.dtype

    def cond(st):
        return (~st["done"]) & (st["i"] < maxiter)

    def body(st):
        a = st["a"]
        f, g = vg(x + a * p)
        d = _pnp.dot(g, p)
        armijo_fails = (f > f0 + _C1 * a * d0) | _pnp.isnan(f)
        curvature_fails = d < _C2 * d0
        hi = _pnp.where(armijo_fails, a, st["hi"])
        lo = _pnp.where(~armijo_fails & curvature_fails, a, st["lo"])
        expand = ~armijo_fails & curvature_fails & _pnp.isinf(st["hi"])
        nxt = _pnp.where(expand, 2.0 * a, 0.5 * (lo + hi))
        done = ~armijo_fails & ~curvature_fails
        return dict(i=st["i"] + 1, a=_pnp.where(done, a, nxt), lo=lo, hi=hi, done=done,
                    f=_pnp.where(done, f, st["f"]), g=_pnp.where(done, g, st["g"]))

    st = dict(i=_pnp.asarray(0), a=_pnp.asarray(1.0, dtype=dt), lo=_pnp.asarray(0.0, dtype=dt),
              hi=_pnp.asarray(_pnp.inf, dtype=dt), done=_pnp.asarray(False), f=f0, g=g0)
    st = _lax.while_loop(cond, body, st)
    return st["a"], st["f"], st["g"], st["done"], st["i"]


def minimize(fun: _Callable, x0, args: tuple = (), *, method: str = "BFGS",
             tol: float | None = None, options: dict | None = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` over a 1-d float array ``x`` starting at ``x0``.

    ``method`` must be ``"BFGS"``. ``options``: ``maxiter`` (default ``200 * n``),
    ``gtol`` (stop when ``max|grad| <= gtol``; default ``tol`` or 1e-5),
    ``line_search_maxiter`` (default 30).
    """
    if method.lower() != "bfgs":
        raise _PlaitValueError(f"minimize: method {method!r} is not supported; use 'BFGS'")
    options = dict(options or {})
    x0 = _pnp.asarray(x0)
    if not _pnp.issubdtype(x0.dtype, _pnp.floating):
        x0 = x0.astype(_pnp.float64)
    if x0.ndim != 1:
        raise _PlaitValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}")
    n = x0.shape[0]
    maxiter = int(options.pop("maxiter", 200 * n))
    gtol = float(options.pop("gtol", 1e-5 if tol is None else tol))
    ls_maxiter = int(options.pop("line_search_maxiter", 30))
    if options:
        raise _PlaitValueError(f"minimize: unknown options {sorted(options)}")

    vg_raw = _value_and_grad(lambda x: fun(x, *args))

    def vg(x):
        f, g = vg_raw(x)
        return _pnp.asarray(f, dtype=x0.dtype), g

    f0, g0 = vg(x0)
    eye = _pnp.eye(n, dtype=x0.dtype)

    def cond(st):
        return ((st["status"] < 0) & (st["k"] < maxiter))

    def body(st):
        x, f, g, h = st["x"], st["f"], st["g"], st["h"]
        p = -(h @ g)
        a, f1, g1, ok, nls = _line_search(vg, x, f, g, p, ls_maxiter)
        s = a * p
        x1 = x + s
        y = g1 - g
        ys = _pnp.dot(y, s)
        rho = 1.0 / _pnp.where(ys > 0, ys, 1.0)
        v = eye - rho * _pnp.outer(s, y)
        h1 = v @ h @ v.T + rho * _pnp.outer(s, s)
        h1 = _pnp.where(ys > 0, h1, h)
        converged = _pnp.max(_pnp.abs(g1)) <= gtol
        status = _pnp.where(~ok, 3, _pnp.where(converged, 0, -1))
        return dict(k=st["k"] + 1, nfev=st["nfev"] + nls,
                    x=_pnp.where(ok, x1, x), f=_pnp.where(ok, f1, f), g=_pnp.where(ok, g1, g),
                    h=_pnp.where(ok, h1, h), status=status)

    start = _pnp.where(_pnp.max(_pnp.abs(g0)) <= gtol, 0, -1)
    st = dict(k=_pnp.asarray(0), nfev=_pnp.asarray(1), x=x0, f=f0, g=g0, h=eye, status=start)
    st = _lax.while_loop(cond, body, st)
    status = _pnp.where(st["status"] < 0, 1, st["status"])
    return OptimizeResults(x=st["x"], success=status == 0, status=status, fun=st["f"],
                           jac=st["g"], hess_inv=st["h"], nfev=st["nfev"], njev=st["nfev"],
                           nit=st["k"])
