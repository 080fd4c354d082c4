"""The fast tier's BLAS products leave a core to each running compiler process
(``plait.runtime.blas``): OpenBLAS's threads run in lockstep, so one sharing its core
with a build slowed a product 3-6x."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from plait.backends.native import tier_ops
from plait.codegen import toolchain
from plait.runtime import blas

DN = (((1,), (0,)), ((), ()))


def _threads() -> list[int]:
    return [get() for get, _ in blas.controls()]


@pytest.fixture
def openblas():
    if not blas.controls():
        pytest.skip("NumPy here does not use an OpenBLAS with thread-count entry points")


def test_compilers_running_counts_each_compiler_process_while_it_runs(monkeypatch):
    seen = []

    def run(cmd, **kw):
        seen.append(toolchain.compilers_running())
        if cmd[0] == "fail":
            raise subprocess.TimeoutExpired(cmd, 1)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(toolchain.subprocess, "run", run)
    assert toolchain.compilers_running() == 0
    toolchain._run(["cc", "--version"])
    with pytest.raises(subprocess.TimeoutExpired):
        toolchain._run(["fail"])
    assert seen == [1, 1] and toolchain.compilers_running() == 0


def test_products_beside_builds_run_on_the_cores_left_and_restore_the_count(
        openblas, monkeypatch):
    before = _threads()
    monkeypatch.setattr(blas, "compilers_running", lambda: 0)
    with blas.beside_builds():
        assert _threads() == before                  # no build: untouched
    # as many builds as cores: one thread (the fewest a product can run on)
    monkeypatch.setattr(blas, "compilers_running", lambda: blas.cpu_info().cores)
    with blas.beside_builds():
        assert _threads() == [1] * len(before)
        with blas.beside_builds():              # nested (same thread): no deadlock
            assert _threads() == [1] * len(before)
        assert _threads() == [1] * len(before)
    assert _threads() == before
    with pytest.raises(ZeroDivisionError), blas.beside_builds():
        1 / 0
    assert _threads() == before


def test_fast_tier_dot_and_conv_make_their_products_beside_builds(openblas, monkeypatch):
    monkeypatch.setattr(blas, "compilers_running", lambda: blas.cpu_info().cores)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 48)), rng.standard_normal((48, 32))
    inside = []

    def reference(lhs, rhs, **kw):
        inside.append(_threads())
        return tier_ops.dot_general_p.rule("impl")(lhs, rhs, **kw)
    out = tier_ops.dot(a, b, dimension_numbers=DN, preferred_element_type=None,
                       _reference=reference)
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    assert inside == [[1] * len(blas.controls())]

    entered = []
    real = tier_ops.beside_builds

    def spy():
        entered.append(True)
        return real()
    monkeypatch.setattr(tier_ops, "beside_builds", spy)
    x, w = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3))
    y = tier_ops.conv(x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)),
                      lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                      dimension_numbers=((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)),
                      feature_group_count=1, batch_group_count=1,
                      preferred_element_type=None,
                      _reference=tier_ops.conv_general_dilated_p.rule("impl"))
    ref = tier_ops.conv_general_dilated_p.rule("impl")(
        x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1),
        rhs_dilation=(1, 1), dimension_numbers=((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)),
        feature_group_count=1, batch_group_count=1, preferred_element_type=None)
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    assert len(entered) == 1
