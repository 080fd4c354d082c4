"""``native`` rules of the linalg primitives: generated C calling LAPACK/BLAS directly.

No new system dependency: the routines are the ones SciPy already loads. Their
addresses come from the capsules of ``scipy.linalg.cython_lapack``/``cython_blas``
(``__pyx_capi__``) and are handed to each shared object that calls them through its
``plait_lapack_init(void **)`` when the executable loads it (:func:`init_library`).
A rule renders ``int64_t name(void **bufs)`` (inputs, then outputs) looping over
the stack, returning 0 or the allocation-failure status of its work buffers
(``cprog.scratch[name]`` is their size; LAPACK's own workspace is sized at run time); plait's arrays are row-major and LAPACK's column-major, so each call either
reads the transposed problem (``trsm``: side and triangle swap; ``trsv`` for one
right-hand side: triangle and transposition swap; ``potrf``: the other triangle) or copies through a transposed work buffer (``getrf``). Without SciPy, or
for dtypes the generated code does not handle (complex, empty arrays), a rule
returns False and the equation stays a host step running its ``impl``. Inside a
``while``/``scan``/``cond`` body these calls keep the loop one C loop.
"""
from __future__ import annotations

import ctypes
import math
import time

import numpy as np

from plait.backends.native.cprogram import CProgram
from plait.codegen.c_stripe import oom_status
from plait.lax.linalg import (cholesky_p, eigh_p, lu_p, qr_p, solve_p, svd_p,
                              triangular_solve_p, tridiagonal_solve_p)

# The routines a program may call, in the order plait_lapack_init receives them.
NAMES = ("sgetrf", "dgetrf", "spotrf", "dpotrf", "strsm", "dtrsm", "ssyevd", "dsyevd",
         "sgesdd", "dgesdd", "sgeqrf", "dgeqrf", "sorgqr", "dorgqr", "sgtsv", "dgtsv",
         "strsv", "dtrsv", "sgetrs", "dgetrs")
_INDEX = {n: i for i, n in enumerate(NAMES)}
_CTYPE = {np.dtype(np.float32): ("float", "s"), np.dtype(np.float64): ("double", "d")}

