// Tests for include/darkbert/viz/heatmap.hpp: PNG read back with cairo (cell colours, colour-bar ends,
// NaN cells, sizes), SVG parsed with pugixml (title, axis titles, tick labels, cell values, layout inside the
// figure), PDF, both input forms, orientation, scales and every error path.

#include <doctest/doctest.h>

#include <cmath>       // std::ceil, std::abs, NAN
#include <filesystem>  // std::filesystem::path, file_size
#include <set>         // std::set
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/viz/heatmap.hpp"
#include "viz_test_support.hpp"

using darkbert::HeatmapOptions;
using darkbert::Matrix;
using darkbert::RgbColor;
using darkbert::test::message_of;
using darkbert::test::near;
using darkbert::test::png_image;
using darkbert::test::read_bytes;
using darkbert::test::svg_texts;
using darkbert::test::text_set;

namespace {

// A point inside a cell near its top-left corner, away from the centred value text.
std::pair<double, double> corner_of(const darkbert::FigureRect& cell) {
  return {cell.x + cell.width * 0.12, cell.y + cell.height * 0.12};
}

// 3 x 4 matrix 0, 1, ..., 11 (row-major) with NaN at (1, 2).
Matrix<double> counting_matrix() {
  Matrix<double> m(3, 4);
  for (int i = 0; i < 12; ++i) m.data()[i] = i;
  m(1, 2) = NAN;
  return m;
}

HeatmapOptions labelled_options() {
  HeatmapOptions o;
  o.title = "Head scores";
  o.x = {"head", {}, 1};
  o.y = {"layer", {}, 1};
  o.value_label = "score";
  return o;
}

}  // namespace

TEST_CASE("heatmap PNG: size, cell colours, NaN cell, colour-bar ends") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_png");
  const auto m = counting_matrix();
  const auto o = labelled_options();
  const auto g = darkbert::write_heatmap(dir / "h.png", m, o);
  REQUIRE(std::filesystem::exists(dir / "h.png"));
  CHECK(g.pixels_per_point == 2);
  CHECK(g.rows == 3);
  CHECK(g.cols == 4);
  CHECK(g.vmin == 0);
  CHECK(g.vmax == 11);
  CHECK(g.annotated);  // small matrix: values printed
  const png_image png(dir / "h.png", g.pixels_per_point);
  CHECK(png.width() == static_cast<int>(std::ceil(g.width * 2)));
  CHECK(png.height() == static_cast<int>(std::ceil(g.height * 2)));
  CHECK(png.width() > 300);  // plausible figure: cells of 30+ points plus labels and colour bar
  CHECK(png.height() > 150);

  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      if (i == 1 && j == 2) continue;
      CAPTURE(i);
      CAPTURE(j);
      const auto [x, y] = corner_of(g.cell(i, j));
      CHECK(near(png.at(x, y), o.map(m(i, j) / 11.0)));
    }
  // NaN cell: mostly the NaN colour (white) with grey hatching, no colour-map colour.
  const auto nan_cell = g.cell(1, 2);
  int white = 0, grey = 0, neutral = 0, total = 0;
  for (double x = nan_cell.x + 2; x < nan_cell.right() - 2; x += 0.5)
    for (double y = nan_cell.y + 2; y < nan_cell.bottom() - 2; y += 0.5) {
      const auto c = png.at(x, y);
      const bool is_neutral = std::abs(c.r - c.g) < 0.02 && std::abs(c.g - c.b) < 0.02;
      ++total;
      neutral += is_neutral;
      white += near(c, {1, 1, 1}, 2.0 / 255);
      grey += is_neutral && c.r < 0.8;
    }
  CHECK(white > total / 2);
  CHECK(grey > total / 50);
  CHECK(neutral == total);

  // Colour bar: vmin colour at the bottom edge, vmax colour at the top edge.
  const auto bar = g.colorbar;
  CHECK(bar.x > g.cells.right());
  CHECK(bar.right() < g.width);
  CHECK(near(png.at(bar.center_x(), bar.bottom() - 1), o.map(1.0 / bar.height), 3.0 / 255));
  CHECK(near(png.at(bar.center_x(), bar.y + 1), o.map(1 - 1.0 / bar.height), 3.0 / 255));
  CHECK(near(png.at(bar.center_x(), bar.center_y()), o.map(0.5), 3.0 / 255));
  // Figure background is white.
  CHECK(near(png.at(1, 1), {1, 1, 1}));
  CHECK(near(png.at(g.width - 1, g.height - 1), {1, 1, 1}));
}

