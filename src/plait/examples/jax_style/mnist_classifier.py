"""An MLP classifier on MNIST-shaped data: stax layers, momentum SGD, jit(grad).

Written as JAX's examples are; only the imports name plait.
"""
from collections import namedtuple

import numpy as np

import plait.numpy as jnp
from plait import jit, random, value_and_grad
from plait.example_libraries import optimizers, stax
from plait.example_libraries.stax import Dense, LogSoftmax, Relu

Program = namedtuple("Program", ["init", "step", "get_params", "predict"])


def build(hidden=1024, step_size=0.001, mass=0.9):
    init_random_params, predict = stax.serial(
        Dense(hidden), Relu,
        Dense(hidden), Relu,
        Dense(10), LogSoftmax)

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))

    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=mass)

    @jit
    def update(i, opt_state, rng, images, labels):
        params = get_params(opt_state)
        value, grads = value_and_grad(loss)(params, (images, labels))
        return opt_update(i, grads, opt_state), value

    def init(rng):
        _, init_params = init_random_params(rng, (-1, 28 * 28))
        return opt_init(init_params)

    return Program(init, update, get_params, predict)


def accuracy(predict, params, images, labels):
    predicted_class = jnp.argmax(predict(params, images), axis=1)
    return jnp.mean(predicted_class == jnp.argmax(labels, axis=1))


def main(num_epochs=2, batch_size=128, n=1024):
    npr = np.random.default_rng(0)   # synthetic MNIST-shaped data
    images = npr.random((n, 28 * 28), dtype=np.float32)
    labels = np.eye(10, dtype=np.float32)[npr.integers(0, 10, n)]
    prog = build()
    rng = random.PRNGKey(0)
    opt_state = prog.init(rng)
    itercount = 0
    for epoch in range(num_epochs):
        for b in range(n // batch_size):
            sl = slice(b * batch_size, (b + 1) * batch_size)
            opt_state, value = prog.step(itercount, opt_state, rng, images[sl], labels[sl])
            itercount += 1
        params = prog.get_params(opt_state)
        print(f"epoch {epoch}: loss {float(value):.4f} train accuracy "
              f"{float(accuracy(prog.predict, params, images, labels)):.3f}")
    return np.asarray(value)


if __name__ == "__main__":
    main()
