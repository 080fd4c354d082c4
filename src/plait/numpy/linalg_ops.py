"""Products of arrays: dot, matmul (``@``), tensordot, inner, outer, vdot, kron, vecdot,
matvec, vecmat, trace — each one ``lax.dot_general`` (or a diagonal
sum) with NumPy's shape rules and result dtypes.

``dot``/``inner``/``outer``/``kron``/``tensordot``/``vdot`` convert Python scalars to
strong arrays as NumPy does (``np.dot(int32_array, 2)`` is int64); ``matmul``,
``vecdot``, ``matvec`` and ``vecmat`` are ufuncs in NumPy 2 and treat them as weak.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.lax.contractions import dot_general_p
from plait.lax.precision import check_precision
from plait.core import dtypes
from plait.core.array_methods import ArrayMethods, install_methods
from plait.core.trace import get_aval
from plait.errors import PlaitValueError
from plait.numpy import _promote


def _strong_pair(name, a, b):
    a = _promote.asarray_strong(a, name=name)
    b = _promote.asarray_strong(b, name=name)
    return _promote.promote_dtypes(name, a, b)


def _shape(x) -> tuple:
    return get_aval(x).shape


def _mul(name, a, b):
    """Elementwise product with broadcasting (logical and for bool)."""
    a, b = _promote.promote_args(name, a, b)
    if dtypes.is_bool(get_aval(a).dtype):
        return lax.bitwise_and(a, b)
    return lax.mul(a, b)


def _conj(x):
    return lax.conj(x) if dtypes.is_complex(get_aval(x).dtype) else x


def _ravel(x):
    return lax.reshape(x, (get_aval(x).size,))


def _fmt(s) -> str:
    return _promote._fmt_shape(tuple(s))


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's ``dot``: products of scalars, vectors, matrices and N-d arrays
    (``precision`` accepted as in ``jax.numpy``)."""
    _jax_kwargs("dot", precision, preferred_element_type)
    a, b = _strong_pair("dot", a, b)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _mul("dot", a, b)
    bdim = len(sb) - 2 if len(sb) >= 2 else 0
    if sa[-1] != sb[bdim]:
        raise PlaitValueError(f"shapes {_fmt(sa)} and {_fmt(sb)} not aligned: {sa[-1]} (dim "
                              f"{len(sa) - 1}) != {sb[bdim]} (dim {bdim})")
    return lax.dot_general(a, b, (((len(sa) - 1,), (bdim,)), ((), ())))


def vdot(a, b):
    """Dot product of the flattened arrays, conjugating the first (``numpy.vdot``)."""
    a, b = _strong_pair("vdot", a, b)
    a, b = _ravel(a), _ravel(b)
    if _shape(a) != _shape(b):
        raise PlaitValueError(f"vdot: vectors have different lengths ({_shape(a)[0]} and "
                              f"{_shape(b)[0]})")
    return lax.dot_general(_conj(a), b, (((0,), (0,)), ((), ())))


def inner(a, b):
    """Sum product over the last axes (``numpy.inner``)."""
    a, b = _strong_pair("inner", a, b)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _mul("inner", a, b)
    if sa[-1] != sb[-1]:
        raise PlaitValueError(f"inner: shapes {_fmt(sa)} and {_fmt(sb)} not aligned: "
                              f"{sa[-1]} (dim {len(sa) - 1}) != {sb[-1]} (dim {len(sb) - 1})")
    return lax.dot_general(a, b, (((len(sa) - 1,), (len(sb) - 1,)), ((), ())))


def outer(a, b):
    """Outer product of the flattened inputs: shape ``(a.size, b.size)``, each element the
    one product ``a[i] * b[j]`` (as NumPy: no summation, so signed zeros survive)."""
    a, b = _strong_pair("outer", a, b)
    ra, rb = _ravel(a), _ravel(b)
    shape = (get_aval(ra).shape[0], get_aval(rb).shape[0])
    ba = lax.broadcast_in_dim(ra, shape, (0,))
    bb = lax.broadcast_in_dim(rb, shape, (1,))
    return lax.bitwise_and(ba, bb) if get_aval(ba).dtype == np.bool_ else lax.mul(ba, bb)


