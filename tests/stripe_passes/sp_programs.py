"""Small Tile programs exercising the passes (beyond tests/stripe/stripe_programs.py)."""
from __future__ import annotations

from plait.tile import TileBuilder, call, constant, variables


def mm_epilogue(m: int, k: int, n: int, dtype: str = "f32"):
    """relu(A @ B + bias): a contraction and its elementwise epilogue."""
    b = TileBuilder("mm_epilogue")
    A = b.input("A", dtype, (m, k))
    B = b.input("B", dtype, (k, n))
    bias = b.input("bias", dtype, (n,))
    i, j, kk = variables("i j k")
    C = b.contract(b.temp(dtype, (m, n)), (i, j), "add", A[i, kk] * B[kk, j])
    Y = b.eltwise(b.tensor("Y", dtype, (m, n)),
                  call("max", call("add", C, bias), constant(0.0, dtype)))
    b.output(Y)
    return b.build()


def matmul_bt(m: int, k: int, n: int):
    """A @ B.T with B stored (n, k): the SIMD index is strided in B (packing fixes it)."""
    b = TileBuilder("matmul_bt")
    A = b.input("A", "f32", (m, k))
    B = b.input("B", "f32", (n, k))
    i, j, kk = variables("i j k")
    C = b.contract(b.tensor("C", "f32", (m, n)), (i, j), "add", A[i, kk] * B[j, kk])
    b.output(C)
    return b.build()


def batch_matmul(bs: int, m: int, k: int, n: int):
    b = TileBuilder("bmm")
    A = b.input("A", "f32", (bs, m, k))
    B = b.input("B", "f32", (bs, k, n))
    z, i, j, kk = variables("z i j k")
    C = b.contract(b.tensor("C", "f32", (bs, m, n)), (z, i, j), "add", A[z, i, kk] * B[z, kk, j])
    b.output(C)
    return b.build()


def softmax(r: int, c: int):
    """Row softmax as max, exp, sum, divide (four kernels chained by temporaries)."""
    b = TileBuilder("softmax")
    X = b.input("X", "f32", (r, c))
    i, j = variables("i j")
    M = b.contract(b.temp("f32", (r, 1)), (i, 0 * i), "max", X[i, j])
    E = b.eltwise(b.temp("f32", (r, c)), call("exp", call("sub", X, M)))
    Z = b.contract(b.temp("f32", (r, 1)), (i, 0 * i), "add", E[i, j])
    Y = b.eltwise(b.tensor("Y", "f32", (r, c)), call("div", E, Z))
    b.output(Y)
    return b.build()


def _sum(name: str, r: int, c: int, dtype: str, keep_rows: bool):
    b = TileBuilder(name)
    X = b.input("X", dtype, (r, c))
    i, j = variables("i j")
    kept = i if keep_rows else j
    S = b.contract(b.tensor("S", dtype, (r if keep_rows else c,)), (kept,), "add", X[i, j])
    b.output(S)
    return b.build()


def row_sum(r: int, c: int, dtype: str = "f32"):
    return _sum("row_sum", r, c, dtype, True)


def col_sum(r: int, c: int, dtype: str = "f32"):
    """Sum over the leading axis (a bias gradient): the kept index is the contiguous one."""
    return _sum("col_sum", r, c, dtype, False)


def col_sum_scaled(r: int, c: int):
    """A bias gradient's sum over the leading axis into a temporary, then an elementwise
    consumer of it (the reshape a stax bias gradient ends with)."""
    b = TileBuilder("col_sum_scaled")
    X = b.input("X", "f32", (r, c))
    i, j = variables("i j")
    S = b.contract(b.temp("f32", (c,)), (j,), "add", X[i, j])
    b.output(b.eltwise(b.tensor("Y", "f32", (c,)), call("mul", S, constant(2.0, "f32"))))
    return b.build()


def masked_col_sum_scaled(r: int, c: int):
    """A relu backward's select, then :func:`col_sum_scaled`'s bias gradient of it (the
    select and the sum fuse first; the scale must not fuse onto the sum)."""
    b = TileBuilder("masked_col_sum_scaled")
    X = b.input("X", "f32", (r, c))
    i, j = variables("i j")
    M = b.eltwise(b.temp("f32", (r, c)), call("max", X, constant(0.0, "f32")))
    S = b.contract(b.temp("f32", (c,)), (j,), "add", M[i, j])
    b.output(b.eltwise(b.tensor("Y", "f32", (c,)), call("mul", S, constant(2.0, "f32"))))
    return b.build()


def row_max(r: int, c: int):
    b = TileBuilder("row_max")
    X = b.input("X", "f32", (r, c))
    i, j = variables("i j")
    S = b.contract(b.tensor("S", "f32", (r,)), (i,), "max", X[i, j])
    b.output(S)
    return b.build()


def shared_chain(n: int):
    """Elementwise rounds whose temporaries each feed two later kernels (threefry's
    shape), after a scalar producer read by every round."""
    b = TileBuilder("shared_chain")
    X = b.input("X", "f32", (n,))
    s = b.contract(b.temp("f32", ()), (), "assign", X[0])
    A = b.eltwise(b.temp("f32", (n,)), call("add", call("mul", X, X), s))
    B = b.eltwise(b.temp("f32", (n,)), call("sub", A, X))
    C = b.eltwise(b.temp("f32", (n,)), call("mul", A, B))
    Y = b.eltwise(b.tensor("Y", "f32", (n,)), call("add", call("mul", B, C), s))
    b.output(Y)
    return b.build()


def chain(n: int):
    """Two elementwise kernels through a temporary."""
    b = TileBuilder("chain")
    X = b.input("X", "f32", (n,))
    T = b.eltwise(b.temp("f32", (n,)), call("mul", X, X))
    Y = b.eltwise(b.tensor("Y", "f32", (n,)), call("tanh", call("add", T, X)))
    b.output(Y)
    return b.build()
