// Tests for include/darkbert/viz/canvas.hpp: formats by extension, UTF-8 checks, text measurement, and
// the bytes written for PNG (read back with cairo), SVG (parsed with pugixml) and PDF.

#include <doctest/doctest.h>

#include <pugixml.hpp>  // parse the SVG output

#include <cmath>       // std::ceil
#include <cstdint>     // std::uint32_t
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/viz/canvas.hpp"
#include "viz_test_support.hpp"

namespace viz = darkbert::detail::viz;

using darkbert::test::message_of;
using darkbert::test::near;
using darkbert::test::png_image;
using darkbert::test::read_bytes;

TEST_CASE("format_of: by extension, case-insensitive; anything else is an error naming the path") {
  CHECK(viz::format_of("a/b.png") == viz::FileFormat::png);
  CHECK(viz::format_of("b.SVG") == viz::FileFormat::svg);
  CHECK(viz::format_of("c.Pdf") == viz::FileFormat::pdf);
  CHECK(message_of([] { viz::format_of("out/fig.jpg"); }) ==
        "out/fig.jpg: unknown figure format '.jpg' (the file name must end in .png, .svg or .pdf)");
  CHECK(message_of([] { viz::format_of("out/fig"); }).find("out/fig: unknown figure format ''") == 0);
}

