"""``plait.experimental``: APIs JAX keeps under ``jax.experimental`` (``io_callback``)."""
from plait.lax.callbacks import io_callback

__all__ = ["io_callback"]
