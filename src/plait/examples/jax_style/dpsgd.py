"""Differentially-private SGD on MNIST-shaped data: a stax convnet whose per-example
gradients come from ``vmap(grad(loss))``, each clipped to an l2 norm, summed, noised
with Gaussian noise and averaged, then an SGD step.

Written as JAX's examples are; only the imports name plait.
"""
from collections import namedtuple

import numpy as np

import plait.numpy as jnp
from plait import grad, jit, random, vmap
from plait.example_libraries import optimizers, stax
from plait.example_libraries.stax import (Conv, Dense, Flatten, LogSoftmax, MaxPool,
                                          Tanh)
from plait.tree_util import tree_flatten, tree_unflatten

Program = namedtuple("Program", ["init", "step", "get_params", "predict"])


def build(channels=16, hidden=32, step_size=0.25, l2_norm_clip=1.5,
          noise_multiplier=1.1):
    init_random_params, predict = stax.serial(
        Conv(channels, (8, 8), padding="SAME", strides=(2, 2)), Tanh,
        MaxPool((2, 2), (1, 1)),
        Conv(2 * channels, (4, 4), padding="VALID", strides=(2, 2)), Tanh,
        MaxPool((2, 2), (1, 1)),
        Flatten,
        Dense(hidden), Tanh,
        Dense(10), LogSoftmax)

    def loss(params, batch):
        inputs, targets = batch
        logits = predict(params, inputs)
        logits = logits - jnp.max(logits, axis=1, keepdims=True)  # the example's habit
        return -jnp.mean(jnp.sum(logits * targets, axis=1))

    def clipped_grad(params, single_example_batch):
        """Gradient of one example, clipped to l2_norm_clip in global norm."""
        grads = grad(loss)(params, single_example_batch)
        nonempty_grads, tree_def = tree_flatten(grads)
        total_grad_norm = jnp.linalg.norm(
            jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
        divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
        normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
        return tree_unflatten(tree_def, normalized_nonempty_grads)

    def private_grad(params, batch, rng, batch_size):
        """Per-example gradients, clipped, summed, noised and averaged."""
        px_clipped_grad_fn = vmap(clipped_grad, in_axes=(None, 0))
        std_dev = l2_norm_clip * noise_multiplier
        normalize_ = lambda n: n / float(batch_size)
        sum_ = lambda n: jnp.sum(n, 0)
        aggregated_clipped_grads = [sum_(g) for g in
                                    tree_flatten(px_clipped_grad_fn(params, batch))[0]]
        rngs = random.split(rng, len(aggregated_clipped_grads))
        noised = [g + std_dev * random.normal(r, g.shape)
                  for r, g in zip(rngs, aggregated_clipped_grads)]
        normalized = [normalize_(g) for g in noised]
        return tree_unflatten(tree_flatten(params)[1], normalized)

    opt_init, opt_update, get_params = optimizers.sgd(step_size)

    @jit
    def step(i, opt_state, rng, images, labels):
        params = get_params(opt_state)
        value = loss(params, (images, labels))
        # one example at a time: vmap over a leading axis of size 1 per example
        batch = (images[:, None], labels[:, None])
        g = private_grad(params, batch, rng, images.shape[0])
        return opt_update(i, g, opt_state), value

    def init(rng):
        _, init_params = init_random_params(rng, (-1, 28, 28, 1))
        return opt_init(init_params)

    return Program(init, step, get_params, predict)


def main(num_epochs=2, batch_size=64, n=512):
    npr = np.random.default_rng(0)   # synthetic MNIST-shaped data
    images = npr.random((n, 28, 28, 1), dtype=np.float32)
    labels = np.eye(10, dtype=np.float32)[npr.integers(0, 10, n)]
    prog = build()
    key = random.PRNGKey(0)
    opt_state = prog.init(key)
    itercount = 0
    for epoch in range(num_epochs):
        for b in range(n // batch_size):
            sl = slice(b * batch_size, (b + 1) * batch_size)
            opt_state, value = prog.step(itercount, opt_state, random.fold_in(key, itercount),
                                         images[sl], labels[sl])
            itercount += 1
        print(f"epoch {epoch}: loss {float(value):.4f}")
    return np.asarray(value)


if __name__ == "__main__":
    main()
