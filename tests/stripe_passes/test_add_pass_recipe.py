"""The add-a-pass recipe (ARCHITECTURE.md, "Adding a Stripe pass"), followed by a test:
a pass in a module of its own is registered, named in a target config's pass list with
a parameter, keeps the Stripe interpreter's results and the verifier's approval, and runs
end to end under jit on the native backend."""
import dataclasses
import importlib.util

import numpy as np

import plait
import plait.numpy as pnp
from plait.backends.native import compile as native_compile
from plait.backends.native.target import host_target
from plait.stripe.passes import PASSES, register_pass
from sp_helpers import blocks, check_passes
from sp_programs import mm_epilogue

PASS_MODULE = '''
"""A toy pass: tag every top-level block of the entry with a tag from the config."""
from dataclasses import replace

from plait.stripe.ir import Block


def tag_blocks_pass(program, target, tag="toy"):
    stmts = tuple(replace(s, tags=s.tags | {tag}) if isinstance(s, Block) else s
                  for s in program.entry.stmts)
    return replace(program, entry=replace(program.entry, stmts=stmts))
'''


def _load(tmp_path):
    path = tmp_path / "toy_pass.py"
    path.write_text(PASS_MODULE)
    spec = importlib.util.spec_from_file_location("toy_pass", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.tag_blocks_pass


def test_a_registered_pass_runs_from_the_target_config(tmp_path, monkeypatch):
    fn = _load(tmp_path)
    assert "tag_blocks" not in PASSES
    register_pass("tag_blocks", fn)
    try:
        _run_with(fn, tmp_path, monkeypatch)
    finally:
        del PASSES["tag_blocks"]


def _run_with(fn, tmp_path, monkeypatch):
    base = host_target()
    target = dataclasses.replace(base, passes=base.passes + (("tag_blocks", (("tag", "recipe"),)),))

    # step 4 of the recipe: interpreter before == after (and the generated C), verifier
    out = check_passes(mm_epilogue(20, 30, 40),
                       [(n, dict(ps)) for n, ps in target.passes], target)
    assert blocks(out, "recipe"), "the pass did not run"

    # end to end: the native backend compiles with the target whose list names the pass
    monkeypatch.setattr(native_compile, "host_target", lambda: target)
    monkeypatch.setenv("PLAIT_CACHE_DIR", str(tmp_path / "cache"))
    f = plait.jit(lambda a, b: pnp.tanh(a @ b) * 2.0, backend="native")
    a = np.random.RandomState(0).randn(6, 5)
    b = np.random.RandomState(1).randn(5, 7)
    np.testing.assert_allclose(np.asarray(f(a, b)), np.tanh(a @ b) * 2.0, rtol=1e-12)
    assert "recipe" in f.lower(a, b).as_text("stripe-opt")


def test_a_name_is_registered_once(tmp_path, monkeypatch):
    fn = _load(tmp_path)
    monkeypatch.setitem(PASSES, "tag_blocks", fn)
    register_pass("tag_blocks", fn)                    # the same function again: fine
    try:
        register_pass("tag_blocks", lambda p, t: p)
    except plait.errors.PlaitValueError as e:
        assert "already registered" in str(e)
    else:
        raise AssertionError("a second pass under one name was accepted")
