"""Suite-wide settings: compiled kernels go to a cache directory private to the run."""
import os
import tempfile

if "PLAIT_CACHE_DIR" not in os.environ:
    os.environ["PLAIT_CACHE_DIR"] = os.path.join(tempfile.gettempdir(),
                                                 f"plait-test-cache-{os.getuid()}")
