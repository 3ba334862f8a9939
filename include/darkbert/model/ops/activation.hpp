#pragma once
// Element-wise activations used by the MLPs and heads.
//   gelu_erf  = 0.5 x (1 + erf(x / sqrt 2))                       (BERT, RoBERTa, DistilBERT)
//   gelu_tanh = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))    (GPT-2 "gelu_new")

#include <cmath>  // std::erf, std::tanh

#include "../../core/matrix.hpp"
#include "../config.hpp"

namespace darkbert::ops {

template <class T>
inline T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}

template <class T>
inline T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
}

template <class T>
inline T activate(Activation a, T x) {
  switch (a) {
    case Activation::gelu_erf: return gelu_erf(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
    case Activation::relu: return x > T(0) ? x : T(0);
  }
  return x;
}

}  // namespace darkbert::ops