def tensordot(a, b, axes=2):
    """Sum products over ``axes`` (an int N: last N of ``a`` with first N of ``b``, or a
    pair of axis sequences)."""
    a, b = _strong_pair("tensordot", a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise PlaitValueError("tensordot: axes must be an int or a pair of axis sequences")
        xa, xb = axes
        xa = list(xa) if isinstance(xa, (tuple, list)) else [xa]
        xb = list(xb) if isinstance(xb, (tuple, list)) else [xb]
    else:
        n = _promote.static_int(axes, "tensordot", "axes")
        if n < 0 or n > min(na, nb):
            raise PlaitValueError(f"tensordot: axes={n} is out of range for operands of rank "
                                  f"{na} and {nb}")
        xa, xb = list(range(na - n, na)), list(range(n))
    if len(xa) != len(xb):
        raise PlaitValueError("tensordot: shape-mismatch for sum (the two axis lists have "
                              "different lengths)")
    xa = [_promote.normalize_axis(x, na, "tensordot") for x in xa]
    xb = [_promote.normalize_axis(x, nb, "tensordot") for x in xb]
    for i, j in zip(xa, xb):
        if _shape(a)[i] != _shape(b)[j]:
            raise PlaitValueError(f"tensordot: shape-mismatch for sum: axis {i} of "
                                  f"{_fmt(_shape(a))} vs axis {j} of {_fmt(_shape(b))}")
    return lax.dot_general(a, b, ((xa, xb), ((), ())))


def _batched(name, a, b, ca: int, cb: int, core_a: int, core_b: int):
    """Broadcast the leading (batch) dims of ``a`` and ``b`` and contract dim ``ca`` of
    ``a``'s core with ``cb`` of ``b``'s; returns ``(batch..., a core free, b core free)``."""
    sa, sb = _shape(a), _shape(b)
    if sa[len(sa) - core_a + ca] != sb[len(sb) - core_b + cb]:
        raise PlaitValueError(
            f"{name}: Input operand 1 has a mismatch in its core dimension {cb}, with gufunc "
            f"signature {_SIGS[name]} (size {sb[len(sb) - core_b + cb]} is different from "
            f"{sa[len(sa) - core_a + ca]})")
    batch = _promote.broadcast_shapes(sa[:len(sa) - core_a], sb[:len(sb) - core_b])
    nb = len(batch)
    if len(sb) == core_b:   # only a has batch dims: they become free dims of a
        out = lax.dot_general(a, b, (((len(sa) - core_a + ca,), (cb,)), ((), ())))
        return out
    a = _promote.broadcast_to_shape(a, batch + sa[len(sa) - core_a:])
    b = _promote.broadcast_to_shape(b, batch + sb[len(sb) - core_b:])
    dn = (((nb + ca,), (nb + cb,)), (tuple(range(nb)), tuple(range(nb))))
    return lax.dot_general(a, b, dn)


_SIGS = {"matmul": "(n?,k),(k,m?)->(n?,m?)", "vecdot": "(n),(n)->()",
         "matvec": "(m,n),(n)->(m)", "vecmat": "(n),(n,m)->(m)"}


_MATRIX_DN = (((1,), (0,)), ((), ()))


def _jax_kwargs(where: str, precision, preferred_element_type) -> None:
    """JAX's contraction keywords: ``precision`` validated (it has no effect, products
    are in the operands' dtype); ``preferred_element_type`` must be None here."""
    check_precision(precision, where)
    if preferred_element_type is not None:
        raise PlaitValueError(f"{where}: preferred_element_type is supported by "
                               f"plait.lax.dot_general only; cast the operands instead")


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's ``matmul`` rules (1-D promotion, batch broadcasting;
    ``precision`` accepted as in ``jax.numpy``)."""
    _jax_kwargs("matmul", precision, preferred_element_type)
    if isinstance(a, ArrayMethods) and isinstance(b, ArrayMethods):
        sa, sb = a.aval, b.aval          # the common case, matrix @ matrix of one dtype
        if (len(sa.shape) == 2 and len(sb.shape) == 2 and sa.shape[1] == sb.shape[0]
                and sa.dtype == sb.dtype and sa.weak_type == sb.weak_type
                and sa.dtype.kind in "fc"):
            return dot_general_p.bind(a, b, dimension_numbers=_MATRIX_DN,
                                      preferred_element_type=None)
    a, b = _promote.promote_dtypes("matmul", a, b)
    sa, sb = _shape(a), _shape(b)
    for i, s in enumerate((sa, sb)):
        if not s:
            raise PlaitValueError(f"matmul: Input operand {i} does not have enough dimensions "
                                  f"(has 0, gufunc core with signature {_SIGS['matmul']} "
                                  f"requires 1)")
    a1, b1 = len(sa) == 1, len(sb) == 1
    if a1:
        a = lax.reshape(a, (1,) + sa)
    if b1:
        b = lax.reshape(b, sb + (1,))
    out = _batched("matmul", a, b, 1, 0, 2, 2)
    nd = len(_shape(out))
    drop = ([nd - 2] if a1 else []) + ([nd - 1] if b1 else [])
    return lax.squeeze(out, drop) if drop else out


def _moveaxis_last(x, axis: int):
    nd = len(_shape(x))
    axis = _promote.normalize_axis(axis, nd, "vecdot")
    perm = [i for i in range(nd) if i != axis] + [axis]
    return lax.transpose(x, perm)


def vecdot(x1, x2, axis: int = -1):
    """Vector dot product over ``axis`` with broadcasting, conjugating ``x1``."""
    x1, x2 = _promote.promote_dtypes("vecdot", x1, x2)
    for i, x in enumerate((x1, x2)):
        if not _shape(x):
            raise PlaitValueError(f"vecdot: Input operand {i} does not have enough dimensions")
    shape = _promote.broadcast_shapes(_shape(x1), _shape(x2))
    x1 = _moveaxis_last(_promote.broadcast_to_shape(x1, shape[:-1] + _shape(x1)[-1:]), axis)
    x2 = _moveaxis_last(_promote.broadcast_to_shape(x2, shape[:-1] + _shape(x2)[-1:]), axis)
    return _batched("vecdot", _conj(x1), x2, 0, 0, 1, 1)


def matvec(x1, x2):
    """Matrix-vector product over the last axes with broadcasting (NumPy 2.2 ``matvec``)."""
    x1, x2 = _promote.promote_dtypes("matvec", x1, x2)
    if len(_shape(x1)) < 2 or len(_shape(x2)) < 1:
        raise PlaitValueError("matvec: operands need at least 2 and 1 dimensions")
    return _batched("matvec", x1, x2, 1, 0, 2, 1)


def vecmat(x1, x2):
    """Vector-matrix product ``conj(x1) @ x2`` with broadcasting (NumPy 2.2 ``vecmat``)."""
    x1, x2 = _promote.promote_dtypes("vecmat", x1, x2)
    if len(_shape(x1)) < 1 or len(_shape(x2)) < 2:
        raise PlaitValueError("vecmat: operands need at least 1 and 2 dimensions")
    s1, s2 = _shape(x1), _shape(x2)
    batch = _promote.broadcast_shapes(s1[:-1], s2[:-2])
    x1 = _promote.broadcast_to_shape(_conj(x1), batch + s1[-1:])
    x2 = _promote.broadcast_to_shape(x2, batch + s2[-2:])
    return _batched("vecmat", x1, x2, 0, 0, 1, 2)


def kron(a, b):
    """Kronecker product (``numpy.kron``)."""
    a, b = _strong_pair("kron", a, b)
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a, b = lax.reshape(a, sa), lax.reshape(b, sb)
    out = lax.dot_general(a, b, (((), ()), ((), ())))
    perm = [k for i in range(nd) for k in (i, nd + i)]
    return lax.reshape(lax.transpose(out, perm), tuple(x * y for x, y in zip(sa, sb)))


def sum_dtype(dt):
    """The dtype ``numpy.sum`` accumulates in: small (u)ints and bool become (u)int64."""
    if dtypes.is_bool(dt) or (dtypes.is_integer(dt) and not dtypes.is_unsigned(dt)
                              and dt.itemsize < 8):
        return dtypes.int64
    if dtypes.is_unsigned(dt) and dt.itemsize < 8:
        return dtypes.uint64
    return dt


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None):
    """Sum along a diagonal (``numpy.trace``), with ``numpy.sum``'s result dtype."""
    from plait.numpy.indexing import diagonal
    d = diagonal(a, offset, axis1, axis2)
    dt = sum_dtype(get_aval(d).dtype) if dtype is None else dtypes.canonical_dtype(dtype)
    d = _promote.cast(d, dt)
    if dtypes.is_bool(dt):
        return lax.reduce_or(d, (len(_shape(d)) - 1,))
    return lax.reduce_sum(d, (len(_shape(d)) - 1,))


def _rmatmul(self, other):
    return matmul(other, self)


def _trace_method(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None):
    return trace(self, offset, axis1, axis2, dtype)


install_methods({"__matmul__": matmul, "__rmatmul__": _rmatmul, "dot": dot,
                 "trace": _trace_method})

__all__ = ["dot", "vdot", "inner", "outer", "tensordot", "matmul", "vecdot", "matvec",
           "vecmat", "kron", "trace"]
