"""Interpreter details (specials, allocations, load_index, identities) and text round trips
of hand-written programs using every statement kind."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.stripe import (
    Affine, Block, Buffer, Constant, Index, Intrinsic, Load, LoadIndex, Program, Refinement,
    Special, Store, StripeParseError, StripeRuntimeError, agg_identity, parse, parse_affine,
    register_special, run, to_text, var, verify,
)
from plait.stripe.polyhedron import find_point, maximize, minimize

EVERYTHING = """\
program everything (
  in X f32(3, 4)
  in Idx i32(2)
  out S f32(3, 4) init assign
  out G f32(2, 4) init assign
  out R f32(3, 4) init max
)
#program
block [] ( // main
  in X[0, 0] f32(3, 4):(4, 1)
  in Idx[0] i32(2):(1)
  out S[0, 0]:assign f32(3, 4):(4, 1)
  out G[0, 0]:assign f32(2, 4):(4, 1)
  out R[0, 0]:assign f32(3, 4):(4, 1)
) {
  0: (S) = sort(X) {'axis': 1, 'descending': True}
  1: (G) = gather(X, Idx) {'axis': 0}
  2: #kernel #tiled
  block<CPU> [i:3] ( // rows
    // a row at a time, with a scratch row
    in X[i, 0] f32(1, 4):(4, 1)
    out R[i, 0]:max f32(1, 4):(4, 1)
    #scratch none T<REGISTER>[0, 0]:add f32(1, 4):(4, 1)
  ) {
    0:
    block [j:4, io = i, w:2 = i] ( // fill
      -w + 3 >= 0
      in X[0, j] f32(1, 1):(4, 1)
      out T[0, j]:add f32(1, 1):(4, 1)
    ) {
      0: $x = load(X)
      1: $i = load_index(io + 2*j):i32
      2: $c = (f32)0.5
      3: $n = (f32)-inf
      4: $k = cast($i):f32
      5: $y = mul($x, $c)
      6: $z = add($y, $k)
      7: T = store($z)
      8: T = store($c)
    }
    1: #copy
    block [j:4] (
      in T[0, j] f32(1, 1):(4, 1)
      out R[0, j]:max f32(1, 1):(4, 1)
    ) {
      0: $t = load(T)
      1: R = store($t)
    }
  }
}
"""


def test_everything_round_trips_and_runs():
    p = parse(EVERYTHING)
    assert to_text(p) == EVERYTHING
    assert parse(to_text(p)) == p
    verify(p)
    X = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    out = run(p, {"X": X, "Idx": np.array([2, 0], np.int32)})
    np.testing.assert_array_equal(out["S"], -np.sort(-X, axis=1))
    np.testing.assert_array_equal(out["G"], X[[2, 0]])
    i, j = np.indices((3, 4))
    # fill runs w in {i..i+1} & w <= 3 times: 1 or 2 writes of (x/2 + i + 2j) + 0.5
    w_count = np.minimum(2, 4 - i)
    np.testing.assert_allclose(out["R"], w_count * (X * 0.5 + i + 2 * j + 0.5))


def test_nan_constant_round_trip():
    b = Block(name="k", stmts=(Constant("$n", float("nan"), "f64"), Constant("$i", 7, "i32")))
    assert parse(to_text(b)) == b


def test_special_registry_and_missing_special():
    calls = []

    def twice(ins, params, shapes, dtypes):
        calls.append(params)
        return [ins[0] * params["k"]]

    register_special("scale_test", twice)
    text = EVERYTHING.replace("(S) = sort(X) {'axis': 1, 'descending': True}", "(S) = scale_test(X) {'k': 3}")
    p = parse(text)
    X = np.ones((3, 4), np.float32)
    assert (run(p, {"X": X, "Idx": np.zeros(2, np.int32)})["S"] == 3).all()
    assert calls == [{"k": 3}]
    bad = parse(EVERYTHING.replace("sort(X)", "nosuch(X)"))
    with pytest.raises(StripeRuntimeError, match="no interpreter implementation for special 'nosuch'"):
        run(bad, {"X": X, "Idx": np.zeros(2, np.int32)})


def test_scatter_special():
    p = Program("sc", (Buffer("X", "in", "f32", (5,)), Buffer("I", "in", "i32", (3,)),
                       Buffer("U", "in", "f32", (3,)), Buffer("O", "out", "f32", (5,), "assign")),
                Block(name="main", refs=tuple(
                    Refinement(d, n, n, (Affine(),), dt, (s,), (1,), agg)
                    for d, n, dt, s, agg in (("in", "X", "f32", 5, None), ("in", "I", "i32", 3, None),
                                              ("in", "U", "f32", 3, None), ("out", "O", "f32", 5, "assign"))),
                      stmts=(Special("scatter", ("X", "I", "U"), ("O",), {"axis": 0, "mode": "add"}),)))
    verify(p)
    assert parse(to_text(p)) == p
    out = run(p, {"X": np.zeros(5, np.float32), "I": np.array([1, 1, 4], np.int32),
                  "U": np.array([1, 2, 3], np.float32)})["O"]
    np.testing.assert_array_equal(out, [0, 3, 0, 0, 3])


def test_identities():
    assert agg_identity("add", "f32") == 0 and agg_identity("mul", "i32") == 1
    assert agg_identity("max", "f32") == -np.inf and agg_identity("min", "i8") == 127
    assert agg_identity("max", "bool") == False and agg_identity("assign", "f64") == 0  # noqa: E712


def test_runtime_input_errors():
    p = parse(EVERYTHING)
    with pytest.raises(StripeRuntimeError, match="missing input 'Idx'"):
        run(p, {"X": np.zeros((3, 4))})
    with pytest.raises(StripeRuntimeError, match=r"input 'X' has shape \(4, 3\), expected \(3, 4\)"):
        run(p, {"X": np.zeros((4, 3)), "Idx": np.zeros(2)})


def test_parse_errors_name_the_line():
    with pytest.raises(StripeParseError, match="line"):
        parse(EVERYTHING.replace("0: $x = load(X)", "0: $x = load X"))
    with pytest.raises(StripeParseError):
        parse("program p (\n  in A f32(1)\n)\nblock [] (\n) {\n")


def test_affine_text_and_arithmetic():
    x, y = var("x"), var("y")
    e = 2 * x - y + 3
    assert str(e) == "2*x - y + 3" and parse_affine(str(e)) == e
    assert str(-x) == "-x" and str(Affine()) == "0" and str(x - x) == "0"
    assert e.substitute({"x": y + 1}) == y + 5
    assert e.eval({"x": np.array([0, 1]), "y": 2}).tolist() == [1, 3]
    with pytest.raises(TypeError):
        x * y


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "x1", "yo"]), st.integers(-5, 5)), st.integers(-9, 9))
def test_affine_parse_print_property(coeffs, c):
    a = Affine.of(coeffs, c)
    assert parse_affine(str(a)) == a


def test_polyhedron_exactness():
    x, y = var("x"), var("y")
    box = [x, 10 - x, y, 10 - y]
    assert maximize(box + [7 - x - y], x + 2 * y) == 14
    assert minimize(box, x - y) == -10
    assert maximize([x - 5, 4 - x], x) is None  # empty
    assert maximize([x], x) == math.inf
    # 2x = 2y + 1 has no integer solution
    assert find_point(box + [2 * x - 2 * y - 1, 2 * y + 1 - 2 * x]) is None
    pt = find_point(box + [3 * x - 2 * y - 1, 2 * y + 1 - 3 * x])
    assert pt is not None and 3 * pt["x"] - 2 * pt["y"] == 1


def test_passthru_with_range_round_trips():
    b = Block(name="b", idxs=(Index("i", 3), Index("w", 2, var("i") * 2)))
    assert to_text(b).startswith("block [i:3, w:2 = 2*i] ( // b")
    assert parse(to_text(b)) == b


def test_apply_tile_rewrites_child_offsets_and_keeps_allocations():
    from plait.stripe import apply_tile, replace_stmt

    p = parse(EVERYTHING)
    rows = p.entry.stmts[2]
    inputs = {"X": np.arange(12, dtype=np.float32).reshape(3, 4), "Idx": np.array([1, 2], np.int32)}
    for t in (1, 2, 3):
        tiled = apply_tile(rows, {"i": t})
        inner = tiled.stmts[0]
        assert [r.into for r in inner.refs if r.dir == "none"] == ["T"]
        q = Program(p.name, p.buffers, replace_stmt(p.entry, rows, tiled))
        verify(q)
        assert parse(to_text(q)) == q
        for k, v in run(p, inputs).items():
            np.testing.assert_array_equal(run(q, inputs)[k], v)
