#pragma once
/// @file
/// The findings report of the study: a document (title, sections, paragraphs, lists, tables, figures and
/// the paper's claims with darkbert's verdicts) rendered as Markdown (`report.md`), as one self-contained
/// HTML page (`report.html`: CSS inline, every figure embedded as a data URI, no external resource) and as
/// `summary.json`, which holds every number the report states at full precision.
///
/// Numbers are registered, not typed: `report.number(key, value, decimals)` records key -> value in the
/// summary and returns the text to put in the report, so a checker can prove that every number in
/// `report.md` comes from the run (check_report(), below).
///
/// @code
/// namespace study = darkbert::study;
/// study::Report r("Revealing the Dark Secrets of BERT, reproduced");
/// r.paragraph("Every number below comes from the run that wrote this folder.");
/// auto& s = r.section("§3.3 Change after fine-tuning");
/// s.paragraph("Fine-tuning gains " + r.number("table1.MRPC.gain", 2.4137, 1) + " points on MRPC.");
/// s.table({.header = {"task", "accuracy"},
///          .rows = {{"MRPC", r.mean_sd("table1.MRPC.finetuned.accuracy", {0.84, 0.86, 0.85}, 3)}},
///          .caption = "Table 1: dev accuracy over three fine-tuning seeds."});
/// s.figure({.png = "figures/fig5_mrpc.png", .svg = "figures/fig5_mrpc.svg",   // relative to the output folder
///           .caption = "Figure 5: cosine similarity of each head's maps before and after fine-tuning."});
/// s.claim({.claim = "The last two layers change most after fine-tuning.",
///          .paper = "layers " + r.count("paper.fig5.most_changed.0", 11) + "-" + r.count("paper.fig5.most_changed.1", 12),
///          .darkbert = "layers " + r.count("fig5.MRPC.most_changed.0", 5) + "-" + r.count("fig5.MRPC.most_changed.1", 6),
///          .verdict = study::Verdict::reproduced,
///          .reason = "The two most-changed layers are the last two of the six."});
/// r.meta("model", {{"layers", 6}, {"heads", 8}});   // context for readers of summary.json
/// r.write("out");          // out/report.md, out/report.html, out/summary.json (figures must already be there)
/// for (const auto& p : study::check_report("out")) std::cerr << p.message << "\n";
/// @endcode
///
/// Inline text (paragraphs, list items, table cells, captions, claims) is plain text with two marks:
/// `` `code` `` (commands, file names, keys) and `**strong**`. Everything else is shown as written: both
/// renderers escape it (Markdown punctuation, HTML's `<&>"'`).
///
/// **The number check.** check_report() finds the numbers `report.md` states with stated_numbers() and
/// requires each to equal, at its stated number of decimals, some number registered under `numbers` in
/// `summary.json` (a number followed by `%` may also equal 100 times a registered number: percent()
/// registers the fraction). A stated number is a run of digits with an optional `.digits` fraction, an
/// optional thousands grouping (`1,234,567`: groups of exactly three digits) and an optional sign (`-` or
/// `−` after a space or punctuation; a `-` between two digits is a range dash). These are not stated
/// numbers and are skipped:
/// - anything inside a code span or a fenced code block, and link or image destinations `](...)`;
/// - parts of names: digits touching a letter or `_` (`GPT-2`, `L3H5`, `99th`, `3x3`, `float32`, `2e-5`,
///   `12ms`) and dotted runs of three or more numbers (`1.2.3`);
/// - references: a number after `§` or after the words Figure(s), Fig., Table(s), Section(s), Eq.,
///   Equation(s), Appendix, together with the numbers chained to it by `,`, `and`, `or`, `&`, `/`, `-`,
///   `–`, `to` (`Tables 1 and 2`, `§3.1–3.6`);
/// - a section number opening a heading (`## 3.4 Attention to linguistic features`) and an ordered-list
///   marker (`1. `);
/// - years: an unsigned, ungrouped four-digit integer from 1900 to 2099 (count() groups thousands, so a
///   registered count of 2000 is written `2,000` and checked);
/// - HTML character references (`&#39;`).
/// So write quantities in fixed notation, separated from their units by a space (`12 ms`). The check
/// proves provenance, not which key: a stated number passes when any registered number rounds to it, so a
/// small integer such as `3` passes easily; the summary says which key holds it.

#include <cairo.h>      // cairo_image_surface_create_from_png (the checker decodes every PNG)
#include <pugixml.hpp>  // pugi::xml_document (the checker parses every SVG; figure sizes)

#include <algorithm>     // std::sort, std::min
#include <charconv>      // std::to_chars (locale-independent fixed notation)
#include <cmath>         // std::isnan, std::isinf, std::sqrt
#include <cstddef>       // std::size_t
#include <cstdint>       // std::int64_t, std::uint32_t
#include <filesystem>    // std::filesystem::path, recursive_directory_iterator
#include <fstream>       // std::ifstream
#include <iterator>      // std::istreambuf_iterator, std::next
#include <limits>        // std::numeric_limits
#include <list>          // std::list (subsections keep their address)
#include <map>           // std::map
#include <optional>      // std::optional
#include <set>           // std::set
#include <string>        // std::string
#include <string_view>   // std::string_view
#include <system_error>  // std::error_code
#include <tuple>         // std::tie
#include <utility>       // std::move, std::pair
#include <variant>       // std::variant, std::get_if, std::holds_alternative
#include <vector>        // std::vector

#include <nlohmann/json.hpp>  // summary.json

#include "darkbert/core/atomic_file.hpp"  // darkbert::write_file_atomically
#include "darkbert/core/error.hpp"        // darkbert::fail, darkbert::require
#include "darkbert/io/npy.hpp"            // darkbert::read_npy (the checker reads every .npy)
#include "darkbert/viz/canvas.hpp"        // darkbert::detail::viz::require_utf8

namespace darkbert::study {

/// What darkbert's run says about one of the paper's claims.
enum class Verdict {
  reproduced,      ///< darkbert's numbers show what the paper says
  partly,          ///< some of it holds (on some tasks, or weaker)
  not_reproduced,  ///< darkbert's numbers contradict it
  not_testable,    ///< this run cannot test it (absent data, a model too small, ...)
};

/// The verdict as the report writes it: "reproduced", "partly", "not reproduced", "not testable here".
inline std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::reproduced: return "reproduced";
    case Verdict::partly: return "partly";
    case Verdict::not_reproduced: return "not reproduced";
    case Verdict::not_testable: return "not testable here";
  }
  return "unknown";
}

/// A table of inline text (numbers go in through Report::number and friends).
struct ReportTable {
  std::vector<std::string> header;             ///< column titles
  std::vector<std::vector<std::string>> rows;  ///< [rows][columns], each row as long as the header
  std::string caption;                         ///< shown above the table (may be empty)
};

/// A figure written as PNG and/or SVG into the output folder; paths are relative to it (`figures/x.png`),
/// made of letters, digits and `._+-/`, without `..`.
struct ReportFigure {
  std::string png;      ///< the raster (shown in both renderings when present)
  std::string svg;      ///< the vector version (offered beside it; shown when there is no PNG)
  std::string caption;  ///< shown under the figure
};

/// One of the paper's claims beside darkbert's finding; consecutive claims of a section form one table.
struct Claim {
  std::string claim;     ///< the paper's claim, restated
  std::string paper;     ///< the paper's number(s) (registered too), or what it reports
  std::string darkbert;  ///< darkbert's number(s), with their spread and the sizes they rest on
  Verdict verdict = Verdict::not_testable;  ///< the verdict
  std::string reason;    ///< one sentence a sceptical reader can check
};

