"""Replica scaling of the W4 step (the JAX paper's Figure 2 on this machine).

The W4 All-CNN-C SGD step made data-parallel: each replica takes the gradient of its
share of the batch, the gradients are averaged with ``lax.pmean``, every replica
applies the same update. Measured configurations (one subprocess each, so
``PLAIT_CPU_DEVICES`` and ``XLA_FLAGS`` take effect at start):

- plait ``pmap`` over 1 and 2 CPU devices (``PLAIT_CPU_DEVICES``); one device either
  on one core (the process pinned to it: one replica as the JAX paper counts it) or
  on all cores,
- plait across 2 MPI processes of one core each (``mpirun -n 2 --bind-to core``),
- ``jax.pmap`` of the same step over 1 and 2 host devices
  (``XLA_FLAGS=--xla_force_host_platform_device_count=N``),

at a fixed per-replica batch and at a fixed global batch. The all-reduce of the
gradients (a ``pmap`` of ``psum`` over the parameter-shaped tree) is timed on its own.
Beside wall time: the process's CPU time per step and plait's per-replica CPU time
and collective waits (``plait.distributed.last_run_times``), which show the
mechanism on a loaded machine; the 2-device plait run also times replica 0 alone on
its device and lists the threads that used CPU, with their cores.

``python -m benchmarks.replicas [--batch 32] [--reps 5] [--jit]`` (WORKLOADS.md:
per-replica batch 32, global batch 64; ``--jit`` times plait's step as
``jit(pmap(step))``); prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

LR = 0.01


def _data(batch: int):
    from benchmarks import np_convnet as npc
    from benchmarks import w4_allcnn as w4
    sp = w4.spec()
    params = npc.init_params(sp, (batch, 32, 32, 3), seed=0, out_channels=w4.widths())
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 32, 32, 3)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return sp, params, x, y


class _Cpu:
    """Process CPU seconds per call of the last :func:`_median_time` (all threads)."""

    per_call = 0.0


def _median_time(fn, reps: int, after=None) -> float:
    """Median seconds of ``fn()`` over ``reps`` calls after two warm-up calls;
    ``after()`` runs after each timed call (to collect per-call records)."""
    fn()
    fn()
    ts = []
    c0 = time.process_time()
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        if after is not None:
            after()
    _Cpu.per_call = (time.process_time() - c0) / reps
    return statistics.median(ts)


def _thread_census() -> dict[int, tuple[int, str]]:
    """This process's threads: native id -> (CPU ticks so far, allowed cores)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{tid}/status") as f:
                cores = next(ln.split()[1] for ln in f if ln.startswith("Cpus_allowed_list"))
        except (OSError, StopIteration):
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12]), cores)   # utime + stime
    return out


def _busy_threads(before: dict, after: dict, replica_ids: dict[int, int]) -> list[str]:
    """Threads that used CPU between two censuses: who they are and their cores."""
    rows = []
    for tid, (ticks, cores) in sorted(after.items()):
        used = ticks - before.get(tid, (0, ""))[0]
        if used > 0:
            who = (f"replica {replica_ids[tid]}" if tid in replica_ids else
                   "main" if tid == os.getpid() else f"thread {tid}")
            rows.append(f"{who} on cores {cores}: {used} ticks")
    return rows


def _libgomp_copies() -> int:
    """How many distinct libgomp files are mapped (1: the kernels, the GEMM/conv library
    and plait's thread-count setting share one OpenMP runtime)."""
    with open("/proc/self/maps") as f:
        return len({ln.split()[-1] for ln in f if "libgomp" in ln})


