"""The on-disk cache of compiled kernels.

Entries live in ``$PLAIT_CACHE_DIR`` (default ``~/.cache/plait``), a directory only
the user can write. An entry is ``<key>.so`` plus ``<key>.sha256``, the digest of the
object's bytes; both are written to temporary files and renamed into place, so a
reader sees a whole entry or none. An entry whose digest does not match (truncated,
corrupted) is deleted and rebuilt, never loaded. Two processes building the same
entry at once both succeed: the last rename wins with identical content.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Callable

from plait.runtime import metrics


def cache_dir() -> str:
    """The cache directory, created with mode 0700 if missing."""
    d = os.environ.get("PLAIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "plait")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def entry_key(*parts: str) -> str:
    """Hash of everything an entry depends on (source, compiler identity, flags)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _valid(so: str, sig: str) -> bool:
    try:
        with open(sig) as f:
            want = f.read().strip()
        return bool(want) and _digest(so) == want
    except OSError:
        return False


def get_or_build(key: str, build: Callable[[str], None]) -> str:
    """Path of the cached object for ``key``; ``build(path)`` creates it on a miss."""
    d = cache_dir()
    so = os.path.join(d, key + ".so")
    sig = os.path.join(d, key + ".sha256")
    if os.path.exists(so) and _valid(so, sig):
        metrics.bump("kernel_cache_hits")
        return so
    for p in (so, sig):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
    fd, tmp_so = tempfile.mkstemp(suffix=".so", dir=d)
    os.close(fd)
    try:
        build(tmp_so)
        metrics.bump("cc_invocations")
        digest = _digest(tmp_so)
        fd, tmp_sig = tempfile.mkstemp(suffix=".sha256", dir=d)
        with os.fdopen(fd, "w") as f:
            f.write(digest)
        os.replace(tmp_so, so)
        os.replace(tmp_sig, sig)
    finally:
        if os.path.exists(tmp_so):
            os.unlink(tmp_so)
    return so
