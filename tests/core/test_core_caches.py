"""In-process caches are bounded: those that grow per shape or signature are
``plait.lru.LRUCache``s (``config.max_cache_entries``), those keyed by a graph live only
as long as the graph."""
from __future__ import annotations

import gc
import importlib
import weakref

import pytest

from plait.lru import LRUCache

PER_SHAPE_CACHES = [
    ("plait.numpy.ufuncs", "_PLANS"),
    ("plait.numpy.ufuncs", "_RESOLVED"),
    ("plait.stripe.passes.autotile", "_CACHE"),
    ("plait.lazy.cache", "_HISTORY"),
    ("plait.lazy.autodiff", "_BACKWARD"),
]


@pytest.mark.parametrize("module,name", PER_SHAPE_CACHES)
def test_per_shape_caches_are_lru(module, name):
    assert isinstance(getattr(importlib.import_module(module), name), LRUCache)


def test_effects_memo_does_not_keep_graphs_alive():
    import plait
    import plait.numpy as pnp
    from plait.core.effects import graph_has_effects
    graph = plait.make_graph(lambda x: pnp.sin(x) * 2)(1.0).graph
    assert graph_has_effects(graph) is False
    ref = weakref.ref(graph)
    del graph
    gc.collect()
    assert ref() is None
