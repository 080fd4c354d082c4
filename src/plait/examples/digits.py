"""Train a small CNN on scikit-learn's handwritten digits: ``python -m plait.examples.digits``.

The 1797 8x8 images ship inside scikit-learn (``pip install plait[examples]``).
A ``plait.example_libraries.stax`` CNN (conv 16 - pool - conv 32 - pool - dense 64 -
dense 10, NHWC) is trained with Adam by a ``plait.jit``-compiled update step.
Prints a progress bar (stderr, on a terminal), the test accuracy, the compile time of
the step and its speed jitted versus eager (op by op), and writes two pictures into
``--out`` (default ``digits-out``): the training curve and a grid of misclassified test
digits (with matplotlib; without it, a note says how to get them).

``--replicas N`` trains data-parallel instead: ``plait.pmap`` over N CPU devices
(groups of cores), each replica taking its share of the global batch, gradients
averaged with ``plait.lax.pmean``. Under ``mpirun -n P`` the processes join one job
(``plait.distributed.initialize()``) and the replicas of all of them share each
global batch. Either way the parameters follow the single-device run on the global
batch (to float tolerance).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import plait
import plait.numpy as pnp
from plait import nn, random
from plait.example_libraries import optimizers, stax
from plait.errors import PlaitError


def load_data(seed: int = 0, n_test: int = 360):
    """``(x_train, y_train, x_test, y_test)``: images scaled to [0, 1], NHWC float32."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise PlaitError("this example needs scikit-learn for its data set: pip install "
                         "scikit-learn (or pip install 'plait[examples]')", locate=False) from None
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    y = d.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    return x[n_test:], y[n_test:], x[:n_test], y[:n_test]


def make_model() -> stax.Layer:
    """The CNN: two conv + max-pool stages, then two dense layers (logits out)."""
    return stax.serial(
        stax.Conv(16, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2)),
        stax.Conv(32, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2)),
        stax.Flatten, stax.Dense(64), stax.Relu, stax.Dense(10))


def _loss_fn(apply_fun):
    def loss_fn(p, x, y):
        logp = nn.log_softmax(apply_fun(p, x))
        return -pnp.mean(pnp.sum(logp * nn.one_hot(y, 10), axis=-1))
    return loss_fn


def make_updates(apply_fun, opt, axis_name: str = "batch"):
    """``(update, replica_update)``: one Adam step on a batch, and the same step for one
    replica of a ``pmap`` over ``axis_name`` (loss and gradients averaged over replicas)."""
    loss_fn = _loss_fn(apply_fun)

    def update(i, state, x, y):
        loss, g = plait.value_and_grad(loss_fn)(opt.get_params(state), x, y)
        return loss, opt.update_fun(i, g, state)

    def replica_update(i, state, x, y):
        loss, g = plait.value_and_grad(loss_fn)(opt.get_params(state), x, y)
        loss, g = plait.lax.pmean((loss, g), axis_name)
        return loss, opt.update_fun(i, g, state)
    return update, replica_update


def _progress(i: int, total: int, loss: float, width: int = 30) -> None:
    done = int(width * i / total)
    sys.stderr.write(f"\r  [{'#' * done}{'.' * (width - done)}] step {i}/{total}  "
                     f"loss {loss:.4f}")
    if i == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def train(steps: int = 300, batch: int = 64, lr: float = 3e-3, seed: int = 0,
          backend: str | None = None, eager_steps: int = 3, progress: bool = True) -> dict:
    """Train and evaluate; returns accuracy, timings and speeds in a dict."""
    return _train(steps, batch, lr, seed, backend, eager_steps, progress)


