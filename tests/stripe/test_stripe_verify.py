"""The verifier rejects hand-written invalid programs with plain-words messages."""

import re

import pytest

from plait.stripe import StripeVerifyError, parse, verify

HEADER = """program p (
  in A f32(4, 6)
  out O f32(4) init add
)
#program
block [] ( // main
  in A[0, 0] f32(4, 6):(6, 1)
  out O[0]:assign f32(4):(1)
) {
"""


def prog(kernel: str):
    return parse(HEADER + kernel + "}\n")


GOOD = """  0: #kernel
  block [i:4, j:6] ( // sum
    in A[i, j] f32(1, 1):(6, 1)
    out O[i]:add f32(1):(1)
  ) {
    0: $a = load(A)
    1: O = store($a)
  }
"""


def test_good_program_passes():
    verify(prog(GOOD))


def test_out_of_bounds_access():
    bad = GOOD.replace("block [i:4, j:6]", "block [i:4, j:7]")
    with pytest.raises(StripeVerifyError) as e:
        verify(prog(bad))
    msg = str(e.value)
    assert "block 'main/sum'" in msg
    assert "access to 'A' (load) is out of bounds: dimension 1 reaches 6 but must stay within [0, 6) of buffer 'A'" in msg
    assert "e.g. at i=" in msg and "j=6" in msg


def test_negative_offset_out_of_bounds():
    bad = GOOD.replace("in A[i, j]", "in A[i, j - 1]")
    with pytest.raises(StripeVerifyError, match=r"dimension 1 reaches -1 but must stay within \[0, 6\)"):
        verify(prog(bad))


def test_constraint_makes_access_legal():
    ok = GOOD.replace("in A[i, j]", "in A[i, j - 1]").replace(
        "( // sum\n", "( // sum\n    j - 1 >= 0\n")
    verify(prog(ok))


def test_integer_reasoning_is_exact():
    # 2*j <= 6 over the reals allows j = 3, but the access 2*j - 1 stays in bounds only
    # because j is an integer with 2*j - 1 <= 5 <=> j <= 3: exact integer reasoning needed
    ok = GOOD.replace("block [i:4, j:6]", "block [i:4, j:4]").replace("in A[i, j]", "in A[i, 2*j - 1]").replace(
        "( // sum\n", "( // sum\n    2*j - 2 >= 0\n")
    verify(prog(ok))
    bad = ok.replace("2*j - 2 >= 0", "2*j - 1 >= 0").replace("j:4", "j:5")
    with pytest.raises(StripeVerifyError, match="reaches 7"):
        verify(prog(bad))


def test_double_assignment():
    bad = GOOD.replace("out O[i]:add", "out O[i]:assign")
    with pytest.raises(StripeVerifyError) as e:
        verify(prog(bad))
    msg = str(e.value)
    assert "block 'main/sum'" in msg
    assert "output 'O' has aggregation 'assign' but two iterations write the same element of 'O'" in msg
    assert "use an aggregating op such as 'add'" in msg


def test_assign_with_constraint_single_writer_is_fine():
    ok = GOOD.replace("out O[i]:add", "out O[i]:assign").replace("( // sum\n", "( // sum\n    -j >= 0\n")
    verify(prog(ok))


def test_missing_passed_index():
    bad = """  0: #kernel
  block [i:2] ( // outer
    in A[2*i, 0] f32(2, 6):(6, 1)
    out O[2*i]:add f32(2):(1)
  ) {
    0:
    block [i:2, j:6] ( // inner
      -i - io + 3 >= 0
      in A[i, j] f32(1, 1):(6, 1)
      out O[i]:add f32(1):(1)
    ) {
      0: $a = load(A)
      1: O = store($a)
    }
  }
"""
    with pytest.raises(StripeVerifyError) as e:
        verify(prog(bad))
    msg = str(e.value)
    assert "block 'main/outer/inner'" in msg
    assert "constraint '-i - io + 3' uses index 'io', which is not an index of this block" in msg
    assert "pass parent indexes explicitly" in msg
    verify(prog(bad.replace("block [i:2, j:6]", "block [i:2, j:6, io = 2*i]")))


def test_inner_access_outside_enclosing_view():
    bad = """  0: #kernel
  block [i:1] ( // outer
    in A[2*i, 0] f32(2, 6):(6, 1)
    out O[2*i]:add f32(2):(1)
  ) {
    0:
    block [i:3, j:6] ( // inner
      in A[i, j] f32(1, 1):(6, 1)
      out O[i]:add f32(1):(1)
    ) {
      0: $a = load(A)
      1: O = store($a)
    }
  }
"""
    with pytest.raises(StripeVerifyError, match=r"reaches 2 but must stay within \[0, 2\) of view 'A' of block 'main/outer'"):
        verify(prog(bad))


@pytest.mark.parametrize(
    "edit,message",
    [
        (("in A[i, j] f32(1, 1):(6, 1)", "in A[i, j] f32(1, 1):(5, 1)"), "keeps the layout"),
        (("in A[i, j] f32(1, 1):(6, 1)", "in A[i] f32(1):(1)"), "rank 1 but 'A' has rank 2"),
        (("in A[i, j] f32(1, 1):(6, 1)", "in A[i, j] f64(1, 1):(6, 1)"), "dtype f64"),
        (("in A[i, j] f32(1, 1):(6, 1)", "in B=Q[i, j] f32(1, 1):(6, 1)"), "refines 'Q', which the parent does not provide"),
        (("out O[i]:add", "out O[i]:max"), None),
        (("1: O = store($a)", "1: O = store($b)"), "uses scalar '$b' before it is defined"),
        (("0: $a = load(A)", "0: $a = load(O)"), "load from 'O', which is 'out'"),
        (("out O[i]:add f32(1):(1)", "out O[i]:add f32(0):(1)"), "sizes must be >= 1"),
        (("1: O = store($a)", "1: $b = frobnicate($a)"), "unknown intrinsic 'frobnicate'"),
        (("1: O = store($a)", "1: $b = add($a)"), "takes 2 inputs"),
    ],
)
def test_structural_errors(edit, message):
    text = GOOD.replace(*edit)
    if message is None:
        verify(prog(text))
        return
    with pytest.raises(StripeVerifyError, match=re.escape(message)):
        verify(prog(text))


def test_aggregation_mismatch_with_enclosing_view():
    bad = """  0: #kernel
  block [i:2] ( // outer
    in A[2*i, 0] f32(2, 6):(6, 1)
    out O[2*i]:add f32(2):(1)
  ) {
    0:
    block [i:2, j:6] ( // inner
      in A[i, j] f32(1, 1):(6, 1)
      out O[i]:max f32(1):(1)
    ) {
      0: $a = load(A)
      1: O = store($a)
    }
  }
"""
    with pytest.raises(StripeVerifyError, match="aggregates with 'max' inside 'O', which aggregates with 'add'"):
        verify(prog(bad))


def test_parent_write_only_cannot_be_read():
    bad = GOOD.replace("out O[i]:add f32(1):(1)", "inout O[i]:add f32(1):(1)")
    with pytest.raises(StripeVerifyError, match="reads 'O', which the parent may only write"):
        verify(prog(bad))
