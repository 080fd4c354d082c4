"""Suite-wide settings: compiled kernels go to a cache directory private to the run, and
every graph jit or make_graph traces is type-checked (``check_graph``)."""
import os
import tempfile

import plait

plait.config.checks = True

if "PLAIT_CACHE_DIR" not in os.environ:
    os.environ["PLAIT_CACHE_DIR"] = os.path.join(tempfile.gettempdir(),
                                                 f"plait-test-cache-{os.getuid()}")