namespace detail::report {

/// `value` with `decimals` digits after the point, locale-independent; "-0.00" reads "0.00"; NaN reads
/// "n/a", infinities "inf" / "-inf".
inline std::string format_fixed(double value, int decimals) {
  if (std::isnan(value)) return "n/a";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[512];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
  std::string text = ec == std::errc() ? std::string(buffer, end) : std::string("n/a");
  if (!text.empty() && text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

/// "1234567" -> "1,234,567" (a leading '-' kept).
inline std::string group_thousands(const std::string& digits) {
  const std::size_t start = !digits.empty() && digits[0] == '-' ? 1 : 0;
  std::string out = digits.substr(0, start);
  const std::size_t n = digits.size() - start;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[start + i];
  }
  return out;
}

/// A number as summary.json holds it: NaN and infinities as the strings "nan", "inf", "-inf" (as
/// analysis/results.hpp writes them), which the number check ignores.
inline nlohmann::json json_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

/// Puts `value` at the dotted `key` of `root`, creating the objects on the way; refuses an empty segment,
/// whitespace, a key given twice and a key that runs into (or over) a value. `what` is "number" or "meta".
inline void insert_at(nlohmann::json& root, std::string_view key, nlohmann::json value, const char* what) {
  require(!key.empty(), "report: a ", what, " key is empty");
  for (const char c : key)
    require(static_cast<unsigned char>(c) > 0x20 && c != 0x7F, "report: ", what, " key '", key,
            "' holds whitespace or a control character");
  darkbert::detail::viz::require_utf8(key, std::string("report: ") + what + " key");
  nlohmann::json* node = &root;
  std::size_t begin = 0;
  while (true) {
    const std::size_t dot = key.find('.', begin);
    const std::string segment(key.substr(begin, dot == std::string_view::npos ? std::string_view::npos : dot - begin));
    require(!segment.empty(), "report: ", what, " key '", key, "' has an empty segment");
    if (dot == std::string_view::npos) {
      if (node->contains(segment)) {
        if ((*node)[segment].is_object())
          fail("report: ", what, " '", key, "' cannot be registered: it already holds keys below it");
        fail("report: ", what, " '", key, "' is registered twice");
      }
      (*node)[segment] = std::move(value);
      return;
    }
    if (!node->contains(segment)) (*node)[segment] = nlohmann::json::object();
    nlohmann::json& next = (*node)[segment];
    if (!next.is_object())
      fail("report: ", what, " '", key, "' cannot be registered: '", key.substr(0, dot), "' already holds a value");
    node = &next;
    begin = dot + 1;
  }
}

/// A figure or data path: relative, in `[A-Za-z0-9._+-/]`, no empty or `..` segment, with the extension
/// asked for (empty: any). `what` names it in the error.
inline void require_relative_path(const std::string& path, std::string_view extension, const std::string& what) {
  require(!path.empty(), what, ": empty path");
  for (const char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '+' || c == '-' || c == '/';
    require(ok, what, ": '", path, "' must be made of letters, digits and ._+-/ (relative to the output folder)");
  }
  require(path[0] != '/', what, ": '", path, "' must be relative to the output folder");
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t slash = std::min(path.find('/', begin), path.size());
    const std::string segment = path.substr(begin, slash - begin);
    require(!segment.empty() && segment != "." && segment != "..", what, ": '", path,
            "' has an empty, '.' or '..' segment");
    begin = slash + 1;
  }
  if (!extension.empty()) {
    std::string ext = std::filesystem::path(path).extension().string();
    for (auto& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    require(ext == extension, what, ": '", path, "' does not end in ", extension);
  }
}

/// One piece of inline text: plain, a `code` span or a **strong** span.
struct InlineSpan {
  enum Kind { text, code, strong } kind = text;  ///< what the content is
  std::string content;                           ///< without the marks
};

/// Splits inline text into spans: `code` and **strong**; an unpaired mark stays literal text.
inline std::vector<InlineSpan> parse_inline(std::string_view s) {
  std::vector<InlineSpan> spans;
  std::string text;
  auto flush = [&] {
    if (!text.empty()) spans.push_back({InlineSpan::text, std::move(text)});
    text.clear();
  };
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '`') {
      const std::size_t close = s.find('`', i + 1);
      if (close != std::string_view::npos && close > i + 1) {
        flush();
        spans.push_back({InlineSpan::code, std::string(s.substr(i + 1, close - i - 1))});
        i = close + 1;
        continue;
      }
    } else if (s.substr(i, 2) == "**") {
      const std::size_t close = s.find("**", i + 2);
      if (close != std::string_view::npos && close > i + 2) {
        flush();
        spans.push_back({InlineSpan::strong, std::string(s.substr(i + 2, close - i - 2))});
        i = close + 2;
        continue;
      }
    }
    text += s[i++];
  }
  flush();
  return spans;
}

/// The text of inline markup without its marks (alt texts).
inline std::string plain_text(std::string_view s) {
  std::string out;
  for (const auto& span : parse_inline(s)) out += span.content;
  return out;
}

/// Newlines and tabs become spaces; leading and trailing spaces go (one line of Markdown per block).
inline std::string one_line(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  const std::size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

inline bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Where Markdown text goes: a paragraph, a table cell (where `|` must be escaped, code spans included)
/// or an image's alt text (where brackets must be).
enum class MarkdownPlace { block, cell, alt };

/// Plain text escaped for Markdown: `\` `*` `~` `<` `` ` `` always, `_` at a word boundary, `]` before
/// `(`, `[` or `:`, `&` that could start an entity, `|` in cells, brackets in alt text.
inline std::string markdown_escape(std::string_view s, MarkdownPlace place) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char prev = i > 0 ? s[i - 1] : ' ', next = i + 1 < s.size() ? s[i + 1] : ' ';
    bool escape = c == '\\' || c == '*' || c == '~' || c == '<' || c == '`';
    escape = escape || (c == '_' && !(is_alnum(prev) && is_alnum(next)));
    escape = escape || (c == ']' && (next == '(' || next == '[' || next == ':'));
    escape = escape || (c == '&' && (is_alnum(next) || next == '#'));
    escape = escape || (c == '|' && place == MarkdownPlace::cell);
    escape = escape || ((c == '[' || c == ']') && place == MarkdownPlace::alt);
    if (escape) out += '\\';
    out += c;
  }
  return out;
}

/// Inline text as Markdown. In a block, a start that Markdown would read as a heading, quote, list item or
/// rule is escaped.
inline std::string markdown_inline(std::string_view source, MarkdownPlace place) {
  const std::string s = one_line(source);
  std::string out;
  const auto spans = parse_inline(s);
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const auto& span = spans[k];
    if (span.kind == InlineSpan::code) {
      std::string code;
      for (const char c : span.content) {
        if (c == '|' && place == MarkdownPlace::cell) code += '\\';
        code += c;
      }
      out += "`" + code + "`";
      continue;
    }
    std::string text = markdown_escape(span.content, place);
    if (k == 0 && place == MarkdownPlace::block && !text.empty()) {
      const char c = text[0];
      if (c == '#' || c == '>' || c == '-' || c == '+' || c == '=') {
        text.insert(0, 1, '\\');
      } else if (is_digit(c)) {  // "12. " or "12) " would start an ordered list
        std::size_t p = 0;
        while (p < text.size() && is_digit(text[p])) ++p;
        if (p < text.size() && (text[p] == '.' || text[p] == ')') && (p + 1 == text.size() || text[p + 1] == ' '))
          text.insert(p, 1, '\\');
      }
    }
    out += span.kind == InlineSpan::strong ? "**" + text + "**" : text;
  }
  return out;
}

/// Text escaped for HTML (content and attribute values): `&<>"'`.
inline std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

/// Inline text as HTML: `code` -> <code>, **strong** -> <strong>, the rest escaped.
inline std::string html_inline(std::string_view s) {
  std::string out;
  for (const auto& span : parse_inline(one_line(s))) {
    const std::string text = html_escape(span.content);
    if (span.kind == InlineSpan::code) out += "<code>" + text + "</code>";
    else if (span.kind == InlineSpan::strong) out += "<strong>" + text + "</strong>";
    else out += text;
  }
  return out;
}

/// Standard base64 (RFC 4648, with padding): "foobar" -> "Zm9vYmFy".
inline std::string base64(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k)
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? alphabet[(v >> (18 - 6 * k)) & 0x3F] : '=';
  }
  return out;
}

/// The whole file as bytes; `what` says why it is read ("figure 'Figure 5: ...'").
inline std::string read_bytes(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  require(std::filesystem::is_regular_file(path, ec), path.string(), ": ", what, " does not exist");
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), path.string(), ": cannot open ", what);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require(!in.bad(), path.string(), ": read error in ", what);
  return bytes;
}

