"""W3 — Truncated Newton-CG (JAX paper, Table 1; docs/workloads.md).

10 unit Newton steps ``x <- x + p``, ``p`` from conjugate gradient on ``H p = -g``
with Hessian-vector products ``jvp(grad(f), (x,), (v,))[1]``, truncated when
``||r|| <= 1e-4 ||g||`` or after 50 iterations (or at non-positive curvature, which
keeps the step finite on the non-convex HMM). Compiled: one jitted Newton step
whose CG loop is a ``while_loop``, called from a Python loop of 10. Python: the
same algorithm op by op (plait eager with autodiff; NumPy with hand-written
gradients and Hessian-vector products where they are closed-form). Problems:
quadratic n = 1000 and n = 50, L2 logistic regression 5000x100, HMM (5 states,
10 symbols, T = 500) fitted by its log marginal likelihood (a ``scan``; plus a
tiny L2 term, see ``HMM_L2``).
``python -m benchmarks.w3_newton_cg``.
"""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.common import (xla_jit, Config, Row, check_row, first_outputs, guarded, jax_modules,
                               measure, standalone)

NEWTON_STEPS, CG_ITERS, CG_TOL = 10, 50, 1e-4
RTOL = 2e-2          # float32 CG on problems with condition number up to 1e3
# Softmax logits have a null space (a constant added to a row changes nothing), so the
# HMM's Hessian is singular and unit Newton steps blow up near the optimum; the same
# small L2 term as (b) (0.5 * 1e-3 * theta . theta) makes the problem well posed.
HMM_L2 = 0.5e-3


