#pragma once
/// @file
/// A model's Linear and LayerNorm layers (model/parameters.hpp) through the kernels, which take raw
/// buffers (kernels/linear.hpp, kernels/layer_norm.hpp): the parameters unpacked, nothing else.
///
/// @code
/// darkbert::XwtScratch scratch;
/// darkbert::linear_forward<float>(x, N, block.qkv, qkv, darkbert::Activation::none, scratch);  // [N, H] -> [N, 3H]
/// darkbert::layer_norm_forward<float>(x, out, N, H, block.attn_norm, 1e-12);                   // [N, H] -> [N, H]
/// @endcode

#include "../core/matrix.hpp"
#include "../core/xwt_gemm.hpp"  // XwtScratch
#include "../kernels/activation.hpp"
#include "../kernels/layer_norm.hpp"
#include "../kernels/linear.hpp"
#include "parameters.hpp"

namespace darkbert {

/// y = epilogue(x Wᵀ + b) for a Linear layer: [rows, in] -> [rows, out] (kernels::linear_forward_raw).
template <class T>
void linear_forward(const T* x, Index rows, const Linear<T>& lin, T* y, Activation epilogue, XwtScratch& scratch,
                    T* pre_activation = nullptr) {
  kernels::linear_forward_raw<T>(x, rows, lin.in(), lin.weight.data(), lin.has_bias() ? lin.bias.data() : nullptr,
                                 lin.out(), y, epilogue, scratch, pre_activation);
}

/// Convenience for one-off calls (heads, tests): allocates its own scratch.
template <class T>
void linear_forward(const T* x, Index rows, const Linear<T>& lin, T* y, Activation epilogue = Activation::none) {
  XwtScratch scratch;
  linear_forward(x, rows, lin, y, epilogue, scratch);
}

/// Backward of linear_forward (kernels::linear_backward_raw); grad may be null (frozen layer).
template <class T>
void linear_backward(const T* x, const T* dy, Index rows, const Linear<T>& lin, Linear<T>* grad, T* dx,
                     bool accumulate_dx = false) {
  kernels::linear_backward_raw<T>(x, dy, rows, lin.in(), lin.out(), lin.weight.data(),
                                  grad ? grad->weight.data() : nullptr,
                                  grad && lin.has_bias() ? grad->bias.data() : nullptr, dx, accumulate_dx);
}

/// out = LayerNorm(x + residual) with the parameters of `ln` (kernels::add_layer_norm_forward_raw).
template <class T>
void add_layer_norm_forward(const T* x, const T* residual, T* sum_out, T* out, Index rows, Index cols,
                            const LayerNormParams<T>& ln, double eps, kernels::NormStats<T> stats = {}) {
  kernels::add_layer_norm_forward_raw<T>(x, residual, sum_out, out, rows, cols, ln.weight.data(), ln.bias.data(), eps,
                                         stats);
}

/// out = LayerNorm(x) row by row.
template <class T>
void layer_norm_forward(const T* x, T* out, Index rows, Index cols, const LayerNormParams<T>& ln, double eps,
                        kernels::NormStats<T> stats = {}) {
  add_layer_norm_forward<T>(x, nullptr, nullptr, out, rows, cols, ln, eps, stats);
}

/// Backward of layer_norm_forward: dx (added to when `accumulate`), and += into grad's gain and shift
/// (kernels::layer_norm_backward_raw).
template <class T>
void layer_norm_backward(const T* x, kernels::NormStats<T> stats, const T* dy, Index rows, Index cols,
                         const LayerNormParams<T>& ln, LayerNormParams<T>* grad, T* dx, bool accumulate = false) {
  kernels::layer_norm_backward_raw<T>(x, stats, dy, rows, cols, ln.weight.data(), grad ? grad->weight.data() : nullptr,
                                      grad ? grad->bias.data() : nullptr, dx, accumulate);
}

}  // namespace darkbert
