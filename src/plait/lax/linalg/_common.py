"""Shared pieces of ``plait.lax.linalg``: shape and dtype checks, the NumPy/SciPy
LAPACK entry points the impls call, and small matrix helpers written with ``lax``
(so the rules that use them differentiate and stage)."""
import functools as _functools
import numpy as _np

from plait.core import dtypes as _dtypes
from plait.core.aval import ShapedArray as _ShapedArray
from plait.core.trace import get_aval as _get_aval
from plait.errors import PlaitTypeError as _PlaitTypeError, PlaitValueError as _PlaitValueError
from plait.lax._ad_helpers import Zero as _Zero, tangent_aval as _tangent_aval, full as _full
from plait.lax._batch_helpers import (move_batch_dim as _move_batch_dim,
                                      batch_size as _batch_size)
from plait.lax import elementwise as _ew
from plait.lax.shape_ops import (broadcast_in_dim as _broadcast_in_dim,
                                 transpose as _transpose,
                                 broadcasted_iota as _broadcasted_iota)
from plait.lax.contractions import dot_general as _dot_general
from plait.lax.reductions import reduce_sum as _reduce_sum


_F16_HINT = "LAPACK has no half precision; convert to float32 first"


# --- shape and dtype checks -----------------------------------------------------------
def _check_inexact(name: str, a: _ShapedArray) -> None:
    if not _dtypes.is_inexact(a.dtype):
        raise _PlaitTypeError(f"{name} needs a floating or complex matrix, got dtype {a.dtype} "
                             f"(convert it first, e.g. with .astype(float))")
    if a.dtype.itemsize == 2:
        raise _PlaitTypeError(f"{name} does not accept dtype {a.dtype}: {_F16_HINT}")


def _check_matrix(name: str, a: _ShapedArray, square: bool = True) -> None:
    _check_inexact(name, a)
    if a.ndim < 2:
        raise _PlaitTypeError(f"{name} needs an array of rank >= 2 (a stack of matrices in the "
                             f"last two axes), got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise _PlaitTypeError(f"{name} needs square matrices in the last two axes, got shape "
                             f"{a.shape}")


def _real_dtype(dt: _np.dtype) -> _np.dtype:
    return _np.dtype(_np.float32) if dt in (_np.float32, _np.complex64) else _np.dtype(_np.float64)


def _complex_dtype(dt: _np.dtype) -> _np.dtype:
    single = dt in (_np.float32, _np.complex64)
    return _np.dtype(_np.complex64) if single else _np.dtype(_np.complex128)


def _scipy_linalg(what: str):
    try:
        import scipy.linalg
    except ImportError:
        raise _PlaitValueError(f"{what} needs SciPy's LAPACK bindings; install scipy "
                              f"(pip install scipy)") from None
    return scipy.linalg


@_functools.lru_cache(maxsize=None)
def _lapack_fn(routine: str, dtype: _np.dtype):
    """SciPy's LAPACK ``routine`` for ``dtype`` (looked up once: the lookup costs more
    than a small call)."""
    from scipy.linalg import get_lapack_funcs
    return get_lapack_funcs((routine,), dtype=dtype)[0]


def _has_scipy() -> bool:
    try:
        import scipy.linalg  # noqa: F401
        return True
    except ImportError:
        return False


def _each(batch: tuple):
    return _np.ndindex(*batch) if batch else [()]


def _scipy_each(a, routine: str, kwargs: dict, picks: tuple, shapes: tuple,
                dtypes: tuple | None = None) -> list:
    """SciPy's LAPACK ``routine(matrix, **kwargs)`` on each matrix of the stack ``a``
    (the library the native backend calls, so both backends agree bit for bit); the
    results at positions ``picks`` are stacked into arrays of ``shapes`` (and
    ``dtypes``, by default ``a``'s), NaN where LAPACK reported failure (its last
    result, ``info``)."""
    fn = _lapack_fn(routine, a.dtype)
    outs = [_np.empty(sh, dt) for sh, dt in zip(shapes, dtypes or (a.dtype,) * len(shapes))]
    for i in _each(a.shape[:-2]):
        res = fn(a[i], **kwargs)
        for o, k in zip(outs, picks):
            o[i] = res[k] if res[-1] == 0 else _np.nan
    return outs


# --- small matrix helpers written with lax (so rules differentiate and stage) -----------
def _ndim(x) -> int:
    return _get_aval(x).ndim


def _dtype(x) -> _np.dtype:
    return _get_aval(x).dtype


def _shape(x) -> tuple:
    return _get_aval(x).shape


def _swap(x):
    nd = _ndim(x)
    return _transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x):
    return _ew.conj(x) if _dtypes.is_complex(_dtype(x)) else x


def _H(x):
    return _conj(_swap(x))


