#pragma once
/// @file
/// A cairo drawing written as PNG, SVG or PDF (chosen by the file's extension), used by the figure headers
/// (heatmap.hpp, attention_grid.hpp). Text stays text: in SVG every label is a `<text>` element (searchable,
/// editable), in PDF it is real text, in PNG rendered glyphs. Coordinates are points (1/72 inch) from the
/// top-left corner; a PNG has `pixels_per_point` pixels per point.

#include <cairo-pdf.h>  // cairo_pdf_surface_create_for_stream
#include <cairo-svg.h>  // cairo_svg_surface_create_for_stream
#include <cairo.h>      // contexts, image surfaces, gradients, PNG streams

#include <algorithm>    // std::transform, std::max, std::min, std::clamp
#include <cctype>       // std::tolower
#include <cstddef>      // std::size_t, std::ptrdiff_t
#include <cerrno>       // errno
#include <cmath>        // std::ceil, std::isfinite, std::lround
#include <cstdint>      // std::uint32_t
#include <cstdio>       // std::snprintf
#include <cstring>      // std::strerror
#include <filesystem>   // std::filesystem::path
#include <map>          // std::map (renumber_svg_ids)
#include <memory>       // std::unique_ptr
#include <new>          // std::bad_alloc
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/viz/colormap.hpp"

namespace darkbert {

/// A rectangle in a figure, in points from the top-left corner (PNG pixels = points * pixels_per_point).
struct FigureRect {
  /// @{
  /// left, top, width and height in points (y grows downwards)
  double x = 0, y = 0, width = 0, height = 0;
  /// @}
  /// x + width
  double right() const { return x + width; }
  /// y + height
  double bottom() const { return y + height; }
  /// Horizontal centre.
  double center_x() const { return x + width / 2; }
  /// Vertical centre.
  double center_y() const { return y + height / 2; }
};

namespace detail::viz {

enum class FileFormat { png, svg, pdf };

/// The format named by the extension of `path` (case-insensitive .png, .svg, .pdf).
inline FileFormat format_of(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".png") return FileFormat::png;
  if (ext == ".svg") return FileFormat::svg;
  if (ext == ".pdf") return FileFormat::pdf;
  fail(path.string(), ": unknown figure format '", ext, "' (the file name must end in .png, .svg or .pdf)");
}

/// Throws unless `text` is valid UTF-8 (cairo refuses anything else and SVG would not parse); `what` names
/// the string in the message, e.g. "figure.png: x label 7".
inline void require_utf8(std::string_view text, const std::string& what) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len > 1) {
      std::uint32_t cp = c & (0x7F >> len);
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
      const std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min_cp[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);  // no overlongs, surrogates
    }
    if (!ok) fail(what, ": '", text, "' is not valid UTF-8 (bad byte at offset ", i, ")");
    i += len;
  }
}

/// Control characters (tab, newline, ...) have no glyph and are not allowed in SVG: shown as U+FFFD.
inline std::string printable(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (char c : utf8) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) out += "\xEF\xBF\xBD";
    else out += c;
  }
  return out;
}

enum class HAlign { left, center, right };           // where the anchor is along the text
enum class VAlign { baseline, top, middle, bottom };  // middle = half the height of a digit above baseline

struct Font {
  double size = 9;  ///< points
  bool bold = false;
};

