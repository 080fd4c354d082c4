"""Linear algebra rows (issue 18): plait.jit against NumPy/SciPy and jax.jit.

* ``cholesky`` and ``solve`` (one right-hand side) at n = 256 and 1024, float64 (plait's
  ``solve`` is one ``getrf`` + ``getrs`` call on the native backend, jax's an ``lu``
  custom call and triangular solves; both call SciPy's OpenBLAS);
* batched ``eigh`` and ``svd`` of 64 matrices 64x64, float64 (the ``eigh`` row reads
  the eigenvalues only: plait's graph then skips the eigenvectors, LAPACK jobz='N',
  while ``np.linalg.eigh`` and ``jax.jit`` compute them);
* a Gaussian-process negative log marginal likelihood and its gradient with respect
  to the three kernel hyperparameters (squared exponential, n = 1000): Cholesky,
  triangular solves and log-determinant; NumPy/SciPy with the hand-written gradient
  ``0.5 tr((K⁻¹ - α αᵀ) dK/dθ)``.

The extra report measures the native LAPACK call against a host step: a
``fori_loop`` of dense solves compiled as one C loop, and the same loop with the
linalg ``native`` rules removed (the loop body then runs from Python as cached
executables), per iteration, for 4x4 and 64x64 systems.
``python -m benchmarks.linalg [--quick]``.
"""
from __future__ import annotations

import time

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.common import (Config, Row, check_row, first_outputs, guarded, jax_modules,
                               measure, standalone)
from benchmarks.harness import fmt_time, table


def _spd(n: int, seed: int = 0, batch: tuple = ()) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) / n + np.eye(n)


def _row(name: str, cands: dict, ref: str, rtol: float, cfg: Config, convert=None) -> Row:
    row = Row(name)
    outs, row.first_call = first_outputs(cands)
    want = convert(ref, outs[ref]) if convert else outs[ref]
    check_row(row, want, outs, rtol, against=ref, convert=convert)
    for k in list(row.first_call):
        if not k.endswith("jit"):
            del row.first_call[k]
    return measure(row, cands, cfg)


def _decomposition_rows(cfg: Config, jax, jnp) -> list[Row]:
    rows = []
    sizes = (32, 64) if cfg.smoke else (256, 1024)
    for n in sizes:
        a = _spd(n)
        b = np.random.default_rng(1).standard_normal(n)
        chol = plait.jit(pnp.linalg.cholesky)
        solve = plait.jit(pnp.linalg.solve)
        c = {"plait.jit": lambda: chol(a), "numpy": lambda: np.linalg.cholesky(a)}
        s = {"plait.jit": lambda: solve(a, b), "numpy": lambda: np.linalg.solve(a, b)}
        if jax is not None:
            jc, js = jax.jit(jnp.linalg.cholesky), jax.jit(jnp.linalg.solve)
            ja, jb = jnp.asarray(a), jnp.asarray(b)
            c["jax.jit"] = lambda: jc(ja)
            s["jax.jit"] = lambda: js(ja, jb)
        rows.append(guarded(f"cholesky n={n}", lambda: _row(f"cholesky n={n}", c, "numpy",
                                                            1e-9, cfg)))
        rows.append(guarded(f"solve n={n}", lambda: _row(f"solve n={n}", s, "numpy", 1e-8,
                                                         cfg)))
    bsz, m = (8, 16) if cfg.smoke else (64, 64)
    stack = _spd(m, 2, (bsz,))
    gen = np.random.default_rng(3).standard_normal((bsz, m, m))
    eigh = plait.jit(lambda x: pnp.linalg.eigh(x).eigenvalues)
    svdv = plait.jit(lambda x: pnp.linalg.svd(x, full_matrices=False))
    e = {"plait.jit": lambda: eigh(stack), "numpy": lambda: np.linalg.eigh(stack)[0]}
    v = {"plait.jit": lambda: svdv(gen),
         "numpy": lambda: np.linalg.svd(gen, full_matrices=False)}
    if jax is not None:
        je = jax.jit(lambda x: jnp.linalg.eigh(x)[0])
        jv = jax.jit(lambda x: jnp.linalg.svd(x, full_matrices=False))
        js_, jg = jnp.asarray(stack), jnp.asarray(gen)
        e["jax.jit"] = lambda: je(js_)
        v["jax.jit"] = lambda: jv(jg)

    def svd_invariant(_, out):       # singular vectors up to sign: compare u diag(s) vh
        u, s_, vh = (np.asarray(x) for x in out)
        return (u * s_[..., None, :]) @ vh
    name_e, name_v = f"eigh {bsz}x{m}x{m}", f"svd {bsz}x{m}x{m}"
    rows.append(guarded(name_e, lambda: _row(name_e, e, "numpy", 1e-9, cfg)))
    rows.append(guarded(name_v, lambda: _row(name_v, v, "numpy", 1e-9, cfg,
                                             convert=svd_invariant)))
    return rows


# --- Gaussian process ------------------------------------------------------------------
def gp_data(n: int, seed: int = 4):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 10, n))
    y = np.sin(x) + 0.3 * np.cos(3 * x) + 0.1 * rng.standard_normal(n)
    return x, y


def gp_nll(np_mod, x, y, cholesky, tri_solve):
    """Negative log marginal likelihood of y under a GP with kernel
    ``sf² exp(-d²/(2 ell²)) + sn² I``; ``theta = (log ell, log sf, log sn)``."""
    n = x.shape[0]
    d2 = (x[:, None] - x[None, :]) ** 2

    def f(theta):
        ell, sf, sn = np_mod.exp(theta[0]), np_mod.exp(theta[1]), np_mod.exp(theta[2])
        k = sf ** 2 * np_mod.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-6) * np_mod.eye(n)
        L = cholesky(k)
        alpha = tri_solve(L, y)
        return (0.5 * np_mod.sum(alpha ** 2) + np_mod.sum(np_mod.log(np_mod.diagonal(L)))
                + 0.5 * n * np.log(2 * np.pi))
    return f


