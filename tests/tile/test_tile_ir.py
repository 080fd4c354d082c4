"""The Tile IR: construction helpers, validation errors and deterministic text."""

import pytest

from plait.tile import (
    Access, Affine, Call, Const, Constraint, Contraction, Elementwise, IndexValue, Input, Program,
    Tensor, TileBuilder, TileError, call, constant, contraction, elementwise, format_expr,
    format_stmt, iota, var, variables,
)


def test_affine_basics():
    i, j = variables("i j")
    e = 3 * i - j + 2
    assert str(e) == "3*i - j + 2"
    assert e.coeff("i") == 3 and e.vars == ("i", "j") and not e.is_const
    assert (e - 3 * i + j).is_const and (e - 3 * i + j).const == 2
    assert isinstance(i < 4, Constraint) and str(j < 4) == "j < 4"
    assert Affine.of({"i": 0, "k": 1}) == var("k")


def test_contraction_text_forms():
    A, B, C = Tensor("A", "f32", (4, 8)), Tensor("B", "f32", (8, 16)), Tensor("C", "f32", (4, 16))
    i, j, k = variables("i j k")
    s = contraction(C, (i, j), "add", A[i, k] * B[k, j])
    assert format_stmt(s, C.shape) == "C[i, j : 4, 16] = +(A[i, k] * B[k, j])"
    s = contraction("M", (i,), "max", A[i, k], [k < 3])
    assert format_stmt(s, (4,)) == "M[i : 4] = >(A[i, k]), k < 3"
    s = contraction("O", (i + 1,), "assign", A[i, 0], default="D")
    assert format_stmt(s, (5,)) == "O[i + 1 : 5] = =(A[i, 0]) default D"
    s = contraction("G", (i,), "add", A[i, 0].eq(B[0, i]).select(C[i, 0]))
    assert format_stmt(s, (4,)) == "G[i : 4] = +(A[i, 0] == B[0, i] ? C[i, 0])"
    s = contraction("S", (), "min", A[i, k])
    assert format_stmt(s, ()) == "S[] = <(A[i, k])"
    s = contraction("P", (i, j), "mul", A[i, 0] + B[0, j])
    assert format_stmt(s, (4, 16)) == "P[i, j : 4, 16] = *(A[i, 0] + B[0, j])"
    assert s.index_vars == ("i", "j")


def test_elementwise_text():
    e = call("select", call("cmp_lt", "X", constant(0.0, "f32")), constant(0, "i32"), iota(1, "i32"))
    assert format_expr(e) == "select(cmp_lt(X, 0.0:f32), 0:i32, index(1):i32)"
    assert format_expr(call("cast", "X", dtype="f16")) == "cast<f16>(X)"
    assert constant(float("nan"), "f32") == constant(float("nan"), "f32")
    assert constant(1, "f32") != constant(1.0, "f32")


def test_program_text_is_deterministic():
    b = TileBuilder("net")
    X = b.input("X", "f32", (2, 3))
    W = b.input("W", "f32", (3, 4))
    i, j, k = variables("i j k")
    H = b.contract(b.temp("f32", (2, 4), "H"), (i, j), "add", X[i, k] * W[k, j])
    Y = b.eltwise(b.tensor("Y", "f32", (2, 4)), call("tanh", H))
    b.output(Y)
    p = b.build()
    text = str(p)
    assert text == (
        "function net(X: f32[2, 3], W: f32[3, 4]) -> (Y: f32[2, 4]) {\n"
        "  local H0: f32[2, 4]\n"
        "  H0[i, j : 2, 4] = +(X[i, k] * W[k, j])\n"
        "  Y = tanh(H0)\n"
        "}\n"
    )
    assert str(b.build()) == text


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda b, A, i: b.contract(b.tensor("O", "f32", (4,)), (i,), "sum", A[i, 0]), "unknown aggregation"),
        (lambda b, A, i: b.contract(b.tensor("O", "f32", (4,)), (i, i), "add", A[i, 0]), "rank 1 but 2 indexes"),
        (lambda b, A, i: b.contract(b.tensor("O", "f32", (4,)), (i,), "add", A[i]), "'A' has rank 2"),
        (lambda b, A, i: b.eltwise(b.tensor("O", "f32", (3,)), call("neg", A)), "does not broadcast"),
        (lambda b, A, i: b.eltwise(b.tensor("O", "f32", (4, 5)), call("neg", "Q")), "reads 'Q' before it is defined"),
        (lambda b, A, i: b.contract(b.tensor("O", "f32", (4,)), (i,), "add", A[i, 0], default="A"),
         "must have shape"),
    ],
)
def test_validation_errors(build, message):
    b = TileBuilder("bad")
    A = b.input("A", "f32", (4, 5))
    (i,) = variables("i")
    with pytest.raises(TileError, match=message):
        b.output(build(b, A, i))
        b.build()


def test_single_assignment_and_order():
    A = Tensor("A", "f32", (2,))
    T = Tensor("T", "f32", (2,))
    with pytest.raises(TileError, match="assigned twice"):
        Program("p", (A, T), ("A",), ("T",), (elementwise(T, A), elementwise(T, A)))
    with pytest.raises(TileError, match="reads 'T' before it is defined"):
        Program("p", (A, T), ("A",), ("T",), (elementwise(T, call("add", A, T)),))
    with pytest.raises(TileError, match="never computed"):
        Program("p", (A, T), ("A",), ("T",), ())
    with pytest.raises(TileError, match="takes 2 inputs"):
        Contraction("O", (), "add", "mul", (A[0],))
