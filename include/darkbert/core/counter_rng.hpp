#pragma once
/// @file
/// A counter-based random generator: the n-th number of stream `key` is a pure function hash(key, n).
/// Dropout masks drawn this way do not depend on the thread count or on the order threads run, and the
/// backward pass regenerates them instead of storing them.
///
/// @code
/// const auto key = darkbert::stream_key(seed, step, site);
/// bool keep = darkbert::counter_uniform(key, i) >= p;   // element i of the mask
/// @endcode

#include <cstdint>  // std::uint64_t

namespace darkbert {

/// SplitMix64's finaliser: a bijective mix of 64 bits (Steele, Lea & Flood 2014).
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// One stream per (seed, step, site): e.g. the attention dropout of layer 3 at training step 1200.
constexpr std::uint64_t stream_key(std::uint64_t seed, std::uint64_t step, std::uint64_t site) {
  return mix64(mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ step) + site * 0x9e3779b97f4a7c15ULL);
}

/// The n-th 64-bit number of stream `key`.
constexpr std::uint64_t counter_bits(std::uint64_t key, std::uint64_t n) { return mix64(key + n * 0x9e3779b97f4a7c15ULL); }

/// Uniform in [0, 1) with 24 bits of resolution (enough for dropout probabilities): the top 24 bits of
/// counter_bits over 2^24.
constexpr float counter_uniform(std::uint64_t key, std::uint64_t n) {
  return static_cast<float>(counter_bits(key, n) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace darkbert
