// Tests for include/darkbert/viz/bar_chart.hpp: the SVG carries the title, axis titles, category names,
// round tick labels and legend entries as text; in the PNG every stacked segment has its series' colour at
// the height its value gives; the legend lists the top of the stack first; bad input is refused by name.

#include <doctest/doctest.h>

#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/viz/bar_chart.hpp"
#include "viz_test_support.hpp"

using darkbert::test::message_of;
using darkbert::test::svg_texts;
using darkbert::test::text_set;

namespace {
const std::vector<std::string> tasks = {"MRPC", "SST-2", "RTE"};
const std::vector<darkbert::BarSeries> shares = {
    {"vertical", {0.3, 0.5, 0.2}}, {"diagonal", {0.1, 0.1, 0.3}}, {"heterogeneous", {0.6, 0.4, 0.5}}};
const darkbert::BarChartOptions chart_options{
    .title = "Pattern classes", .x_label = "task", .y_label = "share of maps", .y_max = 1.0};
}  // namespace

TEST_CASE("a stacked bar chart labels its axes, categories, ticks and series") {
  const auto dir = darkbert::test::scratch_dir("viz_bar_chart");
  darkbert::write_stacked_bar_chart(dir / "b.svg", tasks, shares, chart_options);
  const auto texts = text_set(svg_texts(dir / "b.svg"));
  for (const char* expected : {"Pattern classes", "task", "share of maps", "MRPC", "SST-2", "RTE", "vertical",
                               "diagonal", "heterogeneous", "0.0", "0.2", "0.4", "0.6", "0.8", "1.0"})
    CHECK_MESSAGE(texts.count(expected) == 1, expected);
  // Legend: the top of the stack (the last series) first.
  double y_vertical = 0, y_heterogeneous = 0;
  for (const auto& t : svg_texts(dir / "b.svg")) {
    if (t.text == "vertical") y_vertical = t.y;
    if (t.text == "heterogeneous") y_heterogeneous = t.y;
  }
  CHECK(y_heterogeneous < y_vertical);
}

TEST_CASE("each segment is drawn in its series' colour, as tall as its value") {
  const auto dir = darkbert::test::scratch_dir("viz_bar_chart_png");
  const auto g = darkbert::write_stacked_bar_chart(dir / "b.png", tasks, shares, chart_options);
  const darkbert::test::png_image png(dir / "b.png", g.pixels_per_point);
  REQUIRE(g.segments.size() == 3);
  CHECK(g.y_max == 1.0);
  for (std::size_t c = 0; c < tasks.size(); ++c) {
    double base = g.plot.bottom();
    for (std::size_t s = 0; s < shares.size(); ++s) {
      const auto& r = g.segments[c][s];
      CHECK(r.height == doctest::Approx(shares[s].values[c] * g.plot.height));
      CHECK(r.bottom() == doctest::Approx(base));  // stacked on the previous segment
      base = r.y;
      CHECK_MESSAGE(darkbert::test::near(png.at(r.center_x(), r.center_y()), darkbert::bar_series_color(s)),
                    "category ", c, " series ", s);
    }
    CHECK(base == doctest::Approx(g.plot.y));  // shares add up to the top of the axis
  }
  // Above the stacks the plot is background: SST-2 totals 1.0, a stack of 0.5 leaves its upper half white.
  const auto h = darkbert::write_stacked_bar_chart(dir / "half.png", {"a"}, {{"x", {0.5}}}, chart_options);
  const darkbert::test::png_image half(dir / "half.png", h.pixels_per_point);
  const auto& seg = h.segments[0][0];
  CHECK(darkbert::test::near(half.at(seg.center_x(), h.plot.y + h.plot.height * 0.3), {1, 1, 1}));
  CHECK(darkbert::test::near(half.at(seg.center_x(), seg.center_y()), darkbert::bar_series_color(0)));
  // Without y_max the axis ends at the tallest stack.
  CHECK(darkbert::write_stacked_bar_chart(dir / "auto.svg", {"a", "b"}, {{"x", {2, 3}}, {"y", {1, 0.5}}}, {}).y_max ==
        3.5);
}

TEST_CASE("bar chart errors name the file and the problem") {
  const auto dir = darkbert::test::scratch_dir("viz_bar_chart_errors");
  CHECK(message_of([&] { darkbert::write_stacked_bar_chart(dir / "a.png", {}, shares, {}); }) ==
        (dir / "a.png").string() + ": a bar chart needs at least one category");
  CHECK(message_of([&] { darkbert::write_stacked_bar_chart(dir / "b.png", tasks, {}, {}); }) ==
        (dir / "b.png").string() + ": a bar chart needs at least one series");
  CHECK(message_of([&] {
          darkbert::write_stacked_bar_chart(dir / "c.png", tasks, {{"s", {1, 2}}}, {});
        }) == (dir / "c.png").string() + ": series 's' has 2 values for 3 categories");
  CHECK(message_of([&] {
          darkbert::write_stacked_bar_chart(dir / "d.png", {"x"}, {{"s", {-0.5}}}, {});
        }) == (dir / "d.png").string() +
                  ": series 's' has the value -0.5 in category 'x'; stacked bars need finite values >= 0");
  CHECK(message_of([&] {
          darkbert::write_stacked_bar_chart(dir / "e.png", {"x"}, {{"s", {1}}}, {.y_max = 0.0});
        }).find("y_max 0 must be positive") != std::string::npos);
  CHECK(message_of([&] { darkbert::write_stacked_bar_chart(dir / "f.txt", {"x"}, {{"s", {1}}}, {}); }) != "");
}
