"""plait's own float32 ``exp``, ``expm1``, ``log``, ``log1p`` and ``tanh``: C helper source
for the elementwise descriptors' CPU spelling (``ElementwiseOp.cpu_helper``); also
``pow``'s wrapper (:data:`POW_C`), which keeps C's pow where GCC vectorizes a constant
exponent of 0.5 as sqrt; and 16-lane AVX-512 forms of exp and tanh (:data:`V16_C`) for the
explicit-vector loops of ``plait.codegen.c_cpu``.

:data:`ROUTED` are the functions native CPU kernels call instead of glibc's libmvec,
each measured not slower over 2^22 float32 on 2 threads (``benchmarks/vecmath_bench.py``):
all five (and ``logistic``'s exp). OpenCL kernels keep OpenCL's builtins.

Each function is branch-free ``static inline`` C (range reduction, a polynomial,
selects for the special values), with no table lookups, so GCC auto-vectorizes the
kernel loops that call them inline at ``-O3``; selects whose arms hold a division, and
the clamps, are bit blends (``plait_f32_pick``), which GCC cannot turn back into a branch:
a ``?:`` lets it move arithmetic into one arm, which on targets without masked vector
instructions (AVX2) it cannot if-convert back, so the loop would stay scalar
(``tests/native/test_native_vecmath.py`` checks x86-64-v3 and -v4). Kernel loops
calling them are bound by vector instruction throughput, not memory (a
``tanh(x*a + b) * (1 / (1 + exp(-x))) + x**2`` kernel over 8M float32 on 2 threads ran as
fast per element as in L2), so the helpers spend few instructions: the exp reduction's
rounding shifter carries a bias so that its bits shift straight into a power of two,
exp's two-power split takes both halves from those bits with shifts, and tanh folds its
argument's factor 2 into the constants (all bit for bit the same results over all 2^32
inputs) and reduces in one fma (``TANH_C``). That chain went from 57 to 51 vector
instructions per 16 elements (AVX-512), 0.701 -> 0.621 ns per element in L2 on one
Sapphire Rapids core (15 interleaved rounds, medians); its loop is then port-bound (an
Estrin polynomial, shorter in latency, ran no faster). The
polynomial coefficients are near-minimax fits derived by ``benchmarks/vecmath_fit.py``;
the maximum ulp error of each function is measured over all 2^32 float32 inputs by
``benchmarks/vecmath_sweep.py`` and documented in ``docs/numpy-differences.md``. NaN,
±inf, overflow, underflow, -0.0 and subnormal inputs behave as NumPy's. float64 keeps
libm (and its libmvec SIMD variants): ``plait_exp`` and friends are thin wrappers so
one ``{f}`` template serves both widths.
"""
from __future__ import annotations

__all__ = ["CORE_C", "EXP_C", "EXPM1_C", "LOG_C", "LOG1P_C", "TANH_C", "POW_C", "V16_C", "HELPERS",
           "ROUTED", "V16"]

