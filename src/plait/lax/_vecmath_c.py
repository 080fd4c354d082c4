"""plait's own float32 ``exp``, ``log`` and ``tanh``: C helper source for the elementwise
descriptors (``ElementwiseOp.c_helper``).

Only ``tanh`` is routed here today (``VECMATH_C + TANH_C``; about 0.86x the time of the
libmvec kernel over 2^22 float32). ``EXP_C`` measured about 6% slower than libmvec's
``expf`` and GCC 12 does not vectorize ``LOG_C`` ("control flow in loop"; 7.6x slower),
so ``exp`` and ``log`` keep libmvec; both stay here, swept by
``benchmarks/vecmath_sweep.py``, for the next attempt.

Each function is branch-free ``static inline`` C (range reduction, a polynomial,
selects for the special values), with no table lookups, so GCC auto-vectorizes the
kernel loops that call them inline at ``-O3``. The polynomial coefficients are
near-minimax fits derived by ``benchmarks/vecmath_fit.py``; the maximum ulp error of each
function is measured over all 2^32 float32 inputs by ``benchmarks/vecmath_sweep.py`` and
documented in ``docs/numpy-differences.md``. NaN, ±inf, overflow, underflow, -0.0 and
subnormal inputs behave as NumPy's. float64 keeps libm (and its libmvec SIMD
variants): ``plait_exp`` and friends are thin wrappers so one ``{f}`` template serves
both widths.
"""
from __future__ import annotations

__all__ = ["CORE_C", "EXP_C", "LOG_C", "TANH_C", "HELPERS", "ROUTED"]

#: bit casts and the shared exp core (an input already clamped to [-104, 89], not NaN)
CORE_C = r"""/* plait vecmath: float32 bit casts (vectorize as plain moves) */
static inline float plait_f32_from_bits(uint32_t i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline uint32_t plait_f32_bits(float f) { uint32_t i; __builtin_memcpy(&i, &f, 4); return i; }
/* exp(x) for x in [-104, 89]: x = n ln2 + r, |r| <= ln2/2 (Cody-Waite, ln2 = hi + lo
   with hi exact in 15 bits), exp(r) = 1 + r + r^2 q(r) (degree 4 near-minimax q),
   times 2^n as two exact powers of two (so 2^-150..2^128 round once, subnormals too) */
static inline float plait_expf_core(float x) {
  float n = __builtin_rintf(x * 0x1.715476p+0f);
  float r = (x - n * 0x1.62e4p-1f) - n * 0x1.7f7d1cp-20f;
  float q = 0x1p-1f + r * (0x1.55548cp-3f + r * (0x1.55545cp-5f
            + r * (0x1.123dp-7f + r * 0x1.6db67cp-10f)));
  float p = 1.0f + (r + r * r * q);
  int32_t ni = (int32_t)n, h = ni >> 1;
  float s1 = plait_f32_from_bits((uint32_t)(h + 127) << 23);
  float s2 = plait_f32_from_bits((uint32_t)(ni - h + 127) << 23);
  return (p * s1) * s2;
}
"""

EXP_C = r"""/* plait vecmath exp: float32 own polynomial, float64 libm */
static inline float plait_expf(float x) {
  float xc = x > -104.0f ? x : -104.0f;       /* NaN -> -104, masked below */
  xc = xc < 89.0f ? xc : 89.0f;               /* overflows to inf past ~88.72 */
  float y = plait_expf_core(xc);
  return x != x ? x + x : y;
}
static inline double plait_exp(double x) { return exp(x); }
"""

LOG_C = r"""/* plait vecmath log: float32 own polynomial, float64 libm.
   x = 2^k m, m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), f = m - 1,
   s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + z R(z))), z = s^2,
   R a degree 2 near-minimax fit; log x = k ln2 + log(1 + f) */
static inline float plait_logf(float x) {
  int sub = x < 0x1p-126f;
  float xs = sub ? x * 0x1p23f : x;
  uint32_t ix = plait_f32_bits(xs);
  int32_t k = (int32_t)(ix - 0x3f3504f3u) >> 23;
  float f = plait_f32_from_bits(ix - ((uint32_t)k << 23)) - 1.0f;
  float kf = (float)(k - (sub ? 23 : 0));
  float s = f / (2.0f + f);
  float z = s * s;
  float R = z * (0x1.55557ap-1f + z * (0x1.995e96p-2f + z * 0x1.31e70cp-2f));
  float hfsq = 0.5f * f * f;
  float y = kf * 0x1.62e4p-1f + (f - (hfsq - (s * (hfsq + R) + kf * 0x1.7f7d1cp-20f)));
  y = x == 0.0f ? -__builtin_inff() : y;
  y = x < 0.0f ? __builtin_nanf("") : y;
  return (x != x || x == __builtin_inff()) ? x + x : y;
}
static inline double plait_log(double x) { return log(x); }
"""

TANH_C = r"""/* plait vecmath tanh: float32 own polynomial, float64 libm.
   on a = |x|: a < 0.55: a + a^3 P(a^2) (degree 4 near-minimax P); else
   1 - 2 / (exp(2a) + 1); the sign of x copied on, |x| clamped to 9.5 (tanh rounds to 1 from ~9.01) */
static inline float plait_tanhf(float x) {
  float a = __builtin_fabsf(x);
  float z = x * x;
  float small = a + a * z * (-0x1.55554ap-2f + z * (0x1.110d24p-3f + z * (-0x1.b9283cp-5f
                + z * (0x1.593adep-6f + z * -0x1.9b2342p-8f))));
  float ac = a < 9.5f ? a : 9.5f;
  float e = plait_expf_core(2.0f * ac);
  float big = 1.0f - 2.0f / (e + 1.0f);
  float y = __builtin_copysignf(a < 0.55f ? small : big, x);   /* odd, -0.0 kept */
  return x != x ? x + x : y;
}
static inline double plait_tanh(double x) { return tanh(x); }
"""

#: the C chunks defining ``plait_{name}f`` (and its float64 wrapper), by function name
HELPERS = {"exp": (CORE_C, EXP_C), "log": (CORE_C, LOG_C), "tanh": (CORE_C, TANH_C)}
#: the functions whose descriptors the CPU renderer routes to plait's own helper
ROUTED = {name: HELPERS[name] for name in ("tanh",)}