# -- problems (data in float32 NumPy; objectives written against a NumPy-like module) --
def quadratic_data(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (U * np.logspace(0, 3, n)) @ U.T
    b = rng.standard_normal(n)
    return A.astype(np.float32), b.astype(np.float32)


def logistic_data(m: int = 5000, d: int = 100, seed: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    w_true = rng.standard_normal(d) * 3 / np.sqrt(d)
    y = np.sign(X @ w_true + 0.5 * rng.standard_normal(m))
    return X.astype(np.float32), y.astype(np.float32)


def hmm_data(T: int = 500, states: int = 5, symbols: int = 10, seed: int = 5):
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(states))
    A = rng.dirichlet(np.ones(states), size=states)
    B = rng.dirichlet(np.ones(symbols), size=states)
    obs = np.empty(T, np.int64)
    s = rng.choice(states, p=pi)
    for t in range(T):
        obs[t] = rng.choice(symbols, p=B[s])
        s = rng.choice(states, p=A[s])
    onehot = np.eye(symbols, dtype=np.float32)[obs]
    return onehot, states, symbols


def quadratic_f(np_mod, A, b):
    return lambda x: 0.5 * np_mod.dot(x, np_mod.dot(A, x)) - np_mod.dot(b, x)


def logistic_f(np_mod, X, y):
    def f(w):
        z = -y * np_mod.dot(X, w)
        return np_mod.mean(np_mod.logaddexp(np_mod.zeros_like(z), z)) + 0.5e-3 * np_mod.dot(w, w)
    return f


def hmm_f(np_mod, scan, onehot, states: int, symbols: int):
    """Negative log marginal likelihood of the observations (forward algorithm in log
    space), plus ``HMM_L2 * theta . theta``."""
    def log_softmax(z):
        m = np_mod.max(z, axis=-1, keepdims=True)
        return z - m - np_mod.log(np_mod.sum(np_mod.exp(z - m), axis=-1, keepdims=True))

    def lse(z, axis):
        m = np_mod.max(z, axis=axis, keepdims=True)
        return np_mod.squeeze(m, axis) + np_mod.log(np_mod.sum(np_mod.exp(z - m), axis=axis))

    def f(theta):
        log_pi = log_softmax(theta[:states])
        log_A = log_softmax(np_mod.reshape(theta[states:states + states * states],
                                           (states, states)))
        log_B = log_softmax(np_mod.reshape(theta[states + states * states:],
                                           (states, symbols)))
        emit = np_mod.dot(onehot, log_B.T)                  # (T, states)

        def step(alpha, e):
            return lse(alpha[:, None] + log_A, 0) + e, None
        alpha, _ = scan(step, log_pi + emit[0], emit[1:])
        return -lse(alpha, 0) + HMM_L2 * np_mod.dot(theta, theta)
    return f


def hmm_dim(states: int, symbols: int) -> int:
    return states + states * states + states * symbols


# -- the algorithm, against (np_mod, grad, hvp, while_loop) ------------------------------
def newton_step_fn(np_mod, grad_f, hvp, while_loop):
    """One truncated Newton step: ``x + p`` with ``p`` from CG on ``H p = -g``."""
    def step(x):
        g = grad_f(x)
        tol = CG_TOL * np_mod.sqrt(np_mod.dot(g, g))
        r0 = -g
        init = (0, np_mod.zeros_like(x), r0, r0, np_mod.dot(r0, r0), np_mod.asarray(True))

        def cond(s):
            i, _, _, _, rr, ok = s
            return (i < CG_ITERS) & (np_mod.sqrt(rr) > tol) & ok

        def body(s):
            i, p, r, d, rr, _ = s
            Hd = hvp(x, d)
            curv = np_mod.dot(d, Hd)
            ok = curv > 0
            alpha = np_mod.where(ok, rr / np_mod.where(ok, curv, 1.0), 0.0)
            p = p + alpha * d
            r = r - alpha * Hd
            rr_new = np_mod.dot(r, r)
            d = r + (rr_new / rr) * d
            return i + 1, p, r, d, np_mod.where(ok, rr_new, rr), ok
        p = while_loop(cond, body, init)[1]
        return x + p
    return step


def python_while(cond, body, val):
    while bool(cond(val)):
        val = body(val)
    return val


def solve(step, x0):
    x = x0
    for _ in range(NEWTON_STEPS):
        x = step(x)
    return x


# -- systems ----------------------------------------------------------------------------
def plait_steps(f):
    grad_f = plait.grad(f)

    def hvp(x, v):
        return plait.jvp(grad_f, (x,), (v,))[1]
    jitted = plait.jit(newton_step_fn(pnp, grad_f, hvp, plait.lax.while_loop))
    plait_steps.xla = xla_jit(newton_step_fn(pnp, grad_f, hvp, plait.lax.while_loop))
    eager = newton_step_fn(pnp, grad_f, hvp, python_while)
    return jitted, eager


def jax_step(jax, f):
    grad_f = jax.grad(f)

    def hvp(x, v):
        return jax.jvp(grad_f, (x,), (v,))[1]
    return jax.jit(newton_step_fn(jax.numpy, grad_f, hvp, jax.lax.while_loop))


def numpy_step(kind: str, data):
    """Hand-written gradient and Hessian-vector product (quadratic, logistic)."""
    if kind == "quadratic":
        A, b = data
        return newton_step_fn(np, lambda x: A @ x - b, lambda x, v: A @ v, python_while)
    X, y = data
    m = X.shape[0]

    def sig(z):
        return 0.5 * (1 + np.tanh(0.5 * z))

    def grad_f(w):
        z = y * (X @ w)
        return X.T @ (-y * sig(-z)) / np.float32(m) + np.float32(1e-3) * w

    def hvp(w, v):
        s = sig(y * (X @ w))
        return X.T @ (s * (1 - s) * (X @ v)) / np.float32(m) + np.float32(1e-3) * v
    return newton_step_fn(np, grad_f, hvp, python_while)


def _problems(cfg: Config):
    """Sizes per mode; ``--quick`` skips the BLAS-bound n = 1000 quadratic, fits the
    HMM with T = 100 (the op-by-op run of the T = 500 problem takes minutes) and runs
    plait eager only on the n = 50 quadratic and the HMM (no NumPy baseline there)."""
    if cfg.smoke:
        return [("quadratic", 20), ("logistic", (200, 10)), ("hmm", 30)]
    if cfg.quick:
        return [("quadratic", 50), ("logistic", (5000, 100)), ("hmm", 100)]
    return [("quadratic", 1000), ("quadratic", 50), ("logistic", (5000, 100)), ("hmm", 500)]


def _problem(kind: str, size, jax, jnp):
    """``(label, plait objective, JAX objective, x0, NumPy data or None)``."""
    if kind == "quadratic":
        data = quadratic_data(size)
        return (f"n={size}", quadratic_f(pnp, *data), quadratic_f(jnp, *data) if jax else None,
                np.zeros(size, np.float32), data)
    if kind == "logistic":
        data = logistic_data(*size)
        return (f"{size[0]}x{size[1]}", logistic_f(pnp, *data),
                logistic_f(jnp, *data) if jax else None, np.zeros(size[1], np.float32), data)
    onehot, S, K = hmm_data(size)
    return (f"T={size}", hmm_f(pnp, plait.lax.scan, onehot, S, K),
            hmm_f(jnp, jax.lax.scan, onehot, S, K) if jax else None,
            np.zeros(hmm_dim(S, K), np.float32), None)


def _row(cfg: Config, kind: str, size, jax, jnp) -> Row:
    label, fp, fj, x0, data = _problem(kind, size, jax, jnp)
    jitted, eager = plait_steps(fp)
    cands = {"plait.jit": lambda: solve(jitted, x0)}
    xla_step = plait_steps.xla
    if xla_step is not None:
        cands["plait xla"] = lambda: solve(xla_step, x0)
    if not cfg.quick or cfg.smoke or kind == "hmm" or size == 50:
        cands["plait eager"] = lambda: solve(eager, x0)
    if data is not None:
        ns = numpy_step(kind, data)
        cands["numpy"] = lambda: solve(ns, x0)
    if jax is not None:
        js = jax_step(jax, fj)
        cands["jax.jit"] = lambda: solve(js, x0)
    ref_key = "numpy" if "numpy" in cands else "plait eager"
    outs, first = first_outputs(cands)
    row = Row(f"W3 Newton-CG {kind} {label}", first_call=first)
    if check_row(row, outs[ref_key], outs, RTOL, against=ref_key):
        measure(row, cands, cfg)
    return row


def run(cfg: Config) -> list[Row]:
    jax, jnp = jax_modules()
    return [guarded(f"W3 Newton-CG {kind} {size}",
                    lambda k=kind, s=size: _row(cfg, k, s, jax, jnp))
            for kind, size in _problems(cfg)]


if __name__ == "__main__":
    standalone(run)