#: bit casts, a select GCC keeps branch-free, and the shared exp and log cores
CORE_C = r"""/* plait vecmath: float32 bit casts (vectorize as plain moves) */
static inline float plait_f32_from_bits(uint32_t i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline uint32_t plait_f32_bits(float f) { uint32_t i; __builtin_memcpy(&i, &f, 4); return i; }
/* c ? a : b as a bit blend: a ?: on floats lets GCC sink a division feeding only one arm
   into a branch it then cannot if-convert (the division may trap), so no vectorization */
static inline float plait_f32_pick(int c, float a, float b) {
  uint32_t m = -(uint32_t)(c != 0);
  return plait_f32_from_bits((plait_f32_bits(a) & m) | (plait_f32_bits(b) & ~m));
}
/* x clamped to [lo, hi], NaN kept (so it flows through to the result), as bit blends:
   a ?: clamp lets GCC's partial redundancy elimination move the next multiply of the
   clamped value into one arm, and without masked vector instructions (AVX2; AVX-512 has
   them) it cannot speculate that possibly-trapping multiply back out of the branch
   unless told floats do not trap, so the loop would stay scalar */
static inline float plait_f32_clamp(float x, float lo, float hi) {
  float y = plait_f32_pick(x < lo, lo, x);
  return plait_f32_pick(y > hi, hi, y);
}
/* x = n ln2 + r, |r| <= ln2/2 (Cody-Waite, ln2 = hi + lo with hi exact in 15 bits, so
   n * hi is exact for |n| < 2^9); returns r, and in *u the bits of t = x / ln2 + 1.5 * 2^23
   + bias rounded (|x / ln2| < 2^22, bias a small integer constant), whose low mantissa
   bits are n + bias: n = t - (1.5 * 2^23 + bias) is rint(x / ln2), cheaper than a round
   and a conversion, and *u << 23 is the float 2^(n + bias - 127) for n + bias in
   [1, 254] (the bits above shift out), so a bias saves the add that builds a power of
   two; an even bias keeps the ties-to-even rounding of n (so the same n as without a
   bias). A NaN x gives a NaN r (and any *u). The scaled form reduces x = k a for a
   power-of-two constant k and returns r / k: the same roundings, scaled exactly, without
   computing k a; plait_exp_round gives just n (and *u) */
static inline float plait_exp_round(float a, float k, float bias, uint32_t *u) {
  float t = a * (0x1.715476p+0f * k) + (0x1.8p23f + bias);
  *u = plait_f32_bits(t);
  return t - (0x1.8p23f + bias);
}
static inline float plait_exp_reduce_scaled(float a, float k, float bias, uint32_t *u) {
  float n = plait_exp_round(a, k, bias, u);
  return (a - n * (0x1.62e4p-1f / k)) - n * (0x1.7f7d1cp-20f / k);
}
static inline float plait_exp_reduce(float x, float bias, uint32_t *u) {
  return plait_exp_reduce_scaled(x, 1.0f, bias, u);
}
/* expm1(k r) / k = r + r^2 k q(k r) on |k r| <= ln2/2 (degree 4 near-minimax q); k is a
   power-of-two constant, folded into q's coefficients exactly, so k = 2 gives bit for bit
   half of expm1(2 r) without computing 2 r */
static inline float plait_expm1_poly_scaled(float r, float k) {
  float q = 0x1p-1f * k + r * (0x1.55548cp-3f * (k * k) + r * (0x1.55545cp-5f * (k * k * k)
            + r * (0x1.123dp-7f * (k * k * k * k) + r * (0x1.6db67cp-10f * (k * k * k * k * k)))));
  return r + r * r * q;
}
/* expm1(r) on |r| <= ln2/2 */
static inline float plait_expm1_poly(float r) { return plait_expm1_poly_scaled(r, 1.0f); }
/* exp(x) for x in [-104, 89]: (1 + expm1(r)) 2^n with 2^n as two exact powers of two
   2^h 2^(n - h), h = floor(n / 2), so 2^-150..2^128 round once, subnormals too: with
   bias 254, u >> 1 holds h + 127, and u << 23 is (n + 254) << 23 mod 2^32, which minus
   2^h's bits is 2^(n - h)'s; 2^h >= 2^-75 keeps (1 + e) 2^h normal, so it rounds as
   1 + e does; NaN gives NaN */
static inline float plait_expf_core(float x) {
  uint32_t u;
  float e = plait_expm1_poly(plait_exp_reduce(x, 254.0f, &u));
  uint32_t s1 = (u >> 1) << 23;
  float p = e * plait_f32_from_bits(s1) + plait_f32_from_bits(s1);
  return p * plait_f32_from_bits((u << 23) - s1);
}
/* log(v) - kshift ln2 + c for a positive normal finite v, c a small correction:
   v = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f),
   log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + z R(z))), z = s^2, R a degree 2
   near-minimax fit; the result is k ln2 + log(1 + f) + c with ln2 = hi + lo */
static inline float plait_log_core(float v, float kshift, float c) {
  uint32_t iv = plait_f32_bits(v);
  int32_t k = (int32_t)(iv - 0x3f3504f3u) >> 23;
  float f = plait_f32_from_bits(iv - ((uint32_t)k << 23)) - 1.0f;
  float kf = (float)k - kshift;
  float s = f / (2.0f + f);
  float z = s * s;
  float R = z * (0x1.55557ap-1f + z * (0x1.995e96p-2f + z * 0x1.31e70cp-2f));
  float hfsq = 0.5f * f * f;
  return kf * 0x1.62e4p-1f + (f - (hfsq - (s * (hfsq + R) + (kf * 0x1.7f7d1cp-20f + c))));
}
"""

