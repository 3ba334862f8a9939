#pragma once
/// @file
/// Line charts (PNG, SVG or PDF by extension): training curves such as held-out accuracy over steps, or
/// the attention mass of the strongest heads as pretraining goes on. Labelled axes with round ticks, one
/// colour per series, a legend.
///
/// @code
/// darkbert::write_line_chart("curve.png", {{"held-out accuracy", steps, accuracy}},
///                            {.title = "mini BERT", .x_label = "step", .y_label = "accuracy"});
/// @endcode

#include <algorithm>   // std::max, std::min
#include <array>       // std::array
#include <cmath>       // std::isfinite
#include <filesystem>  // std::filesystem::path
#include <limits>      // std::numeric_limits
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "canvas.hpp"
#include "color_scale.hpp"  // Style, ValueRange, nice_ticks, format_tick

namespace darkbert {

/// One curve: y over x (same length; non-finite points break the line).
struct LineSeries {
  std::string name;       ///< legend entry
  std::vector<double> x;  ///< abscissae, increasing
  std::vector<double> y;  ///< values
};

/// Labels and size of a line chart.
struct LineChartOptions {
  std::string title;                ///< above the plot (may be empty)
  std::string x_label;              ///< title of the x axis
  std::string y_label;              ///< title of the y axis
  std::optional<double> y_min;      ///< fixed lower end of the y axis (default: the data's, padded)
  std::optional<double> y_max;      ///< fixed upper end of the y axis
  double plot_width = 360;          ///< points
  double plot_height = 220;         ///< points
  double pixels_per_point = 2;      ///< PNG resolution
};

/// Writes the chart to `path` (crash-safe like every figure: written whole or not at all).
inline void write_line_chart(const std::filesystem::path& path, const std::vector<LineSeries>& series,
                             const LineChartOptions& o) {
  using namespace detail::viz;  // Canvas, Style, ValueRange, nice_ticks, format_tick
  const std::string where = path.string();
  require(!series.empty(), where, ": a line chart needs at least one series");
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const auto& s : series) {
    require(s.x.size() == s.y.size(), where, ": series '", s.name, "' has ", s.x.size(), " x and ", s.y.size(), " y values");
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
    }
  }
  if (!(x_lo <= x_hi)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;  // nothing finite: an empty frame
  if (x_hi == x_lo) x_hi = x_lo + 1;
  const double pad = (y_hi > y_lo ? y_hi - y_lo : 1.0) * 0.05;
  const ValueRange xr{x_lo, x_hi}, yr{o.y_min.value_or(y_lo - pad), o.y_max.value_or(y_hi + pad)};
  require(yr.hi > yr.lo, where, ": y_min must be below y_max");
  const auto x_ticks = nice_ticks(xr), y_ticks = nice_ticks(yr);
  auto step_of = [](const std::vector<double>& t, const ValueRange& r) { return t.size() > 1 ? t[1] - t[0] : r.hi - r.lo; };

  const TextMeasure m;
  double y_label_width = 0;
  for (double t : y_ticks) y_label_width = std::max(y_label_width, m.width(format_tick(t, step_of(y_ticks, yr)), Style::tick));
  const double left = Style::margin + m.height(Style::axis_title) + Style::label_gap + y_label_width + Style::tick_gap + Style::tick_length;
  const double top = Style::margin + (o.title.empty() ? 0 : m.height(Style::title) + Style::title_gap);
  const double bottom = Style::tick_length + Style::tick_gap + m.height(Style::tick) + Style::label_gap + m.height(Style::axis_title) + Style::margin;
  const FigureRect plot{left, top, o.plot_width, o.plot_height};
  Canvas c(format_of(path), plot.right() + Style::margin + 10, plot.bottom() + bottom, o.pixels_per_point, where);
  const auto px = [&](double x) { return plot.x + xr.position(x) * plot.width; };
  const auto py = [&](double y) { return plot.bottom() - std::clamp(yr.position(y), 0.0, 1.0) * plot.height; };

  if (!o.title.empty()) c.text(o.title, plot.center_x(), Style::margin, Style::title, HAlign::center, VAlign::top, 0, Style::ink);
  constexpr RgbColor grid{0.88, 0.88, 0.88};
  for (double t : y_ticks) {
    c.line(plot.x, py(t), plot.right(), py(t), grid, 0.5);
    c.line(plot.x - Style::tick_length, py(t), plot.x, py(t), Style::ink, Style::line_width);
    c.text(format_tick(t, step_of(y_ticks, yr)), plot.x - Style::tick_length - Style::tick_gap, py(t), Style::tick,
           HAlign::right, VAlign::middle, 0, Style::ink);
  }
  for (double t : x_ticks) {
    c.line(px(t), plot.bottom(), px(t), plot.bottom() + Style::tick_length, Style::ink, Style::line_width);
    c.text(format_tick(t, step_of(x_ticks, xr)), px(t), plot.bottom() + Style::tick_length + Style::tick_gap, Style::tick,
           HAlign::center, VAlign::top, 0, Style::ink);
  }
  c.text(o.x_label, plot.center_x(), plot.bottom() + Style::tick_length + Style::tick_gap + m.height(Style::tick) + Style::label_gap,
         Style::axis_title, HAlign::center, VAlign::top, 0, Style::ink);
  c.text(o.y_label, Style::margin, plot.center_y(), Style::axis_title, HAlign::center, VAlign::top, -90, Style::ink);

  // Tableau's ten colours: distinct and legible in print.
  static constexpr std::array<RgbColor, 10> palette = {{{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17},
                                                        {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
                                                        {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50}, {0.74, 0.74, 0.13},
                                                        {0.09, 0.75, 0.81}}};
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const RgbColor color = palette[k % palette.size()];
    for (std::size_t i = 0; i + 1 < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && std::isfinite(s.x[i + 1]) && std::isfinite(s.y[i + 1]))
        c.line(px(s.x[i]), py(s.y[i]), px(s.x[i + 1]), py(s.y[i + 1]), color, 1.6);
    if (s.x.size() == 1 && std::isfinite(s.y[0])) c.fill_rect({px(s.x[0]) - 2, py(s.y[0]) - 2, 4, 4}, color);
  }
  // Legend inside the plot, in the corner the curves cross least (top left on a tie), on white.
  const double row = m.height(Style::tick) + 3;
  double legend_width = 0;
  for (const auto& s : series) legend_width = std::max(legend_width, m.width(s.name, Style::tick));
  const double box_w = legend_width + 30, box_h = static_cast<double>(series.size()) * row + 4;
  const std::array<FigureRect, 4> corners = {{{plot.x + 4, plot.y + 3, box_w, box_h},
                                               {plot.right() - 4 - box_w, plot.y + 3, box_w, box_h},
                                               {plot.x + 4, plot.bottom() - 3 - box_h, box_w, box_h},
                                               {plot.right() - 4 - box_w, plot.bottom() - 3 - box_h, box_w, box_h}}};
  auto crossings = [&](const FigureRect& r) {  // points along the curves (20 per segment) inside r
    int n = 0;
    for (const auto& s : series)
      for (std::size_t i = 0; i + 1 < s.x.size(); ++i)
        for (int t = 0; t <= 20; ++t) {
          const double a = t / 20.0, x = px(s.x[i]) * (1 - a) + px(s.x[i + 1]) * a, y = py(s.y[i]) * (1 - a) + py(s.y[i + 1]) * a;
          n += x >= r.x && x <= r.right() && y >= r.y && y <= r.bottom();  // NaN compares false: not counted
        }
    return n;
  };
  FigureRect box = corners[0];
  int fewest = std::numeric_limits<int>::max();
  for (const auto& r : corners)
    if (const int n = crossings(r); n < fewest) fewest = n, box = r;
  c.fill_rect(box, RgbColor{1, 1, 1});
  for (std::size_t k = 0; k < series.size(); ++k) {
    const double ly = box.y + 5 + static_cast<double>(k) * row;
    c.line(box.x + 4, ly, box.x + 20, ly, palette[k % palette.size()], 2.0);
    c.text(series[k].name, box.x + 24, ly, Style::tick, HAlign::left, VAlign::middle, 0, Style::ink);
  }
  c.stroke_rect(plot, Style::ink, Style::line_width);
  write_file(path, c.finish(where));
}

}  // namespace darkbert
