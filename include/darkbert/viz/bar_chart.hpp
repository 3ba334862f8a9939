#pragma once
/// @file
/// Stacked bar charts (PNG, SVG or PDF by extension): one bar per category (e.g. a GLUE task), each bar
/// the stack of its series' values (e.g. the share of each attention-pattern class, the paper's
/// Figure 2). Labelled axes with round ticks, category names under the bars, a legend beside the plot
/// listing the series top to bottom in the order they are stacked from the top.
///
/// @code
/// darkbert::write_stacked_bar_chart("proportions.png", {"MRPC", "SST-2"},
///                                   {{"vertical", {0.3, 0.4}}, {"heterogeneous", {0.7, 0.6}}},
///                                   {.title = "Pattern classes", .x_label = "task", .y_label = "share of maps"});
/// @endcode

#include <algorithm>   // std::max
#include <array>       // std::array
#include <cmath>       // std::isfinite
#include <cstddef>     // std::size_t
#include <filesystem>  // std::filesystem::path
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "canvas.hpp"
#include "color_scale.hpp"  // Style, ValueRange, nice_ticks, format_tick

namespace darkbert {

/// One stacked series: its value in every category (>= 0).
struct BarSeries {
  std::string name;            ///< legend entry
  std::vector<double> values;  ///< one per category
};

/// Labels and size of a bar chart.
struct BarChartOptions {
  std::string title;            ///< above the plot (may be empty)
  std::string x_label;          ///< title of the x axis (what a category is)
  std::string y_label;          ///< title of the y axis
  std::optional<double> y_max;  ///< top of the y axis (default: the tallest stack; 1 when every stack is empty)
  double bar_width = 30;        ///< points
  double bar_gap = 16;          ///< points between bars (widened when category names need it)
  double plot_height = 220;     ///< points
  double pixels_per_point = 2;  ///< PNG resolution
};

/// Where the parts of a written bar chart are, in points (PNG pixels = points * pixels_per_point).
struct BarChartGeometry {
  /// @{
  /// the whole figure
  double width = 0, height = 0;
  /// @}
  double pixels_per_point = 1;                    ///< of the PNG (1 for SVG and PDF)
  FigureRect plot;                                ///< the plotting area (y = 0 at its bottom edge)
  std::vector<std::vector<FigureRect>> segments;  ///< [category][series]: each drawn piece of a bar
  FigureRect legend;                              ///< the legend box
  double y_max = 1;                               ///< the value at the top of the plot
};

/// The colour of series k (Tableau's ten colours, repeating): distinct and legible in print.
inline RgbColor bar_series_color(std::size_t k) {
  static constexpr std::array<RgbColor, 10> palette = {{{0.12, 0.47, 0.71},
                                                        {1.00, 0.50, 0.05},
                                                        {0.17, 0.63, 0.17},
                                                        {0.84, 0.15, 0.16},
                                                        {0.58, 0.40, 0.74},
                                                        {0.55, 0.34, 0.29},
                                                        {0.89, 0.47, 0.76},
                                                        {0.50, 0.50, 0.50},
                                                        {0.74, 0.74, 0.13},
                                                        {0.09, 0.75, 0.81}}};
  return palette[k % palette.size()];
}

/// Writes the chart to `path` (crash-safe like every figure). series[0] sits at the bottom of each bar.
inline BarChartGeometry write_stacked_bar_chart(const std::filesystem::path& path,
                                                const std::vector<std::string>& categories,
                                                const std::vector<BarSeries>& series, const BarChartOptions& o) {
  using namespace detail::viz;  // Canvas, Style, ValueRange, nice_ticks, format_tick
  const std::string where = path.string();
  require(!categories.empty(), where, ": a bar chart needs at least one category");
  require(!series.empty(), where, ": a bar chart needs at least one series");
  require(std::isfinite(o.bar_width) && o.bar_width > 0 && std::isfinite(o.bar_gap) && o.bar_gap >= 0 &&
              std::isfinite(o.plot_height) && o.plot_height > 0,
          where, ": bar width, gap and plot height must be positive");
  require(std::isfinite(o.pixels_per_point) && o.pixels_per_point > 0 && o.pixels_per_point <= 16, where,
          ": pixels_per_point ", o.pixels_per_point, " is outside (0, 16]");
  require_utf8(o.title, where + ": title");
  require_utf8(o.x_label, where + ": x label");
  require_utf8(o.y_label, where + ": y label");
  double tallest = 0;
  for (std::size_t c = 0; c < categories.size(); ++c) {
    require_utf8(categories[c], where + ": category " + std::to_string(c));
    double stack = 0;
    for (const auto& s : series) {
      require(s.values.size() == categories.size(), where, ": series '", s.name, "' has ", s.values.size(),
              " values for ", categories.size(), " categories");
      const double v = s.values[c];
      require(std::isfinite(v) && v >= 0, where, ": series '", s.name, "' has the value ", v, " in category '",
              categories[c], "'; stacked bars need finite values >= 0");
      stack += v;
    }
    tallest = std::max(tallest, stack);
  }
  for (const auto& s : series) require_utf8(s.name, where + ": series name");
  require(!o.y_max || (std::isfinite(*o.y_max) && *o.y_max > 0), where, ": y_max ", o.y_max.value_or(0),
          " must be positive");
  const ValueRange yr{0, o.y_max.value_or(tallest > 0 ? tallest : 1.0)};
  const auto ticks = nice_ticks(yr);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : yr.hi;

  // ---- layout, in points
  const TextMeasure m;
  double tick_width = 0;
  for (double t : ticks) tick_width = std::max(tick_width, m.width(format_tick(t, step), Style::tick));
  double category_width = 0;
  for (const auto& c : categories) category_width = std::max(category_width, m.width(c, Style::tick));
  const double pitch = std::max(o.bar_width + o.bar_gap, category_width + 6);
  const double left = Style::margin + (o.y_label.empty() ? 0 : m.height(Style::axis_title) + Style::label_gap) +
                      tick_width + Style::tick_gap + Style::tick_length;
  const double top = Style::margin + (o.title.empty() ? 0 : m.height(Style::title) + Style::title_gap);
  const FigureRect plot{left, top, pitch * static_cast<double>(categories.size()), o.plot_height};
  const double row = m.height(Style::tick) + 4, swatch = 9;
  double legend_text = 0;
  for (const auto& s : series) legend_text = std::max(legend_text, m.width(s.name, Style::tick));
  const FigureRect legend{plot.right() + 14, plot.y, 8 + swatch + 5 + legend_text + 6,
                          static_cast<double>(series.size()) * row + 6};
  const double bottom = plot.bottom() + Style::tick_length + Style::tick_gap + m.height(Style::tick) +
                        (o.x_label.empty() ? 0 : Style::label_gap + m.height(Style::axis_title)) + Style::margin;
  const double title_width = o.title.empty() ? 0 : m.width(o.title, Style::title);
  const double width = std::max(legend.right() + Style::margin, title_width + 2 * Style::margin);
  const double height = std::max(bottom, legend.bottom() + Style::margin);

  // ---- drawing
  const FileFormat format = format_of(path);
  const double ppp = format == FileFormat::png ? o.pixels_per_point : 1.0;
  Canvas c(format, width, height, ppp, where);
  const auto py = [&](double v) { return plot.bottom() - std::min(1.0, yr.position(v)) * plot.height; };
  if (!o.title.empty())
    c.text(o.title, std::max(Style::margin + title_width / 2, plot.center_x()), Style::margin, Style::title,
           HAlign::center, VAlign::top, 0, Style::ink);
  constexpr RgbColor grid{0.88, 0.88, 0.88};
  for (double t : ticks) {
    c.line(plot.x, py(t), plot.right(), py(t), grid, 0.5);
    c.line(plot.x - Style::tick_length, py(t), plot.x, py(t), Style::ink, Style::line_width);
    c.text(format_tick(t, step), plot.x - Style::tick_length - Style::tick_gap, py(t), Style::tick, HAlign::right,
           VAlign::middle, 0, Style::ink);
  }
  BarChartGeometry g;
  g.segments.resize(categories.size());
  for (std::size_t k = 0; k < categories.size(); ++k) {
    const double x = plot.x + pitch * static_cast<double>(k) + (pitch - o.bar_width) / 2;
    double base = 0;
    for (std::size_t s = 0; s < series.size(); ++s) {
      const double v = series[s].values[k];
      const FigureRect r{x, py(base + v), o.bar_width, py(base) - py(base + v)};
      if (r.height > 0) c.fill_rect(r, bar_series_color(s));
      g.segments[k].push_back(r);
      base += v;
    }
    const double center = plot.x + pitch * (static_cast<double>(k) + 0.5);
    c.line(center, plot.bottom(), center, plot.bottom() + Style::tick_length, Style::ink, Style::line_width);
    c.text(categories[k], center, plot.bottom() + Style::tick_length + Style::tick_gap, Style::tick, HAlign::center,
           VAlign::top, 0, Style::ink);
  }
  if (!o.x_label.empty())
    c.text(o.x_label, plot.center_x(),
           plot.bottom() + Style::tick_length + Style::tick_gap + m.height(Style::tick) + Style::label_gap,
           Style::axis_title, HAlign::center, VAlign::top, 0, Style::ink);
  if (!o.y_label.empty())
    c.text(o.y_label, Style::margin, plot.center_y(), Style::axis_title, HAlign::center, VAlign::top, -90, Style::ink);
  c.stroke_rect(plot, Style::ink, Style::line_width);

  // Legend: the top series first, as the stacks read from the top down.
  c.stroke_rect(legend, Style::ink, 0.5);
  for (std::size_t r = 0; r < series.size(); ++r) {
    const std::size_t s = series.size() - 1 - r;
    const double y = legend.y + 3 + static_cast<double>(r) * row;
    c.fill_rect({legend.x + 8, y + (row - swatch) / 2, swatch, swatch}, bar_series_color(s));
    c.text(series[s].name, legend.x + 8 + swatch + 5, y + row / 2, Style::tick, HAlign::left, VAlign::middle, 0,
           Style::ink);
  }
  write_file(path, c.finish(where));
  g.width = width, g.height = height, g.pixels_per_point = ppp;
  g.plot = plot, g.legend = legend, g.y_max = yr.hi;
  return g;
}

}  // namespace darkbert