/// The width in CSS pixels at which a figure is shown: the SVG's own width (pt -> px at 4/3) when there is
/// one, else the PNG's pixel width at darkbert's figure scale (2 pixels per point: width * 2/3); 0 when
/// neither says.
inline double display_width(const std::string& png_bytes, const std::string& svg_bytes) {
  if (!svg_bytes.empty()) {
    pugi::xml_document doc;
    if (doc.load_buffer(svg_bytes.data(), svg_bytes.size())) {
      const std::string width = doc.document_element().attribute("width").value();
      double value = 0;
      const auto [end, ec] = std::from_chars(width.data(), width.data() + width.size(), value);
      if (ec == std::errc() && value > 0) {
        const std::string unit(end, width.data() + width.size());
        if (unit == "pt") return value * 4.0 / 3.0;
        if (unit.empty() || unit == "px") return value;
      }
    }
  }
  // PNG: 8-byte signature, then the IHDR chunk: length (4), "IHDR", width (4, big-endian), height (4).
  if (png_bytes.size() >= 24 && png_bytes.compare(12, 4, "IHDR") == 0) {
    std::uint32_t width = 0;
    for (int k = 0; k < 4; ++k) width = (width << 8) | static_cast<unsigned char>(png_bytes[16 + static_cast<std::size_t>(k)]);
    return width * 2.0 / 3.0;
  }
  return 0;
}

/// Whether every non-empty cell of column `col` reads as a number ("67.53 ± 1.20", "-0.4", "12%", "n/a"):
/// such columns are right-aligned.
inline bool numeric_column(const std::vector<std::vector<std::string>>& rows, std::size_t col) {
  bool any = false;
  for (const auto& row : rows) {
    const std::string cell = one_line(row[col]);
    if (cell.empty()) continue;
    any = true;
    std::size_t p = 0;
    if (cell[0] == '-' || cell[0] == '+') p = 1;
    else if (cell.compare(0, 3, "\xE2\x88\x92") == 0) p = 3;  // U+2212 minus
    if (cell == "n/a" || cell == "inf" || cell == "-inf") continue;
    if (p >= cell.size() || !is_digit(cell[p])) return false;
  }
  return any;
}

