#pragma once
/// @file
/// A grid of small heatmaps, one per (layer, head) attention map, like Figure 1 of "Revealing the Dark
/// Secrets of BERT": rows are layers, columns heads, one shared colour bar (or each panel scaled to its own
/// range), written as PNG, SVG or PDF.

#include <Eigen/Core>  // Eigen::DenseBase

#include <algorithm>    // std::max, std::min, std::clamp
#include <cmath>        // std::isnan, std::isfinite
#include <cstdint>      // std::uint32_t
#include <filesystem>   // std::filesystem::path
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional
#include <string>       // std::string, std::to_string
#include <type_traits>  // std::is_arithmetic_v
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/core/matrix.hpp"
#include "darkbert/viz/canvas.hpp"
#include "darkbert/viz/color_scale.hpp"
#include "darkbert/viz/colormap.hpp"

namespace darkbert {

/// How an attention grid looks. Every field has a default; set the ones you care about.
struct AttentionGridOptions {
  std::string title;  ///<  figure title (none when empty)
  /// @{
  /// axis titles of the panel rows and columns
  std::string row_title = "layer", col_title = "head";
  /// @}
  /// @{
  /// number of the first row/column (1 = 1-based)
  long row_first = 0, col_first = 0;
  /// @}
  std::string value_label = "attention weight";  ///< title of the colour bar
  Colormap map = Colormap::viridis();  ///<  colours of the cells
  /// @{
  /// shared colour scale; default: the finite data range
  std::optional<double> vmin, vmax;
  /// @}
  bool scale_each_panel = false;              ///< each panel from its own minimum (bottom colour) to maximum
  double panel_size = 0;                      ///< points per panel side; 0: from the grid size
  double pixels_per_point = 2;                ///< PNG resolution (2 = 144 dpi)
  RgbColor nan_color{1, 1, 1};               ///< fill of NaN cells
};

/// Where the parts of a written grid are, in points (PNG pixels = points * pixels_per_point).
struct AttentionGridGeometry {
  /// @{
  /// size of the whole figure, points
  double width = 0, height = 0;
  /// @}
  double pixels_per_point = 1;            ///< of the PNG (1 for SVG and PDF)
  /// @{
  /// panels
  Index grid_rows = 0, grid_cols = 0;
  /// @}
  /// @{
  /// cells of one panel
  Index map_rows = 0, map_cols = 0;
  /// @}
  FigureRect first_panel;                ///< panel (0, 0)
  /// @{
  /// distance between neighbouring panels
  double pitch_x = 0, pitch_y = 0;
  /// @}
  FigureRect colorbar;                   ///< vmin at its bottom edge, vmax at its top edge
  /// @{
  /// the shared scale ([0, 1] when each panel is scaled)
  double vmin = 0, vmax = 0;
  /// @}
  /// The rectangle of panel (row, col).
  FigureRect panel(Index row, Index col) const {
    return {first_panel.x + static_cast<double>(col) * pitch_x, first_panel.y + static_cast<double>(row) * pitch_y,
            first_panel.width, first_panel.height};
  }
};

namespace detail::viz {

/// `data` is [grid_rows, grid_cols, map_rows, map_cols], row-major.
inline AttentionGridGeometry draw_attention_grid(const std::filesystem::path& path, Index grid_rows,
                                                   Index grid_cols, Index map_rows, Index map_cols,
                                                   const std::vector<double>& data,
                                                   const AttentionGridOptions& o) {
  const std::string where = path.string();
  const FileFormat format = format_of(path);
  require(grid_rows > 0 && grid_cols > 0, where, ": cannot draw an empty grid (", grid_rows, " x ", grid_cols,
          " panels)");
  require(map_rows > 0 && map_cols > 0, where, ": cannot draw empty maps (", map_rows, " x ", map_cols, ")");
  require(std::isfinite(o.panel_size) && o.panel_size >= 0, where, ": panel_size ", o.panel_size, " is not >= 0");
  require(std::isfinite(o.pixels_per_point) && o.pixels_per_point > 0 && o.pixels_per_point <= 16, where,
          ": pixels_per_point ", o.pixels_per_point, " is outside (0, 16]");
  require(!(o.scale_each_panel && (o.vmin || o.vmax)), where,
          ": vmin/vmax set a shared scale; they cannot be combined with scale_each_panel");
  require_utf8(o.title, where + ": title");
  require_utf8(o.row_title, where + ": row_title");
  require_utf8(o.col_title, where + ": col_title");
  require_utf8(o.value_label, where + ": value_label");

  const Index cells = map_rows * map_cols;
  const auto panel_data = [&](Index r, Index c) { return data.data() + (r * grid_cols + c) * cells; };
  ValueRange shared{0, 1};
  if (!o.scale_each_panel) {
    shared = resolve_range(data.data(), data.size(), o.vmin, o.vmax, o.map.diverging(), where);
  }
  bool any_nan = false;
  for (double v : data) any_nan = any_nan || std::isnan(v);

  // ---- layout, in points
  TextMeasure measure;
  const double longest = static_cast<double>(std::max(grid_rows, grid_cols));
  const double side = o.panel_size > 0 ? o.panel_size : std::clamp(600.0 / longest, 16.0, 96.0);
  const double aspect = static_cast<double>(map_cols) / static_cast<double>(map_rows);
  const double panel_w = aspect >= 1 ? side : side * aspect, panel_h = aspect >= 1 ? side / aspect : side;
  const double gap = std::max(2.0, side * 0.08);
  const double pitch_x = panel_w + gap, pitch_y = panel_h + gap;

  // Number every panel row/column unless the numbers would collide; then every 2nd, 5th, 10th ...
  auto label_step = [](double room, double needed) {
    Index step = 1;
    while (needed > room * static_cast<double>(step)) step = next_label_step(step);
    return step;
  };
  const double row_label_w = std::max(measure.width(std::to_string(o.row_first), Style::tick),
                                      measure.width(std::to_string(o.row_first + grid_rows - 1), Style::tick));
  const double col_label_w = std::max(measure.width(std::to_string(o.col_first), Style::tick),
                                      measure.width(std::to_string(o.col_first + grid_cols - 1), Style::tick));
  const Index row_step = label_step(pitch_y, measure.height(Style::tick));
  const Index col_step = label_step(pitch_x, col_label_w + 3);

  const double title_height = o.title.empty() ? 0 : measure.height(Style::title) + Style::title_gap;
  const double axis_title_height = measure.height(Style::axis_title);
  const double top = Style::margin + title_height + (o.col_title.empty() ? 0 : axis_title_height + 3) +
                     measure.height(Style::tick) + 4;
  const double left = Style::margin + (o.row_title.empty() ? 0 : axis_title_height + Style::label_gap) +
                      row_label_w + 4;
  const FigureRect grid{left, top, static_cast<double>(grid_cols) * pitch_x - gap,
                         static_cast<double>(grid_rows) * pitch_y - gap};

  ColorbarSpec bar_spec{&o.map, shared, o.value_label, any_nan, o.nan_color, {}, {}};
  if (o.scale_each_panel) {
    bar_spec.low_label = "panel min", bar_spec.high_label = "panel max";
  }
  const FigureRect bar{grid.right() + Style::colorbar_gap, grid.y, Style::colorbar_width,
                        std::max(grid.height, 100.0)};
  const double title_width = o.title.empty() ? 0 : measure.width(o.title, Style::title);
  const double width = std::max(bar.x + colorbar_extent(measure, bar_spec) + Style::margin,
                                title_width + 2 * Style::margin);
  const double height = std::max(grid.bottom(), bar.bottom() + colorbar_swatch_height(bar_spec)) + Style::margin;

  // ---- drawing
  const double ppp = format == FileFormat::png ? o.pixels_per_point : 1.0;
  Canvas c(format, width, height, ppp, where);
  if (!o.title.empty()) {
    const double x = std::clamp(grid.center_x() - title_width / 2, Style::margin, width - Style::margin - title_width);
    c.text(o.title, x, Style::margin, Style::title, HAlign::left, VAlign::top, 0, Style::ink);
  }
  if (!o.col_title.empty()) {
    c.text(o.col_title, grid.center_x(), Style::margin + title_height, Style::axis_title, HAlign::center,
           VAlign::top, 0, Style::ink);
  }
  if (!o.row_title.empty()) {
    c.text(o.row_title, Style::margin + measure.ascent(Style::axis_title), grid.center_y(), Style::axis_title,
           HAlign::center, VAlign::baseline, -90, Style::ink);
  }
  for (Index col = 0; col < grid_cols; col += col_step) {
    c.text(std::to_string(o.col_first + col), grid.x + static_cast<double>(col) * pitch_x + panel_w / 2, top - 4,
           Style::tick, HAlign::center, VAlign::bottom, 0, Style::ink);
  }
  for (Index row = 0; row < grid_rows; row += row_step) {
    c.text(std::to_string(o.row_first + row), left - 4, grid.y + static_cast<double>(row) * pitch_y + panel_h / 2,
           Style::tick, HAlign::right, VAlign::middle, 0, Style::ink);
  }

  // Averaging when several cells share an output pixel keeps thin structure (a diagonal) visible.
  const double cell_points = panel_w / static_cast<double>(map_cols);
  const bool smooth = cell_points * ppp < 1;
  std::vector<std::uint32_t> pixels(static_cast<std::size_t>(cells));
  for (Index row = 0; row < grid_rows; ++row)
    for (Index col = 0; col < grid_cols; ++col) {
      const double* values = panel_data(row, col);
      ValueRange range = shared;
      if (o.scale_each_panel) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (Index k = 0; k < cells; ++k)
          if (std::isfinite(values[k])) lo = std::min(lo, values[k]), hi = std::max(hi, values[k]);
        if (lo < hi) range = {lo, hi};
        else if (lo == hi) range = {lo - 1, lo};  // a flat panel is drawn in the top colour
        else range = {0, 1};                      // nothing finite: only NaN / inf cells
      }
      for (Index k = 0; k < cells; ++k) {
        const double v = values[k];
        pixels[static_cast<std::size_t>(k)] = pixel(std::isnan(v) ? o.nan_color : o.map(range.position(v)));
      }
      const FigureRect where_panel{grid.x + static_cast<double>(col) * pitch_x,
                                    grid.y + static_cast<double>(row) * pitch_y, panel_w, panel_h};
      c.image(where_panel, static_cast<int>(map_rows), static_cast<int>(map_cols), pixels, smooth);
      c.stroke_rect(where_panel, Style::ink, 0.4);
    }
  draw_colorbar(c, bar, bar_spec);
  write_file(path, c.finish(where));

