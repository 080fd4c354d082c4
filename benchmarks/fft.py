"""FFT rows (issue 18): a 2^20-point complex64 FFT and a 512x512 float32 ``rfft2``.

plait (``jit``, native backend: the complex ``fft`` runs as a host step calling
SciPy's pocketfft, the float32 ``rfft2`` calls plait's own FFT library,
``plait.backends.native.fft``) against ``numpy.fft`` and ``jax.jit`` when installed. The extra
text measures what the host step costs: the same transforms through ``plait.jit``
and through ``numpy.fft`` directly, at 2^20 points and at 16 points (per-call
overhead). ``python -m benchmarks.fft [--quick]``.
"""
from __future__ import annotations

import time

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.harness import optional_import
from benchmarks.common import (Config, Row, check_row, first_outputs, jax_modules, measure,
                               standalone)

RTOL = 1e-5


def _row(name: str, x, np_fn, pnp_fn, jnp_fn, cfg: Config) -> Row:
    f = plait.jit(pnp_fn)
    cands = {"plait.jit": lambda: f(x), "numpy": lambda: np_fn(x)}
    jax, jnp = jax_modules()
    if jax is not None:
        jf = jax.jit(jnp_fn(jnp))
        xj = jax.device_put(x)
        cands["jax.jit"] = lambda: jf(xj)
    outs, first = first_outputs(cands)
    row = Row(name, first_call=first)
    if check_row(row, _parts(np_fn(x)), outs, RTOL, against="numpy",
                 convert=lambda k, o: _parts(o)):
        measure(row, cands, cfg)
    return row


def _parts(z):
    """Real and imaginary parts stacked (the checks compare real arrays)."""
    z = np.asarray(z)
    return np.stack([z.real, z.imag])


def _per_call(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def host_step_overhead(cfg: Config) -> str:
    """Seconds per call of ``plait.jit(fft)`` vs ``numpy.fft.fft`` (best of 5 loops)."""
    quick = cfg.quick
    lines = [f"fft host step (backend {cfg.backend}) vs the libraries directly (best of 5, "
             f"per call):"]
    big = 1 << (10 if cfg.smoke else 20)
    sfft = optional_import("scipy") and __import__("scipy.fft").fft
    for n, reps in ((big, 3 if quick else 10), (16, 2000 if quick else 20000)):
        x = (np.random.default_rng(0).standard_normal(n)
             + 1j * np.random.default_rng(1).standard_normal(n)).astype(np.complex64)
        f = plait.jit(pnp.fft.fft)
        np.testing.assert_allclose(np.asarray(f(x)), np.fft.fft(x), rtol=1e-4, atol=1e-3)
        t_p = _per_call(lambda: f(x), reps)
        t_n = _per_call(lambda: np.fft.fft(x), reps)
        line = (f"  complex64[{n}]: plait.jit {t_p * 1e6:.1f} us, numpy.fft "
                f"{t_n * 1e6:.1f} us")
        if sfft is not None:
            t_s = _per_call(lambda: sfft.fft(x), reps)
            line += (f", scipy.fft (what the host step calls) {t_s * 1e6:.1f} us, "
                     f"host-step overhead {(t_p - t_s) * 1e6:+.1f} us")
        lines.append(line)
    y = np.ones(16, np.float32)
    g = plait.jit(lambda v: v * 2)
    lines.append(f"  jit call floor, a native kernel on float32[16]: "
                 f"{_per_call(lambda: g(y), 2000 if quick else 20000) * 1e6:.1f} us")
    return "\n".join(lines)


def run(cfg: Config):
    n = 1 << (10 if cfg.smoke else 20)
    m = 32 if cfg.smoke else 512
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    x = rng.standard_normal((m, m)).astype(np.float32)
    rows = [
        _row(f"FFT complex64[2^{n.bit_length() - 1}]", z, np.fft.fft, pnp.fft.fft,
             lambda jnp: jnp.fft.fft, cfg),
        _row(f"rfft2 float32[{m}x{m}]", x, np.fft.rfft2, pnp.fft.rfft2,
             lambda jnp: jnp.fft.rfft2, cfg),
    ]
    return rows, host_step_overhead(cfg)


if __name__ == "__main__":
    standalone(run)
