// Length-grouped batches: every example once per epoch, ceil(n / batch) steps, one seed one order, and far
// less padding than random batches on lengths spread like GLUE's.
#include <doctest/doctest.h>

#include <algorithm>  // std::max, std::sort
#include <cstddef>    // std::size_t
#include <random>     // std::mt19937_64
#include <set>        // std::set
#include <vector>     // std::vector

#include "darkbert/data/seeded_shuffle.hpp"
#include "darkbert/train/length_grouped_batches.hpp"
#include "test_support.hpp"

namespace {

using Batches = std::vector<std::vector<std::size_t>>;

// Lengths of a task's examples: mostly short, a long tail up to the 128-token cap.
std::vector<std::size_t> glue_like_lengths(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> lengths(n);
  for (auto& l : lengths) l = std::min<std::size_t>(128, 6 + rng() % 40 + (rng() % 5 == 0 ? rng() % 100 : 0));
  return lengths;
}

// Tokens the batches hold once each is padded to its longest example.
std::size_t padded_tokens(const Batches& batches, const std::vector<std::size_t>& lengths) {
  std::size_t total = 0;
  for (const auto& b : batches) {
    std::size_t longest = 0;
    for (auto i : b) longest = std::max(longest, lengths[i]);
    total += longest * b.size();
  }
  return total;
}

}  // namespace

TEST_CASE("length-grouped batches hold every example once, in ceil(n / batch) steps with one short batch at most") {
  for (std::size_t n : {1u, 31u, 32u, 33u, 1600u, 2000u, 3201u}) {
    const auto lengths = glue_like_lengths(n, n);
    const auto batches = darkbert::length_grouped_batches(lengths, 32, 7);
    INFO("n = " << n);
    CHECK(batches.size() == (n + 31) / 32);
    std::vector<std::size_t> seen;
    std::size_t short_batches = 0;
    for (const auto& b : batches) {
      CHECK(!b.empty());
      short_batches += b.size() < 32;
      seen.insert(seen.end(), b.begin(), b.end());
    }
    CHECK(short_batches <= 1);
    std::sort(seen.begin(), seen.end());
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    CHECK(seen == all);
  }
}

TEST_CASE("length-grouped batches: one seed gives one order, another seed another") {
  const auto lengths = glue_like_lengths(2000, 1);
  CHECK(darkbert::length_grouped_batches(lengths, 32, 3) == darkbert::length_grouped_batches(lengths, 32, 3));
  CHECK(darkbert::length_grouped_batches(lengths, 32, 3) != darkbert::length_grouped_batches(lengths, 32, 4));
}

TEST_CASE("length-grouped batches pad far less than random ones, and groups of one batch are random batches") {
  const auto lengths = glue_like_lengths(2000, 2);
  std::size_t real = 0;
  for (auto l : lengths) real += l;
  Batches random;
  const auto order = darkbert::seeded_permutation(lengths.size(), 5);
  for (std::size_t first = 0; first < order.size(); first += 32)
    random.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first),
                        order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), first + 32)));
  const auto grouped = darkbert::length_grouped_batches(lengths, 32, 5);
  const double random_ratio = double(padded_tokens(random, lengths)) / double(real);
  const double grouped_ratio = double(padded_tokens(grouped, lengths)) / double(real);
  INFO("padded / real tokens: random " << random_ratio << ", grouped " << grouped_ratio);
  CHECK(random_ratio > 1.8);
  CHECK(grouped_ratio < 1.1);

  // One batch per group: the members are the plain shuffle's consecutive slices, only reordered.
  std::set<std::set<std::size_t>> plain, single;
  for (const auto& b : random) plain.insert({b.begin(), b.end()});
  for (const auto& b : darkbert::length_grouped_batches(lengths, 32, 5, 1)) single.insert({b.begin(), b.end()});
  CHECK(plain == single);
  CHECK(darkbert::test::message_of([&] { darkbert::length_grouped_batches(lengths, 0, 5); }).find("batch size") !=
        std::string::npos);
}

TEST_CASE("length_sorted_order: a permutation, longest first, ties in index order") {
  const std::vector<std::size_t> lengths = glue_like_lengths(500, 9);
  const auto order = darkbert::length_sorted_order(lengths);
  REQUIRE(order.size() == lengths.size());
  CHECK(std::set<std::size_t>(order.begin(), order.end()).size() == lengths.size());
  for (std::size_t r = 1; r < order.size(); ++r) {
    CHECK(lengths[order[r - 1]] >= lengths[order[r]]);
    if (lengths[order[r - 1]] == lengths[order[r]]) CHECK(order[r - 1] < order[r]);
  }
  CHECK(darkbert::length_sorted_order(std::vector<std::size_t>{}).empty());
}
