// Per-head attention products (kernels/attention.hpp) against a naive double reference, on shapes the
// tile kernel handles only partly: lengths and head sizes that are not multiples of its 12 × 32 tile,
// padding keys and the causal mask. Also: a map and its context have the same bits wherever the map lives
// (the result's attentions or the lean forward's scratch), on every kernel path; a causal head's context
// counts what a policy wrote above the diagonal.
#include <doctest/doctest.h>

#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <utility>  // std::pair
#include <vector>

#include "darkbert/core/tensor.hpp"  // AlignedAllocator
#include "darkbert/core/threads.hpp"
#include "darkbert/kernels/attention.hpp"

namespace {
using darkbert::Index;

template <class T>
void check_attention(Index B, Index L, Index heads, Index d, bool causal, double tolerance) {
  CAPTURE(L);
  CAPTURE(d);
  CAPTURE(causal);
  const darkbert::kernels::AttentionShape s{B, L, heads, d, causal};
  const Index H = s.hidden();
  std::mt19937_64 rng(static_cast<std::uint64_t>(L * 100 + d));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> qkv(static_cast<std::size_t>(B * L * 3 * H));
  for (auto& v : qkv) v = static_cast<T>(normal(rng));
  std::vector<int> mask(static_cast<std::size_t>(B * L), 1);
  for (Index j = L - L / 3; j < L; ++j) mask[static_cast<std::size_t>(L + j)] = 0;  // sequence 1 padded
  std::vector<T> maps(static_cast<std::size_t>(B * heads * L * L)), ctx(static_cast<std::size_t>(B * L * H), T(-7));
  darkbert::kernels::AttentionScratch scratch;
  scratch.prepare(s, darkbert::num_threads());
  const T scale = T(1) / std::sqrt(T(d));
#pragma omp parallel for schedule(dynamic)
  for (Index p = 0; p < B * heads; ++p) {
    darkbert::kernels::attention_scores(qkv.data(), mask.data(), maps.data(), s, p / heads, p % heads, scale, scratch);
    darkbert::kernels::attention_softmax(maps.data(), s, p / heads, p % heads);
    darkbert::kernels::attention_context(qkv.data(), maps.data(), ctx.data(), s, p / heads, p % heads, scratch);
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

TEST_CASE("a causal head's context reads every nonzero of its map, also above the diagonal") {
  // A causal softmax leaves the future exactly 0 and the tile kernel skips it; a masking policy or hook
  // may write there, and then those entries count.
  for (Index L : {5, 37, 70})
    for (Index written : {Index(-1), Index(0), Index(2)}) {  // the row given one future entry (-1: none)
      CAPTURE(L);
      CAPTURE(written);
      const Index d = 24;
      const darkbert::kernels::AttentionShape s{1, L, 1, d, true};
      std::mt19937_64 rng(static_cast<std::uint64_t>(L));
      std::uniform_real_distribution<double> u(0.0, 1.0);
      std::vector<float> qkv(static_cast<std::size_t>(L * 3 * d)), P(static_cast<std::size_t>(L * L), 0.0f);
      for (auto& v : qkv) v = static_cast<float>(u(rng) - 0.5);
      for (Index i = 0; i < L; ++i)
        for (Index j = 0; j <= i; ++j) P[i * L + j] = static_cast<float>(u(rng));
      if (written >= 0) P[written * L + L - 1] = 0.5f;
      const Index reach = written >= 0 && written < L - 1 ? L - 1 - written : 0;
      CHECK(darkbert::kernels::causal_reach(P.data(), L) == reach);
      std::vector<float> ctx(static_cast<std::size_t>(L * d));
      darkbert::kernels::AttentionScratch scratch;
      scratch.prepare(s, darkbert::num_threads());
      darkbert::kernels::attention_context_from(qkv.data(), P.data(), ctx.data(), s, 0, 0, scratch);
      double worst = 0;
      for (Index i = 0; i < L; ++i)
        for (Index k = 0; k < d; ++k) {
          double c = 0;
          for (Index j = 0; j < L; ++j) c += double(P[i * L + j]) * double(qkv[j * 3 * d + 2 * d + k]);
          worst = std::max(worst, std::abs(double(ctx[i * d + k]) - c));
        }
      CHECK(worst < 1e-5);
    }
}

namespace {
// Scores, softmax and context of every (b, h) pair with the maps `offset` elements into their buffer.
template <class T>
std::pair<std::vector<T>, std::vector<T>> attention_at(const darkbert::kernels::AttentionShape& s, const std::vector<T>& qkv,
                                                       const std::vector<int>& mask, Index offset) {
  std::vector<T, darkbert::AlignedAllocator<T>> buffer(static_cast<std::size_t>(s.batch * s.heads * s.map_size() + offset));
  T* maps = buffer.data() + offset;
  std::vector<T> ctx(static_cast<std::size_t>(s.batch * s.length * s.hidden()));
  darkbert::kernels::AttentionScratch scratch;
  scratch.prepare(s, 1);
  const T scale = T(1) / std::sqrt(T(s.head_dim));
  for (Index p = 0; p < s.batch * s.heads; ++p) {
    darkbert::kernels::attention_scores(qkv.data(), mask.data(), maps, s, p / s.heads, p % s.heads, scale, scratch);
    darkbert::kernels::attention_softmax(maps, s, p / s.heads, p % s.heads);
    darkbert::kernels::attention_context(qkv.data(), maps, ctx.data(), s, p / s.heads, p % s.heads, scratch);
  }
  return {std::vector<T>(maps, maps + s.batch * s.heads * s.map_size()), ctx};
}

template <class T>
void check_address_independence(Index L, Index d, bool causal) {
  CAPTURE(L);
  CAPTURE(d);
  CAPTURE(causal);
  const darkbert::kernels::AttentionShape s{2, L, 2, d, causal};
  std::mt19937_64 rng(static_cast<std::uint64_t>(L * 7 + d));
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<T> qkv(static_cast<std::size_t>(2 * L * 3 * s.hidden()));
  for (auto& v : qkv) v = static_cast<T>(normal(rng));
  std::vector<int> mask(static_cast<std::size_t>(2 * L), 1);
  mask.back() = 0;  // sequence 1 ends in a padding key
  const auto reference = attention_at<T>(s, qkv, mask, 0);
  for (Index offset = 1; offset < 16; ++offset) {
    CAPTURE(offset);
    const auto moved = attention_at<T>(s, qkv, mask, offset);
    CHECK(moved.first == reference.first);
    CHECK(moved.second == reference.second);
  }
}
}  // namespace

TEST_CASE("attention maps and contexts have the same bits wherever the maps live") {
  // Short maps (Eigen evaluates tiny products coefficient-wise), rows longer than a vector (the softmax's
  // exp peeled at unaligned starts), and a ragged length on the tile kernel.
  for (bool causal : {false, true})
    for (Index L : {3, 5, 37})
      for (Index d : {8, 24}) {
        check_address_independence<float>(L, d, causal);
        check_address_independence<double>(L, d, causal);
      }
}

#if DARKBERT_HAS_AVX2_KERNEL
TEST_CASE("softmax rows on the avx2 path, forward and backward: a double reference, any address, the avx512 path's bits") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the avx2 path cannot be tested here");
  namespace d = darkbert::kernels::detail;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0.0, 3.0);
  for (Index L : {1, 7, 8, 9, 15, 16, 17, 40, 128}) {
    CAPTURE(L);
    std::vector<float> scores(static_cast<std::size_t>(L)), grad(static_cast<std::size_t>(L));
    for (auto& v : scores) v = static_cast<float>(normal(rng));
    for (auto& v : grad) v = static_cast<float>(normal(rng));
    if (L > 2) scores[1] = std::numeric_limits<float>::lowest();  // a padding key
    std::vector<float> first_p, first_g;
    for (Index offset = 0; offset < 8; ++offset) {
      CAPTURE(offset);
      std::vector<float, darkbert::AlignedAllocator<float>> row(scores.size() + 16, -3.0f), g(scores.size() + 16, -3.0f);
      std::copy(scores.begin(), scores.end(), row.begin() + offset);
      std::copy(grad.begin(), grad.end(), g.begin() + offset);
      d::softmax_row_avx2(row.data() + offset, L);
      d::softmax_backward_row_avx2(row.data() + offset, g.data() + offset, L, 0.5f);
      for (Index i = 0; i < Index(row.size()); ++i)
        if (i < offset || i >= offset + L) REQUIRE((row[i] == -3.0f && g[i] == -3.0f));  // only the row is written
      const std::vector<float> p(row.begin() + offset, row.begin() + offset + L), dg(g.begin() + offset, g.begin() + offset + L);
      if (offset > 0) {
        CHECK(p == first_p);  // the same bits at any address
        CHECK(dg == first_g);
        continue;
      }
      double max = scores[0], sum = 0, dot = 0;
      for (float v : scores) max = std::max(max, double(v));
      std::vector<double> expected(static_cast<std::size_t>(L));
      for (Index j = 0; j < L; ++j) sum += expected[j] = std::exp(double(scores[j]) - max);
      for (Index j = 0; j < L; ++j) dot += double(grad[j]) * (expected[j] /= sum);
      for (Index j = 0; j < L; ++j) {
        REQUIRE(std::abs(p[j] - expected[j]) <= 1e-6 * expected[j] + 1e-9);
        REQUIRE(std::abs(dg[j] - 0.5 * expected[j] * (grad[j] - dot)) <= 1e-5 * (1 + std::abs(grad[j])) * expected[j] + 1e-9);
      }
      first_p = p;
      first_g = dg;
#if DARKBERT_HAS_AVX512_KERNEL
      if (darkbert::cpu_has_avx512()) {  // the same exp and the same order of sums: the same bits
        std::vector<float> p512 = scores;
        d::softmax_row_avx512(p512.data(), L);
        CHECK(p512 == p);
      }
#endif
    }
  }
}
#endif
