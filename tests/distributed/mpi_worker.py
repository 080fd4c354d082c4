"""Run by tests/distributed/test_mpi.py under ``mpirun -n 2`` (not a test module).

``python mpi_worker.py MODE``: ``collectives`` checks every collective of a pmap over
both processes' devices against its NumPy definition on the global data, and a data-
parallel training step (eager and under jit) against the single-process step on the
global batch; ``mismatch`` runs different programs on the two processes; ``dead`` has
process 1 exit before the first collective (process 0 reports it by rank); ``stall``
has process 1 sleep instead (process 0 times out with an error). Prints
``RESULT <rank> OK`` on success.
"""
from __future__ import annotations

import os
import sys

import numpy as np

import plait
from plait import lax
from plait.distributed import pmap


def check_collectives(rank: int, P: int, L: int) -> None:
    G = P * L
    rng = np.random.default_rng(0)
    X = rng.uniform(0.5, 1.5, (G, G, 3))        # global data, replica g holds X[g]
    mine = X[rank * L:(rank + 1) * L]

    def f(x):
        return (lax.psum(x, "i"), lax.pmax(x, "i"), lax.pmean(x * x, "i"),
                lax.all_gather(x, "i"), lax.psum_scatter(x, "i"),
                lax.all_to_all(x, "i", 0, 1),
                lax.ppermute(x, "i", [(g, (g + 1) % G) for g in range(G)]),
                x * lax.axis_index("i"))
    outs = pmap(f, "i")(mine)
    want = (np.broadcast_to(X.sum(0), X.shape), np.broadcast_to(X.max(0), X.shape),
            np.broadcast_to((X * X).mean(0), X.shape), np.broadcast_to(X, (G,) + X.shape),
            X.sum(0), np.transpose(X, (1, 2, 0)), np.roll(X, 1, axis=0),
            X * np.arange(G)[:, None, None])
    for k, (o, w) in enumerate(zip(outs, want)):
        np.testing.assert_allclose(np.asarray(o), w[rank * L:(rank + 1) * L], rtol=1e-12,
                                   err_msg=f"output {k}")


class _Counting:
    """The world's communicator, recording each call and its first buffer's bytes."""

    def __init__(self, comm):
        self.comm, self.sent = comm, []

    def __getattr__(self, name):
        fn = getattr(self.comm, name)

        def call(*args, **kw):
            self.sent.append((name, args[0].nbytes if hasattr(args[0], "nbytes") else 0))
            return fn(*args, **kw)
        return call


def check_only_needed_data_moves(rank: int, P: int, L: int) -> None:
    """ppermute sends each block once, to its destination's process only; all_to_all
    sends each process's blocks for the other processes in one Alltoall."""
    from plait.distributed import runtime
    G = P * L
    world = runtime.world()
    x = np.arange(L * G * 4, dtype=np.float64).reshape(L, G, 4) + 100 * rank
    f = pmap(lambda v: (lax.ppermute(v, "i", [(0, G - 1)]), lax.all_to_all(v, "i", 0, 0)),
             "i")
    f(x)                                     # the program fingerprint is checked once
    counting = world.comm = _Counting(world.comm)
    try:
        perm, a2a = f(x)
    finally:
        world.comm = counting.comm
    block = x[0].nbytes
    want = ([("Isend", block)] if rank == 0 else [("Irecv", block)] if rank == P - 1 else [])
    want += [("Ialltoall", L * G * 4 * 8)]
    assert counting.sent == want, (counting.sent, want)
    if rank == P - 1:                       # global replica G-1 got replica 0's block
        np.testing.assert_array_equal(np.asarray(perm)[L - 1], np.arange(G * 4.0).reshape(G, 4))


def check_training_step(rank: int, P: int, L: int) -> None:
    import plait.numpy as pnp
    G = P * L
    rng = np.random.default_rng(1)
    W = rng.normal(size=(5, 3))
    xs, ys = rng.normal(size=(G * 4, 5)), rng.normal(size=(G * 4, 3))

    def loss(w, x, y):
        return pnp.mean((pnp.tanh(x @ w) - y) ** 2)

    def step(w, x, y):
        g = plait.grad(loss)(w, x, y)
        return w - 0.1 * lax.pmean(g, "i")
    shard = lambda a: a.reshape(G, 4, -1)[rank * L:(rank + 1) * L]   # noqa: E731
    got = pmap(step, "i", in_axes=(None, 0, 0))(W, shard(xs), shard(ys))
    want = W - 0.1 * np.asarray(plait.grad(loss)(W, xs, ys))
    for k in range(L):
        np.testing.assert_allclose(np.asarray(got[k]), want, rtol=1e-10, atol=1e-12)
    # the same step under jit (its replicas are a host step exchanging over MPI)
    got = plait.jit(pmap(step, "i", in_axes=(None, 0, 0)))(W, shard(xs), shard(ys))
    for k in range(L):
        np.testing.assert_allclose(np.asarray(got[k]), want, rtol=1e-10, atol=1e-12)
    # grad of the pmap itself (the replicas' backward pass runs across both processes)
    total = lambda w: pmap(lambda w, x, y: lax.psum(loss(w, x, y), "i"), "i",   # noqa: E731
                           in_axes=(None, 0, 0), out_axes=None)(w, shard(xs), shard(ys))
    # SPMD: every process seeds its own (equal) output's cotangent, and the transposed
    # psum adds them, so each process gets the gradient of the sum of the P outputs
    # with respect to its own copy of W: P times its local replicas' gradients
    got = plait.grad(total)(W)
    mine = P * sum(np.asarray(plait.grad(loss)(W, xs[g * 4:(g + 1) * 4], ys[g * 4:(g + 1) * 4]))
               for g in range(rank * L, (rank + 1) * L))
    np.testing.assert_allclose(np.asarray(got), mine, rtol=1e-10, atol=1e-12)


def main(mode: str) -> None:
    plait.distributed.initialize()
    rank, P = plait.process_index(), plait.process_count()
    L = plait.local_device_count()
    assert P == 2, P
    assert len(plait.distributed.devices()) == P * L
    if mode == "collectives":
        check_collectives(rank, P, L)
        check_only_needed_data_moves(rank, P, L)
        check_training_step(rank, P, L)
    elif mode == "mismatch":
        x = np.ones((L, 3))
        f = (lambda v: lax.psum(v, "i")) if rank == 0 else (lambda v: lax.psum(v * 2, "i"))
        try:
            pmap(f, "i")(x)
        except plait.errors.DistributedError as e:
            print(f"RESULT {rank} MISMATCH {e}", flush=True)
            return
    elif mode == "dead":           # process 1 exits after joining (mpirun --enable-recovery)
        if rank == 1:
            os._exit(0)
        try:
            pmap(lambda v: lax.psum(v, "i"), "i")(np.ones((L, 3)))
        except plait.errors.DistributedError as e:
            print(f"RESULT {rank} DEAD {e}", flush=True)
            return
    elif mode == "stall":          # process 1 lives on but never reaches the collective
        if rank == 1:
            import time
            time.sleep(60)
        try:
            pmap(lambda v: lax.psum(v, "i"), "i")(np.ones((L, 3)))
        except plait.errors.DistributedError as e:
            print(f"RESULT {rank} TIMEOUT {e}", flush=True)
            return
    print(f"RESULT {rank} OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
