#pragma once
/// @file
/// Results of an analysis as plain data: a named 2-D table with row and column names, and writers to CSV,
/// JSON and .npy. The common case is a per-head matrix [layers x heads] (HeadMatrix); small tables such as
/// "[CLS] attention per category" or a task-metric report use the same type.
///
/// @code
/// HeadMatrix<double> m = make_head_matrix<double>("cosine_pretrained_vs_finetuned", 12, 12);
/// m(3, 7) = 0.91;
/// write_table(m, "results/mrpc");   // results/mrpc/cosine_pretrained_vs_finetuned.{csv,json,npy}
/// @endcode
///
/// Formats (NaN is written as "nan", infinities as "inf" / "-inf", numbers in shortest round-trip form):
/// @code
/// CSV   header "<row_axis>,<col name>,...", then one line per row "<row name>,<v>,...".
/// JSON  {"format": "darkbert-table/1", "name", "row_axis", "col_axis", "rows": [..], "cols": [..],
///        "examples": N, "dtype": "float64"|"float32", "values": [[..], ..]}  (NaN/inf as the strings above)
/// .npy  the values only, [rows, cols] C order, dtype of T (names live in the CSV/JSON).
/// @endcode

#include <cerrno>        // errno
#include <charconv>      // std::to_chars, std::from_chars (shortest round-trip, locale-independent)
#include <cmath>         // std::isnan, std::isinf
#include <cstddef>       // std::size_t
#include <cstring>       // std::strerror
#include <filesystem>    // std::filesystem::path, create_directories
#include <fstream>       // std::ifstream
#include <limits>        // std::numeric_limits
#include <sstream>       // std::ostringstream
#include <string>        // std::string, std::to_string
#include <system_error>  // std::errc, std::error_code
#include <type_traits>   // std::is_same_v
#include <utility>       // std::move
#include <vector>        // std::vector

#include <nlohmann/json.hpp>    // JSON writer / reader
#include <xtensor/xnpy.hpp>     // xt::dump_npy
#include <xtensor/xtensor.hpp>  // xt::xtensor

#include "darkbert/core/atomic_file.hpp"  // darkbert::write_file_atomically
#include "darkbert/core/error.hpp"   // darkbert::fail, darkbert::require
#include "darkbert/core/matrix.hpp"  // darkbert::Index

namespace darkbert {

/// A named [rows, cols] table of numbers.
/// @code
/// Table<double> t = make_table<double>("cls_attention", "head", {"0", "1"}, "category", {"[SEP]", "other"});
/// t(1, 0) = 0.42;
/// @endcode
template <class T>
struct Table {
  std::string name;                    ///< what the numbers are; also the file stem in write_table
  std::string row_axis = "row";     ///< what a row is ("layer")
  std::string col_axis = "col";     ///< what a column is ("head")
  std::vector<std::string> row_names;  ///< [rows]
  std::vector<std::string> col_names;  ///< [cols]
  xt::xtensor<T, 2> values;            ///< [rows, cols]
  std::size_t examples = 0;            ///< number of examples aggregated into the values (0 = not applicable)

  /// Number of rows.
  Index rows() const { return static_cast<Index>(values.shape(0)); }
  /// Number of columns.
  Index cols() const { return static_cast<Index>(values.shape(1)); }
  /// Element (r, c).
  T& operator()(Index r, Index c) { return values(static_cast<std::size_t>(r), static_cast<std::size_t>(c)); }
  /// Element (r, c).
  const T& operator()(Index r, Index c) const {
    return values(static_cast<std::size_t>(r), static_cast<std::size_t>(c));
  }

  /// Throws unless the names match the shape of the values.
  void check() const {
    require(row_names.size() == values.shape(0), "table '", name, "': ", row_names.size(), " row names for ",
            values.shape(0), " rows");
    require(col_names.size() == values.shape(1), "table '", name, "': ", col_names.size(), " column names for ",
            values.shape(1), " columns");
  }
};

/// A per-head matrix: rows = layers ("0".."layers-1"), columns = heads ("0".."heads-1").
template <class T>
using HeadMatrix = Table<T>;

namespace detail {
inline std::vector<std::string> index_names(Index count) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(count));
  for (Index i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}
}  // namespace detail

/// A table of the given shape and names, every value = fill.
template <class T>
Table<T> make_table(std::string name, std::string row_axis, std::vector<std::string> row_names, std::string col_axis,
                    std::vector<std::string> col_names, T fill = T(0)) {
  Table<T> t;
  t.name = std::move(name);
  t.row_axis = std::move(row_axis);
  t.col_axis = std::move(col_axis);
  t.values = xt::xtensor<T, 2>::from_shape({row_names.size(), col_names.size()});
  t.values.fill(fill);
  t.row_names = std::move(row_names);
  t.col_names = std::move(col_names);
  return t;
}

/// A [layers x heads] matrix with rows "layer" 0.. and columns "head" 0.., every value = fill.
/// @code
/// auto m = make_head_matrix<float>("entropy", 12, 12);
/// @endcode
template <class T>
HeadMatrix<T> make_head_matrix(std::string name, Index layers, Index heads, T fill = T(0)) {
  require(layers >= 1 && heads >= 1, "head matrix '", name, "': needs layers >= 1 and heads >= 1, got ", layers,
          " x ", heads);
  return make_table<T>(std::move(name), "layer", detail::index_names(layers), "head", detail::index_names(heads),
                       fill);
}

/// Shortest text that reads back to exactly v; "nan", "inf", "-inf" for the non-finite values.
template <class T>
std::string format_number(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  require(result.ec == std::errc(), "format_number: could not format a number");
  return std::string(buffer, result.ptr);
}

