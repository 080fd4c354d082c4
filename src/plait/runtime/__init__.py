"""Runtime: concrete arrays, devices, metrics (compile caches live with the backends)."""
from plait.runtime.array import Array, device_put, devices, Device
from plait.runtime import nan_check  # noqa: F401  (installs the eager debug_nans check)
