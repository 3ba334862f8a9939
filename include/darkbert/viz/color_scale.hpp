#pragma once
/// @file
/// The value scale of a figure: which values land on the ends of the colour map, "nice" tick values, how
/// numbers are printed, the shared look (fonts, spacing), and the colour bar that shows the scale.

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::isfinite, std::isnan, std::abs, std::pow, std::floor, std::ceil, std::log10
#include <cstddef>    // std::ptrdiff_t, std::size_t
#include <cstdio>     // std::snprintf
#include <limits>     // std::numeric_limits
#include <optional>   // std::optional
#include <string>     // std::string
#include <utility>    // std::pair
#include <vector>     // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/viz/canvas.hpp"
#include "darkbert/viz/colormap.hpp"

namespace darkbert::detail::viz {

/// Sizes shared by all figures, in points.
struct Style {
  static constexpr double margin = 10;          ///< around the figure
  static constexpr double tick_length = 3.5;    ///< tick marks
  static constexpr double tick_gap = 2.5;       ///< tick mark -> tick label
  static constexpr double label_gap = 6;        ///< tick labels -> axis title
  static constexpr double title_gap = 8;        ///< figure title -> plot
  static constexpr double colorbar_gap = 14;    ///< plot -> colour bar
  static constexpr double colorbar_width = 12;  ///< colour bar
  static constexpr double line_width = 0.8;     ///< frames and ticks
  static constexpr Font tick{9, false};
  static constexpr Font axis_title{10.5, false};
  static constexpr Font title{13, true};
  static constexpr RgbColor ink{0.15, 0.15, 0.15};   ///< text, frames, ticks
  static constexpr RgbColor hatch{0.55, 0.55, 0.55};  ///< the lines across missing (NaN) cells
};

/// The values mapped to the two ends of the colour map.
struct ValueRange {
  double lo = 0, hi = 1;
  /// Position of v in the map, t in [0, 1] inside the range (the colour map clamps values outside it).
  double position(double v) const { return (v - lo) / (hi - lo); }
};

/// [lo, hi] for the colour scale of `count` values. Given bounds win; a missing one comes from the finite
/// data (NaN and +-inf are ignored). A diverging map without bounds gets [-m, m] with m = max |v|, so zero
/// sits on the neutral colour. A flat range (constant data) is widened so the scale stays readable.
///
/// @code
/// auto range = resolve_range(values.data(), values.size(), std::nullopt, 1.0, false, "fig.png");
/// @endcode
inline ValueRange resolve_range(const double* values, std::size_t count, std::optional<double> vmin,
                                 std::optional<double> vmax, bool diverging, const std::string& what) {
  require(!vmin || std::isfinite(*vmin), what, ": vmin ", vmin.value_or(0), " is not finite");
  require(!vmax || std::isfinite(*vmax), what, ": vmax ", vmax.value_or(0), " is not finite");
  require(!(vmin && vmax) || *vmin < *vmax, what, ": vmin ", vmin.value_or(0), " must be below vmax ",
          vmax.value_or(0));
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::isfinite(values[i])) lo = std::min(lo, values[i]), hi = std::max(hi, values[i]);
  }
  const bool any = lo <= hi;
  if (!any) lo = 0, hi = 1;  // nothing finite to scale by
  if (diverging && !vmin && !vmax && any) {
    const double m = std::max(std::abs(lo), std::abs(hi));
    lo = -m, hi = m;
  }
  if (vmin) lo = *vmin;
  if (vmax) hi = *vmax;
  if (hi <= lo) {  // constant data, or data entirely beyond the one given bound
    const double base = vmax && !vmin ? hi : lo;
    const double width = base == 0 ? 1 : std::abs(base) * 0.1;
    if (vmax && !vmin) lo = hi - width;
    else if (vmin && !vmax) hi = lo + width;
    else lo -= width / 2, hi += width / 2;
  }
  return {lo, hi};
}

/// The label stride after `step` in 1, 2, 5, 10, 20, 50, ... (axis labels are thinned along it).
inline std::ptrdiff_t next_label_step(std::ptrdiff_t step) {
  std::ptrdiff_t magnitude = 1;
  while (magnitude * 10 <= step) magnitude *= 10;
  const std::ptrdiff_t digit = step / magnitude;
  return (digit < 2 ? 2 : digit < 5 ? 5 : 10) * magnitude;
}

/// Round tick values inside [lo, hi]: multiples of 1, 2, 2.5 or 5 x 10^k, between 3 and 6 of them.
inline std::vector<double> nice_ticks(const ValueRange& r) {
  const double span = r.hi - r.lo;
  const double magnitude = std::pow(10.0, std::floor(std::log10(span / 5)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * magnitude;
    if (span / step <= 6) break;
  }
  std::vector<double> ticks;
  const double first = std::ceil(r.lo / step - 1e-9) * step;
  for (int k = 0; first + k * step <= r.hi + step * 1e-9; ++k) {
    const double t = first + k * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);  // no "-0.00" or 1e-17 for zero
  }
  return ticks;
}

/// A tick label: as many decimals as the tick step needs ("0.25", "10", "-0.5"); %g for huge or tiny steps.
inline std::string format_tick(double value, double step) {
  char buffer[64];
  const double biggest = std::max(std::abs(value), step);
  if (step < 1e-4 || biggest >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.3g", value);
    return buffer;
  }
  int decimals = 0;
  while (decimals < 8) {
    const double scaled = step * std::pow(10.0, decimals);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * scaled) break;
    ++decimals;
  }
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

