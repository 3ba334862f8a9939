#pragma once
// Float math on 8 lanes in AVX2 + FMA intrinsics, for the avx2 path's softmax, GELU, tanh and LayerNorm
// (kernels/attention.hpp, kernels/activation.hpp, kernels/layer_norm.hpp): exp, erf, tanh, the
// fixed-order sum of 16 partial sums, and loads and stores of ragged row ends.
//
// Why intrinsics: a target attribute does not switch Eigen's packet code (chosen by the consumer's -m
// flags at compile time), and GCC 12 does not vectorise the int/float bit casts of an exp loop inside a
// target-attributed function. Every function is element-wise (or a sum in an order fixed by the indices),
// so a value never depends on where its buffer lives.
//
// Every function carries DARKBERT_AVX2_TARGET; call them only on the avx2 path (core/kernel_dispatch.hpp).

#include <immintrin.h>  // AVX2 and FMA intrinsics

#include "../kernel_dispatch.hpp"  // DARKBERT_AVX2_TARGET
#include "../matrix.hpp"           // Index

#if !DARKBERT_HAS_AVX2_KERNEL
#error "vector_math_avx2.hpp needs x86-64 with GCC or Clang; include it only when DARKBERT_HAS_AVX2_KERNEL"
#endif

namespace darkbert::detail::avx2 {

DARKBERT_INTRINSICS_WARNINGS_OFF

/// Lanes l < n of 8 set (all bits), for _mm256_maskload_ps / _mm256_maskstore_ps (n clamped to [0, 8]):
// a masked-off lane is neither read nor written, so a row's end never reaches past its buffer.
DARKBERT_AVX2_TARGET inline __m256i first_lanes(Index n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int count = n >= 8 ? 8 : n <= 0 ? 0 : static_cast<int>(n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane);
}

/// Lanes l < n of p (n clamped to [0, 8]), 0 in the others; a plain load when all 8 exist. A masked-off
/// lane is never read, so a row's end never reaches past its buffer.
DARKBERT_AVX2_TARGET inline __m256 load_first(const float* p, Index n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, first_lanes(n));
}

/// Writes lanes l < n of v to p (n clamped to [0, 8]); a plain store when all 8 exist. AMD CPUs run a
/// masked store (vmaskmovps) as microcode, many times a plain store's cost: in every full chunk of a
/// row, it took the avx2 path's LayerNorm backward and AdamW update to 4-8x the avx512 path's time on a
/// Zen 4.
DARKBERT_AVX2_TARGET inline void store_first(float* p, Index n, __m256 v) {
  if (n >= 8) _mm256_storeu_ps(p, v);
  else if (n > 0) _mm256_maskstore_ps(p, first_lanes(n), v);
}

/// exp(x) of 8 floats: the algorithm and the operations of exp_avx512 (kernels/attention.hpp), so both
/// paths give the same bits: x = m ln 2 + r, a degree-5 polynomial in r, times 2^m, the argument clamped
/// to ±88.723.
DARKBERT_AVX2_TARGET inline __m256 exp_avx2(__m256 x_in) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(88.723f), _mm256_max_ps(_mm256_set1_ps(-88.723f), x_in));
  const __m256 m = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fmadd_ps(m, _mm256_set1_ps(-0.693359375f), x);
  r = _mm256_fmadd_ps(m, _mm256_set1_ps(2.12194440e-4f), r);
  const __m256 r2 = _mm256_mul_ps(r, r), r3 = _mm256_mul_ps(r2, r);
  __m256 y = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500E-4f), r, _mm256_set1_ps(1.3981999507E-3f));
  __m256 y1 = _mm256_fmadd_ps(_mm256_set1_ps(4.1665795894E-2f), r, _mm256_set1_ps(1.6666665459E-1f));
  const __m256 y2 = _mm256_add_ps(r, _mm256_set1_ps(1.0f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073E-3f));
  y1 = _mm256_fmadd_ps(y1, r, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_fmadd_ps(y, r3, y1);
  y = _mm256_fmadd_ps(y, r2, y2);
  // 2^m for m in [-128, 128] as two factors 2^(m/2) that are each normal floats.
  const __m256i e = _mm256_cvtps_epi32(m), e1 = _mm256_srai_epi32(e, 1), e2 = _mm256_sub_epi32(e, e1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, bias), 23));
  const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e2, bias), 23));
  return _mm256_max_ps(_mm256_mul_ps(_mm256_mul_ps(y, p1), p2), x_in);  // +inf stays +inf
}

/// erf(x) of 8 floats: the rational fit of kernels::erf_rational (x P(x²) / Q(x²) on [-4, 4], ±1 beyond),
/// each step one FMA.
DARKBERT_AVX2_TARGET inline __m256 erf_avx2(__m256 x_in) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(4.0f), _mm256_max_ps(_mm256_set1_ps(-4.0f), x_in));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-2.72614225801306e-10f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.77068142495902e-08f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.10102402082508e-06f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-5.69250639462346e-05f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-7.34990630326855e-04f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.95459980854025e-03f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.60960333262415e-02f));
  __m256 q = _mm256_set1_ps(-1.45660718464996e-05f);
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-2.13374055278905e-04f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.68282697438203e-03f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-7.37332916720468e-03f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.42647390514189e-02f));
  return _mm256_div_ps(_mm256_mul_ps(x, p), q);
}

/// tanh(x) of 8 floats, within ≈3 ulp: for |x| < 0.4 its Taylor series to x¹³ (relative error < 4e-9
/// there), else sign(x) (1 - e) / (1 + e) with e = exp(-2|x|), which loses under a bit to cancellation
/// from |x| = 0.4 on and gives ±1 for large |x|.
DARKBERT_AVX2_TARGET inline __m256 tanh_avx2(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);  // |x|
  const __m256 e = exp_avx2(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 large = _mm256_or_ps(_mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e)), sign);
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 s = _mm256_set1_ps(float(21844.0 / 6081075.0));  // tanh x = x (1 - x²/3 + 2x⁴/15 - ...)
  s = _mm256_fmadd_ps(s, x2, _mm256_set1_ps(float(-1382.0 / 155925.0)));
  s = _mm256_fmadd_ps(s, x2, _mm256_set1_ps(float(62.0 / 2835.0)));
  s = _mm256_fmadd_ps(s, x2, _mm256_set1_ps(float(-17.0 / 315.0)));
  s = _mm256_fmadd_ps(s, x2, _mm256_set1_ps(float(2.0 / 15.0)));
  s = _mm256_fmadd_ps(s, x2, _mm256_set1_ps(float(-1.0 / 3.0)));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(s, x2), x, x);
  return _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.4f), _CMP_LT_OQ));
}

/// The 16 partial sums lo (lanes 0-7) and hi (lanes 8-15) added pairwise (lane l + lane l+8, then l+4,
/// l+2, l+1): the reduction of fixed_order_sum (core/fixed_order_sum.hpp) and of the avx512 path's
/// fixed_order_lane_sum. Element j of a row added into lane j % 16 gives fixed_order_sum's bits.
DARKBERT_AVX2_TARGET inline float fixed_order_lane_sum_avx2(__m256 lo, __m256 hi) {
  const __m256 half = _mm256_add_ps(lo, hi);
  const __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  const __m128 eighth = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(eighth, _mm_shuffle_ps(eighth, eighth, 1)));
}

DARKBERT_INTRINSICS_WARNINGS_ON

}  // namespace darkbert::detail::avx2
