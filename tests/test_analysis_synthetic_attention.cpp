// Seeded random attention maps are valid attention maps (rows sum to 1 over allowed keys, zero elsewhere, padding
// rows attend to the valid keys), reproducible from the seed, and bad shapes are refused.

#include <doctest/doctest.h>

#include <random>  // std::mt19937_64
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/attention_view.hpp"
#include "darkbert/analysis/synthetic_attention.hpp"

using namespace darkbert;

TEST_CASE_TEMPLATE("random maps have the structure of a model's maps", T, float, double) {
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    std::mt19937_64 rng(3);
    std::vector<T> m(2 * 3 * 7 * 7);
    fill_random_attention<T>(m, 2, 3, 7, 5, causal, rng);
    AttentionView<T>::contiguous(m.data(), 2, 3, 7, 5, causal).validate(1e-5);
    for (Index g = 0; g < 6; ++g)
      for (Index i = 0; i < 7; ++i) {
        double sum = 0;
        for (Index j = 0; j < 7; ++j) {
          const T w = m[static_cast<std::size_t>((g * 7 + i) * 7 + j)];
          const bool allowed = j < 5 && (!causal || j <= i);
          if (allowed) {
            CHECK(w > T(0));
          } else {
            CHECK(w == T(0));
          }
          sum += double(w);
        }
        CHECK(std::abs(sum - 1.0) < 1e-5);  // padding rows too (i = 5, 6)
      }
  }
}

TEST_CASE("same seed, same maps; other seed, other maps") {
  std::vector<double> a(1 * 1 * 4 * 4), b(a.size()), c(a.size());
  std::mt19937_64 r1(9), r2(9), r3(10);
  fill_random_attention<double>(a, 1, 1, 4, 4, false, r1);
  fill_random_attention<double>(b, 1, 1, 4, 4, false, r2);
  fill_random_attention<double>(c, 1, 1, 4, 4, false, r3);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("bad shapes are refused") {
  std::mt19937_64 rng(1);
  std::vector<float> m(10);
  try {
    fill_random_attention<float>(m, 1, 1, 3, 3, false, rng);
    FAIL("no error");
  } catch (const darkbert::error& e) {
    CHECK(std::string(e.what()) == "fill_random_attention: buffer has 10 values, expected 9");
  }
  try {
    fill_random_attention<float>(m, 1, 1, 3, 4, false, rng);
    FAIL("no error");
  } catch (const darkbert::error& e) {
    CHECK(std::string(e.what()) == "fill_random_attention: valid length 4 must be in [1, 3]");
  }
}
