"""The linalg primitives on the native backend (cholesky, lu, triangular_solve, eigh,
svd, qr, tridiagonal_solve): generated C calling LAPACK/BLAS
through pointers from SciPy's capsules, inside compiled loops too."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.lax import linalg as L
from plait.backends.native.lapack import NAMES

pytest.importorskip("scipy")


def _newton(A, c, x0):
    """Newton's method for ``A x + x**3 = c`` with a dense solve per step."""
    n = A.shape[-1]

    def residual(x):
        return A @ x + x ** 3 - c

    def cond(s):
        x, k = s
        return (pnp.max(pnp.abs(residual(x))) > 1e-12) & (k < 50)

    def body(s):
        x, k = s
        J = A + 3 * pnp.eye(n) * (x ** 2)[None, :]
        return x - pnp.linalg.solve(J, residual(x)), k + 1
    return lax.while_loop(cond, body, (x0, 0))


def _newton_numpy(A, c, x0):
    x, k = x0.copy(), 0
    while np.max(np.abs(A @ x + x ** 3 - c)) > 1e-12 and k < 50:
        J = A + 3 * np.eye(len(x)) * (x ** 2)[None, :]
        x, k = x - np.linalg.solve(J, A @ x + x ** 3 - c), k + 1
    return x, k


def test_newton_solver_is_one_c_loop():
    rng = np.random.default_rng(0)
    n = 8
    A = rng.standard_normal((n, n)) + 2 * np.eye(n)
    c = 3 * rng.standard_normal(n)
    jf = plait.jit(_newton, backend="native")
    exe = jf.lower(A, c, np.zeros(n)).compile()
    plan = exe.as_text("kernels").splitlines()
    assert any(line.endswith("native while") for line in plan), plan
    assert not any(line.startswith("host") for line in plan), plan
    assert "plait_run" in exe.as_text("c")            # the whole program is one C entry
    assert "plait_lapack[" in exe.as_text("c")        # the loop body calls LAPACK directly
    x, k = jf(A, c, np.zeros(n))
    wx, wk = _newton_numpy(A, c, np.zeros(n))
    assert int(k) == wk and wk > 3
    np.testing.assert_allclose(np.asarray(x), wx, rtol=1e-10, atol=1e-12)


def test_native_calls_match_interp():
    """Every native LAPACK rule (all triangular_solve variants, stacks, float32 and
    float64, non-PD cholesky and singular solves) against the reference backend."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 4))
    spd = a @ a.swapaxes(-1, -2) + 4 * np.eye(4)
    tri = np.tril(a) + 3 * np.eye(4)
    b = rng.standard_normal((3, 4, 2))
    rect = rng.standard_normal((2, 5, 3))

    def f(spd, a, tri, b, rect):
        out = [L.cholesky(spd), L.cholesky(-spd), *L.lu(a), *L.lu(rect), *L.lu(rect.mT),
               pnp.linalg.solve(a, b), pnp.linalg.solve(a * 0, b),
               *L.eigh(spd, symmetrize_input=False), *L.eigh(spd, lower=False),
               *L.svd(rect), *L.svd(rect.mT, full_matrices=False),
               L.svd(rect, compute_uv=False), *L.qr(rect), *L.qr(rect.mT),
               *L.qr(rect, full_matrices=False),
               L.tridiagonal_solve(a[..., 0], a[..., 1] + 5, a[..., 2], b)]
        for left in (True, False):
            for lower in (True, False):
                for tr in (True, False):
                    for unit in (True, False):
                        bb = b if left else b.mT
                        t = tri if lower else tri.mT
                        out.append(L.triangular_solve(t, bb, left_side=left, lower=lower,
                                                      transpose_a=tr, unit_diagonal=unit))
        return out
    for dt, tol in ((np.float64, 1e-11), (np.float32, 2e-4)):
        args = [x.astype(dt) for x in (spd, a, tri, b, rect)]
        jn = plait.jit(f, backend="native")
        plan = jn.lower(*args).compile().as_text("kernels")
        assert "host" not in plan, plan
        got, want = jn(*args), plait.jit(f, backend="interp")(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


@pytest.mark.parametrize("ncols", [1, 3])
def test_zero_pivot_solves_match_interp(ncols):
    """A zero on a triangular solve's diagonal: every side/triangle/transpose variant, one
    and several right-hand sides (trsv and trsm), gives the reference backend's inf/NaN
    pattern (IEEE substitution), not whatever the CPU's BLAS kernel leaves."""
    rng = np.random.default_rng(7)
    tri = np.tril(rng.standard_normal((2, 5, 5))) + 3 * np.eye(5)
    tri[0, 2, 2] = 0.0              # one singular matrix in the stack, one regular
    b = rng.standard_normal((2, 5, ncols))

    def f(tri, b):
        out = []
        for left in (True, False):
            for lower in (True, False):
                for tr in (True, False):
                    t = tri if lower else tri.mT
                    out.append(L.triangular_solve(t, b if left else b.mT, left_side=left,
                                                  lower=lower, transpose_a=tr))
        return out
    for dt in (np.float64, np.float32):
        args = (tri.astype(dt), b.astype(dt))
        got = plait.jit(f, backend="native")(*args)
        want = plait.jit(f, backend="interp")(*args)
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            assert not np.isfinite(w[0]).all() and np.isfinite(w[1]).all()
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_complex_stays_a_host_step():
    a = np.eye(3, dtype=np.complex128) * 2
    jf = plait.jit(lambda a: L.cholesky(a), backend="native")
    assert "host: cholesky" in jf.lower(a).compile().as_text("kernels")
    np.testing.assert_allclose(np.asarray(jf(a)), np.sqrt(2) * np.eye(3))