def _thread_counters(tid: int) -> tuple[float, float, int]:
    """Thread ``tid``'s CPU seconds (user + system), system seconds and minor page
    faults so far (``/proc``: what ``time.thread_time`` cannot tell from another thread)."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return ((int(fields[11]) + int(fields[12])) / tick, int(fields[12]) / tick,
            int(fields[7]))


def _alone_vs_concurrent(both, alone, reps: int) -> dict:
    """Replica 0 alone on its device against the same replica running beside the
    others, as pairs (concurrent step, then alone step) so a load that drifts over the
    run hits both sides of each pair: per-replica CPU (``last_run_times``), the paired
    ratio concurrent/alone of replica 0, and the replica threads' system time and minor
    page faults per step (memory-allocation cost)."""
    from plait.distributed import last_run_times
    alone()
    both()
    tids = [t.native_id for t in last_run_times()]
    rec: dict = {"both": [], "alone": []}
    for _ in range(reps):
        for name, fn in (("both", both), ("alone", alone)):
            c0 = [_thread_counters(t) for t in tids]
            fn()
            c1 = [_thread_counters(t) for t in tids]
            rec[name].append(([t.cpu_s for t in last_run_times()],
                              [t.wall_s for t in last_run_times()],
                              [b[1] - a[1] for a, b in zip(c0, c1)],
                              [b[2] - a[2] for a, b in zip(c0, c1)]))
    med = statistics.median
    n = len(tids)
    ratios = [b[0][0] / a[0][0] for b, a in zip(rec["both"], rec["alone"])]
    return {"alone_cpu_s": med(r[0][0] for r in rec["alone"]),
            "alone_wall_s": med(r[1][0] for r in rec["alone"]),
            "concurrent_cpu_s": [med(r[0][k] for r in rec["both"]) for k in range(n)],
            "concurrent_wall_s": [med(r[1][k] for r in rec["both"]) for k in range(n)],
            "paired_cpu_ratio": [med(ratios), min(ratios), max(ratios)],
            "alone_sys_s": med(r[2][0] for r in rec["alone"]),
            "concurrent_sys_s": [med(r[2][k] for r in rec["both"]) for k in range(n)],
            "alone_minflt": med(r[3][0] for r in rec["alone"]),
            "concurrent_minflt": [med(r[3][k] for r in rec["both"]) for k in range(n)]}


def worker_plait(devices: int, per_replica: int, reps: int, mpi: bool,
                 mechanism: bool = False, jit: bool = False) -> dict:
    import plait
    from plait.distributed import last_run_times
    import plait.numpy as pnp
    from plait import lax, nn
    from plait.example_libraries import models
    from benchmarks import np_convnet as npc
    if mpi:
        plait.distributed.initialize()
    plait.config.cpu_devices = devices
    procs, rank = plait.process_count(), plait.process_index()
    total = devices * procs
    sp, params, x, y = _data(per_replica * total)
    _, apply_fun = models.AllCNNC()

    def loss(p, x, y):
        return -pnp.mean(pnp.sum(nn.log_softmax(apply_fun(p, x)) * y, axis=-1))

    def replica_step(p, x, y):
        g = lax.pmean(plait.grad(loss)(p, x, y), "i")
        return plait.tree_util.tree_map(lambda a, b: a - LR * b, p, g)

    sparams = npc.to_stax(sp, params)
    lo, hi = rank * devices * per_replica, (rank + 1) * devices * per_replica
    xs = x[lo:hi].reshape((devices, per_replica) + x.shape[1:])
    ys = y[lo:hi].reshape(devices, per_replica, -1)
    step = plait.pmap(replica_step, "i", in_axes=(None, 0, 0), out_axes=None)
    if jit:                     # as JAX programs write it: the replicas a host step
        step = plait.jit(step)
    runs: list = []
    step(sparams, xs, ys)                  # compile (on this thread) before the census
    census0 = _thread_census()
    step_s = _median_time(lambda: step(sparams, xs, ys), reps,
                          after=lambda: runs.append(last_run_times()))
    census1 = _thread_census()
    cpu_s = _Cpu.per_call
    replica_ids = {t.native_id: t.device.id for t in runs[-1]}
    med = lambda f: statistics.median(f(r) for r in runs)      # noqa: E731
    extra = {"cpu_s": cpu_s, "replica_cpu_s": med(lambda r: max(t.cpu_s for t in r)),
             "replica_wall_s": med(lambda r: max(t.wall_s for t in r)),
             "collective_wait_s": med(lambda r: max(t.collective_wait_s for t in r)),
             "threads_per_replica": [t.threads for t in runs[-1]],
             "cores_per_replica": [len(t.device.cores) for t in runs[-1]]}
    if mechanism:
        extra["busy_threads"] = _busy_threads(census0, census1, replica_ids)
        extra["libgomp_copies"] = _libgomp_copies()
        extra["load_average"] = os.getloadavg()
        extra["affinity"] = [sorted(os.sched_getaffinity(t.native_id)) for t in runs[-1]]
        if devices > 1:     # replica 0 alone on its device (same per-replica work)
            alone = plait.pmap(replica_step, "i", in_axes=(None, 0, 0), out_axes=None,
                               devices=plait.distributed.local_devices()[:1])
            extra.update(_alone_vs_concurrent(lambda: step(sparams, xs, ys),
                                              lambda: alone(sparams, xs[:1], ys[:1]), reps))
    grads_like = plait.tree_util.tree_map(
        lambda a: np.broadcast_to(np.asarray(a), (devices,) + np.shape(a)).copy(), sparams)
    allreduce = plait.pmap(lambda g: lax.psum(g, "i"), "i", out_axes=None)
    ar_s = _median_time(lambda: allreduce(grads_like), reps)
    return {"step_s": step_s, "allreduce_s": ar_s, "replicas": total,
            "per_replica": per_replica, "rank": rank, **extra}


def worker_jax(devices: int, per_replica: int, reps: int) -> dict:
    import jax
    import jax.numpy as jnp
    from benchmarks import np_convnet as npc
    assert jax.local_device_count() >= devices, jax.devices()
    sp, params, x, y = _data(per_replica * devices)

    def loss(p, x, y):
        logits = npc.jax_forward(jax, sp, p, x)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def replica_step(p, x, y):
        g = jax.lax.pmean(jax.grad(loss)(p, x, y), "i")
        return jax.tree_util.tree_map(lambda a, b: a - LR * b, p, g)

    step = jax.pmap(replica_step, "i", in_axes=(None, 0, 0), out_axes=None,
                    devices=jax.local_devices()[:devices])
    xs = x.reshape((devices, per_replica) + x.shape[1:])
    ys = y.reshape(devices, per_replica, -1)
    step_s = _median_time(lambda: jax.block_until_ready(step(params, xs, ys)), reps)
    cpu_s = _Cpu.per_call
    grads_like = jax.tree_util.tree_map(
        lambda a: np.broadcast_to(np.asarray(a), (devices,) + np.shape(a)).copy(), params)
    allreduce = jax.pmap(lambda g: jax.lax.psum(g, "i"), "i", out_axes=None,
                         devices=jax.local_devices()[:devices])
    ar_s = _median_time(lambda: jax.block_until_ready(allreduce(grads_like)), reps)
    return {"step_s": step_s, "allreduce_s": ar_s, "replicas": devices,
            "per_replica": per_replica, "rank": 0, "cpu_s": cpu_s}


def _launch(system: str, devices: int, per_replica: int, reps: int, mpi: bool = False,
            mechanism: bool = False, cores: int | None = None, jit: bool = False) -> dict:
    """One configuration in a subprocess; ``cores``: pin it to the first ``cores`` of
    this process's cores (a one-core device for plait, a one-core host for XLA)."""
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "benchmarks.replicas", "--worker", system,
           "--devices", str(devices), "--per-replica", str(per_replica), "--reps", str(reps)]
    if mechanism:
        cmd.append("--mechanism")
    if jit:
        cmd.append("--jit")
    if system == "jax":
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    if mpi:
        mpirun = (shutil.which("mpirun", path=os.path.dirname(sys.executable))
                  or shutil.which("mpirun"))
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [mpirun, "-n", "2", "--bind-to", "core", *cmd, "--mpi"]
    mine = sorted(os.sched_getaffinity(0))
    pin = (lambda: os.sched_setaffinity(0, mine[:cores])) if cores else None
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800,
                       preexec_fn=pin)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    rows = [json.loads(ln) for ln in lines]
    slowest = dict(max(rows, key=lambda r: r["step_s"]))     # it sets the pace
    slowest["cpu_s"] = sum(r["cpu_s"] for r in rows)          # every process's CPU
    return slowest


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32, help="per-replica batch (fixed) and "
                    "half the fixed global batch")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--worker", choices=["plait", "jax"])
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--per-replica", type=int, default=16)
    ap.add_argument("--mpi", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--mechanism", action="store_true",
                    help="worker: also time replica 0 alone and list the busy threads")
    ap.add_argument("--jit", action="store_true",
                    help="time plait's pmapped step under plait.jit (jit(pmap(step)))")
    args = ap.parse_args(argv)
    if args.worker == "plait":
        print(json.dumps(worker_plait(args.devices, args.per_replica, args.reps, args.mpi,
                                      args.mechanism, args.jit)))
        return
    if args.worker == "jax":
        print(json.dumps(worker_jax(args.devices, args.per_replica, args.reps)))
        return
    b = args.batch
    ncores = len(os.sched_getaffinity(0))
    # (system, label, devices, per-replica batch, MPI, cores the process may use)
    runs = [("plait pmap", "1 device x 1 core", 1, 2 * b, False, 1),
            ("plait pmap", "1 device x 1 core", 1, b, False, 1),
            ("plait pmap", f"1 device x {ncores} cores", 1, 2 * b, False, None),
            ("plait pmap", f"1 device x {ncores} cores", 1, b, False, None),
            ("plait pmap", "2 devices x 1 core", 2, b, False, None),
            ("plait MPI", "2 processes x 1 core", 1, b, True, None)]
    if not args.no_jax:
        runs += [("jax.pmap", "1 device x 1 core", 1, 2 * b, False, 1),
                 ("jax.pmap", "1 device x 1 core", 1, b, False, 1),
                 ("jax.pmap", f"1 device x {ncores} cores", 1, 2 * b, False, None),
                 ("jax.pmap", f"1 device x {ncores} cores", 1, b, False, None),
                 ("jax.pmap", "2 devices", 2, b, False, None)]
    print(f"W4 All-CNN-C SGD step, data-parallel (pmean of gradients)"
          f"{'; plait steps under plait.jit' if args.jit else ''}; median of "
          f"{args.reps}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| system | devices | per-replica batch | global batch | step ms | images/s "
          "| CPU ms/step (process) | replica CPU ms | collective wait ms | all-reduce ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    results: dict = {}
    for system, label, dev, per, mpi, cores in runs:
        r = _launch("jax" if system == "jax.pmap" else "plait", dev, per, args.reps, mpi,
                    mechanism=system == "plait pmap" and dev > 1, cores=cores,
                jit=args.jit and system != "jax.pmap")
        glob = r["replicas"] * r["per_replica"]
        results[(system, r["replicas"], glob, cores)] = r
        rep = lambda k: f"{1e3 * r[k]:.1f}" if k in r else "-"     # noqa: E731
        print(f"| {system} | {label} | {r['per_replica']} | {glob} | "
              f"{1e3 * r['step_s']:.1f} | {glob / r['step_s']:.0f} | {rep('cpu_s')} | "
              f"{rep('replica_cpu_s')} | {rep('collective_wait_s')} | "
              f"{1e3 * r['allreduce_s']:.2f} |", flush=True)
    print()
    for system in ("plait pmap", "plait MPI", "jax.pmap"):
        base = "jax.pmap" if system == "jax.pmap" else "plait pmap"
        two = results.get((system, 2, 2 * b, None))
        for cores, what in ((1, "one replica on 1 core"), (None, f"1 device on {ncores} cores")):
            one_b = results.get((base, 1, b, cores))
            one_2b = results.get((base, 1, 2 * b, cores))
            if two and one_b and one_2b:
                print(f"{system}, 2 replicas vs {what}: throughput "
                      f"x{one_b['step_s'] * 2 / two['step_s']:.2f} (fixed per-replica batch "
                      f"{b}), x{one_2b['step_s'] / two['step_s']:.2f} (fixed global batch "
                      f"{2 * b}); CPU per image x{two['cpu_s'] / (2 * one_b['cpu_s']):.2f}")
    mech = results.get(("plait pmap", 2, 2 * b, None))
    if mech and "alone_cpu_s" in mech:
        ms = lambda v: [round(1e3 * c, 1) for c in v]     # noqa: E731
        lo_hi = mech["paired_cpu_ratio"]
        print(f"\nplait pmap, 2 devices, {args.reps} interleaved pairs (concurrent step, "
              f"replica 0 alone): replica 0 alone {1e3 * mech['alone_cpu_s']:.1f} ms CPU / "
              f"{1e3 * mech['alone_wall_s']:.1f} ms wall; concurrently, replicas "
              f"{ms(mech['concurrent_cpu_s'])} ms CPU / {ms(mech['concurrent_wall_s'])} ms "
              f"wall; replica 0 CPU concurrent/alone x{lo_hi[0]:.3f} (pairs "
              f"{lo_hi[1]:.3f}..{lo_hi[2]:.3f}); system CPU per step alone "
              f"{1e3 * mech['alone_sys_s']:.0f} ms, concurrent {ms(mech['concurrent_sys_s'])} "
              f"ms; minor page faults per step alone {mech['alone_minflt']:.0f}, concurrent "
              f"{mech['concurrent_minflt']}")
        print(f"replica threads' cores {mech['affinity']}; OpenMP threads per replica "
              f"{mech['threads_per_replica']} for cores per device "
              f"{mech['cores_per_replica']}; libgomp copies loaded: "
              f"{mech['libgomp_copies']}; load average {mech['load_average']}")
        print("threads that used CPU during the timed steps: " + "; ".join(mech["busy_threads"]))

if __name__ == "__main__":
    main()