def _mm(a, b):
    """Batched matrix product of ``(..., m, k)`` and ``(..., k, n)`` (same batch dims).
    With one column (``n == 1``), a broadcast product summed over ``k``: elementwise,
    so it fuses with its neighbours, and so does its transpose for ``a`` (the outer
    product ``ct xᵀ`` of a solve's gradient), which as a contraction over a size-1
    axis would be a GEMM call writing an ``m x k`` matrix of its own."""
    nd = _ndim(a)
    batch = tuple(range(nd - 2))
    if _shape(b)[-1] == 1 and _shape(a)[-1] > 1:
        row = _broadcast_in_dim(_swap(b), _shape(a), batch + (nd - 2, nd - 1))
        return _col(_reduce_sum(_ew.mul(a, row), (nd - 1,)), 1)
    return _dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _convert(x, dt):
    return x if _dtype(x) == dt else _ew.convert_element_type(x, dt)


def _zeros_like(x):
    return _full(_shape(x), 0, _dtype(x))


def _scale(x, c):
    return _ew.mul(x, _full(_shape(x), c, _dtype(x)))


def _band_mask(shape, rel: str, k: int = 0):
    """Mask of entries ``(i, j)`` of the last two axes with ``j - i rel k``."""
    nd = len(shape)
    i = _broadcasted_iota(_dtypes.int32, shape, nd - 2)
    j = _broadcasted_iota(_dtypes.int32, shape, nd - 1)
    d = _ew.sub(j, i)
    kk = _full(shape, k, _dtypes.int32)
    return {"==": _ew.eq, "<=": _ew.le, ">=": _ew.ge}[rel](d, kk)


def _tril(x, k: int = 0):
    return _ew.select(_band_mask(_shape(x), "<=", k), x, _zeros_like(x))


def _triu(x, k: int = 0):
    return _ew.select(_band_mask(_shape(x), ">=", k), x, _zeros_like(x))


def _diag(x):
    """The main diagonal of the last two axes of a square stack: ``(..., n)``."""
    sel = _ew.select(_band_mask(_shape(x), "=="), x, _zeros_like(x))
    return _reduce_sum(sel, (_ndim(x) - 1,))


def _diag_embed(v):
    """``(..., n)`` -> diagonal matrices ``(..., n, n)``."""
    s = _shape(v)
    shape = s + (s[-1],)
    b = _broadcast_in_dim(v, shape, tuple(range(len(s) - 1)) + (len(s),))
    return _ew.select(_band_mask(shape, "=="), b, _full(shape, 0, _dtype(v)))


def _eye_like(x):
    return _convert(_band_mask(_shape(x), "=="), _dtype(x))


def _row(v, n: int):
    """``(..., k)`` -> ``(..., n, k)``: ``v`` repeated along a new second-to-last axis."""
    s = _shape(v)
    return _broadcast_in_dim(v, s[:-1] + (n, s[-1]), tuple(range(len(s) - 1)) + (len(s),))


def _col(v, n: int):
    """``(..., k)`` -> ``(..., k, n)``: ``v`` repeated along a new last axis."""
    s = _shape(v)
    return _broadcast_in_dim(v, s + (n,), tuple(range(len(s))))


def _real(x):
    return _ew.real(x) if _dtypes.is_complex(_dtype(x)) else x


def _hermitian_part(t, lower: bool):
    """The Hermitian matrix LAPACK sees in ``t`` when it reads one triangle."""
    tri = _tril(t, -1) if lower else _triu(t, 1)
    # the diagonal kept in place by a mask (not extracted and embedded again: its
    # transpose, in a backward pass, is then the same elementwise select, where the
    # extraction's was a strided reduction over the matrix and a broadcast back)
    d = _ew.select(_band_mask(_shape(t), "=="), _convert(_real(t), _dtype(t)), _zeros_like(t))
    return _ew.add(_ew.add(tri, _H(tri)), d)


def _batch_unary(prim):
    """Batch rule of a one-operand primitive: the batch dim goes to the front."""
    def rule(vals, dims, **params):
        x = _move_batch_dim(vals[0], dims[0], 0, _shape(vals[0])[dims[0]])
        out = prim.bind(x, **params)
        return out, [0] * len(out)
    prim.def_rule("batch", rule)


def _batch_front(vals, dims):
    size = _batch_size(vals, dims)
    return [_move_batch_dim(v, d, 0, size) for v, d in zip(vals, dims)]


def _values_only_dce(flag: str, values: int):
    """The ``dce`` rule of a decomposition whose boolean param ``flag`` asks for the
    vectors as well as the values (output ``values``): when only the values are read,
    the equation is rebound without the vectors (LAPACK's ``jobz='N'``, which skips
    their computation), so ``eigh(a)[1]`` costs what ``eigvalsh`` costs."""
    def rule(eqn, used_outputs):
        if not any(used_outputs):
            return None, []
        if eqn.params[flag] and not any(u for i, u in enumerate(used_outputs) if i != values):
            eqn = eqn.replace(outputs=[eqn.outputs[values]],
                              params=dict(eqn.params, **{flag: False}))
        return eqn, [True] * len(eqn.inputs)
    return rule


def _zero_tangents(outs):
    return [_Zero(_tangent_aval(_get_aval(o))) for o in outs]
