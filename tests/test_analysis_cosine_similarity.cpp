// Cosine similarity of attention maps per head, checked on hand-computed small maps with padding (n < L, padding
// cells NaN so any leak shows) and a causal map, plus dataset averaging and error messages.

#include <doctest/doctest.h>

#include <cmath>   // NAN, std::sqrt
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/cosine_similarity.hpp"
#include "test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;

namespace {
// [1 layer, 2 heads, L = 3, L = 3] with the valid 2 x 2 blocks given row-major; padding = NaN.
template <class T>
std::vector<T> padded_2x2(const std::vector<T>& head0, const std::vector<T>& head1) {
  const T N = T(NAN);
  return {head0[0], head0[1], N, head0[2], head0[3], N, N, N, N,
          head1[0], head1[1], N, head1[2], head1[3], N, N, N, N};
}
}  // namespace

TEST_CASE_TEMPLATE("hand-checked cosine similarity with padding", T, float, double) {
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-15;
  // head 0: A = [[1, 0], [.5, .5]], B = [[.5, .5], [.5, .5]]
  //   dot = .5 + 0 + .25 + .25 = 1; |A|^2 = 1 + .25 + .25 = 1.5; |B|^2 = 1  ->  cos = 1/sqrt(1.5) = 0.8164965809277261
  // head 1: identical maps -> 1
  const auto a = padded_2x2<T>({1, 0, .5, .5}, {.25, .75, 1, 0});
  const auto b = padded_2x2<T>({.5, .5, .5, .5}, {.25, .75, 1, 0});
  const auto va = AttentionView<T>::contiguous(a.data(), 1, 2, 3, 2, false);
  const auto vb = AttentionView<T>::contiguous(b.data(), 1, 2, 3, 2, false);
  const auto m = head_cosine_similarity(va, vb);
  CHECK(m.rows() == 1);
  CHECK(m.cols() == 2);
  CHECK(m.name == "attention_cosine_similarity");
  CHECK(std::abs(double(m(0, 0)) - 0.8164965809277261) < tol);
  CHECK(std::abs(double(m(0, 1)) - 1.0) < tol);

  // Causal n = 3: A = [[1], [.5, .5], [.2, .3, .5]], B = [[1], [1, 0], [1/3, 1/3, 1/3]] (zeros above the diagonal)
  //   dot = 1 + .5 + 1/3 = 1.8333; |A|^2 = 1 + .5 + .38 = 1.88; |B|^2 = 1 + 1 + 1/3
  //   numpy: (A*B).sum()/sqrt((A*A).sum()*(B*B).sum()) = 0.8753346443589418
  const T third = T(1) / T(3);
  const std::vector<T> ca = {1, 0, 0, .5, .5, 0, .2, .3, .5};
  const std::vector<T> cb = {1, 0, 0, 1, 0, 0, third, third, third};
  const auto causal = head_cosine_similarity(AttentionView<T>::contiguous(ca.data(), 1, 1, 3, 3, true),
                                             AttentionView<T>::contiguous(cb.data(), 1, 1, 3, 3, true));
  CHECK(std::abs(double(causal(0, 0)) - 0.8753346443589418) < tol);
}

TEST_CASE_TEMPLATE("dataset mean: every example weighs the same", T, float, double) {
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-15;
  const auto a = padded_2x2<T>({1, 0, .5, .5}, {.25, .75, 1, 0});
  const auto b = padded_2x2<T>({.5, .5, .5, .5}, {.25, .75, 1, 0});
  const auto c = padded_2x2<T>({1, 0, 0, 1}, {0, 1, 1, 0});
  CosineSimilarityAccumulator<T> acc(1, 2, "drift");
  acc.add(AttentionView<T>::contiguous(a.data(), 1, 2, 3, 2, false),
          AttentionView<T>::contiguous(b.data(), 1, 2, 3, 2, false));
  acc.add(AttentionView<T>::contiguous(a.data(), 1, 2, 3, 2, false),
          AttentionView<T>::contiguous(c.data(), 1, 2, 3, 2, false));
  // head 0, second example: A = [[1,0],[.5,.5]], C = [[1,0],[0,1]]: dot 1.5, |A|^2 1.5, |C|^2 2 -> 1.5/sqrt(3)
  // head 1, second example: A = [[.25,.75],[1,0]], C = [[0,1],[1,0]]: dot 0 + .75 + 1 + 0 = 1.75,
  //   |A|^2 = .0625 + .5625 + 1 = 1.625, |C|^2 = 2 -> 1.75 / sqrt(3.25)
  const auto m = acc.result();
  CHECK(m.name == "drift");
  CHECK(m.examples == 2);
  CHECK(acc.examples() == 2);
  CHECK(std::abs(double(m(0, 0)) - (0.8164965809277261 + 1.5 / std::sqrt(3.0)) / 2) < tol);
  CHECK(std::abs(double(m(0, 1)) - (1.0 + 1.75 / std::sqrt(3.25)) / 2) < tol);
  CHECK(acc.memory_bytes() > 0);
}

TEST_CASE("cosine similarity errors") {
  std::vector<double> a = padded_2x2<double>({1, 0, .5, .5}, {.25, .75, 1, 0});
  std::vector<double> zero = padded_2x2<double>({0, 0, 0, 0}, {.25, .75, 1, 0});
  const auto va = AttentionView<double>::contiguous(a.data(), 1, 2, 3, 2, false);
  CHECK(message_of([&] {
          head_cosine_similarity(va, AttentionView<double>::contiguous(zero.data(), 1, 2, 3, 2, false));
        }) == "cosine similarity: layer 0 head 0: second attention map is all zero over the valid block");
  CHECK(message_of([&] {
          head_cosine_similarity(va, AttentionView<double>::contiguous(a.data(), 1, 2, 3, 1, false));
        }) == "cosine similarity: first maps have valid length 2, second 1 (must be the same example)");
  CHECK(message_of([&] {
          head_cosine_similarity(va, AttentionView<double>::contiguous(a.data(), 1, 1, 3, 2, false));
        }) == "cosine similarity: first maps have 1 layers x 2 heads, second maps 1 x 1");
  CosineSimilarityAccumulator<double> acc(2, 2);
  CHECK(message_of([&] { acc.add(va, va); }) ==
        "cosine similarity: attention maps have 1 layers x 2 heads, expected 2 x 2");
  CHECK(std::isnan(acc.result()(0, 0)));  // no example added
}
