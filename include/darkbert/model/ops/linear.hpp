#pragma once
// y = f(x Wᵀ + b): one product, with the bias and an optional activation applied to each block of y
// as soon as the product has finished it (see core/xwt_gemm.hpp).
// Shapes: x [rows, in], W [out, in], b [out], y [rows, out]; all row-major.

#include "../../core/matrix.hpp"
#include "../../core/xwt_gemm.hpp"
#include "../parameters.hpp"
#include "activation.hpp"

namespace darkbert::ops {

template <class T>
void linear_forward(const T* x, Index rows, const Linear<T>& lin, T* y, Activation epilogue, XwtScratch& scratch) {
  const T* bias = lin.has_bias() ? lin.bias.data() : nullptr;
  xwt_gemm<T>(x, rows, lin.in(), lin.weight.data(), lin.out(), y, scratch,
              [&](T* part, Index first, Index n) { bias_epilogue(part, bias ? bias + first : nullptr, n, epilogue); });
}

// Convenience for one-off calls (heads, tests): allocates its own scratch.
template <class T>
void linear_forward(const T* x, Index rows, const Linear<T>& lin, T* y, Activation epilogue = Activation::none) {
  XwtScratch scratch;
  linear_forward(x, rows, lin, y, epilogue, scratch);
}

}  // namespace darkbert::ops
