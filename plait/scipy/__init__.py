"""``plait.scipy``: SciPy-style libraries on top of ``plait.numpy`` (as ``jax.scipy``)."""
from plait.scipy import special  # noqa: F401