namespace detail {
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

template <class T>
nlohmann::json json_number(T v) {
  if (std::isnan(v) || std::isinf(v)) return format_number(v);
  // Through the shortest decimal of T, so a float 0.1f is written as 0.1 rather than 0.10000000149011612.
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    const std::string text = format_number(v);
    double d = 0;
    std::from_chars(text.data(), text.data() + text.size(), d);  // locale-independent, unlike std::stod
    return d;
  }
}

template <class T>
T json_value(const nlohmann::json& j, const std::string& where) {
  if (j.is_number()) return static_cast<T>(j.get<double>());
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<T>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<T>::infinity();
    if (s == "-inf") return -std::numeric_limits<T>::infinity();
  }
  fail(where, " is ", j.dump(), ", expected a number or \"nan\", \"inf\", \"-inf\"");
}


template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, float>) return "float32";
  else return "unknown";
}
}  // namespace detail

/// The table as CSV text (see the format at the top of this header).
template <class T>
std::string to_csv(const Table<T>& t) {
  t.check();
  std::ostringstream out;
  out << detail::csv_field(t.row_axis);
  for (const auto& c : t.col_names) out << ',' << detail::csv_field(c);
  out << '\n';
  for (Index r = 0; r < t.rows(); ++r) {
    out << detail::csv_field(t.row_names[static_cast<std::size_t>(r)]);
    for (Index c = 0; c < t.cols(); ++c) out << ',' << format_number(t(r, c));
    out << '\n';
  }
  return out.str();
}

/// The table as a JSON object (see the format at the top of this header).
template <class T>
nlohmann::json to_json(const Table<T>& t) {
  t.check();
  nlohmann::json values = nlohmann::json::array();
  for (Index r = 0; r < t.rows(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (Index c = 0; c < t.cols(); ++c) row.push_back(detail::json_number(t(r, c)));
    values.push_back(std::move(row));
  }
  return {{"format", "darkbert-table/1"}, {"name", t.name},         {"row_axis", t.row_axis},
          {"col_axis", t.col_axis},       {"rows", t.row_names},    {"cols", t.col_names},
          {"examples", t.examples},       {"dtype", detail::dtype_name<T>()}, {"values", std::move(values)}};
}

/// Reads a table written by to_json; `source` names the file in error messages.
template <class T>
Table<T> table_from_json(const nlohmann::json& j, const std::string& source) {
  require(j.is_object(), source, ": expected a JSON object");
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) fail(source, ": key '", key, "' missing");
    return j.at(key);
  };
  require(field("format") == "darkbert-table/1", source, ": format is ", field("format").dump(),
          ", expected \"darkbert-table/1\"");
  auto strings = [&](const char* key) {
    const nlohmann::json& a = field(key);
    require(a.is_array(), source, ": '", key, "' must be an array of strings");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      require(a[i].is_string(), source, ": ", key, "[", i, "] is ", a[i].dump(), ", expected a string");
      out.push_back(a[i].get<std::string>());
    }
    return out;
  };
  auto text = [&](const char* key) {
    const nlohmann::json& v = field(key);
    require(v.is_string(), source, ": '", key, "' is ", v.dump(), ", expected a string");
    return v.get<std::string>();
  };
  Table<T> t = make_table<T>(text("name"), text("row_axis"), strings("rows"), text("col_axis"), strings("cols"));
  const nlohmann::json& examples = field("examples");
  require(examples.is_number_unsigned(), source, ": 'examples' must be a non-negative integer");
  t.examples = examples.get<std::size_t>();
  const nlohmann::json& values = field("values");
  require(values.is_array() && values.size() == t.row_names.size(), source, ": 'values' must have ",
          t.row_names.size(), " rows, has ", values.is_array() ? values.size() : 0);
  for (std::size_t r = 0; r < values.size(); ++r) {
    require(values[r].is_array() && values[r].size() == t.col_names.size(), source, ": values row ", r, " has ",
            values[r].is_array() ? values[r].size() : 0, " entries, expected ", t.col_names.size());
    for (std::size_t c = 0; c < values[r].size(); ++c)
      t.values(r, c) = detail::json_value<T>(
          values[r][c], source + ": values[" + std::to_string(r) + "][" + std::to_string(c) + "]");
  }
  return t;
}

/// Writes the table as CSV with a header row of column labels and a first column of row labels.
template <class T>
void write_csv(const Table<T>& t, const std::filesystem::path& path) {
  write_file_atomically(path, to_csv(t));
}

/// Writes the table as JSON: name, row and column labels, values.
template <class T>
void write_json(const Table<T>& t, const std::filesystem::path& path) {
  write_file_atomically(path, to_json(t).dump(1) + "\n");
}

/// Writes the values as a 2-D .npy array.
template <class T>
void write_npy(const Table<T>& t, const std::filesystem::path& path) {
  t.check();
  write_file_atomically(path, xt::dump_npy(t.values));
}

/// Reads a JSON table file written by write_json.
template <class T>
Table<T> read_json_table(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open for reading: ", std::strerror(errno));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    fail(path.string(), ": not valid JSON: ", e.what());
  }
  return table_from_json<T>(j, path.string());
}

/// Writes `<dir>/<name>.csv`, `<dir>/<name>.json` and `<dir>/<name>.npy` (creating dir).
/// @code
/// write_table(head_matrix, "out/sst2");
/// @endcode
template <class T>
void write_table(const Table<T>& t, const std::filesystem::path& dir) {
  require(!t.name.empty() && t.name.find_first_of("/\\") == std::string::npos && t.name != "." && t.name != "..",
          "write_table: table name '", t.name, "' cannot be used as a file name");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  write_csv(t, dir / (t.name + ".csv"));
  write_json(t, dir / (t.name + ".json"));
  write_npy(t, dir / (t.name + ".npy"));
}

}  // namespace darkbert
