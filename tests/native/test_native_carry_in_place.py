"""Loop carries updated in place (``backends/native/inplace.py``, ``stripe/alias.py``).

A scan or while body that writes a carry's new value after its last read of the old one
runs with one buffer for both; every other carry keeps two. Values are checked against
NumPy loops and the interpreter, the caller's arrays must come back untouched, and
``memory_analysis`` shows how many buffers each carry got.
"""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from plait import lax
from plait.stripe import parse, to_text
from plait.stripe.alias import pointwise_update

SHAPE = (300, 200)
NBYTES = 300 * 200 * 4


def _adam(p, m, v, g, steps=5):
    def body(c, k):
        p, m, v = c
        gg = g * p
        m2 = 0.9 * m + 0.1 * gg
        v2 = 0.999 * v + 0.001 * gg * gg
        return (p - 0.001 * m2 / (pnp.sqrt(v2) + 1e-8), m2, v2), None
    return lax.scan(body, (p, m, v), None, length=steps)[0]


def _adam_numpy(p, m, v, g, steps=5):
    p, m, v = (x.astype(np.float64) for x in (p, m, v))
    for _ in range(steps):
        gg = g * p
        m = 0.9 * m + 0.1 * gg
        v = 0.999 * v + 0.001 * gg * gg
        p = p - 0.001 * m / (np.sqrt(v) + 1e-8)
    return p, m, v


def _arrays(n, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(n)]
    return out


def _peak(f, *args):
    return plait.jit(f, backend="native").lower(*args).compile().memory_analysis()["peak_temp_bytes"]


def test_an_optimizer_scan_updates_its_state_in_place():
    p, m, v, g = _arrays(4)
    v = np.abs(v)
    keep = [a.copy() for a in (p, m, v, g)]
    f = plait.jit(_adam, backend="native")
    got = f(p, m, v, g)
    for a, b in zip((p, m, v, g), keep):          # the caller's arrays stay as they were
        np.testing.assert_array_equal(a, b)
    for x, w in zip(got, _adam_numpy(p, m, v, g)):
        np.testing.assert_allclose(np.asarray(x), w, rtol=2e-5, atol=1e-6)
    # the same kernel run step by step, each step's result in new memory: bit for bit
    one = plait.jit(lambda p, m, v, g: _adam(p, m, v, g, steps=1), backend="native")
    state = (p, m, v)
    for _ in range(5):
        state = one(*state, g)
    for x, w in zip(got, state):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(w))
    # one scratch buffer per carry, not two
    assert _peak(_adam, p, m, v, g) == 3 * NBYTES
    c = f.lower(p, m, v, g).compile()
    # the kernel writing over its inputs declares those pointers without restrict
    body = next(t for t in c.as_text("c").split("\n\n") if "int64_t g1_k" in t and "sqrt" in t)
    plain = [ln for ln in body.splitlines() if "bufs[" in ln and "restrict" not in ln]
    assert len(plain) == 6, body


def test_a_carry_read_at_other_elements_keeps_two_buffers():
    x, = _arrays(1)

    def f(x):
        return lax.scan(lambda c, _: (c[::-1] * 0.5 + 1.0, None), x, None, length=3)[0]
    want = x.astype(np.float64)
    for _ in range(3):
        want = want[::-1] * 0.5 + 1.0
    np.testing.assert_allclose(np.asarray(plait.jit(f, backend="native")(x)), want, rtol=1e-6)
    assert _peak(f, x) == 2 * NBYTES


def test_a_carry_read_after_its_new_value_is_written_keeps_two_buffers():
    a, b = _arrays(2)

    def body(c, _):
        a, b = c
        a2 = a * 2.0 + 1.0
        return (a2, b + a2 * pnp.sum(a)), None      # a read whole after a2's elements

    def f(a, b):
        return lax.scan(body, (a, b), None, length=3)[0]
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    for _ in range(3):
        a2 = wa * 2.0 + 1.0
        wa, wb = a2, wb + a2 * wa.sum()
    ga, gb = plait.jit(f, backend="native")(a, b)
    np.testing.assert_allclose(np.asarray(ga), wa, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), wb, rtol=1e-5, atol=1e-6 * np.abs(wb).max())


def test_swapped_and_passed_through_carries():
    a, b, c = _arrays(3)

    def body(k, s):
        a, b, c = s
        return b + 1.0, a * 2.0, c                     # a swap, and c passed through

    def f(a, b, c):
        return lax.fori_loop(0, 5, body, (a, b, c))
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    for _ in range(5):
        wa, wb = wb + 1.0, wa * 2.0
    got = plait.jit(f, backend="native")(a, b, c)
    np.testing.assert_allclose(np.asarray(got[0]), wa, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), wb, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[2]), c)


