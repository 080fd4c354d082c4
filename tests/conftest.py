"""Suite-wide settings: compiled kernels go to a cache directory private to the run,
every graph jit or make_graph traces is type-checked (``check_graph``), and the native
backend compiles before a first call returns (no interp tier, ``config.tiered``; also in
subprocesses), so native tests test native code (tests/native/test_tiered.py tests the
tiers)."""
import os
import tempfile

import plait

plait.config.checks = True
plait.config.tiered = False
os.environ["PLAIT_TIERED"] = "0"

if "PLAIT_CACHE_DIR" not in os.environ:
    os.environ["PLAIT_CACHE_DIR"] = os.path.join(tempfile.gettempdir(),
                                                 f"plait-test-cache-{os.getuid()}")