_DECLS = f"""
static void *plait_lapack[{len(NAMES)}];
void plait_lapack_init(void **p) {{ for (int i = 0; i < {len(NAMES)}; ++i) plait_lapack[i] = p[i]; }}
typedef void (*plait_getrf_t)(int *, int *, void *, int *, int *, int *);
typedef void (*plait_potrf_t)(char *, int *, void *, int *, int *);
typedef void (*plait_syevd_t)(char *, char *, int *, void *, int *, void *, void *, int *,
                              int *, int *, int *);
typedef void (*plait_gesdd_t)(char *, int *, int *, void *, int *, void *, void *, int *, void *,
                              int *, void *, int *, int *, int *);
typedef void (*plait_geqrf_t)(int *, int *, void *, int *, void *, void *, int *, int *);
typedef void (*plait_orgqr_t)(int *, int *, int *, void *, int *, void *, void *, int *, int *);
typedef void (*plait_gtsv_t)(int *, int *, void *, void *, void *, void *, int *, int *);
typedef void (*plait_trsm_t)(char *, char *, char *, char *, int *, int *, void *, void *, int *,
                             void *, int *);
typedef void (*plait_trsv_t)(char *, char *, char *, int *, void *, int *, void *, int *);
typedef void (*plait_getrs_t)(char *, int *, int *, void *, int *, int *, void *, int *, int *);
/* d[i + j*ld] = s[i*c + j] for an r x c row-major s: by 64 x 64 tiles, so a large
   matrix's strided side stays in cache (a plain double loop misses on every write),
   each moved as 8 x 8 blocks through a local array the compiler keeps in registers
   (rows read whole, columns written whole: 2.3x faster than 32 x 32 tiles moved
   element by element at n = 1024, where the strided writes also conflicted in cache) */
#define plait_def_transpose(NAME, T) \
static void NAME(const T *s, T *d, int r, int c, int ld) {{ \
  for (int i0 = 0; i0 < r; i0 += 64) for (int j0 = 0; j0 < c; j0 += 64) {{ \
    int i1 = i0 + 64 < r ? i0 + 64 : r, j1 = j0 + 64 < c ? j0 + 64 : c; \
    for (int jb = j0; jb < j1; jb += 8) for (int ib = i0; ib < i1; ib += 8) {{ \
      if (ib + 8 <= i1 && jb + 8 <= j1) {{ \
        T t[8][8]; \
        for (int i = 0; i < 8; ++i) for (int j = 0; j < 8; ++j) \
          t[j][i] = s[(int64_t)(ib + i) * c + jb + j]; \
        for (int j = 0; j < 8; ++j) for (int i = 0; i < 8; ++i) \
          d[ib + i + (int64_t)(jb + j) * ld] = t[j][i]; \
      }} else {{ \
        int ie = ib + 8 < i1 ? ib + 8 : i1, je = jb + 8 < j1 ? jb + 8 : j1; \
        for (int i = ib; i < ie; ++i) for (int j = jb; j < je; ++j) \
          d[i + (int64_t)j * ld] = s[(int64_t)i * c + j]; }} }} }} }}
plait_def_transpose(plait_transpose_float, float)
plait_def_transpose(plait_transpose_double, double)
/* A zero on a triangular solve's diagonal: BLAS leaves the inf/NaN pattern of the result
   to each kernel (OpenBLAS's differs between CPUs), so such a matrix is solved here by
   substitution with IEEE semantics, as the reference backend does: op(T) z = rhs with
   z starting at zero, z_i = (rhs_i - sum_j op(T)_ij z_j) / op(T)_ii over the triangle
   (a unit diagonal reads as ones). t is row-major n x n; rhs element i is rhs[i * inc]. */
#define plait_def_trsub(NAME, T) \
static int NAME##_singular(const T *t, int n) {{ \
  for (int i = 0; i < n; ++i) if (t[(int64_t)i * n + i] == 0) return 1; return 0; }} \
static void NAME(const T *t, T *rhs, int64_t inc, int n, int lower, int trans, int unit, \
                 T *z) {{ \
  int eff_lower = lower != trans; \
  for (int k = 0; k < n; ++k) z[k] = 0; \
  for (int s = 0; s < n; ++s) {{ \
    int i = eff_lower ? s : n - 1 - s, j0 = eff_lower ? 0 : i, j1 = eff_lower ? i + 1 : n; \
    T acc = 0; \
    for (int j = j0; j < j1; ++j) {{ \
      T tij = j == i && unit ? 1 : (trans ? t[(int64_t)j * n + i] : t[(int64_t)i * n + j]); \
      acc += tij * z[j]; }} \
    z[i] = (rhs[i * inc] - acc) / (unit ? 1 : t[(int64_t)i * n + i]); }} \
  for (int k = 0; k < n; ++k) rhs[k * inc] = z[k]; }}
plait_def_trsub(plait_trsub_float, float)
plait_def_trsub(plait_trsub_double, double)
/* every element of x[0..n) is finite (LAPACK's gesdd may never return on an inf) */
#define plait_def_allfinite(NAME, T) \
static int NAME(const T *x, int64_t n) {{ \
  for (int64_t i = 0; i < n; ++i) if (!isfinite(x[i])) return 0; return 1; }}
plait_def_allfinite(plait_allfinite_float, float)
plait_def_allfinite(plait_allfinite_double, double)
"""

_POINTERS: list | None = None


def _capsule_address(cap) -> int:
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))