inline constexpr const char* cairo_font_family = "sans-serif";  // DejaVu Sans through fontconfig on Debian
/// Renumbers the ids of an SVG cairo wrote (`surface2904`, `image2908`: cairo's process-wide counters, so
/// the same figure drawn after another had other ids) per prefix in document order (`surface1`, `image1`),
/// together with every reference to them (`#image1`, `url(#image1)`): a figure's bytes depend on the figure
/// alone.
inline void renumber_svg_ids(std::string& svg) {
  auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  // An id token at `at`: letters then digits, ending at a quote or a parenthesis. Returns its length or 0.
  auto token_at = [&](std::size_t at) -> std::size_t {
    std::size_t e = at;
    while (e < svg.size() && is_alpha(svg[e])) ++e;
    const std::size_t letters = e - at;
    while (e < svg.size() && is_digit(svg[e])) ++e;
    if (letters == 0 || e == at + letters || e >= svg.size() || (svg[e] != '"' && svg[e] != ')')) return 0;
    return e - at;
  };
  std::map<std::string, std::string> renamed;
  std::map<std::string, int> next;  // per prefix
  for (auto at = svg.find(" id=\""); at != std::string::npos; at = svg.find(" id=\"", at + 5)) {
    const std::size_t n = token_at(at + 5);
    if (n == 0) continue;
    const std::string old = svg.substr(at + 5, n);
    std::size_t digits = old.size();
    while (digits > 0 && is_digit(old[digits - 1])) --digits;
    if (!renamed.count(old)) renamed[old] = old.substr(0, digits) + std::to_string(++next[old.substr(0, digits)]);
  }
  if (renamed.empty()) return;
  std::string out;
  out.reserve(svg.size());
  for (std::size_t i = 0; i < svg.size();) {
    if (i > 0 && (svg[i - 1] == '"' || svg[i - 1] == '#')) {
      if (const std::size_t n = token_at(i); n > 0) {
        const auto it = renamed.find(svg.substr(i, n));
        if (it != renamed.end()) {
          out += it->second;
          i += n;
          continue;
        }
      }
    }
    out += svg[i++];
  }
  svg = std::move(out);
}

inline constexpr const char* svg_font_family = "DejaVu Sans, Verdana, Arial, sans-serif";

struct CairoDeleter {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
  void operator()(cairo_surface_t* surface) const { cairo_surface_destroy(surface); }
  void operator()(cairo_pattern_t* pattern) const { cairo_pattern_destroy(pattern); }
};
using context_ptr = std::unique_ptr<cairo_t, CairoDeleter>;
using surface_ptr = std::unique_ptr<cairo_surface_t, CairoDeleter>;
using pattern_ptr = std::unique_ptr<cairo_pattern_t, CairoDeleter>;

/// Unhinted metrics, so a label measured once has the same width at every resolution and in every format.
inline void set_font(cairo_t* cr, const Font& f) {
  cairo_font_options_t* options = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE);
  cairo_set_font_options(cr, options);
  cairo_font_options_destroy(options);
  cairo_select_font_face(cr, cairo_font_family, CAIRO_FONT_SLANT_NORMAL,
                         f.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, f.size);
}

/// Measures text in points with the font setup used for drawing (layout happens before the surface exists).
class TextMeasure {
 public:
  TextMeasure()
      : surface_(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1)), cr_(cairo_create(surface_.get())) {}

  /// Advance width of `utf8` (valid UTF-8).
  double width(std::string_view utf8, const Font& f) const {
    set_font(cr_.get(), f);
    const std::string text = printable(utf8);
    cairo_text_extents_t extents;
    cairo_text_extents(cr_.get(), text.c_str(), &extents);
    return extents.x_advance;
  }
  /// Distance from baseline to the top of the tallest glyphs, and below the baseline.
  double ascent(const Font& f) const { return extents(f).ascent; }
  double descent(const Font& f) const { return extents(f).descent; }
  /// Height of a line of text: ascent + descent.
  double height(const Font& f) const { return ascent(f) + descent(f); }
  /// Baseline offset that centres text vertically on a point: half the height of a digit.
  double middle(const Font& f) const {
    set_font(cr_.get(), f);
    cairo_text_extents_t extents;
    cairo_text_extents(cr_.get(), "0", &extents);
    return -extents.y_bearing / 2;
  }

 private:
  cairo_font_extents_t extents(const Font& f) const {
    set_font(cr_.get(), f);
    cairo_font_extents_t e;
    cairo_font_extents(cr_.get(), &e);
    return e;
  }
  surface_ptr surface_;
  context_ptr cr_;
};

/// cairo stream callback: appends to a std::string (must not throw into C).
inline cairo_status_t append_to_string(void* closure, const unsigned char* data, unsigned int length) {
  try {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  } catch (const std::bad_alloc&) {
    return CAIRO_STATUS_NO_MEMORY;
  }
}

inline std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

inline std::string hex_color(RgbColor c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
  return buffer;
}

