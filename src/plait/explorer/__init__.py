"""The explorer page: ``plait.explore(f, *args, path="f.html")`` (or ``plait explore
FILE.py:FUNC``) writes ONE self-contained HTML file, needing no server or network: the
graph drawn as a picture (nodes coloured by primitive, fused kernels outlined), the
kernel partition, each kernel's Tile, its Stripe program through every pass with what
each pass changed, the generated C, and a profile of one run, with links from a graph
node to its kernel, its Stripe program and its C lines.

``collect`` gathers the data from the native pipeline, ``layout`` draws the graph as
SVG, ``page`` writes the HTML.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["explore"]


def explore(f: Callable, *args, path: str | None = None, profile: bool = True) -> str:
    """Write the explorer page of ``jit(f)`` on ``args`` to ``path`` (default
    ``<name of f>.html``) and return the path. ``profile=False`` skips compiling and
    timing a run (the page then needs no C compiler)."""
    import numpy as np

    from plait.api import jit
    from plait.core.pytree import tree_flatten
    from plait.explorer.collect import collect
    from plait.explorer.page import render
    lowered = jit(f).lower(*args)
    data = collect(lowered.closed, [np.asarray(a) for a in tree_flatten(args)[0]],
                   profile=profile)
    if path is None:
        path = f"{getattr(f, '__name__', 'graph').replace('<', '').replace('>', '')}.html"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(data))
    return path
