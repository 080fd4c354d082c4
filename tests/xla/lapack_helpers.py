"""Helpers of the xla LAPACK tests (imported by them; not a test module): random
matrices, and running an exported module in a process that never traced it."""
import subprocess
import sys

import numpy as np


def random_matrices(shape, dtype, seed=0) -> np.ndarray:
    """Standard-normal entries of ``dtype`` (complex dtypes: independent real and
    imaginary parts)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    return a.astype(dtype)


def call_in_fresh_process(exported, args, tmp_path) -> list:
    """``exported`` (a ``plait.export`` result) serialized, deserialized in a fresh Python
    process and called on ``args`` there: its outputs as NumPy arrays."""
    blob, ins, outs = tmp_path / "module.bin", tmp_path / "args.npz", tmp_path / "outs.npz"
    blob.write_bytes(exported.serialize())
    np.savez(ins, *args)
    code = ("import numpy as np, plait, sys; "
            "e = plait.export.deserialize(open(sys.argv[1], 'rb').read()); "
            "a = np.load(sys.argv[2]); "
            "outs = e.call(*[a[f'arr_{i}'] for i in range(len(a.files))]); "
            "np.savez(sys.argv[3], *[np.asarray(o) for o in outs])")
    run = subprocess.run([sys.executable, "-c", code, str(blob), str(ins), str(outs)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    res = np.load(outs)
    return [res[f"arr_{i}"] for i in range(len(res.files))]
