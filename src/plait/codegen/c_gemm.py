"""C source of plait's shape-generic GEMM library (BLIS-style, sizes at run time).

One function per floating dtype::

    int64_t plait_gemm_<s|d>(int64_t batch, int64_t M, int64_t N, int64_t K,
                             const T *A, int64_t sab, int64_t sam, int64_t sak,
                             const T *B, int64_t sbb, int64_t sbk, int64_t sbn,
                             T *C, int64_t scb, int64_t scm, int64_t scn)

computes ``C[b] = A[b] @ B[b]`` for every batch ``b`` with element strides, so a
transposed or otherwise strided operand costs nothing extra: the packing routines read
it in place. Loops follow BLIS with the roles of the operands swapped for row-major
output (``N`` is the vector dimension): a ``KC x N2`` block of B is packed once (the
L3), an ``M3 x KC`` slab of A (half the L2) is read in place when A's rows or columns
are contiguous (the micro-kernel broadcasts its elements from either layout) and packed
otherwise, and each ``KC x NR`` panel of B
(an eighth of the L2) is reused while every ``MR x KC`` panel of the slab passes it. The micro-kernel
holds ``MR x NR`` accumulators in explicit GNU vectors (``NR`` a multiple of the vector
length), and a ragged last row panel runs a kernel of its own height,
a last column panel of fewer whole vectors one of its own width; products with at most ``NR / 2`` columns use a narrow tile one
vector wide, whose ragged last panel reads and writes only its columns with AVX-512 masks,
and with few row panels B is read in place. ``M`` or ``N`` of 1 runs a
matrix-vector kernel (no packing). Threads share the packed panels: each block is two
phases on plait's own pool (:mod:`plait.codegen.c_pool`: pieces claimed dynamically,
the caller never waits for a thread the OS has not scheduled yet), one packing the panels
(skipped when there are none, or when A is read in place and each column panel's tiles
are one piece, which then packs its B panels itself just before reading them), one
computing rectangles of micro-tiles, as many threads as
``omp_get_max_threads()`` allows the caller; a batch of small products is instead split
over the batch. The packed panels live in the calling thread's buffer, kept between
calls.

``plait_conv_<s|d>(const int64_t *desc, x, w, y)`` computes a 2-d convolution
(descriptor of sizes and strides: ``backends/native/conv.py``): with contiguous output
channels directly (:func:`_direct_conv_source`: the register tile over output pixels,
no im2col), else as GEMMs over im2col chunks of rows; a weight gradient in NHWC (its "batch" the contiguous channel) instead
gathers im2col columns as contiguous runs and accumulates one GEMM per chunk of them.
An input-dilated convolution (a strided one's input gradient) runs by output phase, each
over only the kernel taps that meet real input elements (direct with contiguous output
channels, else one GEMM per phase); feature groups (vmap's
per-example kernels) are a loop of such convolutions, over threads when small.
Their parallel loops (row chunks, a weight gradient's column ranges, phases, groups)
are pieces of the same pool; a piece gathers into its thread's im2col buffer, kept
between calls, and multiplies on that thread.
A function returns 0, or the allocation-failure status of
``c_stripe.oom_status`` when a pack buffer cannot be allocated.
"""
from __future__ import annotations

from dataclasses import dataclass

from plait.codegen.c_pool import POOL_SOURCE

# multiply-adds of the smallest piece a GEMM phase is cut into (a few microseconds: far
# above the cost of claiming it, small enough that the threads end together)
_PIECE_MACS = 1 << 18
# the linkage of the micro-kernels the other translation unit calls: not exported
_ENTRY = '__attribute__((visibility("hidden")))'
# rows an A-by-rows micro-kernel gives a pointer each: x86-64's 16 general registers hold
# these beside the kernel's own (B, C, strides, counters) without spilling
_ROW_POINTERS = 8


@dataclass(frozen=True)
class Blocking:
    """Register and cache blocking of one dtype's GEMM (elements)."""

    ctype: str        # "float" / "double"
    suffix: str       # names its functions: "s" / "d", "sn" / "dn" for a narrow tile
    vlen: int         # elements per vector
    mr: int           # rows of the micro-tile
    vecs: int         # vectors per micro-tile row (NR = vecs * vlen)
    kc: int           # depth of a packed panel
    n2: int           # columns of a packed B block (multiple of NR)
    m3: int           # rows of a packed A slab (multiple of MR)
    par_macs: int     # products of fewer multiply-adds run on one thread
    size: int         # bytes per element
    gemv_par_macs: int   # matrix-vector products of fewer run on one thread

    @property
    def nr(self) -> int:
        return self.vecs * self.vlen

    @property
    def masked(self) -> bool:
        """Whether a ragged column panel runs the masked micro-kernels (``ukm``: B loaded
        and C stored only in its first ``n`` columns, AVX-512 masks): the narrow tile of
        a full-width (64-byte) vector."""
        return self.vecs == 1 and self.vlen * self.size == 64