def _train(steps, batch, lr, seed, backend, eager_steps, progress) -> dict:
    x_tr, y_tr, x_te, y_te = load_data(seed)
    init_fun, apply_fun = make_model()
    _, params = init_fun(random.key(seed), (batch,) + x_tr.shape[1:])
    opt = optimizers.adam(lr)
    update, _ = make_updates(apply_fun, opt)
    step = plait.jit(update, backend=backend)
    predict = plait.jit(lambda p, x: pnp.argmax(apply_fun(p, x), axis=-1), backend=backend)
    rng = np.random.default_rng(seed)
    n_batches = len(y_tr) // batch

    def batches():
        while True:
            order = rng.permutation(len(y_tr))
            for b in range(n_batches):
                idx = order[b * batch:(b + 1) * batch]
                yield x_tr[idx], y_tr[idx]

    data = batches()
    state = opt.init_fun(params)
    x0, y0 = next(data)
    t0 = time.perf_counter()
    loss, state = step(0, state, x0, y0)
    float(loss)
    compile_s = time.perf_counter() - t0
    curve = [(1, float(loss))]
    t0 = time.perf_counter()
    for i in range(1, steps):
        x, y = next(data)
        loss, state = step(i, state, x, y)
        if i % 10 == 0 or i == steps - 1:
            curve.append((i + 1, float(loss)))
            if progress:
                _progress(i + 1, steps, curve[-1][1])
    float(loss)
    jit_s = (time.perf_counter() - t0) / max(steps - 1, 1)

    t0 = time.perf_counter()
    eager_state = state
    for i in range(eager_steps):
        x, y = next(data)
        _, eager_state = update(steps + i, eager_state, x, y)
    plait.tree_util.tree_map(np.asarray, eager_state)
    eager_s = (time.perf_counter() - t0) / max(eager_steps, 1)

    final = opt.get_params(state)
    pred = np.asarray(predict(final, x_te))
    wrong = np.flatnonzero(pred != y_te)
    return {"accuracy": float(np.mean(pred == y_te)), "compile_s": compile_s,
            "curve": curve, "misclassified": (x_te[wrong, ..., 0], y_te[wrong], pred[wrong]),
            "jit_steps_per_s": 1.0 / jit_s, "eager_steps_per_s": 1.0 / eager_s,
            "final_loss": float(loss), "steps": steps,
            "backend": backend or plait.config.resolved_backend()}


def train_replicas(replicas: int, steps: int = 300, batch: int = 64, lr: float = 3e-3,
                   seed: int = 0, progress: bool = True) -> dict:
    """Data-parallel training over ``replicas`` local devices (per process); ``batch``
    is the global batch, split evenly over every process's replicas."""
    procs, rank = plait.process_count(), plait.process_index()
    total = replicas * procs
    if batch % total:
        raise PlaitError(f"the global batch {batch} does not split over {total} replicas",
                         locate=False)
    per = batch // total
    x_tr, y_tr, x_te, y_te = load_data(seed)
    init_fun, apply_fun = make_model()
    _, params = init_fun(random.key(seed), (batch,) + x_tr.shape[1:])
    opt = optimizers.adam(lr)
    _, replica_update = make_updates(apply_fun, opt)
    step = plait.pmap(replica_update, "batch", in_axes=(None, None, 0, 0), out_axes=None)
    rng = np.random.default_rng(seed)
    n_batches = len(y_tr) // batch
    lo, hi = rank * replicas * per, (rank + 1) * replicas * per   # this process's share

    def shard(a):
        return a[lo:hi].reshape((replicas, per) + a.shape[1:])

    state = opt.init_fun(params)
    t0 = time.perf_counter()
    for i in range(steps):
        if i % n_batches == 0:
            order = rng.permutation(len(y_tr))
        idx = order[(i % n_batches) * batch:(i % n_batches + 1) * batch]
        loss, state = step(i, state, shard(x_tr[idx]), shard(y_tr[idx]))
        if i == 0:
            compile_s = time.perf_counter() - t0
            t1 = time.perf_counter()
        if progress and rank == 0 and (i % 10 == 0 or i == steps - 1):
            _progress(i + 1, steps, float(loss))
    per_step = (time.perf_counter() - t1) / max(steps - 1, 1)
    final = opt.get_params(state)
    predict = plait.jit(lambda p, x: pnp.argmax(apply_fun(p, x), axis=-1))
    pred = np.asarray(predict(final, x_te))
    return {"accuracy": float(np.mean(pred == y_te)), "compile_s": compile_s,
            "steps_per_s": 1.0 / per_step, "final_loss": float(loss), "steps": steps,
            "replicas": total, "processes": procs, "params": final}