def _import_cython_lapack(attempts: int = 200):
    """SciPy's ``cython_blas`` and ``cython_lapack``. A background compile imports them
    while the main thread may be importing ``scipy.linalg`` itself (an interpreted
    tier's linalg step): Python's import locks then report a deadlock in one of the two
    threads, which here waits for the other import to finish and tries again."""
    for attempt in range(attempts):
        try:
            from scipy.linalg import cython_blas, cython_lapack
            return cython_blas, cython_lapack
        except RuntimeError as e:
            if type(e).__name__ != "_DeadlockError" or attempt == attempts - 1:
                raise
            time.sleep(0.01)


def pointers() -> list | None:
    """Addresses of :data:`NAMES` in SciPy's LAPACK/BLAS, or None without SciPy."""
    global _POINTERS
    if _POINTERS is None:
        try:
            cython_blas, cython_lapack = _import_cython_lapack()
        except ImportError:
            return None
        caps = {**cython_blas.__pyx_capi__, **cython_lapack.__pyx_capi__}
        _POINTERS = [_capsule_address(caps[n]) for n in NAMES]
    return _POINTERS


def init_library(lib) -> None:
    """Give a loaded shared object its LAPACK pointers (if it calls LAPACK)."""
    try:
        fn = lib.plait_lapack_init
    except AttributeError:
        return
    ptrs = pointers()
    fn.restype = None
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    fn((ctypes.c_void_p * len(ptrs))(*ptrs))


def _ready(cp: CProgram, eqn, operand: int = 0) -> tuple | None:
    """``(C type, LAPACK prefix, rows, columns, batch)`` of the stack of matrices
    ``eqn.inputs[operand]`` when this equation can be rendered, declaring the pointer
    table once per program; None otherwise."""
    dt = np.dtype(eqn.inputs[0].aval.dtype)
    if dt not in _CTYPE or pointers() is None:
        return None
    if any(0 in a.aval.shape for a in list(eqn.inputs) + list(eqn.outputs)):
        return None
    if not getattr(cp, "_lapack_declared", False):
        cp.parts.insert(0, _DECLS)
        cp._lapack_declared = True
    shape = eqn.inputs[operand].aval.shape
    return (*_CTYPE[dt], *shape[-2:], math.prod(shape[:-2]))


def _alloc_check(names: list[str], nbytes: int) -> str:
    """C that returns the allocation-failure status (after freeing) if any of ``names``
    is NULL."""
    cond = " || ".join(f"!{n}" for n in names)
    frees = " ".join(f"free({n});" for n in names)
    return f"if ({cond}) {{ {frees} return {oom_status(nbytes, 0)}LL; }}"


def _fn(prefix: str, routine: str, kind: str | None = None) -> str:
    return f"((plait_{kind or routine}_t)plait_lapack[{_INDEX[prefix + routine]}])"


def _emit(cp: CProgram, name: str, *, head: str, loop: str, batch: int,
          work: tuple = (), query: str = "", sized: tuple = (), nbytes: int = 0) -> bool:
    """Append the rule's C function ``int64_t name(void **bufs)`` to ``cp``: ``head``
    declares its buffers and scalars; the work arrays ``work``, ``[(C type, variable,
    element count)]``, are allocated and checked (a failure frees them and returns the
    status of ``nbytes`` bytes); then ``query`` runs (LAPACK's workspace query) and the
    arrays ``sized`` are allocated and checked (their counts may read the query's
    results); ``loop`` runs for each matrix ``b`` of the ``batch``; every array is
    freed. ``nbytes`` is recorded as the function's scratch (LAPACK's own workspace,
    sized at run time, is not counted)."""
    lines = [f"int64_t {name}(void **bufs) {{", "  " + head]
    names: list[str] = []
    for group, after in ((work, ""), (sized, query)):
        if after:
            lines.append("  " + after)
        if group:
            lines += [f"  {ct} *{v} = malloc(sizeof({ct}) * {count});" for ct, v, count in group]
            names += [v for _, v, _ in group]
            lines.append("  " + _alloc_check(names, nbytes))
    lines.append(f"  for (int64_t b = 0; b < {batch}; ++b) {{\n{loop}\n  }}")
    if names:
        lines.append("  " + " ".join(f"free({v});" for v in names))
    lines += ["  return 0;", "}"]
    cp.parts.append("\n".join(lines))
    if nbytes:
        cp.scratch[name] = nbytes
    return True


