#pragma once
/// @file
/// Element-wise activations of the MLPs and task heads, forward and backward side by side:
/// @code
/// gelu_erf  = 0.5 x (1 + erf(x / sqrt 2))                       (BERT, RoBERTa, DistilBERT)
/// gelu_tanh = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))    (GPT-2 "gelu_new")
/// relu, tanh, none (identity)
/// @endcode
/// float uses a rational erf (max error ~1e-7, below float resolution of the result); double uses std::erf.
/// One enum names them everywhere: the config's hidden_act, a linear layer's fused epilogue, a head's
/// activation. On the avx512 path the float erf GELU is a loop compiled for AVX-512; on the avx2 path
/// (core/kernel_dispatch.hpp) every float activation, forward and backward, runs in AVX2 intrinsics
/// (core/detail/vector_math_avx2.hpp), whatever flags the consumer compiled with.

#include <omp.h>  // omp_in_parallel

#include <algorithm>    // std::min, std::max
#include <cmath>        // std::erf, std::tanh, std::exp
#include <type_traits>  // std::is_same_v

#include <Eigen/Core>  // Eigen::Map (vectorised exp and tanh)

#include "../core/aligned_chunks.hpp"  // transform_in_aligned_chunks
#include "../core/kernel_dispatch.hpp"  // kernel_path, DARKBERT_AVX512_TARGET, DARKBERT_AVX2_TARGET
#include "../core/matrix.hpp"
#if DARKBERT_HAS_AVX2_KERNEL
#include "../core/detail/vector_math_avx2.hpp"  // exp_avx2, erf_avx2, tanh_avx2, load_first, store_first
#endif

namespace darkbert {

/// An element-wise activation (see the top of this header): config hidden_act, fused epilogues, heads.
enum class Activation { none, gelu_erf, gelu_tanh, relu, tanh };

}  // namespace darkbert

namespace darkbert::kernels {

/// erf on [-4, 4] as x P(x²) / Q(x²) (the rational fit used by XLA and Eigen for float; beyond ±4, ±1).
inline float erf_rational(float x) {
  x = std::min(4.0f, std::max(-4.0f, x));
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

/// erf: the rational fit for float, std::erf for double.
template <class T>
inline T erf_of(T x) {
  if constexpr (std::is_same_v<T, float>) return erf_rational(x);
  else return std::erf(x);
}

/// 1 / sqrt(2)
inline constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
/// sqrt(2 / pi)
inline constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // sqrt(2 / pi)
/// 1 / sqrt(2 pi)
inline constexpr double kInvSqrtTwoPi = 0.39894228040143267794;   // 1 / sqrt(2 pi)

/// 0.5 x (1 + erf(x / sqrt 2)).
template <class T>
inline T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + erf_of(x * T(kSqrtHalf)));
}
/// d/dx gelu_erf = Φ(x) + x φ(x), given gauss = exp(-x²/2) (computed vectorised by the caller).
template <class T>
inline T gelu_erf_derivative(T x, T gauss) {
  return T(0.5) * (T(1) + erf_of(x * T(kSqrtHalf))) + x * T(kInvSqrtTwoPi) * gauss;
}

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))).
template <class T>
inline T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + std::tanh(T(kSqrtTwoOverPi) * (x + T(0.044715) * x * x * x)));
}
/// d/dx gelu_tanh, given t = tanh(sqrt(2/pi) (x + 0.044715 x³)) (computed vectorised by the caller).
template <class T>
inline T gelu_tanh_derivative(T x, T t) {
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T(kSqrtTwoOverPi) * (T(1) + T(3 * 0.044715) * x * x);
}