TEST_CASE("require_utf8 accepts UTF-8 and names the string and offset of bad bytes") {
  for (const char* ok : {"", "plain", "caf\xC3\xA9", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x98\x80", "##ing"}) {
    CHECK_NOTHROW(viz::require_utf8(ok, "x"));
  }
  CHECK(message_of([] { viz::require_utf8("ab\x80", "fig.png: x label 3"); }) ==
        "fig.png: x label 3: 'ab\x80' is not valid UTF-8 (bad byte at offset 2)");
  for (const char* bad : {"\xC3", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE4\xB8", "\xFF"}) {
    CAPTURE(std::string(bad));
    CHECK(message_of([&] { viz::require_utf8(bad, "t"); }).find("is not valid UTF-8") != std::string::npos);
  }
}

TEST_CASE("printable replaces control characters") {
  CHECK(viz::printable("a\tb\n") == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  CHECK(viz::printable("caf\xC3\xA9") == "caf\xC3\xA9");
}

TEST_CASE("text_measure: widths grow with the text and scale with the font size") {
  const viz::TextMeasure m;
  const viz::Font small{10, false}, big{20, false};
  CHECK(m.width("W", small) > 0);
  CHECK(m.width("WW", small) == doctest::Approx(2 * m.width("W", small)));
  CHECK(m.width("layer", big) == doctest::Approx(2 * m.width("layer", small)).epsilon(0.01));
  CHECK(m.width("layer", {10, true}) > m.width("layer", small));  // bold is wider
  CHECK(m.ascent(small) > m.middle(small));
  CHECK(m.middle(small) > 0);
  CHECK(m.height(small) == doctest::Approx(m.ascent(small) + m.descent(small)));
}

TEST_CASE("canvas writes a PNG of the requested size with the drawn colours") {
  const auto dir = darkbert::test::scratch_dir("viz_canvas_png");
  viz::Canvas c(viz::FileFormat::png, 100.5, 50, 2, "t.png");
  c.fill_rect({10, 10, 20, 20}, {1, 0, 0});
  const std::vector<std::uint32_t> pixels{viz::pixel({0, 0, 1}), viz::pixel({0, 1, 0})};  // 1 x 2 cells
  c.image({40, 10, 40, 20}, 1, 2, pixels, /*smooth=*/false);
  c.text("label", 10, 45, {9, false}, viz::HAlign::left, viz::VAlign::baseline);
  viz::write_file(dir / "t.png", c.finish("t.png"));
  const png_image png(dir / "t.png", 2);
  CHECK(png.width() == 201);  // ceil(100.5 * 2)
  CHECK(png.height() == 100);
  CHECK(near(png.at(20, 20), {1, 0, 0}));
  CHECK(near(png.at(50, 20), {0, 0, 1}));
  CHECK(near(png.at(70, 20), {0, 1, 0}));
  CHECK(near(png.at(5, 5), {1, 1, 1}));
  CHECK(near(png.at(100.3, 49.7), {1, 1, 1}));  // the last, partial pixel column is background too
  bool ink = false;  // the label left dark pixels in its box
  for (double x = 10; x < 30; x += 0.5)
    for (double y = 38; y < 45; y += 0.5) ink = ink || png.at(x, y).r < 0.5;
  CHECK(ink);
}

TEST_CASE("canvas SVG: text is real, escaped <text>; sharp images are enlarged and marked pixelated") {
  const auto dir = darkbert::test::scratch_dir("viz_canvas_svg");
  viz::Canvas c(viz::FileFormat::svg, 120, 60, 1, "t.svg");
  c.text("a < b & \"c\"", 5, 20, {9, true}, viz::HAlign::center, viz::VAlign::middle, -90, {1, 0, 0});
  const std::vector<std::uint32_t> pixels(4, viz::pixel({0, 0, 1}));
  c.image({10, 10, 40, 40}, 2, 2, pixels, false);  // 20-point cells
  const std::string svg = c.finish("t.svg");
  viz::write_file(dir / "t.svg", svg);
  CHECK(read_bytes(dir / "t.svg") == svg);
  CHECK(svg.find(">a &lt; b &amp; &quot;c&quot;</text>") != std::string::npos);  // escaped, not just tolerated
  pugi::xml_document doc;
  REQUIRE(doc.load_string(svg.c_str()));
  const auto text = doc.select_node("//text").node();
  REQUIRE(text);
  CHECK(std::string(text.child_value()) == "a < b & \"c\"");
  CHECK(std::string(text.attribute("text-anchor").value()) == "middle");
  CHECK(std::string(text.attribute("font-weight").value()) == "bold");
  CHECK(std::string(text.attribute("fill").value()) == "#ff0000");
  CHECK(std::string(text.attribute("transform").value()).find("rotate(-90)") != std::string::npos);
  const auto image = doc.select_node("//image").node();
  REQUIRE(image);
  CHECK(image.attribute("width").as_int() == 2 * 80);  // 20-point cells at 4 pixels per point
  CHECK(std::string(image.attribute("style").value()) == "image-rendering:pixelated");
}

TEST_CASE("canvas SVG: the same figure gives the same bytes, whatever was drawn before (ids numbered per file)") {
  auto draw = [] {
    viz::Canvas c(viz::FileFormat::svg, 120, 60, 1, "t.svg");
    const std::vector<std::uint32_t> pixels(4, viz::pixel({0, 0, 1}));
    c.image({10, 10, 40, 40}, 2, 2, pixels, false);
    c.text("x", 5, 20, {9, false}, viz::HAlign::left, viz::VAlign::middle, 0, {0, 0, 0});
    return c.finish("t.svg");
  };
  const std::string first = draw();
  (void)draw();  // cairo's process-wide surface counters move on
  const std::string again = draw();
  CHECK(again == first);
  CHECK(first.find("id=\"image1\"") != std::string::npos);
  CHECK(first.find("\"#image1\"") != std::string::npos);  // the reference follows its id
  pugi::xml_document doc;
  CHECK(doc.load_string(first.c_str()));
  // Unit: ids renumbered per prefix in document order, references with them; other text untouched.
  std::string svg = "<g id=\"surface77\"><use xlink:href=\"#image9\"/><image id=\"image9\"/><rect fill=\"url(#surface77)\" "
                    "x=\"surface77\"/></g><text>surface77</text>";
  viz::renumber_svg_ids(svg);
  CHECK(svg == "<g id=\"surface1\"><use xlink:href=\"#image1\"/><image id=\"image1\"/><rect fill=\"url(#surface1)\" "
               "x=\"surface1\"/></g><text>surface77</text>");
}

TEST_CASE("canvas PDF starts with the PDF header") {
  viz::Canvas c(viz::FileFormat::pdf, 100, 100, 1, "t.pdf");
  c.text("x", 10, 10, {9, false}, viz::HAlign::left, viz::VAlign::top);
  CHECK(c.finish("t.pdf").rfind("%PDF-", 0) == 0);
}

TEST_CASE("canvas and write_file errors name the file") {
  CHECK(message_of([] { viz::Canvas(viz::FileFormat::png, 0, 10, 1, "z.png"); }) ==
        "z.png: figure size 0 x 10 points is not positive");
  CHECK(message_of([] { viz::Canvas(viz::FileFormat::png, 20000, 10, 2, "huge.png"); })
            .find("huge.png: figure would be 40000 x 20 pixels, more than cairo's limit of 32767") == 0);
  CHECK(message_of([] { viz::Canvas(viz::FileFormat::svg, 10, 2e5, 1, "tall.svg"); }) ==
        "tall.svg: figure size 10 x 200000 points is larger than 100000 (use a smaller cell size)");
  const auto dir = darkbert::test::scratch_dir("viz_canvas_errors");
  const auto missing = dir / "no_such_dir" / "f.png";
  CHECK(message_of([&] { viz::write_file(missing, "x"); }) ==
        missing.string() + ": cannot open for writing: No such file or directory");
}
