"""Shape manipulation and dtype utilities of plait.numpy (reshape, concatenate, pad, ...).

Every function takes static shape arguments (Python ints) and builds its result
from ``plait.lax`` structural primitives, so it works eagerly and under ``jit``.
Index maps for ``pad`` modes and list-valued ``repeat`` are computed from the
static sizes and realized as a few slices, reversals and broadcasts.
"""
from __future__ import annotations

import builtins
from typing import Sequence

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval
from plait.errors import PlaitTypeError, PlaitValueError, PlaitIndexError
from plait.numpy._promote import (arg, asarray_strong, broadcast_shapes as _bshapes,
                                  broadcast_to_shape, cast, is_array, is_python_scalar,
                                  normalize_axis, result_type_of, static_int, static_shape,
                                  static_axes, wrap)
from plait.numpy._basic_index import slice_axis


def _arr(x, name: str = "argument"):
    return asarray_strong(x, name=name)


def _shape(x) -> tuple:
    return get_aval(x).shape


# --- queries --------------------------------------------------------------------------
def shape(a) -> tuple:
    """The shape of ``a`` (a Python tuple; static even under jit)."""
    return _shape(_arr(a, "shape"))


def ndim(a) -> int:
    """Number of dimensions of ``a``."""
    return len(shape(a))


def size(a, axis: int | None = None) -> int:
    """Number of elements of ``a`` (along ``axis`` if given)."""
    s = shape(a)
    if axis is not None:
        return s[normalize_axis(axis, len(s), "size")]
    n = 1
    for d in s:
        n *= d
    return n


def result_type(*arrays_and_dtypes) -> np.dtype:
    """NumPy 2 ``result_type`` with weak Python scalars (NEP 50)."""
    items = []
    for x in arrays_and_dtypes:
        if is_python_scalar(x):
            items.append((dtypes.python_scalar_dtype(x), True))
        elif isinstance(x, (np.dtype, type, str)):
            items.append((dtypes.canonical_dtype(x), False))
        else:
            a = get_aval(arg(x, "result_type"))
            items.append((a.dtype, a.weak_type))
    if not items:
        raise PlaitValueError("at least one array or dtype is required")
    return dtypes.result_type(*items)[0]


def promote_types(type1, type2) -> np.dtype:
    """The smallest dtype both ``type1`` and ``type2`` cast to safely."""
    return np.promote_types(dtypes.canonical_dtype(type1), dtypes.canonical_dtype(type2))


