#pragma once
/// @file
/// y = f(x Wᵀ + b): one product, with the bias and an optional activation applied to each block of y
/// as soon as the product has finished it (see core/xwt_gemm.hpp); and its backward.
/// Shapes: x [rows, in], W [out, in], b [out], y [rows, out]; all row-major. Raw buffers only: the
/// overloads on a model's Linear<T> are in model/layers.hpp.

#include "../core/blas.hpp"  // gemm
#include "../core/matrix.hpp"
#include "../core/threads.hpp"  // for_column_blocks
#include "../core/xwt_gemm.hpp"
#include "activation.hpp"

namespace darkbert::kernels {

/// y = epilogue(x Wᵀ + b): [rows, in] -> [rows, out] (bias may be null). `pre_activation` [rows, out], when
/// given, receives x Wᵀ + b before the activation (what the activation's backward needs). A model's
/// Linear layer goes through it in model/layers.hpp.
template <class T>
void linear_forward_raw(const T* x, Index rows, Index in, const T* w, const T* bias, Index out, T* y,
                        Activation epilogue, XwtScratch& scratch, T* pre_activation = nullptr) {
  xwt_gemm<T>(x, rows, in, w, out, y, scratch, [&](T* part, Index first, Index n) {
    // part is row r's columns [first, first + n): its offset from y locates the same span of pre_activation
    T* pre = pre_activation ? pre_activation + (part - y) : nullptr;
    bias_epilogue(part, bias ? bias + first : nullptr, n, epilogue, pre);
  });
}

/// out[c] += Σ_r m[r, c] for m [rows, cols]. Threads own column blocks and every column is summed over
/// rows in increasing order, so the result does not depend on the thread count.
template <class T>
void add_column_sums(const T* m, Index rows, Index cols, T* out) {
  for_column_blocks(cols, rows * cols > (1 << 16), [&](Index c0, Index c1) {
    for (Index r = 0; r < rows; ++r) {
      const T* row = m + r * cols;
#pragma omp simd
      for (Index c = c0; c < c1; ++c) out[c] += row[c];
    }
  });
}

/// Backward of y = x Wᵀ + b (the activation's backward has already been applied to dy):
/// @code
/// dx [rows, in]  = dy · W        (added to dx when accumulate_dx; dx may be null: not needed)
/// dW [out, in]  += dyᵀ · x       (dW may be null: frozen weight)
/// db [out]      += Σ_rows dy     (db may be null)
/// @endcode
/// The products run on OpenBLAS, split over the threads by output blocks (core/blas.hpp): each element
/// is computed by one thread in a fixed order, so gradients are bit-identical from run to run.
template <class T>
void linear_backward_raw(const T* x, const T* dy, Index rows, Index in, Index out, const T* w, T* dw, T* db, T* dx,
                         bool accumulate_dx = false) {
  if (rows == 0) return;
  if (dx) gemm<T>(Transpose::no, Transpose::no, rows, in, out, T(1), dy, out, w, in, accumulate_dx ? T(1) : T(0), dx, in);
  if (dw) gemm<T>(Transpose::yes, Transpose::no, out, in, rows, T(1), dy, out, x, in, T(1), dw, in);
  if (db) add_column_sums(dy, rows, out, db);
}

}  // namespace darkbert::kernels
