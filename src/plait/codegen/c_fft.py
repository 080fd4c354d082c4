"""C source of plait's own FFT library: float32 real-to-complex transforms over the last
one or two axes, vectorized across independent lines.

One SIMD vector holds the same element of ``lanes`` independent lines (rows of the
operand, or columns of the intermediate), so every butterfly is whole-vector arithmetic
with no shuffles; only loading lines into that layout (a transpose) and storing the
interleaved complex result move data between lanes. The complex transform is the
Stockham autosort FFT (radix-8 stages, then one radix-4 or radix-2 stage for what
remains), ping-ponging between two work arrays. A real line of length ``n`` is the
``n/2``-point complex FFT of ``z[j] = x[2j] + i x[2j+1]`` followed by the usual
post-twiddle ``X[k] = E[k] + W_n^k O[k]`` (``E``, ``O``: the even/odd halves recovered
from ``Z[k]`` and ``conj(Z[n/2-k])``). Two axes: the rows' real transforms go to a
split (real plane, imaginary plane) intermediate stored by blocks of ``lanes`` columns,
each block's rows consecutive, so a block's column transforms run in place on
contiguous vectors.

Twiddles are one table ``W_L^k = exp(-2 pi i k / L)`` of the largest length ``L``
(every power-of-two ``n <= L`` reads it at stride ``L/n``), computed in double and
rounded once to float32, written as exact hexadecimal literals. A failed allocation of
the work arrays returns plait's allocation-failure status. It runs on one thread: on
the shared 2-core machine, OpenMP over line blocks measured slower (512 x 512: 1.1 ms
against 0.77 ms at load 4). The entry point::

    int64_t plait_rfft_s(int64_t batch, int64_t m, int64_t n, const float *x, float *out)

transforms ``batch`` arrays ``m x n`` (``m == 1``: the last axis only) into
``m x (n/2 + 1)`` complex64 values (interleaved), for powers of two ``2 <= n <= L``
and ``m <= L``.
"""
from __future__ import annotations

import numpy as np


def _hex_table(values: np.ndarray) -> str:
    return ", ".join(float(np.float32(v)).hex() + "f" for v in values)


