"""``jax.lax.Precision`` and the ``precision=`` argument of contractions.

On XLA's accelerators ``precision`` picks bfloat16 passes for float32 products; plait
computes every product in the operands' own dtype (float32 products are exact float32
arithmetic, i.e. JAX's ``HIGHEST``), so the argument is accepted, validated and has no
effect on the result.
"""
from __future__ import annotations

import enum

from plait.errors import PlaitValueError

__all__ = ["Precision", "check_precision"]


class Precision(enum.Enum):
    """Precision of a contraction on XLA (``DEFAULT``, ``HIGH``, ``HIGHEST``)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self) -> str:
        return self.name


_NAMES = {"default": Precision.DEFAULT, "fastest": Precision.DEFAULT,
          "bfloat16": Precision.DEFAULT, "high": Precision.HIGH,
          "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
          "highest": Precision.HIGHEST, "float32": Precision.HIGHEST}


def _one(p, where: str):
    if p is None or isinstance(p, Precision):
        return p
    if isinstance(p, str) and p.lower() in _NAMES:
        return _NAMES[p.lower()]
    raise PlaitValueError(f"{where}: precision must be None, a lax.Precision or one of "
                          f"{sorted(_NAMES)}, got {p!r}")


def check_precision(precision, where: str):
    """``precision`` validated (None, a Precision, a name, or a pair of those for the two
    operands); raises PlaitValueError naming ``where`` otherwise."""
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise PlaitValueError(f"{where}: a precision pair has two entries (lhs, rhs), "
                                  f"got {precision!r}")
        return tuple(_one(p, where) for p in precision)
    return _one(precision, where)
