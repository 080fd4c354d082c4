"""``#pragma GCC ivdep`` on innermost loops: emitted only where each written element is
touched by one iteration (the renderer's ``independent_iterations``), and the kernels
carrying it compute the right values when arguments alias (an array passed twice, a
donated buffer)."""
import re

import numpy as np

import plait
import plait.numpy as pnp
from plait.codegen.c_cpu import independent_iterations, render_program
from plait.stripe import lower
from plait.stripe.ir import Block
from plait.tile import TileBuilder, call, variables


def _adam(m, v, p, g):
    m2 = 0.1 * g + 0.9 * m
    v2 = 0.001 * g * g + 0.999 * v
    return m2, v2, p - 0.001 * (m2 / 0.5) / (pnp.sqrt(v2 / 0.25) + 1e-8)


def _adam_np(m, v, p, g):
    m2 = np.float32(0.1) * g + np.float32(0.9) * m
    v2 = np.float32(0.001) * g * g + np.float32(0.999) * v
    return m2, v2, p - np.float32(0.001) * (m2 / np.float32(0.5)) / (
        np.sqrt(v2 / np.float32(0.25)) + np.float32(1e-8))


def _arrays(n=4, shape=(40, 70)):
    rng = np.random.default_rng(0)
    return [rng.uniform(0.1, 1.0, shape).astype(np.float32) for _ in range(n)]


def _c(f, *args) -> str:
    return plait.jit(f, backend="native").lower(*args).compile().executable.as_text("c")


def test_adam_update_is_one_loop_without_overlap_checks():
    """m, v and the parameter update fuse through the outputs m and v into one loop,
    marked free of loop-carried dependences, and compute NumPy's values."""
    args = _arrays()
    src = _c(_adam, *args)
    assert re.search(r"kernel_\d+\+kernel_\d+\+kernel_\d+", src)
    assert src.count("#pragma GCC ivdep") >= 1
    got = plait.jit(_adam, backend="native")(*args)
    for x, w in zip(got, _adam_np(*args)):
        np.testing.assert_allclose(np.asarray(x), w, rtol=2e-6)


def test_one_array_passed_as_two_arguments():
    """The gradient is also the first moment: two buffers of the kernel are one array
    (only read), and the fused update still matches NumPy."""
    m, v, p = _arrays(3)
    got = plait.jit(_adam, backend="native")(m, v, p, m)
    for x, w in zip(got, _adam_np(m, v, p, m)):
        np.testing.assert_allclose(np.asarray(x), w, rtol=2e-6)


def test_donated_arguments_become_outputs_correctly():
    """Donated m, v, p: an output takes a donated buffer only after its last read, so
    the fused loop never writes what it reads; values match NumPy's on copies."""
    def step(m, v, p, g):
        m2, v2, p2 = _adam(m, v, p, g)
        return m2, v2, p2 + pnp.sum(p2) * 0.0

    m, v, p, g = _arrays()
    want = _adam_np(m.copy(), v.copy(), p.copy(), g)
    f = plait.jit(step, donate_argnums=(0, 1, 2), backend="native")
    for _ in range(2):     # the second call runs the compiled program on donated buffers
        got = [np.asarray(x) for x in f(m.copy(), v.copy(), p.copy(), g)]
    for x, w in zip(got, want):
        np.testing.assert_allclose(x, w, rtol=2e-6)


def _innermost(p) -> list[Block]:
    out = []

    def walk(b):
        kids = [s for s in b.stmts if isinstance(s, Block)]
        if not kids and b.idxs:
            out.append(b)
        for k in kids:
            walk(k)
    walk(p.entry)
    return out


def test_no_ivdep_where_iterations_write_one_element():
    """A float16 row sum accumulates into memory (no register accumulator for f16): each
    iteration of its innermost loop writes the same element, so that loop gets no
    ivdep; a loop writing an element per iteration does."""
    b = TileBuilder("rowsum")
    X = b.input("X", "f16", (6, 50))
    i, j = variables("i j")
    S = b.contract(b.tensor("S", "f16", (6,)), (i,), "add", X[i, j])
    Y = b.eltwise(b.tensor("Y", "f16", (6, 50)), call("mul", X, X))
    b.output(S, Y)
    prog = lower(b.build())
    roots = {buf.name: buf.name for buf in prog.buffers}
    leaves = _innermost(prog)
    verdict = {tuple(sorted(r.from_ for r in blk.refs if r.dir != "in")):
               independent_iterations(blk, blk.idxs[-1].name, roots) for blk in leaves}
    assert verdict == {("S",): False, ("Y",): True}
    src = render_program(prog, "k")
    first, second = src.index("/* kernel_0:"), src.index("/* kernel_1:")
    assert "S[" in src[first:second].split("*/")[0]          # the sum comes first
    assert "ivdep" not in src[first:second] and "ivdep" in src[second:]


def test_float16_row_sum_and_square_match_numpy():
    x = np.random.default_rng(1).uniform(-1, 1, (6, 50)).astype(np.float16)
    s, y = plait.jit(lambda a: (pnp.sum(a, axis=1), a * a), backend="native")(x)
    np.testing.assert_allclose(np.asarray(s, np.float32), x.astype(np.float32).sum(1),
                               rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(np.asarray(y), x * x)
