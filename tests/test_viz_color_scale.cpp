// Tests for include/darkbert/viz/color_scale.hpp: colour-scale ranges, nice ticks, number formats,
// label strides and colour-bar tick labels.

#include <doctest/doctest.h>

#include <cmath>    // std::abs, std::log10, std::floor, std::pow, NAN, INFINITY
#include <limits>   // std::numeric_limits
#include <random>   // std::mt19937_64
#include <string>   // std::string
#include <vector>   // std::vector

#include "darkbert/viz/color_scale.hpp"
#include "test_support.hpp"

namespace viz = darkbert::detail::viz;
using darkbert::test::message_of;

namespace {

viz::ValueRange range_of(const std::vector<double>& v, std::optional<double> lo = {}, std::optional<double> hi = {},
                          bool diverging = false) {
  return viz::resolve_range(v.data(), v.size(), lo, hi, diverging, "fig.png");
}

}  // namespace

TEST_CASE("resolve_range: data range, ignoring NaN and infinities") {
  const double inf = std::numeric_limits<double>::infinity();
  auto r = range_of({0.5, NAN, -1.5, inf, 2.0, -inf});
  CHECK(r.lo == -1.5);
  CHECK(r.hi == 2.0);
  CHECK(r.position(-1.5) == 0.0);
  CHECK(r.position(2.0) == 1.0);
  CHECK(r.position(0.25) == doctest::Approx(0.5));
}

TEST_CASE("resolve_range: diverging maps centre zero; given bounds win; one bound fills in from data") {
  auto r = range_of({-0.5, 2.0}, {}, {}, /*diverging=*/true);
  CHECK(r.lo == -2.0);
  CHECK(r.hi == 2.0);
  r = range_of({-0.5, 2.0}, -1.0, 1.0, true);
  CHECK(r.lo == -1.0);
  CHECK(r.hi == 1.0);
  r = range_of({0.1, 0.7}, 0.0);
  CHECK(r.lo == 0.0);
  CHECK(r.hi == 0.7);
  r = range_of({0.1, 0.7}, {}, 1.0);
  CHECK(r.lo == 0.1);
  CHECK(r.hi == 1.0);
}

TEST_CASE("resolve_range: flat or empty data still gives a usable range") {
  auto r = range_of({3.0, 3.0});
  CHECK(r.lo < 3.0);
  CHECK(r.hi > 3.0);
  CHECK(r.position(3.0) == doctest::Approx(0.5));
  r = range_of({0.0, 0.0}, {}, {}, true);
  CHECK(r.lo == -0.5);
  CHECK(r.hi == 0.5);
  r = range_of({NAN, NAN});
  CHECK(r.lo == 0.0);
  CHECK(r.hi == 1.0);
  r = range_of({-5.0, -4.0}, 0.0);  // every value below the given vmin
  CHECK(r.lo == 0.0);
  CHECK(r.hi > 0.0);
  r = range_of({5.0, 4.0}, {}, 0.0);  // every value above the given vmax
  CHECK(r.lo < 0.0);
  CHECK(r.hi == 0.0);
}

TEST_CASE("resolve_range: bad bounds are errors naming the figure") {
  CHECK(message_of([] { range_of({1.0}, 2.0, 1.0); }) == "fig.png: vmin 2 must be below vmax 1");
  CHECK(message_of([] { range_of({1.0}, 1.0, 1.0); }) == "fig.png: vmin 1 must be below vmax 1");
  CHECK(message_of([] { range_of({1.0}, NAN); }).find("fig.png: vmin nan is not finite") == 0);
  CHECK(message_of([] { range_of({1.0}, {}, INFINITY); }).find("fig.png: vmax inf is not finite") == 0);
}

