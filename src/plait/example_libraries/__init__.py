"""``plait.example_libraries``: a small stax-style layer library, optimizers over
pytrees and model builders (MLP, All-CNN-C, VGG19), like ``jax.example_libraries``."""
from plait.example_libraries import stax, optimizers, models

__all__ = ["stax", "optimizers", "models"]
