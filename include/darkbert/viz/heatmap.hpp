#pragma once
/// @file
/// Heatmap figures of one matrix (a [layers x heads] score table, one L x L attention map with token labels)
/// written as PNG, SVG or PDF: title, axis titles and tick labels, a colour bar with its scale, viridis or a
/// diverging map, optional value in every cell, NaN cells shown white with grey hatching.

#include <Eigen/Core>  // Eigen::DenseBase, Eigen::Map

#include <algorithm>    // std::max, std::min, std::clamp
#include <cmath>        // std::isnan, std::isfinite
#include <cstdint>      // std::uint32_t
#include <filesystem>   // std::filesystem::path
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

/// One axis of a heatmap: x runs over columns, y over rows.
struct HeatmapAxis {
  std::string title;                ///< e.g. "head", "key token"
  std::vector<std::string> labels;  ///< one per column (x) or row (y); empty: numbers counted from `first`
  long first = 0;                   ///< the number of the first row/column when there are no labels (1 = 1-based)
};

/// When to print each cell's value inside it.
enum class CellValues {
  automatic,  ///< when the matrix is small (at most 30 x 30) and the numbers fit the cells
  show,       ///< always (the font shrinks to fit, down to 4 pt)
  hide,
};

/// How a heatmap looks. Every field has a sensible default; set the ones you care about.
struct HeatmapOptions {
  std::string title;  ///<  figure title (none when empty)
  /// @{
  /// the column (x) and row (y) axes
  HeatmapAxis x, y;
  /// @}
  std::string value_label;               ///< title of the colour bar, e.g. "attention weight"
  Colormap map = Colormap::viridis();    ///< Colormap::coolwarm() for signed values (centred on 0)
  /// @{
  /// colour scale; default: the finite data range
  std::optional<double> vmin, vmax;
  /// @}
  CellValues annotate = CellValues::automatic;  ///<  when to print each cell's value
  int precision = 2;                     ///< decimals of cell values
  double cell_size = 0;                  ///< points per cell; 0: from the matrix size (12+ with text labels)
  double pixels_per_point = 2;           ///< PNG resolution (2 = 144 dpi); SVG and PDF are vector
  RgbColor nan_color{1, 1, 1};          ///< fill of NaN cells (hatched in grey when cells are 5 pt or more)
};

/// Where the parts of a written heatmap are, in points (PNG pixels = points * pixels_per_point).
struct HeatmapGeometry {
  /// @{
  /// the whole figure
  double width = 0, height = 0;
  /// @}
  double pixels_per_point = 1;   ///< of the PNG (1 for SVG and PDF)
  /// @{
  /// size of the matrix
  Index rows = 0, cols = 0;
  /// @}
  FigureRect cells;             ///< the matrix
  FigureRect colorbar;          ///< the bar: vmin at its bottom edge, vmax at its top edge
  /// @{
  /// the colour scale used
  double vmin = 0, vmax = 0;
  /// @}
  bool annotated = false;        ///< whether cell values were printed
  /// The rectangle of cell (row, col).
  FigureRect cell(Index row, Index col) const {
    const double w = cells.width / static_cast<double>(cols), h = cells.height / static_cast<double>(rows);
    return {cells.x + static_cast<double>(col) * w, cells.y + static_cast<double>(row) * h, w, h};
  }
};

