"""A native executable's calls reuse the memory the previous call freed: glibc's malloc,
left at its defaults, mapped each call's temporaries fresh and unmapped them at free,
so every call faulted their pages in again (half a DP-SGD step's time)."""
import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

from plait.config import malloc_set_by_user

_SCRIPT = textwrap.dedent("""
import numpy as np
import plait, plait.numpy as pnp

def f(x):   # values of 4 MB down to 256 KB, with reductions and transposes between them
    outs = []
    for k in range(5):
        y = x[: 1024 >> k]
        t = pnp.exp(y).T
        outs.append((t * t.sum(0)).T + y.max(0))
    return outs

x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
g = plait.jit(f, backend="native")
for _ in range(3):
    out = g(x)

def faults():
    with open("/proc/self/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[7])
before = faults()
for _ in range(5):
    out = g(x)
print(faults() - before)
""")


@pytest.mark.skipif(malloc_set_by_user() or not hasattr(ctypes.CDLL(None), "mallopt"),
                    reason="glibc's malloc, with thresholds the user did not set")
def test_native_calls_fault_no_pages_once_warm():
    # a fresh process: glibc's state is the default one until plait changes it
    env = dict(os.environ, PLAIT_TIERED="0")
    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    faults = int(run.stdout.split()[-1])
    assert faults < 200, faults        # glibc's defaults: ~24,000 over the 5 calls
