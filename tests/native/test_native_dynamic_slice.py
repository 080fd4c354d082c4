"""dynamic_slice / dynamic_update_slice with traced starts as native code: the starts are
read and clamped in C (no host step), so a loop slicing minibatches stays one C loop."""
from __future__ import annotations

import numpy as np

import plait
from plait import lax
from plait.lax.shape_ops import dynamic_slice_p, dynamic_update_slice_p


def _host_steps(compiled) -> list[str]:
    return [s for s in compiled.as_text("kernels").splitlines() if s.startswith("host")]


def test_minibatch_fori_loop_is_one_c_loop():
    """A fori_loop reading minibatch i with dynamic_slice_in_dim and writing a result
    row with dynamic_update_slice: one native scan, values as the interp backend's."""
    batch = 4

    def epoch(images, w):
        n = images.shape[0] // batch

        def body(i, carry):
            w, out = carry
            x = lax.dynamic_slice_in_dim(images, i * batch, batch)
            h = np.float32(0.5) * (x @ w)
            out = lax.dynamic_update_slice(out, h.sum(0, keepdims=True), (i, 0))
            return w - np.float32(0.01) * (x.T @ h), out
        return lax.fori_loop(0, n, body, (w, plait.numpy.zeros((n, w.shape[1]), w.dtype)))

    rng = np.random.default_rng(0)
    images = rng.standard_normal((24, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    c = plait.jit(epoch, backend="native").lower(images, w).compile()
    steps = c.as_text("kernels").splitlines()
    assert any("native scan" in s for s in steps) and not _host_steps(c), steps
    got = c(images, w)
    want = plait.jit(epoch, backend="interp")(images, w)
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-6)


# (operand shape, dtype, block sizes): blocks cutting the first, a middle, the last or no
# dimension, a scalar, an empty block
_CASES = [
    ((5, 6, 7), np.float32, (2, 3, 7)),
    ((5, 6, 7), np.float32, (5, 6, 1)),
    ((5, 6, 7), np.float32, (1, 6, 7)),
    ((5, 6, 7), np.float32, (5, 6, 7)),
    ((5, 6, 7), np.float32, (2, 1, 3)),
    ((9,), np.float64, (4,)),
    ((4, 4), np.int8, (3, 2)),
    ((3, 5), np.bool_, (2, 5)),
    ((2, 3), np.int64, (0, 2)),
    ((), np.float32, ()),
]
# one start dtype per case position (cycled): signed and unsigned, narrow and wide
_INDEX_DTYPES = [np.int32, np.int64, np.uint8, np.int8, np.uint32, np.uint64, np.int16]


def _starts(values, dtypes):
    return [np.asarray(v).astype(dt) for v, dt in zip(values, dtypes)]


def _operands(rng):
    xs, us = [], []
    for shape, dt, sizes in _CASES:
        x = rng.integers(-50, 50, size=shape)
        u = rng.integers(-50, 50, size=sizes)
        xs.append(x.astype(dt) if dt is not np.bool_ else x > 0)
        us.append(u.astype(dt) if dt is not np.bool_ else u > 0)
    return xs, us


def _index_dtypes(k, ndim):
    return [_INDEX_DTYPES[(k + j) % len(_INDEX_DTYPES)] for j in range(ndim)]


def _program(xs, us, idx):
    """Every case's dynamic_slice and dynamic_update_slice at its starts."""
    out, pos = [], 0
    for k, (x, u, (shape, _, sizes)) in enumerate(zip(xs, us, _CASES)):
        st = idx[pos:pos + len(shape)]
        pos += len(shape)
        out.append(dynamic_slice_p.bind(x, *st, slice_sizes=sizes))
        out.append(dynamic_update_slice_p.bind(x, u, *st))
    return out


def test_dynamic_slices_sweep_against_interp():
    """Shapes, dtypes, start dtypes and starts in range, negative and far past the end
    (clamped into [0, dim - size] as lax says): native equals interp exactly."""
    rng = np.random.default_rng(1)
    xs, us = _operands(rng)
    dts = [dt for k, (shape, _, _) in enumerate(_CASES) for dt in _index_dtypes(k, len(shape))]
    native = plait.jit(_program, backend="native")
    interp = plait.jit(_program, backend="interp")
    n = len(dts)
    signed_only = [np.dtype(dt).kind == "i" for dt in dts]
    start_sets = [
        [0] * n,
        [1] * n,
        [int(v) for v in rng.integers(0, 8, n)],
        [-3 if s else 3 for s in signed_only],                  # negative: clamps to 0
        [100] * n,                                              # past the end
        [np.iinfo(dt).max for dt in dts],                       # the largest start
        [np.iinfo(dt).min for dt in dts],                       # the smallest start
    ]
    assert not _host_steps(native.lower(xs, us, _starts(start_sets[0], dts)).compile())
    for values in start_sets:
        idx = _starts(values, dts)
        got, want = native(xs, us, idx), interp(xs, us, idx)
        for k, (g, w) in enumerate(zip(got, want)):
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (k, values)
            np.testing.assert_array_equal(g, w, err_msg=f"output {k} at starts {values}")
