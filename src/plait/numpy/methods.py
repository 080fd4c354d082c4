"""Operators and methods of plait arrays, installed on ``ArrayMethods``.

``ArrayMethods`` is the shared base of ``plait.Array`` and every tracer, so
``x + y``, ``x[1:, None]``, ``x.sum(axis=0)`` and ``x.T`` mean the same thing
eagerly and under any transformation. In-place operators (``x += 1``) fall
back to the binary operators and return new arrays: plait arrays are immutable.
"""
from __future__ import annotations

import sys

import numpy as np

from plait.core.array_methods import install_methods
from plait.numpy import ufuncs as uf, reductions as red, shapes as sh, _basic_index
from plait.numpy._promote import is_array, is_python_scalar

_OPERAND_TYPES = (list, tuple, np.ndarray, np.generic)


def _ok(other) -> bool:
    return is_array(other) or is_python_scalar(other) or isinstance(other, _OPERAND_TYPES)


def _binop(fn, name):
    def method(self, other):
        if not _ok(other):
            return NotImplemented
        return fn(self, other)
    method.__name__ = name
    return method


def _rbinop(fn, name):
    def method(self, other):
        if not _ok(other):
            return NotImplemented
        return fn(other, self)
    method.__name__ = name
    return method


def _getitem(self, idx):
    """``x[idx]``: basic indexing here; advanced indexing when plait.numpy.indexing exists."""
    ix = sys.modules.get("plait.numpy.indexing")
    if ix is not None:
        return ix.getitem(self, idx)
    return _basic_index.getitem(self, idx)


def _reshape(self, *shape, order: str = "C", copy=None):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return sh.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return sh.transpose(self, axes if axes else None)


def _astype(self, dtype, order: str = "K", casting: str = "unsafe", subok: bool = True,
            copy: bool = True):
    return sh.astype(self, dtype)


def _delegate(fn, name):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Method form of ``plait.numpy.{fn.__name__}``."
    return method


def _round_method(self, decimals: int = 0, out=None):
    return uf.round(self, decimals)


def _dunder_round(self, ndigits=None):
    return uf.round(self, 0 if ndigits is None else ndigits)


def _clip(self, min=None, max=None, out=None, **kwargs):
    return uf.clip(self, min, max)


def _copy(self, order: str = "K"):
    return self


_BINARY = {
    "add": uf.add, "sub": uf.subtract, "mul": uf.multiply, "truediv": uf.true_divide,
    "floordiv": uf.floor_divide, "mod": uf.remainder, "pow": uf.power,
    "and": uf.bitwise_and, "or": uf.bitwise_or, "xor": uf.bitwise_xor,
    "lshift": uf.left_shift, "rshift": uf.right_shift, "divmod": uf.divmod,
}
_COMPARE = {"eq": uf.equal, "ne": uf.not_equal, "lt": uf.less, "le": uf.less_equal,
            "gt": uf.greater, "ge": uf.greater_equal}


def _methods() -> dict:
    m: dict = {}
    for name, fn in _BINARY.items():
        m[f"__{name}__"] = _binop(fn, f"__{name}__")
        m[f"__r{name}__"] = _rbinop(fn, f"__r{name}__")
    for name, fn in _COMPARE.items():
        m[f"__{name}__"] = _binop(fn, f"__{name}__")
    m.update({
        "__neg__": lambda self: uf.negative(self),
        "__pos__": lambda self: uf.positive(self),
        "__abs__": lambda self: uf.absolute(self),
        "__invert__": lambda self: uf.invert(self),
        "__round__": _dunder_round,
        "__getitem__": _getitem,
        "reshape": _reshape,
        "transpose": _transpose,
        "astype": _astype,
        "round": _round_method,
        "clip": _clip,
        "copy": _copy,
        "T": property(lambda self: sh.transpose(self)),
        "mT": property(lambda self: sh.matrix_transpose(self)),
        "real": property(lambda self: uf.real(self)),
        "imag": property(lambda self: uf.imag(self)),
        "flatten": _delegate(sh.ravel, "flatten"),
        "ravel": _delegate(sh.ravel, "ravel"),
        "squeeze": _delegate(sh.squeeze, "squeeze"),
        "swapaxes": _delegate(sh.swapaxes, "swapaxes"),
        "repeat": _delegate(sh.repeat, "repeat"),
        "conj": _delegate(uf.conjugate, "conj"),
        "conjugate": _delegate(uf.conjugate, "conjugate"),
        "nonzero": _delegate(uf.nonzero, "nonzero"),
    })
    for name in ("sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin",
                 "any", "all", "cumsum", "cumprod", "ptp"):
        m[name] = _delegate(getattr(red, name), name)
    return m


def install() -> None:
    """Install the operators and methods (called once when plait.numpy is imported)."""
    install_methods(_methods())
