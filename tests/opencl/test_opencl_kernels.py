"""The OpenCL C renderer on Stripe programs after the opencl-gpu pass list, run on the
device and compared with the Stripe interpreter; and the errors without a device."""
from __future__ import annotations

import os
import sys
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("pyopencl")

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "stripe_passes"))
sys.path.insert(0, os.path.join(_TESTS, "stripe"))

import plait  # noqa: E402
import plait.numpy  # noqa: E402,F401
from plait.backends.opencl import device as cl_device  # noqa: E402
from plait.backends.opencl.compile import _options  # noqa: E402
from plait.config import config  # noqa: E402
from plait.codegen.opencl_c import prelude, render_kernels  # noqa: E402
from plait.errors import DeviceUnavailableError  # noqa: E402
from plait.stripe import lower, run, verify, walk_blocks  # noqa: E402
from plait.stripe.ir import np_dtype  # noqa: E402
from plait.stripe.passes import run_passes  # noqa: E402
from sp_helpers import random_inputs  # noqa: E402
from sp_programs import (batch_matmul, chain, matmul_bt, mm_epilogue, row_max,  # noqa: E402
                         row_sum, softmax)  # noqa: E402
from stripe_programs import conv2d, matmul  # noqa: E402


def _run_on_device(program, inputs, head: str = "", limit: int | None = None):
    dev = cl_device.opencl_device()
    cl = dev.cl
    ks = render_kernels(program, "t")
    prg = cl.Program(dev.context, head + prelude() + ks.source).build(options=_options())
    bufs = []
    for b in program.buffers:
        if b.kind == "in":
            bufs.append(cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                  hostbuf=np.ascontiguousarray(inputs[b.name])))
        else:    # garbage first: the fill kernel must run
            bufs.append(cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                  hostbuf=np.full(b.shape, 7, np_dtype(b.dtype))))
    for _, dt, n in ks.temps:
        bufs.append(cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, size=n * np_dtype(dt).itemsize))
    for la in ks.launches:
        scratch = [cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, size=n * np_dtype(dt).itemsize)
                   for dt, n in la.scratch]
        cl.Kernel(prg, la.name)(dev.queue, *la.shape(limit), *la.arguments(bufs, scratch))
    out = {}
    for b, buf in zip(program.buffers, bufs):
        if b.kind == "out":
            out[b.name] = np.empty(b.shape, np_dtype(b.dtype))
            cl.enqueue_copy(dev.queue, out[b.name], buf)
    return out


@pytest.mark.parametrize("private_bytes,limit", [(None, None), (0, None), (None, 8)],
                         ids=["device", "no-private", "kernel-limit-8"])
def test_kernels_match_the_interpreter(private_bytes, limit):
    """With the device's config, with no private memory (every temporary a work-item's
    slice of a global scratch buffer), and launched under a kernel work-group limit of
    8 work-items (a driver's limit for a register-heavy kernel may be below the
    device's): the work-groups shrink and the values stay the same."""
    target = cl_device.opencl_device().target
    if private_bytes is not None:
        memory = tuple(replace(m, bytes=private_bytes) if m.name == "private" else m
                       for m in target.memory)
        target = replace(target, memory=memory)
    programs = [mm_epilogue(50, 70, 90), matmul(64, 130, 96)[0], row_sum(33, 20, "f64"),
                conv2d(n=2, h=9, w=10, ci=8, co=24)[0], softmax(40, 70), chain(3000),
                row_max(30, 50), batch_matmul(3, 18, 45, 20), matmul_bt(19, 40, 33),
                conv2d(n=1, h=11, w=9, ci=5, co=7, stride=(2, 2), pad=((1, 0), (0, 1)),
                       dil=(1, 2))[0]]
    tiled = 0
    for prog in programs:
        before = lower(prog)
        after = run_passes(before, target)
        verify(after)
        tiled += any("workgroups" in b.tags for b in walk_blocks(after.entry))
        if private_bytes == 0:    # the staged tiles stay in local memory
            assert all(r.location == ("local" if "cache" in r.tags else "global")
                       for b in walk_blocks(after.entry) for r in b.refs if r.from_ is None)
        ins = random_inputs(before)
        want = run(before, ins)
        got = _run_on_device(after, ins, limit=limit)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5, err_msg=prog.name)
    assert tiled == 6       # the matmuls (one fused) and convolutions use local tiles


