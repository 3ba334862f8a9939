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
///
/// On the avx2 path (core/kernel_dispatch.hpp) float rows run in AVX2 intrinsics whatever flags the
/// consumer compiled with; their sums over a row take fixed_order_sum's order (element c into partial sum
/// c % 16, then pairwise), so a row's result depends on its values alone. Elsewhere, plain loops that sum
/// in column order.

#include <omp.h>  // omp_in_parallel

#include <cmath>        // std::sqrt
#include <type_traits>  // std::is_same_v

#include "../core/kernel_dispatch.hpp"  // kernel_path, DARKBERT_AVX2_TARGET
#include "../core/matrix.hpp"
#include "../core/threads.hpp"  // for_column_blocks
#if DARKBERT_HAS_AVX2_KERNEL
#include "../core/detail/vector_math_avx2.hpp"  // load_first, store_first, fixed_order_lane_sum_avx2
#endif

namespace darkbert::kernels {

/// Per-row statistics saved by a training forward: mean[rows], rstd[rows] (may be null: not saved).
template <class T>
struct NormStats {
  T* mean = nullptr;  ///<  [rows]
  T* rstd = nullptr;  ///<  [rows] 1 / sqrt(var + eps)
};

namespace detail {
#if DARKBERT_HAS_AVX2_KERNEL
DARKBERT_INTRINSICS_WARNINGS_OFF
/// One row of add_layer_norm_forward_raw on the avx2 path: the same two passes (sum, then squared
/// deviations), each summed in fixed_order_sum's order; returns mean and rstd through the references.
DARKBERT_AVX2_TARGET inline void add_layer_norm_row_avx2(const float* x, const float* residual, float* sum_out,
                                                         float* out, Index cols, const float* w, const float* b,
                                                         float eps, float& mean_out, float& rstd_out) {
  using namespace darkbert::detail::avx2;
  // out doubles as the buffer for the sum, so x may alias out (in-place residual update).
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();  // partial sums of lanes 0-7 and 8-15
  for (Index c = 0; c < cols; c += 16)
    for (Index half = 0; half < 16; half += 8) {
      const Index n = cols - c - half;  // lanes past it load 0
      __m256 v = load_first(x + c + half, n);
      if (residual) v = _mm256_add_ps(v, load_first(residual + c + half, n));
      store_first(out + c + half, n, v);
      if (sum_out) store_first(sum_out + c + half, n, v);
      if (half == 0) lo = _mm256_add_ps(lo, v);
      else hi = _mm256_add_ps(hi, v);
    }
  const float mean = fixed_order_lane_sum_avx2(lo, hi) / static_cast<float>(cols);
  const __m256 vmean = _mm256_set1_ps(mean);
  lo = hi = _mm256_setzero_ps();
  for (Index c = 0; c < cols; c += 16)
    for (Index half = 0; half < 16; half += 8) {
      const Index n = cols - c - half;
      const __m256 d = _mm256_and_ps(_mm256_sub_ps(load_first(out + c + half, n), vmean),
                                     _mm256_castsi256_ps(first_lanes(n)));  // 0 past the row's end, not -mean
      if (half == 0) lo = _mm256_fmadd_ps(d, d, lo);
      else hi = _mm256_fmadd_ps(d, d, hi);
    }
  const float var = fixed_order_lane_sum_avx2(lo, hi) / static_cast<float>(cols);
  const float inv = 1.0f / std::sqrt(var + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (Index c = 0; c < cols; c += 8) {
    const Index n = cols - c;
    const __m256 normed = _mm256_mul_ps(_mm256_sub_ps(load_first(out + c, n), vmean), vinv);
    store_first(out + c, n, _mm256_fmadd_ps(normed, load_first(w + c, n), load_first(b + c, n)));
  }
  mean_out = mean;
  rstd_out = inv;
}

/// dweight[c0, c1) += Σ_rows dy · x̂ and dbias[c0, c1) += Σ_rows dy on the avx2 path: each column summed
/// over rows in increasing order, as in the plain loop.
DARKBERT_AVX2_TARGET inline void layer_norm_parameter_grads_avx2(const float* x, const float* mean, const float* rstd,
                                                                 const float* dy, Index rows, Index cols, Index c0,
                                                                 Index c1, float* dw, float* db) {
  using namespace darkbert::detail::avx2;
  for (Index r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* gr = dy + r * cols;
    const __m256 m = _mm256_set1_ps(mean[r]), s = _mm256_set1_ps(rstd[r]);
    for (Index c = c0; c < c1; c += 8) {
      const Index n = c1 - c;
      const __m256 g = load_first(gr + c, n);
      const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load_first(xr + c, n), m), s);
      store_first(dw + c, n, _mm256_fmadd_ps(g, xhat, load_first(dw + c, n)));
      store_first(db + c, n, _mm256_add_ps(load_first(db + c, n), g));
    }
  }
}

/// One row of layer_norm_backward_raw's dx on the avx2 path: both means in fixed_order_sum's order.
DARKBERT_AVX2_TARGET inline void layer_norm_dx_row_avx2(const float* xr, float mean, float rstd, const float* gr,
                                                        Index cols, const float* w, float* out, bool accumulate) {
  using namespace darkbert::detail::avx2;
  const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(rstd);
  __m256 g_lo = _mm256_setzero_ps(), g_hi = _mm256_setzero_ps(), gx_lo = _mm256_setzero_ps(), gx_hi = _mm256_setzero_ps();
  for (Index c = 0; c < cols; c += 16)
    for (Index half = 0; half < 16; half += 8) {
      const Index n = cols - c - half;  // lanes past it load 0: g = 0 there
      const __m256 g = _mm256_mul_ps(load_first(gr + c + half, n), load_first(w + c + half, n));
      const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load_first(xr + c + half, n), m), s);
      if (half == 0) {
        g_lo = _mm256_add_ps(g_lo, g);
        gx_lo = _mm256_fmadd_ps(g, xhat, gx_lo);
      } else {
        g_hi = _mm256_add_ps(g_hi, g);
        gx_hi = _mm256_fmadd_ps(g, xhat, gx_hi);
      }
    }
  const __m256 g_mean = _mm256_set1_ps(fixed_order_lane_sum_avx2(g_lo, g_hi) / static_cast<float>(cols));
  const __m256 gx_mean = _mm256_set1_ps(fixed_order_lane_sum_avx2(gx_lo, gx_hi) / static_cast<float>(cols));
  for (Index c = 0; c < cols; c += 8) {
    const Index n = cols - c;
    const __m256 g = _mm256_mul_ps(load_first(gr + c, n), load_first(w + c, n));
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load_first(xr + c, n), m), s);
    // rstd · (g - mean(g) - x̂ · mean(g x̂))
    __m256 v = _mm256_mul_ps(s, _mm256_fnmadd_ps(xhat, gx_mean, _mm256_sub_ps(g, g_mean)));
    if (accumulate) v = _mm256_add_ps(load_first(out + c, n), v);
    store_first(out + c, n, v);
  }
}
DARKBERT_INTRINSICS_WARNINGS_ON
#endif

