"""debug.print / debug.callback / pure_callback / io_callback: eager, jit (both
backends), vmap, grad, loops; effects survive DCE/CSE/LICM and keep program order."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.errors import CallbackError

BACKENDS = ["interp", "native"]


def _lines(capsys):
    return capsys.readouterr().out.strip().splitlines()


def test_print_eager(capsys):
    plait.debug.print("x={x} s={}", pnp.sum(pnp.arange(3.0)), x=np.arange(2))
    assert _lines(capsys) == ["x=[0 1] s=3.0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_under_jit_loops_cond(backend, capsys):
    def f(x):
        # two identical prints of an unused value: neither DCE nor CSE may drop one
        plait.debug.print("a {}", x[0])
        plait.debug.print("a {}", x[0])

        def body(i, c):
            plait.debug.print("fori {} {}", i, c)
            return c * 2.0
        y = lax.fori_loop(0, 3, body, x[1])

        def wbody(c):
            plait.debug.print("const")   # loop-invariant: LICM must not hoist it
            plait.debug.print("while {}", c)
            return c + 1
        k = lax.while_loop(lambda c: c < 2, wbody, 0)
        z = lax.cond(y > 0, lambda v: (plait.debug.print("pos {}", v), v)[1],
                     lambda v: v, y)

        def sbody(c, xi):
            plait.debug.print("scan {}", xi)
            return c + xi, c
        s, _ = lax.scan(sbody, 0.0, x)
        return z + k + s
    jf = plait.jit(f, backend=backend)
    out = jf(np.array([1.0, 3.0]))
    assert float(out) == 24.0 + 2 + 4.0
    expect = ["a 1.0", "a 1.0", "fori 0 3.0", "fori 1 6.0", "fori 2 12.0",
              "const", "while 0", "const", "while 1", "pos 24.0", "scan 1.0", "scan 3.0"]
    assert _lines(capsys) == expect
    jf(np.array([1.0, 3.0]))   # cached executable prints again
    assert _lines(capsys) == expect


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_vmap_and_grad(backend, capsys):
    def f(x):
        plait.debug.print("v {}", x)
        return pnp.sum(pnp.sin(x) ** 2)
    x = np.array([[0.5, 1.0], [2.0, 3.0]])
    g = plait.jit(plait.vmap(plait.grad(f)), backend=backend)(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.sin(x) * np.cos(x), rtol=1e-12)
    assert _lines(capsys) == ["v [0.5 1. ]", "v [2. 3.]"]   # per batch element, primals


def test_callback_order_and_values(capsys):
    seen = []
    def f(x):
        plait.debug.callback(lambda v: seen.append(("first", float(v))), x, ordered=True)
        plait.debug.callback(lambda v, tag: seen.append((tag, float(v))), x * 2, tag="second",
                             ordered=True)
        return x
    plait.jit(f, backend="interp")(np.float64(1.5))
    assert seen == [("first", 1.5), ("second", 3.0)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_pure_callback(backend):
    x = np.arange(6.0).reshape(2, 3)
    spec = plait.numpy.zeros(3)

    def f(v, method):
        return plait.pure_callback(lambda a: np.sin(a) + a.shape[0], spec, v,
                                   vmap_method=method)
    out = plait.jit(lambda v: f(v, None), backend=backend)(x[0])
    np.testing.assert_allclose(np.asarray(out), np.sin(x[0]) + 3)
    seq = plait.jit(plait.vmap(lambda v: f(v, "sequential")), backend=backend)(x)
    np.testing.assert_allclose(np.asarray(seq), np.sin(x) + 3)
    calls = []

    def g(a, b):
        calls.append((a.shape, b.shape))
        return a + b
    for method, bshape in [("expand_dims", (1, 3)), ("broadcast_all", (2, 3)),
                           ("legacy_vectorized", (3,))]:
        calls.clear()
        h = plait.vmap(lambda a, b: plait.pure_callback(g, np.zeros(3), a, b,
                                                        vmap_method=method), in_axes=(0, None))
        np.testing.assert_allclose(np.asarray(h(x, x[1])), x + x[1])
        assert calls == [((2, 3), bshape)]
    with pytest.raises(CallbackError, match="vmap_method"):
        plait.vmap(lambda v: f(v, None))(x)
    with pytest.raises(CallbackError, match="custom_jvp"):
        plait.grad(lambda v: pnp.sum(f(v, None)))(x[0])


def test_pure_callback_with_custom_jvp():
    @plait.custom_jvp
    def s(x):
        return plait.pure_callback(np.sin, np.zeros(3), x)

    @s.defjvp
    def _(p, t):
        return s(p[0]), pnp.cos(p[0]) * t[0]
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(np.asarray(plait.grad(lambda v: pnp.sum(s(v)))(x)), np.cos(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_io_callback_not_removed(backend, capsys):
    log = []

    def f(x):
        plait.experimental.io_callback(lambda a: (log.append(float(a)), a)[1], x, x,
                                       ordered=True)   # result unused: still runs
        return plait.experimental.io_callback(lambda a: a + 1, x, x)
    assert float(plait.jit(f, backend=backend)(np.float64(2.0))) == 3.0
    assert log == [2.0]
    with pytest.raises(CallbackError, match="ordered=True"):
        plait.vmap(f)(np.array([1.0, 2.0]))

    def g(x):
        return plait.experimental.io_callback(lambda a: (log.append(float(a)), a + 1)[1], x, x)
    assert [float(v) for v in plait.vmap(g)(np.array([1.0, 2.0]))] == [2.0, 3.0]
    assert log == [2.0, 1.0, 2.0]


# --- disable_jit, debug_nans / debug_infs -----------------------------------------

@pytest.fixture
def nans():
    plait.config.update("debug_nans", True)
    yield
    plait.config.update("debug_nans", False)


def _nan_fn(x):
    y = pnp.exp(x)
    z = pnp.log(x - 1.0)            # NAN_LINE: the first NaN comes from here
    return pnp.sqrt(y + z)


NAN_LINE = f"{__file__}:{[i for i, l in enumerate(open(__file__), 1) if 'NAN_LINE:' in l][0]}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_nans_jit_names_primitive_and_line(backend, nans):
    from plait.errors import PlaitFloatingPointError
    jf = plait.jit(_nan_fn, backend=backend)
    np.testing.assert_allclose(np.asarray(jf(np.array([2.0, 3.0]))),
                               np.sqrt(np.exp([2.0, 3.0]) + np.log([1.0, 2.0])))
    with pytest.raises(PlaitFloatingPointError, match="operation producing it is log") as e:
        jf(np.array([0.5, 2.0]))
    assert NAN_LINE in str(e.value)
    assert isinstance(e.value, FloatingPointError)


def test_debug_nans_eager_and_infs(nans):
    from plait.errors import PlaitFloatingPointError
    with pytest.raises(PlaitFloatingPointError, match="log produced a NaN") as e:
        _nan_fn(np.array([0.5, 2.0]))
    assert NAN_LINE in str(e.value)
    assert float(pnp.divide(1.0, np.float64(0.0))) == np.inf   # infs are not NaNs
    plait.config.update("debug_infs", True)
    try:
        with pytest.raises(PlaitFloatingPointError, match="div produced an infinity"):
            pnp.divide(1.0, np.float64(0.0))
        with pytest.raises(PlaitFloatingPointError, match="producing it is div"):
            plait.jit(lambda x: 1.0 / x)(np.float64(0.0))
    finally:
        plait.config.update("debug_infs", False)


def test_debug_nans_env(monkeypatch):
    from plait.config import Config
    monkeypatch.setenv("PLAIT_DEBUG_NANS", "1")
    monkeypatch.setenv("PLAIT_DISABLE_JIT", "1")
    c = Config()
    assert c.debug_nans and c.disable_jit and not c.debug_infs


def test_disable_jit(capsys):
    def f(x):
        print("concrete", type(x).__name__, float(x))   # a tracer would refuse float()
        return x + 1
    with plait.disable_jit():
        assert float(plait.jit(f)(np.float64(1.0))) == 2.0
        assert float(plait.jit(f)(np.float64(2.0))) == 3.0
    assert _lines(capsys) == ["concrete float64 1.0", "concrete float64 2.0"]
    assert not plait.config.disable_jit


def test_print_of_lazy_array_runs_when_reached(capsys):
    x = plait.lazy.asarray(np.arange(3.0))
    y = x * 2.0
    plait.debug.print("lazy {}", y)       # nothing uses its (no) outputs: still printed
    assert _lines(capsys) == ["lazy [0. 2. 4.]"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_in_backward_pass(backend, capsys):
    @plait.custom_vjp
    def f(x):
        return pnp.sin(x)

    def fwd(x):
        return pnp.sin(x), x

    def bwd(x, ct):
        plait.debug.print("bwd ct={} x={}", ct, x)
        return (ct * pnp.cos(x),)
    f.defvjp(fwd, bwd)
    g = plait.jit(plait.grad(lambda x: 3.0 * f(x)), backend=backend)(np.float64(0.5))
    assert float(g) == pytest.approx(3 * np.cos(0.5))
    assert _lines(capsys) == ["bwd ct=3.0 x=0.5"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_in_differentiated_while_runs_once_per_step(backend, capsys):
    # reverse mode of while recomputes steps; the recomputation must not print again
    def h(x):
        def body(c):
            plait.debug.print("it {}", c[0])
            return c[0] + 1, c[1] * 1.5
        return lax.while_loop(lambda c: c[0] < 2, body, (0, x))[1]
    assert float(plait.jit(plait.grad(h), backend=backend)(1.0)) == 2.25
    assert _lines(capsys) == ["it 0", "it 1"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_of_constants_is_not_folded(backend, capsys):
    f = plait.jit(lambda x: (plait.debug.print("hi {}", 3.0), plait.debug.print("hi"),
                             x + 1)[-1], backend=backend)
    assert float(f(1.0)) == 2.0 and float(f(2.0)) == 3.0
    assert _lines(capsys) == ["hi 3.0", "hi"] * 2
