// Tests for include/darkbert/viz/attention_grid.hpp: every panel lands where the geometry says with the
// right colours (PNG read back with cairo), per-panel scaling, both input forms, labels in the SVG,
// downscaled maps keep their structure, and every error path.

#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem::path
#include <set>         // std::set
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/viz/attention_grid.hpp"
#include "viz_test_support.hpp"

using darkbert::AttentionGridOptions;
using darkbert::Matrix;
using darkbert::test::message_of;
using darkbert::test::near;
using darkbert::test::png_image;
using darkbert::test::read_bytes;
using darkbert::test::svg_texts;
using darkbert::test::text_set;

namespace {

// Centre of cell (i, j) of a panel with `rows` x `cols` cells.
std::pair<double, double> cell_center(const darkbert::FigureRect& panel, int rows, int cols, int i, int j) {
  return {panel.x + (j + 0.5) * panel.width / cols, panel.y + (i + 0.5) * panel.height / rows};
}

// 3 x 4 grid of 5 x 5 maps; map (r, c) is 0 except cell (r, c % 5) = 1 (and scaled by `scale(r, c)`).
std::vector<float> marked_grid(auto scale) {
  std::vector<float> data(3 * 4 * 5 * 5, 0.0f);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      float* map = data.data() + (r * 4 + c) * 25;
      for (int k = 0; k < 25; ++k) map[k] = 0.1f * scale(r, c) * static_cast<float>(k % 3);  // background
      map[r * 5 + c] = 1.0f * scale(r, c);
    }
  return data;
}

}  // namespace

TEST_CASE("attention grid PNG: each panel in its place with its marked cell") {
  const auto dir = darkbert::test::scratch_dir("viz_grid_png");
  const auto data = marked_grid([](int, int) { return 1.0f; });
  AttentionGridOptions o;
  o.title = "Attention maps";
  const auto g = darkbert::write_attention_grid(dir / "g.png", 3, 4, 5, 5, data.data(), o);
  CHECK(g.grid_rows == 3);
  CHECK(g.grid_cols == 4);
  CHECK(g.map_rows == 5);
  CHECK(g.vmin == 0);
  CHECK(g.vmax == 1);
  CHECK(g.pitch_x > g.first_panel.width);  // a gap between panels
  CHECK(g.colorbar.x > g.panel(0, 3).right());
  const png_image png(dir / "g.png", g.pixels_per_point);
  CHECK(png.width() == static_cast<int>(std::ceil(g.width * g.pixels_per_point)));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      CAPTURE(r);
      CAPTURE(c);
      const auto panel = g.panel(r, c);
      auto [x, y] = cell_center(panel, 5, 5, r, c);
      CHECK(near(png.at(x, y), o.map(1.0)));
      std::tie(x, y) = cell_center(panel, 5, 5, 4, 4);  // k = 24: background 0.1 * (24 % 3) = 0
      CHECK(near(png.at(x, y), o.map(0.0)));
      std::tie(x, y) = cell_center(panel, 5, 5, 4, 3);  // k = 23: 0.2
      CHECK(near(png.at(x, y), o.map(0.2)));
    }
  // Gaps between panels are background.
  const double gap_x = g.panel(0, 0).right() + (g.pitch_x - g.first_panel.width) / 2;
  CHECK(near(png.at(gap_x, g.panel(0, 0).center_y()), {1, 1, 1}));
  // Colour bar ends.
  CHECK(near(png.at(g.colorbar.center_x(), g.colorbar.bottom() - 1), o.map(1 / g.colorbar.height), 3.0 / 255));
  CHECK(near(png.at(g.colorbar.center_x(), g.colorbar.y + 1), o.map(1 - 1 / g.colorbar.height), 3.0 / 255));
}

TEST_CASE("attention grid: scale_each_panel maps every panel's maximum to the top colour") {
  const auto dir = darkbert::test::scratch_dir("viz_grid_each");
  const auto data = marked_grid([](int r, int c) { return static_cast<float>(1 + r * 4 + c) * 10; });
  AttentionGridOptions o;
  o.scale_each_panel = true;
  const auto g = darkbert::write_attention_grid(dir / "g.png", 3, 4, 5, 5, data.data(), o);
  const png_image png(dir / "g.png", g.pixels_per_point);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      const auto [x, y] = cell_center(g.panel(r, c), 5, 5, r, c);
      CHECK(near(png.at(x, y), o.map(1.0)));
      const auto [x2, y2] = cell_center(g.panel(r, c), 5, 5, 4, 3);  // 0.2 of the panel's maximum
      CHECK(near(png.at(x2, y2), o.map(0.2)));
    }
  darkbert::write_attention_grid(dir / "g.svg", 3, 4, 5, 5, data.data(), o);
  const auto texts = text_set(svg_texts(dir / "g.svg"));
  CHECK(texts.count("panel min") == 1);
  CHECK(texts.count("panel max") == 1);
}

