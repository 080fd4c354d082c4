"""Exact reasoning over integer polyhedra ``{x integer : A x + b >= 0}``.

Used by the Tile -> Stripe lowering (index bounds) and by the verifier (bounds and
single-writer checks).  Two tools, both exact in the sense that matters:

* :func:`maximize` - Fourier-Motzkin elimination with Chvatal-Gomory rounding.  It returns
  an integer *upper bound* of ``max obj`` over the integer points (the floor of the real
  optimum, often tighter), ``None`` if the set is empty, or ``math.inf`` if unbounded.
* :func:`find_point` - a complete depth-first search for an integer point: each variable
  is enumerated only over the range left by projecting out the later variables, so the
  search prunes at every level.  It returns a witness or ``None``; a node budget guards
  against pathological sizes (:class:`SolverBudgetError`).

:func:`int_max_at_most` combines them: prove ``obj <= bound`` over the integer points or
return a concrete counterexample.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from .affine import Affine
from plait.errors import SolverBudgetError

# A constraint is (coeff tuple sorted by name, const) meaning sum(c * x) + const >= 0.
Con = tuple[tuple[tuple[str, int], ...], int]

_T = "\0t"  # objective variable; cannot clash with identifiers


def _norm(coeffs: Mapping[str, int], k: int) -> Con | bool:
    """Normalise one constraint; True if trivially satisfied, False if infeasible."""
    items = tuple(sorted((n, c) for n, c in coeffs.items() if c))
    if not items:
        return k >= 0
    g = 0
    for _, c in items:
        g = math.gcd(g, abs(c))
    if g > 1:
        items = tuple((n, c // g) for n, c in items)
        k = k // g  # floor: valid rounding for integer variables
    return (items, k)


class _Sys:
    """A deduplicated constraint set (tightest constant kept per coefficient vector)."""

    __slots__ = ("cons", "empty")

    def __init__(self) -> None:
        self.cons: dict[tuple[tuple[str, int], ...], int] = {}
        self.empty = False

    def add(self, coeffs: Mapping[str, int], k: int) -> None:
        r = _norm(coeffs, k)
        if r is True:
            return
        if r is False:
            self.empty = True
            return
        key, kk = r  # type: ignore[misc]
        old = self.cons.get(key)
        if old is None or kk < old:
            self.cons[key] = kk
        # opposite constraint check: c.x + k >= 0 and -c.x + k' >= 0 need k + k' >= 0
        neg = tuple((n, -c) for n, c in key)
        o = self.cons.get(neg)
        if o is not None and o + self.cons[key] < 0:
            self.empty = True

    def vars(self) -> set[str]:
        return {n for key in self.cons for n, _ in key}

    def copy(self) -> "_Sys":
        s = _Sys()
        s.cons = dict(self.cons)
        s.empty = self.empty
        return s


def _build(cons: Iterable[Affine]) -> _Sys:
    s = _Sys()
    for a in cons:
        s.add(a.coeffs, a.const)
    return s


def _eliminate(s: _Sys, v: str) -> _Sys:
    pos, neg, out = [], [], _Sys()
    for key, k in s.cons.items():
        d = dict(key)
        c = d.get(v, 0)
        if c > 0:
            pos.append((d, k, c))
        elif c < 0:
            neg.append((d, k, -c))
        else:
            out.add(d, k)
    for dp, kp, a in pos:
        for dn, kn, b in neg:
            comb: dict[str, int] = {}
            for n, c in dp.items():
                comb[n] = comb.get(n, 0) + b * c
            for n, c in dn.items():
                comb[n] = comb.get(n, 0) + a * c
            comb.pop(v, None)
            out.add(comb, b * kp + a * kn)
            if out.empty:
                return out
    out.empty = out.empty or s.empty
    return out


def _project(s: _Sys, keep: set[str]) -> _Sys:
    """Fourier-Motzkin: eliminate every variable not in ``keep``."""
    while not s.empty:
        pos: dict[str, int] = {}
        neg: dict[str, int] = {}
        for key in s.cons:
            for name, c in key:
                if name not in keep:
                    if c > 0:
                        pos[name] = pos.get(name, 0) + 1
                    else:
                        neg[name] = neg.get(name, 0) + 1
        todo = set(pos) | set(neg)
        if not todo:
            break

        def cost(v: str) -> tuple[int, str]:
            p, n = pos.get(v, 0), neg.get(v, 0)
            return (p * n - p - n, v)

        s = _eliminate(s, min(todo, key=cost))
    return s


def _bounds_of(s: _Sys, v: str) -> tuple[float | int, float | int] | None:
    """Integer [lo, hi] of ``v`` after projecting out everything else (None if empty)."""
    p = _project(s.copy(), {v})
    if p.empty:
        return None
    lo: float | int = -math.inf
    hi: float | int = math.inf
    for key, k in p.cons.items():
        ((_, c),) = key
        if c > 0:  # c v + k >= 0  ->  v >= ceil(-k / c)
            lo = max(lo, -(k // c))
        else:  # v <= floor(k / -c)
            hi = min(hi, k // (-c))
    if lo > hi:
        return None
    return lo, hi


def maximize(cons: Iterable[Affine], obj: Affine) -> int | float | None:
    """Integer upper bound of ``obj`` over ``{x : c(x) >= 0 for c in cons}``.

    Returns ``None`` if the set is (provably) empty and ``math.inf`` if unbounded.
    """
    s = _build(cons)
    if s.empty:
        return None
    s.add({**obj.coeffs, _T: -1}, obj.const)
    b = _bounds_of(s, _T)
    if b is None:
        return None
    return b[1]


def minimize(cons: Iterable[Affine], obj: Affine) -> int | float | None:
    """Integer lower bound of ``obj`` (see :func:`maximize`)."""
    r = maximize(cons, -obj)
    if r is None:
        return None
    return -r


def find_point(
    cons: Iterable[Affine], order: Sequence[str] | None = None, budget: int = 200_000
) -> dict[str, int] | None:
    """An integer point satisfying every ``c >= 0`` or ``None`` (exact, complete).

    ``order`` fixes the search order of variables (others follow, sorted).
    Raises :class:`SolverBudgetError` after ``budget`` search nodes.
    """
    s = _build(cons)
    if s.empty:
        return None
    names = list(order or [])
    names += sorted(v for v in s.vars() if v not in set(names))
    counter = [budget]

    def rec(s: _Sys, i: int) -> dict[str, int] | None:
        if s.empty:
            return None
        live = [v for v in names[i:] if v in s.vars()]
        if not live:
            return {}
        v = live[0]
        b = _bounds_of(s, v)
        if b is None:
            return None
        lo, hi = b
        if lo == -math.inf or hi == math.inf:
            raise ValueError(f"variable {v!r} is unbounded")
        for val in range(int(lo), int(hi) + 1):
            counter[0] -= 1
            if counter[0] < 0:
                raise SolverBudgetError("integer search budget exceeded")
            sub = _Sys()
            for key, k in s.cons.items():
                d = dict(key)
                c = d.pop(v, 0)
                sub.add(d, k + c * val)
                if sub.empty:
                    break
            r = rec(sub, names.index(v) + 1 if v in names else i)
            if r is not None:
                r[v] = val
                return r
        return None

    r = rec(s, 0)
    if r is None:
        return None
    for v in s.vars():
        r.setdefault(v, 0)
    return r


def int_max_at_most(
    cons: Sequence[Affine], obj: Affine, bound: int, order: Sequence[str] | None = None
) -> dict[str, int] | None:
    """Prove ``obj <= bound`` on all integer points; return a counterexample or ``None``."""
    ub = maximize(cons, obj)
    if ub is None or ub <= bound:
        return None
    return find_point(list(cons) + [obj - (bound + 1)], order)


def box(name: str, lo: int, hi: int) -> list[Affine]:
    """Constraints ``lo <= name <= hi``."""
    v = Affine(((name, 1),))
    return [v - lo, hi - v]