namespace detail {
#if DARKBERT_HAS_AVX512_KERNEL
/// The float GELU loop compiled for AVX-512 (plain arithmetic, so it vectorises for the target), for
/// consumers built without -march flags: on the avx512 path of core/kernel_dispatch.hpp.
DARKBERT_AVX512_TARGET inline void gelu_erf_avx512(float* x, Index n) {
#pragma omp simd
  for (Index i = 0; i < n; ++i) x[i] = gelu_erf(x[i]);
}
#endif

#if DARKBERT_HAS_AVX2_KERNEL
DARKBERT_INTRINSICS_WARNINGS_OFF
/// gelu_erf of 8 floats: 0.5 x (1 + erf(x / sqrt 2)).
DARKBERT_AVX2_TARGET inline __m256 gelu_erf_avx2(__m256 x) {
  using namespace darkbert::detail::avx2;
  const __m256 e = erf_avx2(_mm256_mul_ps(x, _mm256_set1_ps(float(kSqrtHalf))));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/// The argument of gelu_tanh's tanh, sqrt(2/pi) (x + 0.044715 x³), of 8 floats.
DARKBERT_AVX2_TARGET inline __m256 gelu_tanh_inner_avx2(__m256 x) {
  const __m256 cubic = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), _mm256_mul_ps(x, x));
  return _mm256_mul_ps(_mm256_set1_ps(float(kSqrtTwoOverPi)), _mm256_add_ps(x, cubic));
}

/// x[i] = f(x[i]) for i < n on the avx2 path (f: gelu_erf, gelu_tanh or tanh), 8 at a time; the row's end
/// through masked loads and stores.
DARKBERT_AVX2_TARGET inline void activate_avx2(float* x, Index n, Activation f) {
  using namespace darkbert::detail::avx2;
  for (Index i = 0; i < n; i += 8) {
    const __m256 v = load_first(x + i, n - i);
    __m256 y = v;
    if (f == Activation::gelu_erf) {
      y = gelu_erf_avx2(v);
    } else if (f == Activation::gelu_tanh) {
      const __m256 t = tanh_avx2(gelu_tanh_inner_avx2(v));
      y = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
    } else if (f == Activation::tanh) {
      y = tanh_avx2(v);
    }
    store_first(x + i, n - i, y);
  }
}

/// grad[i] *= f'(x[i]) for i < n on the avx2 path (f: gelu_erf or gelu_tanh; x is the activation's input),
/// the formulas of gelu_erf_derivative and gelu_tanh_derivative.
DARKBERT_AVX2_TARGET inline void gelu_backward_avx2(const float* x, float* grad, Index n, Activation f) {
  using namespace darkbert::detail::avx2;
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  for (Index i = 0; i < n; i += 8) {
    const __m256 v = load_first(x + i, n - i);
    __m256 derivative;
    if (f == Activation::gelu_erf) {  // Φ(x) + x φ(x)
      const __m256 gauss = exp_avx2(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(v, v)));
      const __m256 cdf = _mm256_mul_ps(half, _mm256_add_ps(one, erf_avx2(_mm256_mul_ps(v, _mm256_set1_ps(float(kSqrtHalf))))));
      derivative = _mm256_fmadd_ps(_mm256_mul_ps(v, _mm256_set1_ps(float(kInvSqrtTwoPi))), gauss, cdf);
    } else {  // 0.5 (1 + t) + 0.5 x (1 - t²) sqrt(2/pi) (1 + 3 · 0.044715 x²)
      const __m256 t = tanh_avx2(gelu_tanh_inner_avx2(v));
      const __m256 slope = _mm256_mul_ps(_mm256_set1_ps(float(kSqrtTwoOverPi)),
                                         _mm256_fmadd_ps(_mm256_set1_ps(float(3 * 0.044715)), _mm256_mul_ps(v, v), one));
      const __m256 sech2 = _mm256_fnmadd_ps(t, t, one);
      derivative = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(half, v), sech2), slope, _mm256_mul_ps(half, _mm256_add_ps(one, t)));
    }
    store_first(grad + i, n - i, _mm256_mul_ps(load_first(grad + i, n - i), derivative));
  }
}
DARKBERT_INTRINSICS_WARNINGS_ON
#endif
}  // namespace detail

/// x[i] = f(x[i] + bias[i]) for i < n (bias may be null). When `pre` is given it receives x + bias, the
/// input of f, which the backward of GELU needs.
template <class T>
void bias_epilogue(T* x, const T* bias, Index n, Activation f, T* pre = nullptr) {
  if (bias) {
#pragma omp simd
    for (Index i = 0; i < n; ++i) x[i] += bias[i];
  }
  if (pre) std::copy(x, x + n, pre);
#if DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if (f != Activation::none && f != Activation::relu && kernel_path() == KernelPath::avx2)
      return detail::activate_avx2(x, n, f);
  }
