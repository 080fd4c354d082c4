"""The benchmark runner runs (tiny sizes, interp backend; no timing assertions) and the
digits example trains to >= 95% test accuracy."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_benchmark_runner_smoke():
    """The suite without torch (as in CI, even where torch is installed) prints its table:
    plait.jit timed interleaved and alone, first calls with cold and warm caches."""
    r = subprocess.run([sys.executable, "-m", "benchmarks", "--smoke", "--backend", "interp",
                        "--only", "w1,w2,w4,w7", "--without", "torch"], cwd=ROOT, env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    table = [line for line in r.stdout.splitlines() if line.startswith("| W")]
    # W1 and W2 add plait.jit after each peer; W1 also plait.jit alone in a fresh process
    assert [line.split(" ")[1] for line in table] == ["W1", "W1:", "W1", "W2", "W2:", "W4", "W7"]
    assert all("rtol" in line or "exact" in line for line in table)
    assert "FAILED" not in r.stdout and "torch left out (--without)" in r.stdout
    head = _cells(next(line for line in r.stdout.splitlines() if line.startswith("| workload")))
    assert "torch" not in head and "torch.compile" not in head
    first = head.index("plait.jit first call cold / warm")
    peer_rows = [dict(zip(head, _cells(line))) for line in table if "after each peer" in line]
    for row in peer_rows:       # a wall and a CPU time and their ratios after each peer
        assert "after numpy" in row["note"] and "cpu" in row["note"], row
        assert "after jax.jit" in row["note"] or "jax" not in r.stdout.split("peers:")[1], row
    main = [line for line in table if "after" not in line]
    for line in main:
        row = dict(zip(head, _cells(line)))
        assert row["plait.jit alone"].endswith("x)"), row    # a time and its ratio
        if "jax.jit alone" in row:      # jax.jit alone, against plait.jit alone
            (pa, _), (ja, ratio) = _time_and_ratio(row["plait.jit alone"]), \
                _time_and_ratio(row["jax.jit alone"])
            assert abs(ratio - ja / pa) <= 0.006 + 0.01 * ratio, row
        cold, warm = _cells(line)[first].split(" / ")          # both measured
        assert {cold.split()[1], warm.split()[1]} <= {"ns", "us", "ms", "s"}, line


def _time_and_ratio(cell: str) -> tuple[float, float]:
    """``(seconds, ratio)`` of a table cell such as ``1.23 ms (0.98x)``."""
    value, unit, ratio = cell.split()
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]
    return float(value) * scale, float(ratio.strip("()x"))


def test_benchmark_runner_rejects_unknown_workload():
    r = subprocess.run([sys.executable, "-m", "benchmarks", "--only", "w99"], cwd=ROOT,
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown workload" in r.stderr


def test_benchmark_check_catches_wrong_numbers():
    from benchmarks.common import assert_close
    import numpy as np
    assert_close("ok", [np.ones(3)], [np.ones(3) * (1 + 1e-6)], 1e-5)
    with pytest.raises(AssertionError, match="differs"):
        assert_close("bad", [np.ones(3)], [np.ones(3) * 1.1], 1e-3)


@pytest.mark.slow
def test_digits_example_accuracy():
    """The README's main job, on the default backend (scikit-learn is a test extra)."""
    from plait.examples import digits
    r = digits.train(steps=300, eager_steps=1, progress=False)
    assert r["accuracy"] >= 0.95, r
    assert r["compile_s"] > 0 and r["jit_steps_per_s"] > 0 and r["eager_steps_per_s"] > 0
    # what the pictures show: the loss curve falls; the misclassified are the test errors
    steps, losses = zip(*r["curve"])
    assert steps[0] == 1 and steps[-1] == 300 and losses[-1] < losses[0] / 4
    images, truth, pred = r["misclassified"]
    assert len(truth) == round(360 * (1 - r["accuracy"])) and (truth != pred).all()
    assert images.shape == (len(truth), 8, 8)
