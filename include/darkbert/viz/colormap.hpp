#pragma once
/// @file
/// Colour maps for figures: viridis (sequential, perceptually uniform) and Moreland's cool-warm (diverging,
/// for signed values), each a list of evenly spaced sRGB knots interpolated linearly.

#include <algorithm>  // std::clamp
#include <cmath>      // std::isnan, std::floor
#include <cstddef>    // std::size_t
#include <string>     // std::string
#include <utility>    // std::move
#include <vector>     // std::vector

#include "darkbert/core/error.hpp"

namespace darkbert {

/// An sRGB colour, each component in [0, 1].
struct RgbColor {
  /// @{
  /// red, green and blue in [0, 1]
  double r = 0, g = 0, b = 0;
  /// @}
  /// Same components.
  friend bool operator==(const RgbColor&, const RgbColor&) = default;
};

/// Maps t in [0, 1] to a colour by linear interpolation between evenly spaced knots.
///
/// @code
/// const auto map = darkbert::Colormap::viridis();
/// darkbert::RgbColor low = map(0.0), high = map(1.0), mid = map(0.5);
/// darkbert::Colormap grey("grey", {{0, 0, 0}, {1, 1, 1}});   // your own, at least two knots
/// @endcode
class Colormap {
 public:
  /// `diverging`: the middle knot is neutral, so figures centre the value scale on zero by default.
  Colormap(std::string name, std::vector<RgbColor> knots, bool diverging = false)
      : name_(std::move(name)), knots_(std::move(knots)), diverging_(diverging) {
    require(knots_.size() >= 2, "colormap '", name_, "': needs at least 2 knots, got ", knots_.size());
    for (std::size_t i = 0; i < knots_.size(); ++i) {
      const auto& k = knots_[i];
      require(k.r >= 0 && k.r <= 1 && k.g >= 0 && k.g <= 1 && k.b >= 0 && k.b <= 1, "colormap '", name_,
              "': knot ", i, " (", k.r, ", ", k.g, ", ", k.b, ") has a component outside [0, 1]");
    }
  }

  /// t is clamped to [0, 1]; NaN is an error (callers draw missing values with their own colour).
  RgbColor operator()(double t) const {
    require(!std::isnan(t), "colormap '", name_, "': position is NaN");
    const double x = std::clamp(t, 0.0, 1.0) * static_cast<double>(knots_.size() - 1);
    const auto i = std::min(static_cast<std::size_t>(std::floor(x)), knots_.size() - 2);
    const double f = x - static_cast<double>(i);
    const RgbColor& a = knots_[i];
    const RgbColor& b = knots_[i + 1];
    return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
  }

  /// "viridis", "coolwarm", …
  const std::string& name() const { return name_; }
  /// The colours interpolated between, evenly spaced over [0, 1].
  const std::vector<RgbColor>& knots() const { return knots_; }
  /// Whether the map is centred on a midpoint (coolwarm), so scales should be symmetric around 0.
  bool diverging() const { return diverging_; }