  AttentionGridGeometry g;
  g.width = width, g.height = height, g.pixels_per_point = ppp;
  g.grid_rows = grid_rows, g.grid_cols = grid_cols, g.map_rows = map_rows, g.map_cols = map_cols;
  g.first_panel = {grid.x, grid.y, panel_w, panel_h};
  g.pitch_x = pitch_x, g.pitch_y = pitch_y;
  g.colorbar = bar, g.vmin = shared.lo, g.vmax = shared.hi;
  return g;
}

}  // namespace detail::viz

/// Writes a grid_rows x grid_cols grid of attention maps to `path` (.png, .svg or .pdf). `data` is row-major
/// [grid_rows, grid_cols, map_rows, map_cols], e.g. one sequence's patterns [layers, heads, L, L].
///
/// @code
/// std::vector<float> patterns(12 * 12 * L * L);          // from the model's hook_pattern of each layer
/// darkbert::AttentionGridOptions o;
/// o.title = "Attention maps, sentence 17";
/// o.row_first = o.col_first = 1;                          // layers and heads numbered from 1
/// darkbert::write_attention_grid("maps.png", 12, 12, L, L, patterns.data(), o);
/// @endcode
template <class T>
AttentionGridGeometry write_attention_grid(const std::filesystem::path& path, Index grid_rows, Index grid_cols,
                                             Index map_rows, Index map_cols, const T* data,
                                             const AttentionGridOptions& options = {}) {
  static_assert(std::is_arithmetic_v<T>, "write_attention_grid needs numbers");
  require(grid_rows >= 0 && grid_cols >= 0 && map_rows >= 0 && map_cols >= 0, path.string(),
          ": negative attention grid shape [", grid_rows, ", ", grid_cols, ", ", map_rows, ", ", map_cols, "]");
  const Index count = grid_rows * grid_cols * map_rows * map_cols;
  require(data != nullptr || count == 0, path.string(), ": no data for a [", grid_rows, ", ", grid_cols, ", ",
          map_rows, ", ", map_cols, "] attention grid");
  std::vector<double> values(data, data + count);
  return detail::viz::draw_attention_grid(path, grid_rows, grid_cols, map_rows, map_cols, values, options);
}

