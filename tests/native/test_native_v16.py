"""16-lane AVX-512 elementwise kernels (``PLAIT_V16``, ``plait.codegen.c_cpu``): every
lane bit for bit the scalar loop's result (the same program built with
``-DPLAIT_NO_V16`` in a child process), tails of every length, broadcasts, special
values; and which kernels take the 16-lane form."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.codegen import toolchain
from plait.runtime.cpuinfo import cpu_info

F32 = np.finfo(np.float32)
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, F32.max, -F32.max,
                     F32.tiny, -F32.smallest_subnormal, 88.72283, 88.72284, 89.0, 90.0,
                     -87.33654, -103.972, -103.973, -104.0, -105.0, 9.01, 9.5, -9.6,
                     1e-8, -1e-30, 16777216.0], np.float32)

PROGRAMS = textwrap.dedent("""
    import numpy as np
    import plait.numpy as pnp
    from plait import nn

    def chain(x):
        return pnp.tanh(x * 0.7 + 0.1) * (1 / (1 + pnp.exp(-x))) + x ** 2

    def mixed(x):
        return pnp.maximum(pnp.exp(x) - 3.0, pnp.abs(x)) / pnp.minimum(x, 2.5) + nn.sigmoid(-x)

    def rows(a, b, c):   # a dense layer's bias and activation: a row and a column broadcast
        return pnp.tanh(a * b + c[:, None])

    PROGRAMS = {"chain": chain, "mixed": mixed, "rows": rows}
""")
_ns: dict = {}
exec(PROGRAMS, _ns)


def _inputs() -> dict[str, list[tuple]]:
    """Each program's argument tuples: tails of every length, special values, random bits."""
    rng = np.random.default_rng(16)
    bits = rng.integers(0, 2 ** 32, 20011, dtype=np.uint64).astype(np.uint32).view(np.float32)
    dense = np.linspace(-110, 95, 30007, dtype=np.float32)
    big = np.concatenate([np.tile(SPECIALS, 3), bits, dense, rng.standard_normal(7).astype(np.float32)])
    flat = [(big[:n],) for n in (1, 15, 16, 17, 33, 100)] + [(big,)]
    rows = [(big[: 7 * n].reshape(7, n), big[-n:], big[100:107]) for n in (1, 17, 32, 1000)]
    return {"chain": flat, "mixed": flat, "rows": rows}


CHILD = """
import pickle, sys, plait
exec(open(sys.argv[1]).read())
with open(sys.argv[2], "rb") as f:
    args = pickle.load(f)
out = {k: [plait.jit(PROGRAMS[k], backend="native")(*a) for a in v] for k, v in args.items()}
with open(sys.argv[3], "wb") as f:
    pickle.dump({k: [np.asarray(r) for r in v] for k, v in out.items()}, f)
"""


def _v16_host() -> bool:
    tc = toolchain.find_toolchain()
    return (tc is not None and "avx512f" in cpu_info().flags
            and "clang" not in tc.version.lower())


def test_lanes_match_the_scalar_loop_bit_for_bit(tmp_path, monkeypatch):
    if not _v16_host():
        pytest.skip("16-lane kernels need GCC and an AVX-512 CPU (elsewhere they are "
                    "the scalar loop this test compares with)")
    monkeypatch.setattr(plait.config, "cache_dir", str(tmp_path / "cache"))
    args = _inputs()
    src, data, out = tmp_path / "programs.py", tmp_path / "in.pkl", tmp_path / "out.pkl"
    src.write_text(PROGRAMS)
    data.write_bytes(pickle.dumps(args))
    env = dict(os.environ, PLAIT_EXTRA_CFLAGS="-DPLAIT_NO_V16", PLAIT_TIERED="0",
               PLAIT_CACHE_DIR=str(tmp_path / "cache_scalar"))   # native from the first call
    subprocess.run([sys.executable, "-c", CHILD, str(src), str(data), str(out)],
                   env=env, check=True, timeout=600)
    scalar = pickle.loads(out.read_bytes())
    for k, f in _ns["PROGRAMS"].items():
        jf = plait.jit(f, backend="native")
        assert "#if PLAIT_V16" in jf.lower(*args[k][-1]).as_text("c"), k
        for a, want in zip(args[k], scalar[k]):
            got = np.asarray(jf(*a))
            where = f"{k} {[x.shape for x in a]}"
            assert got.shape == want.shape, where
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=where)
            ok = ~np.isnan(want)
            np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32),
                                          err_msg=where)


def test_which_kernels_take_sixteen_lanes():
    """float32 maps calling plait's vector math do; float64, plain arithmetic (GCC
    vectorizes it as well), ops without a 16-lane form (log) and reductions do not."""
    x32 = np.ones(1000, np.float32)
    c = lambda f, x: plait.jit(f, backend="native").lower(x).as_text("c")   # noqa: E731
    assert "#if PLAIT_V16" in c(lambda v: pnp.exp(v) * 2.0, x32)
    for f, x in ((lambda v: pnp.exp(v) * 2.0, x32.astype(np.float64)),
                 (lambda v: v * 2.0 + 1.0, x32),
                 (lambda v: pnp.log(v) + pnp.exp(v), x32),
                 (lambda v: pnp.sum(pnp.exp(v)), x32)):
        assert "#if PLAIT_V16" not in c(f, x)