  /// Viridis (van der Walt, Smith, Firing; CC0): dark blue -> green -> yellow, perceptually uniform and
  /// readable in greyscale and by colour-blind readers. 65 knots resampled from matplotlib's 256-entry
  /// table (largest deviation 0.42/255).
  static Colormap viridis() {
    return Colormap("viridis", {
      {0.267004, 0.004874, 0.329415}, {0.272574, 0.025475, 0.353002}, {0.276987, 0.050151, 0.375542},
      {0.280234, 0.073155, 0.396917}, {0.282302, 0.094624, 0.417024}, {0.283189, 0.115279, 0.435759},
      {0.282902, 0.135449, 0.453035}, {0.281464, 0.155292, 0.468786}, {0.278919, 0.174879, 0.482972},
      {0.275332, 0.194226, 0.495583}, {0.270788, 0.213324, 0.506643}, {0.265392, 0.232149, 0.516212},
      {0.259266, 0.250672, 0.524378}, {0.252548, 0.268863, 0.531255}, {0.245374, 0.286704, 0.536971},
      {0.237887, 0.304183, 0.541669}, {0.230223, 0.321297, 0.545488}, {0.222503, 0.338054, 0.548566},
      {0.214836, 0.354470, 0.551027}, {0.207310, 0.370569, 0.552986}, {0.199995, 0.386377, 0.554533},
      {0.192929, 0.401927, 0.555747}, {0.186132, 0.417256, 0.556682}, {0.179598, 0.432397, 0.557377},
      {0.173302, 0.447386, 0.557850}, {0.167206, 0.462255, 0.558105}, {0.161265, 0.477036, 0.558125},
      {0.155429, 0.491757, 0.557881}, {0.149668, 0.506440, 0.557329}, {0.143985, 0.521105, 0.556421},
      {0.138415, 0.535767, 0.555090}, {0.133073, 0.550433, 0.553271}, {0.128148, 0.565107, 0.550893},
      {0.123944, 0.579787, 0.547879}, {0.120875, 0.594465, 0.544158}, {0.119472, 0.609130, 0.539658},
      {0.120325, 0.623765, 0.534308}, {0.124008, 0.638350, 0.528048}, {0.130961, 0.652859, 0.520817},
      {0.141418, 0.667265, 0.512563}, {0.155378, 0.681539, 0.503240}, {0.172658, 0.695648, 0.492808},
      {0.192974, 0.709556, 0.481231}, {0.216009, 0.723228, 0.468485}, {0.241467, 0.736626, 0.454543},
      {0.269081, 0.749712, 0.439394}, {0.298636, 0.762445, 0.423019}, {0.329945, 0.774787, 0.405421},
      {0.362859, 0.786695, 0.386589}, {0.397243, 0.798131, 0.366537}, {0.432985, 0.809056, 0.345271},
      {0.469973, 0.819433, 0.322819}, {0.508094, 0.829231, 0.299221}, {0.547236, 0.838420, 0.274535},
      {0.587266, 0.846982, 0.248871}, {0.628031, 0.854912, 0.222406}, {0.669358, 0.862217, 0.195444},
      {0.711046, 0.868926, 0.168529}, {0.752867, 0.875089, 0.142650}, {0.794574, 0.880785, 0.119611},
      {0.835913, 0.886110, 0.102462}, {0.876642, 0.891184, 0.095256}, {0.916550, 0.896130, 0.100822},
      {0.955450, 0.901085, 0.118219}, {0.993248, 0.906157, 0.143936},
    });
  }

  /// Cool-warm (K. Moreland, "Diverging Color Maps for Scientific Visualization", 2009; the 33-entry
  /// CoolWarmFloat33 table, as in matplotlib's "coolwarm"): blue -> light grey -> red, for signed values.
  static Colormap coolwarm() {
    return Colormap("coolwarm", {
      {0.229806, 0.298718, 0.753683}, {0.266234, 0.353095, 0.801467}, {0.303869, 0.406535, 0.844959},
      {0.342804, 0.458758, 0.883726}, {0.383013, 0.509419, 0.917388}, {0.424370, 0.558148, 0.945620},
      {0.466667, 0.604563, 0.968155}, {0.509635, 0.648281, 0.984788}, {0.552953, 0.688929, 0.995376},
      {0.596262, 0.726149, 0.999836}, {0.639176, 0.759600, 0.998151}, {0.681291, 0.788965, 0.990363},
      {0.722193, 0.813953, 0.976575}, {0.761465, 0.834303, 0.956945}, {0.798692, 0.849786, 0.931689},
      {0.833467, 0.860208, 0.901069}, {0.865395, 0.865410, 0.865396}, {0.897787, 0.848937, 0.820881},
      {0.924128, 0.827385, 0.774508}, {0.944469, 0.800927, 0.726736}, {0.958853, 0.769768, 0.678008},
      {0.967328, 0.734133, 0.628752}, {0.969954, 0.694267, 0.579375}, {0.966811, 0.650421, 0.530264},
      {0.958003, 0.602842, 0.481776}, {0.943661, 0.551751, 0.434244}, {0.923945, 0.497309, 0.387970},
      {0.899046, 0.439559, 0.343230}, {0.869187, 0.378313, 0.300267}, {0.834621, 0.312874, 0.259301},
      {0.795632, 0.241284, 0.220526}, {0.752535, 0.157246, 0.184115}, {0.705673, 0.015556, 0.150233},
    }, /*diverging=*/true);
  }

 private:
  std::string name_;
  std::vector<RgbColor> knots_;
  bool diverging_;
};

}  // namespace darkbert
