#pragma once
/// @file
/// An element-wise Eigen array function (exp, tanh, a GELU) whose rounding never depends on the buffer's
/// address: the companion of fixed_order_sum for maps rather than sums.
///
/// Eigen evaluates `Map<Array>(p, n) = f(...)` with its packet code only from the first vector-aligned
/// element on, and the elements before it and after the last whole packet with scalar code (std::exp,
/// std::tanh, a separate multiply and add where the packet code fuses them or the other way round). The
/// two give different last bits, so the same row at another address (an attention map kept in the
/// result, or one in the lean forward's scratch) came out different. transform_in_aligned_chunks copies
/// the values into a 64-byte aligned buffer padded with zeros to whole 16-element blocks (a whole number of
/// packets for every vector width), so every element goes through the packet code.
///
/// @code
/// // row[j] = exp(row[j] - max) for j < n, the same bits wherever row lives
/// darkbert::transform_in_aligned_chunks(row, row, n, [&](auto chunk) { chunk = (chunk - max).exp(); });
/// @endcode

#include <algorithm>  // std::copy, std::fill, std::min
#include <cstdint>    // std::uintptr_t

#include <Eigen/Core>  // Eigen::Map, Eigen::Array, Eigen::Aligned64

#include "kernel_dispatch.hpp"  // DARKBERT_INTRINSICS_WARNINGS_OFF
#include "matrix.hpp"           // Index

namespace darkbert {

/// Elements per chunk of transform_in_aligned_chunks (a multiple of 16).
inline constexpr Index kAlignedChunk = 256;

/// The chunk that transform_in_aligned_chunks hands to its function: a 64-byte aligned array whose length is
/// a multiple of 16.
template <class T>
using AlignedChunk = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Aligned64>;

DARKBERT_INTRINSICS_WARNINGS_OFF
/// y[0..n) = f(x[0..n)), chunk by chunk: each chunk of x is copied into an aligned buffer (padded with
/// zeros), `f(AlignedChunk<T> chunk)` assigns an Eigen array expression of `chunk` to `chunk`, and the first
/// elements go to y. y is x or does not overlap it. Each element's result depends on its value alone (see the
/// top of this header); f must be element-wise.
template <class T, class F>
void transform_in_aligned_chunks(const T* x, T* y, Index n, F&& f) {
  if (n % 16 == 0 && reinterpret_cast<std::uintptr_t>(y) % 64 == 0) {
    // y is already what the buffer would be (aligned, whole 16-element blocks): the same packet code runs
    // on the same values, so the copies are skipped. Short rows (a GELU epilogue's 32-column tile) gain most.
    if (x != y) std::copy(x, x + n, y);
    for (Index first = 0; first < n; first += kAlignedChunk)
      f(AlignedChunk<T>(y + first, std::min(kAlignedChunk, n - first)));
    return;
  }
  alignas(64) T buffer[kAlignedChunk];
  for (Index first = 0; first < n; first += kAlignedChunk) {
    const Index m = std::min(kAlignedChunk, n - first);
    const Index padded = (m + 15) / 16 * 16;
    std::copy(x + first, x + first + m, buffer);
    std::fill(buffer + m, buffer + padded, T(0));
    f(AlignedChunk<T>(buffer, padded));
    std::copy(buffer, buffer + m, y + first);
  }
}
DARKBERT_INTRINSICS_WARNINGS_ON

}  // namespace darkbert