EXP_C = r"""/* plait vecmath exp: float32 own polynomial, float64 libm */
static inline float plait_expf(float x) {
  /* underflows to 0 below ~-103.97, overflows to inf past ~88.72; NaN flows through */
  return plait_expf_core(plait_f32_clamp(x, -104.0f, 89.0f));
}
static inline double plait_exp(double x) { return exp(x); }
"""

EXPM1_C = r"""/* plait vecmath expm1: float32 own polynomial, float64 libm.
   x clamped to [-30, 89] (expm1 rounds to -1 below ~-17.3, overflows past ~88.72);
   x = n ln2 + r: expm1(x) = 2^n expm1(r) + 2^n - 1, computed as
   2 (2^(n-1) expm1(r) + (2^(n-1) - 1/2)) so that n = 128 needs no infinite power and
   the doubling is exact; x = +-0 returns x (the sign of zero) */
static inline float plait_expm1f(float x) {
  float xc = plait_f32_clamp(x, -30.0f, 89.0f);
  uint32_t u;
  float e = plait_expm1_poly(plait_exp_reduce(xc, 126.0f, &u));
  float h = plait_f32_from_bits(u << 23);
  float y = 2.0f * (h * e + (h - 0.5f));
  return plait_f32_pick((x != x) | (x == 0.0f), x + x, y);
}
static inline double plait_expm1(double x) { return expm1(x); }
"""

LOG_C = r"""/* plait vecmath log: float32 own polynomial, float64 libm; subnormals are scaled by
   2^23 first */
static inline float plait_logf(float x) {
  int sub = x < 0x1p-126f;
  float y = plait_log_core(plait_f32_pick(sub, x * 0x1p23f, x), sub ? 23.0f : 0.0f, 0.0f);
  float neg = x < 0.0f ? __builtin_nanf("") : -__builtin_inff();   /* log(+-0) = -inf */
  y = plait_f32_pick(x <= 0.0f, neg, y);
  return plait_f32_pick((x != x) | (x == __builtin_inff()), x + x, y);   /* NaN, +inf */
}
static inline double plait_log(double x) { return log(x); }
"""

LOG1P_C = r"""/* plait vecmath log1p: float32 own polynomial, float64 libm.
   u = 1 + x rounded, log1p(x) = log(u) + (x - (u - 1)) / u (the rounding error of u,
   to first order; exact for tiny x, where u = 1); x = +-0 returns x */
static inline float plait_log1pf(float x) {
  float u = 1.0f + x;
  float c = (x - (u - 1.0f)) / u;
  float y = plait_log_core(u, 0.0f, c);
  float low = x < -1.0f ? __builtin_nanf("") : -__builtin_inff();  /* log1p(-1) = -inf */
  y = plait_f32_pick(x <= -1.0f, low, y);
  int keep = (x != x) | (x == __builtin_inff()) | (x == 0.0f);   /* NaN, +inf, +-0 */
  return plait_f32_pick(keep, x + x, y);
}
static inline double plait_log1p(double x) { return log1p(x); }
"""

