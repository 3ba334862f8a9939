#pragma once
// y = f(x Wᵀ + b): one GEMM, then the bias and an optional activation in a single pass over y.
// Shapes: x [rows, in], W [out, in], b [out], y [rows, out]; all row-major.

#include "../../core/blas.hpp"
#include "../../core/matrix.hpp"
#include "../parameters.hpp"
#include "activation.hpp"

namespace darkbert::ops {

template <class T>
void linear_forward(const T* x, Index rows, const Linear<T>& lin, T* y, Epilogue epilogue = Epilogue::none) {
  const Index in = lin.in(), out = lin.out();
  gemm<T>(Transpose::no, Transpose::yes, rows, out, in, T(1), x, in, lin.weight.data(), in, T(0), y, out);
  const T* b = lin.bias.data();
#pragma omp parallel for schedule(static)
  for (Index r = 0; r < rows; ++r) bias_epilogue(y + r * out, b, out, epilogue);
}

}  // namespace darkbert::ops
