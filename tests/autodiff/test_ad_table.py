"""Every differentiable primitive: check_grads at order 2, forward and reverse, in
float32 and float64 (and complex where the row allows); rule coverage sweeps."""
import numpy as np
import pytest

from plait.core.primitive import ALL_PRIMITIVES
from plait.test_util import check_grads

from ad_cases import CASES, ZERO_DERIVATIVE

# primitives that a jvp rule applies to tangents: each needs a transpose rule
LINEAR = {"neg", "add", "sub", "mul", "div", "real", "imag", "conj", "complex", "select",
          "convert_element_type", "broadcast_in_dim", "reshape", "transpose", "squeeze",
          "expand_dims", "rev", "slice", "dynamic_slice", "dynamic_update_slice",
          "concatenate", "pad", "reduce_sum", "cumsum", "dot_general",
          "conv_general_dilated", "reduce_window_sum", "gather", "scatter", "scatter_add",
          "scatter_mul", "jit_call", "custom_lin", "fft",
          "psum", "all_gather", "psum_scatter", "all_to_all", "ppermute"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_check_grads_order2(c, dtype):
    rng = np.random.default_rng(0)
    args = c.make(rng, np.dtype(dtype))
    check_grads(c.fn, args, order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("c", [c for c in CASES if c.complex_ok], ids=lambda c: c.id)
def test_check_grads_complex(c):
    rng = np.random.default_rng(1)
    args = tuple(a + 0.3j * rng.uniform(0.5, 1.0, np.shape(a)) for a in
                 c.make(rng, np.dtype("float64")))
    check_grads(c.fn, args, order=1, modes=("fwd", "rev"))


def test_every_primitive_has_a_jvp_rule():
    missing = sorted(n for n, p in ALL_PRIMITIVES.items() if not p.has_rule("jvp"))
    assert not missing, f"primitives without a jvp rule: {missing}"


def test_every_linear_primitive_has_a_transpose_rule():
    missing = sorted(n for n in LINEAR if n in ALL_PRIMITIVES and
                     not ALL_PRIMITIVES[n].has_rule("transpose"))
    assert not missing, f"linear primitives without a transpose rule: {missing}"


def test_every_differentiable_primitive_is_in_the_table():
    """A primitive is covered by a check_grads row, has a zero derivative, or is a
    higher-order primitive tested elsewhere (control flow, jit_call, custom rules)."""
    tested = {c.prim.name for c in CASES}
    elsewhere = {"jit_call", "custom_jvp_call", "custom_vjp_call", "custom_lin", "cond",
                 "switch", "while", "while_loop", "scan", "while_lin", "custom_vmap_call",
                 # host callbacks: no derivative (pure/io) or none needed (debug)
                 "debug_callback", "pure_callback", "io_callback",
                 "schur",   # no derivative, as in JAX: its jvp rule raises (test_lax_linalg)
                 "remat", "checkpoint_name", "optimization_barrier",   # tests/core/test_core_remat.py
                 "tile_op",   # user Tile ops: tests/tile/test_tile_user.py
                 # collectives need a named axis: check_grads under vmap/pmap in
                 # tests/distributed/test_collectives.py
                 "psum", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
                 "ppermute", "axis_index",
                 # grad/jvp of pmap, orders 1-2: tests/distributed/test_collectives.py
                 "pmap_call"}
    untested = sorted(n for n in ALL_PRIMITIVES
                      if n not in tested | ZERO_DERIVATIVE | elsewhere)
    assert not untested, f"differentiable primitives with no check_grads row: {untested}"