TEST_CASE("heatmap SVG: title, axis titles, tick labels, cell values, colour-bar labels, all inside the figure") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_svg");
  const auto g = darkbert::write_heatmap(dir / "h.svg", counting_matrix(), labelled_options());
  CHECK(g.pixels_per_point == 1);
  const auto texts = svg_texts(dir / "h.svg");
  const auto all = text_set(texts);
  for (const char* s : {"Head scores", "head", "layer", "score", "1", "2", "3", "4", "0.00", "11.00", "NaN"}) {
    CAPTURE(s);
    CHECK(all.count(s) == 1);
  }
  std::set<std::string> x_ticks;  // labels just under the cells
  for (const auto& t : texts)
    if (t.y > g.cells.bottom() && t.y < g.cells.bottom() + 10 && t.anchor == "middle") x_ticks.insert(t.text);
  CHECK(x_ticks == std::set<std::string>{"1", "2", "3", "4"});  // numbered from 1 as asked
  CHECK(all.count("5.00") == 1);
  CHECK(all.count("6.00") == 0);  // the NaN cell has no value printed
  for (const auto& t : texts) {
    CAPTURE(t.text);
    CHECK(t.x >= 0);
    CHECK(t.x <= g.width);
    CHECK(t.y >= 0);
    CHECK(t.y <= g.height);
  }
  // The y axis title is rotated; tick labels of the y axis are right-aligned left of the cells.
  int y_ticks = 0;
  for (const auto& t : texts) {
    if (t.text == "layer") CHECK(t.transform.find("rotate(-90)") != std::string::npos);
    if (t.anchor == "end" && t.x < g.cells.x) ++y_ticks;
  }
  CHECK(y_ticks == 3);
}

TEST_CASE("heatmap with token labels: every token shown, x tokens vertical, no overlap") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_tokens");
  const std::vector<std::string> tokens{"[CLS]", "the", "comfort", "##able", "caf\xC3\xA9", "<&>", "[SEP]"};
  Matrix<float> pattern = Matrix<float>::Constant(7, 7, 1.0f / 7);
  pattern(2, 3) = 0.9f;
  HeatmapOptions o;
  o.title = "Layer 3, head 7";
  o.x = {"key", tokens};
  o.y = {"query", tokens};
  o.vmin = 0;
  o.vmax = 1;
  const auto g = darkbert::write_heatmap(dir / "p.svg", pattern, o);
  const auto texts = svg_texts(dir / "p.svg");
  int vertical = 0, horizontal = 0;
  for (const auto& token : tokens) {
    for (const auto& t : texts) {
      if (t.text != token) continue;
      (t.transform.find("rotate(-90)") != std::string::npos ? vertical : horizontal) += 1;
    }
  }
  CHECK(vertical == 7);    // x labels
  CHECK(horizontal == 7);  // y labels
  CHECK(g.cell(0, 0).width >= 12);  // text labels get cells tall enough for 9-point text
  const auto png_g = darkbert::write_heatmap(dir / "p.png", pattern, o);
  const png_image png(dir / "p.png", png_g.pixels_per_point);
  const auto [x, y] = corner_of(png_g.cell(2, 3));
  CHECK(near(png.at(x, y), o.map(0.9)));
  const auto [x0, y0] = corner_of(png_g.cell(0, 0));
  CHECK(near(png.at(x0, y0), o.map(1.0 / 7)));
}

