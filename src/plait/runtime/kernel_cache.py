"""The on-disk cache of compiled kernels, and the in-memory index of loaded ones.

Entries live in ``plait.config.cache_dir``, else ``$PLAIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/plait`` or ``~/.cache/plait`` (created with mode 0700). An entry is
ONE file, ``<key>.so``: the shared object followed by a trailer carrying the SHA-256 of
the object's bytes (the dynamic loader ignores bytes past the ELF segments). A writer
builds in a private staging directory, seals the object with its trailer and renames
it into place; that rename is the one step that publishes an entry, so a reader sees a
whole entry or none. Nobody deletes an entry file: one that does not check out
(truncated, corrupted) or does not load is rebuilt and replaced by the same atomic
rename, so a writer's freshly published entry can never vanish under it. Only a
non-file in an entry's place (a directory) is moved aside and removed. Two processes
building one entry both succeed; the last rename wins, with equivalent content.

When the cache directory cannot be used (read-only, full, a file in its place, an
unusable ``HOME``, a ``noexec`` mount), kernels are built in a private temporary
directory instead, and one :class:`~plait.errors.CacheFallbackWarning` names the cause
and ``PLAIT_CACHE_DIR``.

Beside each entry, ``<key>.use`` records its use: one byte appended per load from disk
(its size is the entry's hit count) and its time of last change (the last use). After
a build the cache is pruned to ``plait.config.cache_max_size`` bytes, least recently
used entries first (``plait.runtime.cache_admin``; ``plait cache``).

Loaded libraries are indexed in memory by key, least recently used dropped first
beyond ``plait.config.kernel_cache_size`` entries (executables keep what they use).
Within a process one thread builds a key while the others wait for it.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
import time
from typing import Callable, TypeVar

from plait.errors import (BuildEnvironmentError, CacheFallbackWarning, CompileError,
                          warn_user)
from plait.runtime import metrics

T = TypeVar("T")

FORMAT = "entry-v2"                      # part of every key: older layouts are not read
_MAGIC = b"PLAIT-KERNEL-SHA256:"
_TRAILER = len(_MAGIC) + 64
_STALE_S = 3600.0                        # staging left by a killed process, removed after


def configured_dir() -> str:
    """The cache directory the settings ask for (it may not exist or be usable)."""
    from plait.config import config
    return config.kernel_cache_dir()


_STATE_LOCK = threading.RLock()
_FALLBACK: dict[str, str] = {}   # configured dir that proved unusable -> temporary dir
_WHY: dict[str, str] = {}        # configured dir -> why it proved unusable
_SWEPT: set = set()


def _after_fork_in_child() -> None:
    global _STATE_LOCK
    _STATE_LOCK = threading.RLock()    # a lock another thread held at fork() stays held
    _BUILDING.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def cache_dir() -> str:
    """The directory kernels are built in: the configured one, created with mode 0700,
    or (once it proved unusable) a private temporary directory."""
    with _STATE_LOCK:
        d = configured_dir()
        if d in _FALLBACK:
            return _FALLBACK[d]
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)   # writes fail later if it is read-only
        except OSError as e:
            return _fall_back(d, e)
        if d not in _SWEPT:
            _SWEPT.add(d)
            _sweep_stale(d)
        return d


def writable_problem(d: str) -> str | None:
    """Why kernels cannot be built in ``d`` (None when a staging directory can be made)."""
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".stage-", dir=d))
    except OSError as e:
        return _why(e)
    return None


def _fall_back(d: str, cause: BaseException) -> str:
    """Switch this process to a temporary directory, warning once; raise if none works."""
    with _STATE_LOCK:
        for conf, tmp in _FALLBACK.items():
            if tmp == d:
                raise _nowhere(conf, _WHY[conf], f"{d} ({_why(cause)})")
        if d in _FALLBACK:
            return _FALLBACK[d]
        try:
            tmp = tempfile.mkdtemp(prefix="plait-kernels-")
        except OSError as e:
            raise _nowhere(d, _why(cause), f"a new one ({e})") from None
        _FALLBACK[d], _WHY[d] = tmp, _why(cause)
        atexit.register(shutil.rmtree, tmp, True)
    warn_user(f"plait: the kernel cache directory {d} cannot be used ({_why(cause)}), so "
              f"kernels are compiled in the temporary directory {tmp} and are not kept "
              f"across runs. Set PLAIT_CACHE_DIR to a writable directory with room (on a "
              f"filesystem that allows executables) to keep them.", CacheFallbackWarning)
    return tmp


def _why(e: BaseException) -> str:
    """A one-line reason: a build error's short cause, else the error's first line."""
    text = getattr(e, "cause", None) or str(e)
    return text.splitlines()[0] if text else type(e).__name__


def _nowhere(conf: str, why: str, tmp_failure: str) -> BuildEnvironmentError:
    return BuildEnvironmentError(
        f"no directory to compile kernels in: the kernel cache directory {conf} cannot be "
        f"used ({why}) and neither can the temporary directory {tmp_failure}. Free disk "
        f"space, or set PLAIT_CACHE_DIR (and TMPDIR) to a writable directory with room; or "
        f"use plait.config.backend = 'interp'.", storage=True, cause=why)


def _sweep_stale(d: str) -> None:
    """Remove staging directories that processes killed mid-build left behind."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    now = time.time()
    for n in names:
        if n.startswith((".stage-", ".trash-")):
            p = os.path.join(d, n)
            try:
                if now - os.stat(p).st_mtime > _STALE_S:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass


def entry_key(*parts: str) -> str:
    """Hash of everything an entry depends on (source, compiler identity, flags)."""
    h = hashlib.sha256(FORMAT.encode() + b"\0")
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def entry_path(key: str) -> str:
    """Where the entry for ``key`` lives (or would live) in the cache directory in use."""
    return os.path.join(cache_dir(), key + ".so")


def seal(path: str) -> None:
    """Append the trailer (the digest of the file's bytes) that makes ``path`` an entry."""
    h = hashlib.sha256()
    with open(path, "r+b") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
        f.write(_MAGIC + h.hexdigest().encode())


def _sealed(path: str) -> bool:
    """Whether ``path`` is a regular file whose trailer matches its bytes."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    if len(data) <= _TRAILER or not data[-_TRAILER:].startswith(_MAGIC):
        return False
    return hashlib.sha256(data[:-_TRAILER]).hexdigest().encode() == data[-64:]


def _clear_non_file(path: str) -> None:
    """Move a directory (or other non-file) in an entry's place aside and remove it."""
    if os.path.lexists(path) and (os.path.islink(path) or not os.path.isfile(path)):
        trash = tempfile.mkdtemp(prefix=".trash-", dir=os.path.dirname(path))
        os.rename(path, os.path.join(trash, "x"))
        shutil.rmtree(trash, ignore_errors=True)
        metrics.bump("kernel_cache_discarded")


# -- the in-memory index -------------------------------------------------------------
_INDEX: "collections.OrderedDict[str, object]" = collections.OrderedDict()
_BUILDING: dict[str, list] = {}            # key -> [lock, number of threads using it]


@contextlib.contextmanager
def _key_lock(key: str):
    with _STATE_LOCK:
        slot = _BUILDING.setdefault(key, [threading.Lock(), 0])
        slot[1] += 1
    try:
        with slot[0]:
            yield
    finally:
        with _STATE_LOCK:
            slot[1] -= 1
            if slot[1] == 0:
                del _BUILDING[key]


def _index_get(key: str):
    with _STATE_LOCK:
        obj = _INDEX.get(key)
        if obj is not None:
            _INDEX.move_to_end(key)
        return obj


def _index_put(key: str, obj) -> None:
    from plait.config import config
    with _STATE_LOCK:
        _INDEX[key] = obj
        _INDEX.move_to_end(key)
        while len(_INDEX) > max(int(config.kernel_cache_size), 0):
            _INDEX.popitem(last=False)


def index_size() -> int:
    """How many loaded libraries the in-memory index holds."""
    return len(_INDEX)


def clear_index() -> None:
    """Forget every loaded library (executables keep the ones they use)."""
    with _STATE_LOCK:
        _INDEX.clear()


# -- get an entry ----------------------------------------------------------------------
def load(key: str, build: Callable[[str], None], open_: Callable[[str], T]) -> T:
    """The loaded library for ``key``: from the in-memory index, else ``open_(path)`` of
    the disk entry, else after ``build(path)`` creates it (then it is published).

    ``build`` raises CompileError (BuildEnvironmentError when the machine is at fault)
    or OSError; ``open_`` raises OSError or ImportError when a file does not load."""
    obj = _index_get(key)
    if obj is not None:
        return obj
    with _key_lock(key):
        obj = _index_get(key)
        if obj is None:
            obj = _load_from_disk(key, build, open_)
            _index_put(key, obj)
    return obj


def cached(key: str) -> bool:
    """Whether an entry for ``key`` is loaded or sealed on disk (a later :func:`load`
    then builds nothing unless the file turns out not to load)."""
    return _index_get(key) is not None or _sealed(entry_path(key))


def _load_from_disk(key: str, build, open_):
    last: BaseException | None = None
    for _ in range(3):
        d = cache_dir()
        path = os.path.join(d, key + ".so")
        if _sealed(path):
            try:
                obj = open_(path)
                metrics.bump("kernel_cache_hits")
                note_use(path, hit=True)
                return obj
            except (OSError, ImportError):   # loadable-looking but not loadable: rebuild
                metrics.bump("kernel_cache_discarded")
        try:
            _clear_non_file(path)
            _build_and_publish(d, path, build)
        except (OSError, BuildEnvironmentError) as e:
            if isinstance(e, BuildEnvironmentError) and not e.storage:
                raise
            last = e
            _fall_back(d, e)          # raises when even the fallback directory failed
            continue
        try:
            return open_(path)
        except (OSError, ImportError) as e:
            last = e                  # a noexec mount, or the entry replaced under us
            if d not in _FALLBACK.values():
                _fall_back(d, e)
    raise CompileError(
        f"the compiled kernels could not be loaded ({_why(last)}). If the cache directory "
        f"is on a filesystem mounted noexec, set PLAIT_CACHE_DIR (and TMPDIR) to one that "
        f"allows executables; or use plait.config.backend = 'interp'.", locate=False)


def _build_and_publish(d: str, path: str, build: Callable[[str], None]) -> None:
    stage = tempfile.mkdtemp(prefix=".stage-", dir=d)
    try:
        obj = os.path.join(stage, "k.so")
        build(obj)
        metrics.bump("cc_invocations")
        seal(obj)
        os.replace(obj, path)         # the one step that publishes the entry
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    note_use(path, hit=False)
    from plait.runtime import cache_admin
    cache_admin.prune_if_over(d, keep=path)


def note_use(path: str, hit: bool) -> None:
    """Record a use of the entry at ``path`` in its ``.use`` file (one byte per hit; the
    file's time is the last use). Best effort: a read-only cache is still usable."""
    try:
        fd = os.open(path[:-3] + ".use", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            if hit:
                os.write(fd, b"+")
            else:
                os.utime(fd)
        finally:
            os.close(fd)
    except OSError:
        pass

