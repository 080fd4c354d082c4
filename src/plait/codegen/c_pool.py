"""C source of plait's own parallel-for pool (used by the GEMM library).

An OpenMP parallel region ends at a barrier that every thread of the team must reach,
so a region is as late as its last thread to be scheduled. On a machine whose cores
are shared (NumPy's OpenBLAS threads or XLA's pool spinning in the same process, other
processes) that thread may wait a whole scheduler time slice for its core; measured on
2 cores beside JAX's threads, the W1 MLP step went from 8 ms to 380 ms.

``pool_for(width, pieces, fn, ctx)`` runs ``fn(ctx, p)`` for ``p < pieces`` on the
calling thread and up to ``width - 1`` helper threads, and never waits for a helper to
arrive: the pieces are claimed one at a time from a shared counter, the caller claims
too, and it waits only for pieces a helper has already claimed (running ones). A helper
the scheduler wakes late finds nothing left and goes back to sleep; at worst the caller
computes everything alone, at one thread's speed. A job whose data should stay with a
core across calls (a matrix-vector product in a loop) cuts its work into one block per
thread instead, and each piece claims a block with ``pool_claim_block``: the claiming
thread's own block while it is free, else any free one. Helpers spin for a while after
a job (:data:`HELPER_SPIN` pause rounds), then sleep on a condition variable. One job
runs at a time: a call made while another thread's job runs (or from inside a piece)
runs its pieces serially on its own thread. A forked child starts without helpers and
makes new ones on first use.

The counter and the job's generation share one 64-bit word, so a helper that read an
old job's description can never claim a piece of the next job with it (its
compare-and-swap names the old generation and fails).
"""
from __future__ import annotations

# pause-loop rounds: helpers before sleeping, the caller between looks at the running
# pieces before it yields its core. A pause took 13 ns on a Sapphire Rapids core (about
# 140 cycles on Skylake), so the helpers spin about 50 us there. The kernels between two
# GEMMs run on libgomp's threads, which a spinning helper could slow, but fewer rounds
# gained nothing measurable: with 400 (5 us) the stax MNIST epoch took 0.996 of its time
# with 4000, and with 0 a weight-gradient GEMM followed by its momentum update 0.98-0.99
# (interleaved runs)
HELPER_SPIN = 4000
CALLER_SPIN = 2000

