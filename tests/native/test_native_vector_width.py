"""A fused kernel that GCC 12.2 miscompiled with 512-bit auto-vectorization (found by the
fuzzer's gradient mode): jit(grad) on the native backend against the analytic gradient."""
import re
import subprocess

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from v16_source import branch


def _loss(x):
    return pnp.sum(pnp.diff(pnp.tile(x, (2,)), axis=0) ** 2)


def test_tile_diff_square_gradient_is_right_on_native():
    x = np.random.default_rng(0).uniform(0.3, 2, (4, 3, 3))
    got = np.asarray(plait.jit(plait.grad(_loss), backend="native")(x))
    d = np.diff(x, axis=0)              # d/dx sum((t[i+1]-t[i])^2) over both tiled copies
    want = np.zeros_like(x)
    want[1:] += 4 * d
    want[:-1] -= 4 * d
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _chain(x, a, b):
    return pnp.tanh(x * a + b) * (1 / (1 + pnp.exp(-x))) + x ** 2


def _kernel_lines(src: str, name: str) -> list[str]:
    """The lines of generated C function ``name`` (its signature to its closing brace)."""
    lines = src.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(rf"PLAIT_\w+ int64_t {name}\(", ln))
    end = lines.index("}", start)
    return lines[start:end + 1]


def test_elementwise_chain_is_one_parallel_wide_loop():
    """The benchmark's chain is one kernel: one OpenMP-parallel loop reading x once and
    writing the result once per element, auto-vectorized at the target's full width."""
    x = np.ones((1 << 20) + 13, np.float32)       # large enough to run on every core
    lowered = plait.jit(_chain, backend="native").lower(x, np.float32(0.7), np.float32(0.1))
    stripe = lowered.as_text("stripe-opt")
    assert stripe.count(f"block [i0:{x.size}]") == 1
    assert re.findall(r"^\s+in in1\[i0\]", stripe, re.M) == ["    in in1[i0]"]
    assert len(re.findall(r"^\s+out T0\[i0\]", stripe, re.M)) == 1
    src = lowered.as_text("c")
    assert src.count("#if PLAIT_V16") == 1
    for v16 in (False, True):      # the auto-vectorized loop and its 16-lane form
        k0 = _kernel_lines(branch(src, v16), "k0")
        assert k0[0].startswith("PLAIT_KERNEL_WIDE ")
        assert sum("for (int64_t" in ln for ln in k0) == 1
        pragma = next(i for i, ln in enumerate(k0) if "#pragma omp" in ln)
        assert k0[pragma].strip() == "#pragma omp parallel for schedule(static)"
        assert "for (int64_t" in k0[pragma + 1] and ("+= 16" in k0[pragma + 1]) == v16


def test_only_elementwise_programs_are_wide():
    """A reduction, a padded or shifted copy and a contraction keep 256-bit vectors (the
    GCC 12 miscompilation above); maps, with selects and casts, use the full width."""
    x = np.ones((8, 12), np.float32)
    wide = [lambda v: pnp.where(v > 0, v * 2.0, pnp.exp(v)) + 1.0,
            lambda v: pnp.maximum(v, 0.5).astype(np.float64) * 3]
    narrow = [lambda v: v.sum(axis=1), lambda v: v @ v.T, lambda v: pnp.diff(v, axis=0),
              plait.grad(lambda v: pnp.sum(pnp.diff(pnp.tile(v, (2,)), axis=0) ** 2))]
    for f, want in [(f, True) for f in wide] + [(f, False) for f in narrow]:
        src = plait.jit(f, backend="native").lower(x).as_text("c")
        heads = [ln for ln in src.splitlines() if re.match(r"PLAIT_\w+ int64_t k\d+\(", ln)]
        assert heads and all(h.startswith("PLAIT_KERNEL_WIDE ") == want for h in heads), (
            heads, want)


def test_wide_kernel_vectorizes_with_512_bit_vectors(x86_gcc, tmp_path):
    """Compiled for AVX-512 (x86-64-v4) with the kernels' flags, the chain's scalar loop
    (its 16-lane form left out) uses 64-byte vectors; the other kernels' 256-bit cap is
    unchanged."""
    x = np.ones(4096, np.float32)
    src = branch(plait.jit(_chain, backend="native").lower(
        x, np.float32(0.7), np.float32(0.1)).as_text("c"), v16=False)
    c = tmp_path / "chain.c"
    c.write_text(src)
    flags = [f for f in x86_gcc.flags if not f.startswith("-march=")]
    r = subprocess.run([x86_gcc.cc, *flags, "-march=x86-64-v4", "-fopt-info-vec-optimized",
                        str(c), "-o", str(tmp_path / "chain.so")],
                       capture_output=True, text=True, check=True)
    loop = next(i for i, ln in enumerate(src.splitlines(), 1) if "for (int64_t i_" in ln)
    assert f"{c}:{loop}:" in r.stderr and "using 64 byte vectors" in r.stderr, r.stderr


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 15, 16, 1000, 4096 + 13])
def test_elementwise_chain_values(dtype, n):
    """The wide kernel's values against NumPy, remainder lanes and NaN/inf included."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 4).astype(dtype)
    x[::7] = rng.uniform(-120, 120, x[::7].shape)
    if n > 3:
        x[:3] = [np.nan, np.inf, -np.inf]
    a, b = dtype(0.7), dtype(0.1)
    got = np.asarray(plait.jit(_chain, backend="native")(x, a, b))
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.tanh(x * a + b) * (1 / (1 + np.exp(-x))) + x ** 2
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    f = plait.jit(lambda v: pnp.where(v > 0, pnp.sqrt(pnp.abs(v)), v * 3.0) - 1.0,
                  backend="native")
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(np.asarray(f(x)),
                                   np.where(x > 0, np.sqrt(np.abs(x)), x * 3.0) - 1.0,
                                   rtol=tol, atol=tol)


def test_wide_mixed_dtype_maps_values():
    """Wide maps mixing element sizes (bool bytes, int32, float64 from float32) against
    NumPy, at a length with a remainder for every vector width."""
    x = np.random.default_rng(3).uniform(-4, 4, 1000 + 37).astype(np.float32)
    f = plait.jit(lambda v: (v > 0.5, pnp.maximum(v, 0.5).astype(np.float64) * 3,
                             (v * 10).astype(np.int32) * 3 + 1), backend="native")
    src = f.lower(x).as_text("c")
    assert all(ln.startswith("PLAIT_KERNEL_WIDE ") for ln in src.splitlines()
               if re.match(r"PLAIT_\w+ int64_t k\d+\(", ln))
    gt, wide, ints = (np.asarray(r) for r in f(x))
    np.testing.assert_array_equal(gt, x > 0.5)
    np.testing.assert_array_equal(wide, np.maximum(x, 0.5).astype(np.float64) * 3)
    np.testing.assert_array_equal(ints, (x * 10).astype(np.int32) * 3 + 1)
