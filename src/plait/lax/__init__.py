"""``plait.lax``: the primitive set and its Python-facing functions (like ``jax.lax``)."""
from plait.lax.elementwise import *  # noqa: F401,F403
from plait.lax.elementwise import (neg, sign, floor, ceil, round, is_finite, exp, exp2, log,
                                   log1p, expm1, tanh, logistic, sin, cos, tan, asin, acos,
                                   atan, sinh, cosh, asinh, acosh, atanh, sqrt, rsqrt, cbrt,
                                   abs, bitwise_not, real, imag, conj, population_count, add,
                                   sub, mul, div, rem, pow, max, min, atan2, nextafter,
                                   copysign,
                                   bitwise_and, bitwise_or, bitwise_xor, shift_left,
                                   shift_right_arithmetic, shift_right_logical, eq, ne, lt,
                                   le, gt, ge, complex, integer_pow, select, clamp,
                                   convert_element_type, stop_gradient)
from plait.lax.shape_ops import (broadcast_in_dim, broadcast, reshape, transpose, squeeze,
                                 expand_dims, rev, slice, dynamic_slice, dynamic_update_slice,
                                 concatenate, pad, iota, broadcasted_iota)
# --- more primitive modules register below (one import line per module) ---
from plait.lax.reductions import (reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and,
                                  reduce_or, reduce_xor, argmax, argmin)
from plait.lax.cumulative import cumsum, cumprod, cummax, cummin
from plait.lax.contractions import (dot_general, dot, conv_general_dilated, conv,
                                    ConvDimensionNumbers, conv_dimension_numbers)
from plait.lax._windows import padtype_to_pads
from plait.lax.windowed import reduce_window_sum, reduce_window_max, reduce_window_min
from plait.lax.indexing import (gather, scatter, scatter_add, scatter_mul, scatter_min,
                                scatter_max, GatherDimensionNumbers, ScatterDimensionNumbers)
from plait.lax.sorting import sort, sort_key_val, top_k
from plait.lax.control_flow import cond, switch, while_loop, fori_loop, scan, map
from plait.lax.fft import fft, FftType
from plait.lax.precision import Precision
from plait.lax import linalg  # noqa: E402  (plait.lax.linalg: decompositions and solves)
from plait.lax.special import erf, erfc, erf_inv, lgamma, digamma, zeta, polygamma
from plait.lax.convenience import (slice_in_dim, index_in_dim, dynamic_slice_in_dim,
                                  dynamic_index_in_dim, dynamic_update_slice_in_dim,
                                  dynamic_update_index_in_dim, select_n, associative_scan,
                                  reduce, reduce_window, optimization_barrier, square,
                                  reciprocal, collapse, full_like, broadcast_to_rank,
                                  conv_transpose, conv_transpose_padding,
                                  conv_with_general_padding, batch_matmul, split, cumlogsumexp,
                                  broadcast_shapes)
from plait.lax.parallel import (psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all,
                                ppermute, pshuffle, axis_index, axis_size)


# The star import above also brings the helpers elementwise.py is written with; they
# are not plait.lax's API (tests/namespaces/plait.lax.txt is the reviewed list).
for _name in ("annotations", "ALL", "BOOL", "COMPLEX", "FLOAT", "INEXACT", "INT",
              "INTEGRAL", "NUMERIC", "UINT", "PlaitTypeError", "ShapedArray", "Tracer", "Zero", "as_operand",
              "aval_of_operand", "broadcast_batched", "builtins", "check_dtype",
              "check_same_dtypes", "check_same_shapes", "defbroadcasting", "defjvp",
              "defjvp_zero", "deflinear", "defvectorized", "differentiable",
              "dtypes", "get_aval", "instantiate", "is_undefined_primal", "np",
              "standard_binop", "standard_primitive", "standard_unop",
              "tangent_aval", "to_bool", "wrap_array", "ElementwiseOp", "ZERO", "define"):
    globals().pop(_name, None)
del _name