def _cholesky(cp: CProgram, eqn, name: str) -> bool:
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, _, n, batch = r
    # row-major lower triangle = column-major upper: potrf('U') leaves Lᵀ (column-major),
    # which is L row-major
    return _emit(cp, name, batch=batch, head=f"""const {ct} *a = bufs[0]; {ct} *l = bufs[1];
  int n = {n}, info = 0; char uplo = 'U';""", loop=f"""\
    {ct} *o = l + b * {n * n};
    memcpy(o, a + b * {n * n}, sizeof({ct}) * {n * n});
    {_fn(p, "potrf")}(&uplo, &n, o, &n, &info);
    for (int i = 0; i < n; ++i) for (int j = i + 1; j < n; ++j) o[i * n + j] = 0;
    if (info != 0) for (int k = 0; k < {n * n}; ++k) o[k] = NAN;""")


def _triangular_solve(cp: CProgram, eqn, name: str) -> bool:
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, _, m, batch = r
    prm = eqn.params
    rows, cols = eqn.inputs[1].aval.shape[-2:]
    # column-major view: Xc = Xᵀ; op(A) X = B  <=>  Xc op(A)ᵀ = Bc (side R), and
    # X op(A) = B  <=>  op(A)ᵀ Xc = Bc (side L); A's lower triangle is Ac's upper
    side = "R" if prm["left_side"] else "L"
    uplo = "U" if prm["lower"] else "L"
    trans = "T" if prm["transpose_a"] else "N"
    diag = "U" if prm["unit_diagonal"] else "N"
    mm, nn = cols, rows     # Xc is cols x rows either way
    if (cols if prm["left_side"] else rows) == 1:
        return _trsv(cp, name, ct, p, m, batch, prm, uplo, diag,
                     # row-major A is column-major Aᵀ: op(A) x = b is Aᵀᵀ x (trans
                     # 'T' without transpose_a); x op(A) = b is op(A)ᵀ xᵀ = bᵀ
                     "N" if prm["transpose_a"] == prm["left_side"] else "T")
    return _emit(cp, name, batch=batch, head=f"""\
const {ct} *a = bufs[0]; const {ct} *bb = bufs[1]; {ct} *x = bufs[2];
  char side = '{side}', uplo = '{uplo}', trans = '{trans}', diag = '{diag}';
  int m = {mm}, n = {nn}, lda = {m}, ldb = {cols};
  {ct} one = 1;
  memcpy(x, bb, sizeof({ct}) * {batch * rows * cols});""", loop=f"""\
    const {ct} *ab = a + b * {m * m}; {ct} *xb = x + b * {rows * cols};
    if ({_zero_pivot(ct, prm["unit_diagonal"], m)}) {{
      {ct} z[{m}];
      for (int r = 0; r < {cols if prm["left_side"] else rows}; ++r)
        {_substitution(ct, m, prm, "xb + r" if prm["left_side"] else f"xb + r * {cols}",
                       cols if prm["left_side"] else 1)}
    }} else
      {_fn(p, "trsm")}(&side, &uplo, &trans, &diag, &m, &n, &one, (void *)ab, &lda, xb, &ldb);""")


def _zero_pivot(ct: str, unit: bool, m: int) -> str:
    """C condition: the current matrix ``ab`` has a zero on its (non-unit) diagonal."""
    return "0" if unit else f"plait_trsub_{ct}_singular(ab, {m})"


