"""The host target's whole pass list, and the same list on an AVX2-sized target."""
import pytest

from sp_helpers import AVX2, AVX512, blocks, check_passes
from plait.backends.native.target import host_target
from plait.stripe.targets import register_blocks
from sp_programs import chain, mm_epilogue, softmax
from stripe_programs import conv2d, matmul

CASES = {
    "mm_epilogue": lambda: mm_epilogue(50, 70, 90),
    "matmul": lambda: matmul(64, 130, 96)[0],
    "conv": lambda: conv2d(n=2, h=9, w=10, ci=8, co=24)[0],
    "softmax": lambda: softmax(40, 70),
    "chain": lambda: chain(3000),
}


def _passes(target):
    # small programs made to exercise every pass (stencil's min_work, partition's fork
    # price); register blocks for the target's register file
    out = []
    for name, params in host_target().passes:
        d = dict(params)
        if name == "stencil":
            d["min_work"] = 1
        if name == "partition":
            d["fork_ns"] = 0
        if name == "stencil":
            d["shapes"] = register_blocks(target.vector_bytes)
        out.append((name, d))
    return out


@pytest.mark.parametrize("target", [AVX512, AVX2], ids=["avx512", "avx2"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_host_pass_list(case, target):
    p = check_passes(CASES[case](), _passes(target), target, rtol=1e-4)
    if case in ("mm_epilogue", "matmul", "conv"):
        assert blocks(p, "mac_regblock")


def test_register_blocks_fit_the_register_file():
    for vb, regs in ((64, 32), (32, 16), (16, 16)):
        for rows, vecs in register_blocks(vb):
            assert rows * vecs + vecs + 1 <= regs


def test_host_target_lists_the_passes_in_order():
    names = [n for n, _ in host_target().passes]
    assert names.index("stencil") < names.index("fuse") < names.index("localize") \
        < names.index("boundary") < names.index("partition")


def test_scalarize_keeps_view_names_unique_when_flattening_siblings():
    """Regression: two flattened children each bringing a `none` view of one name."""
    from plait.stripe.ir import Block, Load, Refinement, Store, walk_blocks
    from plait.stripe.passes.scalarize import scalarize_block
    from plait.tile.affine import Affine

    def child(tag):
        tmp = Refinement("none", "tmp", None, (Affine(),), "f32", (4,), (1,), "assign")
        return Block(name=tag, refs=(tmp,), stmts=(Load("$a", "tmp"), Store("tmp", "$a")))
    parent = Block(name="p", stmts=(child("c1"), child("c2")))
    out = scalarize_block(parent)
    for b in walk_blocks(out):
        names = [r.into for r in b.refs]
        assert len(names) == len(set(names)), names


def test_target_configs_load_and_name_known_passes():
    """Every shipped config loads (its detected facts given), names registered passes,
    and a CPU config's register blocks fit its register file."""
    from plait.stripe.passes import PASSES
    from plait.stripe.targets import config_names, load_target
    facts = {"cores": 2, "line_bytes": 64, "L1_bytes": 32768, "L2_bytes": 1 << 20,
             "L3_bytes": 1 << 25, "max_workgroup": 256, "unsupported_dtypes": ["f16"],
             "local_bytes": 65536, "global_bytes": 1 << 30}
    names = config_names()
    assert {"cpu-avx512", "cpu-avx2", "cpu-generic"} <= set(names)
    for name in names:
        t = load_target(name, facts)
        assert t.passes and all(p in PASSES for p, _ in t.passes), name
        if t.kind == "cpu":
            assert dict(dict(t.passes)["stencil"])["shapes"] == register_blocks(t.vector_bytes)


def test_a_missing_detected_fact_is_a_clear_error():
    from plait.errors import PlaitValueError
    from plait.stripe.targets import load_target
    with pytest.raises(PlaitValueError, match="cores"):
        load_target("cpu-avx2", {})
    with pytest.raises(PlaitValueError, match="no target config"):
        load_target("tpu-v9")
