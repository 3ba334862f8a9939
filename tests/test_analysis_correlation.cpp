// Pearson and Spearman against every case of golden/metrics/regression.json (scipy 1.10), the streaming Pearson
// accumulator (pair by pair and merged chunks), average ranks by hand, and the error / NaN conventions.

#include <doctest/doctest.h>

#include <cmath>    // std::isnan
#include <string>   // std::string
#include <vector>   // std::vector

#include <nlohmann/json.hpp>  // golden file

#include "darkbert/analysis/correlation.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;
using darkbert::test::metrics_golden;

namespace {
// Golden value: a number, or the string "nan".
void check_value(double got, const nlohmann::json& want, double tol) {
  if (want.is_string()) {
    REQUIRE(want == "nan");
    CHECK_MESSAGE(std::isnan(got), "got " << got << ", want nan");
  } else {
    CHECK_MESSAGE(std::abs(got - want.get<double>()) <= tol, "got " << got << ", want " << want.get<double>());
  }
}
}  // namespace

TEST_CASE("every golden regression case: pearson, spearman, streaming pearson") {
  const auto cases = metrics_golden("regression.json")["cases"];
  REQUIRE(cases.size() >= 9);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    const auto x = c["x"].get<std::vector<double>>();
    const auto y = c["y"].get<std::vector<double>>();
    check_value(pearson(x, y), c["pearson"], 1e-12);
    check_value(spearman(x, y), c["spearman"], 1e-12);
    check_value(pearson(y, x), c["pearson"], 1e-12);  // symmetric
    check_value(spearman(y, x), c["spearman"], 1e-12);

    PearsonAccumulator<double> streaming, first, second;
    for (std::size_t k = 0; k < x.size(); ++k) {
      streaming.add(x[k], y[k]);
      (k < x.size() / 2 ? first : second).add(x[k], y[k]);
    }
    first.merge(second);
    check_value(streaming.result(), c["pearson"], 1e-12);
    check_value(first.result(), c["pearson"], 1e-12);
    CHECK(first.count() == x.size());

    // float inputs
    const std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
    check_value(pearson(xf, yf), c["pearson"], 1e-5);
    check_value(spearman(xf, yf), c["spearman"], 1e-5);
  }
}

TEST_CASE("average ranks: ties share the mean of their ranks") {
  const std::vector<double> v = {10, 20, 20, 5, 20};
  // sorted: 5 (rank 1), 10 (2), 20 20 20 (3, 4, 5 -> 4)
  CHECK(average_ranks(std::span<const double>(v)) == std::vector<double>{2, 4, 4, 1, 4});
  const std::vector<int> w = {3, 3};
  CHECK(average_ranks(std::span<const int>(w)) == std::vector<double>{1.5, 1.5});
}

TEST_CASE("scipy's conventions at the edges") {
  // Two points: exactly the sign of the slope.
  CHECK(pearson(std::vector<double>{0, 1}, std::vector<double>{5, -3}) == -1.0);
  CHECK(pearson(std::vector<double>{2, 1}, std::vector<double>{5, -3}) == 1.0);
  // Spearman of fewer than two values is NaN (scipy), Pearson raises.
  CHECK(std::isnan(spearman(std::vector<double>{1}, std::vector<double>{2})));
  CHECK(message_of([] { pearson(std::vector<double>{1}, std::vector<double>{2}); }) ==
        "pearson: needs at least 2 values, got 1");
  PearsonAccumulator<double> one;
  one.add(1, 2);
  CHECK(message_of([&] { one.result(); }) == "pearson accumulator: needs at least 2 values, got 1");
  // Constant input: NaN, also when merged from chunks that are each constant with the same value.
  PearsonAccumulator<double> a, b;
  a.add(1, 1);
  a.add(1, 2);
  b.add(1, 3);
  a.merge(b);
  CHECK(std::isnan(a.result()));
  PearsonAccumulator<double> c, d;
  c.add(1, 1);
  c.add(1, 2);
  d.add(2, 3);
  c.merge(d);  // x is not constant across the chunks
  CHECK(std::abs(c.result() - pearson(std::vector<double>{1, 1, 2}, std::vector<double>{1, 2, 3})) <= 1e-15);
}

TEST_CASE("correlation errors") {
  CHECK(message_of([] { pearson(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2}); }) ==
        "pearson: x has 3 values but y has 2");
  CHECK(message_of([] { spearman(std::vector<double>{1, NAN}, std::vector<double>{1, 2}); }) ==
        "spearman: x[1] = nan is not finite");
  PearsonAccumulator<double> acc;
  CHECK(message_of([&] { acc.add(1, INFINITY); }) == "pearson accumulator: pair 0 = (1, inf) is not finite");
}
