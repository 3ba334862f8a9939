// Dataset-level sums are kept in at least double precision.

#include <doctest/doctest.h>

#include <type_traits>  // std::is_same_v

#include "darkbert/analysis/accumulate_type.hpp"

TEST_CASE("accumulate_t widens float to double and keeps wider types") {
  static_assert(std::is_same_v<darkbert::detail::accumulate_t<float>, double>);
  static_assert(std::is_same_v<darkbert::detail::accumulate_t<double>, double>);
  static_assert(std::is_same_v<darkbert::detail::accumulate_t<long double>, long double>);
  // 2^24 + 1 is not representable in float; the accumulation type keeps it.
  darkbert::detail::accumulate_t<float> sum = 16777216.0f;
  sum += 1.0f;
  CHECK(sum == 16777217.0);
}