/// The same for a list of equally shaped maps in row-major grid order (map k is panel (k / grid_cols,
/// k % grid_cols)), e.g. maps[layer * heads + head].
///
/// @code
/// std::vector<darkbert::Matrix<float>> maps = ...;       // 144 maps of L x L
/// darkbert::write_attention_grid("maps.svg", maps, /*grid_cols=*/12);
/// @endcode
template <class Derived>
AttentionGridGeometry write_attention_grid(const std::filesystem::path& path, const std::vector<Derived>& maps,
                                             Index grid_cols, const AttentionGridOptions& options = {}) {
  static_assert(std::is_arithmetic_v<typename Derived::Scalar>, "write_attention_grid needs matrices of numbers");
  const std::string where = path.string();
  require(!maps.empty(), where, ": no attention maps to draw");
  require(grid_cols > 0 && static_cast<Index>(maps.size()) % grid_cols == 0, where, ": ", maps.size(),
          " maps do not fill whole rows of ", grid_cols, " columns");
  const Index map_rows = maps[0].rows(), map_cols = maps[0].cols();
  std::vector<double> values;
  values.reserve(maps.size() * static_cast<std::size_t>(map_rows * map_cols));
  for (std::size_t k = 0; k < maps.size(); ++k) {
    require(maps[k].rows() == map_rows && maps[k].cols() == map_cols, where, ": map ", k, " is ", maps[k].rows(),
            " x ", maps[k].cols(), " but map 0 is ", map_rows, " x ", map_cols);
    for (Index i = 0; i < map_rows; ++i)
      for (Index j = 0; j < map_cols; ++j) values.push_back(static_cast<double>(maps[k](i, j)));
  }
  return detail::viz::draw_attention_grid(path, static_cast<Index>(maps.size()) / grid_cols, grid_cols, map_rows,
                                          map_cols, values, options);
}

}  // namespace darkbert
