"""Hand-written Tile programs with NumPy references, shared by the Stripe tests."""

from __future__ import annotations

import numpy as np

from plait.tile import TileBuilder, call, constant, iota, variables


def matmul(m=4, k=8, n=16, dtype="f32"):
    b = TileBuilder("matmul")
    A = b.input("A", dtype, (m, k))
    B = b.input("B", dtype, (k, n))
    i, j, kk = variables("i j k")
    C = b.contract(b.tensor("C", dtype, (m, n)), (i, j), "add", A[i, kk] * B[kk, j])
    b.output(C)
    return b.build(), lambda A, B: A @ B


def conv_out_size(size, f, stride, pad_lo, pad_hi, dil):
    return (size + pad_lo + pad_hi - dil * (f - 1) - 1) // stride + 1


def conv2d(n=1, h=6, w=5, ci=3, co=4, kh=3, kw=3, stride=(1, 1), pad=((1, 1), (1, 1)), dil=(1, 1),
           dtype="f32"):
    """NHWC x HWIO convolution with stride, explicit padding and dilation."""
    oh = conv_out_size(h, kh, stride[0], *pad[0], dil[0])
    ow = conv_out_size(w, kw, stride[1], *pad[1], dil[1])
    b = TileBuilder("conv")
    I = b.input("I", dtype, (n, h, w, ci))
    K = b.input("K", dtype, (kh, kw, ci, co))
    nn, y, x, c, o, ky, kx = variables("n y x ci co ky kx")
    O = b.contract(
        b.tensor("O", dtype, (n, oh, ow, co)),
        (nn, y, x, o),
        "add",
        I[nn, stride[0] * y + dil[0] * ky - pad[0][0], stride[1] * x + dil[1] * kx - pad[1][0], c]
        * K[ky, kx, c, o],
    )
    b.output(O)

    def ref(I, K):
        P = np.pad(I, ((0, 0), pad[0], pad[1], (0, 0)))
        out = np.zeros((n, oh, ow, co), dtype=I.dtype)
        for a in range(kh):
            for bb in range(kw):
                ys = a * dil[0]
                xs = bb * dil[1]
                patch = P[:, ys: ys + stride[0] * (oh - 1) + 1: stride[0], xs: xs + stride[1] * (ow - 1) + 1: stride[1], :]
                out += np.einsum("nyxc,co->nyxo", patch, K[a, bb])
        return out

    return b.build(), ref