def test_no_device_is_a_clear_error(monkeypatch):
    cl_device.opencl_device.cache_clear()
    try:
        monkeypatch.setattr(config, "opencl_device", "no-such-device")
        with pytest.raises(DeviceUnavailableError, match="plait\\[opencl\\]"):
            plait.jit(lambda x: x + 1, backend="opencl")(np.ones(3))
        monkeypatch.undo()
        cl_device.opencl_device.cache_clear()
        monkeypatch.setitem(sys.modules, "pyopencl", None)
        with pytest.raises(DeviceUnavailableError, match="pyopencl"):
            plait.jit(lambda x: x * 2, backend="opencl")(np.ones(3))
    finally:
        cl_device.opencl_device.cache_clear()


def test_no_platform_is_a_clear_error(monkeypatch):
    """pyopencl installed but no platform (its ICD loader finds none): the error says
    how to get one."""
    import types

    class Error(Exception):
        """Stands for pyopencl's ``cl.Error``, which ``get_platforms`` raises then."""

    def no_platform():
        raise Error("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")
    cl_device.clear_caches()
    try:
        monkeypatch.setitem(sys.modules, "pyopencl",
                            types.SimpleNamespace(Error=Error, get_platforms=no_platform))
        for call in (lambda: plait.jit(lambda x: x - 1, backend="opencl")(np.ones(3)),
                     cl_device.opencl_devices):
            with pytest.raises(DeviceUnavailableError,
                               match=r"no OpenCL platform .*plait\[opencl\].*pocl"):
                call()
    finally:
        monkeypatch.undo()
        cl_device.clear_caches()


def test_program_binaries_are_cached_on_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAIT_CACHE_DIR", str(tmp_path))
    f = plait.jit(lambda x: plait.numpy.tanh(x) * 3.0 + 1.0, backend="opencl")
    x = np.linspace(-2, 2, 37).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), np.tanh(x) * 3 + 1, rtol=1e-6)
    cached = [p for p in (tmp_path / "opencl").rglob("*") if p.is_file()]
    assert cached, "no program binary was written to <cache>/opencl"
    # a second executable of the same program loads the binary; a corrupt entry is rebuilt
    (entry,) = cached
    written = entry.stat().st_mtime_ns
    g = plait.jit(lambda x: plait.numpy.tanh(x) * 3.0 + 1.0, backend="opencl")
    np.testing.assert_allclose(np.asarray(g(x)), np.tanh(x) * 3 + 1, rtol=1e-6)
    assert entry.stat().st_mtime_ns == written      # loaded, not rebuilt
    entry.write_bytes(b"not a binary")
    h = plait.jit(lambda x: plait.numpy.tanh(x) * 3.0 + 1.0, backend="opencl")
    np.testing.assert_allclose(np.asarray(h(x)), np.tanh(x) * 3 + 1, rtol=1e-6)
    assert entry.read_bytes() != b"not a binary"


def test_programs_compile_on_a_device_without_double():
    """A device without cl_khr_fp64 rejects any double: with the extension's macro
    undefined the prelude has none left (the preprocessor's view), and such a program
    still builds and computes float32 kernels (the device's view, as PoCL sees it with
    the macro removed)."""
    import re
    import subprocess
    from plait.codegen.toolchain import require_toolchain
    cc = require_toolchain().cc

    def preprocessed(defines):
        r = subprocess.run([cc, "-E", "-P", "-x", "c", *defines, "-"], input=prelude(),
                           capture_output=True, text=True, check=True)
        return r.stdout
    assert re.search(r"\bdouble\b", preprocessed(["-Dcl_khr_fp64"]))
    assert not re.search(r"\bdouble\b", preprocessed([]))
    prog = softmax(40, 70)
    before = lower(prog)
    after = run_passes(before, cl_device.opencl_device().target)
    ins = random_inputs(before)
    want = run(before, ins)
    got = _run_on_device(after, ins, head="#undef cl_khr_fp64\n")
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5)
