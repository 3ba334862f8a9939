#pragma once
/// @file
/// What the fine-tuning sections (§3.3, §3.6, Table 1) share: one result per task and fine-tuning seed,
/// saved in its own folder so that seeds computed on different machines can be copied side by side and
/// merged, and the statistics stated across seeds (mean and sample standard deviation, per number and per
/// head).
///
/// Folder layout of a section's output:
/// @code
/// <out>/<TASK>/seed-<k>/   one seed's result (X::save / X::load)
/// <out>/<TASK>/            the aggregate over the seed folders found there
/// @endcode
///
/// @code
/// auto dirs = darkbert::study::seed_dirs(out / "MRPC");             // seed-1, seed-2, ... by seed number
/// darkbert::study::MeanSd s = darkbert::study::mean_sd({0.81, 0.84, 0.80});
/// // s.mean = 0.8167, s.sd = 0.0208 (n - 1 in the denominator), s.n = 3
/// @endcode

#include <algorithm>   // std::sort
#include <cmath>       // std::sqrt, std::isnan
#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path, directory_iterator
#include <limits>      // std::numeric_limits
#include <string>      // std::string, std::to_string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>  // nlohmann::json

#include "darkbert/analysis/results.hpp"  // darkbert::Table, write_table, read_json_table
#include "darkbert/core/error.hpp"        // darkbert::require, darkbert::fail
#include "darkbert/data/glue.hpp"         // darkbert::GlueTask, glue_task_info
#include "darkbert/io/json.hpp"           // darkbert::read_json_file
#include "darkbert/viz/heatmap.hpp"       // darkbert::write_heatmap

namespace darkbert::study {

/// Mean and sample standard deviation (n − 1 in the denominator) of one number over seeds.
struct MeanSd {
  double mean = std::numeric_limits<double>::quiet_NaN();  ///< NaN when there is no value
  double sd = std::numeric_limits<double>::quiet_NaN();    ///< NaN with fewer than two values
  std::size_t n = 0;                                       ///< how many values

