"""Affine integer expressions ``c + sum(a_i * x_i)`` over named index variables.

This is the one affine type shared by Tile (index polynomials) and Stripe (accesses,
constraints, index offsets).  It lives in ``plait.tile`` because Tile imports nothing
from Stripe; ``plait.stripe.affine`` re-exports it with the Stripe-side helpers.

An :class:`Affine` is immutable and hashable; terms are kept sorted by variable name
with zero coefficients dropped, so dataclass equality is structural equality.
Arithmetic: ``+``, ``-`` with affines or ints, ``*`` by an int, unary ``-``.
``x < n`` builds a Tile :class:`Constraint` ``0 <= x < n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Union

Number = int
AffineLike = Union["Affine", int]


@dataclass(frozen=True)
class Affine:
    """``const + sum(coeff * var)``; build with :func:`var`, :func:`const` or :meth:`of`."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    def __post_init__(self) -> None:
        merged: dict[str, int] = {}
        for name, c in self.terms:
            if not isinstance(c, (int,)) or isinstance(c, bool):
                c = int(c)
            merged[name] = merged.get(name, 0) + int(c)
        object.__setattr__(self, "terms", tuple(sorted((n, c) for n, c in merged.items() if c != 0)))
        object.__setattr__(self, "const", int(self.const))

    # ---- construction -------------------------------------------------------------
    @staticmethod
    def of(coeffs: Mapping[str, int] | None = None, const: int = 0) -> "Affine":
        """Build from a ``{var: coeff}`` mapping and a constant."""
        return Affine(tuple((coeffs or {}).items()), const)

    @staticmethod
    def lift(x: AffineLike) -> "Affine":
        """Coerce an int or Affine to an Affine."""
        if isinstance(x, Affine):
            return x
        if isinstance(x, (int,)) and not isinstance(x, bool):
            return Affine((), x)
        try:
            import numbers

            if isinstance(x, numbers.Integral):
                return Affine((), int(x))
        except Exception:  # pragma: no cover
            pass
        raise TypeError(f"expected an affine expression or int, got {x!r}")

    # ---- queries ------------------------------------------------------------------
    @property
    def coeffs(self) -> dict[str, int]:
        """The terms as a fresh ``{var: coeff}`` dict."""
        return dict(self.terms)

    def coeff(self, name: str) -> int:
        """Coefficient of ``name`` (0 if absent)."""
        for n, c in self.terms:
            if n == name:
                return c
        return 0

    @property
    def vars(self) -> tuple[str, ...]:
        """Variable names with nonzero coefficients, sorted."""
        return tuple(n for n, _ in self.terms)

    @property
    def is_const(self) -> bool:
        return not self.terms

    # ---- arithmetic ---------------------------------------------------------------
    def __add__(self, other: AffineLike) -> "Affine":
        o = Affine.lift(other)
        return Affine(self.terms + o.terms, self.const + o.const)

    __radd__ = __add__

    def __neg__(self) -> "Affine":
        return Affine(tuple((n, -c) for n, c in self.terms), -self.const)

    def __sub__(self, other: AffineLike) -> "Affine":
        return self + (-Affine.lift(other))

    def __rsub__(self, other: AffineLike) -> "Affine":
        return Affine.lift(other) + (-self)

    def __mul__(self, k: int) -> "Affine":
        if isinstance(k, Affine):
            if k.is_const:
                k = k.const
            elif self.is_const:
                return k * self.const
            else:
                raise TypeError("product of two non-constant affine expressions is not affine")
        k = int(k)
        return Affine(tuple((n, c * k) for n, c in self.terms), self.const * k)

    __rmul__ = __mul__

    def __lt__(self, bound: int) -> "Constraint":  # type: ignore[override]
        """``x < n`` is the Tile constraint ``0 <= x < n``."""
        return Constraint(self, int(bound))

    def _only_lt(self, other):
        from plait.errors import TileSyntaxError
        raise TileSyntaxError(
            f"Tile constraints are written `expr < N`, meaning 0 <= expr < N (got a "
            f"comparison of `{self}` with {other!r} by >, <= or >=): shift the expression, "
            "e.g. `i > 1` for i < n is `i - 2 < n - 2`")

    __gt__ = __ge__ = __le__ = _only_lt

    # ---- evaluation and substitution ------------------------------------------
    def substitute(self, mapping: Mapping[str, AffineLike]) -> "Affine":
        """Replace variables by affine expressions (unmapped variables stay)."""
        out = Affine((), self.const)
        for n, c in self.terms:
            out = out + (Affine.lift(mapping[n]) * c if n in mapping else Affine(((n, c),)))
        return out

    def rename(self, mapping: Mapping[str, str]) -> "Affine":
        """Rename variables."""
        return Affine(tuple((mapping.get(n, n), c) for n, c in self.terms), self.const)

    def eval(self, env: Mapping[str, object]):
        """Evaluate with ``env[var]`` being ints or NumPy integer arrays (broadcasting)."""
        acc: object = self.const
        for n, c in self.terms:
            acc = acc + c * env[n]  # type: ignore[operator]
        return acc

    # ---- printing -----------------------------------------------------------------
    def __str__(self) -> str:
        parts: list[str] = []
        for n, c in self.terms:
            mag = abs(c)
            body = n if mag == 1 else f"{mag}*{n}"
            if not parts:
                parts.append(body if c > 0 else f"-{body}")
            else:
                parts.append(("+ " if c > 0 else "- ") + body)
        if self.const or not parts:
            if not parts:
                parts.append(str(self.const))
            else:
                parts.append(("+ " if self.const > 0 else "- ") + str(abs(self.const)))
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Affine({str(self)!r})"


@dataclass(frozen=True)
class Constraint:
    """Tile constraint ``0 <= expr < bound`` (written ``expr < bound``)."""

    expr: Affine
    bound: int

    def __str__(self) -> str:
        return f"{self.expr} < {self.bound}"


def var(name: str) -> Affine:
    """The affine expression consisting of one variable."""
    return Affine(((name, 1),))


def const(value: int) -> Affine:
    """A constant affine expression."""
    return Affine((), int(value))


def variables(names: str | Iterable[str]) -> tuple[Affine, ...]:
    """``variables("i j k")`` -> three index variables."""
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    return tuple(var(n) for n in names)
