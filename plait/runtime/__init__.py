"""Runtime: concrete arrays, devices, metrics (compile caches live with the backends)."""
from plait.runtime.array import Array, device_put, devices, Device
