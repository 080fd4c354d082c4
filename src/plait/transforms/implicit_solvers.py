"""``custom_root`` and ``custom_linear_solve`` (``jax.lax`` names; they live here because
they differentiate, and ``plait.lax`` exposes them lazily).

Both differentiate by the implicit function theorem without differentiating the
solver: the solver runs on gradient-stopped values, then one correction step carries
the derivatives,

- root of ``f``: ``x = x* - tangent_solve(J, f(x*))`` with ``J`` the Jacobian-vector
  product of ``f`` at ``x*``; since ``f(x*) = 0`` its derivative is ``-J^-1 df``;
- ``A x = b``: ``x = x* + solve(A, b - A x*)``; its derivative is ``A^-1 (db - dA x*)``.

The value is the solver's answer refined by one Newton (or refinement) step. The
derivative is exact to first order for any solver (loops included); ``tangent_solve`` /
``solve`` must be differentiable in their right-hand side (they are linear there);
``transpose_solve`` and ``symmetric`` are accepted for JAX compatibility and not
needed. Higher derivatives are those of the correction step, not exact.
"""
from __future__ import annotations

from typing import Any, Callable

from plait.core.pytree import tree_map, tree_flatten
from plait.lax import stop_gradient
from plait.errors import PlaitTypeError


def _sg(tree):
    return tree_map(stop_gradient, tree)


def _sub(a, b):
    return tree_map(lambda x, y: x - y, a, b)


def _add(a, b):
    return tree_map(lambda x, y: x + y, a, b)


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """A root of ``f`` found by ``solve(f, initial_guess)``, differentiable with respect
    to what ``f`` closes over by the implicit function theorem (``tangent_solve(g, y)``
    solves ``g(x) = y`` for the linear ``g``)."""
    from plait.transforms.api_ad import jvp
    out = solve(f, _sg(initial_guess))
    x_star, aux = (out if has_aux else (out, None))
    x_star = _sg(x_star)
    if tree_flatten(x_star)[1] != tree_flatten(initial_guess)[1]:
        raise PlaitTypeError("custom_root: solve must return a value shaped like "
                             "initial_guess")

    def lin(v):
        return jvp(lambda x: f(x), (x_star,), (v,))[1]

    x = _sub(x_star, tangent_solve(lin, f(x_star)))
    return (x, _sg(aux)) if has_aux else x


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False):
    """``x`` with ``matvec(x) = b`` found by ``solve(matvec, b)``, differentiable with
    respect to ``b`` and to what ``matvec`` closes over."""
    out = solve(matvec, _sg(b))
    x_star, aux = (out if has_aux else (out, None))
    x_star = _sg(x_star)
    r = _sub(b, matvec(x_star))
    corr = solve(matvec, r)
    corr = corr[0] if has_aux else corr
    x = _add(x_star, corr)
    return (x, _sg(aux)) if has_aux else x