def gp_numpy(x, y):
    """Value and hand-written gradient with SciPy's Cholesky solves."""
    import scipy.linalg as sl
    n = x.shape[0]
    d2 = (x[:, None] - x[None, :]) ** 2

    def vg(theta):
        ell, sf, sn = np.exp(theta)
        e = np.exp(-0.5 * d2 / ell ** 2)
        k = sf ** 2 * e + (sn ** 2 + 1e-6) * np.eye(n)
        c = sl.cho_factor(k, lower=True)
        alpha = sl.cho_solve(c, y)
        value = (0.5 * y @ alpha + np.sum(np.log(np.diag(c[0])))
                 + 0.5 * n * np.log(2 * np.pi))
        w = sl.cho_solve(c, np.eye(n)) - np.outer(alpha, alpha)
        dks = (sf ** 2 * e * d2 / ell ** 2, 2 * sf ** 2 * e, 2 * sn ** 2 * np.eye(n))
        return value, np.array([0.5 * np.sum(w * dk) for dk in dks])
    return vg


def _gp_row(cfg: Config, jax, jnp) -> Row:
    n = 100 if cfg.smoke else 1000
    x, y = gp_data(n)
    theta = np.array([0.0, 0.0, -1.0])
    from plait.lax import linalg as lla

    def p_tri(L, b):
        return lla.triangular_solve(L, b[:, None], left_side=True, lower=True)[:, 0]
    pf = plait.jit(plait.value_and_grad(gp_nll(pnp, x, y, pnp.linalg.cholesky, p_tri)))
    cands = {"plait.jit": lambda: pf(theta), "numpy": lambda: gp_numpy(x, y)(theta)}
    if jax is not None:
        import jax.scipy.linalg as jsl

        def j_tri(L, b):
            return jsl.solve_triangular(L, b, lower=True)
        jf = jax.jit(jax.value_and_grad(gp_nll(jnp, jnp.asarray(x), jnp.asarray(y),
                                               jnp.linalg.cholesky, j_tri)))
        jt = jnp.asarray(theta)
        cands["jax.jit"] = lambda: jf(jt)
    return _row(f"GP marginal likelihood + grad n={n}", cands, "numpy", 1e-7, cfg)


# --- native call vs host step --------------------------------------------------------
def _loop(iters: int):
    def f(a, b):
        def body(i, x):
            return pnp.linalg.solve(a, b + 0.01 * x)
        return plait.lax.fori_loop(0, iters, body, pnp.zeros_like(b))
    return f


def _per_iter(fn, iters: int, reps: int) -> float:
    from plait.backends.native.tiered import wait_all
    fn()
    wait_all()              # time the native loop, not the interp tier answering meanwhile
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        np.asarray(fn())
        best = min(best, time.perf_counter() - t0)
    return best / iters


def overhead_report(cfg: Config) -> str:
    """A loop of solves compiled as one C loop (LAPACK called from generated C) against
    the same loop whose solves are host steps; per iteration."""
    from plait.lax import linalg as lla
    iters = 20 if cfg.smoke else 500
    rows = []
    for n in (4, 64):
        a = _spd(n, 5)
        b = np.random.default_rng(6).standard_normal((n,))
        native = plait.jit(_loop(iters), backend="native")
        want = np.asarray(native(a, b))
        t_native = _per_iter(lambda: native(a, b), iters, 5)
        saved = {p: p.rules.pop("native") for p in (lla.solve_p,)}
        try:
            host = plait.jit(_loop(iters), backend="native")
            plan = host.lower(a, b).compile().as_text("kernels")
            got = np.asarray(host(a, b))
            t_host = _per_iter(lambda: host(a, b), iters, 3)
        finally:
            for p, r in saved.items():
                p.def_rule("native", r)
        np.testing.assert_allclose(got, want, rtol=1e-10)
        assert "host" not in native.lower(a, b).compile().as_text("kernels") and "host" in plan

        def np_loop():
            x = np.zeros_like(b)
            for _ in range(iters):
                x = np.linalg.solve(a, b + 0.01 * x)
            return x
        t_np = _per_iter(np_loop, iters, 3)
        rows.append([f"{n}x{n}", fmt_time(t_native), fmt_time(t_host),
                     f"{t_host / t_native:.1f}x", fmt_time(t_np)])
    return table(f"solve inside fori_loop ({iters} iterations), time per iteration",
                 rows, ["system", "native C loop (LAPACK from C)", "host steps",
                        "host / native", "NumPy Python loop"])


def run(cfg: Config):
    """The rows and the fori_loop report; JAX runs in float64 here and its setting is
    restored afterwards (the suite's later rows, e.g. jm, are float32 JAX programs)."""
    jax, jnp = jax_modules()
    if jax is None:
        return _rows(cfg, jax, jnp)
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        return _rows(cfg, jax, jnp)
    finally:
        jax.config.update("jax_enable_x64", x64)


def _rows(cfg: Config, jax, jnp):
    rows = _decomposition_rows(cfg, jax, jnp)
    rows.append(guarded("GP marginal likelihood + grad", lambda: _gp_row(cfg, jax, jnp)))
    return rows, overhead_report(cfg)


if __name__ == "__main__":
    standalone(run)
