#pragma once
// Shared helpers of the test_viz_* files: a written file's bytes, a PNG read back through cairo, and colour
// comparison within a rounding tolerance.

#include <doctest/doctest.h>

#include <cairo.h>  // cairo_image_surface_create_from_png, to read PNGs back

#include <cmath>       // std::abs
#include <cstdint>     // std::uint32_t
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream
#include <iterator>    // std::istreambuf_iterator
#include <string>      // std::string

#include "darkbert/viz/colormap.hpp"  // darkbert::RgbColor
#include "test_support.hpp"

namespace darkbert::test {

// The whole file as bytes ("" when it cannot be read).
//   CHECK(read_bytes(dir / "a.svg") == read_bytes(dir / "b.svg"));
inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A PNG read back through cairo; at(x, y) is the pixel at (x, y) in points.
//   const png_image png(dir / "h.png", figure.pixels_per_point);
//   CHECK(near(png.at(10.5, 20.5), map(1.0)));
struct png_image {
  png_image(const std::filesystem::path& path, double pixels_per_point)
      : surface(cairo_image_surface_create_from_png(path.c_str())), scale(pixels_per_point) {
    REQUIRE(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS);
    cairo_surface_flush(surface);
  }
  png_image(const png_image&) = delete;  // owns the surface
  png_image& operator=(const png_image&) = delete;
  ~png_image() { cairo_surface_destroy(surface); }
  int width() const { return cairo_image_surface_get_width(surface); }
  int height() const { return cairo_image_surface_get_height(surface); }
  RgbColor at(double x, double y) const {
    const int px = static_cast<int>(x * scale), py = static_cast<int>(y * scale);
    REQUIRE(px >= 0);
    REQUIRE(py >= 0);
    REQUIRE(px < width());
    REQUIRE(py < height());
    const auto* row = cairo_image_surface_get_data(surface) + py * cairo_image_surface_get_stride(surface);
    const std::uint32_t p = reinterpret_cast<const std::uint32_t*>(row)[px];
    return {((p >> 16) & 0xFF) / 255.0, ((p >> 8) & 0xFF) / 255.0, (p & 0xFF) / 255.0};
  }
  cairo_surface_t* surface;
  double scale;
};

// Every channel within `tolerance` (default: 8-bit rounding plus a half step).
inline bool near(RgbColor a, RgbColor b, double tolerance = 1.5 / 255) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

}  // namespace darkbert::test
