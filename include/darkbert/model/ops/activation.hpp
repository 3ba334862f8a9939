#pragma once
// Element-wise activations of the MLPs and task heads, forward and backward side by side:
//   gelu_erf  = 0.5 x (1 + erf(x / sqrt 2))                       (BERT, RoBERTa, DistilBERT)
//   gelu_tanh = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))    (GPT-2 "gelu_new")
//   relu, tanh, none (identity)
// float uses a rational erf (max error ~1e-7, below float resolution of the result); double uses std::erf.
// One enum names them everywhere: the config's hidden_act, a linear layer's fused epilogue, a head's
// activation.

#include <algorithm>    // std::min, std::max
#include <cmath>        // std::erf, std::tanh, std::exp
#include <type_traits>  // std::is_same_v

#include <Eigen/Core>  // Eigen::Map (vectorised tanh)

#include "../../core/matrix.hpp"

namespace darkbert {

enum class Activation { none, gelu_erf, gelu_tanh, relu, tanh };

}  // namespace darkbert

namespace darkbert::ops {

// erf on [-4, 4] as x P(x²) / Q(x²) (the rational fit used by XLA and Eigen for float; beyond ±4, ±1).
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

template <class T>
inline T erf_of(T x) {
  if constexpr (std::is_same_v<T, float>) return erf_rational(x);
  else return std::erf(x);
}

inline constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
inline constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // sqrt(2 / pi)
inline constexpr double kInvSqrtTwoPi = 0.39894228040143267794;   // 1 / sqrt(2 pi)

template <class T>
inline T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + erf_of(x * T(kSqrtHalf)));
}
// d/dx gelu_erf = Φ(x) + x φ(x)
template <class T>
inline T gelu_erf_derivative(T x) {
  return T(0.5) * (T(1) + erf_of(x * T(kSqrtHalf))) + x * T(kInvSqrtTwoPi) * std::exp(T(-0.5) * x * x);
}

template <class T>
inline T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + std::tanh(T(kSqrtTwoOverPi) * (x + T(0.044715) * x * x * x)));
}
template <class T>
inline T gelu_tanh_derivative(T x) {
  const T t = std::tanh(T(kSqrtTwoOverPi) * (x + T(0.044715) * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T(kSqrtTwoOverPi) * (T(1) + T(3 * 0.044715) * x * x);
}

// x[i] = f(x[i] + bias[i]) for i < n (bias may be null). When `pre` is given it receives x + bias, the
// input of f, which the backward of GELU needs.
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
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] = gelu_erf(x[i]);
      return;
    case Activation::relu:
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] = std::max(T(0), x[i]);
      return;
    case Activation::gelu_tanh: {
      // tanh through Eigen's vectorised implementation.
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> v(x, n);
      v = T(0.5) * v * (T(1) + (T(kSqrtTwoOverPi) * (v + T(0.044715) * v * v * v)).tanh());
      return;
    }
    case Activation::tanh: {
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> v(x, n);
      v = v.tanh();
      return;
    }
  }
}

template <class T>
void activate(T* x, Index n, Activation f) {
  bias_epilogue<T>(x, nullptr, n, f);
}

// Backward of y = f(u): grad[i] *= f'(u[i]). `pre` is u (GELU, ReLU), `post` is y (tanh); either may be
// null when f does not need it.
template <class T>
void activation_backward(const T* pre, const T* post, T* grad, Index n, Activation f) {
  switch (f) {
    case Activation::none: return;
    case Activation::gelu_erf:
#pragma omp simd
      for (Index i = 0; i < n; ++i) grad[i] *= gelu_erf_derivative(pre[i]);
      return;
    case Activation::gelu_tanh:
#pragma omp simd
      for (Index i = 0; i < n; ++i) grad[i] *= gelu_tanh_derivative(pre[i]);
      return;
    case Activation::relu:
#pragma omp simd
      for (Index i = 0; i < n; ++i) grad[i] = pre[i] > T(0) ? grad[i] : T(0);
      return;
    case Activation::tanh:
#pragma omp simd
      for (Index i = 0; i < n; ++i) grad[i] *= T(1) - post[i] * post[i];
      return;
  }
}

}  // namespace darkbert::ops
