"""A variational autoencoder on MNIST-shaped data: stax encoder/decoder (FanOut +
parallel heads for mean and variance), reparameterized Gaussian sampling, binarized
inputs by ``random.bernoulli``, Adam; one epoch is a ``lax.fori_loop`` inside ``jit``.

Written as JAX's examples are; only the imports name plait.
"""
from collections import namedtuple

import numpy as np

import plait.numpy as jnp
from plait import jit, grad, lax, random
from plait.example_libraries import optimizers, stax
from plait.example_libraries.stax import Dense, FanOut, Relu, Softplus

Program = namedtuple("Program", ["init", "step", "get_params", "run_epoch"])


def gaussian_kl(mu, sigmasq):
    """KL divergence from a diagonal Gaussian to the standard Gaussian."""
    return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu**2. - sigmasq)


def gaussian_sample(rng, mu, sigmasq):
    """Sample a diagonal Gaussian."""
    return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)


def bernoulli_logpdf(logits, x):
    """Bernoulli log pdf of data x given logits."""
    return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))


def build(hidden=512, latent=10, step_size=0.001, batch_size=32):
    encoder_init, encode = stax.serial(
        Dense(hidden), Relu,
        Dense(hidden), Relu,
        FanOut(2),
        stax.parallel(Dense(latent), stax.serial(Dense(latent), Softplus)),
    )
    decoder_init, decode = stax.serial(
        Dense(hidden), Relu,
        Dense(hidden), Relu,
        Dense(28 * 28),
    )

    def elbo(rng, params, images):
        enc_params, dec_params = params
        mu_z, sigmasq_z = encode(enc_params, images)
        logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

    def binarize_batch(rng, i, images):
        i = i % (images.shape[0] // batch_size)
        batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
        return random.bernoulli(rng, batch)

    opt_init, opt_update, get_params = optimizers.adam(step_size)

    def loss(rng, params, batch):
        return -elbo(rng, params, batch) / batch.shape[0]

    @jit
    def step(i, opt_state, rng, images, labels):
        params = get_params(opt_state)
        elbo_rng, data_rng = random.split(rng)
        batch = binarize_batch(data_rng, 0, images)
        value = loss(elbo_rng, params, batch)
        g = grad(lambda p: loss(elbo_rng, p, batch))(params)
        return opt_update(i, g, opt_state), value

    @jit
    def run_epoch(rng, opt_state, images):
        num_batches = images.shape[0] // batch_size

        def body_fun(i, opt_state):
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = binarize_batch(data_rng, i, images)
            g = grad(lambda p: loss(elbo_rng, p, batch))(get_params(opt_state))
            return opt_update(i, g, opt_state)
        return lax.fori_loop(0, num_batches, body_fun, opt_state)

    def init(rng):
        enc_rng, dec_rng = random.split(rng)
        _, init_encoder_params = encoder_init(enc_rng, (batch_size, 28 * 28))
        _, init_decoder_params = decoder_init(dec_rng, (batch_size, latent))
        return opt_init((init_encoder_params, init_decoder_params))

    return Program(init, step, get_params, run_epoch)


def main(num_epochs=2, batch_size=32, n=1024):
    npr = np.random.default_rng(0)   # synthetic MNIST-shaped data
    images = npr.random((n, 28 * 28), dtype=np.float32)
    prog = build(batch_size=batch_size)
    rng = random.PRNGKey(0)
    opt_state = prog.init(rng)
    for epoch in range(num_epochs):
        opt_state = prog.run_epoch(random.fold_in(rng, epoch), opt_state, images)
        _, value = prog.step(0, opt_state, rng, images[:batch_size], None)
        print(f"epoch {epoch}: loss {float(value):.3f}")
    return np.asarray(value)


if __name__ == "__main__":
    main()
