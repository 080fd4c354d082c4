"""``ArrayMethods``: the shared base of tracers and concrete arrays.

It starts empty; ``plait.numpy`` installs the operators (``__add__``, ...) and
methods (``sum``, ``reshape``, ``T``, ``at``, ...) on it when it is imported, so
``x + y`` means the same thing for ``plait.Array`` and for every tracer.
"""
from __future__ import annotations


class ArrayMethods:
    """Base class carrying the NumPy-style operators and methods (installed by plait.numpy)."""

    __slots__ = ()
    __array_priority__ = 100


def install_methods(methods: dict) -> None:
    """Install ``name -> function or property`` on :class:`ArrayMethods`."""
    for name, fn in methods.items():
        setattr(ArrayMethods, name, fn)
