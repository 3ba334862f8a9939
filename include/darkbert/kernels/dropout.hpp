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
/// @endcode

#include <omp.h>  // omp_in_parallel

#include <cstdint>  // std::uint64_t

#include "../core/counter_rng.hpp"
#include "../core/matrix.hpp"

namespace darkbert::kernels {

/// A dropout mask regenerated from (key, element index) instead of stored.
struct DropoutMask {
  float p = 0;            ///< drop probability; 0 = identity
  std::uint64_t key = 0;  ///< the site's stream

  /// Whether anything is dropped.
  bool active() const { return p > 0; }
  /// Whether element `index` is kept.
  bool keep(std::uint64_t index) const { return counter_uniform(key, index) >= p; }
};

/// x[i] *= mask(first + i) / (1 - p) for i < n. Used on values in the forward and on gradients in the
/// backward.
template <class T>
void dropout_apply(T* x, Index n, Index first, const DropoutMask& m) {
  if (!m.active()) return;
  const T scale = T(1) / (T(1) - static_cast<T>(m.p));
#pragma omp parallel for schedule(static) if (n > (1 << 15) && !omp_in_parallel())
  for (Index i = 0; i < n; ++i) x[i] = m.keep(static_cast<std::uint64_t>(first + i)) ? x[i] * scale : T(0);
}

}  // namespace darkbert::kernels