namespace detail::viz {

/// Tick labels of one axis and which of them are shown (every `step`-th).
struct AxisTicks {
  std::vector<std::string> labels;
  Index step = 1;
  Font f = Style::tick;
  bool rotated = false;  ///< x labels drawn vertically, reading upward
  double extent = 0;     ///< room across the axis: label width (y, rotated x) or height (plain x)
};

/// Tick labels for `count` rows/columns of `cell` points. Text labels shrink (down to 6 pt) and numbers
/// thin out (every 2nd, 5th, 10th...) until they no longer overlap; x text labels turn vertical first.
inline AxisTicks layout_axis(const HeatmapAxis& axis, Index count, double cell, bool horizontal,
                              const TextMeasure& measure) {
  AxisTicks t;
  const bool text_labels = !axis.labels.empty();
  for (Index i = 0; i < count; ++i) {
    t.labels.push_back(text_labels ? axis.labels[static_cast<std::size_t>(i)] : std::to_string(axis.first + i));
  }
  auto widest = [&](Index step) {
    double w = 0;
    for (Index i = 0; i < count; i += step) w = std::max(w, measure.width(t.labels[static_cast<std::size_t>(i)], t.f));
    return w;
  };
  const double line = measure.height(t.f) * 1.05;
  if (text_labels && cell < line) t.f.size = std::max(6.0, t.f.size * cell / line);
  const double needed = measure.height(t.f) * 1.05;  // room along the axis for one line of text
  if (horizontal && !text_labels) {
    while (widest(t.step) + 3 > static_cast<double>(t.step) * cell && t.step < count) t.step = next_label_step(t.step);
  } else {
    t.rotated = horizontal && widest(1) + 2 > cell;
    while (needed > static_cast<double>(t.step) * cell && t.step < count) t.step = next_label_step(t.step);
  }
  t.extent = horizontal && !t.rotated ? measure.height(t.f) : widest(t.step);
  return t;
}

/// Cell values as text, and the font that fits them in a `cell`-point square (nullopt: they do not fit).
inline std::optional<Font> annotation_font(const Matrix<double>& values, int precision, bool scientific,
                                           double cell, CellValues mode, const TextMeasure& measure) {
  if (mode == CellValues::hide) return std::nullopt;
  if (mode == CellValues::automatic && values.rows() * values.cols() > 900) return std::nullopt;
  Font f{std::min(9.0, cell * 0.36), false};
  double widest = 0;
  for (Index i = 0; i < values.rows(); ++i)
    for (Index j = 0; j < values.cols(); ++j)
      if (!std::isnan(values(i, j)))
        widest = std::max(widest, measure.width(format_value(values(i, j), precision, scientific), f));
  if (widest > cell * 0.78) f.size *= cell * 0.78 / widest;  // keep a gap between neighbours
  const double smallest = mode == CellValues::show ? 4.0 : 5.5;
  if (f.size < smallest) {
    if (mode == CellValues::automatic) return std::nullopt;
    f.size = smallest;
  }
  return f;
}

inline HeatmapGeometry draw_heatmap(const std::filesystem::path& path, const Matrix<double>& values,
                                     const HeatmapOptions& o) {
  const std::string where = path.string();
  const Index rows = values.rows(), cols = values.cols();
  const FileFormat format = format_of(path);
  require(rows > 0 && cols > 0, where, ": cannot draw a heatmap of an empty matrix (", rows, " x ", cols, ")");
  require(o.x.labels.empty() || static_cast<Index>(o.x.labels.size()) == cols, where, ": ", o.x.labels.size(),
          " x labels for ", cols, " columns");
  require(o.y.labels.empty() || static_cast<Index>(o.y.labels.size()) == rows, where, ": ", o.y.labels.size(),
          " y labels for ", rows, " rows");
  require(o.precision >= 0 && o.precision <= 12, where, ": precision ", o.precision, " is outside [0, 12]");
  require(std::isfinite(o.cell_size) && o.cell_size >= 0, where, ": cell_size ", o.cell_size, " is not >= 0");
  require(std::isfinite(o.pixels_per_point) && o.pixels_per_point > 0 && o.pixels_per_point <= 16, where,
          ": pixels_per_point ", o.pixels_per_point, " is outside (0, 16]");
  require_utf8(o.title, where + ": title");
  require_utf8(o.value_label, where + ": value_label");
  require_utf8(o.x.title, where + ": x title");
  require_utf8(o.y.title, where + ": y title");
  for (std::size_t i = 0; i < o.x.labels.size(); ++i)
    require_utf8(o.x.labels[i], where + ": x label " + std::to_string(i));
  for (std::size_t i = 0; i < o.y.labels.size(); ++i)
    require_utf8(o.y.labels[i], where + ": y label " + std::to_string(i));

  const ValueRange range = resolve_range(values.data(), static_cast<std::size_t>(values.size()), o.vmin, o.vmax,
                                          o.map.diverging(), where);
  bool any_nan = false;
  for (Index k = 0; k < values.size(); ++k) any_nan = any_nan || std::isnan(values.data()[k]);

  // ---- layout, in points
  TextMeasure measure;
  const bool has_text_labels = !o.x.labels.empty() || !o.y.labels.empty();
  double cell = o.cell_size;
  if (cell == 0) {
    cell = std::clamp(360.0 / static_cast<double>(std::max(rows, cols)), 0.5, 36.0);
    if (has_text_labels) cell = std::max(cell, 12.0);
  }
  const AxisTicks xt = layout_axis(o.x, cols, cell, /*horizontal=*/true, measure);
  const AxisTicks yt = layout_axis(o.y, rows, cell, /*horizontal=*/false, measure);
  double largest = 0;
  for (Index k = 0; k < values.size(); ++k)
    if (std::isfinite(values.data()[k])) largest = std::max(largest, std::abs(values.data()[k]));
  const bool scientific = needs_scientific(largest, o.precision);
  const std::optional<Font> annotation = annotation_font(values, o.precision, scientific, cell, o.annotate, measure);
  const double title_height = o.title.empty() ? 0 : measure.height(Style::title) + Style::title_gap;
  const double axis_title_height = measure.height(Style::axis_title);

  FigureRect cells;
  cells.x = Style::margin + (o.y.title.empty() ? 0 : axis_title_height + Style::label_gap) + yt.extent +
            Style::tick_gap + Style::tick_length;
  cells.y = Style::margin + title_height;
  cells.width = cell * static_cast<double>(cols);
  cells.height = cell * static_cast<double>(rows);
  const double below = Style::tick_length + Style::tick_gap + xt.extent +
                       (o.x.title.empty() ? 0 : Style::label_gap + axis_title_height);

  ColorbarSpec bar_spec{&o.map, range, o.value_label, any_nan, o.nan_color, {}, {}};
  const double swatch = colorbar_swatch_height(bar_spec);
  FigureRect bar{cells.right() + Style::colorbar_gap, cells.y, Style::colorbar_width, std::max(cells.height, 100.0)};
  double width = bar.x + colorbar_extent(measure, bar_spec) + Style::margin;
  const double height = std::max(cells.bottom() + below, bar.bottom() + swatch) + Style::margin;
  const double title_width = o.title.empty() ? 0 : measure.width(o.title, Style::title);
  width = std::max(width, title_width + 2 * Style::margin);

  // ---- drawing
  const double ppp = format == FileFormat::png ? o.pixels_per_point : 1.0;
  Canvas c(format, width, height, ppp, where);
  if (!o.title.empty()) {  // centred over the cells, kept inside the figure
    const double x = std::clamp(cells.center_x() - title_width / 2, Style::margin, width - Style::margin - title_width);
    c.text(o.title, x, Style::margin, Style::title, HAlign::left, VAlign::top, 0, Style::ink);
  }

  std::vector<std::uint32_t> pixels(static_cast<std::size_t>(rows * cols));
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) {
      const double v = values(i, j);
      pixels[static_cast<std::size_t>(i * cols + j)] = pixel(std::isnan(v) ? o.nan_color : o.map(range.position(v)));
    }
  // Sharp squares unless several cells share one output pixel (huge matrices): then average them.
  c.image(cells, static_cast<int>(rows), static_cast<int>(cols), pixels, /*smooth=*/cell * ppp < 1);
  if (any_nan && cell >= 5) {
    for (Index i = 0; i < rows; ++i)
      for (Index j = 0; j < cols; ++j)
        if (std::isnan(values(i, j))) {
          c.hatch({cells.x + static_cast<double>(j) * cell, cells.y + static_cast<double>(i) * cell, cell, cell},
                  Style::hatch, std::max(3.0, cell / 4), 0.6);
        }
  }
  if (annotation) {
    for (Index i = 0; i < rows; ++i)
      for (Index j = 0; j < cols; ++j) {
        const double v = values(i, j);
        if (std::isnan(v)) continue;
        c.text(format_value(v, o.precision, scientific), cells.x + (static_cast<double>(j) + 0.5) * cell,
               cells.y + (static_cast<double>(i) + 0.5) * cell, *annotation, HAlign::center, VAlign::middle, 0,
               text_color_on(o.map(range.position(v))));
      }
  }
  c.stroke_rect(cells, Style::ink, Style::line_width);

