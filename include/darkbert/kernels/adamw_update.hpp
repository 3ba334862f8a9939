#pragma once
/// @file
/// AdamW's element-wise update of one parameter block (train/optimizer.hpp runs it per chunk):
/// @code
/// gi = g * grad_scale
/// m  = fma(beta1, m, (1 - beta1) * gi)
/// v  = fma(beta2, v, (1 - beta2) * gi * gi)
/// p  = p * decay - rate * (m / correction1) / (sqrt(v / correction2) + eps)
/// @endcode
/// Shapes: p, g, m, v are [n]. On the avx512 and avx2 paths (core/kernel_dispatch.hpp) float blocks run
/// in intrinsics, 16 or 8 lanes: the plain loop does not vectorise (std::sqrt may set errno), and at width
/// 128 the update was a tenth of a GPT-2 training step. Every operation is IEEE-rounded one by one, with
/// the two FMAs written out, so both vector paths give the bits GCC's contracted scalar loop gives with
/// -march=native (tests/test_kernels_adamw_update.cpp holds them to an explicit std::fma reference).

#include <cmath>        // std::sqrt
#include <type_traits>  // std::is_same_v

#include "../core/kernel_dispatch.hpp"  // kernel_path, DARKBERT_AVX2_TARGET, DARKBERT_AVX512_TARGET
#include "../core/matrix.hpp"           // Index
#if DARKBERT_HAS_AVX2_KERNEL
#include <immintrin.h>

#include "../core/detail/vector_math_avx2.hpp"  // load_first, store_first
#endif

namespace darkbert::kernels {

/// The scalars of one AdamW step (the same for every element it updates).
template <class T>
struct AdamWUpdate {
  T beta1;        ///< decay rate of the first moment
  T beta2;        ///< decay rate of the second moment
  T correction1;  ///< 1 - beta1^step, the first moment's bias correction
  T correction2;  ///< 1 - beta2^step, the second moment's bias correction
  T grad_scale;   ///< 1 / micro-batches times the clipping factor
  T rate;         ///< learning rate of this step
  T eps;          ///< added to the root of the second moment
  T decay;        ///< 1 - rate * weight_decay, or 1 where the block takes no decay
};

namespace detail {

/// The update as written above, one element at a time (double, and float on the blas path).
template <class T>
void adamw_update_plain(T* p, const T* g, T* m, T* v, Index n, const AdamWUpdate<T>& u) {
  const T keep1 = T(1) - u.beta1, keep2 = T(1) - u.beta2;
  for (Index i = 0; i < n; ++i) {
    const T gi = g[i] * u.grad_scale;
    m[i] = u.beta1 * m[i] + keep1 * gi;
    v[i] = u.beta2 * v[i] + keep2 * gi * gi;
    p[i] = p[i] * u.decay - u.rate * (m[i] / u.correction1) / (std::sqrt(v[i] / u.correction2) + u.eps);
  }
}

#if DARKBERT_HAS_AVX512_KERNEL && DARKBERT_HAS_AVX2_KERNEL
DARKBERT_INTRINSICS_WARNINGS_OFF

/// x as it is, rounded on its own: GCC's intrinsics are plain vector arithmetic, which -ffp-contract=fast
/// (GCC's default) would fuse with the subtraction that follows into one FMA and other bits.
DARKBERT_AVX512_TARGET inline __m512 rounded(__m512 x) {
  asm("" : "+v"(x));
  return x;
}
/// x as it is, rounded on its own (see the 16-lane rounded).
DARKBERT_AVX2_TARGET inline __m256 rounded(__m256 x) {
  asm("" : "+x"(x));
  return x;
}

DARKBERT_AVX512_TARGET inline void adamw_update_avx512(float* p, const float* g, float* m, float* v, Index n,
                                                       const AdamWUpdate<float>& u) {
  const __m512 beta1 = _mm512_set1_ps(u.beta1), beta2 = _mm512_set1_ps(u.beta2);
  const __m512 keep1 = _mm512_set1_ps(1.0f - u.beta1), keep2 = _mm512_set1_ps(1.0f - u.beta2);
  const __m512 c1 = _mm512_set1_ps(u.correction1), c2 = _mm512_set1_ps(u.correction2);
  const __m512 scale = _mm512_set1_ps(u.grad_scale), rate = _mm512_set1_ps(u.rate);
  const __m512 eps = _mm512_set1_ps(u.eps), decay = _mm512_set1_ps(u.decay);
  for (Index i = 0; i < n; i += 16) {
    // A ragged end is masked: lanes past n are neither read nor written.
    const __mmask16 lanes = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1u);
    const __m512 gi = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, g + i), scale);
    const __m512 mi = _mm512_fmadd_ps(beta1, _mm512_maskz_loadu_ps(lanes, m + i), _mm512_mul_ps(keep1, gi));
    const __m512 vi = _mm512_fmadd_ps(beta2, _mm512_maskz_loadu_ps(lanes, v + i), _mm512_mul_ps(_mm512_mul_ps(keep2, gi), gi));
    const __m512 step = _mm512_div_ps(_mm512_mul_ps(rate, _mm512_div_ps(mi, c1)),
                                      _mm512_add_ps(_mm512_sqrt_ps(_mm512_div_ps(vi, c2)), eps));
    const __m512 kept = rounded(_mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, p + i), decay));
    const __m512 pi = _mm512_sub_ps(kept, step);
    _mm512_mask_storeu_ps(m + i, lanes, mi);
    _mm512_mask_storeu_ps(v + i, lanes, vi);
    _mm512_mask_storeu_ps(p + i, lanes, pi);
  }
}

