"""``plait.numpy``: the NumPy 2 API over ``plait.lax`` (``import plait.numpy as pnp``).

Functions accept plait arrays, tracers, NumPy arrays, Python scalars and nested
lists; they run eagerly (returning ``plait.Array``) and under ``plait.jit``.
dtype promotion follows NumPy 2 (NEP 50): Python scalars are weak, so
``float32_array + 2.0`` is float32 and ``int8_array + 1`` is int8.
"""
import math as _math

import numpy as _np

from plait.core import dtypes as _dtypes
from plait.core.array_methods import ArrayMethods as ndarray


def _scalar_type(np_type, name: str):
    """A dtype name usable as ``dtype=`` and callable like ``pnp.float32(x)``."""
    def __new__(cls, x=0, /):
        from plait.numpy.creation import asarray
        return asarray(x, dtype=np_type)
    return type(name, (np_type,), {"__new__": __new__, "__module__": __name__,
                                   "__doc__": f"The {name} dtype; calling it casts to an array."})


bool_ = _scalar_type(_np.bool_, "bool_")
bool = bool_
int8 = _scalar_type(_np.int8, "int8")
int16 = _scalar_type(_np.int16, "int16")
int32 = _scalar_type(_np.int32, "int32")
int64 = _scalar_type(_np.int64, "int64")
uint8 = _scalar_type(_np.uint8, "uint8")
uint16 = _scalar_type(_np.uint16, "uint16")
uint32 = _scalar_type(_np.uint32, "uint32")
uint64 = _scalar_type(_np.uint64, "uint64")
float16 = _scalar_type(_np.float16, "float16")
float32 = _scalar_type(_np.float32, "float32")
float64 = _scalar_type(_np.float64, "float64")
complex64 = _scalar_type(_np.complex64, "complex64")
complex128 = _scalar_type(_np.complex128, "complex128")
int_ = int64
uint = uint64
intp = int64
uintp = uint64
float_ = double = float64
single = float32
half = float16
cdouble = complex128
csingle = complex64
if _dtypes.bfloat16 is not None:  # pragma: no cover - needs ml_dtypes
    bfloat16 = _dtypes.bfloat16.type

from numpy import (dtype, generic, number, integer, signedinteger, unsignedinteger,  # noqa: E402
                   inexact, floating, complexfloating, issubdtype)

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
euler_gamma = 0.5772156649015329
newaxis = None

from plait.numpy.ufuncs import (  # noqa: E402
    add, subtract, multiply, divide, true_divide, floor_divide, remainder, mod, fmod, divmod,
    power, pow, float_power, negative, positive, reciprocal, absolute, abs, fabs, sign, sin,
    cos, tan, arcsin, asin, arccos, acos, arctan, atan, sinh, cosh, tanh, arcsinh, asinh,
    arccosh, acosh, arctanh, atanh, arctan2, atan2, hypot, deg2rad, radians, rad2deg, degrees,
    exp, exp2, expm1, log, log1p, log2, log10, logaddexp, logaddexp2, sqrt, cbrt, square,
    floor, ceil, trunc, rint, maximum, minimum, fmax, fmin, equal, not_equal, less, less_equal,
    greater, greater_equal, logical_and, logical_or, logical_xor, logical_not, bitwise_and,
    bitwise_or, bitwise_xor, bitwise_not, invert, bitwise_invert, left_shift,
    bitwise_left_shift, right_shift, bitwise_right_shift, bitwise_count, isnan, isinf,
    isfinite, signbit, copysign, nextafter, conjugate, conj, heaviside, ldexp, modf, isposinf,
    isneginf, real, imag, angle, isreal, iscomplex, iscomplexobj, isrealobj, sinc, fix, round,
    around, clip, where, nonzero, flatnonzero, argwhere, nan_to_num, isclose, allclose,
    array_equal, array_equiv)
from plait.numpy.reductions import (  # noqa: E402
    sum, prod, mean, var, std, max, min, amax, amin, ptp, argmax, argmin, any, all,
    count_nonzero, cumsum, cumprod, cumulative_sum, cumulative_prod, average, nansum, nanprod,
    nanmean, nanvar, nanstd, nanmax, nanmin, nanargmax, nanargmin, nancumsum, nancumprod)
from plait.numpy.creation import (  # noqa: E402
    array, asarray, asanyarray, ascontiguousarray, copy, zeros, ones, empty, full, zeros_like,
    ones_like, empty_like, full_like, arange, linspace, logspace, eye, identity, tri, tril,
    triu, meshgrid, diag, diagflat, fromfunction)
