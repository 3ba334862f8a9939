#pragma once
/// @file
/// Seeded, platform-independent shuffles for data splits and training order.
///
/// @code
/// auto order = darkbert::seeded_permutation(5463, 20190820);   // same order with every compiler
/// @endcode
///
/// std::shuffle and std::uniform_int_distribution are implementation-defined (libstdc++ and libc++ give
/// different orders for one seed), so both steps are spelled out: a 64-bit Mersenne Twister
/// (std::mt19937_64, fully specified by the standard), an unbiased bounded integer by rejection, and a
/// Fisher-Yates shuffle from the last position down.

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t
#include <random>   // std::mt19937_64
#include <utility>  // std::swap
#include <vector>   // std::vector

namespace darkbert {

/// Unbiased integer in [0, n), n >= 1: draws are rejected above the largest multiple of n.
inline std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t max = ~std::uint64_t{0};
  const std::uint64_t limit = max - (max % n + 1) % n;  // = n * floor(2^64 / n) - 1
  while (true) {
    const std::uint64_t x = rng();
    if (x <= limit) return x % n;
  }
}

/// A permutation of 0..n-1: Fisher-Yates with j = uniform_below(rng, i + 1) for i = n-1 down to 1.
inline std::vector<std::size_t> seeded_permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
  return order;
}

}  // namespace darkbert