def test_a_while_loop_updates_its_carry_in_place():
    x, = _arrays(1)

    def f(x):
        def cond(s):
            return s[1] < 4
        def body(s):
            return pnp.tanh(s[0]) * 0.9 + 0.05, s[1] + 1
        return lax.while_loop(cond, body, (x, 0))[0]
    want = x.astype(np.float64)
    for _ in range(4):
        want = np.tanh(want) * 0.9 + 0.05
    keep = x.copy()
    np.testing.assert_allclose(np.asarray(plait.jit(f, backend="native")(x)), want,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, keep)
    # one buffer per carry (the counter is updated in place too), and the body's 8-byte
    # temporary
    assert _peak(f, x) == NBYTES + 8 + 8


def test_pointwise_update_reads_the_order_of_a_fused_kernel():
    # T0 = 0.9 in2 + 0.1 in0 in1 (m), T1 = 0.999 in3 + ... (v), T2 = in1 - ... (p):
    # each new value is stored after the last load of its old value, but in0 (g) and
    # in1 (p) are loaded again after T0 is stored
    p, m, v, g = _arrays(4)
    c = plait.jit(_adam, backend="native").lower(p, m, v, g).compile()
    stripe = getattr(c.executable, "prepared", None) or c.executable.native.prepared
    (_, prog), = [s for s in stripe.stripe.values() if len(s[1].buffers) == 7]
    loads = sorted(b.name for b in prog.buffers if b.kind == "in")
    allowed = {(r, w) for r in loads for w in ("T0", "T1", "T2") if pointwise_update(prog, [r], w)}
    assert allowed == {("in2", "T0"), ("in3", "T1"), ("in1", "T2"),      # m, v, p
                       ("in0", "T1"), ("in0", "T2"), ("in2", "T1"), ("in2", "T2"),
                       ("in3", "T2")}, allowed
    assert not pointwise_update(prog, ["in0", "in2"], "T0")   # one of several reads fails
    assert not pointwise_update(prog, [], "T0")
    text = to_text(prog)
    assert pointwise_update(parse(text), ["in2"], "T0")
    # an output filled with its identity first is written before the kernel's loads
    filled = text.replace("#overwritten inout T0[0, 0]", "inout T0[0, 0]")
    assert not pointwise_update(parse(filled), ["in2"], "T0")
    assert pointwise_update(parse(filled), ["in3"], "T1")
    # fewer iterations than elements: some element could be stored twice
    half = text.replace("block [i0:300, i1:200]", "block [i0:150, i1:200]")
    assert half != text and not pointwise_update(parse(half), ["in2"], "T0")


def test_a_carry_a_later_step_still_reads_keeps_two_buffers():
    a, b = (x[:64, :64].copy() for x in _arrays(2))

    def body(k, s):
        a, b = s
        a2 = a * 0.5 + 1.0
        return a2, b + a2 @ a            # the product needs a2 and still reads a

    def f(a, b):
        return lax.fori_loop(0, 3, body, (a, b))
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    for _ in range(3):
        a2 = wa * 0.5 + 1.0
        wa, wb = a2, wb + a2 @ wa
    ga, gb = plait.jit(f, backend="native")(a, b)
    np.testing.assert_allclose(np.asarray(ga), wa, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), wb, rtol=1e-4, atol=1e-4 * np.abs(wb).max())
    assert _peak(f, a, b) >= 3 * 64 * 64 * 4     # a keeps two buffers, b one


def test_a_carry_whose_old_value_is_another_output_keeps_two_buffers():
    a, b, c = _arrays(3)

    def f(a, b, c):
        # b takes a's old value (copied after the body's kernels run), c sums the b's
        return lax.fori_loop(0, 4, lambda k, s: (s[0] * 2.0 + 1.0, s[0], s[1] + s[2]),
                             (a, b, c))
    wa, wb, wc = (x.astype(np.float64) for x in (a, b, c))
    for _ in range(4):
        wa, wb, wc = wa * 2.0 + 1.0, wa, wb + wc
    got = plait.jit(f, backend="native")(a, b, c)
    for x, w in zip(got, (wa, wb, wc)):
        np.testing.assert_allclose(np.asarray(x), w, rtol=1e-6, atol=1e-6 * np.abs(w).max())
