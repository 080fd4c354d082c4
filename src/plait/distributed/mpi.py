"""Collectives across processes with MPI (mpi4py's buffer API: contiguous NumPy
buffers in place, never pickled).

After :func:`initialize` a pmap spans the devices of every process. A collective
runs in two levels: the replicas of a process combine through shared memory
(:mod:`.local`), replica 0 of each process runs the MPI collective on the combined
buffer, and the result is shared back to the local replicas.

``ppermute`` and ``all_to_all`` move only what each peer needs: ``ppermute`` sends
each block point to point from its source's process to its destination's,
``all_to_all`` is one ``Alltoall`` of the blocks each process owes each other.

Safety: every MPI call is non-blocking and polled against ``config.collective_timeout``,
so a process that died or took another path makes the others raise
:class:`DistributedError` instead of hanging (a world broken this way ends the process
with exit status 1 at exit, since MPI cannot finalize with a pending request). While
waiting, a process also looks every quarter second for peers on its host that exited,
and names them at once. Open MPI's ``mpirun`` kills the whole job when a process exits
early unless started with ``--enable-recovery``; with it, the survivors report plait's
error naming the dead process. The first time a process runs a replica program, the
processes compare a fingerprint of it: different programs are an error that names the
processes, raised before any data is exchanged.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import socket
import sys
import time

import numpy as np

from plait.config import config
from plait.errors import DistributedError
from plait.distributed import runtime

_INSTALL = ('MPI is not available: {err}. Install the optional extra with '
            '`pip install "plait[mpi]"` (mpi4py and the Open MPI wheel, which puts '
            '`mpirun` next to python), or mpi4py built against the system MPI.')


_PEER_CHECK_S = 0.25     # how often a waiting process looks for dead peers on its host


def _alive(pid: int) -> bool:
    """Whether process ``pid`` (on this host) runs: not gone, not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:              # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except OSError:          # EPERM: it exists, owned by another user
            return True


class _All:
    """Several MPI requests polled as one (``Test`` is true once all completed)."""

    def __init__(self, reqs: list, MPI):
        self.reqs, self.MPI = reqs, MPI

    def Test(self) -> bool:
        return self.MPI.Request.Testall(self.reqs)


def _mpi():
    try:
        from mpi4py import MPI
    except Exception as e:         # ImportError, or mpi4py without a loadable libmpi
        raise DistributedError(_INSTALL.format(err=f"{type(e).__name__}: {e}")) from None
    return MPI