  /// {"mean", "sd", "n"}; NaN written as "nan" (results.hpp's convention).
  nlohmann::json to_json() const;
};

/// Mean and sample standard deviation of `values`.
/// @code
/// auto s = darkbert::study::mean_sd({1.0, 2.0, 4.0});   // mean 7/3, sd 1.5275
/// @endcode
inline MeanSd mean_sd(const std::vector<double>& values) {
  MeanSd s;
  s.n = values.size();
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return s;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(squares / static_cast<double>(values.size() - 1));
  return s;
}

inline nlohmann::json MeanSd::to_json() const {
  return {{"mean", darkbert::detail::json_number(mean)}, {"sd", darkbert::detail::json_number(sd)}, {"n", n}};
}

/// Cell-by-cell mean and sd of equally shaped tables (e.g. one per-head matrix per seed).
struct TableMeanSd {
  Table<double> mean;  ///< named `<name>_mean`
  Table<double> sd;    ///< named `<name>_sd`; NaN with fewer than two tables
};

/// Mean and sd of `tables` cell by cell; the results take the first table's axes and are named
/// `<name>_mean` / `<name>_sd`. Throws when the list is empty or the shapes differ.
inline TableMeanSd table_mean_sd(const std::vector<Table<double>>& tables, const std::string& name) {
  require(!tables.empty(), name, ": no per-seed results to aggregate");
  const auto& first = tables.front();
  TableMeanSd out;
  out.mean = make_table<double>(name + "_mean", first.row_axis, first.row_names, first.col_axis, first.col_names);
  out.sd = make_table<double>(name + "_sd", first.row_axis, first.row_names, first.col_axis, first.col_names);
  for (std::size_t k = 0; k < tables.size(); ++k)
    require(tables[k].rows() == first.rows() && tables[k].cols() == first.cols(), name, ": result ", k, " is ",
            tables[k].rows(), " x ", tables[k].cols(), " but result 0 is ", first.rows(), " x ", first.cols());
  std::vector<double> cell(tables.size());
  for (Index r = 0; r < first.rows(); ++r)
    for (Index c = 0; c < first.cols(); ++c) {
      for (std::size_t k = 0; k < tables.size(); ++k) cell[k] = tables[k](r, c);
      const MeanSd s = mean_sd(cell);
      out.mean(r, c) = s.mean;
      out.sd(r, c) = s.sd;
    }
  out.mean.examples = out.sd.examples = tables.size();
  return out;
}

/// `<out>/<TASK>` (the task's GLUE name, e.g. "STS-B").
inline std::filesystem::path task_dir(const std::filesystem::path& out, GlueTask task) {
  return out / std::string(glue_task_info(task).name);
}

/// `<task_dir>/seed-<seed>`.
inline std::filesystem::path seed_dir(const std::filesystem::path& task_dir, std::uint64_t seed) {
  return task_dir / ("seed-" + std::to_string(seed));
}

/// The `seed-<k>` folders directly inside `task_dir`, ordered by k (none when the folder is absent).
inline std::vector<std::filesystem::path> seed_dirs(const std::filesystem::path& task_dir) {
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> found;
  std::error_code ec;
  if (!std::filesystem::is_directory(task_dir, ec)) return {};
  for (const auto& entry : std::filesystem::directory_iterator(task_dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("seed-", 0) != 0 || name.size() == 5 || name.size() > 25) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    found.emplace_back(std::stoull(name.substr(5)), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> out;
  for (auto& [seed, path] : found) out.push_back(std::move(path));
  return out;
}

namespace detail {

// A field of a result file, with errors that name the file and the key.
inline const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& source) {
  require(j.is_object(), source, ": expected a JSON object");
  if (!j.contains(key)) fail(source, ": key '", key, "' missing");
  return j.at(key);
}
inline std::string string_field(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = field(j, key, source);
  require(v.is_string(), source, ": '", key, "' is ", v.dump(), ", expected a string");
  return v.get<std::string>();
}
inline double number_field(const nlohmann::json& j, const char* key, const std::string& source) {
  return darkbert::detail::json_value<double>(field(j, key, source), source + ": '" + key + "'");
}
inline std::uint64_t unsigned_field(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = field(j, key, source);
  require(v.is_number_unsigned(), source, ": '", key, "' is ", v.dump(), ", expected a non-negative integer");
  return v.get<std::uint64_t>();
}
inline bool bool_field(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = field(j, key, source);
  require(v.is_boolean(), source, ": '", key, "' is ", v.dump(), ", expected true or false");
  return v.get<bool>();
}
inline std::vector<double> numbers_field(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = field(j, key, source);
  require(v.is_array(), source, ": '", key, "' is ", v.dump(), ", expected an array of numbers");
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(darkbert::detail::json_value<double>(v[i], source + ": '" + key + "'[" + std::to_string(i) + "]"));
  return out;
}
inline nlohmann::json numbers_json(const std::vector<double>& values) {
  nlohmann::json a = nlohmann::json::array();
  for (double v : values) a.push_back(darkbert::detail::json_number(v));
  return a;
}

// A table saved by write_table, read back from its JSON file, refusing a different shape.
inline Table<double> read_table_file(const std::filesystem::path& dir, const std::string& name, Index rows, Index cols) {
  const auto path = dir / (name + ".json");
  Table<double> t = read_json_table<double>(path);
  require(t.rows() == rows && t.cols() == cols, path.string(), ": table is ", t.rows(), " x ", t.cols(), ", expected ",
          rows, " x ", cols);
  return t;
}

// Writes `values` as <stem>.png and <stem>.svg.
template <class Derived>
void write_png_and_svg(const std::filesystem::path& stem, const Eigen::DenseBase<Derived>& values,
                       const HeatmapOptions& options) {
  std::filesystem::create_directories(stem.parent_path());
  write_heatmap(std::filesystem::path(stem.string() + ".png"), values, options);
  write_heatmap(std::filesystem::path(stem.string() + ".svg"), values, options);
}

// A table's values as an Eigen matrix for the figure writers.
inline Matrix<double> matrix_of(const Table<double>& t) {
  Matrix<double> m(t.rows(), t.cols());
  for (Index r = 0; r < t.rows(); ++r)
    for (Index c = 0; c < t.cols(); ++c) m(r, c) = t(r, c);
  return m;
}

// Column names "seed <k>" for per-seed columns.
inline std::vector<std::string> seed_columns(const std::vector<std::uint64_t>& seeds) {
  std::vector<std::string> names;
  for (auto s : seeds) names.push_back("seed " + std::to_string(s));
  return names;
}

}  // namespace detail

/// The seed a fine-tuned folder was trained with: the "seed" of its metrics.json (`darkbert finetune` and
/// the Table 1 run write one), or `fallback` when the folder has none. A metrics.json without a
/// non-negative integer "seed" is an error naming the file.
/// @code
/// auto seed = darkbert::study::fine_tuning_seed("table/checkpoints/MRPC/seed-2", 1);   // 2
/// @endcode
inline std::uint64_t fine_tuning_seed(const std::filesystem::path& dir, std::uint64_t fallback) {
  const auto path = dir / "metrics.json";
  if (!std::filesystem::exists(path)) return fallback;
  return detail::unsigned_field(read_json_file(path), "seed", path.string());
}

}  // namespace darkbert::study