def main_replicas(args) -> dict:
    if plait.distributed.launched_by_mpirun():
        plait.distributed.initialize()
    plait.config.cpu_devices = args.replicas
    t0 = time.perf_counter()
    r = train_replicas(args.replicas, args.steps, args.batch, args.lr, args.seed,
                       progress=not args.quiet)
    if plait.process_index() == 0:
        print(f"digits CNN, {r['steps']} data-parallel Adam steps of global batch "
              f"{args.batch} over {r['replicas']} replicas ({r['processes']} process(es))")
        print(f"  test accuracy      {100 * r['accuracy']:.1f}%")
        print(f"  compile (1st step) {r['compile_s']:.2f} s")
        print(f"  pmap               {r['steps_per_s']:.1f} steps/s")
        print(f"  total              {time.perf_counter() - t0:.1f} s")
    return r


def write_pictures(r: dict, out_dir: str) -> list[str]:
    """Write ``training_curve.png`` and ``misclassified.png`` of a :func:`train` result
    into ``out_dir``; returns the paths (none, after printing a note, without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (pictures: pip install matplotlib to get the training curve and the "
              "misclassified digits as PNG files)")
        return []
    import os
    os.makedirs(out_dir, exist_ok=True)
    steps, losses = zip(*r["curve"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, losses)
    ax.set(xlabel="step", ylabel="training loss (batch)", yscale="log",
           title=f"digits CNN: test accuracy {100 * r['accuracy']:.1f}%")
    curve = os.path.join(out_dir, "training_curve.png")
    fig.tight_layout()
    fig.savefig(curve, dpi=100)
    plt.close(fig)
    images, truth, pred = r["misclassified"]
    n = min(len(truth), 25)
    cols = 5
    rows = max((n + cols - 1) // cols, 1)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 1.3, rows * 1.5), squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < n:
            ax.imshow(images[k], cmap="gray_r")
            ax.set_title(f"{truth[k]} as {pred[k]}", fontsize=9)
    fig.suptitle(f"{len(truth)} misclassified test digits (true as predicted)", fontsize=10)
    grid = os.path.join(out_dir, "misclassified.png")
    fig.tight_layout()
    fig.savefig(grid, dpi=100)
    plt.close(fig)
    return [curve, grid]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=["native", "interp"], default=None,
                    help="jit backend (default: plait.config, native when a C compiler exists)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--replicas", type=int, default=0,
                    help="data-parallel over this many CPU devices per process (pmap)")
    ap.add_argument("--out", default="digits-out",
                    help="folder for the training curve and misclassified digits pictures")
    args = ap.parse_args(argv)
    if args.replicas:
        return main_replicas(args)
    t0 = time.perf_counter()
    r = train(args.steps, args.batch, args.lr, args.seed, args.backend, progress=not args.quiet)
    print(f"digits CNN, {r['steps']} Adam steps of batch {args.batch} "
          f"(backend {r['backend']})")
    print(f"  test accuracy      {100 * r['accuracy']:.1f}%")
    print(f"  compile (1st step) {r['compile_s']:.2f} s")
    print(f"  jit                {r['jit_steps_per_s']:.1f} steps/s")
    print(f"  eager (op by op)   {r['eager_steps_per_s']:.1f} steps/s  "
          f"(jit is {r['jit_steps_per_s'] / r['eager_steps_per_s']:.1f}x faster)")
    print(f"  total              {time.perf_counter() - t0:.1f} s")
    for path in write_pictures(r, args.out):
        print(f"  wrote {path}")
    return r


if __name__ == "__main__":
    main()
