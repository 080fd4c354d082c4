"""Stripe passes: generic rewrites parameterized by a target config, never by an op.

``run_passes(program, target, dump_dir, verify)`` runs ``target.passes`` in order;
with ``verify`` (the native backend sets it under ``PLAIT_CHECKS=1``) the verifier runs
after every pass, and with a ``dump_dir`` (the
native backend passes one under ``PLAIT_DUMP_DIR``) each intermediate program is
written as ``<kernel>_NN_<pass>.txt``.
"""
from __future__ import annotations

import os

from plait.profiler import events
from plait.stripe.ir import Program
from plait.stripe.passes.autotile import autotile_pass
from plait.stripe.passes.boundary import boundary_pass
from plait.stripe.passes.elide_init import elide_init_pass
from plait.stripe.passes.fuse import fuse_pass
from plait.stripe.passes.local_tiles import local_tiles_pass
from plait.stripe.passes.localize import localize_pass
from plait.stripe.passes.partition import partition_pass
from plait.stripe.passes.place import place_pass
from plait.stripe.passes.scalarize import scalarize_pass
from plait.stripe.passes.stencil import stencil_pass
from plait.stripe.passes.threads import threads_pass

PASSES = {
    "elide_init": elide_init_pass,
    "stencil": stencil_pass,
    "autotile": autotile_pass,
    "fuse": fuse_pass,
    "localize": localize_pass,
    "scalarize": scalarize_pass,
    "boundary": boundary_pass,
    "partition": partition_pass,
    "threads": threads_pass,
    "local_tiles": local_tiles_pass,
    "place": place_pass,
}


def register_pass(name: str, fn) -> None:
    """Make ``fn(program, target, **params) -> Program`` available under ``name`` to the
    pass lists of target configs (the add-a-pass recipe, ARCHITECTURE.md)."""
    if name in PASSES and PASSES[name] is not fn:
        from plait.errors import PlaitValueError
        raise PlaitValueError(f"a Stripe pass named {name!r} is already registered; pick "
                              f"another name")
    PASSES[name] = fn


def run_passes(program: Program, target, dump_dir: str | None = None,
               verify: bool = False) -> Program:
    """Apply the target's pass list to ``program``; ``verify`` checks it after every pass."""
    dump = dump_dir
    if dump:
        os.makedirs(dump, exist_ok=True)
        _dump(dump, program, 0, "lowered")
    for n, (name, params) in enumerate(target.passes, start=1):
        with events.span(f"pass {name}", "stripe-pass", {"kernel": program.name}):
            program = PASSES[name](program, target, **dict(params))
        if verify:
            from plait.stripe.verify import verify as check
            check(program)
        if dump:
            _dump(dump, program, n, name)
    return program


def _dump(d: str, program: Program, n: int, name: str) -> None:
    from plait.stripe import to_text
    with open(os.path.join(d, f"{program.name}_{n:02d}_{name}.txt"), "w") as f:
        f.write(to_text(program))
