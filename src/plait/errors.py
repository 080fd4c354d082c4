"""plait's exceptions: every error a user can cause says what, where, and what to do.

Messages name the user's own file and line (the first stack frame outside the
plait package), found by :func:`user_frame`.
"""
import os as _os
import sys as _sys
import threading as _threading

__all__ = ["BuildEnvironmentError", "CacheFallbackWarning", "CallbackError", "CompileError",
           "ConcretizationError", "ControlFlowError", "DeviceUnavailableError", "DistributedError", "GraphTypeError", "LinAlgError",
           "MaterializationForbiddenError", "MissingRuleError",
           "NonConcreteBooleanIndexError", "NotConvertible", "NotLowerable", "OnnxImportError",
           "PlaitError", "PlaitFloatingPointError", "PlaitIndexError",
           "PlaitMemoryError", "PlaitTypeError", "PlaitValueError", "SolverBudgetError",
           "StaticArgumentError", "StripeParseError", "StripeRuntimeError",
           "StripeVerifyError", "TileError", "TileLowerError", "TileSyntaxError",
           "ToolchainWarning",
           "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "UnboundAxisNameError", "UnexpectedTracerError",
           "UnsupportedOnnxOperatorError", "UnsupportedOptionError", "UsageError", "XlaUnavailableError", "format_site",
           "replay_sources", "user_frame", "user_site", "warn_user"]

_PLAIT_DIR = _os.path.dirname(_os.path.abspath(__file__))


_INTERNAL: dict[str, bool] = {}   # file name -> is it plait's own (or frozen) code


def _is_internal(filename: str) -> bool:
    r = _INTERNAL.get(filename)
    if r is None:
        fn = _os.path.abspath(filename)
        r = _INTERNAL[filename] = fn.startswith(_PLAIT_DIR) or filename.startswith("<frozen")
    return r


class _Replaying(_threading.local):
    """This thread's source lines of the equations being re-evaluated (innermost last)."""

    def __init__(self):
        self.sources: list[str] = []


_REPLAYING = _Replaying()


def replay_sources() -> list[str]:
    """This thread's stack of replayed equations' source lines: a transformation that
    re-evaluates a graph pushes each equation's ``source`` while binding it, so errors
    raised on derived equations name the user's original line."""
    return _REPLAYING.sources


def user_site():
    """``(code, lineno)`` of the innermost frame outside plait, or None.

    Cheap (no string formatting): the lazy runtime records one per operation and
    formats it with :func:`format_site` only when a message needs it.
    """
    f = _sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not _is_internal(code.co_filename):
            return (code, f.f_lineno)
        f = f.f_back
    return None


def format_site(site) -> str:
    """``"file:line (in function)"`` for a :func:`user_site` result."""
    if site is None:
        return "<unknown location>"
    code, line = site
    return f"{code.co_filename}:{line} (in {code.co_name})"


def user_frame() -> str:
    """Return ``"file:line (in function)"`` for the innermost frame outside plait, or the
    source line of the equation being re-evaluated (see :func:`replay_sources`)."""
    replaying = _REPLAYING.sources
    if replaying and replaying[-1]:
        return replaying[-1]
    return format_site(user_site())


_ERROR_REFERENCE = "docs/errors.md"   # one section per class below, anchored by its name


class PlaitError(Exception):
    """Base class of every error plait raises on purpose.

    The message gets the user's file and line appended unless ``locate=False``.
    """

    def __init__(self, msg: str = "", *, locate: bool = True):
        if locate:
            msg = f"{msg}\n  (at {user_frame()})"
        super().__init__(msg)
        if hasattr(self, "add_note"):      # Python 3.11+: printed under the message
            self.add_note(f"error reference: {_ERROR_REFERENCE}#{type(self).__name__.lower()}")


class PlaitTypeError(PlaitError, TypeError):
    """A shape or dtype error found while evaluating a primitive's abstract rule."""


class PlaitValueError(PlaitError, ValueError):
    """A bad value for a static argument (axis out of range, bad mode, ...)."""


class TileSyntaxError(PlaitValueError):
    """An ill-formed user Tile operation (``plait.tile.op``): an unbound index, an access
    its constraints do not keep in range, a body that is not a Tile expression."""


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


class UnsupportedOnnxOperatorError(UnsupportedOptionError):
    """An ONNX model uses operators (or operator options) ``plait.onnx`` does not convert;
    the message lists every one of them at once."""


class OnnxImportError(PlaitValueError):
    """An ONNX model ``plait.onnx`` cannot import as given (not a model, dynamic shapes,
    wrong inputs to the imported function)."""


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


class XlaUnavailableError(PlaitError, ImportError):
    """jaxlib (the XLA runtime) is not installed."""


class CallbackError(PlaitError):
    """A host callback was used where it cannot run (no derivative, bad vmap_method,
    results of the wrong shape)."""


class MaterializationForbiddenError(PlaitError):
    """A lazy array was observed inside ``plait.lazy.forbid_materialization()``."""


class GraphTypeError(PlaitError):
    """``check_graph`` found an ill-typed graph (a plait bug, not a user error)."""


# --- the compiler's intermediate languages (their text, checks and interpreters) -------

class TileError(PlaitError, ValueError):
    """An ill-formed Tile statement or program."""


class TileLowerError(PlaitError, ValueError):
    """A Tile statement that cannot be lowered to Stripe (e.g. an unbounded index)."""


class StripeParseError(PlaitError, ValueError):
    """Malformed Stripe text; the message names the line."""


class StripeVerifyError(PlaitError, ValueError):
    """A Stripe program breaks a rule of the IR."""


class StripeRuntimeError(PlaitError, RuntimeError):
    """A Stripe program failed in the reference interpreter (bad input, out-of-range
    access, unknown op)."""


class SolverBudgetError(PlaitError, RuntimeError):
    """The exact integer search of ``stripe.polyhedron`` exceeded its node budget."""


# --- internal signals: raised and caught inside plait, never seen by users --------------
# (plain exceptions: raising one is cheap, it carries no user location)

class NotLowerable(Exception):
    """This equation has no Tile lowering (the native backend runs it as a host step)."""


class NotConvertible(Exception):
    """The function uses a construct autograph does not rewrite (generators, async);
    autograph then leaves the function as written."""


class UsageError(PlaitError, ValueError):
    """A command-line argument of the ``plait`` command that names nothing usable (a
    missing file or function, a malformed argument spec); the command exits with
    status 2."""

    def __init__(self, msg: str = ""):
        super().__init__(msg, locate=False)


class UnboundAxisNameError(PlaitError, NameError):
    """A collective names an axis that no enclosing ``vmap(axis_name=)`` or ``pmap``
    binds."""


class DistributedError(PlaitError, RuntimeError):
    """Replicas disagree or cannot talk: a program that differs between processes, a
    replica or process that died or timed out, MPI missing or misconfigured. (Raised in
    replica threads, where no user line is on the stack: the message names the replica.)"""

    def __init__(self, msg: str = "", *, locate: bool = False):
        super().__init__(msg, locate=locate)


class CacheFallbackWarning(UserWarning):
    """The kernel cache directory cannot be used; kernels are compiled in a temporary one."""


class ToolchainWarning(UserWarning):
    """The C toolchain lacks a feature (OpenMP), so native kernels run with a fallback."""


def warn_user(msg: str, category: type) -> None:
    """``warnings.warn`` attributed to the user's line (the first frame outside plait)."""
    import warnings
    f, level = _sys._getframe(1), 2
    while f is not None and _is_internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(msg, category, stacklevel=level)

