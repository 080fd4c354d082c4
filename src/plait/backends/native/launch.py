"""Asynchronous launches: whole native programs run on a worker thread, in order.

A fully native executable has one C entry, ``plait_run(void **ins, void **outs)``.
:func:`launch` hands it to a small C runtime (built once, cached like kernels): a FIFO
queue served by one POSIX worker thread that never touches Python, so the caller
goes on (recording the next lazy step) while the program runs. Launches complete in
submission order, so a launch may read buffers an earlier launch is still writing.
The worker's OpenMP teams leave one core to the caller (measured on 2 cores: a second
two-thread team next to the main thread's slowed every later kernel ~1.7x, and the
lazy MLP step ran at 0.92-1.02 ms against 0.72 ms with one worker thread).

The Python side keeps every buffer of a launch alive until the launch is known to be
complete (:class:`Launch` holds them; :func:`_reap` lets them go). The worker stores
the program's status (0, or an allocation failure) in a word the launch owns;
waiting on a failed launch raises ``PlaitMemoryError``, and so does waiting on a
launch that read a failed launch's outputs (its inputs were garbage). At most
``MAX_IN_FLIGHT`` launches are outstanding; the next one waits for the oldest. Before
``fork()`` and at exit the queue is drained; a forked child starts a fresh runtime.
"""
from __future__ import annotations

import atexit
import collections
import ctypes
import os
import threading
import warnings
from typing import Callable

import numpy as np

from plait.codegen.toolchain import build_shared_object, require_toolchain
from plait.config import set_openmp_wait_defaults
from plait.errors import CompileError, PlaitMemoryError
from plait.profiler import events
from plait.runtime import kernel_cache

MAX_IN_FLIGHT = 2

RUNTIME_SOURCE = r"""
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef int64_t (*plait_fn)(void **, void **);
typedef struct plait_job {
  plait_fn fn; void **bufs; int64_t nin; int64_t *status; struct plait_job *next;
} plait_job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static plait_job *head = NULL, *tail = NULL;
static int64_t submitted = 0, completed = 0;
static int started = 0;

static void *plait_worker(void *arg) {
  (void)arg;
#ifdef _OPENMP
  /* the thread that queued the work keeps a core busy (it records the next step) */
  int n = omp_get_num_procs() - 1, cap = omp_get_max_threads();
  omp_set_num_threads(n < 1 ? 1 : (n < cap ? n : cap));
#endif
  for (;;) {
    pthread_mutex_lock(&mu);
    while (!head) pthread_cond_wait(&work_cv, &mu);
    plait_job *j = head;
    head = j->next;
    if (!head) tail = NULL;
    pthread_mutex_unlock(&mu);
    *j->status = j->fn(j->bufs, j->bufs + j->nin);   /* published by the mutex below */
    free(j->bufs);
    free(j);
    pthread_mutex_lock(&mu);
    completed++;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

/* Queue *status = fn(ins, outs); returns the launch's ticket (1, 2, ...), or -1 on failure. */
int64_t plait_rt_submit(plait_fn fn, void **ins, int64_t nin, void **outs, int64_t nout,
                        int64_t *status) {
  plait_job *j = malloc(sizeof *j);
  void **bufs = malloc(sizeof(void *) * (size_t)(nin + nout + 1));
  if (!j || !bufs) { free(j); free(bufs); return -1; }
  memcpy(bufs, ins, sizeof(void *) * (size_t)nin);
  memcpy(bufs + nin, outs, sizeof(void *) * (size_t)nout);
  j->fn = fn; j->bufs = bufs; j->nin = nin; j->status = status; j->next = NULL;
  pthread_mutex_lock(&mu);
  if (!started) {
    pthread_t t;
    if (pthread_create(&t, NULL, plait_worker, NULL) != 0) {
      pthread_mutex_unlock(&mu);
      free(bufs); free(j);
      return -1;
    }
    pthread_detach(t);
    started = 1;
  }
  if (tail) tail->next = j; else head = j;
  tail = j;
  int64_t ticket = ++submitted;
  pthread_cond_signal(&work_cv);
  pthread_mutex_unlock(&mu);
  return ticket;
}

/* Block until every launch up to ticket has completed. */
void plait_rt_wait(int64_t ticket) {
  pthread_mutex_lock(&mu);
  while (completed < ticket) pthread_cond_wait(&done_cv, &mu);
  pthread_mutex_unlock(&mu);
}

int64_t plait_rt_completed(void) {
  pthread_mutex_lock(&mu);
  int64_t c = completed;
  pthread_mutex_unlock(&mu);
  return c;
}

/* In a forked child (the queue was drained before the fork): no worker exists. */
void plait_rt_reset(void) {
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&work_cv, NULL);
  pthread_cond_init(&done_cv, NULL);
  head = tail = NULL;
  submitted = completed = 0;
  started = 0;
}
"""


class Launch:
    """One queued run: its ticket, the buffers it reads and writes (kept alive), its
    status word, the launches whose outputs it reads (``deps``) and ``describe``,
    which turns a failure status into a message."""

    __slots__ = ("ticket", "buffers", "done", "status", "deps", "describe", "error")

    def __init__(self, ticket: int, buffers: list, status: ctypes.c_int64, deps: tuple,
                 describe: Callable[[int], str]):
        self.ticket = ticket
        self.buffers = buffers
        self.done = False
        self.status = status
        self.deps = deps
        self.describe = describe
        self.error: str | None = None

    def join(self) -> None:
        """Block (without the GIL) until this launch has completed."""
        if not self.done:
            t0 = events.now() if events.ACTIVE else 0.0
            _runtime().plait_rt_wait(self.ticket)
            _reap()
            if events.ACTIVE:               # plait.profiler: the caller waited this long
                events.complete("wait for launch", "call", t0, events.now())

    def wait(self) -> None:
        """Block until this launch has completed; raise ``PlaitMemoryError`` if it (or
        a launch whose outputs it read) failed, every time it is waited on."""
        self.join()
        if self.error is not None:
            raise PlaitMemoryError(self.error)

    def _settle(self) -> None:
        """Record the outcome of a completed launch (its deps have completed before)."""
        self.done = True
        self.buffers = None
        if self.status.value:
            self.error = self.describe(self.status.value)
        else:
            failed = next((d for d in self.deps if d.error is not None), None)
            if failed is not None:
                self.error = ("this value was computed from the outputs of an earlier "
                              "asynchronous step that failed: " + failed.error)
        self.deps = ()


