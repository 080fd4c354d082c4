"""Tile -> Stripe lowering: every hand-written program runs through the interpreter,
matches NumPy, passes the verifier and round-trips through the text format."""

import numpy as np
import pytest

from plait.stripe import TileLowerError, lower, parse, run, to_text, verify
from plait.tile import TileBuilder, variables
from stripe_programs import programs, random_inputs

PROGRAMS = programs()


@pytest.mark.parametrize("name,prog,ref", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_lowered_program_matches_numpy(name, prog, ref):
    sp = lower(prog)
    verify(sp)
    text = to_text(sp)
    assert parse(text) == sp
    assert to_text(parse(text)) == text
    inputs = random_inputs(prog, seed=1)
    if name == "maxpool_grad_select":  # make ties and matches happen
        inputs["O"] = inputs["I"].reshape(4, 2).max(1)
    got = run(sp, inputs)
    want = ref(*(inputs[n] for n in prog.inputs))
    want = want if isinstance(want, tuple) else (want,)
    for oname, w in zip(prog.outputs, want):
        g = got[oname]
        assert g.shape == np.shape(w)
        assert g.dtype == np.asarray(w).dtype or np.asarray(w).dtype.kind == g.dtype.kind
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)


def test_tags_and_structure():
    name, prog, _ = next(p for p in PROGRAMS if p[0] == "softmax")
    sp = lower(prog)
    kernels = sp.entry.stmts
    assert [("contraction" in k.tags, "eltwise" in k.tags) for k in kernels] == [
        (True, False), (False, True), (True, False), (False, True)]
    assert "agg_max" in kernels[0].tags and "agg_add" in kernels[2].tags
    assert "eltwise_exp" in kernels[1].tags and "eltwise_sub" in kernels[1].tags
    assert all("kernel" in k.tags for k in kernels)
    assert "program" in sp.entry.tags
    temps = [r for r in sp.entry.refs if r.dir == "none"]
    assert {r.agg for r in temps} == {"max", "add", "assign"}


def test_default_becomes_explicit_copy_block():
    _, prog, _ = next(p for p in PROGRAMS if p[0] == "concatenate")
    sp = lower(prog)
    copy = sp.entry.stmts[-2]
    assert {"copy", "default"} <= copy.tags
    final = sp.entry.stmts[-1]
    assert final.ref("O").dir == "inout"


def test_conv_constraints_are_exact():
    _, prog, _ = next(p for p in PROGRAMS if p[0] == "conv3x3_same")
    k = lower(prog).entry.stmts[0]
    # the bounding box of the input access is [-1, 6] on a size-6 dim: two constraints
    assert len(k.constraints) == 4
    assert dict((i.name, i.range) for i in k.idxs) == {
        "ci": 3, "co": 4, "kx": 3, "ky": 3, "n": 1, "x": 5, "y": 6}


def test_unbounded_index_is_a_clear_error():
    b = TileBuilder("bad")
    A = b.input("A", "f32", (4,))
    i, j, k = variables("i j k")
    # j and k only appear in their difference: each alone is unbounded
    b.output(b.contract(b.tensor("O", "f32", (4,)), (i,), "add", A[i], [k - j < 3]))
    with pytest.raises(TileLowerError, match="index 'j' .* cannot be bounded.*add a constraint"):
        lower(b.build())


def test_empty_contraction_keeps_initial_value():
    b = TileBuilder("empty")
    A = b.input("A", "f32", (4,))
    (i,) = variables("i")
    b.output(b.contract(b.tensor("O", "f32", (3,)), (i,), "add", A[i + 10]))
    sp = lower(b.build())
    verify(sp)
    np.testing.assert_array_equal(run(sp, {"A": np.ones(4, np.float32)})["O"], np.zeros(3))


def test_max_with_no_contribution_starts_at_identity():
    # the IR rule: an output starts at its aggregation's identity (max -> -inf)
    b = TileBuilder("ident")
    A = b.input("A", "f32", (4,))
    (i,) = variables("i")
    b.output(b.contract(b.tensor("O", "f32", (6,)), (i,), "max", A[i]))
    out = run(lower(b.build()), {"A": np.arange(4, dtype=np.float32)})["O"]
    np.testing.assert_array_equal(out, [0, 1, 2, 3, -np.inf, -np.inf])