TEST_CASE("attention grid SVG: title, row/column titles and numbers") {
  const auto dir = darkbert::test::scratch_dir("viz_grid_svg");
  const auto data = marked_grid([](int, int) { return 1.0f; });
  AttentionGridOptions o;
  o.title = "Sentence 17";
  o.row_first = 1;
  o.col_first = 1;
  const auto g = darkbert::write_attention_grid(dir / "g.svg", 3, 4, 5, 5, data.data(), o);
  std::multiset<std::string> texts;
  for (const auto& t : svg_texts(dir / "g.svg")) {
    texts.insert(t.text);
    CHECK(t.x >= 0);
    CHECK(t.x <= g.width);
    CHECK(t.y >= 0);
    CHECK(t.y <= g.height);
  }
  for (const char* s : {"Sentence 17", "layer", "head", "attention weight", "4"}) {
    CAPTURE(s);
    CHECK(texts.count(s) == 1);
  }
  CHECK(texts.count("0") == 0);  // 1-based numbering
  CHECK(texts.count("1") == 2);  // row 1 and column 1
  CHECK(texts.count("3") == 2);  // row 3 and column 3
}

TEST_CASE("attention grid: a vector of Eigen matrices and a raw buffer give the same figure") {
  const auto dir = darkbert::test::scratch_dir("viz_grid_inputs");
  const auto data = marked_grid([](int, int) { return 1.0f; });
  std::vector<Matrix<float>> maps;
  for (int k = 0; k < 12; ++k) maps.emplace_back(Eigen::Map<const Matrix<float>>(data.data() + k * 25, 5, 5));
  darkbert::write_attention_grid(dir / "raw.png", 3, 4, 5, 5, data.data());
  darkbert::write_attention_grid(dir / "maps.png", maps, 4);
  CHECK(read_bytes(dir / "raw.png") == read_bytes(dir / "maps.png"));
  darkbert::write_attention_grid(dir / "maps.pdf", maps, 4);
  CHECK(read_bytes(dir / "maps.pdf").rfind("%PDF-", 0) == 0);
}

TEST_CASE("attention grid: 128 x 128 maps in small panels keep a visible diagonal") {
  const auto dir = darkbert::test::scratch_dir("viz_grid_downscaled");
  std::vector<double> data(2 * 2 * 128 * 128, 0.0);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 128; ++i) data[static_cast<std::size_t>(k * 128 * 128 + i * 128 + i)] = 1.0;
  AttentionGridOptions o;
  o.panel_size = 40;  // 0.31 points, 0.62 pixels per cell
  const auto g = darkbert::write_attention_grid(dir / "g.png", 2, 2, 128, 128, data.data(), o);
  CHECK(g.first_panel.width == 40);
  const png_image png(dir / "g.png", g.pixels_per_point);
  const auto panel = g.panel(1, 1);
  const auto on = png.at(panel.x + 20, panel.y + 20), off = png.at(panel.x + 20, panel.y + 30);
  CHECK(on.g > off.g + 0.1);
  CHECK(near(off, o.map(0.0), 3.0 / 255));
}

TEST_CASE("attention grid errors name the path and the problem") {
  const auto dir = darkbert::test::scratch_dir("viz_grid_errors");
  const auto path = (dir / "g.png").string();
  std::vector<Matrix<float>> maps(6, Matrix<float>::Zero(4, 4));
  CHECK(message_of([&] { darkbert::write_attention_grid(path, std::vector<Matrix<float>>{}, 2); }) ==
        path + ": no attention maps to draw");
  CHECK(message_of([&] { darkbert::write_attention_grid(path, maps, 4); }) ==
        path + ": 6 maps do not fill whole rows of 4 columns");
  CHECK(message_of([&] { darkbert::write_attention_grid(path, maps, 0); }) ==
        path + ": 6 maps do not fill whole rows of 0 columns");
  maps[5] = Matrix<float>::Zero(4, 3);
  CHECK(message_of([&] { darkbert::write_attention_grid(path, maps, 3); }) ==
        path + ": map 5 is 4 x 3 but map 0 is 4 x 4");
  const std::vector<float> data(16, 0.5f);
  CHECK(message_of([&] { darkbert::write_attention_grid(path, 1, 1, 0, 4, data.data()); }) ==
        path + ": cannot draw empty maps (0 x 4)");
  CHECK(message_of([&] { darkbert::write_attention_grid(path, 0, 1, 4, 4, data.data()); }) ==
        path + ": cannot draw an empty grid (0 x 1 panels)");
  CHECK(message_of([&] { darkbert::write_attention_grid<float>(path, 1, 1, 4, 4, nullptr); }) ==
        path + ": no data for a [1, 1, 4, 4] attention grid");
  AttentionGridOptions o;
  o.scale_each_panel = true;
  o.vmax = 1;
  CHECK(message_of([&] { darkbert::write_attention_grid(path, 1, 1, 4, 4, data.data(), o); }) ==
        path + ": vmin/vmax set a shared scale; they cannot be combined with scale_each_panel");
  o = {};
  o.title = "\xE2\x82";
  CHECK(message_of([&] { darkbert::write_attention_grid(path, 1, 1, 4, 4, data.data(), o); }) ==
        path + ": title: '\xE2\x82' is not valid UTF-8 (bad byte at offset 0)");
  const auto missing = dir / "missing" / "g.svg";
  CHECK(message_of([&] { darkbert::write_attention_grid(missing, 1, 1, 4, 4, data.data()); }) ==
        missing.string() + ": cannot open for writing: No such file or directory");
  CHECK_FALSE(std::filesystem::exists(path));
}