def _micro_kernel(b: Blocking, rows: int, vecs: int | None = None, form: str = "",
                  masked: bool = False) -> str:
    """``uk<form>_<suffix>`` (``rows == MR``), ``uk<form>_<suffix>_<rows>`` (an edge of
    fewer rows) or ``uk<form>_<suffix>_v<vecs>`` (MR rows, an edge of fewer whole vectors
    of columns): ``rows x vecs`` vector accumulators in explicit GNU vectors; ``masked``
    (one vector): ``ukm<form>_<suffix>_<rows>`` with an argument ``n``, reading B's and
    writing C's first ``n`` columns only (``loadn_``, ``storen_``). Form ""
    reads the ``rows`` elements of depth k contiguous at ``a + k * lda`` (a packed
    panel, ``lda = MR``, or A read in place when its columns are contiguous, ``lda``
    its k stride); form "r" reads row i at ``a + i * lda``, its k elements contiguous
    (A read in place by rows), one pointer per row stepping along k, or with more than
    :data:`_ROW_POINTERS` rows one per three rows (rows ``+lda`` and ``+2 lda`` are
    indexed addresses: a pointer per row spilled the narrow tile's twelve to the stack,
    32 x 512 x 20 float32 ran at 44 GFLOP/s on one core, 53 with the shared pointers;
    the main tile's six rows do not spill and keep a pointer each)."""
    t, x, mr, vl = b.ctype, b.suffix, b.mr, b.vlen
    v = b.vecs if vecs is None else vecs
    vt = "VK" + x
    base = f"uk{form}_{x}"
    name = f"{base}_v{v}" if v != b.vecs else base if rows == mr else f"{base}_{rows}"
    acc = ", ".join(f"c{i}_{j} = {{0}}" for i in range(rows) for j in range(v))
    loads = " ".join(f"{vt} b{j} = *(const {vt} *)(bk + {j * vl});" for j in range(v))
    if masked:
        name = f"ukm{form}_{x}_{rows}"
        loads = f"{vt} b0 = loadn_{x}(bk, n);"
    if form == "r":     # a pointer per `per` rows (row i + 1, i + 2: an indexed address)
        per = 3 if rows > _ROW_POINTERS else 1
        groups = range((rows + per - 1) // per)
        setup = " ".join(f"const {t} *a{g} = a + {per * g} * lda;" for g in groups)
        step = " ".join(f"++a{g};" for g in groups)
        scalar = [f"a{i // per}[{i % per} * lda]" if i % per else f"*a{i // per}"
                  for i in range(rows)]
        head = "const {t} *bk = b + k * ldb;".format(t=t)
    else:
        setup, step = "", ""
        scalar = [f"ak[{i}]" for i in range(rows)]
        head = f"const {t} *bk = b + k * ldb; const {t} *ak = a + k * lda;"
    fmas = "\n".join(
        f"      {{ {t} s = {scalar[i]}; " + " ".join(f"c{i}_{j} += s * b{j};" for j in range(v)) + " }"
        for i in range(rows))
    store_first = "\n".join(
        f"    *({vt} *)(c + {i} * ldc + {j * vl}) = c{i}_{j};"
        for i in range(rows) for j in range(v))
    store_acc = "\n".join(
        f"    *({vt} *)(c + {i} * ldc + {j * vl}) += c{i}_{j};"
        for i in range(rows) for j in range(v))
    if masked:
        store_first = "\n".join(f"    storen_{x}(c + {i} * ldc, c{i}_0, n);" for i in range(rows))
        store_acc = "\n".join(f"    storen_{x}(c + {i} * ldc, c{i}_0 + loadn_{x}(c + {i} * ldc, n), n);"
                              for i in range(rows))
    cols = "n" if masked else str(v * vl)
    linkage = _ENTRY if name == base else "static"
    return f"""
/* C[0:{rows}, 0:{cols}] (=|+=) A[{rows} x kc] . B[kc x {cols}] (row stride ldb), C row stride ldc */
{linkage} void {name}(int64_t kc, const {t} *restrict a, int64_t lda, const {t} *restrict b,
                   int64_t ldb, {t} *restrict c, int64_t ldc, int first{", int64_t n" if masked else ""}) {{
  {vt} {acc};
  {setup}
  for (int i = 0; i < {rows}; ++i) {{             /* C's rows arrive while the loop runs */
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + {v * vl - 1}, 1);
  }}
  #pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {{
    {head}
    {loads}
{fmas}
    {step}
  }}
  if (first) {{
{store_first}
  }} else {{
{store_acc}
  }}
}}
"""


def _micro_kernels(b: Blocking) -> str:
    """Per form (see :func:`_micro_kernel`): the full ``MR``-row micro-kernel, one per
    edge height ``1 .. MR-1`` (a ragged last row panel computes only its rows: M = 128
    over 6-row tiles wasted 4 of 132 rows, M = 8 a third) and ``uk<form>_edge_<suffix>``
    choosing among them; one per edge width of ``1 .. vecs-1`` whole vectors and
    ``uk<form>_cols_<suffix>`` choosing among them (a last column panel of whole vectors
    computes only its columns and writes C in place: N = 96 over 64-column tiles
    computed 128 columns, a third of them into a temporary added to C element by
    element). A masked blocking (:attr:`Blocking.masked`) also has ``ukm<form>_<suffix>_<rows>``
    for every height and ``ukm<form>_edge_<suffix>`` choosing among them: a ragged last
    column panel reads B in place or packed and writes C in place, where it went
    through a zero-padded panel and a temporary tile (one Sapphire Rapids core, float32:
    32 x 512 x 20 went from 53 to 66 GFLOP/s, 128 x 1024 x 10 from 66 to 73)."""
    t, x, mr = b.ctype, b.suffix, b.mr
    out = ""
    args = "kc, a, lda, b, ldb, c, ldc, first"
    for f in ("", "r"):
        if b.masked:
            mcases = " ".join(f"case {r}: ukm{f}_{x}_{r}({args}, n); return;" for r in range(1, mr))
            out += "".join(_micro_kernel(b, r, None, f, True) for r in range(1, mr + 1)) + f"""
/* the masked micro-kernel of rows (1 <= rows <= MR) rows and n (1 <= n <= NR) columns */
{_ENTRY} void ukm{f}_edge_{x}(int64_t rows, int64_t n, int64_t kc, const {t} *restrict a,
                            int64_t lda, const {t} *restrict b, int64_t ldb, {t} *restrict c,
                            int64_t ldc, int first) {{
  switch (rows) {{ {mcases} default: ukm{f}_{x}_{mr}({args}, n); }}
}}
"""
        u = f"uk{f}_{x}"
        cases = " ".join(f"case {r}: {u}_{r}({args}); return;" for r in range(1, mr))
        col_cases = " ".join(f"case {v}: {u}_v{v}({args}); return;" for v in range(1, b.vecs))
        out += ("".join(_micro_kernel(b, r, None, f) for r in range(1, mr + 1))
                + "".join(_micro_kernel(b, mr, v, f) for v in range(1, b.vecs)) + f"""
/* the micro-kernel of rows (1 <= rows <= MR) rows */
{_ENTRY} void uk{f}_edge_{x}(int64_t rows, int64_t kc, const {t} *restrict a, int64_t lda,
                           const {t} *restrict b, int64_t ldb, {t} *restrict c, int64_t ldc,
                           int first) {{
  switch (rows) {{ {cases} default: {u}({args}); }}
}}

/* the micro-kernel of MR rows and vecs (1 <= vecs <= {b.vecs}) vectors of columns */
{_ENTRY} void uk{f}_cols_{x}(int64_t vecs, int64_t kc, const {t} *restrict a, int64_t lda,
                           const {t} *restrict b, int64_t ldb, {t} *restrict c, int64_t ldc,
                           int first) {{
  switch (vecs) {{ {col_cases} default: {u}({args}); }}
}}
""")
    return out


def _vector_source(b: Blocking) -> str:
    """The vector type ``VK<suffix>`` of one blocking and (masked blockings) its masked
    loads and stores: both translation units of the library need them."""
    t, x = b.ctype, b.suffix
    out = (f"\ntypedef {t} VK{x} __attribute__((vector_size({b.vlen * b.size}), "
           f"aligned(sizeof({t})), may_alias));\n")
    return out + (_masked_io_source(b) if b.masked else "")


def _micro_kernel_decls(b: Blocking) -> str:
    """Declarations of the micro-kernels the blocked loops call (defined in the
    library's other translation unit, :func:`_micro_kernels`)."""
    t, x = b.ctype, b.suffix
    ops = (f"int64_t kc, const {t} *restrict a, int64_t lda, const {t} *restrict b, "
           f"int64_t ldb, {t} *restrict c, int64_t ldc, int first")
    out = ""
    for f in ("", "r"):
        out += (f"{_ENTRY} void uk{f}_{x}({ops});\n"
                f"{_ENTRY} void uk{f}_edge_{x}(int64_t rows, {ops});\n"
                f"{_ENTRY} void uk{f}_cols_{x}(int64_t vecs, {ops});\n")
        if b.masked:
            out += f"{_ENTRY} void ukm{f}_edge_{x}(int64_t rows, int64_t n, {ops});\n"
    return out


def _masked_io_source(b: Blocking) -> str:
    """``loadn_<suffix>(p, n)`` (the vector of ``p[0:n]``, zeros after; nothing past
    ``p + n`` is read) and ``storen_<suffix>(p, v, n)`` (``p[0:n] = v[0:n]``, nothing
    else written): AVX-512 masked moves, element loops on a compiler without them."""
    t, x = b.ctype, b.suffix
    ps, mt = ("ps", "unsigned short") if b.size == 4 else ("pd", "unsigned char")
    vt = f"VK{x}"
    # GCC's builtins, not immintrin.h's wrappers of them: parsing that header took a
    # quarter of the library's compile time (0.14 s of gcc -O2 on an empty file)
    return f"""
#if defined(__AVX512F__)
static inline {vt} loadn_{x}(const {t} *p, int64_t n) {{
  return ({vt})__builtin_ia32_loadu{ps}512_mask(p, ({vt}){{0}}, ({mt})((1u << n) - 1));
}}
static inline void storen_{x}({t} *p, {vt} v, int64_t n) {{
  __builtin_ia32_storeu{ps}512_mask(p, v, ({mt})((1u << n) - 1));
}}
#else
static inline {vt} loadn_{x}(const {t} *p, int64_t n) {{
  {vt} v = {{0}};
  for (int64_t j = 0; j < n; ++j) v[j] = p[j];
  return v;
}}
static inline void storen_{x}({t} *p, {vt} v, int64_t n) {{
  for (int64_t j = 0; j < n; ++j) p[j] = v[j];
}}
#endif
"""


def _transpose_source(b: Blocking) -> str:
    """``transpose_<suffix>(v)``: the ``vlen x vlen`` block held in ``vlen`` vectors
    transposed in place, in ``log2(vlen)`` butterfly stages of two-vector shuffles (stage
    ``h`` swaps the elements whose row and column differ in the bit of value ``h``).
    It packs a transposed B: element by element, B's packing took a fifth of ``a @ b.T``'s
    time at M = 128 (128 x 784 x 512 float32 on one Zen 4 core: 256 of 1139 us of CPU;
    by blocks 138 of 1025 us)."""
    x, vl = b.suffix, b.vlen
    it = "int32_t" if b.size == 4 else "int64_t"
    lines = []
    h = vl // 2
    while h >= 1:
        lo = ", ".join(str(c if c % (2 * h) < h else vl + c - h) for c in range(vl))
        hi = ", ".join(str(c + h if c % (2 * h) < h else vl + c) for c in range(vl))
        lines += [f"  {{ VK{x} a = v[{r}], c = v[{r + h}];\n"
                  f"    v[{r}] = __builtin_shuffle(a, c, (IK{x}){{{lo}}});\n"
                  f"    v[{r + h}] = __builtin_shuffle(a, c, (IK{x}){{{hi}}}); }}"
                  for r in range(vl) if not r & h]
        h //= 2
    body = "\n".join(lines)
    return f"""
typedef {it} IK{x} __attribute__((vector_size({vl * b.size})));
static inline void transpose_{x}(VK{x} *v) {{
{body}
}}
"""


def _tile_source(b: Blocking, name: str, form: str) -> str:
    """``<name>_<suffix>``: one micro-tile of ``mr x nr`` (``mr <= MR``, ``nr <= NR``) of C
    (=|+=) A . B with the micro-kernels of ``form`` (see :func:`_micro_kernel`); a tile
    of C not of whole contiguous vectors goes through the buffer ``tile`` (unless
    the blocking is masked and C's rows are contiguous)."""
    t, x, mr, nr = b.ctype, b.suffix, b.mr, b.nr
    full, edge, cols = (f"uk{form}{part}_{x}" for part in ("", "_edge", "_cols"))
    masked = (f"""  }} else if (scn == 1) {{
    ukm{form}_edge_{x}(mr, nr, kc, a, lda, bb, ldb, c, scm, first);
""" if b.masked else "")
    return f"""
static inline void {name}_{x}(int64_t mr, int64_t nr, int64_t kc, const {t} *a, int64_t lda,
                    const {t} *bb, int64_t ldb, {t} *c, int64_t scm, int64_t scn,
                    int first, {t} *tile) {{
  if (mr == {mr} && nr == {nr} && scn == 1) {{
    {full}(kc, a, lda, bb, ldb, c, scm, first);
  }} else if (nr == {nr} && scn == 1) {{
    {edge}(mr, kc, a, lda, bb, ldb, c, scm, first);
  }} else if (mr == {mr} && nr % {b.vlen} == 0 && scn == 1) {{
    {cols}(nr / {b.vlen}, kc, a, lda, bb, ldb, c, scm, first);
{masked}  }} else {{
    {edge}(mr, kc, a, lda, bb, ldb, tile, {nr}, 1);
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t jj = 0; jj < nr; ++jj) {{
        {t} *o = c + i * scm + jj * scn;
        *o = first ? tile[i * {nr} + jj] : *o + tile[i * {nr} + jj];
      }}
  }}
}}
"""


def _variant_source(b: Blocking, vector_bytes: int, oom_where: int) -> str:
    """Micro-kernel, packing and the blocked loops of one register tile."""
    t, x, mr, nr = b.ctype, b.suffix, b.mr, b.nr
    d = x[0]
    packn = (f"      if (nr < {nr}) {{ *(VK{x} *)o = loadn_{x}(r, nr); continue; }}\n"
             if b.masked else "")
    return _vector_source(b) + _micro_kernel_decls(b) + _transpose_source(b) + f"""
/* rows [0, mr) of A (strides sam, sak; neither 1, else A is read in place), depth kc
   -> ap[k * MR + i], rows mr..MR zero */
static void pack_a_{x}(int64_t mr, int64_t kc, const {t} *a, int64_t sam, int64_t sak,
                       {t} *restrict ap) {{
  for (int64_t i = 0; i < mr; ++i) {{
    const {t} *ai = a + i * sam;
    for (int64_t k = 0; k < kc; ++k) ap[k * {mr} + i] = ai[k * sak];
  }}
  for (int64_t i = mr; i < {mr}; ++i)
    for (int64_t k = 0; k < kc; ++k) ap[k * {mr} + i] = 0;
}}

/* columns [0, nr) of B (strides sbk, sbn), depth kc -> bp[k * NR + j], columns nr..NR zero */
static void pack_b_{x}(int64_t nr, int64_t kc, const {t} *b, int64_t sbk, int64_t sbn,
                       {t} *restrict bp) {{
  if (sbn == 1 && nr == {nr}) {{              /* a whole panel: a fixed-width row copy */
    for (int64_t k = 0; k < kc; ++k) {{
      {t} *o = bp + k * {nr}; const {t} *r = b + k * sbk;
      #pragma GCC unroll {b.vecs}
      for (int v = 0; v < {b.vecs}; ++v) __builtin_memcpy(o + v * {b.vlen}, r + v * {b.vlen}, {b.vlen * b.size});
    }}
    return;
  }}
  if (sbn == 1) {{
    for (int64_t k = 0; k < kc; ++k) {{
      {t} *o = bp + k * {nr}; const {t} *r = b + k * sbk;
{packn}      for (int64_t j = 0; j < nr; ++j) o[j] = r[j];
      for (int64_t j = nr; j < {nr}; ++j) o[j] = 0;
    }}
    return;
  }}
  int64_t k0 = 0;
  if (sbk == 1)                               /* B's columns contiguous: by vector blocks */
    for (; k0 + {b.vlen} <= kc; k0 += {b.vlen}) {{
      for (int64_t j0 = 0; j0 + {b.vlen} <= nr; j0 += {b.vlen}) {{
        VK{x} v[{b.vlen}];
        #pragma GCC unroll {b.vlen}
        for (int i = 0; i < {b.vlen}; ++i) v[i] = *(const VK{x} *)(b + (j0 + i) * sbn + k0);
        transpose_{x}(v);
        #pragma GCC unroll {b.vlen}
        for (int i = 0; i < {b.vlen}; ++i) *(VK{x} *)(bp + (k0 + i) * {nr} + j0) = v[i];
      }}
      for (int64_t j = nr / {b.vlen} * {b.vlen}; j < nr; ++j)
        for (int64_t k = k0; k < k0 + {b.vlen}; ++k) bp[k * {nr} + j] = b[j * sbn + k];
    }}
  for (; k0 < kc; k0 += 8) {{                  /* transposing: 8 rows of bp at a time */
    int64_t k1 = min_{d}(k0 + 8, kc);
    for (int64_t j = 0; j < nr; ++j) {{
      const {t} *bj = b + j * sbn;
      for (int64_t k = k0; k < k1; ++k) bp[k * {nr} + j] = bj[k * sbk];
    }}
  }}
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t j = nr; j < {nr}; ++j) bp[k * {nr} + j] = 0;
}}

/* one GEMM in flight: the operands, the block being computed and its shared packed
   panels; the pieces of a phase read it and claim work from plait's pool */
typedef struct {{
  int64_t M, N, K, sam, sak, sbk, sbn, scm, scn;
  const {t} *A, *B; {t} *C; int acc, direct_b, a_in;   /* a_in: A_PACKED, A_COLS, A_ROWS */
  int pack_in_tile;   /* the tile pieces pack their own B panels (no packing phase) */
  int64_t i3, m3, pc, kc, j2, n2, pack_b, bskip, step, rstep, cstep, rpieces;
  {t} *ap, *bp; const {t} *bpk;
}} gemm_job_{x};

/* pack piece p: a run of the slab's A micro-panels (unless A is read in place), then
   (pack_b) of the block's B ones after the first bskip (read in place) */
static void pack_piece_{x}(void *ctx, int64_t p) {{
  const gemm_job_{x} *j = ctx;
  int64_t na = j->a_in == A_PACKED ? (j->m3 + {mr - 1}) / {mr} : 0;
  int64_t nb = j->pack_b ? (j->n2 + {nr - 1}) / {nr} - j->bskip : 0;
  int64_t hi = min_{d}((p + 1) * j->step, na + nb);
  for (int64_t q = p * j->step; q < hi; ++q) {{
    if (q < na) {{
      int64_t ir = q * {mr};
      pack_a_{x}(min_{d}({mr}, j->m3 - ir), j->kc, j->A + (j->i3 + ir) * j->sam + j->pc * j->sak,
                 j->sam, j->sak, j->ap + ir * j->kc);
    }} else {{
      int64_t jr = (q - na + j->bskip) * {nr}, nr = min_{d}({nr}, j->n2 - jr);
      pack_b_{x}(nr, j->kc, j->B + j->pc * j->sbk + (j->j2 + jr) * j->sbn, j->sbk, j->sbn,
                   j->bp + jr * j->kc);
    }}
  }}
}}


""" + "".join(_tile_source(b, name, form) for name, form in (("tile", ""), ("tile_rows", "r"))) \
        + f"""
/* tile piece p: a rectangle of micro-tiles, column panel by column panel (its KC x NR
   B panel is reused while the slab's A panels stream past it) */
static void tile_piece_{x}(void *ctx, int64_t p) {{
  const gemm_job_{x} *j = ctx;
  int64_t r0 = p % j->rpieces * j->rstep, c0 = p / j->rpieces * j->cstep;
  int64_t r1 = min_{d}(r0 + j->rstep, j->m3), c1 = min_{d}(c0 + j->cstep, j->n2), kc = j->kc;
  int first = j->pc == 0 && !j->acc;
  {t} tile[{mr * nr}] __attribute__((aligned(64)));
  for (int64_t jr = c0; jr < c1; jr += {nr}) {{
    int64_t nr = min_{d}({nr}, c1 - jr);
    const {t} *bb; int64_t ldb;
    if (j->bpk) {{ bb = j->bpk + (j->j2 + jr) * j->K + j->pc * {nr}; ldb = {nr}; }}
    else if (j->direct_b && {"1" if b.masked else f"nr == {nr}"}) {{ bb = j->B + j->pc * j->sbk + j->j2 + jr; ldb = j->sbk; }}
    else {{
      bb = j->bp + jr * kc; ldb = {nr};
      if (j->pack_in_tile)
        pack_b_{x}(nr, kc, j->B + j->pc * j->sbk + (j->j2 + jr) * j->sbn, j->sbk, j->sbn, j->bp + jr * kc);
    }}
    for (int64_t ir = r0; ir < r1; ir += {mr}) {{
      int64_t mr = min_{d}({mr}, r1 - ir);
      {t} *c = j->C + (j->i3 + ir) * j->scm + (j->j2 + jr) * j->scn;
      const {t} *a = j->A + (j->i3 + ir) * j->sam + j->pc * j->sak;
      if (j->a_in == A_ROWS)
        tile_rows_{x}(mr, nr, kc, a, j->sam, bb, ldb, c, j->scm, j->scn, first, tile);
      else if (j->a_in == A_COLS)
        tile_{x}(mr, nr, kc, a, j->sak, bb, ldb, c, j->scm, j->scn, first, tile);
      else
        tile_{x}(mr, nr, kc, j->ap + ir * kc, {mr}, bb, ldb, c, j->scm, j->scn, first, tile);
    }}
  }}
}}


/* how block_ reads A: in place when its rows or its columns are contiguous (packing
   it cost more than its contiguous panels saved: 256^3 float32 on 2 cores ran at 210
   GFLOP/s packed, 233 in place; 2048^3 alike), else packed */
static int a_form_{x}(int64_t sam, int64_t sak) {{
  return sam == 1 ? A_COLS : sak == 1 ? A_ROWS : A_PACKED;
}}

/* C (=|+=) A @ B on up to threads threads (BLIS loop order): for each KC x N2 block of
   B and M3 x KC slab of A, one phase packs both (shared by all threads), a second
   computes the slab's micro-tiles in rectangles; both phases' pieces are claimed
   dynamically (pool_for), so a thread the OS delays holds up nothing. bpk: B already
   packed whole (see one_packed_), or NULL to pack it block by block */
static int64_t block_{x}(int64_t M, int64_t N, int64_t K,
                         const {t} *A, int64_t sam, int64_t sak,
                         const {t} *B, int64_t sbk, int64_t sbn, const {t} *bpk,
                         {t} *C, int64_t scm, int64_t scn, int acc, int threads) {{
  if (M <= 0 || N <= 0 || (K == 0 && acc)) return 0;
  if (K == 0) {{
    for (int64_t i = 0; i < M; ++i) for (int64_t j = 0; j < N; ++j) C[i * scm + j * scn] = 0;
    return 0;
  }}
  /* as many panels as KC needs, of equal depth (no thin last pass over C) */
  int64_t kcmax = (K + (K + {b.kc - 1}) / {b.kc} - 1) / ((K + {b.kc - 1}) / {b.kc});
  /* a shallower panel leaves room for more rows and columns in the same caches */
  int64_t slab = N <= {2 * nr} ? {b.n2 * b.kc} : {b.m3 * b.kc};  /* reused? L2 : L3 */
  int64_t m3max = max_{d}(slab / kcmax / {mr}, 1) * {mr}, slabs = (M + m3max - 1) / m3max;
  m3max = ((M + slabs - 1) / slabs + {mr - 1}) / {mr} * {mr};        /* slabs of equal height */
  int64_t n2max = min_{d}(max_{d}({b.n2 * b.kc} / kcmax / {nr}, 1) * {nr},
                          (N + {nr - 1}) / {nr} * {nr});
  {t} *ap = pack_buffer_{d}((m3max + n2max) * kcmax);
  if (!ap) return (int64_t)((m3max + n2max) * kcmax * sizeof({t})) * {oom_where}LL;
  gemm_job_{x} j = {{M, N, K, sam, sak, sbk, sbn, scm, scn, A, B, C, acc,
                     /* few row panels: B is read in place (packing it cost more than it
                        saved up to 8 panels: the VAE's 32 x 784 x 512 products in its
                        step, 223 -> 184 us; 32 x 512 x 512, 163 -> 119 us) */
                     !bpk && M <= {8 * mr} && sbn == 1, a_form_{x}(sam, sak)}};
  j.ap = ap; j.bp = ap + m3max * kcmax; j.bpk = bpk;
  for (j.j2 = 0; j.j2 < N; j.j2 += n2max) {{
    j.n2 = min_{d}(n2max, N - j.j2);
    for (j.pc = 0; j.pc < K; j.pc += kcmax) {{
      j.kc = min_{d}(kcmax, K - j.pc);
      for (j.i3 = 0; j.i3 < M; j.i3 += m3max) {{
        j.m3 = min_{d}(m3max, M - j.i3);
        j.pack_b = j.i3 == 0 && !bpk;
        int64_t rp = (j.m3 + {mr - 1}) / {mr}, cp = (j.n2 + {nr - 1}) / {nr};
        /* panels read in place: the whole ones (masked: all) */
        j.bskip = j.direct_b ? {"cp" if b.masked else f"j.n2 / {nr}"} : 0;
        /* a few rectangles per thread, each of at least {_PIECE_MACS} multiply-adds:
           whole column panels first, rows split only when the panels run out */
        int64_t parts = threads > 1 ? threads * 4 : 1;
        double macs = (double)j.m3 * j.n2 * j.kc;
        int64_t tparts = macs / parts < {_PIECE_MACS}.0 ? max_{d}((int64_t)(macs / {_PIECE_MACS}.0), 1) : parts;
        int64_t cpieces = min_{d}(tparts, cp);
        int64_t rpieces = min_{d}((tparts + cpieces - 1) / cpieces, rp);
        j.cstep = (cp + cpieces - 1) / cpieces * {nr};
        j.rstep = (rp + rpieces - 1) / rpieces * {mr};
        j.rpieces = (j.m3 + j.rstep - 1) / j.rstep;
        /* A read in place and each column panel in one piece: that piece packs it just
           before its tiles read it (no packing phase, the panel hot in its core's L2) */
        j.pack_in_tile = j.pack_b && j.a_in != A_PACKED && j.rpieces == 1;
        int64_t tasks = (j.a_in == A_PACKED ? rp : 0) + (j.pack_b && !j.pack_in_tile ? cp - j.bskip : 0);
        j.step = max_{d}((tasks + parts - 1) / parts, 1);
        if (tasks) pool_for(threads, (tasks + j.step - 1) / j.step, pack_piece_{x}, &j);
        pool_for(threads, j.rpieces * ((j.n2 + j.cstep - 1) / j.cstep), tile_piece_{x}, &j);
      }}
    }}
  }}
  return 0;
}}

"""


def _dot_rows_source(b: Blocking, vector_bytes: int) -> str:
    """``dot_rows_<suffix>``: ``y[i] = row_i . v`` over contiguous rows and ``v``, four rows
    at a time so each vector of ``v`` is loaded once for four independent accumulator
    chains, whose lanes are then summed by halving the vectors (one add per halving, no
    lane-by-lane chain). One row at a time with a 16-lane sum per row ran W3's logistic
    ``X @ d`` (5000 x 100 float32) at 47 us, half the speed of its transposed product."""
    t, x = b.ctype, b.suffix
    vl = vector_bytes // b.size
    widths = []
    w = vector_bytes // 2
    while w >= 16:
        widths.append(w)
        w //= 2
    types = "".join(f"typedef {t} H{x}{w} __attribute__((vector_size({w}), aligned(sizeof({t})), "
                    f"may_alias));\n" for w in widths)
    halve, cur = [], "a"
    for i, w in enumerate(widths):
        nxt = f"h{i}_"
        halve.append("  " + " ".join(
            f"H{x}{w} {nxt}{r} = ((const H{x}{w} *)&{cur}{r})[0] + ((const H{x}{w} *)&{cur}{r})[1];"
            for r in range(4)))
        cur = nxt
    lanes = (widths[-1] if widths else vector_bytes) // b.size
    sums = "\n".join(f"  s[{r}] = " + " + ".join(f"{cur}{r}[{l}]" for l in range(lanes)) + ";"
                     for r in range(4))
    return f"""
{types}
/* s[r] = the sum of the lanes of a<r> */
static inline void lane_sums_{x}(V{x} a0, V{x} a1, V{x} a2, V{x} a3, {t} *s) {{
{chr(10).join(halve)}
{sums}
}}

/* y[i * so] = sum_k mat[i * si + k] * v[k] for lo <= i < hi */
static void dot_rows_{x}(int64_t lo, int64_t hi, int64_t K, const {t} *mat, int64_t si,
                        const {t} *v, {t} *y, int64_t so) {{
  int64_t kv = K / {vl} * {vl}, i = lo;
  for (; i + 4 <= hi; i += 4) {{
    const {t} *r0 = mat + i * si, *r1 = r0 + si, *r2 = r1 + si, *r3 = r2 + si;
    V{x} a0 = {{0}}, a1 = {{0}}, a2 = {{0}}, a3 = {{0}};
    for (int64_t k = 0; k < kv; k += {vl}) {{
      V{x} w = *(const V{x} *)(v + k);
      a0 += *(const V{x} *)(r0 + k) * w; a1 += *(const V{x} *)(r1 + k) * w;
      a2 += *(const V{x} *)(r2 + k) * w; a3 += *(const V{x} *)(r3 + k) * w;
    }}
    {t} s[4];
    lane_sums_{x}(a0, a1, a2, a3, s);
    for (int64_t k = kv; k < K; ++k) {{
      s[0] += r0[k] * v[k]; s[1] += r1[k] * v[k]; s[2] += r2[k] * v[k]; s[3] += r3[k] * v[k];
    }}
    y[i * so] = s[0]; y[(i + 1) * so] = s[1]; y[(i + 2) * so] = s[2]; y[(i + 3) * so] = s[3];
  }}
  for (; i < hi; ++i) {{
    const {t} *r0 = mat + i * si;
    V{x} a0 = {{0}};
    for (int64_t k = 0; k < kv; k += {vl}) a0 += *(const V{x} *)(r0 + k) * *(const V{x} *)(v + k);
    {t} s = 0;
    for (int l = 0; l < {vl}; ++l) s += a0[l];
    for (int64_t k = kv; k < K; ++k) s += r0[k] * v[k];
    y[i * so] = s;
  }}
}}
"""


#: most vectors of outputs a matrix-vector product over contiguous columns keeps in
#: registers (:func:`_gemv_cols_source`)
GEMV_COLS_VECS = 8
#: most row ranges such a product is cut into (their partial sums live on the stack)
GEMV_COLS_PARTS = 64


def _gemv_cols_source(b: Blocking, vector_bytes: int) -> str:
    """``gemv_cols_<suffix>``: ``y = v . Mat`` for a ``K x L`` matrix whose ``L`` outputs
    (at most :data:`GEMV_COLS_VECS` vectors) are contiguous in each row: its rows are cut
    into ranges of about ``_PIECE_MACS`` multiply-adds (at most
    :data:`GEMV_COLS_PARTS`), each summing its rows into vector accumulators held in
    registers (one chain per vector), one block of consecutive ranges per thread (each
    thread's own block from call to call, as ``gemv_``'s); the ranges' partial sums are
    then added in range order, so the result does not depend on the thread count."""
    t, x = b.ctype, b.suffix
    vl = vector_bytes // b.size
    kernels, cases = [], []
    for nv in range(GEMV_COLS_VECS + 1):
        acc = "".join(f" V{x} a{j} = {{0}};" for j in range(nv))
        fma = " ".join(f"a{j} += s * *(const V{x} *)(r + {j * vl});" for j in range(nv))
        store = " ".join(f"*(V{x} *)(part + {j * vl}) = a{j};" for j in range(nv))
        kernels.append(f"""
static void gemv_cols_{x}_{nv}(int64_t L, int64_t k0, int64_t k1, const {t} *mat, int64_t sk,
                               const {t} *v, int64_t sv, {t} *part) {{{acc}
  {t} tail[{vl}] = {{0}};
  for (int64_t k = k0; k < k1; ++k) {{
    {t} s = v[k * sv]; const {t} *r = mat + k * sk;
    {fma}
    for (int64_t i = {nv * vl}; i < L; ++i) tail[i - {nv * vl}] += s * r[i];
  }}
  {store}
  for (int64_t i = {nv * vl}; i < L; ++i) part[i] = tail[i - {nv * vl}];
}}""")
        cases.append(f"case {nv}: gemv_cols_{x}_{nv}(j->L, k0, k1, j->mat, j->sk, j->v, j->sv, "
                     f"part); return;")
    return "".join(kernels) + f"""

typedef struct {{
  int64_t L, K, sk, sv, rows, ranges, blocks; const {t} *mat, *v; {t} *parts;
  _Atomic int taken[POOL_MAX];
}} gemv_cols_job_{x};

/* rows [r * rows, (r + 1) * rows) of the product into partial sum r */
static void gemv_cols_range_{x}(const gemv_cols_job_{x} *j, int64_t r) {{
  int64_t k0 = r * j->rows, k1 = k0 + j->rows < j->K ? k0 + j->rows : j->K;
  {t} *part = j->parts + r * j->L;
  switch (j->L / {vl}) {{ {" ".join(cases)} }}
}}

/* one block of consecutive ranges, claimed by affinity (pool_claim_block) */
static void gemv_cols_piece_{x}(void *ctx, int64_t p) {{
  gemv_cols_job_{x} *j = ctx;
  int b = pool_claim_block(j->taken, (int)j->blocks);
  for (int64_t r = j->ranges * b / j->blocks; b >= 0 && r < j->ranges * (b + 1) / j->blocks; ++r)
    gemv_cols_range_{x}(j, r);
}}

/* y[i * so] = sum_k mat[k * sk + i] * v[k * sv] for i < L, 1 <= L <= {GEMV_COLS_VECS * vl} */
static void gemv_cols_{x}(int64_t L, int64_t K, const {t} *mat, int64_t sk, const {t} *v,
                          int64_t sv, {t} *y, int64_t so, int threads) {{
  int64_t rows = {_PIECE_MACS // 4} / L + 1;
  if (rows * {GEMV_COLS_PARTS} < K) rows = (K + {GEMV_COLS_PARTS - 1}) / {GEMV_COLS_PARTS};
  int64_t pieces = K > 0 ? (K + rows - 1) / rows : 0;
  {t} parts[{GEMV_COLS_PARTS * GEMV_COLS_VECS * vl}];
  gemv_cols_job_{x} j = {{L, K, sk, sv, rows, pieces, min_{x}(min_{x}(threads, POOL_MAX), pieces),
                         mat, v, parts}};
  for (int i = 0; i < POOL_MAX; ++i) atomic_init(&j.taken[i], 0);
  if (pieces) pool_for(threads, j.blocks, gemv_cols_piece_{x}, &j);
  for (int64_t i = 0; i < L; ++i) {{
    {t} s = pieces ? parts[i] : 0;
    for (int64_t p = 1; p < pieces; ++p) s += parts[p * L + i];
    y[i * so] = s;
  }}
}}
"""


def _dtype_source(b: Blocking, nb: Blocking, vector_bytes: int, oom_where: int) -> str:
    """One dtype's functions: ``b`` the main tile, ``nb`` the narrow one (N <= half the
    main tile's width)."""
    x, n = b.suffix, nb.suffix
    nn = b.nr // 2
    axpy = 16384 // b.size
    return f"""
typedef {b.ctype} V{x} __attribute__((vector_size({vector_bytes}), aligned(sizeof({b.ctype})), may_alias));

static __thread {b.ctype} *buf_{x};
static __thread int64_t cap_{x};

/* this thread's pack buffer of at least n elements (kept between calls), or NULL */
static {b.ctype} *pack_buffer_{x}(int64_t n) {{
  if (n > cap_{x}) {{
    free(buf_{x});
    size_t bytes = ((size_t)n * sizeof({b.ctype}) + 63) / 64 * 64;
    buf_{x} = aligned_alloc(64, bytes);
    cap_{x} = buf_{x} ? n : 0;
  }}
  return buf_{x};
}}

static int64_t min_{x}(int64_t a, int64_t b) {{ return a < b ? a : b; }}
static int64_t max_{x}(int64_t a, int64_t b) {{ return a > b ? a : b; }}

""" + _variant_source(b, vector_bytes, oom_where) + \
        _variant_source(nb, vector_bytes, oom_where) + _dot_rows_source(b, vector_bytes) + \
        _gemv_cols_source(b, vector_bytes) + f"""
/* y[i] = sum_k Mat[i * si + k * sk] * v[k * sv] for lo <= i < hi, y stride so */
static void gemv_rows_{x}(int64_t lo, int64_t hi, int64_t K, const {b.ctype} *mat, int64_t si,
                          int64_t sk, const {b.ctype} *v, int64_t sv, {b.ctype} *y, int64_t so) {{
  if (sk == 1 && sv == 1) {{                   /* dot products along contiguous rows */
    dot_rows_{x}(lo, hi, K, mat, si, v, y, so);
    return;
  }}
  if (si == 1) {{                              /* axpy over contiguous columns */
    for (int64_t i0 = lo; i0 < hi; i0 += {axpy}) {{
      int64_t n = min_{x}({axpy}, hi - i0);
      V{x} acc[{axpy // b.vlen}];
      int64_t nv = n / {b.vlen};            /* whole vectors; the rest is scalar */
      {b.ctype} tail[{b.vlen}] = {{0}};
      for (int64_t q = 0; q < nv; ++q) acc[q] = (V{x}){{0}};
      int64_t k = 0;
      for (; k + 4 <= K; k += 4) {{
        {b.ctype} s0 = v[k * sv], s1 = v[(k + 1) * sv], s2 = v[(k + 2) * sv], s3 = v[(k + 3) * sv];
        const {b.ctype} *r0 = mat + k * sk + i0, *r1 = r0 + sk, *r2 = r1 + sk, *r3 = r2 + sk;
        for (int64_t q = 0; q < nv; ++q) {{
          int64_t o = q * {b.vlen};
          acc[q] += s0 * *(const V{x} *)(r0 + o) + s1 * *(const V{x} *)(r1 + o)
                  + s2 * *(const V{x} *)(r2 + o) + s3 * *(const V{x} *)(r3 + o);
        }}
        for (int64_t i = nv * {b.vlen}; i < n; ++i)
          tail[i - nv * {b.vlen}] += s0 * r0[i] + s1 * r1[i] + s2 * r2[i] + s3 * r3[i];
      }}
      for (; k < K; ++k) {{
        {b.ctype} s = v[k * sv]; const {b.ctype} *row = mat + k * sk + i0;
        for (int64_t q = 0; q < nv; ++q) acc[q] += s * *(const V{x} *)(row + q * {b.vlen});
        for (int64_t i = nv * {b.vlen}; i < n; ++i) tail[i - nv * {b.vlen}] += s * row[i];
      }}
      for (int64_t q = 0; q < nv; ++q)
        for (int l = 0; l < {b.vlen}; ++l) y[(i0 + q * {b.vlen} + l) * so] = acc[q][l];
      for (int64_t i = nv * {b.vlen}; i < n; ++i) y[(i0 + i) * so] = tail[i - nv * {b.vlen}];
    }}
    return;
  }}
  for (int64_t i = lo; i < hi; ++i) {{
    {b.ctype} s = 0;
    for (int64_t k = 0; k < K; ++k) s += mat[i * si + k * sk] * v[k * sv];
    y[i * so] = s;
  }}
}}

typedef struct {{
  int64_t L, K, si, sk, sv, so, unit, units, blocks; const {b.ctype} *mat, *v; {b.ctype} *y;
  _Atomic int taken[POOL_MAX];
}} gemv_job_{x};

/* one of the job's blocks of whole row groups, claimed by affinity (pool_claim_block) */
static void gemv_piece_{x}(void *ctx, int64_t p) {{
  gemv_job_{x} *j = ctx;
  int b = pool_claim_block(j->taken, (int)j->blocks);
  if (b < 0) return;
  int64_t lo = j->units * b / j->blocks * j->unit;
  int64_t hi = min_{x}(j->units * (b + 1) / j->blocks * j->unit, j->L);
  gemv_rows_{x}(lo, hi, j->K, j->mat, j->si, j->sk, j->v, j->sv, j->y, j->so);
}}

/* the matrix-vector product of all L rows, one block of whole row groups per thread (a
   group: 4 dot products, one axpy block, or one row), each thread's own block from call
   to call, so a matrix multiplied in a loop stays split across the cores' caches (W3
   logistic's 5000 x 100 X, 2 MB, read twice per CG iteration) */
static int64_t gemv_{x}(int64_t L, int64_t K, const {b.ctype} *mat, int64_t si, int64_t sk,
                        const {b.ctype} *v, int64_t sv, {b.ctype} *y, int64_t so, int threads) {{
  if (si == 1 && L >= 1 && L <= {GEMV_COLS_VECS * vector_bytes // b.size}) {{
    gemv_cols_{x}(L, K, mat, sk, v, sv, y, so, threads);     /* few outputs: split the rows */
    return 0;
  }}
  int64_t unit = sk == 1 && sv == 1 ? 4 : si == 1 ? {axpy} : 1, units = (L + unit - 1) / unit;
  int64_t blocks = min_{x}(min_{x}(threads, POOL_MAX), units);
  gemv_job_{x} j = {{L, K, si, sk, sv, so, unit, units, blocks, mat, v, y}};
  for (int i = 0; i < POOL_MAX; ++i) atomic_init(&j.taken[i], 0);
  pool_for(threads, blocks, gemv_piece_{x}, &j);
  return 0;
}}

static int64_t one_{x}(int64_t M, int64_t N, int64_t K,
                       const {b.ctype} *A, int64_t sam, int64_t sak,
                       const {b.ctype} *B, int64_t sbk, int64_t sbn,
                       {b.ctype} *C, int64_t scm, int64_t scn, int threads, int acc) {{
  if (N == 1 && !acc) return gemv_{x}(M, K, A, sam, sak, B, sbk, C, scm, threads);
  if (M == 1 && !acc) return gemv_{x}(N, K, B, sbn, sbk, A, sak, C, scn, threads);
  if (N <= {nn})                               /* narrow: the one-vector tile */
    return block_{n}(M, N, K, A, sam, sak, B, sbk, sbn, NULL, C, scm, scn, acc, threads);
  return block_{x}(M, N, K, A, sam, sak, B, sbk, sbn, NULL, C, scm, scn, acc, threads);
}}

/* the width of the column panels one_ multiplies an N-column B in (its tile's NR) */
static int64_t panel_width_{x}(int64_t N) {{ return N <= {nn} ? {nb.nr} : {b.nr}; }}

/* one_ with B packed whole once for several products (a convolution's kernel, reused by
   each of its im2col chunks): column panel p (width w = panel_width_(N)) at bpk + p w K,
   its K rows of w columns each, zero past N */
static int64_t one_packed_{x}(int64_t M, int64_t N, int64_t K,
                              const {b.ctype} *A, int64_t sam, int64_t sak,
                              const {b.ctype} *bpk, {b.ctype} *C, int64_t scm, int64_t scn,
                              int threads, int acc) {{
  if (N <= {nn})
    return block_{n}(M, N, K, A, sam, sak, NULL, 0, 0, bpk, C, scm, scn, acc, threads);
  return block_{x}(M, N, K, A, sam, sak, NULL, 0, 0, bpk, C, scm, scn, acc, threads);
}}

typedef struct {{
  int64_t M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn;
  const {b.ctype} *A, *B; {b.ctype} *C; _Atomic int64_t status;
}} batch_job_{x};

static void batch_piece_{x}(void *ctx, int64_t i) {{
  batch_job_{x} *j = ctx;
  int64_t r = one_{x}(j->M, j->N, j->K, j->A + i * j->sab, j->sam, j->sak, j->B + i * j->sbb,
                      j->sbk, j->sbn, j->C + i * j->scb, j->scm, j->scn, 1, 0);
  if (r) atomic_store(&j->status, r);
}}

int64_t plait_gemm_{x}(int64_t batch, int64_t M, int64_t N, int64_t K,
                       const {b.ctype} *A, int64_t sab, int64_t sam, int64_t sak,
                       const {b.ctype} *B, int64_t sbb, int64_t sbk, int64_t sbn,
                       {b.ctype} *C, int64_t scb, int64_t scm, int64_t scn) {{
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  double macs = (double)M * N * K;
  if (macs * batch < (M == 1 || N == 1 ? {b.gemv_par_macs}.0 : {b.par_macs}.0)) threads = 1;
  if (threads > 1 && batch >= threads && macs < {b.par_macs * 64}.0) {{
    batch_job_{x} j = {{M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn, A, B, C, 0}};
    pool_for(threads, batch, batch_piece_{x}, &j);   /* many small products: split the batch */
    return atomic_load(&j.status);
  }}
  for (int64_t i = 0; i < batch; ++i) {{
    int64_t status = one_{x}(M, N, K, A + i * sab, sam, sak, B + i * sbb, sbk, sbn,
                             C + i * scb, scm, scn, threads, 0);
    if (status) return status;
  }}
  return 0;
}}
"""


# a convolution kernel of at least this many elements is packed on every thread: packing
# 3x3x256x256 (2.4 MB) alone took a tenth of the layer's time at 14x14 while the other
# thread waited
KPACK_PARALLEL = 1 << 16


def _direct_conv_source(b: Blocking, oom_where: int, pad_bytes: int) -> str:
    """``conv_direct_<suffix>``: a convolution whose output channels are contiguous, with
    no im2col copy. Output pixels (over all images) are cut into tiles of ``MR`` pixels;
    the micro-kernel holds ``MR x NR`` accumulators (the GEMM's register tile) and, for
    each kernel tap and input channel, broadcasts each pixel's input element from its
    window's corner plus the tap's offset and multiplies it by one row of the kernel
    packed in the GEMM's column panels. The input is read in place when no padding is
    needed and its channels and pixels are contiguous, else from a zero-padded copy
    (about one input's size, against the kernel-area-times-larger im2col rows; at most
    ``pad_bytes`` of it at a time, a run of whole images each). Pieces of
    the pool are runs of tiles, panel by panel, so the threads share a panel in the L3
    and each output element is summed by one piece in one order (tap, then channel):
    results do not depend on the thread count. Measured on one core (Sapphire Rapids, 3x3
    SAME float32, GFLOP/s): 256 channels at 14x14 137 against 106 for im2col chunks and
    148 for oneDNN; 64 channels at 56x56 160 against 99 and 160. An input-dilated
    convolution's output phases (``conv_phase_direct_``) run the same tiles over tables of
    pixel corners and tap offsets: All-CNN-C's 32x32x96 stride-2 input gradient took
    13.6-14.0 ms of one core's time against 15.6-15.9 as im2col phases."""
    t, x, mr, vl, nv = b.ctype, b.suffix, b.mr, b.vlen, b.vecs
    nr = b.nr
    vt = "VK" + x
    ptrs = " ".join(f"const {t} *a{i} = px[{i}] + o;" for i in range(mr))
    loads = " ".join(f"{vt} b{j} = *(const {vt} *)(wk + {j * vl});" for j in range(nv))
    fmas = "\n".join(f"      {{ {t} s = a{i}[ci]; " + " ".join(f"c{i}_{j} += s * b{j};" for j in range(nv))
                     + " }" for i in range(mr))
    acc = ", ".join(f"c{i}_{j} = {{0}}" for i in range(mr) for j in range(nv))
    rows = "\n".join(f"    case {i}: " + " ".join(f"*({vt} *)(o + {j * vl}) = c{i}_{j};" for j in range(nv))
                     + " break;" for i in range(mr))
    return f"""
/* rows (<= MR) output pixels by the panel's NR columns (n of them real, stored at
   yo[i][0..n)): sum over taps tp and channels ci of px[i][toff[tp] + ci] * wp[tp, ci, :];
   a missing row repeats pixel 0 (its sums are dropped) */
static void dtile_{x}(int64_t taps, const int64_t *toff, int64_t C, const {t} *const *px,
                      const {t} *restrict wp, {t} *const *yo, int64_t rows, int64_t n) {{
  {vt} {acc};
  for (int64_t tp = 0; tp < taps; ++tp) {{
    int64_t o = toff[tp];
    {ptrs}
    const {t} *wk = wp + tp * C * {nr};
    #pragma GCC unroll 4
    for (int64_t ci = 0; ci < C; ++ci, wk += {nr}) {{
      {loads}
{fmas}
    }}
  }}
  for (int64_t i = 0; i < rows; ++i) {{
    {t} tmp[{nr}] __attribute__((aligned(64)));
    {t} *o = n == {nr} ? yo[i] : tmp;
    switch (i) {{
{rows}
    }}
    if (o == tmp) for (int64_t j = 0; j < n; ++j) yo[i][j] = tmp[j];
  }}
}}

/* output pixels (image, hi, wi) on an nh x nw grid: input corner xp + image * sxb + xr[hi]
   + xc[wi], output row Y + image * syb + yr[hi] + yc[wi]; the kernel's taps at toff */
typedef struct {{
  const {t} *xp, *wp; {t} *Y; const int64_t *toff, *xr, *xc, *yr, *yc;
  int64_t C, O, taps, nh, nw, all, sxb, syb, tiles, per, pieces_per_panel;
}} dconv_job_{x};

/* tiles [q per, (q + 1) per) of panel p, for piece p * pieces_per_panel + q */
static void dconv_piece_{x}(void *ctx, int64_t piece) {{
  const dconv_job_{x} *j = ctx;
  int64_t P = j->nh * j->nw;
  int64_t p = piece / j->pieces_per_panel, q = piece % j->pieces_per_panel;
  int64_t n = min_{x}({nr}, j->O - p * {nr});
  const {t} *wp = j->wp + p * j->taps * j->C * {nr};
  for (int64_t tile = q * j->per; tile < min_{x}((q + 1) * j->per, j->tiles); ++tile) {{
    const {t} *px[{mr}]; {t} *yo[{mr}];
    int64_t m0 = tile * {mr}, rows = min_{x}({mr}, j->all - m0);
    for (int64_t i = 0; i < {mr}; ++i) {{
      int64_t m = m0 + (i < rows ? i : 0), bi = m / P, hi = (m % P) / j->nw, wi = m % j->nw;
      px[i] = j->xp + bi * j->sxb + j->xr[hi] + j->xc[wi];
      yo[i] = j->Y + bi * j->syb + j->yr[hi] + j->yc[wi] + p * {nr};
    }}
    dtile_{x}(j->taps, j->toff, j->C, px, wp, yo, rows, n);
  }}
}}

/* every tile of j's NB images in pieces of the pool: a few per thread, each of at least
   {_PIECE_MACS} multiply-adds */
static void dconv_run_{x}(dconv_job_{x} *j, int64_t NB, int threads) {{
  int64_t K = j->taps * j->C, panels = (j->O + {nr - 1}) / {nr};
  j->all = NB * j->nh * j->nw;
  j->tiles = (j->all + {mr - 1}) / {mr};
  j->per = {_PIECE_MACS} / ({mr * nr} * (K > 0 ? K : 1)) + 1;
  int64_t even = (j->tiles * panels + 4 * threads - 1) / (4 * threads);
  if (j->per > even) j->per = even > 0 ? even : 1;
  j->pieces_per_panel = (j->tiles + j->per - 1) / j->per;
  pool_for(threads, panels * j->pieces_per_panel, dconv_piece_{x}, j);
}}

typedef struct {{
  const int64_t *d; const {t} *X; {t} *xp; int64_t HP, WP, ph, pw;
}} dpad_job_{x};   /* X: the first image to copy */

/* row r = (image, padded row) of the zero-padded input copy (x's (0, 0) at (ph, pw)) */
static void dpad_piece_{x}(void *ctx, int64_t r) {{
  const dpad_job_{x} *j = ctx;
  const int64_t *d = j->d;
  int64_t C = d[1], bi = r / j->HP, hp = r % j->HP;
  for (int64_t wq = 0; wq < j->WP; ++wq)
    pixel_{x}(j->xp + (r * j->WP + wq) * C, j->X + bi * d[4], hp - j->ph, wq - j->pw,
              d[2], d[3], C, d[6], d[7], d[5]);
}}

/* images X[0 .. nb) zero-padded into xp, HP x WP pixels of contiguous channels each,
   x's (0, 0) at (ph, pw) */
static void dpad_{x}({t} *xp, const int64_t *d, const {t} *X, int64_t nb, int64_t HP,
                     int64_t WP, int64_t ph, int64_t pw, int threads) {{
  int64_t rows = nb * HP;
  dpad_job_{x} pj = {{d, X, xp, HP, WP, ph, pw}};
  if (threads > 1 && rows * WP * d[1] >= {KPACK_PARALLEL}) pool_for(threads, rows, dpad_piece_{x}, &pj);
  else for (int64_t r = 0; r < rows; ++r) dpad_piece_{x}(&pj, r);
}}

/* images per zero-padded copy of HP x WP x C elements: as many as {pad_bytes} bytes hold,
   at least one, at most NB (a whole batch copied at once doubled a large input's memory) */
static int64_t dpad_images_{x}(int64_t NB, int64_t HP, int64_t WP, int64_t C) {{
  int64_t per = HP * WP * C * (int64_t)sizeof({t}), n = per > 0 ? {pad_bytes}LL / per : NB;
  return n < 1 ? 1 : n > NB ? NB : n;
}}

/* whether plait_conv runs d directly: its output channels contiguous, and more of them
   than half a column panel (the narrow tile's panels are too thin for a pixel tile) */
static int direct_{x}(const int64_t *d) {{ return d[18] == 1 && d[8] > {nr // 2}; }}

/* plait_conv of one group without input dilation, output channels contiguous: see
   _direct_conv_source in plait.codegen.c_gemm */
static int64_t conv_direct_{x}(const int64_t *d, const {t} *X, const {t} *Wt, {t} *Y,
                               int threads) {{
  int64_t NB = d[0], C = d[1], H = d[2], W = d[3], O = d[8], KH = d[9], KW = d[10];
  int64_t OH = d[15], OW = d[16], sh = d[21], sw = d[22], ph = d[23], pw = d[24];
  int64_t dh = d[25], dw = d[26], taps = KH * KW, K = taps * C;
  int64_t HP = (OH - 1) * sh + (KH - 1) * dh + 1, WP = (OW - 1) * sw + (KW - 1) * dw + 1;
  int in_place = ph == 0 && pw == 0 && HP <= H && WP <= W && d[5] == 1 && d[7] == C;
  int64_t sxb = d[4], sxh = d[6], sxw = C;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(taps + 2 * (OH + OW)));
  if (!idx) return (int64_t)((taps + 2 * (OH + OW)) * sizeof(int64_t)) * {oom_where}LL;
  {t} *xp = NULL, *wp = NULL;
  int64_t st = 0, nb = in_place ? NB : dpad_images_{x}(NB, HP, WP, C);
  if (!in_place) {{
    xp = malloc(sizeof({t}) * (size_t)(nb * HP * WP * C));
    if (!xp) {{ st = (int64_t)(nb * HP * WP * C * (int64_t)sizeof({t})) * {oom_where}LL; goto done; }}
    sxb = HP * WP * C; sxh = WP * C;
  }}
  int64_t *toff = idx, *xr = idx + taps, *xc = xr + OH, *yr = xc + OW, *yc = yr + OH;
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) toff[kh * KW + kw] = kh * dh * sxh + kw * dw * sxw;
  for (int64_t oh = 0; oh < OH; ++oh) {{ xr[oh] = oh * sh * sxh; yr[oh] = oh * d[19]; }}
  for (int64_t ow = 0; ow < OW; ++ow) {{ xc[ow] = ow * sw * sxw; yc[ow] = ow * d[20]; }}
  wp = pack_kernel_{x}(d, Wt, NULL, KH, NULL, KW, threads);
  if (!wp) {{ st = packed_kernel_bytes_{x}(K, O) * {oom_where}LL; goto done; }}
  for (int64_t b0 = 0; b0 < NB; b0 += nb) {{    /* a padded copy of nb images at a time */
    int64_t n = min_{x}(nb, NB - b0);
    if (!in_place) dpad_{x}(xp, d, X + b0 * d[4], n, HP, WP, ph, pw, threads);
    dconv_job_{x} j = {{in_place ? X + b0 * d[4] : xp, wp, Y + b0 * d[17], toff, xr, xc, yr, yc,
                       C, O, taps, OH, OW, 0, sxb, d[17], 0, 0, 0}};
    dconv_run_{x}(&j, n, threads);
  }}
done:
  free(wp); free(xp); free(idx);
  return st;
}}

/* plait_conv of one group with input dilation (lh, lw) and contiguous output channels:
   the phases of conv_phase_one_ as direct convolutions over one zero-padded copy of x.
   In phase (rh, rw) an output row oh reads input row (oh*sh - ph - rh)/lh + (rh + kh*dh)/lh
   at each of the phase's taps kh (both divisions exact), so its pixels' corners and its
   taps' offsets are tables; a phase without taps writes zeros. */
static int64_t conv_phase_direct_{x}(const int64_t *d, const {t} *X, const {t} *Wt, {t} *Y,
                                     int threads) {{
  int64_t NB = d[0], C = d[1], H = d[2], W = d[3], O = d[8], KH = d[9], KW = d[10];
  int64_t OH = d[15], OW = d[16], sh = d[21], sw = d[22], ph = d[23], pw = d[24];
  int64_t dh = d[25], dw = d[26], lh = d[27], lw = d[28];
  /* the padded copy spans every pixel corner (row (oh*sh - ph - rh)/lh, rounded down)
     and every input row a tap reads, and x */
  int64_t h0 = 0, h1 = H - 1, w0 = 0, w1 = W - 1;
  for (int64_t oh = 0; oh < OH; ++oh) {{
    int64_t a = oh * sh - ph, q = (a - mod_{x}(a, lh)) / lh;
    h0 = q < h0 ? q : h0;
    for (int64_t kh = 0; kh < KH; ++kh)
      if (mod_{x}(a + kh * dh, lh) == 0 && (a + kh * dh) / lh > h1) h1 = (a + kh * dh) / lh;
  }}
  for (int64_t ow = 0; ow < OW; ++ow) {{
    int64_t a = ow * sw - pw, q = (a - mod_{x}(a, lw)) / lw;
    w0 = q < w0 ? q : w0;
    for (int64_t kw = 0; kw < KW; ++kw)
      if (mod_{x}(a + kw * dw, lw) == 0 && (a + kw * dw) / lw > w1) w1 = (a + kw * dw) / lw;
  }}
  int64_t HP = h1 - h0 + 1, WP = w1 - w0 + 1, sxh = WP * C, st = 0;
  int64_t ni = KH * KW + 3 * (OH + OW) + KH + KW;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)ni), nb = dpad_images_{x}(NB, HP, WP, C);
  {t} *xp = idx ? malloc(sizeof({t}) * (size_t)(nb * HP * WP * C)) : NULL, *wp = NULL;
  if (!idx) {{ st = ni * (int64_t)sizeof(int64_t) * {oom_where}LL; goto done; }}
  if (!xp) {{ st = (int64_t)(nb * HP * WP * C * (int64_t)sizeof({t})) * {oom_where}LL; goto done; }}
  if (nb == NB) dpad_{x}(xp, d, X, NB, HP, WP, -h0, -w0, threads);   /* one copy for all phases */
  int64_t *toff = idx, *xr = toff + KH * KW, *xc = xr + OH, *yr = xc + OW, *yc = yr + OH;
  int64_t *ohs = yc + OW, *ows = ohs + OH, *khs = ows + OW, *kws = khs + KH;
  for (int64_t phase = 0; phase < lh * lw && !st; ++phase) {{
    int64_t rh = phase / lw, rw = phase % lw, noh = 0, now = 0, nth = 0, ntw = 0;
    for (int64_t oh = 0; oh < OH; ++oh) if (mod_{x}(oh * sh - ph, lh) == rh) ohs[noh++] = oh;
    for (int64_t ow = 0; ow < OW; ++ow) if (mod_{x}(ow * sw - pw, lw) == rw) ows[now++] = ow;
    if (noh == 0 || now == 0) continue;
    for (int64_t kh = 0; kh < KH; ++kh) if (mod_{x}(rh + kh * dh, lh) == 0) khs[nth++] = kh;
    for (int64_t kw = 0; kw < KW; ++kw) if (mod_{x}(rw + kw * dw, lw) == 0) kws[ntw++] = kw;
    for (int64_t a = 0; a < noh; ++a) {{
      xr[a] = ((ohs[a] * sh - ph - rh) / lh - h0) * sxh; yr[a] = ohs[a] * d[19];
    }}
    for (int64_t b = 0; b < now; ++b) {{
      xc[b] = ((ows[b] * sw - pw - rw) / lw - w0) * C; yc[b] = ows[b] * d[20];
    }}
    if (nth * ntw == 0) {{
      for (int64_t bi = 0; bi < NB; ++bi)
        for (int64_t a = 0; a < noh; ++a)
          for (int64_t b = 0; b < now; ++b)
            memset(Y + bi * d[17] + yr[a] + yc[b], 0, sizeof({t}) * (size_t)O);
      continue;
    }}
    for (int64_t a = 0; a < nth; ++a)
      for (int64_t b = 0; b < ntw; ++b)
        toff[a * ntw + b] = (rh + khs[a] * dh) / lh * sxh + (rw + kws[b] * dw) / lw * C;
    wp = pack_kernel_{x}(d, Wt, khs, nth, kws, ntw, threads);
    if (!wp) {{ st = packed_kernel_bytes_{x}(nth * ntw * C, O) * {oom_where}LL; break; }}
    for (int64_t b0 = 0; b0 < NB; b0 += nb) {{   /* else nb images padded at a time */
      int64_t n = min_{x}(nb, NB - b0);
      if (nb < NB) dpad_{x}(xp, d, X + b0 * d[4], n, HP, WP, -h0, -w0, threads);
      dconv_job_{x} j = {{xp, wp, Y + b0 * d[17], toff, xr, xc, yr, yc, C, O, nth * ntw, noh,
                         now, 0, HP * WP * C, d[17], 0, 0, 0}};
      dconv_run_{x}(&j, n, threads);
    }}
    free(wp); wp = NULL;
  }}
done:
  free(wp); free(xp); free(idx);
  return st;
}}
"""


def _conv_source(b: Blocking, im2col_bytes: int, oom_where: int, pad_bytes: int) -> str:
    """``plait_conv_<s|d>``: a 2-d convolution as GEMMs over im2col row chunks."""
    x, t = b.suffix, b.ctype
    return f"""
/* one im2col pixel: x's C channels at (ih, iw) of image xb into o, zeros outside */
static inline void pixel_{x}({t} *o, const {t} *xb, int64_t ih, int64_t iw, int64_t H,
                             int64_t W, int64_t C, int64_t sxh, int64_t sxw, int64_t sxc) {{
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) {{
    for (int64_t ci = 0; ci < C; ++ci) o[ci] = 0;
  }} else {{
    const {t} *src = xb + ih * sxh + iw * sxw;
    if (sxc == 1) memcpy(o, src, sizeof({t}) * (size_t)C);
    else for (int64_t ci = 0; ci < C; ++ci) o[ci] = src[ci * sxc];
  }}
}}

static int64_t mod_{x}(int64_t a, int64_t m) {{ return ((a % m) + m) % m; }}

/* this thread's im2col buffer of at least n elements (kept between calls), or NULL */
static __thread {t} *cbuf_{x};
static __thread int64_t ccap_{x};

static {t} *conv_buffer_{x}(int64_t n) {{
  if (n > ccap_{x}) {{
    free(cbuf_{x});
    size_t bytes = ((size_t)n * sizeof({t}) + 63) / 64 * 64;
    cbuf_{x} = aligned_alloc(64, bytes);
    ccap_{x} = cbuf_{x} ? n : 0;
  }}
  return cbuf_{x};
}}

/* bytes of a K x O kernel packed by pack_kernel_ */
static int64_t packed_kernel_bytes_{x}(int64_t K, int64_t O) {{
  int64_t w = panel_width_{x}(O);
  return (O + w - 1) / w * w * K * (int64_t)sizeof({t});
}}

/* the kernel's taps (khs[a], kws[b]) (every tap when khs is NULL) being packed as
   B[(a, b, ci), o] into bpk, in pieces of its rows k = (a, b, ci) */
typedef struct {{
  const int64_t *d; const {t} *Wt; const int64_t *khs, *kws; int64_t ntw, K, pieces;
  {t} *bpk;
}} kpack_job_{x};

static void kpack_piece_{x}(void *ctx, int64_t piece) {{
  const kpack_job_{x} *j = ctx;
  const int64_t *d = j->d;
  int64_t C = d[1], O = d[8], swo = d[11], swi = d[12], swh = d[13], sww = d[14];
  int64_t K = j->K, w = panel_width_{x}(O), np = (O + w - 1) / w;
  for (int64_t k = K * piece / j->pieces; k < K * (piece + 1) / j->pieces; ++k) {{
    int64_t a = k / (j->ntw * C), b = (k / C) % j->ntw, ci = k % C;
    const {t} *src = j->Wt + ci * swi + (j->khs ? j->khs[a] : a) * swh
                     + (j->kws ? j->kws[b] : b) * sww;
    for (int64_t p = 0; p < np; ++p) {{   /* panel p holds columns [p w, p w + w) */
      {t} *dst = j->bpk + (p * K + k) * w;
      int64_t o0 = p * w, n = min_{x}(w, O - o0);
      if (swo == 1) memcpy(dst, src + o0, sizeof({t}) * (size_t)n);   /* HWIO: a run */
      else for (int64_t i = 0; i < n; ++i) dst[i] = src[(o0 + i) * swo];
      for (int64_t i = n; i < w; ++i) dst[i] = 0;
    }}
  }}
}}

/* the kernel's taps (khs[a], kws[b]) (every tap when khs is NULL) as B[(a, b, ci), o],
   packed once for one_packed_ (every im2col chunk's product reads it as it is), on up to
   `threads` threads when it is large, or NULL */
static {t} *pack_kernel_{x}(const int64_t *d, const {t} *Wt, const int64_t *khs, int64_t nth,
                            const int64_t *kws, int64_t ntw, int threads) {{
  int64_t C = d[1], O = d[8];
  int64_t K = nth * ntw * C;
  {t} *bpk = malloc((size_t)(K > 0 ? packed_kernel_bytes_{x}(K, O) : 1));
  if (!bpk) return NULL;
  int64_t pieces = threads > 1 && K * O >= {KPACK_PARALLEL} ? 4 * (int64_t)threads : 1;
  if (pieces > K) pieces = K > 0 ? K : 1;
  kpack_job_{x} j = {{d, Wt, khs, kws, ntw, K, pieces, bpk}};
  if (pieces > 1) pool_for(threads, pieces, kpack_piece_{x}, &j);
  else kpack_piece_{x}(&j, 0);
  return bpk;
}}

/* a weight gradient's columns [k0, k1) of im2col (see conv_t_), in chunks gathered into
   this thread's buffer, each adding its GEMM (on th threads) to Y (row stride syb,
   column stride syo; acc: add to Y's first chunk too) */
static int64_t conv_t_range_{x}(const int64_t *d, const {t} *X, const {t} *B, int64_t sbk,
                                int64_t sbn, int64_t k0, int64_t k1, int64_t chunk, {t} *Y,
                                int64_t syb, int64_t syo, int th, int acc) {{
  int64_t NB = d[0], H = d[2], W = d[3], sxc = d[5], sxh = d[6], sxw = d[7];
  int64_t O = d[8], KH = d[9], KW = d[10], OH = d[15], OW = d[16];
  int64_t sh = d[21], sw = d[22], ph = d[23], pw = d[24], dh = d[25], dw = d[26];
  int64_t R = OH * OW * NB;
  {t} *buf = conv_buffer_{x}(chunk * R);
  if (!buf) return (int64_t)(chunk * R * sizeof({t})) * {oom_where}LL;
  for (int64_t c0 = k0; c0 < k1; c0 += chunk) {{
    int64_t kn = min_{x}(chunk, k1 - c0);
    for (int64_t kk = 0; kk < kn; ++kk) {{
      int64_t k = c0 + kk, ci = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
      for (int64_t oh = 0; oh < OH; ++oh) {{
        int64_t ih = oh * sh - ph + kh * dh;
        for (int64_t ow = 0; ow < OW; ++ow) {{
          int64_t iw = ow * sw - pw + kw * dw;
          {t} *o = buf + kk * R + (oh * OW + ow) * NB;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W) memset(o, 0, sizeof({t}) * (size_t)NB);
          else memcpy(o, X + ci * sxc + ih * sxh + iw * sxw, sizeof({t}) * (size_t)NB);
        }}
      }}
    }}
    int64_t st = one_{x}(R, O, kn, buf, 1, R, B + c0 * sbk, sbk, sbn, Y, syb, syo, th,
                         acc || c0 > k0);
    if (st) return st;
  }}
  return 0;
}}

/* the column ranges of one weight gradient, one per piece, each into its own sum */
typedef struct {{
  const int64_t *d; const {t} *X, *B; int64_t sbk, sbn, K, chunk, parts; {t} *sums;
  _Atomic int64_t status;
}} conv_t_job_{x};

static void conv_t_piece_{x}(void *ctx, int64_t p) {{
  conv_t_job_{x} *j = ctx;
  int64_t R = j->d[15] * j->d[16] * j->d[0], O = j->d[8];
  int64_t k0 = j->K * p / j->parts, k1 = j->K * (p + 1) / j->parts;
  int64_t st = conv_t_range_{x}(j->d, j->X, j->B, j->sbk, j->sbn, k0, k1, j->chunk,
                                j->sums + p * R * O, O, 1, 1, 0);
  if (st) atomic_store(&j->status, st);
}}

/* plait_conv when the batch dimension of x is its contiguous one and y's rows (oh, ow,
   b) are one stride (a weight gradient in NHWC: "batch" is the input channel): the
   columns (ci, kh, kw) of im2col are gathered as rows of contiguous batch runs, in
   L2-sized chunks of columns, and each chunk adds its GEMM (A read transposed) to y.
   With several threads the columns are cut into one range per thread, each summed on
   one thread into its own R x O temporary (no barrier, no packing of the same rows
   twice), and the sums are added into y at the end. */
static int64_t conv_t_{x}(const int64_t *d, const {t} *X, const {t} *Wt, {t} *Y,
                          int threads) {{
  int64_t NB = d[0], C = d[1];
  int64_t O = d[8], KH = d[9], KW = d[10], swo = d[11], swi = d[12], swh = d[13], sww = d[14];
  int64_t OH = d[15], OW = d[16], syb = d[17], syo = d[18];
  int64_t K = C * KH * KW, R = OH * OW * NB;
  const {t} *B = Wt; int64_t sbk = sww, sbn = swo;
  {t} *wcopy = NULL;
  if (!(swh == sww * KW && swi == swh * KH)) {{
    wcopy = malloc(sizeof({t}) * (size_t)(K * O));
    if (!wcopy) return (int64_t)(K * O * sizeof({t})) * {oom_where}LL;
    for (int64_t ci = 0; ci < C; ++ci) for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) for (int64_t o = 0; o < O; ++o)
        wcopy[((ci * KH + kh) * KW + kw) * O + o] = Wt[o * swo + ci * swi + kh * swh + kw * sww];
    B = wcopy; sbk = O; sbn = 1;
  }}
  int64_t chunk = {im2col_bytes} / (int64_t)sizeof({t}) / R;
  if (chunk < 64) chunk = 64;
  if (chunk > K) chunk = K;
  /* a range per thread when each has a few chunks' worth of columns and the sums are
     small beside the work */
  int64_t parts = threads;
  if (parts > 1 && K < parts * 2 * chunk && K < parts * 256) parts = 1;
  if ((double)R * O * K < {b.par_macs}.0 * parts) parts = 1;
  int64_t status;
  if (parts == 1) {{
    status = conv_t_range_{x}(d, X, B, sbk, sbn, 0, K, chunk, Y, syb, syo, threads, 0);
  }} else {{
    {t} *sums = malloc(sizeof({t}) * (size_t)(parts * R * O));
    if (!sums) {{ free(wcopy); return (int64_t)(parts * R * O * sizeof({t})) * {oom_where}LL; }}
    conv_t_job_{x} j = {{d, X, B, sbk, sbn, K, chunk, parts, sums, 0}};
    pool_for(threads, parts, conv_t_piece_{x}, &j);
    status = atomic_load(&j.status);
    for (int64_t r = 0; r < R && !status; ++r)
      for (int64_t o = 0; o < O; ++o) {{
        {t} s = 0;
        for (int64_t p = 0; p < parts; ++p) s += sums[(p * R + r) * O + o];
        Y[r * syb + o * syo] = s;
      }}
    free(sums);
  }}
  free(wcopy);
  return status;
}}

/* one convolution without input dilation, as conv_one_ cuts it into chunks of rows */
typedef struct {{
  const int64_t *d; const {t} *X, *bpk; {t} *Y;
  int64_t K, P, group, chunk, per; int runs, scatter, th;
  _Atomic int64_t status;
}} conv_job_{x};

/* rows [r0 + ra, r0 + rb) of im2col (columns (kh, kw, ci)) into rows [ra, rb) of buf */
static void conv_gather_{x}(const conv_job_{x} *j, {t} *buf, int64_t r0, int64_t ra,
                            int64_t rb) {{
  const int64_t *d = j->d;
  int64_t C = d[1], H = d[2], W = d[3], sxb = d[4], sxc = d[5], sxh = d[6], sxw = d[7];
  int64_t KH = d[9], KW = d[10], OW = d[16];
  int64_t sh = d[21], sw = d[22], ph = d[23], pw = d[24], dh = d[25], dw = d[26];
  int64_t K = j->K, P = j->P;
  for (int64_t r = ra; r < rb; ++r) {{
    int64_t m = r0 + r, bi = m / P, oh = (m % P) / OW, ow = m % OW;
    {t} *row = buf + r * K;
    for (int64_t kh = 0; kh < KH; ++kh) {{
      int64_t ih = oh * sh - ph + kh * dh;
      if (j->runs) {{  /* the (kw, ci) columns are one run of x: copy it whole */
        {t} *o = row + kh * KW * C;
        int64_t iw0 = ow * sw - pw, lo = iw0 < 0 ? -iw0 : 0, hi = W - iw0;
        if (hi > KW) hi = KW;
        if (ih < 0 || ih >= H || hi < lo) lo = hi = 0;
        memset(o, 0, sizeof({t}) * (size_t)(lo * C));
        memcpy(o + lo * C, j->X + bi * sxb + ih * sxh + (iw0 + lo) * sxw,
               sizeof({t}) * (size_t)((hi - lo) * C));
        memset(o + hi * C, 0, sizeof({t}) * (size_t)((KW - hi) * C));
        continue;
      }}
      for (int64_t kw = 0; kw < KW; ++kw) {{
        int64_t iw = ow * sw - pw + kw * dw;
        pixel_{x}(row + (kh * KW + kw) * C, j->X + bi * sxb, ih, iw, H, W, C, sxh, sxw, sxc);
      }}
    }}
  }}
}}

/* one chunk's gather split over the pool's threads (a chunk whose GEMM uses them all) */
typedef struct {{ const conv_job_{x} *j; {t} *buf; int64_t r0, rows, pieces; }} gather_job_{x};

static void gather_piece_{x}(void *ctx, int64_t p) {{
  const gather_job_{x} *g = ctx;
  conv_gather_{x}(g->j, g->buf, g->r0, g->rows * p / g->pieces, g->rows * (p + 1) / g->pieces);
}}

/* chunk c = (group, piece) of rows (b, oh, ow): gathered (im2col, columns (kh, kw, ci))
   into this thread's buffer and multiplied by the kernel as one GEMM on j->th threads
   (which share the gather too) */
static void conv_chunk_{x}(void *ctx, int64_t c) {{
  conv_job_{x} *j = ctx;
  const int64_t *d = j->d;
  int64_t O = d[8], P = j->P;
  int64_t OW = d[16], syb = d[17], syo = d[18], syh = d[19], syw = d[20];
  int64_t K = j->K, chunk = j->chunk;
  int64_t g0 = c / j->per * j->group, r0 = g0 + c % j->per * chunk;
  int64_t rows = min_{x}(chunk, g0 + j->group - r0), st;
  {t} *buf = conv_buffer_{x}(chunk * K + (j->scatter ? chunk * O : 0));
  if (!buf) {{
    atomic_store(&j->status, (int64_t)((chunk * K + (j->scatter ? chunk * O : 0)) * sizeof({t}))
                             * {oom_where}LL);
    return;
  }}
  {t} *ytmp = buf + chunk * K;
  if (j->th > 1 && rows * K >= {KPACK_PARALLEL}) {{
    gather_job_{x} g = {{j, buf, r0, rows, rows < 4 * j->th ? rows : 4 * j->th}};
    pool_for(j->th, g.pieces, gather_piece_{x}, &g);
  }} else conv_gather_{x}(j, buf, r0, 0, rows);
  if (j->scatter) {{
    st = one_packed_{x}(rows, O, K, buf, K, 1, j->bpk, ytmp, O, 1, j->th, 0);
    for (int64_t r = 0; r < rows; ++r) {{
      int64_t m = r0 + r, bi = m / P, oh = (m % P) / OW, ow = m % OW;
      {t} *yo = j->Y + bi * syb + oh * syh + ow * syw;
      for (int64_t o = 0; o < O; ++o) yo[o * syo] = ytmp[r * O + o];
    }}
  }} else {{
    int64_t bi = r0 / P, oh = (r0 % P) / OW, ow = r0 % OW;
    st = one_packed_{x}(rows, O, K, buf, K, 1, j->bpk, j->Y + bi * syb + oh * syh + ow * syw,
                        syw, syo, j->th, 0);
  }}
  if (st) atomic_store(&j->status, st);
}}

""" + _direct_conv_source(b, oom_where, pad_bytes) + f"""
/* plait_conv of one group without input dilation: rows (b, oh, ow) are gathered
   (im2col, columns (kh, kw, ci)) in chunks of at most {im2col_bytes} bytes, each
   multiplied by the kernel (packed once for all chunks) as one GEMM. With enough rows
   the chunks are pieces of plait's pool, a few per thread, each gathered and multiplied
   on one thread (no barrier between the gather and the GEMM); few rows gather on the
   caller and use every thread in the GEMM. */
static int64_t conv_one_{x}(const int64_t *d, const {t} *X, const {t} *Wt, {t} *Y,
                            int threads) {{
  int64_t NB = d[0], C = d[1], sxb = d[4], sxc = d[5], sxw = d[7];
  int64_t O = d[8], KH = d[9], KW = d[10];
  int64_t OH = d[15], OW = d[16], syb = d[17], syh = d[19], syw = d[20], dw = d[26];
  int64_t K = KH * KW * C, P = OH * OW;
  if (sxb == 1 && NB > 1 && syh == OW * syw && syw == NB * syb)
    return conv_t_{x}(d, X, Wt, Y, threads);
  if (direct_{x}(d) && KH * KW > 1)        /* a 1x1 kernel is one GEMM over x's pixels */
    return conv_direct_{x}(d, X, Wt, Y, threads);
  {t} *bpk = pack_kernel_{x}(d, Wt, NULL, KH, NULL, KW, threads);
  if (!bpk) return packed_kernel_bytes_{x}(K, O) * {oom_where}LL;
  /* rows of one GEMM: all (b, oh, ow) when y's rows are one stride, else one image's
     when they are and the image has enough of them; otherwise the GEMM writes a
     contiguous temporary that is scattered into y (a weight gradient's few rows per
     "image") */
  int64_t all = NB * P;
  int64_t group = syh == OW * syw ? (syb == OH * syh ? all : P) : 1;
  int scatter = group < {b.mr * 8} && group < all;
  if (scatter) group = all;
  int64_t chunk = {im2col_bytes} / (int64_t)sizeof({t}) / (K > 0 ? K : 1);
  /* a few chunks per thread while each keeps {b.mr * 16} rows to pay for its GEMM call
     (a pass over the packed kernel per slab of rows) */
  int64_t even = (all + 4 * threads - 1) / (4 * threads);
  if (threads > 1 && even < chunk) chunk = even;
  if (chunk < {b.mr * 16}) chunk = {b.mr * 16};
  if (chunk > group) chunk = group;
  int64_t per = (group + chunk - 1) / chunk, nchunks = all / group * per;
  int outer = threads > 1 && nchunks >= 2 * threads;
  conv_job_{x} j = {{d, X, bpk, Y, K, P, group, chunk, per,
                     sxc == 1 && sxw == C && dw == 1, scatter, outer ? 1 : threads, 0}};
  if (outer) pool_for(threads, nchunks, conv_chunk_{x}, &j);
  else for (int64_t c = 0; c < nchunks && !atomic_load(&j.status); ++c) conv_chunk_{x}(&j, c);
  free(bpk);
  return atomic_load(&j.status);
}}

/* plait_conv of one group with input dilation (lh, lw) -- the input gradient of a strided
   convolution -- without the zero-interleaved copy of x. An output row oh reads dilated
   position oh*sh - ph + kh*dh, a real input element only when that is a multiple of lh,
   so the rows fall into lh phases by (oh*sh - ph) mod lh, each with its own taps kh
   (likewise for w). A phase (rh, rw) is one GEMM: im2col rows (b, oh, ow) of that phase
   with columns (its taps, ci), times the kernel rows of those taps (packed once), in chunks,
   into a temporary scattered to y; a phase without taps writes zeros. */
typedef struct {{
  const int64_t *d; const {t} *X, *Wt; {t} *Y; int nt; _Atomic int64_t status;
}} phase_job_{x};

/* output phase (rh, rw) = (phase / lw, phase % lw) of an input-dilated convolution */
static void conv_phase_one_{x}(void *ctx, int64_t phase) {{
  phase_job_{x} *j = ctx;
  const int64_t *d = j->d; const {t} *X = j->X, *Wt = j->Wt; {t} *Y = j->Y; int nt = j->nt;
  int64_t NB = d[0], C = d[1], H = d[2], W = d[3], sxb = d[4], sxc = d[5], sxh = d[6], sxw = d[7];
  int64_t O = d[8], KH = d[9], KW = d[10];
  int64_t OH = d[15], OW = d[16], syb = d[17], syo = d[18], syh = d[19], syw = d[20];
  int64_t sh = d[21], sw = d[22], ph = d[23], pw = d[24], dh = d[25], dw = d[26];
  int64_t lh = d[27], lw = d[28];
  {{
    int64_t rh = phase / lw, rw = phase % lw, st = 0;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(OH + OW + KH + KW));
    {t} *wp = NULL, *buf = NULL;
    if (!idx) {{
      st = (int64_t)((OH + OW + KH + KW) * sizeof(int64_t)) * {oom_where}LL;
      goto done;
    }}
    int64_t *ohs = idx, *ows = idx + OH, *khs = idx + OH + OW, *kws = idx + OH + OW + KH;
    {{
      int64_t noh = 0, now = 0, nth = 0, ntw = 0;
      for (int64_t oh = 0; oh < OH; ++oh) if (mod_{x}(oh * sh - ph, lh) == rh) ohs[noh++] = oh;
      for (int64_t ow = 0; ow < OW; ++ow) if (mod_{x}(ow * sw - pw, lw) == rw) ows[now++] = ow;
      if (noh == 0 || now == 0) goto done;
      for (int64_t kh = 0; kh < KH; ++kh) if (mod_{x}(rh + kh * dh, lh) == 0) khs[nth++] = kh;
      for (int64_t kw = 0; kw < KW; ++kw) if (mod_{x}(rw + kw * dw, lw) == 0) kws[ntw++] = kw;
      int64_t per = noh * now, all = NB * per, K = nth * ntw * C;
      if (K == 0) {{
        for (int64_t m = 0; m < all; ++m) {{
          {t} *yo = Y + (m / per) * syb + ohs[(m / now) % noh] * syh + ows[m % now] * syw;
          for (int64_t o = 0; o < O; ++o) yo[o * syo] = 0;
        }}
        goto done;
      }}
      wp = pack_kernel_{x}(d, Wt, khs, nth, kws, ntw, nt);
      if (!wp) {{ st = packed_kernel_bytes_{x}(K, O) * {oom_where}LL; goto done; }}
      int64_t chunk = {im2col_bytes} / (int64_t)sizeof({t}) / K;
      if (chunk < {b.mr * 8}) chunk = {b.mr * 8};
      if (chunk > all) chunk = all;
      buf = malloc(sizeof({t}) * (size_t)(chunk * (K + O)));
      if (!buf) {{ st = (int64_t)(chunk * (K + O) * sizeof({t})) * {oom_where}LL; goto done; }}
      {t} *ytmp = buf + chunk * K;
      for (int64_t r0 = 0; r0 < all && !st; r0 += chunk) {{
        int64_t rows = min_{x}(chunk, all - r0);
        #pragma omp parallel for schedule(static) if (nt > 1 && rows * K > 32768)
        for (int64_t r = 0; r < rows; ++r) {{
          int64_t m = r0 + r, bi = m / per, oh = ohs[(m / now) % noh], ow = ows[m % now];
          {t} *row = buf + r * K;
          for (int64_t th = 0; th < nth; ++th) {{
            int64_t ih = (oh * sh - ph + khs[th] * dh) / lh;
            for (int64_t tw = 0; tw < ntw; ++tw) {{
              int64_t iw = (ow * sw - pw + kws[tw] * dw) / lw;
              pixel_{x}(row + (th * ntw + tw) * C, X + bi * sxb, ih, iw, H, W, C, sxh, sxw,
                        sxc);
            }}
          }}
        }}
        st = one_packed_{x}(rows, O, K, buf, K, 1, wp, ytmp, O, 1, nt, 0);
        for (int64_t r = 0; r < rows && !st; ++r) {{
          int64_t m = r0 + r;
          {t} *yo = Y + (m / per) * syb + ohs[(m / now) % noh] * syh + ows[m % now] * syw;
          for (int64_t o = 0; o < O; ++o) yo[o * syo] = ytmp[r * O + o];
        }}
      }}
    }}
  done:
    free(buf); free(idx); free(wp);
    if (st) atomic_store(&j->status, st);
  }}
}}

static int64_t conv_phase_{x}(const int64_t *d, const {t} *X, const {t} *Wt, {t} *Y,
                              int threads) {{
  if (direct_{x}(d)) return conv_phase_direct_{x}(d, X, Wt, Y, threads);
  /* with a few phases per thread, each phase runs on one thread (pieces of the pool) */
  int outer = threads > 1 && d[27] * d[28] >= 2 * threads;
  phase_job_{x} j = {{d, X, Wt, Y, outer ? 1 : threads, 0}};
  if (outer) pool_for(threads, d[27] * d[28], conv_phase_one_{x}, &j);
  else for (int64_t p = 0; p < d[27] * d[28] && !atomic_load(&j.status); ++p)
    conv_phase_one_{x}(&j, p);
  return atomic_load(&j.status);
}}

typedef struct {{
  const int64_t *d, *dg; const {t} *X, *Wt; {t} *Y; int inner; _Atomic int64_t status;
}} group_job_{x};

/* feature group g: a convolution of its own on j->inner threads */
static void conv_group_{x}(void *ctx, int64_t g) {{
  group_job_{x} *j = ctx;
  const int64_t *d = j->d, *dg = j->dg;
  const {t} *xg = j->X + g * dg[1] * d[5];
  const {t} *wg = j->Wt + g * dg[8] * d[11];
  {t} *yg = j->Y + g * dg[8] * d[18];
  int64_t st = d[27] > 1 || d[28] > 1 ? conv_phase_{x}(dg, xg, wg, yg, j->inner)
                                      : conv_one_{x}(dg, xg, wg, yg, j->inner);
  if (st) atomic_store(&j->status, st);
}}

/* y = conv(x, w), 2 spatial dimensions. d[]: batch, C, H, W, x strides (b, c, h, w); O,
   KH, KW, w strides (o, i, h, w); OH, OW, y strides (b, o, h, w); window strides (h, w),
   low padding (h, w), kernel dilation (h, w), input dilation (h, w), feature groups G
   (C and O are the totals; group g reads channels [g*C/G, (g+1)*C/G) of x and writes
   [g*O/G, (g+1)*O/G) of y). Many small groups (vmap's per-example kernels) run one per
   thread; otherwise each group's GEMMs use all threads. */
int64_t plait_conv_{x}(const int64_t *d, const {t} *X, const {t} *Wt, {t} *Y) {{
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  int64_t G = d[29], Cg = d[1] / G, Og = d[8] / G;
  int dilated = d[27] > 1 || d[28] > 1;
  if (G == 1)
    return dilated ? conv_phase_{x}(d, X, Wt, Y, threads) : conv_one_{x}(d, X, Wt, Y, threads);
  int64_t dg[30];
  memcpy(dg, d, sizeof(dg));
  dg[1] = Cg; dg[8] = Og;
  int64_t macs = d[0] * d[15] * d[16] * Og * d[9] * d[10] * Cg / (d[27] * d[28]);
  int outer = threads > 1 && G >= threads && macs < {b.par_macs} * 16;
  group_job_{x} j = {{d, dg, X, Wt, Y, outer ? 1 : threads, 0}};
  if (outer) pool_for(threads, G, conv_group_{x}, &j);   /* a group per piece */
  else for (int64_t g = 0; g < G && !atomic_load(&j.status); ++g) conv_group_{x}(&j, g);
  return atomic_load(&j.status);
}}
"""


def gemm_source(blockings: tuple[tuple[Blocking, Blocking], ...], vector_bytes: int,
                oom_where: int, im2col_bytes: int, pad_bytes: int) -> list[str]:
    """The library's C source, two translation units the C compiler builds at the same
    time: one ``plait_gemm_<suffix>`` and ``plait_conv_<suffix>`` per dtype's (main,
    narrow) blocking pair, then the micro-kernels they call (about half of the compile
    time: 1.1 of 2.2 s of gcc -O2 for float32)."""
    head = ("#define _GNU_SOURCE\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n"
            "#ifdef _OPENMP\n#include <omp.h>\n#endif\n" + POOL_SOURCE
            + "enum { A_PACKED, A_COLS, A_ROWS };   /* how a GEMM reads A */\n")
    loops = head + "".join(_dtype_source(b, nb, vector_bytes, oom_where)
                           + _conv_source(b, im2col_bytes, oom_where, pad_bytes)
                           for b, nb in blockings)
    kernels = "#include <stdint.h>\n" + "".join(_vector_source(v) + _micro_kernels(v)
                                                for pair in blockings for v in pair)
    return [loops, kernels]