TANH_C = r"""/* plait vecmath tanh: float32 own polynomial, float64 libm.
   on a = |x| clamped to 9.5 (tanh rounds to 1 from ~9.01): t = expm1(2a) =
   2^n expm1(r) + 2^n - 1 (n in [0, 28]: one exact power of two), tanh a = t / (t + 2);
   the sign of x copied on. 2a is never formed: the reduction and the polynomial take a
   and give expm1(r) / 2, which 2^(n+1) (bias 128) scales back. Where fma is a hardware
   instruction, r / 2 is one fma with ln2 / 2 rounded to float instead of Cody-Waite's
   two steps (targets without one keep those): r is then off by at most
   n 1.9e-9, a relative error of e^(2a) ~ 2^n that tanh = t / (t + 2) scales down by
   about 2^(1-n), under 0.03 ulp for every n in [0, 28] (the exhaustive sweep's maximum
   stayed 2.573 ulp) */
static inline float plait_tanhf(float x) {
  float a = __builtin_fabsf(x);
  float ac = plait_f32_pick(a > 9.5f, 9.5f, a);   /* NaN flows through */
  uint32_t u;
#ifdef __FP_FAST_FMAF
  float rh = __builtin_fmaf(-plait_exp_round(ac, 2.0f, 128.0f, &u), 0x1.62e43p-2f, ac);
#else   /* a separate n * (ln2 / 2) would round */
  float rh = plait_exp_reduce_scaled(ac, 2.0f, 128.0f, &u);
#endif
  float e = plait_expm1_poly_scaled(rh, 2.0f);
  float s2 = plait_f32_from_bits(u << 23);
  float t = s2 * e + (s2 * 0.5f - 1.0f);
  return __builtin_copysignf(t / (t + 2.0f), x);   /* odd, -0.0 kept */
}
static inline double plait_tanh(double x) { return tanh(x); }
"""

POW_C = r"""/* plait pow: C's pow. GCC vectorizes pow(x, 0.5) with a constant exponent as sqrt
   (-0.0 at -0.0, NaN at -inf) while a loop's scalar remainder calls pow (+0.0, +inf), so
   the lanes of one kernel disagreed; those two bases take pow's value (the test folds
   away for any other constant exponent) */
static inline float plait_powf(float x, float y) {
  float r = powf(x, y);
  return (y == 0.5f && (x == 0.0f || x == -__builtin_inff())) ? __builtin_fabsf(x) : r;
}
static inline double plait_pow(double x, double y) {
  double r = pow(x, y);
  return (y == 0.5 && (x == 0.0 || x == -__builtin_inf())) ? __builtin_fabs(x) : r;
}
"""