__all__ = ["ConvDimensionNumbers", "FftType", "GatherDimensionNumbers", "Precision",
           "ScatterDimensionNumbers", "abs", "abs_p", "acos", "acos_p", "acosh", "acosh_p",
           "add", "add_p", "all_gather", "all_to_all", "and_p", "argmax", "argmin", "asin",
           "asin_p", "asinh", "asinh_p", "associative_scan", "atan", "atan2", "atan2_p",
           "atan_p", "atanh", "atanh_p", "axis_index", "axis_size", "batch_matmul",
           "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "broadcast",
           "broadcast_in_dim", "broadcast_shapes", "broadcast_to_rank", "broadcasted_iota",
           "cbrt", "cbrt_p", "ceil", "ceil_p", "clamp", "clamp_p", "collapse", "complex",
           "complex_p", "concatenate", "cond", "conj", "conj_p", "conv",
           "conv_dimension_numbers", "conv_general_dilated", "conv_transpose",
           "conv_transpose_padding", "conv_with_general_padding", "convert_element_type",
           "convert_element_type_p", "copysign", "copysign_p", "cos", "cos_p", "cosh",
           "cosh_p", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum",
           "custom_linear_solve", "custom_root", "digamma", "div", "div_p", "dot",
           "dot_general", "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
           "dynamic_update_index_in_dim", "dynamic_update_slice",
           "dynamic_update_slice_in_dim", "eq", "eq_p", "erf", "erf_inv", "erfc", "exp",
           "exp2", "exp2_p", "exp_p", "expand_dims", "expm1", "expm1_p", "fft", "floor",
           "floor_p", "fori_loop", "full", "full_like", "gather", "ge", "ge_p", "gt", "gt_p",
           "imag", "imag_p", "index_in_dim", "integer_pow", "integer_pow_p", "iota",
           "is_finite", "is_finite_p", "le", "le_p", "lgamma", "linalg", "log", "log1p",
           "log1p_p", "log_p", "logaddexp", "logaddexp_p", "logistic", "logistic_p", "lt",
           "lt_p", "map", "max", "max_p", "min", "min_p", "mul", "mul_p", "ne", "ne_p", "neg",
           "neg_p", "nextafter", "nextafter_p", "not_p", "optimization_barrier", "or_p",
           "pad", "padtype_to_pads", "pmax", "pmean", "pmin", "polygamma", "population_count",
           "population_count_p", "pow", "pow_p", "ppermute", "pshuffle", "psum",
           "psum_scatter", "real", "real_p", "reciprocal", "reduce", "reduce_and",
           "reduce_max", "reduce_min", "reduce_or", "reduce_prod", "reduce_sum",
           "reduce_window", "reduce_window_max", "reduce_window_min", "reduce_window_sum",
           "reduce_xor", "rem", "rem_p", "reshape", "rev", "round", "round_p", "rsqrt",
           "rsqrt_p", "scan", "scatter", "scatter_add", "scatter_max", "scatter_min",
           "scatter_mul", "select", "select_n", "select_p", "shift_left", "shift_left_p",
           "shift_right_arithmetic", "shift_right_arithmetic_p", "shift_right_logical",
           "shift_right_logical_p", "sign", "sign_p", "sin", "sin_p", "sinh", "sinh_p",
           "slice", "slice_in_dim", "sort", "sort_key_val", "split", "sqrt", "sqrt_p",
           "square", "squeeze", "stop_gradient", "stop_gradient_p", "sub", "sub_p", "switch",
           "tan", "tan_p", "tanh", "tanh_p", "top_k", "transpose", "while_loop", "xor_p",
           "zeros", "zeta"]


def __getattr__(name):
    """``custom_root``/``custom_linear_solve`` differentiate, so they live in
    ``plait.transforms`` (above lax); they are looked up on first use."""
    if name in ("custom_root", "custom_linear_solve"):
        from plait.transforms import implicit_solvers
        return getattr(implicit_solvers, name)
    raise AttributeError(f"module 'plait.lax' has no attribute {name!r}")