def _masks(lanes: int) -> str:
    """``__builtin_shuffle`` masks: even and odd lanes of a vector pair (deinterleave)
    and the low and high halves of their interleaving."""
    def vec(idx):
        return "(pvi){" + ", ".join(map(str, idx)) + "}"
    half = lanes // 2
    ev = [2 * i for i in range(lanes)]
    od = [2 * i + 1 for i in range(lanes)]
    lo = [i // 2 + (lanes if i % 2 else 0) for i in range(lanes)]
    hi = [half + i // 2 + (lanes if i % 2 else 0) for i in range(lanes)]
    return (f"#define M_EVEN {vec(ev)}\n#define M_ODD {vec(od)}\n"
            f"#define M_LO {vec(lo)}\n#define M_HI {vec(hi)}\n")


def _transpose(lanes: int) -> str:
    """C of ``transpose(pv *r)``: the ``lanes x lanes`` block in ``r`` transposed in
    place, by swapping off-diagonal sub-blocks of halving size (log2(lanes) stages of
    two-vector shuffles, unrolled)."""
    lines = ["static inline void transpose(pv *r) {"]
    d = lanes // 2
    while d >= 1:
        a = [l if not l & d else lanes + l - d for l in range(lanes)]
        b = [l + d if not l & d else lanes + l for l in range(lanes)]
        lines.append(f"  {{ const pvi ma = {{{', '.join(map(str, a))}}}, "
                     f"mb = {{{', '.join(map(str, b))}}};")
        for i in range(lanes):
            if not i & d:
                lines.append(f"    {{ pv u = r[{i}], v = r[{i + d}]; "
                             f"r[{i}] = __builtin_shuffle(u, v, ma); "
                             f"r[{i + d}] = __builtin_shuffle(u, v, mb); }}")
        lines.append("  }")
        d //= 2
    lines.append("}")
    return "\n".join(lines)



_RADIX8_TWIDDLES = """\
      float w_r[8], w_i[8];
      for (int k = 1; k < 8; ++k) { w_r[k] = wtr[k * p * step]; w_i[k] = wti[k * p * step]; }
"""
_RADIX8_BODY = """\
        pv a0r = ar[q], a0i = ai[q], a1r = ar[q + s * n1], a1i = ai[q + s * n1];
        pv a2r = ar[q + 2 * s * n1], a2i = ai[q + 2 * s * n1];
        pv a3r = ar[q + 3 * s * n1], a3i = ai[q + 3 * s * n1];
        pv a4r = ar[q + 4 * s * n1], a4i = ai[q + 4 * s * n1];
        pv a5r = ar[q + 5 * s * n1], a5i = ai[q + 5 * s * n1];
        pv a6r = ar[q + 6 * s * n1], a6i = ai[q + 6 * s * n1];
        pv a7r = ar[q + 7 * s * n1], a7i = ai[q + 7 * s * n1];
        /* even half (a0, a2, a4, a6) and odd half (a1, a3, a5, a7): 4-point DFTs */
        pv p04r = a0r + a4r, p04i = a0i + a4i, m04r = a0r - a4r, m04i = a0i - a4i;
        pv p26r = a2r + a6r, p26i = a2i + a6i, m26r = a2r - a6r, m26i = a2i - a6i;
        pv e0r = p04r + p26r, e0i = p04i + p26i, e2r = p04r - p26r, e2i = p04i - p26i;
        pv e1r = m04r + m26i, e1i = m04i - m26r, e3r = m04r - m26i, e3i = m04i + m26r;
        pv p15r = a1r + a5r, p15i = a1i + a5i, m15r = a1r - a5r, m15i = a1i - a5i;
        pv p37r = a3r + a7r, p37i = a3i + a7i, m37r = a3r - a7r, m37i = a3i - a7i;
        pv d0r = p15r + p37r, d0i = p15i + p37i, d2r = p15r - p37r, d2i = p15i - p37i;
        pv d1r = m15r + m37i, d1i = m15i - m37r, d3r = m15r - m37i, d3i = m15i + m37r;
        /* odd terms times W_8^k: k=1 (1-i)/sqrt2, k=2 -i, k=3 -(1+i)/sqrt2 */
        pv t1r = (d1r + d1i) * h2, t1i = (d1i - d1r) * h2;
        pv t2r = d2i, t2i = -d2r;
        pv t3r = (d3i - d3r) * h2, t3i = -(d3r + d3i) * h2;
        pv y0r = e0r + d0r, y0i = e0i + d0i, y4r = e0r - d0r, y4i = e0i - d0i;
        pv y1r = e1r + t1r, y1i = e1i + t1i, y5r = e1r - t1r, y5i = e1i - t1i;
        pv y2r = e2r + t2r, y2i = e2i + t2i, y6r = e2r - t2r, y6i = e2i - t2i;
        pv y3r = e3r + t3r, y3i = e3i + t3i, y7r = e3r - t3r, y7i = e3i - t3i;
        CMUL(y1r, y1i, w_r[1], w_i[1]); CMUL(y2r, y2i, w_r[2], w_i[2]);
        CMUL(y3r, y3i, w_r[3], w_i[3]); CMUL(y4r, y4i, w_r[4], w_i[4]);
        CMUL(y5r, y5i, w_r[5], w_i[5]); CMUL(y6r, y6i, w_r[6], w_i[6]);
        CMUL(y7r, y7i, w_r[7], w_i[7]);
        o_r[q] = y0r; o_i[q] = y0i; o_r[q + s] = y1r; o_i[q + s] = y1i;
        o_r[q + 2 * s] = y2r; o_i[q + 2 * s] = y2i; o_r[q + 3 * s] = y3r; o_i[q + 3 * s] = y3i;
        o_r[q + 4 * s] = y4r; o_i[q + 4 * s] = y4i; o_r[q + 5 * s] = y5r; o_i[q + 5 * s] = y5i;
        o_r[q + 6 * s] = y6r; o_i[q + 6 * s] = y6i; o_r[q + 7 * s] = y7r; o_i[q + 7 * s] = y7i;
"""
_RADIX4_TWIDDLES = """\
      float w1r = wtr[p * step], w1i = wti[p * step];
      float w2r = wtr[2 * p * step], w2i = wti[2 * p * step];
      float w3r = wtr[3 * p * step], w3i = wti[3 * p * step];
"""
_RADIX4_BODY = """\
        pv a_r = ar[q], a_i = ai[q], b_r = ar[q + s * n1], b_i = ai[q + s * n1];
        pv c_r = ar[q + 2 * s * n1], c_i = ai[q + 2 * s * n1];
        pv d_r = ar[q + 3 * s * n1], d_i = ai[q + 3 * s * n1];
        pv apc_r = a_r + c_r, apc_i = a_i + c_i, amc_r = a_r - c_r, amc_i = a_i - c_i;
        pv bpd_r = b_r + d_r, bpd_i = b_i + d_i, bmd_r = b_r - d_r, bmd_i = b_i - d_i;
        o_r[q] = apc_r + bpd_r; o_i[q] = apc_i + bpd_i;
        pv t_r = amc_r + bmd_i, t_i = amc_i - bmd_r;        /* amc - i (b - d) */
        o_r[q + s] = t_r * w1r - t_i * w1i; o_i[q + s] = t_r * w1i + t_i * w1r;
        t_r = apc_r - bpd_r; t_i = apc_i - bpd_i;
        o_r[q + 2 * s] = t_r * w2r - t_i * w2i; o_i[q + 2 * s] = t_r * w2i + t_i * w2r;
        t_r = amc_r - bmd_i; t_i = amc_i + bmd_r;           /* amc + i (b - d) */
        o_r[q + 3 * s] = t_r * w3r - t_i * w3i; o_i[q + 3 * s] = t_r * w3i + t_i * w3r;
"""


def _stage(loop: str, radix: int, what: str, twiddles: str, body: str) -> str:
    """C of Stockham stages of one radix under ``loop`` (a C ``while``/``if`` head):
    for each of the ``n / radix`` twiddle groups ``p`` (``twiddles`` declares its
    factors), ``body`` maps ``radix`` inputs ``ar/ai[q + k s n1]`` to outputs
    ``o_r/o_i[q + k s]`` for every ``q < s``; then the work arrays swap."""
    return f"""\
  {loop} {{  /* {what} */
    int n1 = n / {radix}, step = LMAX / n;
    for (int p = 0; p < n1; ++p) {{
{twiddles}      pv *ar = xr + s * p, *ai = xi + s * p;
      pv *o_r = yr + {radix} * s * p, *o_i = yi + {radix} * s * p;
      for (int q = 0; q < s; ++q) {{
{body}      }}
    }}
    pv *t = xr; xr = yr; yr = t; t = xi; xi = yi; yi = t;
    n /= {radix}; s *= {radix}; flip ^= 1;
  }}"""

def fft_source(vector_bytes: int, max_length: int, oom_where: int) -> str:
    """The library's C source for vectors of ``vector_bytes`` and lengths up to
    ``max_length`` (a power of two); ``oom_where`` is the allocation-failure status
    multiplier (``c_stripe.OOM_WHERE``)."""
    if max_length & (max_length - 1) or max_length < 2:
        raise ValueError(f"fft_source: max_length {max_length} is not a power of two")
    lanes = vector_bytes // 4
    k = np.arange(max_length, dtype=np.float64)
    wr = np.cos(2 * np.pi * k / max_length)
    wi = -np.sin(2 * np.pi * k / max_length)
    return f"""\
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define VB {vector_bytes}
#define VL {lanes}
#define LMAX {max_length}
typedef float pv __attribute__((vector_size(VB)));
typedef float pvu __attribute__((vector_size(VB), aligned(4), may_alias));
typedef int32_t pvi __attribute__((vector_size(VB)));
{_masks(lanes)}{_transpose(lanes)}
static const float wtr[LMAX] = {{{_hex_table(wr)}}};
static const float wti[LMAX] = {{{_hex_table(wi)}}};

/* Stockham FFT of length n over VL lanes: radix-8 stages, then one radix-4 or radix-2
   stage for what remains; x and y hold n vectors each (real, imaginary planes).
   Returns 1 when the result ends in y, 0 when in x. */
#define CMUL(r, i, wr_, wi_) {{ pv t_ = r * wr_ - i * wi_; i = r * wi_ + i * wr_; r = t_; }}
static int cfft(int n, pv *xr, pv *xi, pv *yr, pv *yi) {{
  int s = 1, flip = 0;
  const float h2 = {float(np.float32(np.sqrt(0.5))).hex()}f;   /* 1/sqrt(2) */
{_stage("while (n >= 8)", 8, "radix 8: two 4-point DFTs and W_8 combination", _RADIX8_TWIDDLES, _RADIX8_BODY)}
{_stage("if (n == 4)", 4, "radix 4: the last stage when log2(n) % 3 == 2", _RADIX4_TWIDDLES, _RADIX4_BODY)}
  if (n == 2) {{
    for (int q = 0; q < s; ++q) {{
      pv a_r = xr[q], a_i = xi[q], b_r = xr[q + s], b_i = xi[q + s];
      yr[q] = a_r + b_r; yi[q] = a_i + b_i; yr[q + s] = a_r - b_r; yi[q + s] = a_i - b_i;
    }}
    flip ^= 1;
  }}
  return flip;
}}

/* The real FFTs of rows r0 .. r0+cnt-1 of x (rows of n floats), in w (4 LMAX vectors):
   returns the planes (fr, fi) of X[0 .. n/2] (n/2+1 vectors each, lane l = row r0+l). */
static void rows_rfft(const float *x, int64_t r0, int cnt, int n, pv *w, pv **fr, pv **fi) {{
  int h = n / 2, cap = LMAX / 2 + 1;
  pv *zr = w, *zi = w + cap, *yr = w + 2 * cap, *yi = w + 3 * cap;
  float *zrf = (float *)zr, *zif = (float *)zi;
  const float *row[VL];
  for (int l = 0; l < VL; ++l) row[l] = x + (r0 + (l < cnt ? l : cnt - 1)) * (int64_t)n;
  if (h % VL == 0) {{
    /* VL x VL blocks: each row's 2 VL floats deinterleaved, then transposed */
    for (int j0 = 0; j0 < h; j0 += VL) {{
      for (int l = 0; l < VL; ++l) {{
        pv v0 = *(const pvu *)(row[l] + 2 * j0), v1 = *(const pvu *)(row[l] + 2 * j0 + VL);
        zr[j0 + l] = __builtin_shuffle(v0, v1, M_EVEN);
        zi[j0 + l] = __builtin_shuffle(v0, v1, M_ODD);
      }}
      transpose(zr + j0); transpose(zi + j0);
    }}
  }} else {{
    for (int l = 0; l < VL; ++l)
      for (int j = 0; j < h; ++j) {{ zrf[j * VL + l] = row[l][2 * j]; zif[j * VL + l] = row[l][2 * j + 1]; }}
  }}
  pv *Zr = zr, *Zi = zi, *Xr = yr, *Xi = yi;
  if (cfft(h, zr, zi, yr, yi)) {{ Zr = yr; Zi = yi; Xr = zr; Xi = zi; }}
  int step = LMAX / n;
  for (int k = 0; k <= h; ++k) {{
    int kk = k == h ? 0 : k, kc = k == 0 ? 0 : h - k;
    pv zk_r = Zr[kk], zk_i = Zi[kk], zc_r = Zr[kc], zc_i = Zi[kc];
    pv er = 0.5f * (zk_r + zc_r), ei = 0.5f * (zk_i - zc_i);     /* (Z[k] + conj Z[h-k]) / 2 */
    pv o_r = 0.5f * (zk_i + zc_i), o_i = -0.5f * (zk_r - zc_r);  /* (Z[k] - conj Z[h-k]) / 2i */
    float c = wtr[k * step], sn = wti[k * step];
    Xr[k] = er + (o_r * c - o_i * sn); Xi[k] = ei + (o_r * sn + o_i * c);
  }}
  *fr = Xr; *fi = Xi;
}}

static int64_t work_bytes(void) {{ return (int64_t)4 * LMAX * VB; }}

__attribute__((visibility("default")))
int64_t plait_rfft_s(int64_t batch, int64_t m, int64_t n, const float *x, float *out) {{
  int h = (int)(n / 2), K = h + 1, Kp = (K + VL - 1) / VL * VL;
  int64_t rows = m == 1 ? batch : m;
  int64_t rblocks = (rows + VL - 1) / VL, cblocks = Kp / VL;
  float *T = NULL;
  int64_t tbytes = m == 1 ? 0 : (int64_t)2 * m * Kp * sizeof(float);
  if (tbytes && !(T = aligned_alloc(VB, tbytes))) return tbytes * {oom_where}LL;
  pv *w = aligned_alloc(VB, work_bytes());
  if (!w) {{ free(T); return work_bytes() * {oom_where}LL; }}
  for (int64_t b = 0; b < (m == 1 ? 1 : batch); ++b) {{
    const float *xb = x + b * m * n;
    float *ob = out + b * m * K * 2;
    for (int64_t rb = 0; rb < rblocks; ++rb) {{
      int64_t r0 = rb * VL;
      int cnt = rows - r0 < VL ? (int)(rows - r0) : VL;
      pv *fr, *fi;
      rows_rfft(xb, r0, cnt, (int)n, w, &fr, &fi);
      const float *frf = (const float *)fr, *fif = (const float *)fi;
      /* X[0 .. h-1] by VL x VL blocks transposed in place (the planes are not read
         again), X[h] lane by lane */
      int k1 = h % VL == 0 ? h : 0;
      for (int k0 = 0; k0 < k1; k0 += VL) {{ transpose(fr + k0); transpose(fi + k0); }}
      if (m == 1) {{
        for (int l = 0; l < cnt; ++l) {{
          float *o = ob + (r0 + l) * (int64_t)K * 2;
          for (int k0 = 0; k0 < k1; k0 += VL) {{
            pv a = fr[k0 + l], c = fi[k0 + l];
            *(pvu *)(o + 2 * k0) = __builtin_shuffle(a, c, M_LO);
            *(pvu *)(o + 2 * k0 + VL) = __builtin_shuffle(a, c, M_HI);
          }}
          for (int k = k1; k < K; ++k) {{ o[2 * k] = frf[k * VL + l]; o[2 * k + 1] = fif[k * VL + l]; }}
        }}
      }} else {{
        /* T: per column block, m vectors (one per row) of each plane */
        pv *Tr = (pv *)T, *Ti = (pv *)T + cblocks * m;
        float *Trf = T, *Tif = (float *)Ti;
        for (int k0 = 0; k0 < k1; k0 += VL)
          for (int l = 0; l < cnt; ++l) {{
            Tr[k0 / VL * m + r0 + l] = fr[k0 + l]; Ti[k0 / VL * m + r0 + l] = fi[k0 + l];
          }}
        for (int l = 0; l < cnt; ++l) {{
          for (int k = k1; k < Kp; ++k) {{     /* the rest lane by lane, zero padded */
            int64_t at = (k / VL * m + r0 + l) * VL + k % VL;
            Trf[at] = k < K ? frf[k * VL + l] : 0.0f; Tif[at] = k < K ? fif[k * VL + l] : 0.0f;
          }}
        }}
      }}
    }}
    if (m == 1) continue;
    for (int64_t cb = 0; cb < cblocks; ++cb) {{
      int c0 = (int)(cb * VL);
      /* the block's columns are contiguous in T: transformed there, with w as the
         other buffer */
      pv *xr = (pv *)T + cb * m, *xi = (pv *)T + (cblocks + cb) * m, *yr = w, *yi = w + LMAX;
      if (cfft((int)m, xr, xi, yr, yi)) {{ xr = yr; xi = yi; }}
      int cnt = K - c0 < VL ? K - c0 : VL;
      for (int64_t i = 0; i < m; ++i) {{
        float *o = ob + (i * K + c0) * 2;
        const float *pr = (const float *)(xr + i), *pi = (const float *)(xi + i);
        if (cnt == VL) {{
          *(pvu *)o = __builtin_shuffle(xr[i], xi[i], M_LO);
          *(pvu *)(o + VL) = __builtin_shuffle(xr[i], xi[i], M_HI);
        }} else {{
          for (int l = 0; l < cnt; ++l) {{ o[2 * l] = pr[l]; o[2 * l + 1] = pi[l]; }}
        }}
      }}
    }}
  }}
  free(w);
  free(T);
  return 0;
}}
"""
