"""Realistic shape/dtype mistakes raise plait errors that say what is wrong, at the user's line."""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.lax as lax
from plait.errors import PlaitTypeError, PlaitValueError, PlaitIndexError

f32 = np.ones((2, 3), np.float32)
GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SDN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))

MISTAKES = [
    ("matmul inner size", lambda: lax.dot_general(np.ones((2, 3)), np.ones((4, 5)), (((1,), (0,)), ((), ()))),
     PlaitTypeError, "contracting dimensions must have the same size: lhs 3 vs rhs 4"),
    ("batch size", lambda: lax.dot_general(np.ones((2, 3, 4)), np.ones((5, 4, 2)), (((2,), (1,)), ((0,), (0,)))),
     PlaitTypeError, "batch dimensions must have the same size: lhs 2 vs rhs 5"),
    ("mixed dtypes", lambda: lax.dot_general(f32, np.ones((3, 2)), (((1,), (0,)), ((), ()))),
     PlaitTypeError, "same dtype"),
    ("unpaired contraction", lambda: lax.dot_general(f32, f32, (((0, 1), (0,)), ((), ()))),
     PlaitTypeError, "paired"),
    ("dot rank 3", lambda: lax.dot(np.ones((2, 2, 2)), np.ones(2)), PlaitTypeError, "rank 1 or 2"),
    ("conv channels", lambda: lax.conv(np.ones((1, 3, 5, 5)), np.ones((8, 4, 3, 3)), (1, 1), "SAME"),
     PlaitTypeError, "feature dimension (3)"),
    ("conv groups", lambda: lax.conv_general_dilated(np.ones((1, 4, 5, 5)), np.ones((3, 2, 3, 3)), (1, 1), "SAME",
                                                     feature_group_count=2),
     PlaitTypeError, "multiple of feature_group_count"),
    ("conv strides", lambda: lax.conv(np.ones((1, 3, 5, 5)), np.ones((8, 3, 3, 3)), (1, 1, 1), "SAME"),
     PlaitTypeError, "window_strides needs 2 entries"),
    ("conv layout", lambda: lax.conv_general_dilated(np.ones((1, 5, 5, 3)), np.ones((3, 3, 3, 8)), (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NCWX")),
     PlaitValueError, "letters"),
    ("conv padding word", lambda: lax.conv(np.ones((1, 3, 5, 5)), np.ones((8, 3, 3, 3)), (1, 1), "FULL"),
     PlaitValueError, "unknown padding 'FULL'"),
    ("sum of bools", lambda: lax.reduce_sum(np.ones(3, bool), (0,)), PlaitTypeError, "convert to an integer"),
    ("reduce axis", lambda: lax.reduce_max(f32, (2,)), PlaitIndexError, "axis 2 is out of bounds"),
    ("duplicate axes", lambda: lax.reduce_sum(f32, (1, -1)), PlaitValueError, "duplicate"),
    ("argmax of empty", lambda: lax.argmax(np.ones((0, 3)), 0), PlaitValueError, "empty sequence"),
    ("argmax of complex", lambda: lax.argmax(np.ones(3, complex), 0), PlaitTypeError, "complex"),
    ("cumsum axis", lambda: lax.cumsum(f32, 5), PlaitIndexError, "out of bounds"),
    ("window rank", lambda: lax.reduce_window_max(f32, (2,), (1,)), PlaitTypeError, "needs 2 entries"),
    ("gather float indices", lambda: lax.gather(f32, np.zeros((2, 1)), GDN, (1, 3)), PlaitTypeError,
     "indices must be integers"),
    ("gather index vector", lambda: lax.gather(f32, np.zeros((2, 2), int), GDN, (1, 3)), PlaitTypeError,
     "index vector"),
    ("gather slice too big", lambda: lax.gather(f32, np.zeros((2, 1), int), GDN, (1, 4)), PlaitTypeError,
     "does not fit"),
    ("scatter updates shape", lambda: lax.scatter_add(f32, np.zeros((4, 1), int), np.ones((3, 3), np.float32), SDN),
     PlaitTypeError, "must equal the indices' batch shape (4,)"),
    ("scatter dtype", lambda: lax.scatter(f32, np.zeros((2, 1), int), np.ones((2, 3)), SDN), PlaitTypeError,
     "same dtype"),
    ("sort shapes", lambda: lax.sort((np.ones(3), np.ones(4))), PlaitTypeError, "same shape"),
    ("sort num_keys", lambda: lax.sort((np.ones(3), np.ones(3)), num_keys=3), PlaitValueError, "num_keys"),
    ("top_k too many", lambda: lax.top_k(np.ones(3), 4), PlaitValueError, "k=4"),
]


@pytest.mark.parametrize("what,thunk,exc,text", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistake_raises_helpful_error(what, thunk, exc, text):
    with pytest.raises(exc) as info:
        thunk()
    msg = str(info.value)
    assert text in msg
    assert "test_errors.py" in msg     # the user's line is named


def test_error_under_jit_names_the_users_line():
    def f(a, b):
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())))
    with pytest.raises(PlaitTypeError) as info:
        plait.jit(f)(np.ones((2, 3)), np.ones((4, 2)))
    assert "lhs 3 vs rhs 4" in str(info.value) and "test_errors.py" in str(info.value)
