"""Run-time settings, read from the environment once and changeable in code.

``PLAIT_BACKEND`` (``interp``), ``PLAIT_LOG_COMPILES`` (log every trace and
compile with the reason for the cache miss), ``PLAIT_CHECKS`` (type-check every
graph and verify every pass), ``PLAIT_DUMP_DIR`` (write every stage to files).
"""
from __future__ import annotations

import os


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


class Config:
    """The settings object: ``plait.config.log_compiles = True`` etc."""

    def __init__(self):
        self.backend: str = os.environ.get("PLAIT_BACKEND", "interp")
        self.log_compiles: bool = _flag("PLAIT_LOG_COMPILES")
        self.checks: bool = _flag("PLAIT_CHECKS")
        self.dump_dir: str | None = os.environ.get("PLAIT_DUMP_DIR") or None

    def update(self, name: str, value) -> None:
        """Set a setting by name (like ``jax.config.update``)."""
        if not hasattr(self, name):
            raise AttributeError(f"plait.config has no setting {name!r}")
        setattr(self, name, value)


config = Config()