def test_native_calls_across_copy_tiles():
    """Matrices larger than the 64 x 64 tiles (moved as 8 x 8 blocks) of the row-/column-
    major copies around LAPACK (square, tall, wide; partial edge tiles and blocks)
    against the reference backend."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 67, 67))
    sym = a + a.swapaxes(-1, -2)
    rect = rng.standard_normal((2, 133, 70))
    b = rng.standard_normal((2, 67, 3))

    def f(a, sym, rect, b):
        wide = pnp.concatenate([b] * 4, axis=-1)     # 12 columns: rows permuted by P @ b
        return [*L.lu(a), *L.lu(rect), *L.lu(rect.mT), pnp.linalg.solve(a, b),
                pnp.linalg.solve(a, wide),
                *L.eigh(sym), *L.svd(rect), *L.svd(rect.mT, full_matrices=False),
                *L.qr(rect), *L.qr(rect.mT, full_matrices=False)]
    jn = plait.jit(f, backend="native")
    assert "host" not in jn.lower(a, sym, rect, b).compile().as_text("kernels")
    got, want = jn(a, sym, rect, b), plait.jit(f, backend="interp")(a, sym, rect, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-10)


def test_solve_permutes_few_columns_without_a_product():
    """A solve with one right-hand side permutes its rows by a fused select-and-sum,
    not by a product with an n x n permutation matrix (n² memory traffic)."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((40, 40)), rng.standard_normal(40)
    jf = plait.jit(pnp.linalg.solve, backend="native")
    plan = jf.lower(a, b).compile().as_text("kernels")
    assert "dot_general" not in plan, plan
    np.testing.assert_allclose(np.asarray(jf(a, b)), np.linalg.solve(a, b), rtol=1e-10)


def test_one_column_solve_gradient_has_no_outer_product_gemm():
    """The matrix gradient of a one-column triangular solve, ``-(L⁻ᵀ g) xᵀ`` on the
    triangle, is an elementwise outer product fused with its neighbours, not a GEMM
    call over a contraction of size 1; its value against the closed form."""
    rng = np.random.default_rng(4)
    n = 30
    lt = np.tril(rng.standard_normal((n, n))) + n * np.eye(n)
    b = rng.standard_normal((n, 1))
    w = rng.standard_normal((n, 1))

    def f(lt):
        return pnp.sum(w * L.triangular_solve(lt, b, left_side=True, lower=True))
    jg = plait.jit(plait.grad(f), backend="native")
    assert "dot_general" not in jg.lower(lt).as_text("graph")
    x = np.linalg.solve(lt, b)
    want = np.tril(-np.linalg.solve(lt.T, w) @ x.T)
    np.testing.assert_allclose(np.asarray(jg(lt)), want, rtol=1e-10, atol=1e-13)


