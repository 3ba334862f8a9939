// numpy.percentile (method "linear") reproduced bit for bit, and the paper's "heads above the 99th percentile".
//
// Expected values from /usr/bin/python3, numpy 1.24.2:
//   v = np.array([3,1,4,1,5,9,2,6,5,3,5], float)
//   [np.percentile(v, q) for q in (0, 25, 50, 90, 99, 100, 33.3)]
//     -> 1.0, 2.5, 4.0, 6.0, 8.700000000000001, 9.0, 3.0
//   m = np.array([((i*37) % 101) / 100.0 for i in range(144)])
//   np.percentile(m, 99) -> 0.9956999999999999;  top: i = 30 (1.0), 131 (1.0), 60 (0.99), 90 (0.98)

#include <doctest/doctest.h>

#include <cmath>   // NAN
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/percentile.hpp"
#include "test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;

TEST_CASE("percentile matches numpy exactly") {
  const std::vector<double> v = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  const std::span<const double> s(v);
  CHECK(percentile(s, 0) == 1.0);
  CHECK(percentile(s, 25) == 2.5);
  CHECK(percentile(s, 50) == 4.0);
  CHECK(percentile(s, 90) == 6.0);
  CHECK(percentile(s, 99) == 8.700000000000001);  // numpy's lerp for t >= 0.5: b - (b - a)(1 - t)
  CHECK(percentile(s, 100) == 9.0);
  CHECK(percentile(s, 33.3) == 3.0);
  const std::vector<float> one = {2.5f};
  CHECK(percentile(std::span<const float>(one), 99) == 2.5f);
}

TEST_CASE("heads above the 99th percentile of a 12 x 12 head matrix") {
  auto m = make_head_matrix<double>("framenet_max_attention", 12, 12);
  for (Index i = 0; i < 144; ++i) m(i / 12, i % 12) = double((i * 37) % 101) / 100.0;
  const auto top = heads_above_percentile(m, 99.0);
  CHECK(top.q == 99.0);
  CHECK(top.threshold == 0.9956999999999999);
  REQUIRE(top.heads.size() == 2);  // 30 -> (2, 6), 131 -> (10, 11); equal scores keep layer/head order
  CHECK(top.heads[0].layer == 2);
  CHECK(top.heads[0].head == 6);
  CHECK(top.heads[0].value == 1.0);
  CHECK(top.heads[1].layer == 10);
  CHECK(top.heads[1].head == 11);

  const auto top10 = heads_above_percentile(m, 90.0);
  CHECK(top10.heads.size() == 14);  // 144 - ceil(0.9 * 143 + 1) values lie strictly above
  for (std::size_t k = 1; k < top10.heads.size(); ++k) CHECK(top10.heads[k - 1].value >= top10.heads[k].value);
}

TEST_CASE("percentile errors") {
  const std::vector<double> empty;
  CHECK(message_of([&] { percentile(std::span<const double>(empty), 50); }) == "percentile: no values");
  const std::vector<double> v = {1, NAN};
  CHECK(message_of([&] { percentile(std::span<const double>(v), 50); }) == "percentile: value 1 is NaN");
  CHECK(message_of([&] { percentile(std::span<const double>(v), 101); }) == "percentile: q = 101 is outside [0, 100]");
  auto m = make_head_matrix<double>("empty_measure", 2, 2, NAN);
  CHECK(message_of([&] { heads_above_percentile(m); }) ==
        "heads_above_percentile: table 'empty_measure' has NaN at layer 0 head 0 (no example contributed?)");
}
