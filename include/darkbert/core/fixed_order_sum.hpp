#pragma once
/// @file
/// A float sum whose rounding never depends on the buffer's address, the thread count or the vector
/// width: the reductions of softmax rows and of the cross-entropy's log-sum-exp.

#include "matrix.hpp"  // Index

namespace darkbert {

/// Sum of v[0..n) in an order fixed by the indices alone (element j goes to partial sum j % 16, and the
/// 16 partial sums are added pairwise), so it vectorises and yet never depends on the buffer's alignment.
template <class T>
T fixed_order_sum(const T* v, Index n) {
  constexpr Index lanes = 16;
  T partial[lanes] = {};
  Index j = 0;
  for (; j + lanes <= n; j += lanes)
#pragma omp simd
    for (Index l = 0; l < lanes; ++l) partial[l] += v[j + l];
  for (Index l = 0; j < n; ++j, ++l) partial[l] += v[j];
  for (Index width = lanes / 2; width > 0; width /= 2)
    for (Index l = 0; l < width; ++l) partial[l] += partial[l + width];
  return partial[0];
}

}  // namespace darkbert