def programs():
    """(name, tile program, numpy reference fn, input shapes/dtypes) for the sweep."""
    out = []

    p, f = matmul(5, 7, 3)
    out.append(("matmul", p, f))
    p, f = matmul(1, 9, 1)
    out.append(("matmul_1xN", p, f))
    p, f = conv2d()
    out.append(("conv3x3_same", p, f))
    p, f = conv2d(h=7, w=6, stride=(2, 2), pad=((1, 1), (1, 1)))
    out.append(("conv3x3_stride2", p, f))
    p, f = conv2d(h=8, w=7, dil=(2, 2), pad=((0, 0), (0, 0)))
    out.append(("conv3x3_dil2_valid", p, f))
    p, f = conv2d(h=5, w=5, kh=1, kw=1, pad=((0, 0), (0, 0)), n=2)
    out.append(("conv1x1", p, f))
    p, f = conv2d(h=6, w=6, stride=(2, 1), pad=((2, 0), (0, 1)), dil=(1, 2))
    out.append(("conv_mixed", p, f))

    # transpose
    b = TileBuilder("transpose")
    A = b.input("A", "f32", (3, 5))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (5, 3)), (j, i), "assign", A[i, j]))
    out.append(("transpose", b.build(), lambda A: A.T))

    # 3-D transpose
    b = TileBuilder("transpose3")
    A = b.input("A", "i32", (2, 3, 4))
    i, j, k = variables("i j k")
    b.output(b.contract(b.tensor("O", "i32", (4, 2, 3)), (k, i, j), "assign", A[i, j, k]))
    out.append(("transpose3", b.build(), lambda A: A.transpose(2, 0, 1)))

    # reductions
    for agg, fn in (("add", np.sum), ("max", np.max), ("min", np.min), ("mul", np.prod)):
        b = TileBuilder(f"reduce_{agg}")
        A = b.input("A", "f64", (4, 6))
        i, j = variables("i j")
        b.output(b.contract(b.tensor("O", "f64", (6,)), (j,), agg, A[i, j]))
        out.append((f"reduce_{agg}_axis0", b.build(), lambda A, fn=fn: fn(A, axis=0)))
    b = TileBuilder("global_max")
    A = b.input("A", "f32", (3, 4, 5))
    i, j, k = variables("i j k")
    b.output(b.contract(b.tensor("O", "f32", ()), (), "max", A[i, j, k]))
    out.append(("global_max", b.build(), lambda A: np.max(A)))

    # mean over last axis = sum then divide
    b = TileBuilder("mean")
    A = b.input("A", "f32", (3, 8))
    i, j = variables("i j")
    S = b.contract(b.temp("f32", (3,)), (i,), "add", A[i, j])
    b.output(b.eltwise(b.tensor("M", "f32", (3,)), call("div", S, constant(8.0, "f32"))))
    out.append(("mean", b.build(), lambda A: A.mean(axis=1)))

    # elementwise chain with broadcasting: relu(A + B) as select, tanh, cast
    b = TileBuilder("eltwise_chain")
    A = b.input("A", "f32", (4, 5))
    B = b.input("B", "f32", (5,))
    T = b.eltwise(b.temp("f32", (4, 5)), call("add", A, B))
    X = b.eltwise(b.temp("bool", (4, 5)), call("cmp_lt", T, constant(0.0, "f32")))
    R = b.eltwise(b.temp("f32", (4, 5)), call("select", X, constant(0.0, "f32"), T))
    Y = b.eltwise(b.tensor("Y", "f32", (4, 5)), call("tanh", call("mul", R, constant(0.5, "f32"))))
    Z = b.eltwise(b.tensor("Z", "i32", (4, 5)), call("cast", call("floor", call("mul", R, constant(3.0, "f32"))), dtype="i32"))
    b.output(Y, Z)

    def chain(A, B):
        r = np.maximum(A + B, 0).astype(np.float32)
        return np.tanh(r * np.float32(0.5)), np.floor(r * np.float32(3.0)).astype(np.int32)

    out.append(("eltwise_chain", b.build(), chain))

    # broadcast_in_dim (column vector against matrix) and size-1 dims
    b = TileBuilder("bcast")
    A = b.input("A", "f32", (3, 1))
    B = b.input("B", "f32", (1, 4))
    b.output(b.eltwise(b.tensor("O", "f32", (3, 4)), call("sub", A, B)))
    out.append(("broadcast_size1", b.build(), lambda A, B: A - B))
    b = TileBuilder("bcast_in_dim")
    B = b.input("B", "f32", (4,))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (3, 4)), (i, j), "assign", B[j]))
    out.append(("broadcast_in_dim", b.build(), lambda B: np.broadcast_to(B, (3, 4))))

    # zero pad via the identity of assign, constant pad via a default tensor
    b = TileBuilder("pad0")
    A = b.input("A", "f32", (5,))
    (i,) = variables("i")
    b.output(b.contract(b.tensor("O", "f32", (8,)), (i + 2,), "assign", A[i]))
    out.append(("pad_zero", b.build(), lambda A: np.pad(A, (2, 1))))
    b = TileBuilder("padv")
    A = b.input("A", "f32", (3, 4))
    i, j = variables("i j")
    Fill = b.eltwise(b.temp("f32", (4, 7)), constant(-1.5, "f32"))
    b.output(b.contract(b.tensor("O", "f32", (4, 7)), (i + 1, j + 2), "assign", A[i, j], default=Fill))
    out.append(("pad_value_default", b.build(),
                lambda A: np.pad(A, ((1, 0), (2, 1)), constant_values=-1.5)))

    # interior padding (lhs dilation) O[2*i] = A[i]
    b = TileBuilder("dilate")
    A = b.input("A", "f32", (4,))
    (i,) = variables("i")
    b.output(b.contract(b.tensor("O", "f32", (7,)), (2 * i,), "assign", A[i]))

    def dil(A):
        o = np.zeros(7, np.float32)
        o[::2] = A
        return o

    out.append(("interior_pad", b.build(), dil))

    # concatenate via default chaining
    b = TileBuilder("concat")
    A = b.input("A", "f32", (2, 3))
    B = b.input("B", "f32", (4, 3))
    i, j = variables("i j")
    P = b.contract(b.temp("f32", (6, 3)), (i, j), "assign", A[i, j])
    b.output(b.contract(b.tensor("O", "f32", (6, 3)), (i + 2, j), "assign", B[i, j], default=P))
    out.append(("concatenate", b.build(), lambda A, B: np.concatenate([A, B], 0)))

    # slice with stride
    b = TileBuilder("slice")
    A = b.input("A", "f32", (10, 4))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (3, 2)), (i, j), "assign", A[1 + 3 * i, 2 + j]))
    out.append(("slice_strided", b.build(), lambda A: A[1:10:3, 2:4]))

    # reverse
    b = TileBuilder("rev")
    A = b.input("A", "f32", (6,))
    (i,) = variables("i")
    b.output(b.contract(b.tensor("O", "f32", (6,)), (5 - i,), "assign", A[i]))
    out.append(("reverse", b.build(), lambda A: A[::-1]))

    # reshape (flatten) as an affine copy
    b = TileBuilder("flatten")
    A = b.input("A", "f32", (3, 4))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (12,)), (4 * i + j,), "assign", A[i, j]))
    out.append(("flatten", b.build(), lambda A: A.reshape(-1)))

    # iota
    b = TileBuilder("iota")
    b.output(b.eltwise(b.tensor("O", "f32", (3, 4)), call("cast", iota(1, "i32"), dtype="f32")))
    out.append(("iota", b.build(), lambda: np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))))
    b = TileBuilder("index_mix")
    A = b.input("A", "i64", (3, 4))
    b.output(b.eltwise(b.tensor("O", "i64", (3, 4)), call("add", A, call("mul", iota(0), iota(1)))))
    out.append(("index_mix", b.build(), lambda A: A + np.arange(3)[:, None] * np.arange(4)[None, :]))

    # max pool 3x3 stride 2 SAME-ish padding (needs ky < 3 constraints)
    b = TileBuilder("maxpool")
    A = b.input("A", "f32", (1, 7, 7, 2))
    n, y, x, c, ky, kx = variables("n y x c ky kx")
    b.output(b.contract(b.tensor("O", "f32", (1, 4, 4, 2)), (n, y, x, c), "max",
                        A[n, 2 * y + ky - 1, 2 * x + kx - 1, c], [ky < 3, kx < 3]))

    def maxpool(A):
        P = np.pad(A, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
        o = np.full((1, 4, 4, 2), -np.inf, np.float32)
        for a in range(3):
            for bb in range(3):
                o = np.maximum(o, P[:, a: a + 7: 2, bb: bb + 7: 2, :])
        return o

    out.append(("maxpool", b.build(), maxpool))

    # cumulative sum with a difference constraint
    b = TileBuilder("cumsum")
    A = b.input("A", "i32", (7,))
    i, k = variables("i k")
    b.output(b.contract(b.tensor("O", "i32", (7,)), (i,), "add", A[k], [i - k < 7]))
    out.append(("cumsum", b.build(), lambda A: np.cumsum(A).astype(np.int32)))

    # batched matmul
    b = TileBuilder("bmm")
    A = b.input("A", "f32", (2, 3, 4))
    B = b.input("B", "f32", (2, 4, 5))
    bb, i, j, k = variables("b i j k")
    b.output(b.contract(b.tensor("O", "f32", (2, 3, 5)), (bb, i, j), "add", A[bb, i, k] * B[bb, k, j]))
    out.append(("batched_matmul", b.build(), lambda A, B: A @ B))

    # depthwise conv 1-D (shared channel index)
    b = TileBuilder("depthwise")
    I = b.input("I", "f32", (8, 3))
    K = b.input("K", "f32", (3, 3))
    x, k, c = variables("x k c")
    b.output(b.contract(b.tensor("O", "f32", (8, 3)), (x, c), "add", I[x + k - 1, c] * K[k, c]))

    def dw(I, K):
        P = np.pad(I, ((1, 1), (0, 0)))
        return sum(P[a: a + 8] * K[a] for a in range(3))

    out.append(("depthwise", b.build(), dw))

    # outer sum (comb add), equality (comb eq), max-pool gradient (select)
    b = TileBuilder("outer_add")
    A = b.input("A", "f32", (3,))
    B = b.input("B", "f32", (4,))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (3, 4)), (i, j), "assign", A[i] + B[j]))
    out.append(("outer_add", b.build(), lambda A, B: A[:, None] + B[None, :]))
    b = TileBuilder("count_eq")
    A = b.input("A", "i32", (6,))
    B = b.input("B", "i32", (4,))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "i32", (4,)), (j,), "add", A[i].eq(B[j])))
    out.append(("count_eq", b.build(), lambda A, B: (A[:, None] == B[None, :]).sum(0).astype(np.int32)))
    b = TileBuilder("maxpool_grad")
    I = b.input("I", "f32", (8,))
    O = b.input("O", "f32", (4,))
    D = b.input("D", "f32", (4,))
    x, k = variables("x k")
    b.output(b.contract(b.tensor("G", "f32", (8,)), (2 * x + k,), "add",
                        I[2 * x + k].eq(O[x]).select(D[x]), [k < 2]))

    def mpg(I, O, D):
        g = np.zeros(8, np.float32)
        for xx in range(4):
            for kk in range(2):
                if I[2 * xx + kk] == O[xx]:
                    g[2 * xx + kk] += D[xx]
        return g

    out.append(("maxpool_grad_select", b.build(), mpg))

    # softmax over rows
    b = TileBuilder("softmax")
    X = b.input("X", "f32", (3, 5))
    i, j = variables("i j")
    M = b.contract(b.temp("f32", (3, 1)), (i, 0), "max", X[i, j])
    E = b.eltwise(b.temp("f32", (3, 5)), call("exp", call("sub", X, M)))
    Z = b.contract(b.temp("f32", (3, 1)), (i, 0), "add", E[i, j])
    b.output(b.eltwise(b.tensor("Y", "f32", (3, 5)), call("div", E, Z)))

    def softmax(X):
        e = np.exp(X - X.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    out.append(("softmax", b.build(), softmax))

    # strided write leaves odd entries at the identity (0)
    b = TileBuilder("skip")
    A = b.input("A", "f32", (6, 2))
    i, j = variables("i j")
    b.output(b.contract(b.tensor("O", "f32", (6,)), (2 * i,), "add", A[2 * i, j]))

    def skip(A):
        o = np.zeros(6, np.float32)
        o[::2] = A[::2].sum(1)
        return o

    out.append(("strided_write", b.build(), skip))
    return out


def random_inputs(prog, seed=0, integers=False):
    """Random inputs for a Tile program (small integers if ``integers``)."""
    rng = np.random.default_rng(seed)
    vals = {}
    for name in prog.inputs:
        t = prog.tensor(name)
        if t.dtype.startswith(("i", "u")) or integers:
            v = rng.integers(-3, 4, size=t.shape)
        elif t.dtype == "bool":
            v = rng.integers(0, 2, size=t.shape).astype(bool)
        else:
            v = rng.standard_normal(t.shape)
        from plait.stripe import np_dtype

        vals[name] = np.asarray(v).astype(np_dtype(t.dtype))
    return vals
