// RunningMean: per-cell means, merging partial sums, NaN before the first example, float data summed in double,
// and shape errors with messages.

#include <doctest/doctest.h>

#include <cmath>   // std::isnan
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/running_mean.hpp"
#include "test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;

TEST_CASE_TEMPLATE("means per cell and merging of partial sums", T, float, double) {
  RunningMean<T> all(2, 2), first(2, 2), second(2, 2);
  CHECK(std::isnan(all.mean(0, 0)));  // nothing added yet
  const std::vector<std::vector<T>> examples = {{1, 2, 3, 4}, {3, 2, 1, 0}, {2, 2, 2, 8}};
  for (std::size_t e = 0; e < examples.size(); ++e) {
    all.add(examples[e]);
    (e == 0 ? first : second).add(examples[e]);
  }
  first.merge(second);
  // Means by hand: (1+3+2)/3 = 2, (2+2+2)/3 = 2, (3+1+2)/3 = 2, (4+0+8)/3 = 4.
  for (const auto* m : {&all, &first}) {
    CHECK(m->examples() == 3);
    CHECK(m->mean(0, 0) == T(2));
    CHECK(m->mean(0, 1) == T(2));
    CHECK(m->mean(1, 0) == T(2));
    CHECK(m->mean(1, 1) == T(4));
  }
  auto table = make_head_matrix<T>("t", 2, 2);
  all.write_mean(table);
  CHECK(table.examples == 3);
  CHECK(table(1, 1) == T(4));
  CHECK(all.memory_bytes() == 4 * sizeof(typename RunningMean<T>::accumulate_type));
}

TEST_CASE("float values are summed in double") {
  // 10^6 x 0.1f: a float running sum drifts by ~1e-3 relative; a double sum returns 0.1f exactly.
  RunningMean<float> mean(1, 1);
  const std::vector<float> v = {0.1f};
  for (int k = 0; k < 1000000; ++k) mean.add(v);
  CHECK(mean.mean(0, 0) == 0.1f);
}

TEST_CASE("shape errors") {
  RunningMean<double> a(2, 3), b(3, 2);
  CHECK(message_of([&] { a.add(std::vector<double>(5)); }) == "running mean: example has 5 values, expected 6");
  CHECK(message_of([&] { a.merge(b); }) == "running mean: cannot merge a 3 x 2 grid into a 2 x 3 grid");
  auto t = make_head_matrix<double>("wrong", 3, 3);
  CHECK(message_of([&] { a.write_mean(t); }) == "running mean: table 'wrong' is 3 x 3, expected 2 x 3");
  CHECK(message_of([] { RunningMean<double>(0, 1); }) == "running mean: grid must be at least 1 x 1, got 0 x 1");
}
