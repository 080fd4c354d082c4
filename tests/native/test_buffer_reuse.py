"""A kernel writing into the buffer of an operand that dies in it
(``backends/native/inplace.buffer_reuses``): a product's result consumed only by the
elementwise kernel after it holds that kernel's result too, in the Python plan, in
the whole-program C driver (launches) and in loop bodies' drivers.

Values are checked against NumPy; the plan and the C driver show which buffer each
value took; operands read later, outputs, host results and kernels that read a
neighbour of the element they write keep their own buffers.
"""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.backends.native.plan import KernelCall

RNG = np.random.default_rng(7)
X = RNG.standard_normal((64, 48)).astype(np.float32)
W = RNG.standard_normal((48, 80)).astype(np.float32)
B = RNG.standard_normal(80).astype(np.float32)
W2 = (RNG.standard_normal((80, 80)) / 9).astype(np.float32)
NBYTES = 64 * 80 * 4


def _compiled(f, *args):
    return plait.jit(f, backend="native").lower(*args).compile()


def _reused(c) -> dict:
    """``{output slot: operand slot}`` of the plan's kernels that write into an operand."""
    return {s: a for st in c.executable.plan.steps if isinstance(st, KernelCall)
            for s, a in zip(st.buffers, st.allocs) if isinstance(a, int)}


def _dense(x, w, b):
    return pnp.tanh(x @ w + b)


def test_an_activation_writes_over_its_product():
    c = _compiled(_dense, X, W, B)
    assert c.as_text("kernels").splitlines() == ["cf0: native dot_general",
                                                 "k1: broadcast_in_dim, add, tanh"]
    plan = c.executable.plan
    gemm, kern = plan.steps
    assert _reused(c) == {kern.writes[0]: gemm.writes[0]}
    np.testing.assert_allclose(np.asarray(c(X, W, B)), np.tanh(X @ W + B), rtol=2e-5, atol=2e-6)
    # the product is made in the output's buffer, so the program holds no intermediate
    ma = c.memory_analysis()
    assert ma["output_bytes"] == NBYTES and ma["peak_temp_bytes"] == 0
    # the whole-program driver (a launch) computes the product into its output too
    src = c.as_text("c")
    assert "rc = cf0(b)" in src and "malloc" not in src.split("plait_main")[1]
    outs, job = c.executable.launch(X, W, B)
    job.wait()
    np.testing.assert_array_equal(outs[0], np.asarray(c(X, W, B)))


def test_a_chain_of_kernels_keeps_one_buffer():
    # y1 = tanh(x @ w) writes over the product; y1 + y1 @ w2 writes over y1, an output
    def f(x, w, w2):
        y1 = pnp.tanh(x @ w)
        return y1 + y1 @ w2
    c = _compiled(f, X, W, W2)
    assert [ln.split(":")[0] for ln in c.as_text("kernels").splitlines()] == ["cf0", "k1", "cf1",
                                                                             "k3"]
    reused = _reused(c)
    steps = c.executable.plan.steps
    assert reused == {steps[1].writes[0]: steps[0].writes[0],
                      steps[3].writes[0]: steps[1].writes[0]}
    y1 = np.tanh(X @ W)
    want = y1 + y1 @ W2
    np.testing.assert_allclose(np.asarray(c(X, W, W2)), want, rtol=2e-5, atol=2e-5)
    assert c.memory_analysis()["peak_temp_bytes"] == NBYTES    # y1 @ w2's product only
    driver = c.as_text("c").split("static int64_t plait_main")[1]
    assert "{ins[0], ins[1], outs[0]}; rc = cf0" in driver
    assert "{outs[0], outs[0]}; rc = k1" in driver
    outs, job = c.executable.launch(X, W, W2)
    job.wait()
    np.testing.assert_allclose(outs[0], want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", ["read later", "an output", "shifted", "transposed", "host"])
def test_operands_that_must_survive_keep_their_buffers(case):
    sq = RNG.standard_normal((48, 48)).astype(np.float32)
    f, args, want = {
        "read later": (lambda x, w: (lambda h: pnp.tanh(h) @ h.T)(x @ w), (X, W),
                       lambda: np.tanh(X @ W) @ (X @ W).T),
        "an output": (lambda x, w: (lambda h: (pnp.tanh(h), h))(x @ w), (X, W),
                      lambda: (np.tanh(X @ W), X @ W)),
        "shifted": (lambda x, w: (lambda h: h - pnp.roll(h, 1, axis=1))(x @ w), (X, W),
                    lambda: X @ W - np.roll(X @ W, 1, axis=1)),
        "transposed": (lambda x, w: (lambda h: h + h.T)(x @ w), (sq, sq),
                       lambda: sq @ sq + (sq @ sq).T),
        "host": (lambda x: pnp.exp(lax.sort(x * 2.0, dimension=0)), (X[0],),
                 lambda: np.exp(np.sort(2 * X[0]))),
    }[case]
    c = _compiled(f, *args)
    assert _reused(c) == {}
    if case == "host":      # not asked about the sort's result: the kernel keeps restrict
        kern = c.as_text("c").split("int64_t k2(void **bufs) {")[1].split("\n}\n")[0]
        assert "float *restrict b_0" in kern and "float *b_" not in kern
    got = c(*args)
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got],
                    want() if case == "an output" else [want()]):
        np.testing.assert_allclose(np.asarray(g), w, rtol=3e-5, atol=3e-4)


