// Decodes a PNG with cairo and prints what a test needs to tell a blank image from a rendered page:
//   darkbert_png_stats shot.png   ->   width=1280 height=2400 distinct=5321 colourful=48210
// "colourful" counts pixels whose channels differ by 60 or more (figure colours; text and rules are grey).
// Exit 1 when the file does not decode. Used by tests/report_html.cmake on Chromium's screenshot.

#include <cairo.h>  // cairo_image_surface_create_from_png

#include <algorithm>      // std::max, std::min
#include <cstdint>        // std::uint32_t
#include <iostream>       // std::cout, std::cerr
#include <unordered_set>  // std::unordered_set (distinct colours)

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: darkbert_png_stats FILE.png\n";
    return 2;
  }
  cairo_surface_t* surface = cairo_image_surface_create_from_png(argv[1]);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
    std::cerr << argv[1] << ": does not decode: " << cairo_status_to_string(cairo_surface_status(surface)) << "\n";
    cairo_surface_destroy(surface);
    return 1;
  }
  cairo_surface_flush(surface);
  const int width = cairo_image_surface_get_width(surface), height = cairo_image_surface_get_height(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  std::unordered_set<std::uint32_t> distinct;
  long colourful = 0;
  for (int y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(data + static_cast<long>(y) * stride);
    for (int x = 0; x < width; ++x) {
      const std::uint32_t p = row[x] & 0xFFFFFFu;  // RGB (premultiplied ARGB32; screenshots are opaque)
      distinct.insert(p);
      const int r = (p >> 16) & 0xFF, g = (p >> 8) & 0xFF, b = p & 0xFF;
      colourful += std::max({r, g, b}) - std::min({r, g, b}) >= 60;
    }
  }
  cairo_surface_destroy(surface);
  std::cout << "width=" << width << " height=" << height << " distinct=" << distinct.size() << " colourful=" << colourful
            << "\n";
  return 0;
}
