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
/// activation.

#include <omp.h>  // omp_in_parallel

#include <algorithm>    // std::min, std::max
#include <cmath>        // std::erf, std::tanh, std::exp
#include <type_traits>  // std::is_same_v

#include <Eigen/Core>  // Eigen::Map (vectorised exp and tanh)

#include "../core/aligned_chunks.hpp"  // transform_in_aligned_chunks
#include "../core/kernel_dispatch.hpp"  // kernel_path, DARKBERT_AVX512_TARGET
#include "../core/matrix.hpp"

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
