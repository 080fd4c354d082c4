"""``plait.ad_checkpoint``: rematerialization (JAX's ``jax.ad_checkpoint`` names).

``checkpoint``/``remat`` with ``policy=`` one of :data:`checkpoint_policies`,
``checkpoint_name`` to tag values for name-based policies, and
``print_saved_residuals``/``ad_residuals`` to see what reverse mode keeps.
"""
from plait.transforms.remat import (Residual, ad_residuals, checkpoint, checkpoint_name,
                                    checkpoint_policies, print_saved_residuals, remat)

__all__ = ["Residual", "ad_residuals", "checkpoint", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals", "remat"]
