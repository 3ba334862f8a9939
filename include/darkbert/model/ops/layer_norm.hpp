#pragma once
// LayerNorm over the feature axis, optionally fused with the residual add that precedes it:
//   sum = x + residual          (kept when `sum_out` is given: the pre-LN residual stream)
//   out = (sum - mean) / sqrt(var + eps) * weight + bias
// Shapes: x, residual, sum_out, out are [rows, cols] row-major; weight, bias [cols].

#include <cmath>  // std::sqrt

#include "../../core/matrix.hpp"
#include "../parameters.hpp"

namespace darkbert::ops {

template <class T>
void add_layer_norm_forward(const T* x, const T* residual, T* sum_out, T* out, Index rows, Index cols,
                            const LayerNormParams<T>& ln, double eps) {
  const T* w = ln.weight.data();
  const T* b = ln.bias.data();
#pragma omp parallel for schedule(static)
  for (Index r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* rr = residual ? residual + r * cols : nullptr;
    T* sr = sum_out ? sum_out + r * cols : nullptr;
    T* orow = out + r * cols;
    // out doubles as the buffer for the sum, so x may alias out (in-place residual update).
    T mean = 0;
    for (Index c = 0; c < cols; ++c) {
      const T v = rr ? xr[c] + rr[c] : xr[c];
      orow[c] = v;
      if (sr) sr[c] = v;
      mean += v;
    }
    mean /= static_cast<T>(cols);
    T var = 0;  // two passes: exact enough for float32 even with a large mean
    for (Index c = 0; c < cols; ++c) {
      const T d = orow[c] - mean;
      var += d * d;
    }
    var /= static_cast<T>(cols);
    const T inv = T(1) / std::sqrt(var + static_cast<T>(eps));
    for (Index c = 0; c < cols; ++c) orow[c] = (orow[c] - mean) * inv * w[c] + b[c];
  }
}

template <class T>
void layer_norm_forward(const T* x, T* out, Index rows, Index cols, const LayerNormParams<T>& ln, double eps) {
  add_layer_norm_forward<T>(x, nullptr, nullptr, out, rows, cols, ln, eps);
}

}  // namespace darkbert::ops