def test_a_donated_argument_wins_over_a_dying_operand():
    # momentum: k0 makes 0.9 v, the product follows, then one kernel makes
    # v2 = 0.9 v + x^T d and p2 = p - 0.1 v2: v2 could write over 0.9 v and p2 over the
    # product. Donated, v is dead before that kernel, so its first output, p2, takes
    # v's buffer instead (the caller gave it up); p is read by the kernel, so no output
    # takes p's, and v2 keeps writing over 0.9 v.
    from plait.core.trace import concrete_value
    d = RNG.standard_normal((64, 80)).astype(np.float32)

    def step(p, v, x, d):
        v2 = 0.9 * v + x.T @ d
        return p - 0.1 * v2, v2
    pv = RNG.standard_normal((48, 80)).astype(np.float32)
    vv = RNG.standard_normal((48, 80)).astype(np.float32)
    want_v = 0.9 * vv + X.T @ d
    want_p = pv - 0.1 * want_v
    f = plait.jit(step, backend="native", donate_argnums=(0, 1))
    p, v = plait.device_put(pv), plait.device_put(vv)
    c = f.lower(p, v, X, d).compile()
    assert c.as_text("kernels").splitlines() == ["k0: broadcast_in_dim, mul",
                                                 "cf0: native dot_general",
                                                 "k2: add, broadcast_in_dim, mul, sub"]
    steps = c.executable.plan.steps
    v2_slot, p2_slot = c.executable.plan.outputs[1], c.executable.plan.outputs[0]
    assert _reused(c) == {v2_slot: steps[0].writes[0], p2_slot: steps[1].writes[0]}
    ma = c.memory_analysis()
    assert ma["alias_bytes"] == 48 * 80 * 4
    assert ma["peak_temp_bytes"] == 48 * 80 * 4      # 0.9 v, alive until the last kernel
    assert plait.jit(step, backend="native").lower(p, v, X, d).compile() \
        .memory_analysis()["peak_temp_bytes"] == 0   # both made in the outputs' buffers
    ptr = concrete_value(v).__array_interface__["data"][0]
    got_p, got_v = f(p, v, X, d)
    assert concrete_value(got_p).__array_interface__["data"][0] == ptr
    assert v.is_deleted() and p.is_deleted()
    np.testing.assert_allclose(np.asarray(got_v), want_v, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(got_p), want_p, rtol=2e-5, atol=2e-5)


def test_a_loop_body_reuses_its_intermediates():
    # each iteration: tanh(c @ w2) writes over its product (an intermediate of the
    # body's driver); the new carry is the caller's buffer and takes no operand's place
    def f(c, w2):
        return lax.fori_loop(0, 4, lambda i, c: c + (pnp.tanh(c @ w2) @ w2) * 0.5, c)
    c0 = np.tanh(X @ W)
    want = c0.astype(np.float64)
    for _ in range(4):
        want = want + (np.tanh(want @ W2) @ W2) * 0.5
    c = _compiled(f, c0, W2)
    np.testing.assert_allclose(np.asarray(c(c0, W2)), want, rtol=1e-4, atol=1e-4)
    body = c.as_text("c").split("PLAIT_DRIVER static int64_t g1(")[1].split("\n}\n")[0]
    assert body.count("malloc(") == 2                  # the two products; tanh has none
    assert "{ void *b[] = {t0, t0}; rc = g1_k1(b); }" in body
    assert body.index("rc = cf3(b)") < body.index("free(t0); t0 = NULL;")   # freed once read


def _random_program(rng: np.random.Generator):
    """A random chain over ``a @ b`` of products, elementwise steps, reads of a neighbour
    or a transpose, reductions and values kept for a later step (so some operands die in
    the kernel reading them and some do not); returns ``f(a, b, c, d)``."""
    plan = []
    for _ in range(int(rng.integers(3, 8))):
        plan.append(str(rng.choice(["tanh", "affine", "relu", "mul_c", "add_c", "square",
                                    "matmul", "roll", "transpose", "colsum", "keep", "use_kept"])))

    def f(a, b, c, d):
        h, kept = a @ b, []
        for op in plan:
            if op == "tanh":
                h = pnp.tanh(h)
            elif op == "affine":
                h = h * 0.5 + 1.0
            elif op == "relu":
                h = pnp.maximum(h, 0.0)
            elif op == "mul_c":
                h = h * c
            elif op == "add_c":
                h = h + c
            elif op == "square":
                h = h * h * 0.1
            elif op == "matmul":
                h = h @ d
            elif op == "roll":
                h = h - pnp.roll(h, 1, axis=1)
            elif op == "transpose":
                h = h + h.T
            elif op == "colsum":
                h = h * (h.sum(axis=0) * 0.01)
            elif op == "keep":
                kept.append(h)
            elif kept:
                h = h + kept.pop()
        return h
    return f, plan


def test_random_chains_match_the_interpreter():
    # square operands (64: large enough for the GEMM library), so every step keeps the
    # shape; 12 programs in one jitted function
    rng = np.random.default_rng(11)
    n = 64
    a, b, c, d = ((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
                  for _ in range(4))
    programs = [_random_program(rng) for _ in range(12)]

    def batch(a, b, c, d):
        return [f(a, b, c, d) for f, _ in programs]
    c_native = _compiled(batch, a, b, c, d)
    assert _reused(c_native), "no program wrote into a dying operand"
    want = plait.jit(batch, backend="interp")(a, b, c, d)
    got = c_native(a, b, c, d)
    outs, job = c_native.executable.launch(a, b, c, d)
    job.wait()
    for (_, plan), g, o, w in zip(programs, got, outs, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4,
                                   err_msg=str(plan))
        np.testing.assert_allclose(o, np.asarray(w), rtol=1e-4, atol=1e-4, err_msg=str(plan))
