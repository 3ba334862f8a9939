#pragma once
/// @file
/// The study cut into units of work. A unit is one (section, task, setting, seed) computation whose result
/// is a folder of plain files; it is done when its folder holds `unit.json` (written last, atomically), so
/// a killed run resumes at the first unfinished unit and a finished unit is never recomputed. Units run in
/// list order, which puts every unit after the units it reads (a fine-tuned checkpoint before the sections
/// that analyse it). The same folders can be produced on many machines and merged (study/shard_plan.hpp,
/// study/shard_merge.hpp), since nothing but the files connects one unit to the next.
///
/// @code
/// std::vector<darkbert::study::WorkUnit> units;
/// units.push_back({.id = "finetune/MRPC/pretrained/seed1", .cost = 40, .run = [&](const fs::path& dir) { ... }});
/// darkbert::study::run_units(units, out / "units", fingerprint, {.label = "study"});
/// @endcode
///
/// The fingerprint (a JSON object: model identity, data, seeds, options) is written to `study.json` in the
/// units folder; a resumed run with another fingerprint is refused by name instead of mixing results.

#include <chrono>      // std::chrono::steady_clock
#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::snprintf
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <set>         // std::set
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/core/progress.hpp"

namespace darkbert::study {

/// One unit of work: an id that is also its folder (`section/task/setting/seedN`), an estimated cost
/// (seconds on two cores; they weight the progress bar's ETA and balance shards, study/shard_plan.hpp), the
/// group it must run with, and the function that writes its result into the folder it is given.
/// Units that read another unit's side output (a fine-tuned checkpoint) share that unit's group, so a shard
/// that runs one of them runs all of them, in list order, and never needs another shard's files.
struct WorkUnit {
  std::string id;                                            ///< unique; '/'-separated path below the units folder
  double cost = 1;                                           ///< estimated cost (> 0): seconds on two cores
  std::function<void(const std::filesystem::path&)> run;  ///< writes the unit's files into the folder
  std::string group = {};                                    ///< units of one group run in one shard; empty: alone
};

/// How run_units reports.
struct RunUnitsOptions {
  std::string label = "study";  ///< progress bar label
  bool show_progress = true;    ///< progress bar on stderr
};

/// What run_units did.
struct RunUnitsSummary {
  std::size_t ran = 0;      ///< units computed now
  std::size_t resumed = 0;  ///< units found done and skipped
  double seconds = 0;       ///< wall time of the units computed now
};

namespace detail {

inline const char* unit_done_file() { return "unit.json"; }

inline nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  require(static_cast<bool>(in), file.string(), ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(file.string(), ": not valid JSON: ", e.what());
  }
}

}  // namespace detail

/// True when the unit folder `dir` holds a finished result.
inline bool unit_done(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / detail::unit_done_file(), ec);
}

/// FNV-1a over a file's bytes, as 16 hex digits: a model's identity in a fingerprint (another checkpoint at
/// the same path must not resume or merge with another's results).
inline std::string file_digest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  require(static_cast<bool>(in), file.string(), ": cannot open");
  std::uint64_t h = 1469598103934665603ull;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buffer[static_cast<std::size_t>(i)]);
      h *= 1099511628211ull;
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

/// The top-level keys in which two fingerprints differ, comma-separated ("seeds, tasks"); empty when equal.
inline std::string fingerprint_differences(const nlohmann::json& expected, const nlohmann::json& found) {
  std::string differing;
  for (const auto& [key, value] : expected.items())
    if (!found.contains(key) || found[key] != value) differing += (differing.empty() ? "" : ", ") + key;
  for (const auto& [key, value] : found.items())
    if (!expected.contains(key)) differing += (differing.empty() ? "" : ", ") + key;
  return differing;
}

/// Refuses a units folder written with another fingerprint, else records this one (first run).
inline void check_fingerprint(const std::filesystem::path& units_dir, const nlohmann::json& fingerprint) {
  namespace fs = std::filesystem;
  const fs::path file = units_dir / "study.json";
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) {
    const auto stored = detail::read_json_file(file);
    if (stored != fingerprint)
      fail(units_dir.string(), ": these results were computed with other settings (",
           fingerprint_differences(fingerprint, stored), "); give another --out, or delete the folder to start over");
    return;
  }
  fs::create_directories(units_dir);
  write_file_atomically(file, fingerprint.dump(2) + "\n");
}

/// Runs every unit that is not done yet, in order, each into `units_dir / unit.id` (emptied first: a killed
/// attempt's files are not trusted), marking it done with unit.json (id, seconds) once its function
/// returns. Unit ids must be unique, and no id may be a folder of another (a unit's folder is its own).
inline RunUnitsSummary run_units(const std::vector<WorkUnit>& units, const std::filesystem::path& units_dir,
                                 const nlohmann::json& fingerprint, const RunUnitsOptions& options = {}) {
  namespace fs = std::filesystem;
  std::set<std::string> ids;
  double total_cost = 0, done_cost = 0;
  for (const auto& u : units) {
    for (const auto& other : units)
      require(other.id.size() <= u.id.size() || other.id.compare(0, u.id.size() + 1, u.id + "/") != 0,
              "study unit '", other.id, "' lies inside the folder of unit '", u.id, "'");
    require(!u.id.empty() && u.id.front() != '/' && u.id.find("..") == std::string::npos,
            "study unit id '", u.id, "' must be a relative path without '..'");
    require(ids.insert(u.id).second, "study unit '", u.id, "' is listed twice");
    require(u.cost > 0, "study unit '", u.id, "' has a cost of ", u.cost, " (must be positive)");
    require(static_cast<bool>(u.run), "study unit '", u.id, "' has nothing to run");
    total_cost += u.cost;
  }
  check_fingerprint(units_dir, fingerprint);
  RunUnitsSummary summary;
  // The bar counts cost in thousandths, so its rate and ETA weigh a fine-tuning run above a figure.
  const double scale = 1000.0 / (total_cost > 0 ? total_cost : 1.0);
  Progress progress(options.label, 1000, options.show_progress);
  const auto start = std::chrono::steady_clock::now();
  for (const auto& u : units) {
    const fs::path dir = units_dir / u.id;
    const long before = static_cast<long>(done_cost * scale);
    done_cost += u.cost;
    if (unit_done(dir)) {
      ++summary.resumed;
      progress.advance(static_cast<long>(done_cost * scale) - before);
      continue;
    }
    progress.set_note(u.id);
    fs::remove_all(dir);  // what a killed attempt left; the unit starts over
    fs::create_directories(dir);
    const auto t0 = std::chrono::steady_clock::now();
    u.run(dir);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_file_atomically(dir / detail::unit_done_file(),
                          nlohmann::json{{"id", u.id}, {"seconds", seconds}, {"cost", u.cost}}.dump(2) + "\n");
    ++summary.ran;
    progress.advance(static_cast<long>(done_cost * scale) - before);
  }
  progress.finish();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

/// The seconds a finished unit took (from its unit.json).
inline double unit_seconds(const std::filesystem::path& dir) {
  return detail::read_json_file(dir / detail::unit_done_file()).at("seconds").get<double>();
}

}  // namespace darkbert::study