def _substitution(ct: str, m: int, prm: dict, rhs: str, inc: int) -> str:
    """C call: solve one right-hand side at ``rhs`` (stride ``inc``) by substitution;
    a right-side solve x op(A) = b is op(A)ᵀ xᵀ = bᵀ, a left-side one with op(A)."""
    trans = prm["transpose_a"] == prm["left_side"]
    return (f"plait_trsub_{ct}(ab, {rhs}, {inc}, {m}, {int(prm['lower'])}, {int(trans)}, "
            f"{int(prm['unit_diagonal'])}, z);")


def _trsv(cp: CProgram, name: str, ct: str, p: str, m: int, batch: int, prm: dict,
          uplo: str, diag: str, trans: str) -> bool:
    """A triangular solve with one right-hand side per matrix: ``trsv``, several times
    faster than ``trsm`` on a single column."""
    return _emit(cp, name, batch=batch, head=f"""\
const {ct} *a = bufs[0]; const {ct} *bb = bufs[1]; {ct} *x = bufs[2];
  char uplo = '{uplo}', trans = '{trans}', diag = '{diag}';
  int n = {m}, inc = 1;
  memcpy(x, bb, sizeof({ct}) * {batch * m});""", loop=f"""\
    const {ct} *ab = a + b * {m * m};
    if ({_zero_pivot(ct, prm["unit_diagonal"], m)}) {{
      {ct} z[{m}];
      {_substitution(ct, m, prm, f"x + b * {m}", 1)}
    }} else
      {_fn(p, "trsv")}(&uplo, &trans, &diag, &n, (void *)ab, &n, x + b * {m}, &inc);""")


def _lu(cp: CProgram, eqn, name: str) -> bool:
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, m, n, batch = r
    k = min(m, n)
    return _emit(cp, name, batch=batch, head=f"""\
const {ct} *a = bufs[0]; {ct} *lu = bufs[1]; int32_t *piv = bufs[2], *perm = bufs[3];
  int m = {m}, n = {n}, info = 0;""", loop=f"""\
    const {ct} *ab = a + b * {m * n}; {ct} *lb = lu + b * {m * n};
    plait_transpose_{ct}(ab, w, m, n, m);
    {_fn(p, "getrf")}(&m, &n, w, &m, ip, &info);
    plait_transpose_{ct}(w, lb, n, m, n);
    int32_t *pb = piv + b * {k}, *qb = perm + b * {m};
    for (int i = 0; i < m; ++i) qb[i] = i;
    for (int t = 0; t < {k}; ++t) {{
      int s = ip[t] - 1; pb[t] = s;
      int32_t tmp = qb[t]; qb[t] = qb[s]; qb[s] = tmp;
    }}""", work=((ct, "w", m * n), ("int", "ip", max(k, 1))),
        nbytes=np.dtype(eqn.inputs[0].aval.dtype).itemsize * m * n + 4 * max(k, 1))