DARKBERT_AVX2_TARGET inline void adamw_update_avx2(float* p, const float* g, float* m, float* v, Index n,
                                                   const AdamWUpdate<float>& u) {
  const __m256 beta1 = _mm256_set1_ps(u.beta1), beta2 = _mm256_set1_ps(u.beta2);
  const __m256 keep1 = _mm256_set1_ps(1.0f - u.beta1), keep2 = _mm256_set1_ps(1.0f - u.beta2);
  const __m256 c1 = _mm256_set1_ps(u.correction1), c2 = _mm256_set1_ps(u.correction2);
  const __m256 scale = _mm256_set1_ps(u.grad_scale), rate = _mm256_set1_ps(u.rate);
  const __m256 eps = _mm256_set1_ps(u.eps), decay = _mm256_set1_ps(u.decay);
  for (Index i = 0; i < n; i += 8) {
    using darkbert::detail::avx2::load_first, darkbert::detail::avx2::store_first;
    const Index left = n - i;
    const __m256 gi = _mm256_mul_ps(load_first(g + i, left), scale);
    const __m256 mi = _mm256_fmadd_ps(beta1, load_first(m + i, left), _mm256_mul_ps(keep1, gi));
    const __m256 vi = _mm256_fmadd_ps(beta2, load_first(v + i, left), _mm256_mul_ps(_mm256_mul_ps(keep2, gi), gi));
    const __m256 step = _mm256_div_ps(_mm256_mul_ps(rate, _mm256_div_ps(mi, c1)),
                                      _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(vi, c2)), eps));
    const __m256 kept = rounded(_mm256_mul_ps(load_first(p + i, left), decay));
    const __m256 pi = _mm256_sub_ps(kept, step);
    store_first(m + i, left, mi);
    store_first(v + i, left, vi);
    store_first(p + i, left, pi);
  }
}

DARKBERT_INTRINSICS_WARNINGS_ON
#endif

}  // namespace detail

/// Updates p[0, n) and its moments m, v from the gradient g: one AdamW step on one block (see the top).
template <class T>
void adamw_update(T* p, const T* g, T* m, T* v, Index n, const AdamWUpdate<T>& u) {
#if DARKBERT_HAS_AVX512_KERNEL && DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    const KernelPath path = kernel_path();
    if (path == KernelPath::avx512) return detail::adamw_update_avx512(p, g, m, v, n, u);
    if (path == KernelPath::avx2) return detail::adamw_update_avx2(p, g, m, v, n, u);
  }
#endif
  detail::adamw_update_plain(p, g, m, v, n, u);
}

}  // namespace darkbert::kernels
