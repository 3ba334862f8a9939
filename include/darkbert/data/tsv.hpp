#pragma once
/// @file
/// Tab-separated tables as GLUE ships them. Two quoting rules, matching Python's csv module:
/// @code
/// Quoting::none — QUOTE_NONE: a `"` is an ordinary character (official GLUE files: MRPC, STS-B, QNLI,
///                 MNLI, QQP contain literal quotes that are not CSV quotes).
/// Quoting::csv  — QUOTE_MINIMAL: a field that starts with `"` runs to the matching `"`, `""` inside is one
///                 `"`, and may hold tabs and newlines (the Hugging Face export in glue/RTE-hf).
/// @endcode
/// A UTF-8 byte order mark before the header is dropped (MRPC), a trailing `\r` is dropped from every line
/// (files saved on Windows), and every data row must have as many fields as the header.
///
/// @code
/// auto table = darkbert::read_tsv("glue/SST-2/dev.tsv");
/// auto col = table.column("sentence");
/// for (const auto& row : table.rows) use(row.fields[col], row.line);
/// @endcode

#include <cstddef>      // std::size_t
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ifstream
#include <iterator>     // std::istreambuf_iterator
#include <sstream>      // std::ostringstream
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"

namespace darkbert {

/// How fields are quoted: not at all (GLUE's TSVs), or CSV-style double quotes.
enum class Quoting { none, csv };

/// How to read a TSV file.
struct TsvOptions {
  Quoting quoting = Quoting::none;  ///<  field quoting
  bool has_header = true;  ///<  the first line names the columns
  std::size_t max_rows = 0;  ///< stop after this many data rows (0 = all); rows after it are not checked
};

/// One data row.
struct TsvRow {
  std::vector<std::string> fields;  ///<  the row's fields
  std::size_t line = 0;  ///< 1-based line number where the row starts
};

/// A whole TSV file.
/// @code
/// auto table = darkbert::read_tsv(path);
/// const auto label = table.column("Quality");
/// for (const auto& row : table.rows) use(row.fields[label]);
/// @endcode
struct TsvTable {
  std::filesystem::path file;  ///<  the file read
  std::vector<std::string> header;  ///< empty when has_header is false
  std::vector<TsvRow> rows;  ///<  data rows, in order

  /// Index of a header column; throws naming the file and the columns it does have.
  std::size_t column(std::string_view name) const {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    std::ostringstream have;
    for (std::size_t i = 0; i < header.size(); ++i) have << (i ? ", " : "") << '\'' << header[i] << '\'';
    fail(file.string(), ":1: no column '", name, "' in the header (columns: ", have.str(), ")");
  }
  /// Whether the header has a column `name`.
  bool has_column(std::string_view name) const {
    for (const auto& h : header)
      if (h == name) return true;
    return false;
  }
};

namespace detail {

inline std::string read_whole_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  require(static_cast<bool>(in), file.string(), ": cannot open for reading");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require(!in.bad(), file.string(), ": read error");
  return text;
}

inline void strip_bom(std::string_view& text) {
  if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
      static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF)
    text.remove_prefix(3);
}

/// Splits one record starting at `pos`; advances `pos` past its line end and `line` by the lines consumed.
inline std::vector<std::string> next_record(std::string_view text, std::size_t& pos, std::size_t& line,
                                            Quoting quoting, const std::filesystem::path& file) {
  std::vector<std::string> fields;
  std::string field;
  const std::size_t start_line = line;
  bool at_field_start = true;
  while (true) {
    if (pos >= text.size()) {  // last line without a newline
      fields.push_back(std::move(field));
      break;
    }
    char c = text[pos];
    if (quoting == Quoting::csv && at_field_start && c == '"') {
      ++pos;
      while (true) {
        if (pos >= text.size())
          fail(file.string(), ":", start_line, ": quoted field is never closed (a `\"` opened on this line)");
        char q = text[pos];
        if (q == '"') {
          if (pos + 1 < text.size() && text[pos + 1] == '"') {
            field.push_back('"');
            pos += 2;
            continue;
          }
          ++pos;
          break;
        }
        if (q == '\n') ++line;
        field.push_back(q);
        ++pos;
      }
      // After the closing quote only a tab or the end of the line may follow.
      if (pos < text.size() && text[pos] != '\t' && text[pos] != '\n' &&
          !(text[pos] == '\r' && (pos + 1 == text.size() || text[pos + 1] == '\n')))
        fail(file.string(), ":", line, ": unexpected character '", text[pos], "' after a closing quote");
      at_field_start = false;
      continue;
    }
    if (c == '\t') {
      fields.push_back(std::move(field));
      field.clear();
      at_field_start = true;
      ++pos;
      continue;
    }
    if (c == '\n' || (c == '\r' && (pos + 1 == text.size() || text[pos + 1] == '\n'))) {
      fields.push_back(std::move(field));
      pos += (c == '\r' && pos + 1 < text.size()) ? 2 : 1;
      ++line;
      break;
    }
    field.push_back(c);
    at_field_start = false;
    ++pos;
  }
  return fields;
}

}  // namespace detail

/// Reads a whole table; errors name the file and line (wrong field count, unclosed quote).
inline TsvTable read_tsv(const std::filesystem::path& file, const TsvOptions& options = {}) {
  const std::string content = detail::read_whole_file(file);
  std::string_view text(content);
  detail::strip_bom(text);
  TsvTable table;
  table.file = file;
  std::size_t pos = 0, line = 1;
  if (options.has_header) {
    require(!text.empty(), file.string(), ": empty file, expected a header line");
    table.header = detail::next_record(text, pos, line, options.quoting, file);
  }
  const std::size_t width = table.header.size();
  while (pos < text.size()) {
    if (options.max_rows != 0 && table.rows.size() == options.max_rows) break;
    const std::size_t row_line = line;
    auto fields = detail::next_record(text, pos, line, options.quoting, file);
    if (fields.size() == 1 && fields[0].empty())
      fail(file.string(), ":", row_line, ": empty line inside the table");
    if (width != 0 && fields.size() != width)
      fail(file.string(), ":", row_line, ": expected ", width, " tab-separated fields (as in the header), got ",
           fields.size());
    table.rows.push_back({std::move(fields), row_line});
  }
  return table;
}

}  // namespace darkbert
