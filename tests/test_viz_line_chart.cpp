// Tests for include/darkbert/viz/line_chart.hpp: the SVG carries the title, axis titles, round tick labels
// and legend entries as text; the PNG has the plot size asked for; the legend goes to a corner the curves
// leave free; bad input is refused by name.

#include <doctest/doctest.h>

#include <string>  // std::string

#include "darkbert/viz/line_chart.hpp"
#include "viz_test_support.hpp"

using darkbert::test::message_of;
using darkbert::test::svg_texts;
using darkbert::test::text_set;

TEST_CASE("a line chart labels its axes, ticks and series") {
  const auto dir = darkbert::test::scratch_dir("viz_line_chart");
  const std::vector<darkbert::LineSeries> series = {{"accuracy", {0, 100, 200, 300}, {0.0, 0.05, 0.1, 0.2}},
                                                    {"loss", {0, 100, 200, 300}, {0.5, 0.4, 0.3, 0.25}}};
  const darkbert::LineChartOptions options{.title = "mini BERT", .x_label = "training step", .y_label = "value"};
  darkbert::write_line_chart(dir / "c.svg", series, options);
  const auto texts = text_set(svg_texts(dir / "c.svg"));
  for (const char* expected : {"mini BERT", "training step", "value", "accuracy", "loss", "0", "100", "200", "300", "0.2"})
    CHECK_MESSAGE(texts.count(expected) == 1, expected);

  darkbert::write_line_chart(dir / "c.png", series, options);
  const darkbert::test::png_image png(dir / "c.png", options.pixels_per_point);
  CHECK(png.width() > 2 * 360);
  CHECK(png.height() > 2 * 220);
}

// The vertical position (points) of the legend entry `name` in an SVG chart.
static double legend_y(const std::filesystem::path& svg, const std::string& name) {
  for (const auto& t : svg_texts(svg))
    if (t.text == name) return t.y;
  FAIL("no legend entry ", name);
  return 0;
}

TEST_CASE("a line chart's legend goes to the corner its curves leave free") {
  const auto dir = darkbert::test::scratch_dir("viz_line_chart_legend");
  const darkbert::LineChartOptions options{.y_min = 0.0, .y_max = 1.0};  // no title: the plot spans y ≈ 10-230 points
  // Curves across the top: the legend moves to a bottom corner.
  darkbert::write_line_chart(dir / "top.svg", {{"high", {0, 100, 200}, {0.95, 0.97, 0.96}}}, options);
  CHECK(legend_y(dir / "top.svg", "high") > 130);
  // Curves across the bottom: it stays at the top.
  darkbert::write_line_chart(dir / "bottom.svg", {{"low", {0, 100, 200}, {0.02, 0.05, 0.03}}}, options);
  CHECK(legend_y(dir / "bottom.svg", "low") < 130);
}

TEST_CASE("line chart errors name the file and the problem") {
  const auto dir = darkbert::test::scratch_dir("viz_line_chart_errors");
  CHECK(message_of([&] { darkbert::write_line_chart(dir / "a.png", {}, {}); }).find("a.png: a line chart needs at least one series") != std::string::npos);
  CHECK(message_of([&] { darkbert::write_line_chart(dir / "b.png", {{"s", {1, 2}, {1}}}, {}); })
            .find("b.png: series 's' has 2 x and 1 y values") != std::string::npos);
  CHECK(message_of([&] { darkbert::write_line_chart(dir / "c.png", {{"s", {1, 2}, {1, 2}}}, {.y_min = 2.0, .y_max = 1.0}); })
            .find("y_min must be below y_max") != std::string::npos);
}