/// Whether float rows of LayerNorm run on the avx2 path's intrinsics in this process.
template <class T>
bool layer_norm_on_avx2() {
  if constexpr (std::is_same_v<T, float>) return DARKBERT_HAS_AVX2_KERNEL && kernel_path() == KernelPath::avx2;
  else return false;
}
}  // namespace detail

/// out = LayerNorm(x + residual) row by row with gain w and shift b; residual and sum_out (which
/// receives x + residual) may be null. [rows, cols] -> [rows, cols].
template <class T>
void add_layer_norm_forward_raw(const T* x, const T* residual, T* sum_out, T* out, Index rows, Index cols, const T* w,
                                const T* b, double eps, NormStats<T> stats = {}) {
#if DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if (detail::layer_norm_on_avx2<T>()) {
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
      for (Index r = 0; r < rows; ++r) {
        float mean = 0, rstd = 0;
        detail::add_layer_norm_row_avx2(x + r * cols, residual ? residual + r * cols : nullptr,
                                        sum_out ? sum_out + r * cols : nullptr, out + r * cols, cols, w, b,
                                        static_cast<float>(eps), mean, rstd);
        if (stats.mean) {
          stats.mean[r] = mean;
          stats.rstd[r] = rstd;
        }
      }
      return;
    }
  }
#endif
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
#if DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if (detail::layer_norm_on_avx2<T>()) {
      if (dw)  // first, since dx may overwrite dy
        for_column_blocks(cols, parallel, [&](Index c0, Index c1) {
          detail::layer_norm_parameter_grads_avx2(x, stats.mean, stats.rstd, dy, rows, cols, c0, c1, dw, db);
        });
      if (!dx) return;
#pragma omp parallel for schedule(static) if (parallel)
      for (Index r = 0; r < rows; ++r)
        detail::layer_norm_dx_row_avx2(x + r * cols, stats.mean[r], stats.rstd[r], dy + r * cols, cols, w, dx + r * cols,
                                       accumulate);
      return;
    }
  }
#endif
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