from plait.numpy.shapes import (  # noqa: E402
    shape, ndim, size, result_type, promote_types, can_cast, iinfo, finfo, astype, reshape,
    ravel, transpose, permute_dims, matrix_transpose, moveaxis, swapaxes, squeeze,
    expand_dims, broadcast_shapes, broadcast_to, broadcast_arrays, atleast_1d, atleast_2d,
    atleast_3d, concatenate, concat, stack, hstack, vstack, dstack, column_stack, split,
    array_split, hsplit, vsplit, dsplit, append, repeat, tile, flip, fliplr, flipud, roll,
    rot90, resize, pad, diff, ediff1d, unstack, rollaxis, isscalar)
from plait.numpy import methods as _methods  # noqa: E402

_methods.install()

import importlib as _importlib  # noqa: E402
import importlib.util as _ilu  # noqa: E402

from plait.numpy.statistics import median, quantile, percentile  # noqa: E402

# Advanced indexing comes from another module; it is loaded when present and imported
# normally, so errors inside it are not hidden.
if _ilu.find_spec("plait.numpy.indexing") is not None:
    _importlib.import_module("plait.numpy.indexing")

from plait.numpy.indexing import (take, take_along_axis, put_along_axis,  # noqa: E402,F811
                                  nonzero, flatnonzero, argwhere, diagonal, ix_)
from plait.numpy.linalg_ops import (dot, vdot, inner, outer, tensordot, matmul,  # noqa: E402
                                    vecdot, matvec, vecmat, kron, trace)
from plait.numpy.einsum import einsum, einsum_path  # noqa: E402
from plait.numpy.sorting import (sort, argsort, lexsort, partition, argpartition,  # noqa: E402
                                 sort_complex, searchsorted, digitize, unique, unique_values,
                                 unique_counts, unique_inverse, unique_all, bincount,
                                 histogram, histogram_bin_edges)
from plait.numpy import linalg  # noqa: E402
from plait.numpy import fft  # noqa: E402
from plait.numpy.index_tricks import (unravel_index, ravel_multi_index, indices,  # noqa: E402
                                      diag_indices, diag_indices_from, tril_indices,
                                      triu_indices, tril_indices_from, triu_indices_from,
                                      choose, select, compress, extract, isin)
from plait.numpy.array_api import (__array_api_version__, __array_namespace_info__,  # noqa: E402
                                   isdtype, from_dlpack)
from plait.numpy.mathfuncs import frexp, gcd, lcm, spacing, i0, real_if_close  # noqa: E402
from plait.numpy.signal import (convolve, correlate, interp, unwrap, gradient,  # noqa: E402
                                trapezoid)
from plait.numpy.setops import union1d, intersect1d, setdiff1d, setxor1d  # noqa: E402
from plait.numpy.editing import (delete, insert, put, place, putmask,  # noqa: E402
                                 fill_diagonal, trim_zeros, block, row_stack)
from plait.numpy.polynomial import (vander, polyval, polyadd, polysub, polymul,  # noqa: E402
                                    polyder, polyint, polydiv, poly, roots, polyfit)
from plait.numpy.windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: E402
from plait.numpy.index_grids import mgrid, ogrid, r_, c_, geomspace  # noqa: E402
from plait.numpy.nanstats import (nanquantile, nanpercentile, nanmedian,  # noqa: E402,F811
                                  quantile, percentile)
from plait.numpy.covariance import cov, corrcoef  # noqa: E402
from plait.numpy.functional import (apply_along_axis, apply_over_axes,  # noqa: E402
                                    vectorize, piecewise)
from plait.numpy.histograms import histogram2d, histogramdd  # noqa: E402
from plait.numpy.bits import packbits, unpackbits  # noqa: E402
from plait.numpy.fromdata import fromiter, frombuffer, fromstring  # noqa: E402
from plait.numpy.pad_modes import pad  # noqa: E402,F811
from plait.numpy.vector_ops import cross  # noqa: E402

