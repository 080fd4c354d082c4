"""The add-an-elementwise-primitive recipe (plait/transforms/RULES.md, ARCHITECTURE.md),
followed literally: a toy primitive defined in a module of its own, outside plait, by
one ``define(ElementwiseOp(...))`` block, runs eagerly, under jit on interp, native and
xla, under grad (against finite differences) and vmap, with no edit anywhere else."""
from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import plait
from plait.core.primitive import ALL_PRIMITIVES
from plait.test_util import check_grads

# the whole recipe: one block (plus the Python function users call)
TOY_MODULE = textwrap.dedent('''
    import numpy as np
    from plait.lax import elementwise as E
    from plait.lax.elementwise_spec import FLOAT, ElementwiseOp, define


    def _jvp(g, ans, x):
        d = E.add(E.abs(x), 1.0)
        return E.div(g, E.mul(d, d))


    toy_softsign_p = define(ElementwiseOp(
        "toy_softsign", 1, lambda x: x / (1 + np.abs(x)), (FLOAT,),
        jvp=(_jvp,),
        intrinsic="toy_softsign", c={"f": "({0} / (({ct})1 + fabs{f}({0})))"},
        composite=lambda x: E.div(x, E.add(E.abs(x), 1.0))))


    def toy_softsign(x):
        return toy_softsign_p.bind(x)
''')


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy_prim") / "toy_softsign_mod.py"
    path.write_text(TOY_MODULE)
    spec = importlib.util.spec_from_file_location("toy_softsign_mod", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    # the primitive tables of other test modules (in this process) list plait's own
    sys.modules.pop(spec.name, None)
    ALL_PRIMITIVES.pop("toy_softsign", None)


def _oracle(x):
    x64 = np.asarray(x, np.float64)
    return x64 / (1 + np.abs(x64))


X32 = np.linspace(-4, 4, 33).astype(np.float32)


def test_eager_and_every_backend(toy):
    want = _oracle(X32)
    got = toy.toy_softsign(X32)
    assert np.asarray(got).dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    f = lambda x: [toy.toy_softsign(x), toy.toy_softsign(x * 2.0)]
    for backend in ("interp", "native", "xla"):
        out = plait.jit(f, backend=backend)(X32)
        np.testing.assert_allclose(np.asarray(out[0]), want, rtol=1e-6, err_msg=backend)
        np.testing.assert_allclose(np.asarray(out[1]), _oracle(2 * X32), rtol=1e-6,
                                   err_msg=backend)


def test_native_compiles_it_to_c_and_xla_lowers_its_composite(toy):
    c = plait.jit(toy.toy_softsign, backend="native").lower(X32).compile().as_text("c")
    assert "fabsf(" in c          # the descriptor's C template, in a fused kernel
    hlo = plait.jit(toy.toy_softsign, backend="xla").lower(X32).as_text("stablehlo")
    assert "stablehlo.abs" in hlo and "stablehlo.divide" in hlo


def test_grad_against_finite_differences(toy):
    x = np.linspace(-3, 3, 7)
    check_grads(lambda v: toy.toy_softsign(v), (x,), order=2)
    g = plait.jit(plait.grad(lambda v: plait.numpy.sum(toy.toy_softsign(v))),
                  backend="native")(x)
    np.testing.assert_allclose(np.asarray(g), 1 / (1 + np.abs(x)) ** 2, rtol=1e-12)


def test_vmap(toy):
    xs = np.arange(12.0).reshape(3, 4) - 6
    got = plait.vmap(toy.toy_softsign, in_axes=1)(xs)
    np.testing.assert_allclose(np.asarray(got), _oracle(xs).T, rtol=1e-12)
    got = plait.jit(plait.vmap(toy.toy_softsign), backend="native")(xs)
    np.testing.assert_allclose(np.asarray(got), _oracle(xs), rtol=1e-12)
