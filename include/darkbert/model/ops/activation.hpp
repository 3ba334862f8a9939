#pragma once
// Element-wise activations used by the MLPs and heads, written as plain loops the compiler vectorises.
//   gelu_erf  = 0.5 x (1 + erf(x / sqrt 2))                       (BERT, RoBERTa, DistilBERT)
//   gelu_tanh = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))    (GPT-2 "gelu_new")
// float uses a rational erf (max error ~1e-7, below float resolution of the result); double uses std::erf.

#include <algorithm>    // std::min, std::max
#include <cmath>        // std::erf, std::tanh
#include <type_traits>  // std::is_same_v

#include <Eigen/Core>  // Eigen::Map (vectorised tanh)

#include "../../core/matrix.hpp"
#include "../config.hpp"

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
inline T gelu_erf(T x) {
  if constexpr (std::is_same_v<T, float>)
    return 0.5f * x * (1.0f + erf_rational(x * 0.70710678118654752f));
  else
    return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}

template <class T>
inline T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
}

// What follows a linear layer, fused into its bias pass.
enum class Epilogue { none, gelu_erf, gelu_tanh, relu, tanh };

inline Epilogue epilogue_for(Activation a) {
  switch (a) {
    case Activation::gelu_erf: return Epilogue::gelu_erf;
    case Activation::gelu_tanh: return Epilogue::gelu_tanh;
    case Activation::relu: return Epilogue::relu;
  }
  return Epilogue::none;
}

// x[i] = f(x[i] + bias[i]) for i < n.
template <class T>
void bias_epilogue(T* x, const T* bias, Index n, Epilogue f) {
  switch (f) {
    case Epilogue::none:
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] += bias[i];
      return;
    case Epilogue::gelu_erf:
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] = gelu_erf(x[i] + bias[i]);
      return;
    case Epilogue::relu:
#pragma omp simd
      for (Index i = 0; i < n; ++i) x[i] = std::max(T(0), x[i] + bias[i]);
      return;
    case Epilogue::gelu_tanh: {
      // tanh through Eigen's vectorised implementation.
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> v(x, n);
      const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> b(bias, n);
      v += b;
      v = T(0.5) * v * (T(1) + (T(0.79788456080286535588) * (v + T(0.044715) * v * v * v)).tanh());
      return;
    }
    case Epilogue::tanh: {
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> v(x, n);
      v = (v + Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(bias, n)).tanh();
      return;
    }
  }
}

}  // namespace darkbert::ops