_LOCK = threading.Lock()
_QUEUE_LOCK = threading.Lock()  # _IN_FLIGHT: threads reap (wait) while another launches
_IN_FLIGHT: "collections.deque[Launch]" = collections.deque()


class _Loaded:
    """The launch runtime once loaded: the library (None when it cannot be built) and
    the address of its ``plait_rt_submit``."""

    __slots__ = ("loaded", "lib", "submit")

    def __init__(self):
        self.loaded = False
        self.lib = None
        self.submit: int | None = None


_RT = _Loaded()


def _runtime():
    if not _RT.loaded:
        with _LOCK:
            if not _RT.loaded:
                _RT.lib = _load_runtime()
                _RT.loaded = True
    return _RT.lib


def _load_runtime():
    """The runtime library, built on first use; None if it cannot be built (every
    launch is then refused and programs run on the calling thread)."""
    tc = require_toolchain()
    set_openmp_wait_defaults()          # libgomp may load with this library
    key = kernel_cache.entry_key(RUNTIME_SOURCE, tc.identity(), "runtime")
    try:
        lib = kernel_cache.load(
            key, lambda out: build_shared_object(RUNTIME_SOURCE, out, tc, ("-pthread",)),
            ctypes.CDLL)
    except CompileError as e:
        warnings.warn(f"plait: the asynchronous launch runtime could not be built, so "
                      f"lazy steps run synchronously: {e}", RuntimeWarning, stacklevel=2)
        return None
    lib.plait_rt_submit.restype = ctypes.c_int64
    lib.plait_rt_submit.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                    ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    lib.plait_rt_wait.restype = None
    lib.plait_rt_wait.argtypes = [ctypes.c_int64]
    lib.plait_rt_completed.restype = ctypes.c_int64
    lib.plait_rt_completed.argtypes = []
    lib.plait_rt_reset.restype = None
    lib.plait_rt_reset.argtypes = []
    return lib


def _submit_address(lib) -> int:
    """The address of ``plait_rt_submit`` (what an extension module's ``launch`` calls)."""
    if _RT.submit is None:
        _RT.submit = ctypes.cast(lib.plait_rt_submit, ctypes.c_void_p).value
    return _RT.submit


def _reap() -> None:
    """Forget the buffers of every completed launch."""
    if not _IN_FLIGHT:
        return
    with _QUEUE_LOCK:
        done = _runtime().plait_rt_completed()
        while _IN_FLIGHT and _IN_FLIGHT[0].ticket <= done:
            _IN_FLIGHT.popleft()._settle()


def _pointers(arrays: list) -> ctypes.Array:
    return (ctypes.c_void_p * max(len(arrays), 1))(
        *[a.__array_interface__["data"][0] for a in arrays])


def launch(entry: int, ins: list[np.ndarray], outs: list[np.ndarray],
           module=None, deps: tuple = (),
           describe: Callable[[int], str] = lambda s: f"status {s}") -> Launch | None:
    """Queue ``entry(ins, outs)`` (a ``plait_run`` address); None if the runtime refused
    (the caller then runs the program itself). ``module``, the program's extension
    module when it has one, reads the buffers' addresses faster than ctypes. ``deps``
    are the pending launches writing some of ``ins``; ``describe`` words a failure
    status for the ``PlaitMemoryError`` that waiting on the launch raises."""
    lib = _runtime()
    if lib is None:
        return None
    _reap()
    while True:
        with _QUEUE_LOCK:
            if len(_IN_FLIGHT) < MAX_IN_FLIGHT:
                break
            oldest = _IN_FLIGHT[0]
        oldest.join()
    buffers = ins + outs
    submit = _submit_address(lib)
    status = ctypes.c_int64(0)
    where = ctypes.addressof(status)
    with _QUEUE_LOCK:       # tickets enter _IN_FLIGHT in the order they were issued
        if module is not None:
            ticket = module.launch(submit, buffers, len(ins), where)
        else:
            ticket = lib.plait_rt_submit(entry, _pointers(ins), len(ins), _pointers(outs),
                                         len(outs), where)
        if ticket < 0:
            return None
        job = Launch(ticket, buffers, status,
                     tuple(d for d in deps if not d.done or d.error is not None), describe)
        _IN_FLIGHT.append(job)
    return job


def wait_all() -> None:
    """Block until every queued launch has completed."""
    with _QUEUE_LOCK:
        last = _IN_FLIGHT[-1] if _IN_FLIGHT else None
    if last is not None:
        last.join()


def _after_fork_in_child() -> None:
    global _QUEUE_LOCK
    _QUEUE_LOCK = threading.Lock()      # another thread may have held it at the fork
    _IN_FLIGHT.clear()
    if _RT.lib is not None:
        _RT.lib.plait_rt_reset()


os.register_at_fork(before=wait_all, after_in_child=_after_fork_in_child)
atexit.register(wait_all)       # the worker must not write into buffers being freed
