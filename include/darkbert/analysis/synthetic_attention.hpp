#pragma once
/// @file
/// Seeded random attention maps with the exact structure a model produces — for tests, benchmarks and
/// trying out the metrics without a model. Each query row is a softmax of N(0, spread^2) logits over its
/// allowed keys and exactly 0 elsewhere: keys j < n (padding keys masked), and for causal models j <= i.
/// Padding query rows (i >= n) attend to the non-padding keys like Hugging Face models do.
///
/// @code
/// std::mt19937_64 rng(42);
/// std::vector<float> maps(12 * 12 * 128 * 128);
/// fill_random_attention<float>(maps, 12, 12, 128, /*n=*/97, /*causal=*/false, rng);
/// auto view = AttentionView<float>::contiguous(maps.data(), 12, 12, 128, 97, false);
/// @endcode

#include <algorithm>  // std::max_element, std::min, std::fill
#include <cmath>      // std::exp
#include <cstddef>    // std::size_t
#include <random>     // std::mt19937_64, std::normal_distribution
#include <span>       // std::span

#include "darkbert/core/error.hpp"   // darkbert::require
#include "darkbert/core/matrix.hpp"  // darkbert::Index

namespace darkbert {

/// Fills `out` ([layers, heads, L, L], contiguous) with random valid attention maps of valid length n.
template <class T>
void fill_random_attention(std::span<T> out, Index layers, Index heads, Index padded_length, Index length, bool causal,
                           std::mt19937_64& rng, double spread = 2.0) {
  require(layers >= 1 && heads >= 1 && padded_length >= 1, "fill_random_attention: bad shape ", layers, " x ", heads,
          " x ", padded_length);
  require(length >= 1 && length <= padded_length, "fill_random_attention: valid length ", length,
          " must be in [1, ", padded_length, "]");
  require(out.size() == static_cast<std::size_t>(layers * heads * padded_length * padded_length),
          "fill_random_attention: buffer has ", out.size(), " values, expected ",
          layers * heads * padded_length * padded_length);
  std::normal_distribution<double> logit(0.0, spread);
  const Index L = padded_length;
  for (Index m = 0; m < layers * heads; ++m)
    for (Index i = 0; i < L; ++i) {
      T* row = out.data() + (m * L + i) * L;
      std::fill(row, row + L, T(0));
      const Index keys = causal ? std::min(i + 1, length) : length;
      double sum = 0;
      for (Index j = 0; j < keys; ++j) {
        const double w = std::exp(logit(rng));
        row[j] = static_cast<T>(w);
        sum += w;
      }
      for (Index j = 0; j < keys; ++j) row[j] = static_cast<T>(static_cast<double>(row[j]) / sum);
    }
}

}  // namespace darkbert
