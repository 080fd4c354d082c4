"""``mpirun -n 2``: collectives of a pmap over both processes, a data-parallel training
step equal to the single-process step, a mismatched program, a dead process. The
worker is tests/distributed/mpi_worker.py; Open MPI runs as root only with its two
opt-in variables, set here."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
WORKER = Path(__file__).with_name("mpi_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def _mpirun() -> str:
    exe = (shutil.which("mpirun", path=os.path.dirname(sys.executable))
           or shutil.which("mpirun"))
    if exe is None:
        pytest.fail("mpi4py is installed but no mpirun was found (install plait[mpi])")
    return exe


def _run(mode: str, devices: int = 1, timeout_s: float = 5.0, tmp_path=None,
         extra: tuple = ()):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PLAIT_CPU_DEVICES=str(devices), PLAIT_COLLECTIVE_TIMEOUT=str(timeout_s),
               PYTHONPATH=str(ROOT / "src") + os.pathsep + str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    if tmp_path is not None:
        env["PLAIT_CACHE_DIR"] = str(tmp_path)
    t0 = time.monotonic()
    p = subprocess.run([_mpirun(), "-n", "2", "--oversubscribe", *extra, sys.executable,
                        str(WORKER), mode], env=env, capture_output=True, text=True, timeout=240)
    return p, time.monotonic() - t0


@pytest.mark.parametrize("devices", [1, 2])
def test_collectives_and_training_step_across_processes(devices, tmp_path):
    p, _ = _run("collectives", devices, tmp_path=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "RESULT 0 OK" in out and "RESULT 1 OK" in out, out


def test_mismatched_program_is_an_error_on_every_process(tmp_path):
    p, _ = _run("mismatch", tmp_path=tmp_path)
    out = p.stdout + p.stderr
    for r in (0, 1):
        assert f"RESULT {r} MISMATCH" in out and "different pmap programs" in out, out


def test_dead_process_stops_the_others(tmp_path):
    # --enable-recovery: Open MPI lets the survivor run on, so plait (not mpirun's kill)
    # ends it, naming the dead process well within the collective timeout
    p, took = _run("dead", timeout_s=30.0, tmp_path=tmp_path, extra=("--enable-recovery",))
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "RESULT 0 DEAD process 0 of 2: process 1 (pid" in out, out
    assert "exited before reaching the psum" in out, out
    assert took < 25, (took, out)


def test_stalled_process_times_out_with_an_error(tmp_path):
    p, took = _run("stall", timeout_s=3.0, tmp_path=tmp_path)
    out = p.stdout + p.stderr
    assert "RESULT 0 TIMEOUT" in out and "did not reach the psum within 3 s" in out, out
    assert p.returncode != 0 and took < 50, (took, out)