TEST_CASE("heatmap: raw buffer and Eigen inputs give the same file; transposes are drawn transposed") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_inputs");
  const std::vector<float> raw{0, 1, 2, 3, 4, 5};  // 2 x 3, row-major
  Matrix<double> eigen(2, 3);
  eigen << 0, 1, 2, 3, 4, 5;
  darkbert::write_heatmap(dir / "raw.png", 2, 3, raw.data());
  darkbert::write_heatmap(dir / "eigen.png", eigen);
  CHECK(read_bytes(dir / "raw.png") == read_bytes(dir / "eigen.png"));

  Eigen::MatrixXi column_major(2, 3);  // column-major ints, and an expression
  column_major << 0, 1, 2, 3, 4, 5;
  const auto g = darkbert::write_heatmap(dir / "t.png", column_major.transpose());
  CHECK(g.rows == 3);
  CHECK(g.cols == 2);
  const png_image png(dir / "t.png", g.pixels_per_point);
  const auto map = darkbert::Colormap::viridis();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      const auto [x, y] = corner_of(g.cell(i, j));
      CHECK(near(png.at(x, y), map(column_major(j, i) / 5.0)));
    }
}

TEST_CASE("heatmap scales: diverging map centres zero; vmin/vmax clamp; flat data") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_scales");
  Matrix<double> m(1, 3);
  m << -2, 0, 1;
  HeatmapOptions o;
  o.map = darkbert::Colormap::coolwarm();
  auto g = darkbert::write_heatmap(dir / "d.png", m, o);
  CHECK(g.vmin == -2);
  CHECK(g.vmax == 2);
  {
    const png_image png(dir / "d.png", g.pixels_per_point);
    auto [x, y] = corner_of(g.cell(0, 1));
    CHECK(near(png.at(x, y), o.map(0.5)));  // zero is the neutral grey
    std::tie(x, y) = corner_of(g.cell(0, 0));
    CHECK(near(png.at(x, y), o.map(0.0)));
    std::tie(x, y) = corner_of(g.cell(0, 2));
    CHECK(near(png.at(x, y), o.map(0.75)));
  }
  HeatmapOptions clamp;
  clamp.vmin = -1;
  clamp.vmax = 0.5;
  g = darkbert::write_heatmap(dir / "c.png", m, clamp);
  CHECK(g.vmin == -1);
  CHECK(g.vmax == 0.5);
  {
    const png_image png(dir / "c.png", g.pixels_per_point);
    auto [x, y] = corner_of(g.cell(0, 0));
    CHECK(near(png.at(x, y), clamp.map(0.0)));  // -2 below vmin
    std::tie(x, y) = corner_of(g.cell(0, 2));
    CHECK(near(png.at(x, y), clamp.map(1.0)));  // 1 above vmax
  }
  const Matrix<double> flat = Matrix<double>::Constant(2, 2, 0.25);
  g = darkbert::write_heatmap(dir / "f.png", flat);
  CHECK(g.vmin < 0.25);
  CHECK(g.vmax > 0.25);
}

TEST_CASE("heatmap annotation: automatic for small matrices, off for large ones, and on request") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_annotate");
  Matrix<double> big(40, 50);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 50; ++j) big(i, j) = std::sin(0.3 * i) * std::cos(0.2 * j);
  HeatmapOptions o;
  auto g = darkbert::write_heatmap(dir / "big.svg", big, o);
  CHECK_FALSE(g.annotated);
  auto labels = text_set(svg_texts(dir / "big.svg"));
  CHECK(labels.count("0") == 1);
  CHECK(labels.count("49") == 0);  // 50 columns of 7.2 points: numbers thinned out
  CHECK(labels.count("40") == 1);
  CHECK(labels.count("0.5") == 1);  // colour-bar tick labels
  CHECK(labels.count("-0.5") == 1);
  o.annotate = darkbert::CellValues::show;
  g = darkbert::write_heatmap(dir / "big_values.svg", big, o);
  CHECK(g.annotated);
  CHECK(svg_texts(dir / "big_values.svg").size() > 2000);
  Matrix<double> small(2, 2);
  small << 0.5, 0.25, 0.125, 0;
  o.annotate = darkbert::CellValues::hide;
  g = darkbert::write_heatmap(dir / "small.svg", small, o);
  CHECK_FALSE(g.annotated);
  CHECK(text_set(svg_texts(dir / "small.svg")).count("0.13") == 0);
  o.annotate = darkbert::CellValues::automatic;
  o.precision = 3;
  g = darkbert::write_heatmap(dir / "small3.svg", small, o);
  CHECK(g.annotated);
  CHECK(text_set(svg_texts(dir / "small3.svg")).count("0.125") == 1);
}

