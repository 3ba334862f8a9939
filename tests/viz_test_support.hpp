#pragma once
// Shared helpers of the test_viz_* files: a PNG read back through cairo, an SVG's
// texts with their positions, and colour comparison within a rounding tolerance.

#include <doctest/doctest.h>

#include <cairo.h>      // cairo_image_surface_create_from_png, to read PNGs back
#include <pugixml.hpp>  // parse SVG output

#include <cmath>       // std::abs
#include <cstdint>     // std::uint32_t
#include <cstdio>      // std::sscanf
#include <filesystem>  // std::filesystem::path
#include <set>         // std::set
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/viz/colormap.hpp"  // darkbert::RgbColor
#include "test_support.hpp"

namespace darkbert::test {

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

// Every <text> of an SVG, with its anchor position (the canvas writes each as translate(x y) ...).
//   for (const auto& t : svg_texts(dir / "h.svg")) CHECK(t.x >= 0);
struct svg_text {
  std::string text, transform, anchor;
  double x = 0, y = 0;
};
inline std::vector<svg_text> svg_texts(const std::filesystem::path& path) {
  pugi::xml_document doc;
  const auto parsed = doc.load_file(path.c_str());
  REQUIRE_MESSAGE(parsed, path.string(), ": ", parsed.description());
  std::vector<svg_text> out;
  for (const auto& node : doc.select_nodes("//text")) {
    svg_text t;
    t.text = node.node().child_value();
    t.transform = node.node().attribute("transform").value();
    t.anchor = node.node().attribute("text-anchor").value();
    REQUIRE(std::sscanf(t.transform.c_str(), "translate(%lf %lf)", &t.x, &t.y) == 2);
    out.push_back(t);
  }
  return out;
}

// The distinct strings of svg_texts.
inline std::set<std::string> text_set(const std::vector<svg_text>& texts) {
  std::set<std::string> out;
  for (const auto& t : texts) out.insert(t.text);
  return out;
}

// Every channel within `tolerance` (default: 8-bit rounding plus a half step).
inline bool near(RgbColor a, RgbColor b, double tolerance = 1.5 / 255) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

}  // namespace darkbert::test