V16_C = r"""/* plait 16-lane float32 vector math: AVX-512 explicit-vector elementwise kernels
   (PLAIT_V16; plait.codegen.c_cpu renders them) and their loads, stores and selects,
   through GCC's vector extension and builtins (immintrin.h cost ~0.13 s per compile).
   plait_expf_v16 and plait_tanhf_v16 take the scalar helpers' operations in the same
   order, so every lane is bit for bit plait_expf / plait_tanhf, with two changes of
   instruction, not of value: the clamps are vminps/vmaxps (NaN, the second operand, flows
   through as in plait_f32_clamp), and exp scales 1 + e by 2^n with one vscalefps, which
   rounds round(1 + e) 2^n once, as the scalar two-power product does */
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__) && !defined(PLAIT_NO_V16)
#define PLAIT_V16 1
typedef float plait_v16f __attribute__((vector_size(64)));
typedef int32_t plait_v16i __attribute__((vector_size(64)));
typedef unsigned short plait_m16;   /* a lane mask (__mmask16) */
static inline plait_v16f plait_v16_set1(float x) {
  return (plait_v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}
static inline plait_v16f plait_v16_load(const float *p) { plait_v16f v; __builtin_memcpy(&v, p, 64); return v; }
static inline void plait_v16_store(float *p, plait_v16f v) { __builtin_memcpy(p, &v, 64); }
/* lanes outside the mask are neither read (no fault past an array's end) nor written */
static inline plait_v16f plait_v16_load_m(const float *p, plait_m16 m) {
  return __builtin_ia32_loadups512_mask(p, plait_v16_set1(0.0f), m);
}
static inline void plait_v16_store_m(float *p, plait_v16f v, plait_m16 m) {
  __builtin_ia32_storeups512_mask(p, v, m);
}
static inline plait_v16f plait_v16_pick(plait_v16i c, plait_v16f a, plait_v16f b) {
  return (plait_v16f)((c & (plait_v16i)a) | (~c & (plait_v16i)b));
}
/* vmaxps a, b: a > b ? a : b (b when either is NaN) */
static inline plait_v16f plait_v16_vmax(plait_v16f a, plait_v16f b) {
  return __builtin_ia32_maxps512_mask(a, b, a, (plait_m16)-1, 4);
}
static inline plait_v16f plait_v16_vmin(plait_v16f a, plait_v16f b) {
  return __builtin_ia32_minps512_mask(a, b, a, (plait_m16)-1, 4);
}
/* NumPy's maximum / minimum, as plait_maxf / plait_minf: a NaN in either wins */
static inline plait_v16f plait_maxf_v16(plait_v16f a, plait_v16f b) {
  return plait_v16_pick((a != a) | (a >= b), a, b);
}
static inline plait_v16f plait_minf_v16(plait_v16f a, plait_v16f b) {
  return plait_v16_pick((a != a) | (a <= b), a, b);
}
static inline plait_v16f plait_absf_v16(plait_v16f x) {
  return (plait_v16f)((plait_v16i)x & 0x7fffffff);
}
static inline plait_v16f plait_expm1_poly_v16(plait_v16f r, float k) {
  plait_v16f q = 0x1p-1f * k + r * (0x1.55548cp-3f * (k * k) + r * (0x1.55545cp-5f * (k * k * k)
                 + r * (0x1.123dp-7f * (k * k * k * k) + r * (0x1.6db67cp-10f * (k * k * k * k * k)))));
  return r + r * r * q;
}
static inline plait_v16f plait_expf_v16(plait_v16f x) {
  plait_v16f a = plait_v16_vmin(plait_v16_set1(89.0f), plait_v16_vmax(plait_v16_set1(-104.0f), x));
  plait_v16f t = a * 0x1.715476p+0f + (0x1.8p23f + 254.0f);
  plait_v16f n = t - (0x1.8p23f + 254.0f);
  plait_v16f r = (a - n * 0x1.62e4p-1f) - n * 0x1.7f7d1cp-20f;
  plait_v16f e = plait_expm1_poly_v16(r, 1.0f);
  return __builtin_ia32_scalefps512_mask(e + 1.0f, n, n, (plait_m16)-1, 4);
}
static inline plait_v16f plait_tanhf_v16(plait_v16f x) {
  plait_v16f ac = plait_v16_vmin(plait_v16_set1(9.5f), plait_absf_v16(x));
  plait_v16f t0 = ac * (0x1.715476p+0f * 2.0f) + (0x1.8p23f + 128.0f);
  plait_v16f n = t0 - (0x1.8p23f + 128.0f);
  plait_v16f rh = -n * 0x1.62e43p-2f + ac;   /* one fma, as the scalar form's */
  plait_v16f e = plait_expm1_poly_v16(rh, 2.0f);
  plait_v16f s2 = (plait_v16f)((plait_v16i)t0 << 23);
  plait_v16f t = s2 * e + (s2 * 0.5f - 1.0f);
  plait_v16f y = t / (t + 2.0f);   /* >= +0 (t >= 0), so copysign only sets the sign bit */
  return (plait_v16f)((plait_v16i)y | ((plait_v16i)x & ~0x7fffffff));
}
#else
#define PLAIT_V16 0
#endif
"""

#: the C chunks defining ``plait_{name}f`` (and its float64 wrapper), by function name;
#: exp's and tanh's bring the 16-lane forms too
HELPERS = {"exp": (CORE_C, EXP_C, V16_C), "expm1": (CORE_C, EXPM1_C), "log": (CORE_C, LOG_C),
           "log1p": (CORE_C, LOG1P_C), "tanh": (CORE_C, TANH_C, V16_C)}
#: the explicit-vector template (``ElementwiseOp.cpu_v16``) of the functions with a 16-lane form
V16 = {"exp": "plait_expf_v16({0})", "tanh": "plait_tanhf_v16({0})"}
#: the functions whose descriptors the CPU renderer routes to plait's own helper
ROUTED = {name: HELPERS[name] for name in ("exp", "expm1", "log", "log1p", "tanh")}