def _dtype_of(x) -> np.dtype:
    if isinstance(x, (np.dtype, type, str)):
        return dtypes.canonical_dtype(x)
    if is_python_scalar(x):
        raise PlaitTypeError("can_cast() does not support Python ints, floats, and complex "
                             "because the result used to depend on the value.")
    return get_aval(arg(x, "can_cast")).dtype


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether a cast from ``from_`` (array or dtype) to ``to`` is allowed by ``casting``."""
    return bool(np.can_cast(_dtype_of(from_), dtypes.canonical_dtype(to), casting))


def iinfo(int_type):
    """Machine limits of an integer dtype (or of an array's dtype)."""
    return np.iinfo(_dtype_of(int_type))


def finfo(dtype):
    """Machine limits of a floating dtype (or of an array's dtype)."""
    return dtypes.finfo(_dtype_of(dtype))


def astype(x, dtype, /, *, copy: bool = True, device=None):
    """``x`` converted to ``dtype`` (NumPy's casting: float to bool is ``x != 0``), on
    ``device`` when given."""
    y = cast(_arr(x, "astype"), dtypes.canonical_dtype(dtype), False)
    if device is None:
        return y
    from plait.numpy.array_api import place
    return place(y, device, "astype")


# --- reshaping ------------------------------------------------------------------------
def _fmt(s) -> str:
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


def _infer_shape(new: tuple, total: int) -> tuple:
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise PlaitValueError("can only specify one unknown dimension")
    if any(d < -1 for d in new):
        raise PlaitValueError("negative dimensions not allowed")
    known = 1
    for d in new:
        if d != -1:
            known *= d
    if unknown:
        if known == 0 or total % known:
            raise PlaitValueError(f"cannot reshape array of size {total} into shape {_fmt(new)}")
        new = tuple(total // known if d == -1 else d for d in new)
    elif known != total:
        raise PlaitValueError(f"cannot reshape array of size {total} into shape {_fmt(new)}")
    return new


def reshape(a, /, shape=None, order: str = "C", *, newshape=None, copy=None):
    """Gives a new shape to an array (one dimension may be -1); order 'C' or 'F'."""
    if shape is None:
        shape = newshape
    if shape is None:
        raise PlaitTypeError("reshape() missing the required 'shape' argument")
    x = _arr(a, "reshape")
    a_ = get_aval(x)
    new = _infer_shape(static_shape(shape, "reshape"), a_.size)
    if order == "F":
        xt = lax.transpose(x, tuple(reversed(range(a_.ndim))))
        y = lax.reshape(xt, tuple(reversed(new)))
        return lax.transpose(y, tuple(reversed(range(len(new)))))
    if order not in ("C", "A"):
        raise PlaitValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
    return lax.reshape(x, new)


def ravel(a, order: str = "C"):
    """The flattened array."""
    return reshape(a, (-1,), order="F" if order == "F" else "C")


def transpose(a, axes=None):
    """Permute the dimensions (reverse them when ``axes`` is None)."""
    x = _arr(a, "transpose")
    nd = get_aval(x).ndim
    if axes is None:
        perm = tuple(reversed(range(nd)))
    else:
        axes = static_shape(axes, "transpose")
        if len(axes) != nd:
            raise PlaitValueError("axes don't match array")
        perm = tuple(normalize_axis(ax, nd, "transpose") for ax in axes)
        if len(set(perm)) != nd:
            raise PlaitValueError("repeated axis in transpose")
    return lax.transpose(x, perm)


def permute_dims(a, /, axes=None):
    """Array API name of :func:`transpose`."""
    return transpose(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes (the array must have at least 2 dimensions)."""
    x = _arr(x, "matrix_transpose")
    if get_aval(x).ndim < 2:
        raise PlaitValueError("matrix_transpose requires an array of at least 2 dimensions")
    return swapaxes(x, -1, -2)


def moveaxis(a, source, destination):
    """Move axes ``source`` to positions ``destination``; the others keep their order."""
    x = _arr(a, "moveaxis")
    nd = get_aval(x).ndim
    src = [normalize_axis(s, nd, "moveaxis") for s in static_shape(source, "moveaxis")]
    dst = [normalize_axis(d, nd, "moveaxis") for d in static_shape(destination, "moveaxis")]
    if len(src) != len(dst):
        raise PlaitValueError("`source` and `destination` arguments must have the same "
                              "number of elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(x, tuple(order))


def swapaxes(a, axis1: int, axis2: int):
    """Interchange two axes."""
    x = _arr(a, "swapaxes")
    nd = get_aval(x).ndim
    i, j = normalize_axis(axis1, nd, "swapaxes"), normalize_axis(axis2, nd, "swapaxes")
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(x, tuple(perm))


def squeeze(a, axis=None):
    """Remove axes of length one (all of them, or the given ones)."""
    x = _arr(a, "squeeze")
    s = _shape(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(s) if d == 1)
    else:
        axes = static_axes(axis, len(s), "squeeze")
        if any(s[i] != 1 for i in axes):
            raise PlaitValueError("cannot select an axis to squeeze out which has size not "
                                  "equal to one")
    return lax.reshape(x, tuple(d for i, d in enumerate(s) if i not in axes))


def expand_dims(a, axis):
    """Insert length-one axes at the (result) positions ``axis``."""
    x = _arr(a, "expand_dims")
    s = _shape(x)
    axes = static_axes(axis, len(s) + (len(axis) if isinstance(axis, (tuple, list)) else 1),
                       "expand_dims")
    out = list(s)
    for ax in axes:
        out.insert(ax, 1)
    return lax.reshape(x, tuple(out))


def broadcast_shapes(*shapes) -> tuple:
    """The broadcast shape of ``shapes`` (NumPy's rules)."""
    return _bshapes(*[static_shape(s, "broadcast_shapes") for s in shapes])


def broadcast_to(array, shape):
    """Broadcast ``array`` to ``shape``."""
    return broadcast_to_shape(_arr(array, "broadcast_to"), static_shape(shape, "broadcast_to"))


def broadcast_arrays(*args):
    """Broadcast arrays against each other (a tuple of arrays of one shape)."""
    xs = [_arr(a, "broadcast_arrays") for a in args]
    s = _bshapes(*[_shape(x) for x in xs])
    return tuple(broadcast_to_shape(x, s) for x in xs)


def atleast_1d(*arys):
    """View inputs as arrays with at least one dimension."""
    out = [reshape(x, (1,)) if ndim(x) == 0 else _arr(x) for x in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*arys):
    """View inputs as arrays with at least two dimensions."""
    def one(x):
        x = _arr(x)
        s = _shape(x)
        return lax.reshape(x, (1,) * (2 - len(s)) + s) if len(s) < 2 else x
    out = [one(x) for x in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*arys):
    """View inputs as arrays with at least three dimensions."""
    def one(x):
        x = _arr(x)
        s = _shape(x)
        if len(s) == 0:
            return lax.reshape(x, (1, 1, 1))
        if len(s) == 1:
            return lax.reshape(x, (1, s[0], 1))
        if len(s) == 2:
            return lax.reshape(x, s + (1,))
        return x
    out = [one(x) for x in arys]
    return out[0] if len(out) == 1 else tuple(out)


# --- joining and splitting -----------------------------------------------------------------
def _as_list(arrays, name):
    if isinstance(arrays, (Tracer,)) or hasattr(arrays, "_value"):
        return [arrays[i] for i in range(_shape(arrays)[0])]
    if isinstance(arrays, np.ndarray):
        return list(arrays)
    return list(arrays)


def concatenate(arrays, /, axis: int | None = 0, dtype=None, casting: str = "same_kind"):
    """Join arrays along an existing axis (``axis=None`` flattens them first)."""
    xs = [_arr(x, "concatenate") for x in _as_list(arrays, "concatenate")]
    if not xs:
        raise PlaitValueError("need at least one array to concatenate")
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    dt = result_type_of(*xs)[0] if dtype is None else dtypes.canonical_dtype(dtype)
    nd = len(_shape(xs[0]))
    if nd == 0:
        raise PlaitValueError("zero-dimensional arrays cannot be concatenated")
    for k, x in enumerate(xs[1:], 1):
        if len(_shape(x)) != nd:
            raise PlaitValueError(
                f"all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {nd} dimension(s) and the array at index {k} has "
                f"{len(_shape(x))} dimension(s)")
    ax = normalize_axis(axis, nd, "concatenate")
    for k, x in enumerate(xs[1:], 1):
        for d in range(nd):
            if d != ax and _shape(x)[d] != _shape(xs[0])[d]:
                raise PlaitValueError(
                    f"all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{_shape(xs[0])[d]} and the array at index {k} has size {_shape(x)[d]}")
    return lax.concatenate([cast(x, dt) for x in xs], ax)


concat = concatenate


def stack(arrays, axis: int = 0, dtype=None):
    """Join arrays of one shape along a new axis."""
    xs = [_arr(x, "stack") for x in _as_list(arrays, "stack")]
    if not xs:
        raise PlaitValueError("need at least one array to stack")
    if len({_shape(x) for x in xs}) != 1:
        raise PlaitValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, len(_shape(xs[0])) + 1, "stack")
    return concatenate([expand_dims(x, ax) for x in xs], axis=ax, dtype=dtype)


def hstack(tup, *, dtype=None):
    """Stack arrays column-wise (along axis 1; axis 0 for 1-D inputs)."""
    xs = [atleast_1d(x) for x in tup]
    return concatenate(xs, axis=0 if xs and len(_shape(xs[0])) == 1 else 1, dtype=dtype)


def vstack(tup, *, dtype=None):
    """Stack arrays row-wise (along axis 0 of their 2-D views)."""
    return concatenate([atleast_2d(x) for x in tup], axis=0, dtype=dtype)


def dstack(tup):
    """Stack arrays depth-wise (along axis 2 of their 3-D views)."""
    return concatenate([atleast_3d(x) for x in tup], axis=2)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array."""
    cols = []
    for x in tup:
        x = _arr(x)
        cols.append(lax.reshape(x, (_shape(x)[0], 1)) if len(_shape(x)) == 1 else atleast_2d(x))
    return concatenate(cols, axis=1)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """Split into sub-arrays (sections need not divide the axis evenly)."""
    x = _arr(ary, "array_split")
    ax = normalize_axis(axis, len(_shape(x)), "array_split")
    n = _shape(x)[ax]
    if isinstance(indices_or_sections, (list, tuple, np.ndarray)):
        idx = [static_int(i, "array_split", "indices") for i in indices_or_sections]
        points = [0] + idx + [n]
    else:
        sections = static_int(indices_or_sections, "array_split", "sections")
        if sections <= 0:
            raise PlaitValueError("number sections must be larger than 0.")
        each, extra = builtins.divmod(n, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        points = list(np.cumsum(sizes))
    return [slice_axis(x, ax, slice(int(points[i]), int(points[i + 1])))
            for i in range(len(points) - 1)]


def split(ary, indices_or_sections, axis: int = 0) -> list:
    """Split into sub-arrays; an integer number of sections must divide the axis."""
    if not isinstance(indices_or_sections, (list, tuple, np.ndarray)):
        x = _arr(ary, "split")
        sections = static_int(indices_or_sections, "split", "sections")
        n = _shape(x)[normalize_axis(axis, len(_shape(x)), "split")]
        if sections <= 0 or n % sections:
            raise PlaitValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections) -> list:
    """Split along axis 1 (axis 0 for 1-D arrays)."""
    x = _arr(ary)
    if len(_shape(x)) == 0:
        raise PlaitValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(x, indices_or_sections, 1 if len(_shape(x)) > 1 else 0)


def vsplit(ary, indices_or_sections) -> list:
    """Split along axis 0 (arrays of 2 or more dimensions)."""
    x = _arr(ary)
    if len(_shape(x)) < 2:
        raise PlaitValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    """Split along axis 2 (arrays of 3 or more dimensions)."""
    x = _arr(ary)
    if len(_shape(x)) < 3:
        raise PlaitValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, 2)


def append(arr, values, axis: int | None = None):
    """``arr`` with ``values`` appended (both flattened when ``axis`` is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


# --- repetition and rearrangement --------------------------------------------------------
def take_static(x, idx: Sequence[int], axis: int):
    """``x`` indexed by the static non-negative integer list ``idx`` along ``axis``.

    The index list is split into runs of constant step; each run is one slice
    (reversed for negative steps, broadcast for step 0).
    """
    idx = [int(i) for i in idx]
    a = get_aval(x)
    if not idx:
        return slice_axis(x, axis, slice(0, 0))
    pieces = []
    i = 0
    while i < len(idx):
        j = i + 1
        step = idx[j] - idx[i] if j < len(idx) else 1
        while j < len(idx) and idx[j] - idx[j - 1] == step:
            j += 1
        first, count = idx[i], j - i
        if count == 1 or step > 0:
            p = slice_axis(x, axis, slice(first, first + (count - 1) * step + 1, step if count > 1 else 1))
        elif step < 0:
            last = first + (count - 1) * step
            p = lax.rev(slice_axis(x, axis, slice(last, first + 1, -step)), (axis,))
        else:
            p = slice_axis(x, axis, slice(first, first + 1))
            shp = list(get_aval(p).shape)
            shp[axis] = count
            p = lax.broadcast_in_dim(p, tuple(shp), tuple(range(a.ndim)))
        pieces.append(p)
        i = j
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Repeat elements ``repeats`` times (an int, or one count per element).

    Counts may be a list or a concrete array; traced counts (under ``jit``) need the
    static output length ``total_repeat_length`` (as in JAX: a shorter total cuts the
    result, a longer one repeats the last element).
    """
    x = _arr(a, "repeat")
    if axis is None:
        x = ravel(x)
        axis = 0
    s = _shape(x)
    ax = normalize_axis(axis, len(s), "repeat")
    if total_repeat_length is not None:
        total = static_int(total_repeat_length, "repeat", "total_repeat_length")
        return _repeat_dynamic(x, repeats, ax, total)
    if isinstance(repeats, Tracer) and not hasattr(repeats, "_host_value"):
        from plait.errors import ConcretizationError
        raise ConcretizationError(
            f"repeat: the counts are a traced value {repeats.aval.str_short()}, so the "
            f"result length depends on the data. Pass total_repeat_length=N (the static "
            f"length of the result), or static counts.")
    if is_array(repeats) or isinstance(repeats, (list, tuple, np.ndarray)):
        reps = np.asarray(repeats)
        if reps.ndim > 1:
            raise PlaitValueError("repeat: repeats must be an int or a 1-D sequence")
        if reps.ndim == 1 and reps.size != 1:
            reps = [static_int(r, "repeat", "repeats") for r in reps]
            if len(reps) != s[ax]:
                raise PlaitValueError(f"operands could not be broadcast together with shape "
                                      f"({s[ax]},) ({len(reps)},)")
            if any(r < 0 for r in reps):
                raise PlaitValueError("repeats may not contain negative values.")
            return take_static(x, np.repeat(np.arange(s[ax]), reps), ax)
        repeats = reps.reshape(())[()]
    r = static_int(repeats, "repeat", "repeats")
    if r < 0:
        raise PlaitValueError("repeats may not contain negative values.")
    inter = s[:ax + 1] + (r,) + s[ax + 1:]
    y = lax.broadcast_in_dim(x, inter, tuple(i for i in range(len(inter)) if i != ax + 1))
    return lax.reshape(y, s[:ax] + (s[ax] * r,) + s[ax + 1:])


def _repeat_dynamic(x, repeats, ax: int, total: int):
    """``repeat`` with (possibly traced) counts into a result of static length ``total``:
    output position ``j`` takes the element whose running count first exceeds ``j``."""
    n = _shape(x)[ax]
    reps = cast(_arr(repeats, "repeat"), dtypes.int64)
    rs = _shape(reps)
    if rs not in ((), (1,), (n,)):
        raise PlaitValueError(f"operands could not be broadcast together with shape ({n},) "
                              f"{_fmt(rs)}")
    reps = lax.broadcast_in_dim(lax.reshape(reps, ()), (n,), ()) if rs != (n,) else reps
    if n == 0 or total == 0:
        return take_static(x, [0] * total, ax) if n else \
            lax.reshape(x, _shape(x)[:ax] + (0,) + _shape(x)[ax + 1:])
    ends = lax.cumsum(reps, 0)
    pos = lax.iota(dtypes.int64, total)
    full = (total, n)
    passed = lax.le(lax.broadcast_in_dim(ends, full, (1,)), lax.broadcast_in_dim(pos, full, (0,)))
    src = lax.reduce_sum(lax.convert_element_type(passed, dtypes.int64), (1,))
    src = lax.min(src, lax.broadcast_in_dim(wrap(np.asarray(n - 1, np.int64)), (total,), ()))
    from plait.numpy.indexing import take
    return take(x, src, axis=ax)


def tile(A, reps):
    """Repeat the whole array ``reps`` times along each axis."""
    x = _arr(A, "tile")
    reps = static_shape(reps, "tile")
    s = _shape(x)
    n = builtins.max(len(s), len(reps))
    s = (1,) * (n - len(s)) + s
    reps = (1,) * (n - len(reps)) + reps
    x = lax.reshape(x, s)
    inter = tuple(v for pair in zip(reps, s) for v in pair)
    y = lax.broadcast_in_dim(x, inter, tuple(range(1, 2 * n, 2)))
    return lax.reshape(y, tuple(r * d for r, d in zip(reps, s)))


def flip(m, axis=None):
    """Reverse the order of elements along the given axes (all when None)."""
    x = _arr(m, "flip")
    return lax.rev(x, static_axes(axis, len(_shape(x)), "flip"))


def fliplr(m):
    """Reverse along axis 1."""
    x = _arr(m, "fliplr")
    if len(_shape(x)) < 2:
        raise PlaitValueError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(m):
    """Reverse along axis 0."""
    x = _arr(m, "flipud")
    if len(_shape(x)) < 1:
        raise PlaitValueError("Input must be >= 1-d.")
    return flip(x, 0)


def roll(a, shift, axis=None):
    """Roll elements along axes; a traced ``shift`` is allowed (a dynamic slice)."""
    x = _arr(a, "roll")
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), _shape(x))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = tuple(axes) * len(shifts)
    if len(axes) != len(shifts):
        raise PlaitValueError("'shift' and 'axis' should be scalars or 1D sequences")
    for sh, ax in zip(shifts, axes):
        ax = normalize_axis(ax, len(_shape(x)), "roll")
        n = _shape(x)[ax]
        if n == 0:
            continue
        if isinstance(sh, Tracer):
            from plait.numpy.ufuncs import remainder, subtract
            start = remainder(subtract(n, remainder(sh, n)), n)
            doubled = lax.concatenate([x, x], ax)
            starts = [0] * len(_shape(x))
            starts[ax] = lax.convert_element_type(start, dtypes.int64)
            x = lax.dynamic_slice(doubled, starts, _shape(x))
        else:
            k = static_int(sh, "roll", "shift") % n
            if k:
                x = lax.concatenate([slice_axis(x, ax, slice(n - k, n)),
                                     slice_axis(x, ax, slice(0, n - k))], ax)
    return x


def rot90(m, k: int = 1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    x = _arr(m, "rot90")
    nd = len(_shape(x))
    axes = static_shape(axes, "rot90")
    if len(axes) != 2:
        raise PlaitValueError("len(axes) must be 2.")
    a0, a1 = (normalize_axis(ax, nd, "rot90") for ax in axes)
    if a0 == a1:
        raise PlaitValueError("Axes must be different.")
    k = static_int(k, "rot90", "k") % 4
    if k == 0:
        return x
    if k == 2:
        return lax.rev(x, (a0, a1))
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(lax.rev(x, (a1,)), tuple(perm))
    return lax.rev(lax.transpose(x, tuple(perm)), (a1,))


def resize(a, new_shape):
    """A new array of ``new_shape`` filled with repeated copies of ``a``."""
    x = ravel(_arr(a, "resize"))
    new = static_shape(new_shape, "resize")
    total = 1
    for d in new:
        total *= d
    n = _shape(x)[0]
    if n == 0 or total == 0:
        from plait.numpy.creation import zeros
        return zeros(new, get_aval(x).dtype)
    reps = -(-total // n)
    return reshape(slice_axis(tile(x, reps), 0, slice(0, total)), new)


# --- pad ---------------------------------------------------------------------------------
_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")


def _pad_pairs(width, nd: int, name: str) -> list:
    w = np.asarray(width)
    if w.dtype.kind not in "iub" and w.size:
        raise PlaitTypeError(f"{name} must be of integral type.")
    try:
        w = np.broadcast_to(w, (nd, 2))
    except ValueError:
        raise PlaitValueError(f"{name}: could not broadcast {np.shape(width)} to ({nd}, 2)") from None
    return [(int(lo), int(hi)) for lo, hi in w]


def pad(array, pad_width, mode: str = "constant", **kwargs):
    """Pad an array (modes: constant, edge, reflect, symmetric, wrap, empty)."""
    x = _arr(array, "pad")
    nd = len(_shape(x))
    widths = _pad_pairs(pad_width, nd, "pad_width")
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise PlaitValueError("index can't contain negative values")
    if mode not in _PAD_MODES:
        raise PlaitValueError(f"pad: mode {mode!r} is not supported; plait supports "
                              f"{', '.join(_PAD_MODES)}")
    dt = get_aval(x).dtype
    if mode in ("constant", "empty"):
        cv = kwargs.get("constant_values", 0) if mode == "constant" else 0
        cv = arg(cv, "pad")
        if is_python_scalar(cv) or get_aval(cv).ndim == 0:
            return lax.pad(x, cast(cv, dt), [(lo, hi, 0) for lo, hi in widths])
        vals = np.broadcast_to(np.asarray(cv), (nd, 2))
        for ax, ((lo, hi), (vlo, vhi)) in enumerate(zip(widths, vals)):
            for val, cfg in ((vlo, (lo, 0, 0)), (vhi, (0, hi, 0))):
                full = [(0, 0, 0)] * nd
                full[ax] = cfg
                x = lax.pad(x, cast(arg(val), dt), full)
        return x
    if kwargs.get("reflect_type", "even") != "even":
        raise PlaitValueError("pad: only reflect_type='even' is supported")
    for ax, (lo, hi) in enumerate(widths):
        if lo == hi == 0:
            continue
        n = _shape(x)[ax]
        try:
            idx = np.pad(np.arange(n), (lo, hi), mode=mode)
        except ValueError as e:
            raise PlaitValueError(f"pad: {e}") from None
        x = take_static(x, idx, ax)
    return x


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """``n``-th discrete difference along ``axis`` (bool arrays use ``!=``, as NumPy)."""
    from plait.numpy.ufuncs import subtract, not_equal
    x = _arr(a, "diff")
    n = static_int(n, "diff", "n")
    if n < 0:
        raise PlaitValueError(f"order must be non-negative but got {n}")
    nd = len(_shape(x))
    if nd == 0:
        raise PlaitValueError("diff requires input that is at least one dimensional")
    ax = normalize_axis(axis, nd, "diff")
    parts = []
    for extra in (prepend, x, append):
        if extra is None:
            continue
        e = _arr(extra)
        if len(_shape(e)) == 0:
            s = list(_shape(x))
            s[ax] = 1
            e = broadcast_to_shape(e, tuple(s))
        parts.append(e)
    if len(parts) > 1:
        x = concatenate(parts, axis=ax)
    op = not_equal if get_aval(x).dtype == dtypes.bool_ else subtract
    for _ in range(n):
        m = _shape(x)[ax]
        x = op(slice_axis(x, ax, slice(1, m)), slice_axis(x, ax, slice(0, builtins.max(m - 1, 0))))
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array."""
    d = diff(ravel(ary))
    parts = [ravel(v) for v in (to_begin,) if v is not None] + [d] + \
        [ravel(v) for v in (to_end,) if v is not None]
    return concatenate([cast(p, get_aval(d).dtype) for p in parts]) if len(parts) > 1 else d


def unstack(x, /, *, axis: int = 0) -> tuple:
    """Split an array into a tuple of arrays along ``axis`` (removing it)."""
    x = _arr(x, "unstack")
    ax = normalize_axis(axis, len(_shape(x)), "unstack")
    if _shape(x)[ax] == 0:
        return ()
    return tuple(squeeze(p, ax) for p in array_split(x, _shape(x)[ax], ax))


def rollaxis(a, axis: int, start: int = 0):
    """Roll ``axis`` backwards until it lies before ``start`` (use moveaxis instead)."""
    x = _arr(a, "rollaxis")
    nd = len(_shape(x))
    ax = normalize_axis(axis, nd, "rollaxis")
    start = static_int(start, "rollaxis", "start")
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise PlaitIndexError(f"start arg requires {-nd} <= start < {nd + 1} but {start} was passed in")
    if ax < start:
        start -= 1
    if ax == start:
        return x
    return moveaxis(x, ax, start)


def isscalar(element) -> bool:
    """True for Python and NumPy scalars (not for arrays of any shape), as NumPy."""
    return is_python_scalar(element) or isinstance(element, np.generic)
