// Per-head attention products (model/ops/attention.hpp) against a naive double reference, on shapes the
// tile kernel handles only partly: lengths and head sizes that are not multiples of its 12 × 32 tile,
// padding keys and the causal mask. Also: the softmax sum does not depend on the buffer's alignment.
#include <doctest/doctest.h>

#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "darkbert/core/threads.hpp"
#include "darkbert/model/ops/attention.hpp"

namespace {
using darkbert::Index;

template <class T>
void check_attention(Index B, Index L, Index heads, Index d, bool causal, double tolerance) {
  CAPTURE(L);
  CAPTURE(d);
  CAPTURE(causal);
  const darkbert::ops::AttentionShape s{B, L, heads, d, causal};
  const Index H = s.hidden();
  std::mt19937_64 rng(static_cast<std::uint64_t>(L * 100 + d));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> qkv(static_cast<std::size_t>(B * L * 3 * H));
  for (auto& v : qkv) v = static_cast<T>(normal(rng));
  std::vector<int> mask(static_cast<std::size_t>(B * L), 1);
  for (Index j = L - L / 3; j < L; ++j) mask[static_cast<std::size_t>(L + j)] = 0;  // sequence 1 padded
  std::vector<T> maps(static_cast<std::size_t>(B * heads * L * L)), ctx(static_cast<std::size_t>(B * L * H), T(-7));
  darkbert::ops::AttentionScratch scratch;
  scratch.prepare(s, darkbert::num_threads());
  const T scale = T(1) / std::sqrt(T(d));
#pragma omp parallel for schedule(dynamic)
  for (Index p = 0; p < B * heads; ++p) {
    darkbert::ops::attention_scores(qkv.data(), mask.data(), maps.data(), s, p / heads, p % heads, scale, scratch);
    darkbert::ops::attention_softmax(maps.data(), s, p / heads, p % heads);
    darkbert::ops::attention_context(qkv.data(), maps.data(), ctx.data(), s, p / heads, p % heads, scratch);
  }
  double worst_map = 0, worst_ctx = 0;
  for (Index b = 0; b < B; ++b)
    for (Index h = 0; h < heads; ++h)
      for (Index i = 0; i < L; ++i) {
        // Reference: masked scores, softmax, context, in double.
        std::vector<double> score(static_cast<std::size_t>(L));
        double max = -std::numeric_limits<double>::infinity();
        for (Index j = 0; j < L; ++j) {
          double dot = 0;
          for (Index k = 0; k < d; ++k)
            dot += double(qkv[(b * L + i) * 3 * H + h * d + k]) * double(qkv[(b * L + j) * 3 * H + H + h * d + k]);
          score[j] = (causal && j > i) ? -std::numeric_limits<double>::infinity()
                     : mask[b * L + j] ? dot * double(scale)
                                       : double(std::numeric_limits<T>::lowest());
          max = std::max(max, score[j]);
        }
        double sum = 0;
        for (auto& e : score) sum += (e = std::exp(e - max));
        for (Index j = 0; j < L; ++j) {
          const double expected = score[j] / sum;
          worst_map = std::max(worst_map, std::abs(double(maps[s.map_offset(b, h) + i * L + j]) - expected));
        }
        for (Index k = 0; k < d; ++k) {
          double c = 0;
          for (Index j = 0; j < L; ++j) c += score[j] / sum * double(qkv[(b * L + j) * 3 * H + 2 * H + h * d + k]);
          worst_ctx = std::max(worst_ctx, std::abs(double(ctx[(b * L + i) * H + h * d + k]) - c));
        }
      }
  CHECK(worst_map < tolerance);
  CHECK(worst_ctx < tolerance);
}
}  // namespace

TEST_CASE("attention scores, softmax and context match a double reference on ragged shapes") {
  for (bool causal : {false, true})
    for (Index L : {1, 5, 12, 37, 70})
      for (Index d : {4, 24, 64, 40}) {
        check_attention<float>(2, L, 3, d, causal, 2e-5);
        check_attention<double>(2, L, 3, d, causal, 1e-12);
      }
}
