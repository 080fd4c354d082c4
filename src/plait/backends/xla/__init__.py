"""The xla backend: Graph -> StableHLO text -> XLA (PJRT) executable.

jaxlib is an optional dependency (``pip install "plait[xla]"``); every use of its
private entry points is in :mod:`plait.backends.xla.pjrt`.
"""
from plait.backends.xla.compile import compile_xla, stablehlo_text, XlaExecutable

__all__ = ["compile_xla", "stablehlo_text", "XlaExecutable"]