POOL_SOURCE = r"""
#include <pthread.h>
#include <unistd.h>
#include <sched.h>
#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#define POOL_PAUSE() __builtin_ia32_pause()
#else
#define POOL_PAUSE() ((void)0)
#endif
#define POOL_MAX 64

typedef void (*pool_piece_fn)(void *ctx, int64_t piece);

static pthread_mutex_t pool_run = PTHREAD_MUTEX_INITIALIZER;   /* one job at a time */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;    /* helpers, sleeping */
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static int pool_helpers, pool_atfork;
static _Atomic uint64_t pool_state;              /* generation << 32 | next piece */
static _Atomic(pool_piece_fn) pool_fn;
static _Atomic(void *) pool_ctx;
static _Atomic int64_t pool_pieces, pool_width, pool_done;

/* claim and run pieces of job gen until none is left (or a newer job started) */
static void pool_work(uint32_t gen) {
  for (;;) {
    uint64_t s = atomic_load_explicit(&pool_state, memory_order_acquire);
    if ((uint32_t)(s >> 32) != gen) return;
    pool_piece_fn fn = atomic_load_explicit(&pool_fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&pool_ctx, memory_order_relaxed);
    int64_t p = (int64_t)(uint32_t)s;
    if (p >= atomic_load_explicit(&pool_pieces, memory_order_relaxed)) return;
    if (!atomic_compare_exchange_weak_explicit(&pool_state, &s, s + 1, memory_order_acq_rel,
                                               memory_order_relaxed))
      continue;
    fn(ctx, p);
    atomic_fetch_add_explicit(&pool_done, 1, memory_order_release);
  }
}

/* this thread's place in the pool: 0 for a caller, i for helper i */
static __thread int pool_self;

/* for a job of n blocks, each of its n pieces claiming one: this thread's own block
   (pool_self mod n) while it is free, else the first free one. A block's data then
   stays with the same core's cache from call to call (a matrix-vector product in a
   loop), whichever thread the scheduler lets claim first */
static int pool_claim_block(_Atomic int *taken, int n) {
  int w = pool_self % n;
  if (!atomic_exchange(&taken[w], 1)) return w;
  for (int b = 0; b < n; ++b)
    if (!atomic_exchange(&taken[b], 1)) return b;
  return -1;
}

static void *pool_helper(void *arg) {
  uint64_t a = (uint64_t)(uintptr_t)arg;
  int64_t index = (int64_t)(a >> 32);            /* 1, 2, ...: the caller is 0 */
  pool_self = (int)index;
  uint32_t seen = (uint32_t)a;                   /* the generation at its creation */
  for (;;) {
    uint32_t g;
    for (int spin = 0;; ++spin) {
      g = (uint32_t)(atomic_load_explicit(&pool_state, memory_order_acquire) >> 32);
      if (g != seen) break;
      if (spin < HELPER_SPIN) { POOL_PAUSE(); continue; }
      pthread_mutex_lock(&pool_mu);
      while ((uint32_t)(atomic_load_explicit(&pool_state, memory_order_acquire) >> 32) == seen)
        pthread_cond_wait(&pool_cv, &pool_mu);
      pthread_mutex_unlock(&pool_mu);
    }
    seen = g;
    if (index < atomic_load_explicit(&pool_width, memory_order_relaxed)) pool_work(g);
  }
  return NULL;
}

static void pool_after_fork(void) {               /* the child has no helpers */
  pthread_mutex_init(&pool_run, NULL);
  pthread_mutex_init(&pool_mu, NULL);
  pthread_cond_init(&pool_cv, NULL);
  pool_helpers = 0;
}

/* start helpers up to n (pool_run held); returns how many exist */
static int pool_start(int n) {
  if (n > POOL_MAX) n = POOL_MAX;
  pthread_mutex_lock(&pool_mu);
  if (!pool_atfork) pool_atfork = pthread_atfork(NULL, NULL, pool_after_fork) == 0;
  while (pool_helpers < n) {
    uint32_t gen = (uint32_t)(atomic_load(&pool_state) >> 32);
    uint64_t arg = ((uint64_t)(pool_helpers + 1) << 32) | gen;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
#ifdef __linux__
    /* the process's cores, not those of the thread that happens to start the pool (a
       pmap replica pins its own thread) */
    cpu_set_t cores;
    if (sched_getaffinity(getpid(), sizeof cores, &cores) == 0)
      pthread_attr_setaffinity_np(&at, sizeof cores, &cores);
#endif
    int err = pthread_create(&t, &at, pool_helper, (void *)(uintptr_t)arg);
    pthread_attr_destroy(&at);
    if (err) break;
    ++pool_helpers;
  }
  int have = pool_helpers;
  pthread_mutex_unlock(&pool_mu);
  return have;
}

/* fn(ctx, p) for every p < pieces, on this thread and up to width - 1 helpers */
static void pool_for(int width, int64_t pieces, pool_piece_fn fn, void *ctx) {
  if (width > 1 && pieces > 1 && pieces < ((int64_t)1 << 31) &&
      pthread_mutex_trylock(&pool_run) == 0) {
    if (pool_start(width - 1) > 0) {
      atomic_store_explicit(&pool_fn, fn, memory_order_relaxed);
      atomic_store_explicit(&pool_ctx, ctx, memory_order_relaxed);
      atomic_store_explicit(&pool_pieces, pieces, memory_order_relaxed);
      atomic_store_explicit(&pool_width, width, memory_order_relaxed);
      atomic_store_explicit(&pool_done, 0, memory_order_relaxed);
      pthread_mutex_lock(&pool_mu);
      uint32_t gen = (uint32_t)(atomic_load(&pool_state) >> 32) + 1;
      atomic_store_explicit(&pool_state, (uint64_t)gen << 32, memory_order_release);
      pthread_cond_broadcast(&pool_cv);
      pthread_mutex_unlock(&pool_mu);
      pool_work(gen);
      for (int spin = 0; atomic_load_explicit(&pool_done, memory_order_acquire) < pieces; ++spin) {
        if (spin < CALLER_SPIN) POOL_PAUSE(); else sched_yield();
      }
      pthread_mutex_unlock(&pool_run);
      return;
    }
    pthread_mutex_unlock(&pool_run);
  }
  for (int64_t p = 0; p < pieces; ++p) fn(ctx, p);
}
""".replace("HELPER_SPIN", str(HELPER_SPIN)).replace("CALLER_SPIN", str(CALLER_SPIN))
