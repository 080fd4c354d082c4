"""A peer mode that fails (``MayFail``, e.g. ``torch.compile`` where it does not work)
is named in its row's note and not timed, without failing the row; a required system
that fails still raises."""
import numpy as np
import pytest

from benchmarks.common import (Config, MayFail, PeerFailure, Row, check_row, first_outputs,
                               measure)

def test_failing_optional_candidate_is_named_not_timed():
    def broken():
        raise RuntimeError("no C++ compiler\nsecond line")
    cands = {"plait.jit": lambda: np.ones(3), "torch.compile": MayFail(broken)}
    outs, first = first_outputs(cands)
    assert list(cands) == ["plait.jit"] and list(first) == ["plait.jit"]
    assert isinstance(outs["torch.compile"], PeerFailure)
    row = Row("r", first_call=first)
    assert check_row(row, np.ones(3), outs, 0.0) and not row.failed
    assert row.note == "torch.compile failed (RuntimeError: no C++ compiler)"
    measure(row, cands, Config(smoke=True, quick=True, backend="interp"))
    assert "torch.compile" not in row.times and "plait.jit" in row.times


def test_failing_required_candidate_raises():
    with pytest.raises(ZeroDivisionError):
        first_outputs({"plait.jit": lambda: 1 / 0})


def test_linalg_rows_restore_jax_x64(monkeypatch):
    """The la rows switch JAX to float64 and switch it back: left on, the suite's later
    float32 JAX programs (jm) failed with float64 parameters (a fake jax here: CI has
    none)."""
    from benchmarks import linalg

    class FakeConfig:
        jax_enable_x64 = False

        def update(self, name, value):
            assert name == "jax_enable_x64"
            self.jax_enable_x64 = value

    class FakeJax:
        config = FakeConfig()

    seen = []
    monkeypatch.setattr(linalg, "jax_modules", lambda: (FakeJax, None))
    monkeypatch.setattr(linalg, "_decomposition_rows",
                        lambda cfg, jax, jnp: seen.append(jax.config.jax_enable_x64) or [])
    monkeypatch.setattr(linalg, "_gp_row", lambda cfg, jax, jnp: Row("gp"))
    monkeypatch.setattr(linalg, "overhead_report", lambda cfg: "")
    linalg.run(Config(smoke=True))
    assert seen == [True] and FakeJax.config.jax_enable_x64 is False
