// Seeded permutations: a permutation, reproducible, seed-dependent, unbiased bounded integers.
#include <doctest/doctest.h>

#include <algorithm>  // std::sort
#include <cmath>      // std::abs
#include <random>     // std::mt19937_64
#include <vector>     // std::vector

#include "darkbert/data/seeded_shuffle.hpp"

TEST_CASE("seeded_permutation is a permutation, the same for the same seed, different for another") {
  for (std::size_t n : {0u, 1u, 2u, 17u, 5463u}) {
    auto p = darkbert::seeded_permutation(n, 42);
    CHECK(p == darkbert::seeded_permutation(n, 42));
    auto sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < n; ++i) CHECK(sorted[i] == i);
  }
  CHECK(darkbert::seeded_permutation(100, 1) != darkbert::seeded_permutation(100, 2));
}

TEST_CASE("the algorithm is the documented one: Fisher-Yates from the end with uniform_below") {
  std::mt19937_64 rng(9);
  std::vector<std::size_t> expect = {0, 1, 2, 3, 4, 5, 6};
  for (std::size_t i = expect.size(); i > 1; --i) std::swap(expect[i - 1], expect[darkbert::uniform_below(rng, i)]);
  CHECK(darkbert::seeded_permutation(7, 9) == expect);
}

TEST_CASE("uniform_below stays in range and is close to uniform") {
  std::mt19937_64 rng(3);
  std::vector<int> counts(7, 0);
  const int draws = 70000;
  for (int k = 0; k < draws; ++k) {
    const auto x = darkbert::uniform_below(rng, 7);
    REQUIRE(x < 7);
    ++counts[x];
  }
  for (int c : counts) CHECK(std::abs(c - draws / 7) < 400);  // ~4.3 standard deviations
  CHECK(darkbert::uniform_below(rng, 1) == 0);
}
