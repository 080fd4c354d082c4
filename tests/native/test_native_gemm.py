"""plait's own GEMM library (plait/codegen/c_gemm.py, plait/backends/native/gemm.py):
the library called directly on many shapes, strides, transposes, dtypes and batches,
and dot_general routed to it from jitted programs, through grad and inside a loop.

The oracle is NumPy in float64; the bound is the classical one for any summation
order, ``|C - C_ref| <= 2 K eps (|A| @ |B|)``."""
import ctypes

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.backends.native import gemm
from plait.backends.native.target import host_target

_EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps}


def _call(A, B):
    """``A @ B`` by ``plait_gemm_<s|d>`` over the arrays' own strides (3-d, batched)."""
    dt = A.dtype
    f = (gemm.library("s").plait_gemm_s if dt == np.float32
         else gemm.library("d").plait_gemm_d)
    f.restype = ctypes.c_int64
    f.argtypes = [ctypes.c_int64] * 4 + ([ctypes.c_void_p] + [ctypes.c_int64] * 3) * 3
    bt, M, K = A.shape
    N = B.shape[2]
    C = np.full((bt, M, N), np.nan, dt)
    sa = [s // dt.itemsize for s in A.strides]
    sb = [s // dt.itemsize for s in B.strides]
    status = f(bt, M, N, K, A.ctypes.data, *sa, B.ctypes.data, *sb, C.ctypes.data, M * N, N, 1)
    assert status == 0
    return C


def _check(got, A, B, dt):
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = A64 @ B64
    bound = 2 * max(A.shape[-1], 1) * _EPS[dt] * (np.abs(A64) @ np.abs(B64)) + 1e-300
    bad = ~(np.abs(np.asarray(got, np.float64) - ref) <= bound)   # NaN (unwritten C) too
    assert not bad.any(), (np.argwhere(bad)[:5], np.max(np.abs(got - ref) / bound))


def _operand(rng, shape, dt, transposed, step):
    """A (batch, r, c) operand: row-major, a transposed view, or every ``step``-th column
    of a wider array."""
    b, r, c = shape
    if transposed:
        return rng.standard_normal((b, c, r)).astype(dt).transpose(0, 2, 1)
    return rng.standard_normal((b, r, c * step)).astype(dt)[:, :, ::step]


_SHAPES = [(1, 1, 1, 1), (1, 7, 13, 5), (1, 6, 64, 680), (2, 1, 77, 50), (2, 77, 1, 50),
           (1, 300, 5, 700), (5, 17, 19, 23), (1, 131, 67, 301), (3, 8, 200, 33),
           (1, 128, 257, 97), (40, 30, 30, 30), (1, 2, 3, 1500), (1, 193, 390, 1361), (1, 300, 31, 90), (2, 29, 8, 700), (1, 500, 17, 40),
           (1, 30, 1000, 2000), (1, 16, 300, 100),
           (1, 700, 6, 1100), (1, 520, 40, 300),   # narrow past KC; several A slabs
           (1, 1, 1, 4099),
           (1, 20, 100, 37),   # B transposed: vector blocks, a ragged panel and depth tail
           (1, 203, 1, 7), (1, 66, 1, 128)]   # matrix-vector: K under one vector, whole vectors


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_library_against_numpy(dt):
    rng = np.random.default_rng(1)
    for bt, M, N, K in _SHAPES:
        for ta, tb, step in ((0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 1), (0, 0, 2)):
            A = _operand(rng, (bt, M, K), dt, ta, step)
            B = _operand(rng, (bt, K, N), dt, tb, step)
            _check(_call(A, B), A, B, dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_every_ragged_row_panel_height(dt):
    """M = 2 MR + r for every edge height r of the main and the narrow tile (each has its
    own micro-kernel), with K past one panel (the edge kernel accumulates into C) and
    transposed operands."""
    rng = np.random.default_rng(3)
    main, narrow = [p for p in gemm.blockings(host_target())
                    if p[0].ctype == ("float" if dt == np.float32 else "double")][0]
    for b, N in ((main, 2 * main.nr + 3), (narrow, narrow.nr - 1)):
        for r in range(1, b.mr):
            M, K = 2 * b.mr + r, b.kc + 5
            for ta, tb in ((0, 0), (1, 1)):
                A = _operand(rng, (1, M, K), dt, ta, 1)
                B = _operand(rng, (1, K, N), dt, tb, 1)
                _check(_call(A, B), A, B, dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_every_column_edge_of_whole_vectors(dt):
    """N = NR + v vectors for every edge width v of the main tile: the last column panel
    runs its own MR x v micro-kernel writing C in place (with K past one panel it
    accumulates into C, which starts as NaN), a ragged last row panel beside it the
    temporary tile; both operand orders."""
    rng = np.random.default_rng(4)
    main = [p for p in gemm.blockings(host_target())
            if p[0].ctype == ("float" if dt == np.float32 else "double")][0][0]
    src = "".join(gemm.library_source(host_target(), main.suffix))
    for v in range(1, main.vecs):
        for form in ("", "r"):     # A packed or read by columns; A read by rows
            assert f"uk{form}_{main.suffix}_v{v}(kc, a, lda, b, ldb, c, ldc, first)" in src
        N = main.nr + v * main.vlen
        for M in (4 * main.mr, 4 * main.mr + 1):
            for ta, tb in ((0, 0), (1, 1)):
                A = _operand(rng, (1, M, main.kc + 7), dt, ta, 1)
                B = _operand(rng, (1, main.kc + 7, N), dt, tb, 1)
                _check(_call(A, B), A, B, dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_small_m_every_way_a_is_read(dt):
    """M = 1 .. 64 (the VAE's and MNIST's batch rows: one to ten row panels, so B is
    read in place or packed) with odd N (a ragged column panel), K past one panel, in a
    batch of two, for each way the library reads A: in place by rows (row-major), in
    place by columns (transposed), and packed (every second column of a wider array),
    against B row-major and transposed."""
    rng = np.random.default_rng(5)
    main = [p for p in gemm.blockings(host_target())
            if p[0].ctype == ("float" if dt == np.float32 else "double")][0][0]
    for M in (1, 2, 5, 6, 7, 13, 32, 47, 48, 49, 64):
        N, K = (37, 2 * main.nr + 1, 3 * main.nr + 19)[M % 3], main.kc + 3 + M
        for ta, step in ((0, 1), (1, 1), (0, 2)):
            for tb in (0, 1):
                A = _operand(rng, (2, M, K), dt, ta, step)
                B = _operand(rng, (2, K, N), dt, tb, 1)
                _check(_call(A, B), A, B, dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_skinny_products(dt):
    """Few columns (N = 1 .. 20: the narrow tile, its ragged last panel masked where the
    vectors are 64 bytes) for every depth K = 1 .. 40, few rows (B read in place, its
    ragged panel with masked loads) and many (B packed), in a batch of two, with A and B
    row-major and transposed (A read by rows, by columns; B packed by rows, transposed);
    then K past the narrow tile's panel depth (C accumulated through the masked stores),
    and short depths under many columns (the main tile)."""
    rng = np.random.default_rng(6)
    main, narrow = [p for p in gemm.blockings(host_target())
                    if p[0].ctype == ("float" if dt == np.float32 else "double")][0]
    for N in range(1, 21):
        for K in range(1, 41):
            M = (2 * narrow.mr + 5, 9 * narrow.mr + 1)[(N + K) % 2]
            ta, tb = (N % 2, K % 2) if K % 3 else (1 - N % 2, 1 - K % 2)
            A = _operand(rng, (2, M, K), dt, ta, 1)
            B = _operand(rng, (2, K, N), dt, tb, 1)
            _check(_call(A, B), A, B, dt)
    for N in (narrow.vlen - 3, narrow.vlen + 4, 2 * narrow.vlen - 1):
        for M, ta, tb in ((narrow.mr + 3, 0, 0), (11 * narrow.mr + 2, 1, 0), (narrow.mr, 0, 1)):
            A = _operand(rng, (1, M, narrow.kc + 9), dt, ta, 1)
            B = _operand(rng, (1, narrow.kc + 9, N), dt, tb, 1)
            _check(_call(A, B), A, B, dt)
    for K in (1, 2, 7, 10, 17, 20, 33):
        for M, N, ta, tb in ((32, 520, 0, 1), (130, 1000, 0, 1), (64, 700, 1, 0)):
            A = _operand(rng, (1, M, K), dt, ta, 1)
            B = _operand(rng, (1, K, N), dt, tb, 1)
            _check(_call(A, B), A, B, dt)


def test_library_broadcast_batch_and_zero_depth():
    """A batch stride of 0 (one operand shared by every product) and K = 0 (zeros)."""
    rng = np.random.default_rng(2)
    A = np.broadcast_to(rng.standard_normal((1, 20, 30)), (4, 20, 30))
    B = rng.standard_normal((4, 30, 70))
    _check(_call(A, B), A, B, np.float64)
    Z = _call(np.ones((2, 3, 0)), np.ones((2, 0, 5)))
    assert (Z == 0).all()


def test_blocking_follows_the_target_caches():
    small = host_target().__class__(**{**host_target().__dict__, "l1_bytes": 8192,
                                       "l2_bytes": 1 << 18})
    s_small, s_host = gemm.blockings(small)[0][0], gemm.blockings(host_target())[0][0]
    if host_target().l2_bytes > 1 << 18:
        assert s_small.kc < s_host.kc
    assert s_small.kc * s_small.nr * 4 <= (1 << 18) // 8              # B panel: L2 / 8
    assert s_small.m3 % s_small.mr == 0 and s_small.m3 * s_small.kc * 4 <= (1 << 18) // 2
    assert s_small.n2 % s_small.nr == 0
    narrow = gemm.blockings(small)[0][1]
    assert narrow.kc * narrow.nr * 4 <= (1 << 18) // 8                # narrow: L2 / 8 too


_EINSUMS = [  # (spec, lhs shape, rhs shape)
    ("ij,jk->ik", (64, 96), (96, 80)),
    ("ji,jk->ik", (96, 61), (96, 83)),            # transposed lhs
    ("ij,kj->ik", (61, 96), (83, 96)),            # transposed rhs
    ("bij,bjk->bik", (3, 40, 50), (3, 50, 45)),
    ("bij,bkj->bik", (3, 40, 50), (3, 45, 50)),
    ("ibj,jk->bik", (40, 3, 50), (50, 45)),       # batch inside the operand
    ("ijk,jkl->il", (17, 8, 13), (8, 13, 300)),   # two contracting dimensions
    ("ij,j->i", (257, 300), (300,)),              # matrix-vector
    ("j,jk->k", (300,), (300, 257)),              # vector-matrix
    ("ij,jk->ik", (1, 512), (512, 509)),          # M = 1
    ("ij,jk->ik", (8, 700), (700, 130)),          # M = 8
    ("ij,jk->ik", (128, 701), (701, 1)),          # N = 1
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_dot_general_calls_the_library(dt):
    rng = np.random.default_rng(3)
    ops = [(s, rng.standard_normal(a).astype(dt), rng.standard_normal(b).astype(dt))
           for s, a, b in _EINSUMS]

    def f(*xs):
        return [pnp.einsum(s, x, y) for (s, _, _), x, y in zip(ops, xs[::2], xs[1::2])]
    args = [a for _, x, y in ops for a in (x, y)]
    jf = plait.jit(f, backend="native")
    plan = jf.lower(*args).compile().as_text("kernels")
    assert plan.count("native dot_general") >= len(_EINSUMS) - 1, plan
    for (s, x, y), got in zip(ops, jf(*args)):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        ref = np.einsum(s, x64, y64)
        bound = 2 * (x.size * y.size) ** 0.5 * _EPS[dt] * np.einsum(s, abs(x64), abs(y64))
        assert (np.abs(np.asarray(got) - ref) <= bound + 1e-300).all(), s


def test_grad_through_the_library():
    rng = np.random.default_rng(4)
    W1, W2 = rng.standard_normal((100, 130)) * 0.1, rng.standard_normal((130, 70)) * 0.1
    x = rng.standard_normal((150, 100))

    def loss(W1, W2):
        return pnp.sum(pnp.tanh(x @ W1) @ W2 ** 2)
    g1, g2 = plait.jit(plait.grad(loss, argnums=(0, 1)), backend="native")(W1, W2)
    h = np.tanh(x @ W1)
    G = np.ones((150, 70))
    np.testing.assert_allclose(np.asarray(g2), 2 * W2 * (h.T @ G), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(g1), x.T @ ((G @ (W2 ** 2).T) * (1 - h ** 2)),
                               rtol=1e-10, atol=1e-12)


_TRANSPOSED = [  # (name, function, operand shapes): every transpose read only by GEMMs
    ("a @ b.T", lambda a, b: a @ b.T, ((90, 70), (110, 70))),
    ("a.T @ b", lambda a, b: a.T @ b, ((70, 90), (70, 110))),
    ("a.T @ b.T", lambda a, b: a.T @ b.T, ((70, 90), (110, 70))),
    ("batched a @ swapaxes(b)", lambda a, b: a @ pnp.swapaxes(b, 1, 2), ((3, 40, 50), (3, 60, 50))),
    ("batch dimension moved", lambda a, b: pnp.transpose(a, (1, 0, 2)) @ b,
     ((40, 3, 50), (3, 50, 60))),
    ("one transpose read three times", lambda a, b: (a.T @ b, a.T @ a.T), ((70, 70), (70, 60))),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", _TRANSPOSED, ids=[c[0] for c in _TRANSPOSED])
def test_transposes_read_by_gemms_are_folded(dt, case):
    """No transposed copy: the GEMM packs the operand from its strides (the program has
    no transpose kernel), values against NumPy in float64."""
    _, fn, shapes = case
    rng = np.random.default_rng(12)
    a, b = (rng.standard_normal(s).astype(dt) for s in shapes)
    jf = plait.jit(fn, backend="native")
    plan = jf.lower(a, b).compile().as_text("kernels")
    assert "transpose" not in plan and "native dot_general" in plan, plan
    got, want = jf(a, b), fn(a.astype(np.float64), b.astype(np.float64))
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.dtype == dt
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=0,
                                   atol=200 * _EPS[dt] * np.abs(w).max())


_KEPT = [  # (name, function, operand shapes): a transpose that must stay
    ("second reader not a GEMM", lambda a, b: (a @ b.T, pnp.tanh(b.T)), ((90, 70), (110, 70))),
    ("graph output", lambda a, b: (a @ b.T, b.T), ((90, 70), (110, 70))),
    ("free dimensions reordered", lambda a, b: pnp.transpose(a, (2, 1, 0)) @ b,
     ((50, 6, 30), (50, 40))),
]


@pytest.mark.parametrize("case", _KEPT, ids=[c[0] for c in _KEPT])
def test_transposes_with_other_readers_are_kept(case):
    _, fn, shapes = case
    rng = np.random.default_rng(13)
    a, b = (rng.standard_normal(s) for s in shapes)
    jf = plait.jit(fn, backend="native")
    assert "transpose" in jf.lower(a, b).compile().as_text("kernels")
    got, want = jf(a, b), fn(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)


def test_matvec_loop_stays_native():
    """Power iteration with a 400x400 matrix-vector product per step: one C loop."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((400, 400))
    A = A @ A.T / 400

    def power(A, v):
        def body(i, v):
            w = A @ v
            return w / pnp.linalg.norm(w)
        return lax.fori_loop(0, 30, body, v)
    jf = plait.jit(power, backend="native")
    v0 = np.ones(400) / 20
    exe = jf.lower(A, v0).compile()
    plan = exe.as_text("kernels").splitlines()
    assert not any(line.startswith("host") for line in plan), plan
    assert "plait_gemm_fn[" in exe.as_text("c")
    v = v0
    for _ in range(30):
        v = A @ v
        v = v / np.linalg.norm(v)
    np.testing.assert_allclose(np.asarray(jf(A, v0)), v, rtol=1e-10, atol=1e-12)


_CONVS = [  # lhs shape, rhs shape, window strides, padding, rhs dilation, layouts
    ((2, 9, 9, 16), (3, 3, 16, 32), (1, 1), ((1, 1), (1, 1)), (1, 1), ("NHWC", "HWIO", "NHWC")),
    ((2, 16, 9, 9), (32, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), ("NCHW", "OIHW", "NCHW")),
    ((2, 11, 10, 8), (3, 2, 8, 24), (2, 1), ((0, 1), (2, 0)), (1, 2), ("NHWC", "HWIO", "NHWC")),
    ((3, 8, 8, 64), (1, 1, 64, 70), (1, 1), ((0, 0), (0, 0)), (1, 1), ("NHWC", "HWIO", "NHWC")),
    ((2, 30, 12), (5, 12, 40), (1,), ((2, 2),), (1,), ("NWC", "WIO", "NWC")),
    ((1, 14, 14, 32), (3, 3, 32, 48), (1, 1), ((-1, 1), (1, 1)), (1, 1), ("NHWC", "HWIO", "NCHW")),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_convolutions_call_the_library(dt):
    """Layouts, strides, negative padding, kernel dilation, 1-d and 1x1, against interp."""
    rng = np.random.default_rng(6)
    args = []
    for ls, rs, *_ in _CONVS:
        args += [rng.standard_normal(ls).astype(dt), rng.standard_normal(rs).astype(dt)]

    def f(*xs):
        return [lax.conv_general_dilated(x, w, st, pd, rhs_dilation=rd, dimension_numbers=dn)
                for (_, _, st, pd, rd, dn), x, w in zip(_CONVS, xs[::2], xs[1::2])]
    jn = plait.jit(f, backend="native")
    plan = jn.lower(*args).compile().as_text("kernels")
    assert plan.count("native conv_general_dilated") == len(_CONVS), plan
    tol = 1e-5 if dt == np.float32 else 1e-13
    for got, want in zip(jn(*args), plait.jit(f, backend="interp")(*args)):
        want = np.asarray(want)
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=tol * np.abs(want).max())


def test_conv_net_gradient_matches_interp():
    """jit(grad) of a small conv net: the weight- and input-gradient convolutions."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 12, 12, 16))
    w1 = rng.standard_normal((3, 3, 16, 32)) * 0.1
    w2 = rng.standard_normal((3, 3, 32, 24)) * 0.1

    def loss(w1, w2, x):
        dn = ("NHWC", "HWIO", "NHWC")
        h = pnp.tanh(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn))
        y = lax.conv_general_dilated(h, w2, (1, 1), "SAME", dimension_numbers=dn)
        return pnp.sum(y ** 2)
    g = plait.grad(loss, argnums=(0, 1, 2))
    gn = plait.jit(g, backend="native")
    plan = gn.lower(w1, w2, x).compile().as_text("kernels")
    assert plan.count("native conv_general_dilated") >= 4, plan
    for a, b in zip(gn(w1, w2, x), plait.jit(g, backend="interp")(w1, w2, x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-11)


def test_weight_gradient_accumulates_over_im2col_chunks():
    """A kernel gradient whose im2col (8 images of 64x64) spans several L3-sized column
    chunks, each chunk's GEMM added to the result."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 64, 64, 4))
    w = rng.standard_normal((3, 3, 4, 8))
    r = rng.standard_normal((8, 64, 64, 8))

    def f(w, x, r):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return pnp.sum(y * r)
    g = plait.grad(f)
    gn = plait.jit(g, backend="native")
    assert "native conv_general_dilated" in gn.lower(w, x, r).compile().as_text("kernels")
    np.testing.assert_allclose(np.asarray(gn(w, x, r)),
                               np.asarray(plait.jit(g, backend="interp")(w, x, r)),
                               rtol=1e-11, atol=1e-10)


_PHASE_CONVS = [  # lhs, rhs, window strides, padding, lhs dilation, rhs dilation, groups, layouts
    ((2, 7, 7, 16), (3, 3, 16, 24), (1, 1), ((2, 3), (2, 3)), (2, 2), (1, 1), 1,
     ("NHWC", "HWIO", "NHWC")),
    ((2, 16, 6, 5), (24, 16, 4, 4), (1, 1), ((3, 4), (1, 2)), (2, 2), (1, 1), 1,
     ("NCHW", "OIHW", "NCHW")),
    ((4, 9, 10, 12), (3, 5, 12, 20), (2, 1), ((1, 0), (-1, 2)), (3, 2), (2, 1), 1,
     ("NHWC", "HWIO", "NHWC")),
    ((2, 9, 8, 12), (2, 2, 12, 16), (1, 1), ((0, 0), (0, 0)), (4, 4), (1, 1), 1,
     ("NHWC", "HWIO", "NHWC")),
    ((6, 16, 10), (5, 10, 24), (1,), ((4, 4),), (2,), (1,), 1, ("NWC", "WIO", "NWC")),
    ((8, 20, 20, 24), (3, 3, 6, 32), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 4,
     ("NHWC", "HWIO", "NHWC")),
    ((6, 23, 23, 16), (2, 5, 5, 30), (1, 1), ((0, -1), (0, -1)), (1, 1), (2, 2), 3,
     ("CHWN", "IHWO", "HWNC")),
    ((12, 16, 16, 18), (4, 4, 6, 12), (1, 1), ((3, 4), (3, 4)), (2, 2), (1, 1), 3,
     ("NHWC", "HWIO", "NHWC")),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_input_dilated_and_grouped_convolutions_call_the_library(dt):
    """Input dilation (a strided convolution's input gradient, run by output phase),
    with window strides, kernel dilation, negative padding, 1-d, NCHW, a phase with no
    taps (dilation 4 > kernel 2), and feature groups in several layouts, against interp."""
    rng = np.random.default_rng(9)
    args = []
    for ls, rs, *_ in _PHASE_CONVS:
        args += [rng.standard_normal(ls).astype(dt), rng.standard_normal(rs).astype(dt)]

    def f(*xs):
        return [lax.conv_general_dilated(x, w, st, pd, lhs_dilation=ld, rhs_dilation=rd,
                                         dimension_numbers=dn, feature_group_count=g)
                for (_, _, st, pd, ld, rd, g, dn), x, w in zip(_PHASE_CONVS, xs[::2], xs[1::2])]
    jn = plait.jit(f, backend="native")
    plan = jn.lower(*args).compile().as_text("kernels")
    assert plan.count("native conv_general_dilated") == len(_PHASE_CONVS), plan
    tol = 1e-5 if dt == np.float32 else 1e-13
    for got, want in zip(jn(*args), plait.jit(f, backend="interp")(*args)):
        want = np.asarray(want)
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=tol * np.abs(want).max())


def test_per_example_gradients_of_a_strided_conv_net():
    """vmap(grad) of a strided conv net (DP-SGD's per-example gradients): the input
    gradient is input-dilated (run by the library) and the per-example kernel gradients
    feature-grouped (small groups: fused kernels); all match interp."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((8, 1, 24, 24, 4))
    w1 = rng.standard_normal((4, 4, 4, 16)) * 0.3
    w2 = rng.standard_normal((3, 3, 16, 16)) * 0.3

    def loss(w1, w2, x):
        dn = ("NHWC", "HWIO", "NHWC")
        h = pnp.tanh(lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=dn))
        y = lax.conv_general_dilated(h, w2, (2, 2), "VALID", dimension_numbers=dn)
        return pnp.sum(y ** 2)
    g = plait.vmap(plait.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0))
    gn = plait.jit(g, backend="native")
    plan = gn.lower(w1, w2, x).compile().as_text("kernels")
    assert plan.count("native conv_general_dilated") >= 3, plan
    for a, b in zip(gn(w1, w2, x), plait.jit(g, backend="interp")(w1, w2, x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-11)


def test_convolution_over_many_im2col_chunks_matches_interp():
    """A convolution whose im2col spans many L3-sized row chunks (32x32 images, 576
    columns), taken one chunk per thread, against interp."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 32, 32, 64)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 24)).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    jn = plait.jit(f, backend="native")
    assert "native conv_general_dilated" in jn.lower(x, w).compile().as_text("kernels")
    want = np.asarray(plait.jit(f, backend="interp")(x, w))
    np.testing.assert_allclose(np.asarray(jn(x, w)), want, rtol=0,
                               atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("L", [1, 15, 16, 17, 100, 128, 129])
def test_matrix_vector_products_split_over_the_threads(dt, L):
    """Both orientations of a matrix-vector product large enough to split over threads:
    ``X @ v`` (dot products along rows) and ``X.T @ u`` (L contiguous outputs; at most
    eight vectors of them summed by row ranges in registers), each called three times
    (the threads claim their blocks by affinity), against float64."""
    rng = np.random.default_rng(L)
    X = rng.standard_normal((1, 5000, L)).astype(dt)
    u = rng.standard_normal((1, 5000, 1)).astype(dt)
    v = rng.standard_normal((1, L, 1)).astype(dt)
    XT = X.transpose(0, 2, 1)
    for _ in range(3):
        _check(_call(X, v), X, v, dt)
        _check(_call(XT, u), XT, u, dt)
        _check(_call(u.transpose(0, 2, 1), X), u.transpose(0, 2, 1), X, dt)   # M = 1
