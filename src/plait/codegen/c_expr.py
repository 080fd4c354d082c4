"""The C expression layer shared by the C-family renderers: literals, casts and the C
spelling of each Stripe intrinsic.

An intrinsic's spelling comes from its descriptor (:mod:`plait.lax.elementwise_spec`):
a template per dtype class, or the libm function its float form calls. Scalars of
float16 are computed in ``float`` (:data:`COMPUTE_TYPES`). :func:`op_prelude` is the C
every program needs for the ops defined so far: the helpers descriptors bring and the
SIMD declarations of the libm functions glibc's vector math library has.
"""
from __future__ import annotations

import math

import numpy as np

from plait.errors import CompileError
from plait.lax.elementwise_spec import by_intrinsic, ops
from plait.stripe import ir

C_TYPES = {"bool": "_Bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t",
           "i64": "int64_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t",
           "u64": "uint64_t", "f16": "_Float16", "f32": "float", "f64": "double"}
# scalars of these dtypes are computed in a wider type
COMPUTE_TYPES = dict(C_TYPES, f16="float")
FLOAT_DTYPES = ("f16", "f32", "f64")


def dtype_class(dt: str) -> str:
    """``f`` (float), ``i`` (signed), ``u`` (unsigned) or ``b`` (bool) of a Stripe dtype."""
    return "b" if dt == "bool" else dt[0]


def literal(value, dtype: str) -> str:
    """A C literal of the scalar ``value`` of Stripe dtype ``dtype``."""
    if dtype == "bool":
        return "1" if value else "0"
    if dtype in FLOAT_DTYPES:
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        s = repr(v)
        return s + "f" if dtype != "f64" else s
    v = int(value)
    if dtype == "i64" and v == -(1 << 63):
        return "INT64_MIN"
    if dtype == "u64":
        return f"{v}ULL"
    if dtype == "i64":
        return f"{v}LL"
    return str(v)


#: integer dtypes a float converts to through int64_t: C leaves a float outside the
#: narrow type's range undefined (GCC then assumes it in range: a negative float cast to
#: uint16_t and back to float stayed negative), while NumPy wraps modulo 2^bits on x86
_WRAPPED_FROM_FLOAT = ("i8", "i16", "u8", "u16", "u32")


def cast(expr: str, dst: str, src: str | None = None) -> str:
    """``expr`` (of Stripe dtype ``src``, when known) converted to Stripe dtype ``dst``
    (nonzero is true for ``bool``)."""
    if dst == "bool":
        return f"({expr} != 0)"
    if src in FLOAT_DTYPES and dst in _WRAPPED_FROM_FLOAT:
        return f"(({COMPUTE_TYPES[dst]})(int64_t)({expr}))"
    return f"(({COMPUTE_TYPES[dst]})({expr}))"


def arith(name: str, args: list[str], dt: str, cpu: bool = False) -> str:
    """The C expression of intrinsic ``name`` on operands ``args`` of Stripe dtype ``dt``
    (``cpu``: the CPU renderer's spelling, which may call plait's own vector math)."""
    op = by_intrinsic(name)
    tpl = op.c_template(dtype_class(dt), cpu) if op is not None else None
    if tpl is None:
        raise CompileError(f"intrinsic {name!r} on {dt} has no C rendering", locate=False)
    return tpl.format(*args, ct=COMPUTE_TYPES[dt], f="" if dt == "f64" else "f",
                      bits=8 * np.dtype(ir.np_dtype(dt)).itemsize)


def intrinsic(name: str, args: list[str], dts: list[str], out: str | None,
              cpu: bool = False) -> tuple[str, str]:
    """``(expression, dtype)`` of intrinsic ``name`` on ``args`` (of dtypes ``dts``); the
    operation runs in the last operand's dtype for 3-operand ops (``select``), else the
    first's; ``out`` (the intrinsic's declared dtype) adds a cast; ``cpu`` as in
    :func:`arith`."""
    dt = (dts[-1] if len(dts) == 3 else dts[0]) if dts else "f32"
    expr = arith(name, args, dt, cpu)
    op = by_intrinsic(name)
    if op.bool_result:
        dt = "bool"
    if out is not None and out != dt:
        expr, dt = cast(expr, out, dt), out
    return expr, dt


#: C-family scalar helpers every renderer's prelude includes after its integer typedefs
#: (NaN-propagating float max/min as NumPy's maximum/minimum; floor/ceil division and
#: integer max/min of index arithmetic)
SCALAR_HELPERS = r"""#define F32(x) ((float)(x))
static inline float plait_maxf(float a, float b) { return (a != a || a >= b) ? a : b; }
static inline float plait_minf(float a, float b) { return (a != a || a <= b) ? a : b; }
static inline double plait_max(double a, double b) { return (a != a || a >= b) ? a : b; }
static inline double plait_min(double a, double b) { return (a != a || a <= b) ? a : b; }
static inline int64_t plait_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t plait_ceildiv(int64_t a, int64_t b) { return -plait_floordiv(-a, b); }
static inline int64_t plait_imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t plait_imin(int64_t a, int64_t b) { return a < b ? a : b; }
"""


def op_helpers(cpu: bool = False) -> str:
    """The C helper functions the ops defined so far bring (plain C99 that OpenCL C also
    compiles); ``cpu``: also the CPU-only helpers (plait's own vector math), each shared
    chunk once."""
    chunks = [op.c_helper for op in ops() if op.c_helper]
    if cpu:
        chunks += [c for op in ops() for c in op.cpu_helper]
    return "".join(dict.fromkeys(chunks))


def op_prelude() -> str:
    """C for the ops defined so far on the CPU: libmvec SIMD declarations (so gcc
    vectorizes loops calling them at plain -O3; glibc documents their accuracy, a few
    ulp, and they keep NaN/inf semantics), then the ops' helpers (which may call
    those functions)."""
    decls = []
    for op in ops():
        if op.vecmath and op.libm:
            for ctype, fn in (("float", op.libm + "f"), ("double", op.libm)):
                params = ", ".join([ctype] * op.arity)
                decls.append(f'__attribute__((simd("notinbranch"))) '
                             f'extern {ctype} {fn}({params});\n')
    return ("#if defined(__x86_64__) && defined(__GLIBC__) && "
            "(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && "
            "!defined(PLAIT_NO_VECMATH)\n" + "".join(decls) + "#endif\n"
            + op_helpers(cpu=True))