# The public names (tests/namespaces/plait.numpy.txt is the reviewed list).
__all__ = ["abs", "absolute", "acos", "acosh", "add", "all", "allclose", "amax", "amin", "angle",
           "any", "append", "apply_along_axis", "apply_over_axes", "arange", "arccos",
           "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax",
           "argmin", "argpartition", "argsort", "argwhere", "around", "array",
           "array_equal", "array_equiv", "array_split", "asanyarray", "asarray",
           "ascontiguousarray", "asin", "asinh", "astype", "atan", "atan2", "atanh",
           "atleast_1d", "atleast_2d", "atleast_3d", "average", "bartlett", "bincount",
           "bitwise_and", "bitwise_count", "bitwise_invert", "bitwise_left_shift",
           "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
           "blackman", "block", "bool", "bool_", "broadcast_arrays", "broadcast_shapes",
           "broadcast_to", "c_", "can_cast", "cbrt", "cdouble", "ceil", "choose",
           "clip", "column_stack", "complex128", "complex64", "complexfloating",
           "compress", "concat", "concatenate", "conj", "conjugate", "convolve", "copy",
           "copysign", "corrcoef", "correlate", "cos", "cosh", "count_nonzero", "cov",
           "cross", "csingle", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum",
           "deg2rad", "degrees", "delete", "diag", "diag_indices", "diag_indices_from",
           "diagflat", "diagonal", "diff", "digitize", "divide", "divmod", "dot",
           "double", "dsplit", "dstack", "dtype", "e", "ediff1d", "einsum",
           "einsum_path", "empty", "empty_like", "equal", "euler_gamma", "exp", "exp2",
           "expand_dims", "expm1", "extract", "eye", "fabs", "fft", "fill_diagonal",
           "finfo", "fix", "flatnonzero", "flip", "fliplr", "flipud", "float16",
           "float32", "float64", "float_", "float_power", "floating", "floor",
           "floor_divide", "fmax", "fmin", "fmod", "frexp", "from_dlpack", "frombuffer",
           "fromfunction", "fromiter", "fromstring", "full", "full_like", "gcd",
           "generic", "geomspace", "gradient", "greater", "greater_equal", "half",
           "hamming", "hanning", "heaviside", "histogram", "histogram2d",
           "histogram_bin_edges", "histogramdd", "hsplit", "hstack", "hypot", "i0",
           "identity", "iinfo", "imag", "indices", "inexact", "inf", "inner", "insert",
           "int16", "int32", "int64", "int8", "int_", "integer", "interp",
           "intersect1d", "intp", "invert", "isclose", "iscomplex", "iscomplexobj",
           "isdtype", "isfinite", "isin", "isinf", "isnan", "isneginf", "isposinf",
           "isreal", "isrealobj", "isscalar", "issubdtype", "ix_", "kaiser", "kron",
           "lcm", "ldexp", "left_shift", "less", "less_equal", "lexsort", "linalg",
           "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2",
           "logical_and", "logical_not", "logical_or", "logical_xor", "logspace",
           "matmul", "matrix_transpose", "matvec", "max", "maximum", "mean", "median",
           "meshgrid", "mgrid", "min", "minimum", "mod", "modf", "moveaxis", "multiply",
           "nan", "nan_to_num", "nanargmax", "nanargmin", "nancumprod", "nancumsum",
           "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod",
           "nanquantile", "nanstd", "nansum", "nanvar", "ndarray", "ndim", "negative",
           "newaxis", "nextafter", "nonzero", "not_equal", "number", "ogrid", "ones",
           "ones_like", "outer", "packbits", "pad", "partition", "percentile",
           "permute_dims", "pi", "piecewise", "place", "poly", "polyadd", "polyder",
           "polydiv", "polyfit", "polyint", "polymul", "polysub", "polyval", "positive",
           "pow", "power", "prod", "promote_types", "ptp", "put", "put_along_axis",
           "putmask", "quantile", "r_", "rad2deg", "radians", "ravel",
           "ravel_multi_index", "real", "real_if_close", "reciprocal", "remainder",
           "repeat", "reshape", "resize", "result_type", "right_shift", "rint", "roll",
           "rollaxis", "roots", "rot90", "round", "row_stack", "searchsorted", "select",
           "setdiff1d", "setxor1d", "shape", "sign", "signbit", "signedinteger", "sin",
           "sinc", "single", "sinh", "size", "sort", "sort_complex", "spacing", "split",
           "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "swapaxes",
           "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace",
           "transpose", "trapezoid", "tri", "tril", "tril_indices", "tril_indices_from",
           "trim_zeros", "triu", "triu_indices", "triu_indices_from", "true_divide",
           "trunc", "uint", "uint16", "uint32", "uint64", "uint8", "uintp", "union1d",
           "unique", "unique_all", "unique_counts", "unique_inverse", "unique_values",
           "unpackbits", "unravel_index", "unsignedinteger", "unstack", "unwrap",
           "vander", "var", "vdot", "vecdot", "vecmat", "vectorize", "vsplit", "vstack",
           "where", "zeros", "zeros_like"]
if _dtypes.bfloat16 is not None:  # pragma: no cover - needs ml_dtypes
    __all__.append("bfloat16")
