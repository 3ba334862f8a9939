#pragma once
// y = x Wᵀ + b, with an optional element-wise epilogue fused into the bias pass.
// Shapes: x [rows, in], W [out, in], b [out], y [rows, out]; all row-major.

#include "../../core/blas.hpp"
#include "../../core/matrix.hpp"
#include "../parameters.hpp"

namespace darkbert::ops {

struct NoEpilogue {
  template <class T>
  T operator()(T v) const { return v; }
};

template <class T, class Epilogue = NoEpilogue>
void linear_forward(const T* x, Index rows, const Linear<T>& lin, T* y, Epilogue epilogue = {}) {
  const Index in = lin.in(), out = lin.out();
  gemm<T>(Transpose::no, Transpose::yes, static_cast<int>(rows), static_cast<int>(out), static_cast<int>(in), T(1),
          x, static_cast<int>(in), lin.weight.data(), static_cast<int>(in), T(0), y, static_cast<int>(out));
  const T* b = lin.bias.data();
#pragma omp parallel for schedule(static)
  for (Index r = 0; r < rows; ++r) {
    T* yr = y + r * out;
    for (Index c = 0; c < out; ++c) yr[c] = epilogue(yr[c] + b[c]);
  }
}

}  // namespace darkbert::ops