  // x axis: ticks under the cells, labels, title
  const double x_labels_y = cells.bottom() + Style::tick_length + Style::tick_gap;
  for (Index j = 0; j < cols; j += xt.step) {
    const double x = cells.x + (static_cast<double>(j) + 0.5) * cell;
    c.line(x, cells.bottom(), x, cells.bottom() + Style::tick_length, Style::ink, Style::line_width);
    const auto& label = xt.labels[static_cast<std::size_t>(j)];
    if (xt.rotated) c.text(label, x, x_labels_y, xt.f, HAlign::right, VAlign::middle, -90, Style::ink);
    else c.text(label, x, x_labels_y, xt.f, HAlign::center, VAlign::top, 0, Style::ink);
  }
  if (!o.x.title.empty()) {
    c.text(o.x.title, cells.center_x(), x_labels_y + xt.extent + Style::label_gap, Style::axis_title,
           HAlign::center, VAlign::top, 0, Style::ink);
  }
  // y axis: ticks left of the cells, right-aligned labels, rotated title
  for (Index i = 0; i < rows; i += yt.step) {
    const double y = cells.y + (static_cast<double>(i) + 0.5) * cell;
    c.line(cells.x - Style::tick_length, y, cells.x, y, Style::ink, Style::line_width);
    c.text(yt.labels[static_cast<std::size_t>(i)], cells.x - Style::tick_length - Style::tick_gap, y, yt.f,
           HAlign::right, VAlign::middle, 0, Style::ink);
  }
  if (!o.y.title.empty()) {
    c.text(o.y.title, Style::margin + measure.ascent(Style::axis_title), cells.center_y(), Style::axis_title,
           HAlign::center, VAlign::baseline, -90, Style::ink);
  }
  draw_colorbar(c, bar, bar_spec);
  write_file(path, c.finish(where));

