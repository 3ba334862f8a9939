#pragma once
/// @file
/// Inverted dropout with masks from a counter-based generator (core/counter_rng.hpp): element i of a
/// site is kept when counter_uniform(key, i) >= p and then scaled by 1 / (1 - p). The mask is a pure
/// function of (key, i), so the forward and the backward (which regenerates it instead of storing it)
/// agree whatever the thread count.
///
/// @code
/// const kernels::DropoutMask mask{0.1f, darkbert::stream_key(seed, step, site)};
/// kernels::dropout_apply(x, n, 0, mask);      // forward on values, backward on gradients: the same op
/// kernels::dropout_apply(x, y, n, 0, mask);   // the same into y
/// @endcode

#include <algorithm>    // std::copy
#include <cmath>        // std::ceil
#include <cstdint>      // std::uint64_t
#include <type_traits>  // std::is_same_v

#include "../core/counter_rng.hpp"
#include "../core/kernel_dispatch.hpp"  // kernel_path, DARKBERT_AVX512_TARGET, DARKBERT_AVX2_TARGET
#include "../core/matrix.hpp"
#include "../core/threads.hpp"  // for_column_blocks

namespace darkbert::kernels {

/// A dropout mask regenerated from (key, element index) instead of stored.
struct DropoutMask {
  float p = 0;            ///< drop probability; 0 = identity
  std::uint64_t key = 0;  ///< the site's stream

  /// Whether anything is dropped.
  bool active() const { return p > 0; }
  /// Whether element `index` is kept.
  bool keep(std::uint64_t index) const { return counter_uniform(key, index) >= p; }
  /// keep() in integers: the uniform is u / 2^24 for the top 24 bits u of counter_bits, exactly, so it
  /// is at least p when u >= ceil(p · 2^24) (p · 2^24 is exact in double). The vector loops compare this.
  std::uint64_t keep_threshold() const { return static_cast<std::uint64_t>(std::ceil(static_cast<double>(p) * 16777216.0)); }
};

namespace detail {
/// y[i] = keep(first + i) ? x[i] * scale : 0 for i < n, in integer form (keep_threshold); y is x or does not
/// overlap it (the in-place form has its own loop, so neither needs a run-time alias check). Always inlined
/// so that the callers below compile it for their instruction sets, where its 64-bit multiplies vectorise:
/// 6.6x (AVX-512) and 1.4x (AVX2) the scalar loop's elements per second on one Xeon core in a default-flags
/// build (bench_backward, BM_Dropout; with -march=native GCC vectorises the scalar loop for AVX-512 too).
[[gnu::always_inline]] inline void dropout_loop(float* x, Index n, std::uint64_t first, std::uint64_t key,
                                                std::uint64_t threshold, float scale) {
  for (Index i = 0; i < n; ++i)
    x[i] = (counter_bits(key, first + static_cast<std::uint64_t>(i)) >> 40) >= threshold ? x[i] * scale : 0.0f;
}
[[gnu::always_inline]] inline void dropout_loop(const float* __restrict x, float* __restrict y, Index n,
                                                std::uint64_t first, std::uint64_t key, std::uint64_t threshold,
                                                float scale) {
  for (Index i = 0; i < n; ++i)
    y[i] = (counter_bits(key, first + static_cast<std::uint64_t>(i)) >> 40) >= threshold ? x[i] * scale : 0.0f;
}
DARKBERT_AVX512_TARGET inline void dropout_loop_avx512(const float* x, float* y, Index n, std::uint64_t first,
                                                       std::uint64_t key, std::uint64_t threshold, float scale) {
  if (x == y) return dropout_loop(y, n, first, key, threshold, scale);
  dropout_loop(x, y, n, first, key, threshold, scale);
}
DARKBERT_AVX2_TARGET inline void dropout_loop_avx2(const float* x, float* y, Index n, std::uint64_t first,
                                                   std::uint64_t key, std::uint64_t threshold, float scale) {
  if (x == y) return dropout_loop(y, n, first, key, threshold, scale);
  dropout_loop(x, y, n, first, key, threshold, scale);
}
/// The range [first, first + n) of the mask from x into y, on the kernel path's loop (double and the blas
/// path: scalar).
template <class T>
void dropout_range(const T* x, T* y, Index n, std::uint64_t first, const DropoutMask& m, T scale) {
  if constexpr (std::is_same_v<T, float>) {
    if (kernel_path() == KernelPath::avx512) return dropout_loop_avx512(x, y, n, first, m.key, m.keep_threshold(), scale);
    if (kernel_path() == KernelPath::avx2) return dropout_loop_avx2(x, y, n, first, m.key, m.keep_threshold(), scale);
  }
  for (Index i = 0; i < n; ++i) y[i] = m.keep(first + static_cast<std::uint64_t>(i)) ? x[i] * scale : T(0);
}
}  // namespace detail

/// y[i] = x[i] · mask(first + i) / (1 - p) for i < n; y is x or does not overlap it. Used on values in the
/// forward and on gradients in the backward, where the out-of-place form saves the copy of a gradient that
/// is also needed undropped (the residual's share). The same bits on every path, in place or not, and at
/// any thread count: each element's mask and product do not depend on how the range is split.
template <class T>
void dropout_apply(const T* x, T* y, Index n, Index first, const DropoutMask& m) {
  if (n <= 0) return;
  if (!m.active()) {
    if (x != y) std::copy(x, x + n, y);
    return;
  }
  const T scale = T(1) / (T(1) - static_cast<T>(m.p));
  for_column_blocks(n, n > (1 << 15), [&](Index begin, Index end) {
    detail::dropout_range(x + begin, y + begin, end - begin, static_cast<std::uint64_t>(first + begin), m, scale);
  });
}

/// x[i] *= mask(first + i) / (1 - p) for i < n: dropout_apply in place.
template <class T>
void dropout_apply(T* x, Index n, Index first, const DropoutMask& m) {
  dropout_apply(static_cast<const T*>(x), x, n, first, m);
}

}  // namespace darkbert::kernels
