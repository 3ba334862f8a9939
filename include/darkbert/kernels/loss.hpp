#pragma once
/// @file
/// The training losses, forward and backward side by side (mean reduction, as PyTorch):
/// @code
/// cross_entropy  logits [rows, classes], labels [rows]; rows labelled ignore_index (-100) are skipped,
///                loss = mean over the others of logsumexp(logits_r) - logits_r[label_r]
/// mse            x, target [n]; loss = mean (x - target)²
/// @endcode
/// The backward recomputes the softmax from the logits and each row's log-sum-exp instead of storing it.

#include <omp.h>  // omp_in_parallel

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::exp, std::log
#include <string>     // std::to_string

#include <Eigen/Core>  // Eigen::Map, vectorised exp

#include "../core/aligned_chunks.hpp"  // transform_in_aligned_chunks
#include "../core/error.hpp"
#include "../core/fixed_order_sum.hpp"
#include "../core/kernel_dispatch.hpp"  // DARKBERT_INTRINSICS_WARNINGS_OFF
#include "../core/matrix.hpp"

namespace darkbert::kernels {

/// The label of a position the loss skips, as in PyTorch's cross_entropy.
inline constexpr int ignore_index = -100;

/// Number of rows that count (label != ignore_index); checks every label is a valid class.
inline Index counted_labels(const int* labels, Index rows, Index classes) {
  Index n = 0;
  for (Index r = 0; r < rows; ++r) {
    if (labels[r] == ignore_index) continue;
    if (labels[r] < 0 || labels[r] >= classes)
      fail("cross_entropy: label ", labels[r], " of row ", r, " is outside [0, ", classes, ") (use ", ignore_index,
           " to ignore a row)");
    ++n;
  }
  return n;
}

/// log Σ_j exp(row[j]), stable. The exps go through Eigen's vectorised exp a chunk at a time (a language
/// model's rows have 30-50k entries; std::exp in a loop is a scalar call each) and are summed in an order
/// fixed by the indices alone, so the result never depends on the row's alignment.
DARKBERT_INTRINSICS_WARNINGS_OFF
template <class T>
T log_sum_exp(const T* row, Index n) {
  using ConstArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  constexpr Index chunk = 1024;
  alignas(64) T e[chunk];
  const T max = ConstArray(row, n).maxCoeff();  // exact in any order
  T sum = 0;
  for (Index j0 = 0; j0 < n; j0 += chunk) {
    const Index m = std::min(chunk, n - j0);
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(e, m) = (ConstArray(row + j0, m) - max).exp();
    sum += fixed_order_sum(e, m);
  }
  return max + std::log(sum);
}
DARKBERT_INTRINSICS_WARNINGS_ON

/// Mean cross-entropy; `row_loss` [rows] is scratch (summed in row order, so the result is deterministic).
/// `row_lse` [rows], when given, keeps each counted row's log-sum-exp for the backward (a language model's
/// rows are 30-50k wide: computing it twice costs a pass over the logits and every exp).
/// No counted row -> 0 (PyTorch gives NaN; a batch with nothing to predict contributes nothing here).
template <class T>
T cross_entropy_forward(const T* logits, const int* labels, Index rows, Index classes, T* row_loss, T* row_lse = nullptr) {
  const Index counted = counted_labels(labels, rows, classes);
#pragma omp parallel for schedule(static) if (rows * classes > (1 << 15) && !omp_in_parallel())
  for (Index r = 0; r < rows; ++r) {
    if (labels[r] == ignore_index) {
      row_loss[r] = T(0);
      continue;
    }
    const T lse = log_sum_exp(logits + r * classes, classes);
    if (row_lse) row_lse[r] = lse;
    row_loss[r] = lse - logits[r * classes + labels[r]];
  }
  T total = 0;
  for (Index r = 0; r < rows; ++r) total += row_loss[r];
  return counted ? total / static_cast<T>(counted) : T(0);
}

/// dlogits += dloss · (softmax(logits_r) - onehot(label_r)) / counted, for counted rows. `row_lse`: the
/// forward's log-sum-exp of each row, or null to recompute it.
template <class T>
void cross_entropy_backward(const T* logits, const int* labels, Index rows, Index classes, T dloss, T* dlogits,
                            const T* row_lse = nullptr) {
  const Index counted = counted_labels(labels, rows, classes);
  if (!counted) return;
  const T scale = dloss / static_cast<T>(counted);
#pragma omp parallel for schedule(static) if (rows * classes > (1 << 15) && !omp_in_parallel())
  for (Index r = 0; r < rows; ++r) {
    if (labels[r] == ignore_index) continue;
    const T* row = logits + r * classes;
    T* d = dlogits + r * classes;
    const T lse = row_lse ? row_lse[r] : log_sum_exp(row, classes);
    // d += scale · softmax(row): the softmax into aligned chunks (the same bits at any address), then added
    for (Index j0 = 0; j0 < classes; j0 += kAlignedChunk) {
      alignas(64) T p[kAlignedChunk];
      const Index m = std::min(kAlignedChunk, classes - j0);
      transform_in_aligned_chunks(row + j0, p, m, [scale, lse](auto chunk) { chunk = scale * (chunk - lse).exp(); });
#pragma omp simd
      for (Index j = 0; j < m; ++j) d[j0 + j] += p[j];
    }
    d[labels[r]] -= scale;
  }
}

/// Mean squared error over n values (0 for n = 0).
template <class T>
T mse_forward(const T* x, const T* target, Index n) {
  T total = 0;
  for (Index i = 0; i < n; ++i) total += (x[i] - target[i]) * (x[i] - target[i]);
  return n ? total / static_cast<T>(n) : T(0);
}

/// dx += dloss · d mse / dx.
template <class T>
void mse_backward(const T* x, const T* target, Index n, T dloss, T* dx) {
  const T scale = n ? T(2) * dloss / static_cast<T>(n) : T(0);
  for (Index i = 0; i < n; ++i) dx[i] += scale * (x[i] - target[i]);
}

}  // namespace darkbert::kernels