def _solve(cp: CProgram, eqn, name: str) -> bool:
    """``lu`` then ``lu_solve`` in one call, without their layout transposes: ``a``'s
    row-major storage is LAPACK's column-major ``aᵀ``, so ``getrf`` on a plain copy
    factors ``aᵀ = P L U`` and ``getrs('T')`` solves ``(P L U)ᵀ x = a x = b``
    (measured at n = 1024: ~2 ms of the 4 ms the two n x n transposes and the
    permutation cost around a 14 ms factorization). Several right-hand sides go through
    a column-major work copy (getrs reads ``b`` column-major). A zero pivot (``info >
    0``) means a singular ``a``: that matrix is then factored and solved as ``lu`` and
    ``lu_solve`` do (row-pivoted ``a``, substitution with IEEE semantics through a zero
    on U's diagonal), so the inf/NaN pattern is theirs."""
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, _, n, batch = r
    k = eqn.inputs[1].aval.shape[-1]
    nn, nk = n * n, n * k
    solve = f"""\
      {_fn(p, "getrs")}(&tr, &n, &k, w, &n, ip, {"xb" if k == 1 else "c"}, &n, &info);"""
    if k > 1:
        solve = f"""\
      plait_transpose_{ct}(bi, c, n, k, n);
{solve}
      plait_transpose_{ct}(c, xb, k, n, k);"""
    isz = np.dtype(eqn.inputs[0].aval.dtype).itemsize
    return _emit(cp, name, batch=batch, head=f"""\
const {ct} *a = bufs[0]; const {ct} *bb = bufs[1]; {ct} *x = bufs[2];
  int n = {n}, k = {k}, inc = {k}, info = 0; char tr = 'T', lo = 'L', up = 'U', no = 'N';""",
        loop=f"""\
    const {ct} *ab = a + b * {nn}, *bi = bb + b * {nk}; {ct} *xb = x + b * {nk};
    memcpy(w, ab, sizeof({ct}) * {nn});
    memcpy(xb, bi, sizeof({ct}) * {nk});
    {_fn(p, "getrf")}(&n, &n, w, &n, ip, &info);
    if (info == 0) {{
{solve}
    }} else {{
      plait_transpose_{ct}(ab, w, n, n, n);
      {_fn(p, "getrf")}(&n, &n, w, &n, ip, &info);
      for (int t = 0; t < n; ++t) {{
        int s = ip[t] - 1;
        if (s != t) for (int j = 0; j < k; ++j) {{
          {ct} tmp = xb[t * k + j]; xb[t * k + j] = xb[s * k + j]; xb[s * k + j] = tmp; }}
      }}
      int zero = 0;
      for (int i = 0; i < n; ++i) zero |= w[i + (int64_t)i * n] == 0;
      for (int j = 0; j < k; ++j) {{
        {_fn(p, "trsv")}(&lo, &no, &up, &n, w, &n, xb + j, &inc);
        if (zero) plait_trsub_{ct}(w, xb + j, k, n, 1, 1, 0, z);
        else {_fn(p, "trsv")}(&up, &no, &no, &n, w, &n, xb + j, &inc);
      }}
    }}""", work=((ct, "w", nn), ("int", "ip", n), (ct, "z", n))
        + (((ct, "c", nk),) if k > 1 else ()),
        nbytes=isz * (nn + n + (nk if k > 1 else 0)) + 4 * n)


_LWORK = "(lwork > 1 ? lwork : 1)"


def _eigh(cp: CProgram, eqn, name: str) -> bool:
    if eqn.params["subset_by_index"] is not None:
        return False
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, _, n, batch = r
    uplo = "L" if eqn.params["lower"] else "U"
    syevd = _fn(p, "syevd")
    if eqn.params["compute_eigenvectors"]:
        head = f"const {ct} *a = bufs[0]; {ct} *v = bufs[1]; {ct} *w = bufs[2]; char jobz = 'V';"
        back = f"""
    {ct} *vb = v + b * {n * n};
    plait_transpose_{ct}(m, vb, n, n, n);
    if (info != 0) for (int k = 0; k < {n * n}; ++k) vb[k] = NAN;"""
    else:   # jobz 'N': eigenvalues only (the reduction to tridiagonal form, no back-transform)
        head, back = f"const {ct} *a = bufs[0]; {ct} *w = bufs[1]; char jobz = 'N';", ""
    # NumPy's call exactly: a column-major copy, syevd on the same triangle
    return _emit(cp, name, batch=batch, head=f"""{head}
  char uplo = '{uplo}';
  int n = {n}, info = 0, lwork = -1, liwork = -1, iq = 0; {ct} q = 0;""", loop=f"""\
    const {ct} *ab = a + b * {n * n}; {ct} *wb = w + b * {n};
    plait_transpose_{ct}(ab, m, n, n, n);
    {syevd}(&jobz, &uplo, &n, m, &n, wb, work, &lwork, iwork, &liwork, &info);
    if (info != 0) for (int k = 0; k < n; ++k) wb[k] = NAN;{back}""",
        work=((ct, "m", n * n),),
        query=f"""{syevd}(&jobz, &uplo, &n, m, &n, w, &q, &lwork, &iq, &liwork, &info);
  lwork = (int)q; liwork = iq;""",
        sized=((ct, "work", _LWORK), ("int", "iwork", "(liwork > 1 ? liwork : 1)")),
        nbytes=np.dtype(eqn.inputs[0].aval.dtype).itemsize * n * n)