  HeatmapGeometry g;
  g.width = width, g.height = height, g.pixels_per_point = ppp;
  g.rows = rows, g.cols = cols, g.cells = cells, g.colorbar = bar;
  g.vmin = range.lo, g.vmax = range.hi, g.annotated = annotation.has_value();
  return g;
}

}  // namespace detail::viz

/// Writes `matrix` as a heatmap to `path` (.png, .svg or .pdf) and returns where its parts landed. Row i is
/// drawn as the i-th row from the top. Errors (empty matrix, label count, unwritable file, ...) are
/// darkbert::error naming the path.
///
/// @code
/// darkbert::Matrix<float> scores = ...;                       // [layers, heads]
/// darkbert::HeatmapOptions o;
/// o.title = "Head importance";
/// o.x = {"head", {}, 1};                                       // numbered 1, 2, ... 12
/// o.y = {"layer", {}, 1};
/// o.value_label = "accuracy drop";
/// darkbert::write_heatmap("importance.png", scores, o);
/// @endcode
///
/// @code
/// o = {};                                                      // one attention map with its tokens
/// o.x = {"key", tokens}; o.y = {"query", tokens};
/// darkbert::write_heatmap("pattern.svg", pattern, o);
/// @endcode
template <class Derived>
HeatmapGeometry write_heatmap(const std::filesystem::path& path, const Eigen::DenseBase<Derived>& matrix,
                               const HeatmapOptions& options = {}) {
  static_assert(std::is_arithmetic_v<typename Derived::Scalar>, "write_heatmap needs a matrix of numbers");
  const Matrix<double> values = matrix.derived().template cast<double>();
  return detail::viz::draw_heatmap(path, values, options);
}

/// The same for a row-major [rows, cols] buffer.
///
/// @code
/// std::vector<double> v = {0.1, 0.9, 0.5, 0.3};
/// darkbert::write_heatmap("small.png", 2, 2, v.data());
/// @endcode
template <class T>
HeatmapGeometry write_heatmap(const std::filesystem::path& path, Index rows, Index cols, const T* data,
                               const HeatmapOptions& options = {}) {
  static_assert(std::is_arithmetic_v<T>, "write_heatmap needs numbers");
  require(rows >= 0 && cols >= 0, path.string(), ": negative heatmap shape (", rows, " x ", cols, ")");
  require(data != nullptr || rows * cols == 0, path.string(), ": no data for a ", rows, " x ", cols, " heatmap");
  if (rows * cols == 0) return detail::viz::draw_heatmap(path, Matrix<double>(rows, cols), options);
  return write_heatmap(path, Eigen::Map<const Matrix<T>>(data, rows, cols), options);
}

}  // namespace darkbert