/// The page's style: readable type, tables with rules and tabular figures, coloured verdict badges.
inline constexpr std::string_view html_style = R"(
:root { color-scheme: light; }
body { margin: 0; background: #f4f4f1; color: #1f2328;
  font: 16px/1.6 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 60rem; margin: 0 auto; padding: 2.5rem 2rem 4rem; background: #fff; box-shadow: 0 0 0 1px #e4e4e0; }
h1 { font-size: 2rem; line-height: 1.25; margin: 0 0 1.25rem; }
h2 { font-size: 1.45rem; line-height: 1.3; margin: 2.75rem 0 .8rem; padding-bottom: .3rem; border-bottom: 1px solid #e4e4e0; }
h3 { font-size: 1.18rem; margin: 2rem 0 .6rem; }
h4, h5, h6 { font-size: 1rem; margin: 1.5rem 0 .5rem; }
p, ul { margin: .7rem 0; }
li { margin: .2rem 0; }
code { font: .87em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
  background: #f2f2ee; padding: .1em .32em; border-radius: 4px; }
nav.contents { background: #f8f8f6; border: 1px solid #e4e4e0; border-radius: 6px; padding: .6rem 1.2rem; margin: 1.25rem 0 2rem; }
nav.contents p { margin: 0; font-weight: 600; }
nav.contents ul { margin: .3rem 0 0; padding-left: 1.2rem; }
a { color: #0a58ca; }
.table-wrap { overflow-x: auto; margin: 1.1rem 0 1.5rem; }
table { border-collapse: collapse; font-size: .92rem; font-variant-numeric: tabular-nums; }
p.caption { color: #4a4f55; margin: 1.1rem 0 .45rem; }
p.caption + .table-wrap { margin-top: 0; }
th, td { padding: .4rem .75rem; border-bottom: 1px solid #e4e4e0; text-align: left; vertical-align: top; }
thead th { background: #f4f4f1; font-weight: 600; border-bottom: 2px solid #cfcfca; }
tbody tr:nth-child(even) { background: #fafaf8; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.claims td:first-child { min-width: 16rem; }
table.claims td:nth-child(2), table.claims td:nth-child(3) { min-width: 8rem; }
table.claims td:last-child { min-width: 14rem; }
figure { margin: 1.75rem 0; }
figure img { display: block; max-width: 100%; height: auto; }
figcaption { font-size: .9rem; color: #4a4f55; margin-top: .5rem; }
figcaption a { margin-left: .4rem; font-size: .85rem; }
.verdict { display: inline-block; padding: .08rem .55rem; border-radius: 999px; font-size: .8rem; font-weight: 600;
  white-space: nowrap; border: 1px solid transparent; }
.verdict.reproduced { background: #dafbe1; color: #116329; border-color: #aceebb; }
.verdict.partly { background: #fff3c4; color: #7a4d00; border-color: #f5d77f; }
.verdict.not-reproduced { background: #ffe2e0; color: #a40e26; border-color: #ffb8b1; }
.verdict.not-testable { background: #eceef1; color: #4a4f55; border-color: #d0d4d9; }
footer { margin-top: 3rem; padding-top: 1rem; border-top: 1px solid #e4e4e0; font-size: .88rem; color: #4a4f55; }
@media print { body { background: #fff; } main { box-shadow: none; max-width: none; } }
)";

/// The CSS class of a verdict's badge.
inline std::string_view verdict_class(Verdict v) {
  switch (v) {
    case Verdict::reproduced: return "reproduced";
    case Verdict::partly: return "partly";
    case Verdict::not_reproduced: return "not-reproduced";
    case Verdict::not_testable: return "not-testable";
  }
  return "not-testable";
}

}  // namespace detail::report

class Report;

/// A part of the report under one heading: paragraphs, lists, tables, figures, claims, data files and
/// subsections, in the order they were added. Every adder returns the section (for chaining), except
/// section(), which returns the new subsection.
class Section {
 public:
  /// A section under `heading` (inline text).
  explicit Section(std::string heading) : heading_(std::move(heading)) {
    darkbert::detail::viz::require_utf8(heading_, "report: heading");
  }

  /// The heading, as given.
  const std::string& heading() const { return heading_; }

  /// Adds a paragraph of inline text.
  Section& paragraph(std::string text) {
    check_text(text, "paragraph");
    blocks_.emplace_back(Paragraph{std::move(text)});
    return *this;
  }

  /// Adds a bulleted list, one inline text per item.
  Section& list(std::vector<std::string> items) {
    require(!items.empty(), where(), ": an empty list");
    for (const auto& item : items) check_text(item, "list item");
    blocks_.emplace_back(BulletList{std::move(items)});
    return *this;
  }

  /// Adds a table; every row must have as many cells as the header.
  Section& table(ReportTable table) {
    require(!table.header.empty(), where(), ": table '", table.caption, "' has no header");
    for (const auto& h : table.header) check_text(h, "table header");
    check_text(table.caption, "table caption");
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      require(table.rows[r].size() == table.header.size(), where(), ": table '", table.caption, "' row ", r, " has ",
              table.rows[r].size(), " cells, its header ", table.header.size());
      for (const auto& cell : table.rows[r]) check_text(cell, "table cell");
    }
    blocks_.emplace_back(std::move(table));
    return *this;
  }

  /// Adds a figure; at least one of its PNG and SVG must be given (the files are read when the HTML is
  /// rendered).
  Section& figure(ReportFigure figure) {
    const std::string what = where() + ": figure '" + figure.caption + "'";
    require(!figure.png.empty() || !figure.svg.empty(), what, " has neither a PNG nor an SVG");
    if (!figure.png.empty()) detail::report::require_relative_path(figure.png, ".png", what);
    if (!figure.svg.empty()) detail::report::require_relative_path(figure.svg, ".svg", what);
    check_text(figure.caption, "figure caption");
    blocks_.emplace_back(std::move(figure));
    return *this;
  }

  /// Adds a claim (a row of the section's claims table).
  Section& claim(Claim claim) {
    require(!detail::report::one_line(claim.claim).empty(), where(), ": a claim without its text");
    for (const auto* text : {&claim.claim, &claim.paper, &claim.darkbert, &claim.reason}) check_text(*text, "claim");
    blocks_.emplace_back(std::move(claim));
    return *this;
  }

  /// Names a data file of the output folder (CSV, .npy, JSON) with what it holds; consecutive files form
  /// one list. Markdown links it; the HTML page names it (it links nothing outside itself).
  Section& file(std::string path, std::string description) {
    detail::report::require_relative_path(path, "", where() + ": data file");
    check_text(description, "data file description");
    blocks_.emplace_back(DataFile{std::move(path), std::move(description)});
    return *this;
  }

  /// Adds a subsection under `heading` and returns it (its address stays valid).
  Section& section(std::string heading) {
    require(!detail::report::one_line(heading).empty(), where(), ": a subsection without a heading");
    children_.emplace_back(std::move(heading));
    blocks_.emplace_back(Subsection{children_.size() - 1});
    return children_.back();
  }

 private:
  friend class Report;

  struct Paragraph {
    std::string text;
  };
  struct BulletList {
    std::vector<std::string> items;
  };
  struct DataFile {
    std::string path, description;
  };
  struct Subsection {
    std::size_t index;  // into children_
  };
  using Block = std::variant<Paragraph, BulletList, ReportTable, ReportFigure, Claim, DataFile, Subsection>;

  std::string where() const { return "report section '" + heading_ + "'"; }
  void check_text(const std::string& text, const char* what) const {
    darkbert::detail::viz::require_utf8(text, where() + ": " + what);
  }
  const Section& child(std::size_t index) const { return *std::next(children_.begin(), static_cast<long>(index)); }

  // The figure and data paths, in document order.
  void collect_claims(nlohmann::json& out) const {
    for (const auto& block : blocks_) {
      if (const auto* c = std::get_if<Claim>(&block)) {
        out.push_back({{"section", heading()}, {"claim", c->claim}, {"paper", c->paper}, {"darkbert", c->darkbert},
                       {"verdict", std::string(verdict_name(c->verdict))}});
      } else if (const auto* s = std::get_if<Subsection>(&block)) {
        child(s->index).collect_claims(out);
      }
    }
  }

  void collect_files(std::vector<std::string>& out) const {
    for (const auto& block : blocks_) {
      if (const auto* f = std::get_if<ReportFigure>(&block)) {
        if (!f->png.empty()) out.push_back(f->png);
        if (!f->svg.empty()) out.push_back(f->svg);
      } else if (const auto* d = std::get_if<DataFile>(&block)) {
        out.push_back(d->path);
      } else if (const auto* s = std::get_if<Subsection>(&block)) {
        child(s->index).collect_files(out);
      }
    }
  }

  // ---- Markdown
  static void markdown_table(std::string& out, const std::vector<std::string>& header,
                             const std::vector<std::vector<std::string>>& rows) {
    using detail::report::MarkdownPlace;
    using detail::report::markdown_inline;
    out += "|";
    // (appended piece by piece: GCC 12 warns falsely, -Wrestrict, on " " + a temporary string)
    for (const auto& h : header) out.append(" ").append(markdown_inline(h, MarkdownPlace::cell)).append(" |");
    out += "\n|";
    for (std::size_t c = 0; c < header.size(); ++c)
      out += detail::report::numeric_column(rows, c) ? " ---: |" : " --- |";
    out += "\n";
    for (const auto& row : rows) {
      out += "|";
      for (const auto& cell : row) out.append(" ").append(markdown_inline(cell, MarkdownPlace::cell)).append(" |");
      out += "\n";
    }
    out += "\n";
  }

  void render_markdown(std::string& out, int level) const {
    using detail::report::MarkdownPlace;
    using detail::report::markdown_inline;
    out += std::string(static_cast<std::size_t>(std::min(level, 6)), '#') + " " +
           markdown_inline(heading_, MarkdownPlace::cell) + "\n\n";
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const Block& block = blocks_[b];
      if (const auto* p = std::get_if<Paragraph>(&block)) {
        out += markdown_inline(p->text, MarkdownPlace::block) + "\n\n";
      } else if (const auto* l = std::get_if<BulletList>(&block)) {
        for (const auto& item : l->items) out += "- " + markdown_inline(item, MarkdownPlace::block) + "\n";
        out += "\n";
      } else if (const auto* t = std::get_if<ReportTable>(&block)) {
        if (!detail::report::one_line(t->caption).empty())
          out += markdown_inline(t->caption, MarkdownPlace::block) + "\n\n";
        markdown_table(out, t->header, t->rows);
      } else if (const auto* f = std::get_if<ReportFigure>(&block)) {
        const std::string alt = detail::report::markdown_escape(
            detail::report::one_line(detail::report::plain_text(f->caption)), MarkdownPlace::alt);
        out += "![" + alt + "](" + (f->png.empty() ? f->svg : f->png) + ")\n\n";
        std::string caption = markdown_inline(f->caption, MarkdownPlace::block);
        if (!f->png.empty() && !f->svg.empty()) caption += std::string(caption.empty() ? "" : " ") + "([SVG](" + f->svg + "))";
        if (!caption.empty()) out += caption + "\n\n";
      } else if (std::holds_alternative<Claim>(block)) {
        std::vector<std::vector<std::string>> rows;
        for (; b < blocks_.size() && std::holds_alternative<Claim>(blocks_[b]); ++b) {
          const auto& c = std::get<Claim>(blocks_[b]);
          rows.push_back({c.claim, c.paper, c.darkbert, "**" + std::string(verdict_name(c.verdict)) + "**", c.reason});
        }
        --b;
        markdown_table(out, {"The paper's claim", "Paper", "darkbert", "Verdict", "Why"}, rows);
      } else if (std::holds_alternative<DataFile>(block)) {
        for (; b < blocks_.size() && std::holds_alternative<DataFile>(blocks_[b]); ++b) {
          const auto& d = std::get<DataFile>(blocks_[b]);
          out += "- [`" + d.path + "`](" + d.path + ")";
          const std::string description = markdown_inline(d.description, MarkdownPlace::cell);
          out += description.empty() ? "\n" : ": " + description + "\n";
        }
        --b;
        out += "\n";
      } else if (const auto* s = std::get_if<Subsection>(&block)) {
        child(s->index).render_markdown(out, level + 1);
      }
    }
  }

  // ---- HTML
  static void html_table(std::string& out, const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows, const std::string& caption,
                         const char* css_class, std::size_t verdict_column = static_cast<std::size_t>(-1)) {
    using detail::report::html_inline;
    std::vector<bool> numeric(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) numeric[c] = c != verdict_column && detail::report::numeric_column(rows, c);
    // The caption goes above the table as a paragraph (a <caption> is as narrow as its table).
    if (!detail::report::one_line(caption).empty()) out += "<p class=\"caption\">" + html_inline(caption) + "</p>\n";
    out += "<div class=\"table-wrap\"><table";
    if (css_class[0] != '\0') out += std::string(" class=\"") + css_class + "\"";
    out += ">\n";
    out += "<thead><tr>";
    for (std::size_t c = 0; c < header.size(); ++c)
      out += std::string(numeric[c] ? "<th class=\"num\">" : "<th>") + html_inline(header[c]) + "</th>";
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& row : rows) {
      out += "<tr>";
      for (std::size_t c = 0; c < row.size(); ++c)
        out += std::string(numeric[c] ? "<td class=\"num\">" : "<td>") +
               (c == verdict_column ? row[c] : html_inline(row[c])) + "</td>";
      out += "</tr>\n";
    }
    out += "</tbody></table></div>\n";
  }

  void render_html(std::string& out, int level, const std::string& id, const std::filesystem::path& dir) const {
    using detail::report::html_escape;
    using detail::report::html_inline;
    const std::string h = "h" + std::to_string(std::min(level, 6));
    out += "<section id=\"" + id + "\">\n<" + h + ">" + html_inline(heading_) + "</" + h + ">\n";
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const Block& block = blocks_[b];
      if (const auto* p = std::get_if<Paragraph>(&block)) {
        out += "<p>" + html_inline(p->text) + "</p>\n";
      } else if (const auto* l = std::get_if<BulletList>(&block)) {
        out += "<ul>\n";
        for (const auto& item : l->items) out += "<li>" + html_inline(item) + "</li>\n";
        out += "</ul>\n";
      } else if (const auto* t = std::get_if<ReportTable>(&block)) {
        html_table(out, t->header, t->rows, t->caption, "");
      } else if (const auto* f = std::get_if<ReportFigure>(&block)) {
        out += html_figure(*f, dir);
      } else if (std::holds_alternative<Claim>(block)) {
        std::vector<std::vector<std::string>> rows;
        for (; b < blocks_.size() && std::holds_alternative<Claim>(blocks_[b]); ++b) {
          const auto& c = std::get<Claim>(blocks_[b]);
          const std::string badge = "<span class=\"verdict " + std::string(detail::report::verdict_class(c.verdict)) +
                                    "\">" + html_escape(verdict_name(c.verdict)) + "</span>";
          rows.push_back({c.claim, c.paper, c.darkbert, badge, c.reason});
        }
        --b;
        html_table(out, {"The paper's claim", "Paper", "darkbert", "Verdict", "Why"}, rows, "", "claims", 3);
      } else if (std::holds_alternative<DataFile>(block)) {
        out += "<ul class=\"files\">\n";
        for (; b < blocks_.size() && std::holds_alternative<DataFile>(blocks_[b]); ++b) {
          const auto& d = std::get<DataFile>(blocks_[b]);
          out += "<li><code>" + html_escape(d.path) + "</code>";
          out += detail::report::one_line(d.description).empty() ? "</li>\n" : ": " + html_inline(d.description) + "</li>\n";
        }
        --b;
        out += "</ul>\n";
      } else if (const auto* s = std::get_if<Subsection>(&block)) {
        child(s->index).render_html(out, level + 1, id + "-" + std::to_string(s->index + 1), dir);
      }
    }
    out += "</section>\n";
  }

  // A figure with its image embedded (PNG shown; SVG shown when there is no PNG, else offered as a
  // download link holding it as a data URI).
  static std::string html_figure(const ReportFigure& f, const std::filesystem::path& dir) {
    using detail::report::html_escape;
    const std::string what = "figure '" + f.caption + "'";
    const std::string png = f.png.empty() ? std::string() : detail::report::read_bytes(dir / f.png, what);
    const std::string svg = f.svg.empty() ? std::string() : detail::report::read_bytes(dir / f.svg, what);
    const std::string png_uri = "data:image/png;base64," + detail::report::base64(png);
    const std::string svg_uri = "data:image/svg+xml;base64," + detail::report::base64(svg);
    const double width = detail::report::display_width(png, svg);
    std::string out = "<figure>\n<img src=\"" + (png.empty() ? svg_uri : png_uri) + "\" alt=\"" +
                      html_escape(detail::report::one_line(detail::report::plain_text(f.caption))) + "\"";
    if (width > 0) out += " width=\"" + std::to_string(static_cast<long>(width + 0.5)) + "\"";
    out += ">\n<figcaption>" + detail::report::html_inline(f.caption);
    if (!png.empty() && !svg.empty()) {
      out += " <a download=\"" + html_escape(std::filesystem::path(f.svg).filename().string()) + "\" href=\"" + svg_uri +
             "\">SVG</a>";
    }
    out += "</figcaption>\n</figure>\n";
    return out;
  }

  std::string heading_;
  std::vector<Block> blocks_;
  std::list<Section> children_;
};

/// The whole report: a Section whose heading is the title, plus the registry of every number it states
/// (see the file comment for an example).
class Report : public Section {
 public:
  /// An empty report titled `title`.
  explicit Report(std::string title) : Section(std::move(title)) {
    require(!detail::report::one_line(heading()).empty(), "report: the title is empty");
  }

  /// Registers `value` under the dotted `key` (e.g. "table1.MRPC.pretrained.accuracy.mean") and returns it
  /// with `decimals` digits after the point (0 to 12) for the text. NaN reads "n/a" and is kept as "nan"
  /// (infinities: "inf", "-inf"). A key given twice, or one that runs into another (`a.b` and `a.b.c`), is
  /// refused by name.
  /// @code
  /// s.paragraph("Accuracy " + r.number("table1.MRPC.pretrained.accuracy.mean", 67.5347, 2));  // "Accuracy 67.53"
  /// @endcode
  std::string number(std::string_view key, double value, int decimals) {
    require(decimals >= 0 && decimals <= 12, "report: number '", key, "': ", decimals, " decimals is outside [0, 12]");
    detail::report::insert_at(numbers_, key, detail::report::json_number(value), "number");
    return detail::report::format_fixed(value, decimals);
  }

  /// Registers the fraction `fraction` under `key` and returns it as a percentage: percent(k, 0.1234, 1) ->
  /// "12.3%" (the check accepts a number followed by % against 100 times the registered value).
  std::string percent(std::string_view key, double fraction, int decimals) {
    require(decimals >= 0 && decimals <= 12, "report: number '", key, "': ", decimals, " decimals is outside [0, 12]");
    detail::report::insert_at(numbers_, key, detail::report::json_number(fraction), "number");
    const std::string text = detail::report::format_fixed(100.0 * fraction, decimals);
    return std::isfinite(fraction) ? text + "%" : text;
  }

  /// Registers a count under `key` and returns it with thousands grouped: count(k, 1234567) -> "1,234,567".
  std::string count(std::string_view key, std::int64_t n) {
    detail::report::insert_at(numbers_, key, n, "number");
    return detail::report::group_thousands(std::to_string(n));
  }

  /// Registers the mean, sample standard deviation, count and values of `values` under key.mean, key.sd,
  /// key.n and key.values and returns "mean ± sd" ("mean" alone for one value; sd is then "nan").
  /// @code
  /// r.mean_sd("table1.MRPC.finetuned.accuracy", {0.84, 0.86, 0.85}, 3);   // "0.850 ± 0.010"
  /// @endcode
  std::string mean_sd(std::string_view key, const std::vector<double>& values, int decimals) {
    require(!values.empty(), "report: number '", key, "': mean_sd of no values");
    double mean = 0;
    for (const double v : values) mean += v;
    mean /= static_cast<double>(values.size());
    double sd = std::numeric_limits<double>::quiet_NaN();
    if (values.size() > 1) {
      double squares = 0;
      for (const double v : values) squares += (v - mean) * (v - mean);
      sd = std::sqrt(squares / static_cast<double>(values.size() - 1));
    }
    nlohmann::json all = nlohmann::json::array();
    for (const double v : values) all.push_back(detail::report::json_number(v));
    const std::string base(key);
    const std::string mean_text = number(base + ".mean", mean, decimals);
    const std::string sd_text = number(base + ".sd", sd, decimals);
    detail::report::insert_at(numbers_, base + ".n", static_cast<std::int64_t>(values.size()), "number");
    detail::report::insert_at(numbers_, base + ".values", std::move(all), "number");
    return values.size() > 1 ? mean_text + " \xC2\xB1 " + sd_text : mean_text;
  }

  /// Registers a whole tree of numbers under `key`, e.g. another report's "numbers" that this one quotes
  /// (the BERT report quoting the GPT-2 study's); refused when `key` is taken.
  void numbers_from(std::string_view key, nlohmann::json tree) {
    require(tree.is_object(), "report: the numbers quoted under '", key, "' are not an object");
    detail::report::insert_at(numbers_, key, std::move(tree), "number");
  }

  /// Records context for readers of summary.json under the dotted `key` (sizes, seeds, model shape,
  /// timings, versions): any JSON value. Metadata is not part of the number check; a number the text
  /// states goes through number().
  void meta(std::string_view key, nlohmann::json value) {
    detail::report::insert_at(meta_, key, std::move(value), "meta");
  }

  /// Every registered number, nested by key path.
  const nlohmann::json& numbers() const { return numbers_; }

  /// The report as GitHub-flavoured Markdown: figures as relative links, tables with numeric columns
  /// right-aligned, claims as tables with the verdict in bold.
  std::string markdown() const {
    std::string out;
    render_markdown(out, 1);
    out += "---\n\nEvery number in this report is in [summary.json](summary.json) at full precision; the same "
           "report as one self-contained page: [report.html](report.html).\n";
    return out;
  }

  /// The report as one self-contained HTML page; reads the figures from `dir` (the output folder) and
  /// embeds them as base64 data URIs. Throws naming a figure that cannot be read.
  std::string html(const std::filesystem::path& dir) const {
    using detail::report::html_escape;
    using detail::report::html_inline;
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                      html_escape(detail::report::plain_text(heading())) + "</title>\n<style>" +
                      std::string(detail::report::html_style) + "</style>\n</head>\n<body>\n<main>\n";
    std::string body;
    render_html(body, 1, "report", dir);
    // A table of contents after the title and the opening blocks, when there are two sections or more.
    std::string contents;
    std::size_t sections = 0;
    for (const auto& block : blocks_)
      if (const auto* s = std::get_if<Subsection>(&block)) {
        ++sections;
        contents += "<li><a href=\"#report-" + std::to_string(s->index + 1) + "\">" + html_inline(child(s->index).heading()) +
                    "</a></li>\n";
      }
    if (sections >= 2) {
      const std::string nav = "<nav class=\"contents\"><p>Contents</p>\n<ul>\n" + contents + "</ul></nav>\n";
      const std::size_t first = body.find("<section id=\"report-1\">");
      body.insert(first == std::string::npos ? body.size() : first, nav);
    }
    out += body;
    out += "<footer>Every number on this page is in <code>summary.json</code> beside it, at full precision; "
           "the figures, tables and raw matrices are files in the same folder.</footer>\n</main>\n</body>\n</html>\n";
    return out;
  }

  /// summary.json's content: {"format": "darkbert-report/1", "title", "numbers": {...}, "meta": {...},
  /// "files": [figure and data paths in document order], "claims": [{section, claim, paper, darkbert,
  /// verdict}] in document order}.
  nlohmann::json summary() const {
    std::vector<std::string> files;
    collect_files(files);
    std::vector<std::string> unique;
    std::set<std::string> seen;
    for (auto& f : files)
      if (seen.insert(f).second) unique.push_back(std::move(f));
    nlohmann::json j;
    j["format"] = "darkbert-report/1";
    j["title"] = heading();
    j["numbers"] = numbers_.is_null() ? nlohmann::json::object() : numbers_;
    j["meta"] = meta_.is_null() ? nlohmann::json::object() : meta_;
    j["files"] = unique;
    nlohmann::json claims = nlohmann::json::array();
    collect_claims(claims);
    j["claims"] = claims;
    return j;
  }

  /// Writes `dir`/report.md, `dir`/report.html and `dir`/summary.json (crash-safely, each whole or not at
  /// all; nothing is written when a figure cannot be read). The figures must already be in `dir`.
  void write(const std::filesystem::path& dir) const {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    require(!ec, dir.string(), ": cannot create the report folder: ", ec.message());
    const std::string md = markdown();
    const std::string page = html(dir);
    std::string summary_text;
    try {
      summary_text = summary().dump(2) + "\n";
    } catch (const nlohmann::json::exception& e) {
      fail((dir / "summary.json").string(), ": ", e.what());
    }
    write_file_atomically(dir / "summary.json", summary_text);
    write_file_atomically(dir / "report.md", md);
    write_file_atomically(dir / "report.html", page);
  }

 private:
  nlohmann::json numbers_ = nlohmann::json::object();
  nlohmann::json meta_ = nlohmann::json::object();
};

// ------------------------------------------------------------------------------------------------ checker

/// The kinds of defect check_report() names.
enum class ReportDefect {
  missing_file,         ///< a file the report names (or report.md, report.html, summary.json) is absent
  bad_json,             ///< a .json file does not parse (or summary.json has no "numbers" object)
  bad_csv,              ///< a .csv file is empty, has an unterminated quote or rows of different lengths
  bad_npy,              ///< a .npy file does not read
  bad_png,              ///< a .png file does not decode
  bad_svg,              ///< an .svg file is not well-formed XML with an `<svg>` root
  unregistered_number,  ///< report.md states a number that summary.json does not hold at that precision
  external_reference,   ///< report.html loads or links something outside itself, or report.md links outside the folder
};

/// The defect's name: "missing file", "bad json", ..., "external reference".
inline std::string_view defect_name(ReportDefect d) {
  switch (d) {
    case ReportDefect::missing_file: return "missing file";
    case ReportDefect::bad_json: return "bad json";
    case ReportDefect::bad_csv: return "bad csv";
    case ReportDefect::bad_npy: return "bad npy";
    case ReportDefect::bad_png: return "bad png";
    case ReportDefect::bad_svg: return "bad svg";
    case ReportDefect::unregistered_number: return "unregistered number";
    case ReportDefect::external_reference: return "external reference";
  }
  return "unknown";
}

/// One problem check_report() found.
struct ReportProblem {
  ReportDefect kind = ReportDefect::missing_file;  ///< what is wrong
  std::string file;                                ///< the file it is in, relative to the report folder
  std::size_t line = 0;                            ///< 1-based line in `file`, 0 when not about a line
  std::string message;                             ///< "report.md:14: 4.56 is not among summary.json's numbers (2 decimals)"
};

/// A number stated in Markdown text (see the file comment for what counts).
struct StatedNumber {
  std::string text;      ///< as written, sign and % included: "-1,234.5", "12.3%"
  std::string value;     ///< normalised for comparison: "-1234.5" (no grouping, ASCII minus, no %)
  std::size_t line = 0;  ///< 1-based
  int decimals = 0;      ///< digits after the point
  bool percent = false;  ///< followed by %
};

namespace detail::report {

/// Whether the text before `end` (skipping spaces) is a reference word or §.
inline bool after_reference_word(std::string_view line, std::size_t end) {
  std::size_t p = end;
  while (true) {
    if (p >= 1 && (line[p - 1] == ' ' || line[p - 1] == '\t')) --p;
    else if (p >= 2 && line.substr(p - 2, 2) == "\xC2\xA0") p -= 2;  // no-break space
    else if (p >= 3 && line.substr(p - 3, 3) == "\xE2\x80\xAF") p -= 3;  // narrow no-break space
    else break;
  }
  if (p >= 2 && line.substr(p - 2, 2) == "\xC2\xA7") return true;  // §
  std::size_t q = p;
  while (q > 0 && (is_letter(line[q - 1]) || line[q - 1] == '.')) --q;
  std::string word(line.substr(q, p - q));
  for (auto& c : word) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  static const std::set<std::string> words = {"figure", "figures", "fig.", "figs.", "table", "tables", "section",
                                              "sections", "eq.", "eqs.", "equation", "equations", "appendix"};
  return words.count(word) > 0;
}

/// Whether `gap` (the text between two numbers) chains the second to a reference: ",", "and", "–", ...
inline bool reference_chain(std::string_view gap) {
  const std::size_t first = gap.find_first_not_of(' ');
  if (first == std::string_view::npos) return false;
  gap = gap.substr(first, gap.find_last_not_of(' ') - first + 1);
  return gap == "," || gap == "and" || gap == ", and" || gap == "or" || gap == "&" || gap == "/" || gap == "-" ||
         gap == "to" || gap == "\xE2\x80\x93" /* – */;
}

/// The numbers stated on one line of Markdown outside code spans, link destinations, tags and names;
/// those starting before `from` (a heading's section number, a list marker) are skipped.
inline void scan_line(std::string_view line, std::size_t from, std::size_t line_number, std::vector<StatedNumber>& out) {
  std::size_t chain_end = std::string_view::npos;  // where the last reference number ended
  std::size_t i = 0;
  const std::size_t n = line.size();
  // A name: letters, digits, '_', '.', and '-' between them (L3H5, GPT-2, bert-base-uncased, e.g.).
  auto skip_word = [&](std::size_t p) {
    while (p < n && (is_alnum(line[p]) || line[p] == '_' || line[p] == '.' ||
                     (line[p] == '-' && p + 1 < n && is_alnum(line[p + 1]))))
      ++p;
    return p;
  };
  auto digit_at = [&](std::size_t p) { return p < n && is_digit(line[p]); };
  while (i < n) {
    const char c = line[i];
    if (c == '\\' && i + 1 < n) {  // an escaped character is literal
      i += 2;
      continue;
    }
    if (c == '`') {  // a code span: up to the same run of backticks, else a literal backtick run
      std::size_t run = i;
      while (run < n && line[run] == '`') ++run;
      const std::size_t close = line.find(std::string(run - i, '`'), run);
      i = close == std::string_view::npos ? run : close + (run - i);
      continue;
    }
    if (c == ']' && i + 1 < n && line[i + 1] == '(') {  // a link or image destination
      const std::size_t close = line.find(')', i + 2);
      i = close == std::string_view::npos ? n : close + 1;
      continue;
    }
    if (c == '<' && i + 1 < n && (is_letter(line[i + 1]) || line[i + 1] == '/' || line[i + 1] == '!')) {
      const std::size_t close = line.find('>', i + 1);  // an HTML tag or an autolink
      i = close == std::string_view::npos ? n : close + 1;
      continue;
    }
    if (c == '&' && i + 1 < n && line[i + 1] == '#') {  // a character reference
      const std::size_t close = line.find(';', i + 2);
      i = close == std::string_view::npos ? i + 2 : close + 1;
      continue;
    }
    if (is_letter(c) || c == '_') {  // a word, possibly with digits in it
      i = skip_word(i);
      continue;
    }
    if (!is_digit(c)) {
      ++i;
      continue;
    }
    // A number's digits start at i; its sign, if any, is just before them ('-' after a digit is a dash).
    std::size_t start = i;
    bool negative = false;
    if (i >= 1 && line[i - 1] == '-' && !(i >= 2 && is_digit(line[i - 2]))) {
      negative = true, start = i - 1;
    } else if (i >= 3 && line.substr(i - 3, 3) == "\xE2\x88\x92") {  // U+2212 minus
      negative = true, start = i - 3;
    }
    std::size_t p = i;
    while (digit_at(p)) ++p;
    std::string digits(line.substr(i, p - i));
    bool grouped = false;
    if (digits.size() <= 3) {  // 1,234,567: groups of exactly three digits
      while (p < n && line[p] == ',' && digit_at(p + 1) && digit_at(p + 2) && digit_at(p + 3) && !digit_at(p + 4)) {
        digits += line.substr(p + 1, 3);
        p += 4;
        grouped = true;
      }
    }
    std::string fraction;
    if (p < n && line[p] == '.' && digit_at(p + 1)) {
      std::size_t q = p + 1;
      while (digit_at(q)) ++q;
      fraction = std::string(line.substr(p + 1, q - p - 1));
      p = q;
    }
    // Part of a name or of a dotted run (3x3, 99th, 12ms, 1.2.3): skipped whole.
    if (p < n && (is_letter(line[p]) || line[p] == '_' || (line[p] == '.' && digit_at(p + 1)))) {
      i = skip_word(p);
      chain_end = std::string_view::npos;
      continue;
    }
    const bool percent = p < n && line[p] == '%';
    const std::size_t end = percent ? p + 1 : p;
    i = end;
    // References: after § or a reference word, or chained to such a number.
    const bool chained = chain_end != std::string_view::npos && reference_chain(line.substr(chain_end, start - chain_end));
    if (!negative && (chained || after_reference_word(line, start))) {
      chain_end = end;
      continue;
    }
    chain_end = std::string_view::npos;
    const bool year = !negative && !grouped && fraction.empty() && !percent && digits.size() == 4 &&
                      digits >= "1900" && digits <= "2099";
    if (year || start < from) continue;
    StatedNumber s;
    s.text = std::string(line.substr(start, end - start));
    s.value = (negative ? "-" : "") + digits + (fraction.empty() ? "" : "." + fraction);
    s.line = line_number;
    s.decimals = static_cast<int>(fraction.size());
    s.percent = percent;
    out.push_back(std::move(s));
  }
}

}  // namespace detail::report

/// The numbers a Markdown text states, by the rule in the file comment (what check_report() compares with
/// summary.json).
/// @code
/// auto found = darkbert::study::stated_numbers("## 3.4 Heads\n\nTable 1: GPT-2 gains -1.25 (12.5%) in 2019.\n");
/// // found: "-1.25" (2 decimals) and "12.5%" (1 decimal, percent)
/// @endcode
inline std::vector<StatedNumber> stated_numbers(std::string_view markdown) {
  using detail::report::is_digit;
  std::vector<StatedNumber> out;
  std::size_t line_number = 0, begin = 0;
  std::string fence;  // the open code fence ("```" or "~~~"), empty outside one
  while (begin <= markdown.size()) {
    const std::size_t newline = std::min(markdown.find('\n', begin), markdown.size());
    std::string_view line = markdown.substr(begin, newline - begin);
    begin = newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::string_view trimmed = line.substr(indent);
    if (!fence.empty()) {
      if (trimmed.substr(0, fence.size()) == fence) fence.clear();
      continue;
    }
    if (trimmed.substr(0, 3) == "```" || trimmed.substr(0, 3) == "~~~") {
      fence = std::string(trimmed.substr(0, 3));
      continue;
    }
    // A heading's leading section number ("## 3.4 Attention") or an ordered-list marker ("1. ") is cut.
    std::size_t from = indent, p = indent;
    while (p < line.size() && line[p] == '#') ++p;
    if (p > indent && p - indent <= 6 && p < line.size() && line[p] == ' ') {
      std::size_t q = p + 1;
      while (q < line.size() && (is_digit(line[q]) || line[q] == '.')) ++q;
      if (q > p + 1 && is_digit(line[p + 1]) && (q == line.size() || line[q] == ' ')) from = q;
    } else {
      std::size_t q = indent;
      while (q < line.size() && is_digit(line[q])) ++q;
      if (q > indent && q < line.size() && (line[q] == '.' || line[q] == ')') && (q + 1 == line.size() || line[q + 1] == ' '))
        from = q + 1;
    }
    detail::report::scan_line(line, from, line_number, out);
  }
  return out;
}

namespace detail::report {

/// Why a CSV file does not parse ("" when it does): RFC 4180 quoting, every row as long as the first.
inline std::string csv_problem(std::string_view text, std::size_t& bad_line) {
  bad_line = 0;
  if (text.empty()) return "empty file";
  std::size_t line = 1, row_line = 1, fields = 1, expected = 0;
  bool quoted = false, field_start = true, after_quote = false;
  auto end_row = [&]() -> std::string {
    if (expected == 0) expected = fields;
    else if (fields != expected) {
      bad_line = row_line;
      return std::to_string(fields) + " fields, the first row has " + std::to_string(expected);
    }
    fields = 1, field_start = true, after_quote = false, row_line = line;
    return {};
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') ++i;
      else if (c == '"') quoted = false, after_quote = true;
      else if (c == '\n') ++line;
      continue;
    }
    if (c == ',') {
      ++fields, field_start = true, after_quote = false;
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      ++line;
      if (auto problem = end_row(); !problem.empty()) return problem;
    } else if (after_quote) {
      bad_line = line;
      return "text after a closing quote";
    } else if (c == '"') {
      if (!field_start) {
        bad_line = line;
        return "a quote inside an unquoted field";
      }
      quoted = true, field_start = false;
    } else {
      field_start = false;
    }
  }
  if (quoted) {
    bad_line = row_line;
    return "a quoted field is not closed";
  }
  const char last = text.back();
  if (last != '\n') {  // a last row without a newline
    if (auto problem = end_row(); !problem.empty()) return problem;
  }
  return {};
}

/// Every number under `j` (arrays and objects walked), as doubles.
inline void collect_numbers(const nlohmann::json& j, std::vector<double>& out) {
  if (j.is_number()) out.push_back(j.get<double>());
  else if (j.is_object() || j.is_array())
    for (const auto& item : j) collect_numbers(item, out);
}

/// The references of an HTML page to anything outside it: in every tag, src, href, srcset, poster, data
/// and action values that are not data: URIs (href: or #fragments); in <style> blocks, url(...) that is
/// not a data: URI and @import.
inline std::vector<std::string> html_external_references(std::string_view html) {
  std::vector<std::string> found;
  for (std::size_t open = html.find('<'); open != std::string_view::npos; open = html.find('<', open + 1)) {
    if (open + 1 >= html.size() || !is_letter(html[open + 1])) continue;
    const std::size_t close = html.find('>', open);
    const std::string_view tag = html.substr(open, close == std::string_view::npos ? std::string_view::npos : close - open);
    for (const std::string_view attribute : {"src=", "href=", "srcset=", "poster=", "data=", "action="}) {
      for (std::size_t at = tag.find(attribute); at != std::string_view::npos; at = tag.find(attribute, at + 1)) {
        if (at == 0 || (tag[at - 1] != ' ' && tag[at - 1] != '\n' && tag[at - 1] != '\t')) continue;
        const std::size_t v = at + attribute.size();
        std::string value;
        if (v < tag.size() && (tag[v] == '"' || tag[v] == '\'')) {
          const std::size_t end = tag.find(tag[v], v + 1);
          value = std::string(tag.substr(v + 1, end == std::string_view::npos ? std::string_view::npos : end - v - 1));
        } else {
          value = std::string(tag.substr(v, tag.find_first_of(" \t\n", v) - v));
        }
        const bool inside = value.rfind("data:", 0) == 0 || (attribute == "href=" && value.rfind("#", 0) == 0);
        if (!inside) found.push_back(std::string(attribute) + "\"" + value.substr(0, 80) + "\"");
      }
    }
    if (close == std::string_view::npos) break;
    if (tag.substr(0, 6) == "<style") {
      const std::size_t end = html.find("</style", close);
      const std::string_view css = html.substr(close, end == std::string_view::npos ? std::string_view::npos : end - close);
      for (const std::string_view word : {"url(", "@import"})
        for (std::size_t at = css.find(word); at != std::string_view::npos; at = css.find(word, at + 1)) {
          const std::string_view rest = css.substr(at, 80);
          const std::size_t value = rest.find_first_not_of(" '\"", word.size());
          const bool data_uri = word == "url(" && value != std::string_view::npos && rest.substr(value, 5) == "data:";
          if (!data_uri) found.push_back(std::string(rest.substr(0, rest.find_first_of(";\n"))));
        }
    }
  }
  return found;
}

/// The relative link and image destinations of a Markdown text (outside code), with their lines.
inline std::vector<std::pair<std::string, std::size_t>> markdown_links(std::string_view markdown) {
  std::vector<std::pair<std::string, std::size_t>> links;
  std::size_t line_number = 0, begin = 0;
  bool fenced = false;
  while (begin <= markdown.size()) {
    const std::size_t newline = std::min(markdown.find('\n', begin), markdown.size());
    const std::string_view line = markdown.substr(begin, newline - begin);
    begin = newline + 1;
    ++line_number;
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    if (line.substr(indent, 3) == "```" || line.substr(indent, 3) == "~~~") {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\') {
        ++i;
      } else if (line[i] == '`') {
        std::size_t run = i;
        while (run < line.size() && line[run] == '`') ++run;
        const std::size_t close = line.find(std::string(run - i, '`'), run);
        i = (close == std::string_view::npos ? run : close + (run - i)) - 1;
      } else if (line[i] == ']' && i + 1 < line.size() && line[i + 1] == '(') {
        const std::size_t close = line.find(')', i + 2);
        std::string target(line.substr(i + 2, close == std::string_view::npos ? std::string_view::npos : close - i - 2));
        if (!target.empty() && target.front() == '<') target = target.substr(1, target.find('>') - 1);
        target = target.substr(0, target.find(' '));  // a title after the destination
        links.emplace_back(target, line_number);
        i = close == std::string_view::npos ? line.size() : close;
      }
    }
  }
  return links;
}

}  // namespace detail::report

/// Checks a report folder (as Report::write and the sections left it) and names every problem found:
/// - report.md, report.html and summary.json exist; every file report.md links to and every file listed
///   under "files" in summary.json exists (a link outside the folder — absolute, `..` — is an external
///   reference);
/// - every .json parses (summary.json holds a "numbers" object), every .csv parses with the same number of
///   fields on every row, every .npy reads (io/npy.hpp), every .png decodes (cairo), every .svg is
///   well-formed XML with an `<svg>` root (pugixml); files and folders whose names start with '.' are
///   skipped (an interrupted atomic write leaves such a temporary file);
/// - every number report.md states (stated_numbers()) equals, at its stated decimals, a number under
///   "numbers" in summary.json (or 100 times one, when followed by %);
/// - report.html loads and links nothing outside itself (only data: URIs and `#fragment` links).
/// Problems are sorted by file and line; an empty list means the folder passed.
/// @code
/// for (const auto& p : darkbert::study::check_report("out")) std::cerr << p.message << "\n";
/// @endcode
inline std::vector<ReportProblem> check_report(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  using detail::report::format_fixed;
  std::vector<ReportProblem> problems;
  auto add = [&](ReportDefect kind, const std::string& file, std::size_t line, const std::string& what) {
    problems.push_back({kind, file, line, file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + what});
  };
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    add(ReportDefect::missing_file, dir.string(), 0, "the report folder does not exist");
    return problems;
  }
  auto read = [&](const std::string& relative) -> std::optional<std::string> {
    std::ifstream in(dir / relative, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  for (const char* required : {"report.md", "report.html", "summary.json"})
    if (!fs::is_regular_file(dir / required, ec)) add(ReportDefect::missing_file, required, 0, "missing");

  // Every data file and figure in the folder.
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.filename().string().rfind(".", 0) == 0) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string relative = fs::relative(path, dir, ec).generic_string();
    std::string ext = path.extension().string();
    for (auto& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (ext == ".json") {
      try {
        const auto j = nlohmann::json::parse(read(relative).value_or(""));
        (void)j;
      } catch (const nlohmann::json::exception& e) {
        add(ReportDefect::bad_json, relative, 0, std::string("does not parse: ") + e.what());
      }
    } else if (ext == ".csv") {
      std::size_t line = 0;
      const std::string problem = detail::report::csv_problem(read(relative).value_or(""), line);
      if (!problem.empty()) add(ReportDefect::bad_csv, relative, line, problem);
    } else if (ext == ".npy") {
      try {
        (void)read_npy<double>(path);
      } catch (const darkbert::error& e) {
        add(ReportDefect::bad_npy, relative, 0, std::string("does not read: ") + e.what());
      }
    } else if (ext == ".png") {
      cairo_surface_t* surface = cairo_image_surface_create_from_png(path.c_str());
      const cairo_status_t status = cairo_surface_status(surface);
      const bool empty = status == CAIRO_STATUS_SUCCESS && (cairo_image_surface_get_width(surface) == 0 ||
                                                             cairo_image_surface_get_height(surface) == 0);
      cairo_surface_destroy(surface);
      if (status != CAIRO_STATUS_SUCCESS)
        add(ReportDefect::bad_png, relative, 0, std::string("does not decode: ") + cairo_status_to_string(status));
      else if (empty)
        add(ReportDefect::bad_png, relative, 0, "has no pixels");
    } else if (ext == ".svg") {
      pugi::xml_document doc;
      const auto parsed = doc.load_file(path.c_str());
      if (!parsed)
        add(ReportDefect::bad_svg, relative, 0,
            std::string("is not well-formed XML: ") + parsed.description() + " at byte " + std::to_string(parsed.offset));
      else if (std::string_view(doc.document_element().name()) != "svg")
        add(ReportDefect::bad_svg, relative, 0, std::string("has the root <") + doc.document_element().name() + ">, not <svg>");
    }
  }

  // summary.json: its numbers and the files it lists.
  std::optional<std::vector<double>> numbers;
  if (const auto text = read("summary.json")) {
    try {
      const auto summary = nlohmann::json::parse(*text);
      if (!summary.is_object() || !summary.contains("numbers") || !summary["numbers"].is_object()) {
        add(ReportDefect::bad_json, "summary.json", 0, "has no \"numbers\" object");
      } else {
        numbers.emplace();
        detail::report::collect_numbers(summary["numbers"], *numbers);
      }
      if (summary.is_object() && summary.contains("files") && summary["files"].is_array())
        for (const auto& f : summary["files"]) {
          const std::string file = f.is_string() ? f.get<std::string>() : f.dump();
          if (!f.is_string() || !fs::is_regular_file(dir / file, ec))
            add(ReportDefect::missing_file, "summary.json", 0, "lists '" + file + "', which is not in the folder");
        }
    } catch (const nlohmann::json::exception&) {
      // named above with the other .json files
    }
  }

  if (const auto md = read("report.md")) {
    // Links to files.
    for (const auto& [target, line] : detail::report::markdown_links(*md)) {
      const std::size_t colon = target.find(':'), slash = target.find('/');
      const bool scheme = colon != std::string::npos && (slash == std::string::npos || colon < slash);
      if (target.empty() || target[0] == '#' || scheme) continue;  // an anchor, or a web or mail address
      const std::string file = target.substr(0, target.find_first_of("#?"));
      bool outside = file[0] == '/';
      for (std::size_t b = 0; b <= file.size() && !outside;) {
        const std::size_t e = std::min(file.find('/', b), file.size());
        outside = file.substr(b, e - b) == "..";
        b = e + 1;
      }
      if (outside)
        add(ReportDefect::external_reference, "report.md", line, "links to '" + target + "', outside the report folder");
      else if (!fs::exists(dir / file, ec))
        add(ReportDefect::missing_file, "report.md", line, "links to '" + target + "', which is not in the folder");
    }
    // Numbers.
    if (numbers) {
      std::map<std::pair<int, bool>, std::set<std::string>> formatted;  // (decimals, as percent) -> texts
      auto known = [&](int decimals, bool percent) -> const std::set<std::string>& {
        auto [it, inserted] = formatted.try_emplace(std::pair<int, bool>(decimals, percent));
        if (inserted)
          for (const double v : *numbers) it->second.insert(format_fixed(percent ? 100.0 * v : v, decimals));
        return it->second;
      };
      for (const auto& s : stated_numbers(*md)) {
        if (known(s.decimals, false).count(s.value) || (s.percent && known(s.decimals, true).count(s.value))) continue;
        add(ReportDefect::unregistered_number, "report.md", s.line,
            s.text + " is not among summary.json's numbers (" + std::to_string(s.decimals) +
                (s.decimals == 1 ? " decimal" : " decimals") + (s.percent ? ", as a percentage" : "") + ")");
      }
    }
  }

  if (const auto page = read("report.html"))
    for (const auto& reference : detail::report::html_external_references(*page))
      add(ReportDefect::external_reference, "report.html", 0, reference + " refers to something outside the page");

  std::sort(problems.begin(), problems.end(), [](const ReportProblem& a, const ReportProblem& b) {
    return std::tie(a.file, a.line, a.message) < std::tie(b.file, b.line, b.message);
  });
  return problems;
}

}  // namespace darkbert::study
