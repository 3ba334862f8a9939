// Tests for include/darkbert/viz/colormap.hpp: the viridis and cool-warm tables against their published
// sources, perceptual properties (lightness), interpolation, clamping and bad input.

#include <doctest/doctest.h>

#include <cmath>   // std::pow, std::cbrt, std::abs, std::nan
#include <string>  // std::string

#include "darkbert/viz/colormap.hpp"
#include "test_support.hpp"

using darkbert::test::message_of;

namespace {

// CIE L* (D65) of an sRGB colour: the perceived lightness, 0 (black) to 100 (white).
double lightness(darkbert::RgbColor c) {
  auto linear = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  const double y = 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
  return y > 216.0 / 24389 ? 116 * std::cbrt(y) - 16 : y * 24389.0 / 27;
}

void check_color_close(darkbert::RgbColor got, darkbert::RgbColor want, double tolerance) {
  CHECK(std::abs(got.r - want.r) <= tolerance);
  CHECK(std::abs(got.g - want.g) <= tolerance);
  CHECK(std::abs(got.b - want.b) <= tolerance);
}

}  // namespace

TEST_CASE("viridis matches matplotlib's 256-entry table") {
  const auto map = darkbert::Colormap::viridis();
  CHECK(map.name() == "viridis");
  CHECK_FALSE(map.diverging());
  // Entries i of matplotlib's _viridis_data sit at t = i / 255. Resampling to 65 knots costs < 0.42/255.
  const double tolerance = 0.5 / 255;
  check_color_close(map(0.0), {0.267004, 0.004874, 0.329415}, 1e-6);
  check_color_close(map(64 / 255.0), {0.229739, 0.322361, 0.545706}, tolerance);
  check_color_close(map(128 / 255.0), {0.127568, 0.566949, 0.550556}, tolerance);
  check_color_close(map(191 / 255.0), {0.360741, 0.785964, 0.387814}, tolerance);
  check_color_close(map(1.0), {0.993248, 0.906157, 0.143936}, 1e-6);
}

TEST_CASE("viridis gets lighter all the way (perceptually ordered)") {
  const auto map = darkbert::Colormap::viridis();
  double previous = lightness(map(0));
  for (int i = 1; i <= 256; ++i) {
    const double now = lightness(map(i / 256.0));
    CHECK(now > previous);
    previous = now;
  }
  CHECK(lightness(map(0)) < 20);
  CHECK(lightness(map(1)) > 90);
}

TEST_CASE("cool-warm is diverging: blue, neutral grey in the middle, red; lightest at zero") {
  const auto map = darkbert::Colormap::coolwarm();
  CHECK(map.name() == "coolwarm");
  CHECK(map.diverging());
  // Moreland's CoolWarmFloat33 table, first, middle and last rows.
  check_color_close(map(0.0), {0.2298057, 0.298717966, 0.753683153}, 1e-6);
  check_color_close(map(0.5), {0.865395197, 0.86541021, 0.865395561}, 1e-6);
  check_color_close(map(1.0), {0.705673158, 0.01555616, 0.150232812}, 1e-6);
  CHECK(map(0.1).b > map(0.1).r);  // cool side is blue
  CHECK(map(0.9).r > map(0.9).b);  // warm side is red
  for (int i = 0; i < 64; ++i) {   // lightness rises to the middle, then falls
    CHECK(lightness(map(i / 128.0)) < lightness(map((i + 1) / 128.0)));
    CHECK(lightness(map(1 - i / 128.0)) < lightness(map(1 - (i + 1) / 128.0)));
  }
  // Equal distances from zero look equally light on both sides (within 5 L* units).
  for (double d : {0.1, 0.25, 0.4, 0.5}) CHECK(std::abs(lightness(map(0.5 - d)) - lightness(map(0.5 + d))) < 5);
}

TEST_CASE("colormap interpolates linearly between knots and clamps outside [0, 1]") {
  const darkbert::Colormap grey("grey", {{0, 0, 0}, {1, 1, 1}});
  check_color_close(grey(0.25), {0.25, 0.25, 0.25}, 1e-12);
  const darkbert::Colormap three("three", {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}});
  check_color_close(three(0.25), {0.5, 0, 0}, 1e-12);
  check_color_close(three(0.5), {1, 0, 0}, 1e-12);
  check_color_close(three(0.75), {1, 0.5, 0}, 1e-12);
  CHECK(three(-3) == three(0));
  CHECK(three(7) == three(1));
  CHECK(three(1.0) == darkbert::RgbColor{1, 1, 0});
}

TEST_CASE("colormap errors name the map and the problem") {
  CHECK(message_of([] { darkbert::Colormap("one", {{0, 0, 0}}); }) ==
        "colormap 'one': needs at least 2 knots, got 1");
  const std::string bad = message_of([] { darkbert::Colormap("bad", {{0, 0, 0}, {0.5, 1.5, 0}}); });
  CHECK(bad.find("colormap 'bad': knot 1") != std::string::npos);
  CHECK(bad.find("outside [0, 1]") != std::string::npos);
  const auto map = darkbert::Colormap::viridis();
  CHECK(message_of([&] { map(std::nan("")); }) == "colormap 'viridis': position is NaN");
}
