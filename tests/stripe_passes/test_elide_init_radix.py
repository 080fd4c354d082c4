"""elide_init on reshape copies: a dimension written as ``32*j + k`` (``k < 32``) is
covered one to one, so its zero fill is dead (a per-example gradient flattened for its
norm: 4 MB of zeros written and then overwritten every step); a gapped or short
radix keeps the fill. Values: interpreter before/after and generated C."""
import pytest

from plait.tile import TileBuilder, variables
from sp_helpers import check_passes


def _flatten(inner: int, step: int, width: int):
    """``O[i, step*j + k] = A[i, j, k]`` for ``k < inner`` into ``O`` of ``width`` columns."""
    b = TileBuilder("flatten")
    a = b.input("A", "f32", (3, 4, inner))
    i, j, k = variables("i j k")
    o = b.tensor("O", "f32", (3, width))
    t = b.temp("f32", (3, width))
    b.contract(t, (i, step * j + k), "assign", a[i, j, k])
    b.eltwise(o, t)
    b.output(o)
    return b.build()


def _overwritten(p) -> bool:
    return any("overwritten" in r.tags for r in p.entry.refs if r.dir == "none")


def test_reshape_copy_overwrites_its_temporary():
    assert _overwritten(check_passes(_flatten(8, 8, 32), [("elide_init", {})]))


@pytest.mark.parametrize("inner,step,width", [(4, 8, 32), (8, 8, 40)],
                         ids=["gaps", "short"])
def test_partial_radix_keeps_the_fill(inner, step, width):
    assert not _overwritten(check_passes(_flatten(inner, step, width), [("elide_init", {})]))
