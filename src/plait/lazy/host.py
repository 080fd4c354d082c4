"""Host transfer: ``to_host(tree)`` materializes lazy arrays and returns NumPy arrays."""
from __future__ import annotations

import numpy as np

from plait.core.pytree import tree_flatten, tree_unflatten
from plait.lazy.array import LazyArray, Const
from plait.lazy.materialize import materialize


def to_host(x):
    """NumPy copies of every array in pytree ``x``; pending lazy arrays run in one trace."""
    leaves, tree = tree_flatten(x)
    materialize([a for a in leaves if isinstance(a, LazyArray) and a._ref.__class__ is not Const])
    return tree_unflatten(tree, [np.array(a) for a in leaves])