class World:
    """The processes of the MPI job (``COMM_WORLD`` duplicated for plait's own use)."""

    def __init__(self, comm, timeout: float | None):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._timeout = timeout
        self.verified: set[int] = set()
        self.broken = False
        self.waited_s = 0.0       # seconds spent in MPI waits (read by GlobalComm)
        self.peers: dict[int, int] = {}   # rank -> pid of the processes on this host

    @property
    def timeout(self) -> float:
        return float(self._timeout if self._timeout is not None
                     else config.collective_timeout)

    def learn_peers(self) -> None:
        """Exchange process ids and hosts once, so a wait can tell a process that exited
        (on this host) from one that is slow."""
        host = int.from_bytes(hashlib.sha256(socket.gethostname().encode()).digest()[:8],
                              "little", signed=True)
        got = self.allgather(np.array([os.getpid(), host], np.int64), "initialize")
        self.peers = {p: int(pid) for p, (pid, h) in enumerate(got.tolist())
                      if h == host and p != self.rank}

    def _dead_peers(self) -> list[str]:
        return [f"{p} (pid {pid})" for p, pid in sorted(self.peers.items())
                if not _alive(pid)]

    def _wait(self, req, what: str) -> None:
        start = time.monotonic()
        deadline = start + self.timeout
        pause = 1e-6
        next_check = start + _PEER_CHECK_S
        while not req.Test():
            now = time.monotonic()
            if now > next_check:
                next_check = now + _PEER_CHECK_S
                dead = self._dead_peers()
                if dead:
                    self.broken = True
                    raise DistributedError(
                        f"process {self.rank} of {self.size}: process {', '.join(dead)} "
                        f"exited before reaching the {what}; the job cannot continue (the "
                        f"dead process's own output says why)")
            if now > deadline:
                self.broken = True
                dead = self._dead_peers()
                others = [p for p in range(self.size) if p != self.rank]
                detail = (f"process {', '.join(dead)} exited" if dead else
                          f"waited for process{'es' if len(others) > 1 else ''} {others}")
                raise DistributedError(
                    f"process {self.rank} of {self.size}: the other processes did not reach "
                    f"the {what} within {self.timeout:g} s ({detail}): a process died, or "
                    f"runs a different program or branch; config.collective_timeout sets "
                    f"the wait")
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)
        self.waited_s += time.monotonic() - start

    def allreduce(self, buf: np.ndarray, op: str) -> np.ndarray:
        MPI = _mpi()
        buf = np.asarray(buf, order="C")
        mop = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
        self._wait(self.comm.Iallreduce(MPI.IN_PLACE, buf, op=mop), f"p{op}")
        return buf

    def allgather(self, buf: np.ndarray, what: str = "all_gather") -> np.ndarray:
        buf = np.asarray(buf, order="C")
        out = np.empty((self.size,) + buf.shape, buf.dtype)
        self._wait(self.comm.Iallgather(buf, out), what)
        return out

    def permute(self, slots: list, perm) -> list:
        """This process's replicas' results of the global ``perm``: ``slots[l]`` is local
        replica ``l``'s buffer. Blocks between replicas of this process are copied;
        the others go by ``Isend``/``Irecv`` (tagged by destination) straight from the
        source buffer into the destination's result."""
        L = len(slots)
        out: list = [None] * L
        reqs = []
        for src, dst in perm:
            (sp, sl), (dp, dl) = divmod(src, L), divmod(dst, L)
            if sp == self.rank and dp == self.rank:
                out[dl] = np.array(slots[sl])
            elif sp == self.rank:
                reqs.append(self.comm.Isend(slots[sl], dest=dp, tag=dst))
            elif dp == self.rank:
                out[dl] = np.empty_like(slots[0])
                reqs.append(self.comm.Irecv(out[dl], source=sp, tag=dst))
        if reqs:
            self._wait(_All(reqs, _mpi()), "ppermute")
        return [np.zeros_like(slots[0]) if o is None else o for o in out]

    def all_to_all(self, slots: list, split_axis: int) -> list:
        """This process's replicas' ``all_to_all`` results (stacked by global source):
        one ``Ialltoall`` of ``(process, local source, local destination, ...)`` blocks."""
        L, P = len(slots), self.size
        blocks = [np.moveaxis(s, split_axis, 0) for s in slots]       # views
        rest = blocks[0].shape[1:]
        send = np.empty((P, L, L) + rest, slots[0].dtype)
        for ls, b in enumerate(blocks):
            send[:, ls] = b.reshape((P, L) + rest)
        recv = np.empty_like(send)
        self._wait(self.comm.Ialltoall(send, recv), "all_to_all")
        return [np.asarray(recv[:, :, ld].reshape((P * L,) + rest), order="C")
                for ld in range(L)]

    def verify(self, fingerprint: int, what: str) -> None:
        """Raise unless every process runs the replica program ``fingerprint`` (checked
        at its first collective, ``what``)."""
        if fingerprint in self.verified:
            return
        got = self.allgather(np.array([fingerprint], np.int64), what)[:, 0]
        if np.any(got != fingerprint):
            groups: dict[int, list[int]] = {}
            for p, f in enumerate(got.tolist()):
                groups.setdefault(f, []).append(p)
            raise DistributedError(
                f"process {self.rank}: the processes run different pmap programs at this "
                f"collective (processes grouped by program: {sorted(groups.values())}); "
                f"every process must call the same pmapped functions with the same shapes "
                f"in the same order")
        self.verified.add(fingerprint)

    def replica_comm(self, local, fingerprint: int) -> "GlobalComm":
        return GlobalComm(local, self, fingerprint)