def _svd(cp: CProgram, eqn, name: str) -> bool:
    prm = eqn.params
    if prm["subset_by_index"] is not None:
        return False
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, m, n, batch = r
    k = min(m, n)
    uv = prm["compute_uv"]
    full = prm["full_matrices"]
    ucols, vrows = (m, n) if full else (k, k)
    jobz = "N" if not uv else ("A" if full else "S")
    ldu, ldvt = (m, vrows) if uv else (1, 1)
    outs = ("{ct} *s = bufs[1]; {ct} *u = bufs[2]; {ct} *vt = bufs[3];" if uv
            else "{ct} *s = bufs[1];").format(ct=ct)
    back = f"""
    {ct} *ub = u + b * {m * ucols}, *vb = vt + b * {vrows * n};
    if (info != 0) {{ for (int t = 0; t < {m * ucols}; ++t) ub[t] = NAN;
                      for (int t = 0; t < {vrows * n}; ++t) vb[t] = NAN; }}
    else {{ plait_transpose_{ct}(uc, ub, {ucols}, {m}, {ucols});
           plait_transpose_{ct}(vc, vb, {n}, {vrows}, {n}); }}""" if uv else ""
    isz = np.dtype(eqn.inputs[0].aval.dtype).itemsize
    nu, nvt = max(ldu * (ucols if uv else 1), 1), max(ldvt * (n if uv else 1), 1)
    gesdd = _fn(p, "gesdd")
    # NumPy's call exactly: gesdd on a column-major copy
    return _emit(cp, name, batch=batch, head=f"""const {ct} *a = bufs[0]; {outs}
  char jobz = '{jobz}';
  int m = {m}, n = {n}, lda = {m}, ldu = {ldu}, ldvt = {ldvt}, info = 0, lwork = -1;
  {ct} q = 0;""", loop=f"""\
    const {ct} *ab = a + b * {m * n}; {ct} *sb = s + b * {k};
    if (plait_allfinite_{ct}(ab, {m * n})) {{
      plait_transpose_{ct}(ab, w, m, n, m);
      {gesdd}(&jobz, &m, &n, w, &lda, sb, uc, &ldu, vc, &ldvt, work, &lwork, iwork,
          &info);
    }} else info = 1;   /* a non-finite entry: NaN, as the impl's */
    if (info != 0) for (int t = 0; t < {k}; ++t) sb[t] = NAN;{back}""",
        work=((ct, "w", m * n), (ct, "uc", nu), (ct, "vc", nvt), ("int", "iwork", 8 * max(k, 1))),
        query=f"""{gesdd}(&jobz, &m, &n, w, &lda, s, uc, &ldu, vc, &ldvt, &q, &lwork, iwork, &info);
  lwork = (int)q;""", sized=((ct, "work", _LWORK),),
        nbytes=isz * (m * n + nu + nvt) + 4 * 8 * max(k, 1))