TEST_CASE("heatmap of a large matrix is smoothed, sized sensibly and still shows its structure") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_large");
  Matrix<double> m = Matrix<double>::Zero(1000, 1000);
  for (int i = 0; i < 1000; ++i) m(i, i) = 1;
  HeatmapOptions o;
  o.pixels_per_point = 1;  // half a pixel per cell: cells are averaged
  const auto g = darkbert::write_heatmap(dir / "diag.png", m, o);
  CHECK(g.cells.width == doctest::Approx(500));  // the smallest automatic cell, half a point
  CHECK_FALSE(g.annotated);
  const png_image png(dir / "diag.png", g.pixels_per_point);
  CHECK(png.width() < 800);
  // On the diagonal the averaged colour is clearly lighter than off it.
  const auto on = png.at(g.cells.x + 250, g.cells.y + 250), off = png.at(g.cells.x + 250, g.cells.y + 100);
  CHECK(on.g > off.g + 0.1);
  CHECK(near(off, o.map(0.0), 3.0 / 255));
}

TEST_CASE("heatmap PDF") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_pdf");
  darkbert::write_heatmap(dir / "h.pdf", counting_matrix(), labelled_options());
  CHECK(read_bytes(dir / "h.pdf").rfind("%PDF-", 0) == 0);
}

TEST_CASE("heatmap errors name the path and the problem") {
  const auto dir = darkbert::test::scratch_dir("viz_heatmap_errors");
  const auto path = (dir / "e.png").string();
  const Matrix<double> m = Matrix<double>::Ones(2, 3);
  CHECK(message_of([&] { darkbert::write_heatmap(path, Matrix<double>(0, 3)); }) ==
        path + ": cannot draw a heatmap of an empty matrix (0 x 3)");
  CHECK(message_of([&] { darkbert::write_heatmap<float>(path, 2, 2, nullptr); }) ==
        path + ": no data for a 2 x 2 heatmap");
  CHECK(message_of([&] { darkbert::write_heatmap<float>(path, -1, 2, nullptr); }) ==
        path + ": negative heatmap shape (-1 x 2)");
  HeatmapOptions o;
  o.x.labels = {"a", "b"};
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }) == path + ": 2 x labels for 3 columns");
  o = {};
  o.y.labels = {"a"};
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }) == path + ": 1 y labels for 2 rows");
  o = {};
  o.x.labels = {"ok", "bad\xC3", "ok"};
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }) ==
        path + ": x label 1: 'bad\xC3' is not valid UTF-8 (bad byte at offset 3)");
  o = {};
  o.precision = 13;
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }) == path + ": precision 13 is outside [0, 12]");
  o = {};
  o.vmin = 1;
  o.vmax = 0;
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }) == path + ": vmin 1 must be below vmax 0");
  o = {};
  o.pixels_per_point = 0;
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }) == path + ": pixels_per_point 0 is outside (0, 16]");
  o = {};
  o.cell_size = 6000;
  CHECK(message_of([&] { darkbert::write_heatmap(path, m, o); }).find(path + ": figure would be ") == 0);
  CHECK(message_of([&] { darkbert::write_heatmap(dir / "e.jpeg", m); }) ==
        (dir / "e.jpeg").string() + ": unknown figure format '.jpeg' (the file name must end in .png, .svg or .pdf)");
  const auto missing = dir / "missing" / "e.svg";
  CHECK(message_of([&] { darkbert::write_heatmap(missing, m); }) ==
        missing.string() + ": cannot open for writing: No such file or directory");
  CHECK_FALSE(std::filesystem::exists(path));  // nothing written on error
}
