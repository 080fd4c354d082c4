"""plait's exceptions: every error a user can cause says what, where, and what to do.

Messages name the user's own file and line (the first stack frame outside the
plait package), found by :func:`user_frame`.
"""
from __future__ import annotations

import os
import sys

_PLAIT_DIR = os.path.dirname(os.path.abspath(__file__))


_INTERNAL: dict[str, bool] = {}   # file name -> is it plait's own (or frozen) code


def _is_internal(filename: str) -> bool:
    r = _INTERNAL.get(filename)
    if r is None:
        fn = os.path.abspath(filename)
        r = _INTERNAL[filename] = fn.startswith(_PLAIT_DIR) or filename.startswith("<frozen")
    return r


REPLAYING: list = []   # source lines of equations being re-evaluated (innermost last)


def user_frame() -> str:
    """Return ``"file:line (in function)"`` for the innermost frame outside plait, or the
    source line of the equation being re-evaluated (``REPLAYING``: transformations that
    replay a graph push each equation's line, so derived equations keep the user's line)."""
    if REPLAYING and REPLAYING[-1]:
        return REPLAYING[-1]
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not _is_internal(code.co_filename):
            return f"{code.co_filename}:{f.f_lineno} (in {code.co_name})"
        f = f.f_back
    return "<unknown location>"


class PlaitError(Exception):
    """Base class of every error plait raises on purpose.

    The message gets the user's file and line appended unless ``locate=False``.
    """

    def __init__(self, msg: str = "", *, locate: bool = True):
        if locate:
            msg = f"{msg}\n  (at {user_frame()})"
        super().__init__(msg)


class PlaitTypeError(PlaitError, TypeError):
    """A shape or dtype error found while evaluating a primitive's abstract rule."""


class PlaitValueError(PlaitError, ValueError):
    """A bad value for a static argument (axis out of range, bad mode, ...)."""


class PlaitIndexError(PlaitError, IndexError):
    """An index out of range for a static shape."""


class MissingRuleError(PlaitError, NotImplementedError):
    """A primitive lacks the rule an interpreter needs (jvp, transpose, batch, ...)."""

    def __init__(self, prim_name: str, rule: str):
        super().__init__(
            f"primitive '{prim_name}' has no '{rule}' rule, so this transformation "
            f"cannot handle it. This is a gap in plait, not in your code: please "
            f"report it, or avoid '{prim_name}' under this transformation.")
        self.prim_name = prim_name
        self.rule = rule


class LinAlgError(PlaitError, __import__("numpy").linalg.LinAlgError):
    """NumPy's ``LinAlgError`` (singular or non-square matrix) raised on concrete values."""


class ConcretizationError(PlaitError):
    """A concrete Python value was needed from a traced (abstract) array."""


class TracerBoolConversionError(ConcretizationError, TypeError):
    """``bool()`` (an ``if``/``while``/``and``/``or``) applied to a traced array."""


class TracerIntegerConversionError(ConcretizationError, TypeError):
    """``int()``/``float()``/``__index__`` applied to a traced array."""


class TracerArrayConversionError(PlaitError, TypeError):
    """``numpy.asarray`` applied to a traced array."""


class UnexpectedTracerError(PlaitError):
    """A tracer escaped the transformation that created it and was used later."""


class NonConcreteBooleanIndexError(PlaitError, IndexError):
    """A boolean mask index under ``jit``: the result shape depends on data."""


class CompileError(PlaitError):
    """A backend failed to compile a graph (no C compiler, compiler error, ...)."""


class DeviceUnavailableError(CompileError):
    """A backend's device runtime is missing (no pyopencl, no OpenCL platform or
    device); the message says how to install one."""


class UnsupportedOptionError(PlaitError, NotImplementedError):
    """An option of a NumPy/SciPy/JAX function that plait does not implement (the message
    names the option and what is supported)."""


class StaticArgumentError(PlaitError, ValueError):
    """A static argument of ``jit`` that cannot be used as a cache key."""


class ControlFlowError(PlaitError, TypeError):
    """Branches or loop bodies whose types do not match."""


class PlaitFloatingPointError(PlaitError, FloatingPointError):
    """``debug_nans``/``debug_infs``: a computation produced a NaN or an infinity; the
    message names the primitive and the user's line that first produced it."""


class PlaitMemoryError(PlaitError, MemoryError):
    """A native kernel's temporary, an intermediate or an output buffer could not be
    allocated (the message names the step and the size)."""


class BuildEnvironmentError(CompileError):
    """The C toolchain could not run because of the machine, not the program: a full or
    read-only disk, an unwritable or ``noexec`` directory, a compiler that vanished or was
    killed. ``storage`` is True when the cause is the directory being written to (then
    another directory may work)."""

    def __init__(self, msg: str = "", *, storage: bool = False, cause: str | None = None):
        super().__init__(msg, locate=False)
        self.storage = storage
        self.cause = cause or (msg.splitlines()[0] if msg else "")     # the short reason


class CacheFallbackWarning(UserWarning):
    """The kernel cache directory cannot be used; kernels are compiled in a temporary one."""


class ToolchainWarning(UserWarning):
    """The C toolchain lacks a feature (OpenMP), so native kernels run with a fallback."""


def warn_user(msg: str, category: type) -> None:
    """``warnings.warn`` attributed to the user's line (the first frame outside plait)."""
    import warnings
    f, level = sys._getframe(1), 2
    while f is not None and _is_internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(msg, category, stacklevel=level)