def test_one_column_triangular_solves_match_interp():
    """Every triangular_solve variant with a single right-hand side (the ``trsv`` path;
    a stack, float64 and float32) against the reference backend."""
    rng = np.random.default_rng(5)
    n = 40
    tri = np.tril(rng.standard_normal((3, n, n))) / n + 2 * np.eye(n)
    b = rng.standard_normal((3, n, 1))

    def f(tri, b):
        out = []
        for left in (True, False):
            for lower in (True, False):
                for tr in (True, False):
                    for unit in (True, False):
                        out.append(L.triangular_solve(
                            tri if lower else tri.mT, b if left else b.mT, left_side=left,
                            lower=lower, transpose_a=tr, unit_diagonal=unit))
        return out
    for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        args = [x.astype(dt) for x in (tri, b)]
        jn = plait.jit(f, backend="native")
        assert "trsv" in jn.lower(*args).compile().as_text("c")
        for g, w in zip(jn(*args), plait.jit(f, backend="interp")(*args)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def test_lapack_pointers_survive_an_import_deadlock_report(monkeypatch):
    """A background compile importing SciPy's LAPACK capsules while the main thread
    imports ``scipy.linalg`` can get Python's import-deadlock error; the native build
    then waits and imports again instead of failing ('the native build of cholesky
    failed in the background: _DeadlockError')."""
    import builtins
    import importlib._bootstrap as bootstrap
    from plait.backends.native import lapack
    real_import = builtins.__import__
    raised = []

    def flaky(name, *args, **kw):
        if name == "scipy.linalg" and len(raised) < 2:
            raised.append(name)
            raise bootstrap._DeadlockError("deadlock detected by _ModuleLock('scipy.linalg')")
        return real_import(name, *args, **kw)
    monkeypatch.setattr(lapack, "_POINTERS", None)
    monkeypatch.setattr(builtins, "__import__", flaky)
    ptrs = lapack.pointers()
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert len(raised) == 2 and ptrs is not None and all(ptrs)
    from scipy.linalg import cython_lapack
    assert ptrs[lapack.NAMES.index("dgetrf")] == lapack._capsule_address(
        cython_lapack.__pyx_capi__["dgetrf"])


@pytest.mark.parametrize("dt, tol", [(np.float64, 1e-10), (np.float32, 2e-4)])
def test_fused_solve_factors_the_transpose(dt, tol):
    """``numpy.linalg.solve`` under jit is one ``solve`` call: getrf on a plain copy (the
    row-major matrix is LAPACK's column-major transpose) and getrs 'T', with no ``lu``
    layout transposes; one and several right-hand sides, stacks, against NumPy."""
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((2, 3, 70, 70)) + 9 * np.eye(70)).astype(dt)
    b1, bk = rng.standard_normal((2, 3, 70)).astype(dt), rng.standard_normal((70, 5)).astype(dt)

    def f(a, b1, bk):
        return pnp.linalg.solve(a, b1[..., None])[..., 0], pnp.linalg.solve(a[1, 2], bk)
    jn = plait.jit(f, backend="native")
    exe = jn.lower(a, b1, bk).compile()
    plan = exe.as_text("kernels")
    assert "host" not in plan and "lu" not in plan, plan
    assert f"plait_lapack[{NAMES.index('dgetrs' if dt == np.float64 else 'sgetrs')}]" in \
        exe.as_text("c")
    x1, xk = jn(a, b1, bk)
    np.testing.assert_allclose(np.asarray(x1), np.linalg.solve(a, b1[..., None])[..., 0],
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(xk), np.linalg.solve(a[1, 2], bk), rtol=tol, atol=tol)


@pytest.mark.parametrize("ncols", [1, 3])
def test_fused_solve_of_singular_matrices_matches_interp(ncols):
    """A zero pivot in the fused solve (a zero row, a zero column, the zero matrix, in a
    stack with a regular matrix) gives the reference backend's inf/NaN pattern: that
    matrix is factored and solved as ``lu`` and ``lu_solve`` do."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((4, 5, 5)) + 3 * np.eye(5)
    a[0, 2, :] = 0.0
    a[1, :, 3] = 0.0
    a[2] = 0.0
    b = rng.standard_normal((4, 5, ncols))
    for dt in (np.float64, np.float32):
        args = (a.astype(dt), b.astype(dt))
        f = plait.jit(L.solve_p.bind, backend="native")
        assert "host" not in f.lower(*args).compile().as_text("kernels")
        got = np.asarray(f(*args))
        want = np.asarray(plait.jit(L.solve_p.bind, backend="interp")(*args))
        assert np.isfinite(want[3]).all() and not all(np.isfinite(w).all() for w in want[:3])
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_svd_of_nonfinite_matrices_matches_interp_and_returns():
    """svd on matrices holding inf/NaN (every dtype and mode; the generated C skips
    gesdd on such a matrix): NaN batch entries, the finite ones NumPy's and bit for bit
    the reference backend's, in a child process with a timeout (gesdd never returns
    on one of the matrices, Reference-LAPACK/lapack#1409)."""
    rect = np.ones((2, 4, 3))
    exe = plait.jit(lambda a: L.svd(a), backend="native").lower(rect).compile()
    assert "host" not in exe.as_text("kernels") and "plait_allfinite_double(" in exe.as_text("c")
    check = Path(__file__).parents[1] / "lax" / "svd_nonfinite_check.py"
    out = subprocess.run([sys.executable, str(check), "interp", "native"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "ok"