/// A cell value with `precision` decimals ("0.37", "-1.20"), or in scientific notation ("3.2e-05") when
/// `scientific`; "NaN", "inf", "-inf" as such.
inline std::string format_value(double value, int precision, bool scientific = false) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const bool rounds_to_zero = std::abs(value) < 0.5 * std::pow(10.0, -precision);  // print "0.00", not "-0.00"
  if (scientific) std::snprintf(buffer, sizeof buffer, "%.*e", std::max(precision - 1, 0), value);
  else std::snprintf(buffer, sizeof buffer, "%.*f", precision, rounds_to_zero ? 0.0 : value);
  return buffer;
}

/// Whether the values of a figure, at most `largest` in magnitude, read better in scientific notation:
/// all of them would print as zero with `precision` decimals, or the biggest is a million or more.
inline bool needs_scientific(double largest, int precision) {
  return largest >= 1e6 || (largest > 0 && largest < 0.5 * std::pow(10.0, -precision));
}

/// Black or white, whichever reads better on `background` (by its luma).
inline RgbColor text_color_on(RgbColor background) {
  const double luma = 0.299 * background.r + 0.587 * background.g + 0.114 * background.b;
  return luma < 0.5 ? RgbColor{1, 1, 1} : RgbColor{0, 0, 0};
}

/// What a colour bar shows: the map, its range, a title, and (if the figure has missing values) a swatch
/// explaining how NaN cells look.
struct ColorbarSpec {
  const Colormap* map = nullptr;
  ValueRange range;
  std::string title;
  bool nan_swatch = false;
  RgbColor nan_color{1, 1, 1};
  /// Replaces the numeric tick labels at the two ends (e.g. "min", "max" for per-panel scales); empty: numbers.
  std::string low_label, high_label;
};

/// Tick values and their labels for a colour bar.
inline std::vector<std::pair<double, std::string>> colorbar_ticks(const ColorbarSpec& spec) {
  std::vector<std::pair<double, std::string>> out;
  if (!spec.low_label.empty() || !spec.high_label.empty()) {
    out.emplace_back(spec.range.lo, spec.low_label);
    out.emplace_back(spec.range.hi, spec.high_label);
    return out;
  }
  const auto ticks = nice_ticks(spec.range);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : spec.range.hi - spec.range.lo;
  for (double t : ticks) out.emplace_back(t, format_tick(t, step));
  return out;
}

/// Horizontal room a colour bar needs from its left edge: bar, ticks, tick labels, title.
inline double colorbar_extent(const TextMeasure& measure, const ColorbarSpec& spec) {
  double labels = spec.nan_swatch ? measure.width("NaN", Style::tick) : 0;
  for (const auto& [value, label] : colorbar_ticks(spec)) labels = std::max(labels, measure.width(label, Style::tick));
  double extent = Style::colorbar_width + Style::tick_length + Style::tick_gap + labels;
  if (!spec.title.empty()) extent += Style::label_gap + measure.height(Style::axis_title);
  return extent;
}

/// Vertical room the NaN swatch needs below the bar (0 without one).
inline double colorbar_swatch_height(const ColorbarSpec& spec) {
  return spec.nan_swatch ? 8 + Style::colorbar_width : 0;
}

/// Draws the colour bar filling `bar` (map(0) at the bottom), ticks and labels on its right, the title
/// rotated beside them, and the NaN swatch below.
inline void draw_colorbar(Canvas& c, const FigureRect& bar, const ColorbarSpec& spec) {
  c.vertical_gradient(bar, *spec.map);
  c.stroke_rect(bar, Style::ink, Style::line_width);
  double labels = 0;
  for (const auto& [value, label] : colorbar_ticks(spec)) {
    const double y = bar.bottom() - spec.range.position(value) * bar.height;
    c.line(bar.right(), y, bar.right() + Style::tick_length, y, Style::ink, Style::line_width);
    c.text(label, bar.right() + Style::tick_length + Style::tick_gap, y, Style::tick, HAlign::left,
           VAlign::middle, 0, Style::ink);
    labels = std::max(labels, c.measure().width(label, Style::tick));
  }
  if (spec.nan_swatch) {
    const FigureRect swatch{bar.x, bar.bottom() + 8, bar.width, bar.width};
    c.fill_rect(swatch, spec.nan_color);
    c.hatch(swatch, Style::hatch, 3, 0.6);
    c.stroke_rect(swatch, Style::ink, Style::line_width);
    c.text("NaN", bar.right() + Style::tick_length + Style::tick_gap, swatch.center_y(), Style::tick,
           HAlign::left, VAlign::middle, 0, Style::ink);
    labels = std::max(labels, c.measure().width("NaN", Style::tick));
  }
  if (!spec.title.empty()) {
    const double x = bar.right() + Style::tick_length + Style::tick_gap + labels + Style::label_gap +
                     c.measure().ascent(Style::axis_title);
    c.text(spec.title, x, bar.center_y(), Style::axis_title, HAlign::center, VAlign::baseline, -90, Style::ink);
  }
}

}  // namespace darkbert::detail::viz