/// Packs a colour as cairo's RGB24 pixel (0x00RRGGBB).
inline std::uint32_t pixel(RgbColor c) {
  auto byte = [](double v) { return static_cast<std::uint32_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  return (byte(c.r) << 16) | (byte(c.g) << 8) | byte(c.b);
}

/// Writes `bytes` to `path`, replacing it crash-safely (core/atomic_file.hpp); the error names the path
/// and the reason.
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  write_file_atomically(path, bytes);
}

/// One figure being drawn. Draw, then finish() to get the file's bytes.
///
/// @code
/// detail::viz::Canvas c(FileFormat::png, 200, 100, /*pixels_per_point=*/2);
/// c.fill_rect({10, 10, 50, 50}, {1, 0, 0});
/// c.text("label", 70, 35, {9}, HAlign::left, VAlign::middle);
/// write_file("out.png", c.finish("out.png"));
/// @endcode
class Canvas {
 public:
  /// Largest PNG side cairo's image surfaces accept, and a sanity bound on any figure side (about 35 m).
  static constexpr int max_pixels = 32767;
  static constexpr double max_points = 100000;

  Canvas(FileFormat format, double width, double height, double pixels_per_point, const std::string& what)
      : format_(format) {
    require(std::isfinite(width) && std::isfinite(height) && width > 0 && height > 0, what,
            ": figure size ", width, " x ", height, " points is not positive");
    require(width <= max_points && height <= max_points, what, ": figure size ", width, " x ", height,
            " points is larger than ", max_points, " (use a smaller cell size)");
    if (format == FileFormat::png) {
      const double w = std::ceil(width * pixels_per_point), h = std::ceil(height * pixels_per_point);
      require(w <= max_pixels && h <= max_pixels, what, ": figure would be ", w, " x ", h,
              " pixels, more than cairo's limit of ", max_pixels, " (use a smaller cell size or pixels_per_point)");
      surface_.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(w), static_cast<int>(h)));
    } else if (format == FileFormat::svg) {
      surface_.reset(cairo_svg_surface_create_for_stream(append_to_string, &bytes_, width, height));
    } else {
      surface_.reset(cairo_pdf_surface_create_for_stream(append_to_string, &bytes_, width, height));
    }
    check_surface(what);
    cr_.reset(cairo_create(surface_.get()));
    if (format == FileFormat::png) cairo_scale(cr_.get(), pixels_per_point, pixels_per_point);
    cairo_set_source_rgb(cr_.get(), 1, 1, 1);  // white background, to the last (partial) pixel
    cairo_paint(cr_.get());
  }

  const TextMeasure& measure() const { return measure_; }

  void fill_rect(const FigureRect& r, RgbColor c) {
    cairo_set_source_rgb(cr_.get(), c.r, c.g, c.b);
    cairo_rectangle(cr_.get(), r.x, r.y, r.width, r.height);
    cairo_fill(cr_.get());
  }

  void stroke_rect(const FigureRect& r, RgbColor c, double line_width) {
    cairo_set_source_rgb(cr_.get(), c.r, c.g, c.b);
    cairo_set_line_width(cr_.get(), line_width);
    cairo_rectangle(cr_.get(), r.x, r.y, r.width, r.height);
    cairo_stroke(cr_.get());
  }

  void line(double x0, double y0, double x1, double y1, RgbColor c, double line_width) {
    cairo_set_source_rgb(cr_.get(), c.r, c.g, c.b);
    cairo_set_line_width(cr_.get(), line_width);
    cairo_move_to(cr_.get(), x0, y0);
    cairo_line_to(cr_.get(), x1, y1);
    cairo_stroke(cr_.get());
  }

  /// Diagonal lines `spacing` apart, clipped to `r` (marks missing values).
  void hatch(const FigureRect& r, RgbColor c, double spacing, double line_width) {
    cairo_save(cr_.get());
    cairo_rectangle(cr_.get(), r.x, r.y, r.width, r.height);
    cairo_clip(cr_.get());
    cairo_set_source_rgb(cr_.get(), c.r, c.g, c.b);
    cairo_set_line_width(cr_.get(), line_width);
    for (double d = spacing / 2; d < r.width + r.height; d += spacing) {  // lines x + y = const
      cairo_move_to(cr_.get(), r.x + d, r.y);
      cairo_line_to(cr_.get(), r.x + d - r.height, r.bottom());
    }
    cairo_stroke(cr_.get());
    cairo_restore(cr_.get());
  }

  /// `map` as a vertical gradient filling `r`: map(0) at the bottom, map(1) at the top. Exact, since the
  /// map is itself linear between its knots.
  void vertical_gradient(const FigureRect& r, const Colormap& map) {
    pattern_ptr gradient(cairo_pattern_create_linear(0, r.bottom(), 0, r.y));
    const auto& knots = map.knots();
    for (std::size_t i = 0; i < knots.size(); ++i) {
      const double t = static_cast<double>(i) / static_cast<double>(knots.size() - 1);
      cairo_pattern_add_color_stop_rgb(gradient.get(), t, knots[i].r, knots[i].g, knots[i].b);
    }
    cairo_set_source(cr_.get(), gradient.get());
    cairo_rectangle(cr_.get(), r.x, r.y, r.width, r.height);
    cairo_fill(cr_.get());
  }

  /// A rows x cols block of RGB24 pixels (row-major, from pixel()) stretched over `r`. `smooth` = false
  /// keeps cells as sharp squares; true averages when many cells share a pixel, so a thin diagonal stays
  /// visible. Sharp cells in SVG/PDF are embedded enlarged (each cell a block of pixels, 4 per point, at most
  /// 4096 pixels a side), since many viewers smooth enlarged images whatever the file asks for.
  void image(const FigureRect& r, int rows, int cols, const std::vector<std::uint32_t>& pixels, bool smooth) {
    int k = 1;  // pixels per cell side in the embedded image
    if (!smooth && format_ != FileFormat::png) {
      const double cell = std::min(r.width / cols, r.height / rows);
      k = std::clamp(static_cast<int>(std::ceil(cell * 4)), 1, std::max(1, 4096 / std::max(rows, cols)));
    }
    surface_ptr image(cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols * k, rows * k));
    require(cairo_surface_status(image.get()) == CAIRO_STATUS_SUCCESS, "cannot create a ", cols * k, " x ",
            rows * k, " image: ", cairo_status_to_string(cairo_surface_status(image.get())));
    cairo_surface_flush(image.get());
    unsigned char* data = cairo_image_surface_get_data(image.get());
    const int stride = cairo_image_surface_get_stride(image.get());
    for (int y = 0; y < rows * k; ++y) {
      auto* row = reinterpret_cast<std::uint32_t*>(data + static_cast<std::ptrdiff_t>(y) * stride);
      const std::uint32_t* source = pixels.data() + static_cast<std::ptrdiff_t>(y / k) * cols;
      for (int x = 0; x < cols * k; ++x) row[x] = source[x / k];
    }
    cairo_surface_mark_dirty(image.get());
    cairo_save(cr_.get());
    cairo_translate(cr_.get(), r.x, r.y);
    cairo_scale(cr_.get(), r.width / (cols * k), r.height / (rows * k));
    cairo_set_source_surface(cr_.get(), image.get(), 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr_.get()), smooth ? CAIRO_FILTER_GOOD : CAIRO_FILTER_NEAREST);
    if (smooth) {  // padded, so averaging does not fade the edges; clipped to the image
      cairo_pattern_set_extend(cairo_get_source(cr_.get()), CAIRO_EXTEND_PAD);
      cairo_rectangle(cr_.get(), 0, 0, cols * k, rows * k);
      cairo_fill(cr_.get());
    } else {  // a plain paint: SVG gets a bare <image> that takes the image-rendering hint
      cairo_paint(cr_.get());
    }
    cairo_restore(cr_.get());
    (smooth ? smooth_images_ : sharp_images_) += 1;
  }

  /// Draws `utf8` anchored at (x, y); `angle` in degrees, clockwise (-90 reads bottom to top). Alignment is
  /// in the text's own frame, before rotation.
  void text(std::string_view utf8, double x, double y, const Font& f, HAlign h, VAlign v, double angle = 0,
            RgbColor c = {0, 0, 0}) {
    const std::string shown = printable(utf8);
    const double dy = v == VAlign::baseline ? 0
                      : v == VAlign::top    ? measure_.ascent(f)
                      : v == VAlign::middle ? measure_.middle(f)
                                             : -measure_.descent(f);
    if (format_ == FileFormat::svg) {  // a real <text> element, appended after cairo's drawing
      char head[256];
      std::snprintf(head, sizeof head,
                    "<text transform=\"translate(%.3f %.3f) rotate(%g)\" y=\"%.3f\" font-size=\"%g\"", x, y, angle,
                    dy, f.size);
      svg_text_ += head;
      if (f.bold) svg_text_ += " font-weight=\"bold\"";
      if (h != HAlign::left) svg_text_ += h == HAlign::center ? " text-anchor=\"middle\"" : " text-anchor=\"end\"";
      if (c != RgbColor{0, 0, 0}) {
        svg_text_ += " fill=\"";
        svg_text_ += hex_color(c);
        svg_text_ += '"';
      }
      svg_text_ += '>';
      svg_text_ += xml_escape(shown);
      svg_text_ += "</text>\n";
      return;
    }
    const double w = h == HAlign::left ? 0 : measure_.width(shown, f);
    const double dx = h == HAlign::left ? 0 : h == HAlign::center ? -w / 2 : -w;
    cairo_save(cr_.get());
    set_font(cr_.get(), f);
    cairo_set_source_rgb(cr_.get(), c.r, c.g, c.b);
    cairo_translate(cr_.get(), x, y);
    cairo_rotate(cr_.get(), angle * 3.14159265358979323846 / 180);
    cairo_move_to(cr_.get(), dx, dy);
    cairo_show_text(cr_.get(), shown.c_str());
    cairo_restore(cr_.get());
  }

  /// Ends the drawing and returns the file's bytes; errors name `what` (usually the path).
  std::string finish(const std::string& what) {
    const cairo_status_t drawing = cairo_status(cr_.get());
    require(drawing == CAIRO_STATUS_SUCCESS, what, ": drawing failed: ", cairo_status_to_string(drawing));
    cr_.reset();
    if (format_ == FileFormat::png) {
      const cairo_status_t s = cairo_surface_write_to_png_stream(surface_.get(), append_to_string, &bytes_);
      require(s == CAIRO_STATUS_SUCCESS, what, ": PNG encoding failed: ", cairo_status_to_string(s));
      return std::move(bytes_);
    }
    cairo_surface_finish(surface_.get());
    check_surface(what);
    if (format_ == FileFormat::svg) finish_svg(what);
    return std::move(bytes_);
  }

 private:
  void check_surface(const std::string& what) const {
    const cairo_status_t s = cairo_surface_status(surface_.get());
    require(s == CAIRO_STATUS_SUCCESS, what, ": cairo surface error: ", cairo_status_to_string(s));
  }

  /// Adds the text elements before </svg>, asks viewers not to blur sharp cell images, and numbers the
  /// element ids from 1 in document order.
  void finish_svg(const std::string& what) {
    renumber_svg_ids(bytes_);
    const auto end = bytes_.rfind("</svg>");
    require(end != std::string::npos, what, ": cairo wrote an SVG without </svg>");
    std::string tail = "<g font-family=\"" + std::string(svg_font_family) + "\" xml:space=\"preserve\">\n" +
                       svg_text_ + "</g>\n";
    bytes_.insert(end, tail);
    if (sharp_images_ > 0 && smooth_images_ == 0) {
      const std::string hint = "<image style=\"image-rendering:pixelated\" image-rendering=\"optimizeSpeed\"";
      for (auto at = bytes_.find("<image "); at != std::string::npos; at = bytes_.find("<image ", at + hint.size())) {
        bytes_.replace(at, 6, hint);
      }
    }
  }

  FileFormat format_;
  std::string bytes_;     ///< the file, filled by cairo's stream callback
  std::string svg_text_;  ///< <text> elements for SVG
  int sharp_images_ = 0, smooth_images_ = 0;
  surface_ptr surface_;
  context_ptr cr_;
  TextMeasure measure_;
};

}  // namespace detail::viz
}  // namespace darkbert
