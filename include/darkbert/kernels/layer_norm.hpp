#pragma once
/// @file
/// LayerNorm over the feature axis, optionally fused with the residual add that precedes it, and its
/// backward:
/// @code
/// sum = x + residual          (kept when `sum_out` is given: the pre-LN residual stream)
/// out = (sum - mean) / sqrt(var + eps) * weight + bias
/// @endcode
/// Shapes: x, residual, sum_out, out are [rows, cols] row-major; weight, bias [cols]; the statistics a
/// training pass saves are [rows] (mean, then 1 / sqrt(var + eps)). Raw buffers only: the overloads on a
/// model's LayerNormParams<T> are in model/layers.hpp.

#include <omp.h>  // omp_in_parallel

#include <cmath>      // std::sqrt

#include "../core/matrix.hpp"
#include "../core/threads.hpp"  // for_column_blocks

namespace darkbert::kernels {

/// Per-row statistics saved by a training forward: mean[rows], rstd[rows] (may be null: not saved).
template <class T>
struct NormStats {
  T* mean = nullptr;  ///<  [rows]
  T* rstd = nullptr;  ///<  [rows] 1 / sqrt(var + eps)
};

/// out = LayerNorm(x + residual) row by row with gain w and shift b; residual and sum_out (which
/// receives x + residual) may be null. [rows, cols] -> [rows, cols].
template <class T>
void add_layer_norm_forward_raw(const T* x, const T* residual, T* sum_out, T* out, Index rows, Index cols, const T* w,
                                const T* b, double eps, NormStats<T> stats = {}) {
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
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
    if (stats.mean) {
      stats.mean[r] = mean;
      stats.rstd[r] = inv;
    }
    for (Index c = 0; c < cols; ++c) orow[c] = (orow[c] - mean) * inv * w[c] + b[c];
  }
}

/// Backward of out = LN(x) with x̂ = (x - mean) · rstd, given x and the saved statistics:
/// @code
/// dx     = rstd · (g - mean(g) - x̂ · mean(g · x̂)),  g = dy · weight     (dx += when accumulate)
/// dweight += Σ_rows dy · x̂,   dbias += Σ_rows dy                          (grad may be null: frozen)
/// @endcode
/// dx may alias dy. The parameter sums run over column blocks with rows in increasing order, so they do
/// not depend on the thread count.
template <class T>
void layer_norm_backward_raw(const T* x, NormStats<T> stats, const T* dy, Index rows, Index cols, const T* w, T* dw,
                             T* db, T* dx, bool accumulate = false) {
  const bool parallel = rows * cols > (1 << 14) && !omp_in_parallel();
  if (dw) {  // first, since dx may overwrite dy
    for_column_blocks(cols, parallel, [&](Index c0, Index c1) {
      for (Index r = 0; r < rows; ++r) {
        const T* xr = x + r * cols;
        const T* gr = dy + r * cols;
        const T mean = stats.mean[r], rstd = stats.rstd[r];
#pragma omp simd
        for (Index c = c0; c < c1; ++c) {
          dw[c] += gr[c] * (xr[c] - mean) * rstd;
          db[c] += gr[c];
        }
      }
    });
  }
  if (!dx) return;
#pragma omp parallel for schedule(static) if (parallel)
  for (Index r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* gr = dy + r * cols;
    T* out = dx + r * cols;
    const T mean = stats.mean[r], rstd = stats.rstd[r];
    T g_mean = 0, gx_mean = 0;
    for (Index c = 0; c < cols; ++c) {
      const T g = gr[c] * w[c];
      g_mean += g;
      gx_mean += g * (xr[c] - mean) * rstd;
    }
    g_mean /= static_cast<T>(cols);
    gx_mean /= static_cast<T>(cols);
    for (Index c = 0; c < cols; ++c) {
      const T v = rstd * (gr[c] * w[c] - g_mean - (xr[c] - mean) * rstd * gx_mean);
      out[c] = accumulate ? out[c] + v : v;
    }
  }
}

}  // namespace darkbert::kernels
