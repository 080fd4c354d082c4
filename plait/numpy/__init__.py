"""plait.numpy (in progress)."""