#endif
  switch (f) {
    case Activation::none: return;
    case Activation::gelu_erf:
#if DARKBERT_HAS_AVX512_KERNEL
      if constexpr (std::is_same_v<T, float>) {
        if (kernel_path() == KernelPath::avx512) return detail::gelu_erf_avx512(x, n);
      }
#endif
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] = gelu_erf(x[i]);
      return;
    case Activation::relu:
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] = std::max(T(0), x[i]);
      return;
    case Activation::gelu_tanh:
      // tanh through Eigen's vectorised implementation, on aligned chunks: the same bits at any address
      transform_in_aligned_chunks(x, x, n, [](auto v) {
        v = T(0.5) * v * (T(1) + (T(kSqrtTwoOverPi) * (v + T(0.044715) * v * v * v)).tanh());
      });
      return;
    case Activation::tanh:
      transform_in_aligned_chunks(x, x, n, [](auto v) { v = v.tanh(); });
      return;
  }
}

/// x[i] = f(x[i]) for i < n.
template <class T>
void activate(T* x, Index n, Activation f) {
  bias_epilogue<T>(x, nullptr, n, f);
}

namespace detail {
/// activation_backward on one chunk of at most kActivationChunk elements. The GELUs send their exp/tanh
/// through Eigen's vectorised functions first (std::exp and std::tanh in a loop are a scalar call per
/// element), then gelu_*_derivative above.
inline constexpr Index kActivationChunk = 256;
DARKBERT_INTRINSICS_WARNINGS_OFF
template <class T>
void activation_backward_chunk(const T* x, const T* post, T* grad, Index m, Activation f) {
#if DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if ((f == Activation::gelu_erf || f == Activation::gelu_tanh) && kernel_path() == KernelPath::avx2)
      return gelu_backward_avx2(x, grad, m, f);
  }
#endif
  alignas(64) T work[kActivationChunk];
  using ConstArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  using Array = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  switch (f) {
    case Activation::none: return;
    case Activation::gelu_erf:
      Array(work, m) = (T(-0.5) * ConstArray(x, m).square()).exp();
#pragma omp simd
      for (Index i = 0; i < m; ++i) grad[i] *= gelu_erf_derivative(x[i], work[i]);
      return;
    case Activation::gelu_tanh:
      Array(work, m) = (T(kSqrtTwoOverPi) * (ConstArray(x, m) + T(0.044715) * ConstArray(x, m).cube())).tanh();
#pragma omp simd
      for (Index i = 0; i < m; ++i) grad[i] *= gelu_tanh_derivative(x[i], work[i]);
      return;
    case Activation::relu:
#pragma omp simd
      for (Index i = 0; i < m; ++i) grad[i] = x[i] > T(0) ? grad[i] : T(0);
      return;
    case Activation::tanh:
#pragma omp simd
      for (Index i = 0; i < m; ++i) grad[i] *= T(1) - post[i] * post[i];
      return;
  }
}
DARKBERT_INTRINSICS_WARNINGS_ON
}  // namespace detail

/// Backward of y = f(u): grad[i] *= f'(u[i]). `pre` is u (GELU, ReLU), `post` is y (tanh); either may be
/// null when f does not need it. Element-wise, so large arrays are split over the threads (outside a
/// parallel region) without changing a bit of the result.
template <class T>
void activation_backward(const T* pre, const T* post, T* grad, Index n, Activation f) {
  constexpr Index chunk = detail::kActivationChunk;
  const Index chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (n > (1 << 15) && !omp_in_parallel())
  for (Index c = 0; c < chunks; ++c) {
    const Index first = c * chunk;
    detail::activation_backward_chunk(pre ? pre + first : nullptr, post ? post + first : nullptr, grad + first,
                                      std::min(chunk, n - first), f);
  }
}

}  // namespace darkbert::kernels