TEST_CASE("nice_ticks: 3 to 6 evenly spaced round values inside the range, for many ranges") {
  std::mt19937_64 rng(20261122);
  std::uniform_real_distribution<double> exponent(-6, 6), unit(-1, 1), width(0.01, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    const double scale = std::pow(10.0, exponent(rng));
    const double lo = unit(rng) * scale, hi = lo + width(rng) * scale;
    CAPTURE(lo);
    CAPTURE(hi);
    const auto ticks = viz::nice_ticks({lo, hi});
    REQUIRE(ticks.size() >= 3);
    REQUIRE(ticks.size() <= 7);
    const double step = ticks[1] - ticks[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    CHECK((std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 2.5) < 1e-6 ||
           std::abs(mantissa - 5) < 1e-6));
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      CHECK(ticks[i] >= lo - step * 1e-6);
      CHECK(ticks[i] <= hi + step * 1e-6);
      CHECK(std::abs(ticks[i] / step - std::round(ticks[i] / step)) < 1e-6);  // a multiple of the step
      if (i > 0) CHECK(ticks[i] - ticks[i - 1] == doctest::Approx(step));
    }
  }
  const auto unit_ticks = viz::nice_ticks({0, 1});
  CHECK(unit_ticks == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  const auto signed_ticks = viz::nice_ticks({-2, 2});
  CHECK(signed_ticks == std::vector<double>{-2, -1, 0, 1, 2});
}

TEST_CASE("format_tick: the decimals the step needs") {
  CHECK(viz::format_tick(0.25, 0.25) == "0.25");
  CHECK(viz::format_tick(0.5, 0.25) == "0.50");
  CHECK(viz::format_tick(0.6000000000000001, 0.2) == "0.6");
  CHECK(viz::format_tick(10, 5) == "10");
  CHECK(viz::format_tick(-0.5, 0.5) == "-0.5");
  CHECK(viz::format_tick(0, 0.1) == "0.0");
  CHECK(viz::format_tick(2e-5, 1e-5) == "2e-05");
  CHECK(viz::format_tick(3e6, 1e6) == "3e+06");
}

TEST_CASE("format_value and needs_scientific") {
  CHECK(viz::format_value(0.123, 2) == "0.12");
  CHECK(viz::format_value(-1.2, 2) == "-1.20");
  CHECK(viz::format_value(-0.001, 2) == "0.00");  // never "-0.00"
  CHECK(viz::format_value(7, 0) == "7");
  CHECK(viz::format_value(3.2e-5, 2, /*scientific=*/true) == "3.2e-05");
  CHECK(viz::format_value(NAN, 2) == "NaN");
  CHECK(viz::format_value(INFINITY, 2) == "inf");
  CHECK(viz::format_value(-INFINITY, 2) == "-inf");
  CHECK(viz::needs_scientific(0.001, 2));
  CHECK_FALSE(viz::needs_scientific(0.01, 2));
  CHECK_FALSE(viz::needs_scientific(0, 2));
  CHECK(viz::needs_scientific(2e6, 2));
}

TEST_CASE("next_label_step runs 1, 2, 5, 10, 20, 50, 100") {
  std::vector<std::ptrdiff_t> steps{1};
  while (steps.size() < 7) steps.push_back(viz::next_label_step(steps.back()));
  CHECK(steps == std::vector<std::ptrdiff_t>{1, 2, 5, 10, 20, 50, 100});
}

TEST_CASE("text_color_on: white on dark, black on light") {
  const auto map = darkbert::Colormap::viridis();
  CHECK(viz::text_color_on(map(0)) == darkbert::RgbColor{1, 1, 1});
  CHECK(viz::text_color_on(map(1)) == darkbert::RgbColor{0, 0, 0});
}

TEST_CASE("colorbar_ticks: numeric ticks, or the two end labels when given") {
  const auto map = darkbert::Colormap::viridis();
  viz::ColorbarSpec spec{&map, {0, 1}, "weight", false, {1, 1, 1}, {}, {}};
  const auto ticks = viz::colorbar_ticks(spec);
  REQUIRE(ticks.size() == 6);
  CHECK(ticks.front().second == "0.0");
  CHECK(ticks.back().second == "1.0");
  spec.low_label = "panel min";
  spec.high_label = "panel max";
  const auto ends = viz::colorbar_ticks(spec);
  REQUIRE(ends.size() == 2);
  CHECK(ends[0] == std::pair<double, std::string>{0.0, "panel min"});
  CHECK(ends[1] == std::pair<double, std::string>{1.0, "panel max"});
  const viz::TextMeasure measure;
  const double label_width = measure.width("panel max", viz::Style::tick);
  CHECK(viz::colorbar_extent(measure, spec) > viz::Style::colorbar_width + label_width);
  CHECK(viz::colorbar_swatch_height(spec) == 0);
  spec.nan_swatch = true;
  CHECK(viz::colorbar_swatch_height(spec) > viz::Style::colorbar_width);
}
