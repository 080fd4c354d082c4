"""Structured control flow: ``cond``/``switch``, ``while_loop``/``fori_loop``,
``scan``/``map`` — higher-order primitives whose params hold sub-graphs."""
from plait.lax.control_flow.cond import cond, switch, cond_p
from plait.lax.control_flow.loops import while_loop, fori_loop, while_p
from plait.lax.control_flow.scan import scan, map, scan_p
from plait.lax.control_flow import while_ad  # noqa: F401  (registers while_lin: ALL_PRIMITIVES is whole at import)
