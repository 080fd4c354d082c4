"""Shared checks for the Stripe pass tests: interpreter before/after, verifier, generated C."""
from __future__ import annotations

import ctypes
import os
import tempfile

import numpy as np

from plait.codegen.c_cpu import PRELUDE, render_program
from plait.codegen.c_expr import op_prelude
from plait.codegen.toolchain import build_shared_object, find_toolchain
from plait.stripe import lower, run, verify
from plait.stripe.ir import np_dtype
from plait.stripe.passes import PASSES
from plait.stripe.targets import Target

KIB = 1024
# an AVX-512 machine and an AVX2 one: nothing may assume 64-byte vectors
AVX512 = Target("avx512", 2, 64, 64, 48 * KIB, 2048 * KIB, 32768 * KIB, 1024 * KIB, ())
AVX2 = Target("avx2", 2, 32, 64, 32 * KIB, 256 * KIB, 8192 * KIB, 128 * KIB, ())
_DIR = tempfile.mkdtemp(prefix="plait-stripe-passes-")


def partition_params(**over) -> dict:
    """The host config's ``partition`` parameters (the cost model's prices), with
    ``over`` replacing some: ``fork_ns=0`` makes every parallel-safe block worth it."""
    from plait.backends.native.target import host_target
    return {**dict(dict(host_target().passes)["partition"]), **over}


SPLIT = partition_params(fork_ns=0)     # the small test programs split whatever their size


def random_inputs(program, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for b in program.inputs:
        dt = np_dtype(b.dtype)
        if dt.kind == "f":
            out[b.name] = rng.standard_normal(b.shape).astype(dt)
        else:
            out[b.name] = rng.integers(-5, 6, b.shape).astype(dt)
    return out


def run_c(program, inputs: dict) -> dict:
    """Compile ``program`` to C, run it on ``inputs``, return its outputs."""
    tc = find_toolchain()
    src = PRELUDE + op_prelude() + render_program(program, "entry")
    so = os.path.join(_DIR, f"k{abs(hash(src))}.so")
    if not os.path.exists(so):
        build_shared_object(src, so, tc)
    lib = ctypes.CDLL(so)
    bufs = []
    for b in program.buffers:
        if b.kind == "in":
            bufs.append(np.ascontiguousarray(inputs[b.name], dtype=np_dtype(b.dtype)))
        else:
            bufs.append(np.full(b.shape, 7, dtype=np_dtype(b.dtype)))  # garbage: the fill must happen
    arr = (ctypes.c_void_p * len(bufs))(*[x.ctypes.data for x in bufs])
    lib.entry(arr)
    return {b.name: x for b, x in zip(program.buffers, bufs) if b.kind == "out"}


def apply(program, passes, target=AVX512):
    """Run ``[(pass name, params), ...]`` verifying after each pass."""
    for name, params in passes:
        program = PASSES[name](program, target, **params)
        verify(program)
    return program


def check_passes(tile_program, passes, target=AVX512, *, c: bool = True, seed: int = 0,
                 rtol: float = 2e-5):
    """Interpreter before == after (== generated C); returns the optimized program."""
    before = lower(tile_program) if not hasattr(tile_program, "entry") else tile_program
    after = apply(before, passes, target)
    ins = random_inputs(before, seed)
    want = run(before, ins)
    got = run(after, ins)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=rtol, err_msg=k)
    if c:
        got_c = run_c(after, ins)
        for k in want:
            np.testing.assert_allclose(got_c[k], want[k], rtol=rtol, atol=rtol, err_msg=k)
    return after


def blocks(program, tag: str) -> list:
    """Every block of ``program`` carrying ``tag``."""
    from plait.stripe import walk_blocks
    return [b for b in walk_blocks(program.entry) if tag in b.tags]