class GlobalComm:
    """A replica's communicator over all processes' replicas (global index)."""

    def __init__(self, local, world: World, fingerprint: int):
        self.local = local
        self.world = world
        self.fingerprint = fingerprint
        self.index = world.rank * local.size + local.index
        self.size = world.size * local.size
        self.mpi_wait_s = 0.0     # this replica's seconds in MPI waits

    def _timed(self, op, value):
        before = self.world.waited_s
        try:
            return op(value)
        finally:
            self.mpi_wait_s += self.world.waited_s - before

    def _across(self, value: np.ndarray, op, what: str) -> np.ndarray:
        """``op(value)`` run by local replica 0 with MPI; the result on every replica."""
        if self.local.size == 1:
            self.world.verify(self.fingerprint, what)
            return self._timed(op, value)
        if self.local.index == 0:
            try:
                self.world.verify(self.fingerprint, what)
                value = self._timed(op, value)
            except BaseException:
                self.local.group.abort()
                raise
        return self.local.broadcast(value if self.local.index == 0 else None, root=0)

    def allreduce(self, x: np.ndarray, op: str) -> np.ndarray:
        part = self.local.allreduce(x, op) if self.local.size > 1 else np.array(x, copy=True)
        return self._across(part, lambda b: self.world.allreduce(b, op), f"p{op}")

    def all_gather(self, x: np.ndarray) -> np.ndarray:
        part = (self.local.all_gather(x) if self.local.size > 1
                else np.asarray(x, order="C")[None])
        out = self._across(part, self.world.allgather, "all_gather")   # (P, L, ...)
        return out.reshape((self.size,) + np.shape(x))


    def ppermute(self, x: np.ndarray, perm: tuple[tuple[int, int], ...]) -> np.ndarray:
        """``ppermute`` over global replica indices: a block crosses processes only from
        its source's process to its destination's, point to point."""
        return self._led(x, lambda slots: self.world.permute(slots, perm), "ppermute")

    def all_to_all(self, x: np.ndarray, split_axis: int) -> np.ndarray:
        """Block ``index`` of ``split_axis`` from every global replica, stacked by source;
        one ``Alltoall`` moves each process's blocks to the process that needs them."""
        return self._led(x, lambda slots: self.world.all_to_all(slots, split_axis),
                         "all_to_all")

    def _led(self, x: np.ndarray, lead, what: str) -> np.ndarray:
        def run(slots):
            self.world.verify(self.fingerprint, what)
            return self._timed(lead, slots)
        if self.local.size == 1:
            return run([np.asarray(x, order="C")])[0]
        return self.local.led(x, run, what)


def _exit_if_broken() -> None:
    w = runtime.world()
    if w is not None and w.broken:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)      # MPI_Finalize would wait for the request the dead peer never ends


def initialize(timeout: float | None = None) -> None:
    """Join the MPI job; a job of one process leaves plait single-process."""
    if runtime.world() is not None:
        return
    MPI = _mpi()
    try:
        if not MPI.Is_initialized():
            MPI.Init_thread(MPI.THREAD_MULTIPLE)
        level = MPI.Query_thread()
        comm = MPI.COMM_WORLD.Dup()
    except Exception as e:
        raise DistributedError(_INSTALL.format(err=f"{type(e).__name__}: {e}")) from None
    if comm.Get_size() == 1:
        return
    if level < MPI.THREAD_SERIALIZED:
        raise DistributedError(
            f"this MPI library provides thread level {level}; plait's replica threads need "
            f"MPI_THREAD_SERIALIZED or better (use an MPI built with thread support)")
    world = World(comm, timeout)
    world.learn_peers()
    runtime.set_world(world)
    atexit.register(_exit_if_broken)


def shutdown() -> None:
    """Leave the job: later pmaps run within this process only."""
    runtime.set_world(None)
