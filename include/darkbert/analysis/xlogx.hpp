#pragma once
/// @file
/// Fast, accurate sums of x ln x over attention rows — the inner loop of entropies and Jensen–Shannon
/// distances (head_summary.hpp, js_distance.hpp), which need ~1e8 logarithms per BERT-base example.
///
/// @code
/// float h = -detail::xlogx_sum(row, k);             // entropy of a row, nats
/// float m = detail::mixture_xlogx_sum(p, q, k);     // sum of m ln m with m = (p + q) / 2
/// @endcode
///
/// The logarithm is written as plain arithmetic on the IEEE bits (no library call, no branches) so the
/// `omp simd` loops vectorise, and on x86-64 with GCC every kernel is compiled for AVX-512, AVX2 and
/// baseline SSE2 with the best one picked at run time (target_clones). Accuracy: float — Cephes logf polynomial,
/// relative error of x ln x below 2e-7; double — fdlibm's __ieee754_log, below 2 ulp. Inputs must be
/// >= 0 (attention weights); x = 0 gives exactly 0 (0 ln 0 = 0); subnormal x (< 1e-38 / 1e-308) give a
/// value within 1e-36 / 1e-305 of x ln x.

#include <bit>      // std::bit_cast
#include <cstdint>  // std::int32_t, std::int64_t

#include "darkbert/core/matrix.hpp"  // darkbert::Index

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
/// Compiles a function for AVX-512, AVX2 and baseline x86-64, the best picked at load time (undefined at the
/// end of this header). GCC only: clang (14, as tested) gives an inline function's clone resolver strong
/// linkage in every translation unit, so a program with two units that include this header fails to link;
/// there the loops are compiled once, for the instruction set the consumer's flags name.
#define DARKBERT_MULTIVERSION __attribute__((target_clones("default", "avx2", "arch=skylake-avx512")))
#else
#define DARKBERT_MULTIVERSION
#endif

namespace darkbert::detail {

/// x ln x for x >= 0 (float): x = 2^e f, f in [sqrt(1/2), sqrt(2)), ln f by the Cephes logf polynomial.
inline float xlogx(float x) {
  const std::int32_t bits = std::bit_cast<std::int32_t>(x);
  const std::int32_t below = (bits & 0x7fffff) < 0x3504f3;  // 1.mantissa < sqrt(2): use f = 2 * 0.mantissa
  const float e = static_cast<float>((bits >> 23) - 126 - below);
  const float f = std::bit_cast<float>((bits & 0x7fffff) | (0x3f000000 + (below << 23))) - 1.0f;
  const float z = f * f;
  float y = 7.0376836292E-2f;
  y = y * f - 1.1514610310E-1f;
  y = y * f + 1.1676998740E-1f;
  y = y * f - 1.2420140846E-1f;
  y = y * f + 1.4249322787E-1f;
  y = y * f - 1.6668057665E-1f;
  y = y * f + 2.0000714765E-1f;
  y = y * f - 2.4999993993E-1f;
  y = y * f + 3.3333331174E-1f;
  y = y * f * z;
  y += -2.12194440E-4f * e;
  y += -0.5f * z;
  const float ln = (f + y) + 0.693359375f * e;
  return x * ln;
}

/// x ln x for x >= 0 (double): fdlibm __ieee754_log (s = f/(2+f), R(s^2) of degree 14, ln 2 split hi/lo).
inline double xlogx(double x) {
  const std::int64_t bits = std::bit_cast<std::int64_t>(x);
  constexpr std::int64_t mantissa = 0xfffffffffffffLL;
  const std::int64_t below = (bits & mantissa) < 0x6a09e667f3bcdLL;
  const double k = static_cast<double>((bits >> 52) - 1022 - below);
  const double f = std::bit_cast<double>((bits & mantissa) | (0x3fe0000000000000LL + (below << 52))) - 1.0;
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const double t2 =
      z * (6.666666666666735130e-01 +
           w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  const double r = t2 + t1;
  const double hfsq = 0.5 * f * f;
  const double ln = k * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + r) + k * 1.90821492927058770002e-10)) - f);
  return x * ln;
}

/// sum_j x[j] ln x[j], j < k.
DARKBERT_MULTIVERSION inline float xlogx_sum(const float* x, Index k) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (Index j = 0; j < k; ++j) s += xlogx(x[j]);
  return s;
}
DARKBERT_MULTIVERSION inline double xlogx_sum(const double* x, Index k) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (Index j = 0; j < k; ++j) s += xlogx(x[j]);
  return s;
}

/// sum_j m ln m with m = (p[j] + q[j]) / 2, j < k.
DARKBERT_MULTIVERSION inline float mixture_xlogx_sum(const float* p, const float* q, Index k) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (Index j = 0; j < k; ++j) s += xlogx(0.5f * (p[j] + q[j]));
  return s;
}
DARKBERT_MULTIVERSION inline double mixture_xlogx_sum(const double* p, const double* q, Index k) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (Index j = 0; j < k; ++j) s += xlogx(0.5 * (p[j] + q[j]));
  return s;
}

}  // namespace darkbert::detail

#undef DARKBERT_MULTIVERSION
