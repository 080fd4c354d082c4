"""``plait.scipy``: SciPy-style libraries on top of ``plait.numpy`` (as ``jax.scipy``)."""
from plait.scipy import special  # noqa: F401
from plait.scipy import stats  # noqa: F401
from plait.scipy import optimize  # noqa: F401
from plait.scipy import signal  # noqa: F401
from plait.scipy import ndimage  # noqa: F401
from plait.scipy import linalg  # noqa: F401

__all__ = ["linalg", "ndimage", "optimize", "signal", "special", "stats"]
