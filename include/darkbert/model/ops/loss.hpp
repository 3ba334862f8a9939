#pragma once
// The training losses, forward and backward side by side (mean reduction, as PyTorch):
//   cross_entropy  logits [rows, classes], labels [rows]; rows labelled ignore_index (-100) are skipped,
//                  loss = mean over the others of logsumexp(logits_r) - logits_r[label_r]
//   mse            x, target [n]; loss = mean (x - target)²
// The backward recomputes the softmax from the logits instead of storing it.

#include <omp.h>  // omp_in_parallel

#include <algorithm>  // std::max
#include <cmath>      // std::exp, std::log
#include <string>     // std::to_string

#include "../../core/error.hpp"
#include "../../core/matrix.hpp"

namespace darkbert::ops {

inline constexpr int ignore_index = -100;

// Number of rows that count (label != ignore_index); checks every label is a valid class.
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

// log Σ_j exp(row[j]), stable.
template <class T>
T log_sum_exp(const T* row, Index n) {
  T max = row[0];
  for (Index j = 1; j < n; ++j) max = std::max(max, row[j]);
  T sum = 0;
  for (Index j = 0; j < n; ++j) sum += std::exp(row[j] - max);
  return max + std::log(sum);
}

// Mean cross-entropy; `row_loss` [rows] is scratch (summed in row order, so the result is deterministic).
// No counted row -> 0 (PyTorch gives NaN; a batch with nothing to predict contributes nothing here).
template <class T>
T cross_entropy_forward(const T* logits, const int* labels, Index rows, Index classes, T* row_loss) {
  const Index counted = counted_labels(labels, rows, classes);
#pragma omp parallel for schedule(static) if (rows * classes > (1 << 15) && !omp_in_parallel())
  for (Index r = 0; r < rows; ++r)
    row_loss[r] = labels[r] == ignore_index ? T(0)
                                            : log_sum_exp(logits + r * classes, classes) - logits[r * classes + labels[r]];
  T total = 0;
  for (Index r = 0; r < rows; ++r) total += row_loss[r];
  return counted ? total / static_cast<T>(counted) : T(0);
}

// dlogits += dloss · (softmax(logits_r) - onehot(label_r)) / counted, for counted rows.
template <class T>
void cross_entropy_backward(const T* logits, const int* labels, Index rows, Index classes, T dloss, T* dlogits) {
  const Index counted = counted_labels(labels, rows, classes);
  if (!counted) return;
  const T scale = dloss / static_cast<T>(counted);
#pragma omp parallel for schedule(static) if (rows * classes > (1 << 15) && !omp_in_parallel())
  for (Index r = 0; r < rows; ++r) {
    if (labels[r] == ignore_index) continue;
    const T* row = logits + r * classes;
    T* d = dlogits + r * classes;
    const T lse = log_sum_exp(row, classes);
    for (Index j = 0; j < classes; ++j) d[j] += scale * std::exp(row[j] - lse);
    d[labels[r]] -= scale;
  }
}

template <class T>
T mse_forward(const T* x, const T* target, Index n) {
  T total = 0;
  for (Index i = 0; i < n; ++i) total += (x[i] - target[i]) * (x[i] - target[i]);
  return n ? total / static_cast<T>(n) : T(0);
}

template <class T>
void mse_backward(const T* x, const T* target, Index n, T dloss, T* dx) {
  const T scale = n ? T(2) * dloss / static_cast<T>(n) : T(0);
  for (Index i = 0; i < n; ++i) dx[i] += scale * (x[i] - target[i]);
}

}  // namespace darkbert::ops
