"""conv_general_dilated against a naive loop over every option combination:
stride, padding (VALID, SAME, explicit asymmetric/negative), lhs and rhs dilation,
feature groups and layout (NCHW/OIHW and NHWC/HWIO)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import plait.lax as lax
from plait.lax._windows import padtype_to_pads

from references import naive_conv

LAYOUTS = {"NCHW": ("NCHW", "OIHW", "NCHW"), "NHWC": ("NHWC", "HWIO", "NHWC")}
COMBOS = list(itertools.product((1, 2), ("VALID", "SAME", ((1, 0), (-1, 2))), (1, 2), (1, 2),
                                (1, 2), ("NCHW", "NHWC")))


def _operands(rng, layout, groups, C=4, O=4):
    x = rng.standard_normal((2, C, 5, 4))            # N C H W
    w = rng.standard_normal((O, C // groups, 3, 2))   # O I H W
    if layout == "NHWC":
        return x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)
    return x, w


@pytest.mark.parametrize("stride,padding,lhs_dil,rhs_dil,groups,layout", COMBOS,
                         ids=lambda v: str(v).replace(" ", ""))
def test_conv_matches_naive_loop(stride, padding, lhs_dil, rhs_dil, groups, layout):
    rng = np.random.default_rng(hash((stride, str(padding), lhs_dil, rhs_dil, groups)) % 2**32)
    x, w = _operands(rng, layout, groups)
    names = LAYOUTS[layout]
    out = np.asarray(lax.conv_general_dilated(x, w, (stride, stride), padding, (lhs_dil, lhs_dil),
                                              (rhs_dil, rhs_dil), names, feature_group_count=groups))
    dn = lax.conv_dimension_numbers(x.shape, w.shape, names)
    if isinstance(padding, str):
        in_sp = [(x.shape[d] - 1) * lhs_dil + 1 for d in dn.lhs_spec[2:]]
        k_sp = [(w.shape[d] - 1) * rhs_dil + 1 for d in dn.rhs_spec[2:]]
        pads = padtype_to_pads(in_sp, k_sp, (stride, stride), padding)
    else:
        pads = padding
    want = naive_conv(x, w, (stride, stride), pads, (lhs_dil, lhs_dil), (rhs_dil, rhs_dil), dn,
                      groups)
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-10)
    if padding == "SAME":   # SAME keeps ceil(dilated input / stride) positions
        for d, o in zip(dn.lhs_spec[2:], dn.out_spec[2:]):
            assert out.shape[o] == -(-((x.shape[d] - 1) * lhs_dil + 1) // stride)


def test_padtype_same_puts_extra_padding_high():
    assert padtype_to_pads((5,), (2,), (1,), "SAME") == ((0, 1),)
    assert padtype_to_pads((5,), (3,), (2,), "SAME") == ((1, 1),)
    assert padtype_to_pads((5,), (2,), (1,), "SAME_LOWER") == ((1, 0),)
    assert padtype_to_pads((5, 4), (3, 3), (1, 1), "VALID") == ((0, 0), (0, 0))


def test_conv_convenience_is_nchw():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 2, 6, 5)), rng.standard_normal((3, 2, 2, 2))
    got = np.asarray(lax.conv(x, w, (1, 2), "SAME"))
    dn = lax.conv_dimension_numbers(x.shape, w.shape, None)
    want = naive_conv(x, w, (1, 2), padtype_to_pads((6, 5), (2, 2), (1, 2), "SAME"), (1, 1), (1, 1), dn)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_string_layout_letters_match_by_name():
    dn = lax.conv_dimension_numbers((2, 7, 8, 3), (3, 3, 3, 16), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    dn = lax.conv_dimension_numbers((2, 3, 7, 8), (16, 3, 3, 3), ("NCHW", "OIHW", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 3, 1, 2))


def test_depthwise_conv():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((6, 1, 3, 3))
    got = np.asarray(lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=3))
    dn = lax.conv_dimension_numbers(x.shape, w.shape, None)
    want = naive_conv(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), dn, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_dot_general_large_float_uses_matmul_fast_path():
    """A 256^3 float32 product must come out right (and quickly, through BLAS)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 256, 256)).astype(np.float32)
    b = rng.standard_normal((4, 256, 256)).astype(np.float32)
    got = np.asarray(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