def _qr(cp: CProgram, eqn, name: str) -> bool:
    r = _ready(cp, eqn)
    if r is None:
        return False
    ct, p, m, n, batch = r
    k = min(m, n)
    kq = m if eqn.params["full_matrices"] else k
    cols = max(kq, n)
    geqrf, orgqr = _fn(p, "geqrf"), _fn(p, "orgqr")
    # NumPy's calls: geqrf on a column-major copy, then orgqr for kq columns of Q
    return _emit(cp, name, batch=batch, head=f"""\
const {ct} *a = bufs[0]; {ct} *q = bufs[1]; {ct} *r = bufs[2];
  int m = {m}, n = {n}, k = {k}, kq = {kq}, lda = {m}, info = 0, lwork = -1;
  {ct} q1 = 0, q2 = 0;""", loop=f"""\
    const {ct} *ab = a + b * {m * n}; {ct} *qb = q + b * {m * kq}, *rb = r + b * {kq * n};
    memset(w, 0, sizeof({ct}) * {m * cols});
    plait_transpose_{ct}(ab, w, m, n, m);
    {geqrf}(&m, &n, w, &lda, tau, work, &lwork, &info);
    for (int i = 0; i < kq; ++i) for (int j = 0; j < n; ++j)
      rb[i * n + j] = i <= j ? w[i + j * m] : 0;
    {orgqr}(&m, &kq, &k, w, &lda, tau, work, &lwork, &info);
    plait_transpose_{ct}(w, qb, kq, m, kq);""",
        # the workspace query reads w: zeroed, as the loop zeroes it for every matrix
        work=((ct, "w", m * cols), (ct, "tau", max(k, 1))),
        query=f"""memset(w, 0, sizeof({ct}) * {m * cols});
  {geqrf}(&m, &n, w, &lda, tau, &q1, &lwork, &info);
  {orgqr}(&m, &kq, &k, w, &lda, tau, &q2, &lwork, &info);
  lwork = (int)(q1 > q2 ? q1 : q2);""", sized=((ct, "work", _LWORK),),
        nbytes=np.dtype(eqn.inputs[0].aval.dtype).itemsize * (m * cols + max(k, 1)))


def _tridiagonal_solve(cp: CProgram, eqn, name: str) -> bool:
    r = _ready(cp, eqn, operand=3)
    if r is None:
        return False
    ct, p, m, k, batch = r
    return _emit(cp, name, batch=batch, head=f"""\
const {ct} *dl = bufs[0], *d = bufs[1], *du = bufs[2], *bb = bufs[3]; {ct} *x = bufs[4];
  int n = {m}, nrhs = {k}, ldb = {m}, info = 0;""", loop=f"""\
    const {ct} *bi = bb + b * {m * k}; {ct} *xb = x + b * {m * k};
    memcpy(l, dl + b * {m} + 1, sizeof({ct}) * {m - 1});
    memcpy(c, d + b * {m}, sizeof({ct}) * {m});
    memcpy(u, du + b * {m}, sizeof({ct}) * {m - 1});
    for (int i = 0; i < {m}; ++i) for (int j = 0; j < {k}; ++j) w[i + j * {m}] = bi[i * {k} + j];
    {_fn(p, "gtsv")}(&n, &nrhs, l, c, u, w, &ldb, &info);
    for (int i = 0; i < {m}; ++i) for (int j = 0; j < {k}; ++j)
      xb[i * {k} + j] = info == 0 ? w[i + j * {m}] : NAN;""",
        work=((ct, "l", m), (ct, "c", m), (ct, "u", m), (ct, "w", m * k)),
        nbytes=np.dtype(eqn.inputs[3].aval.dtype).itemsize * (3 * m + m * k))


cholesky_p.def_rule("native", _cholesky)
qr_p.def_rule("native", _qr)
tridiagonal_solve_p.def_rule("native", _tridiagonal_solve)
eigh_p.def_rule("native", _eigh)
svd_p.def_rule("native", _svd)
triangular_solve_p.def_rule("native", _triangular_solve)
lu_p.def_rule("native", _lu)
solve_p.def_rule("native", _solve)
# their call steps run LAPACK, not the program's C
for _p in (cholesky_p, qr_p, tridiagonal_solve_p, eigh_p, svd_p, triangular_solve_p, lu_p,
           solve_p):
    _p.def_rule("native_library", True)
