#pragma once
/// @file
/// Shard folders of one study merged into the folder a single process would have written. A shard
/// (`darkbert reproduce --shard K/N --out DIR`) runs its units (study/shard_plan.hpp) into DIR exactly as a
/// whole run would, and records what it ran in DIR/shard.json (the study's fingerprint, K, N, unit ids).
/// The merge checks the shards against the plan before it copies anything:
/// - every shard's fingerprint equals the plan's (else: the folder and the differing keys),
/// - every planned unit is done in exactly one shard (a missing unit is named with the shard that should
///   have had it; a unit in two shards is named with both folders; a unit the plan lacks is named too),
/// - a file that two shards both hold (the units folder's study.json, Table 1's recipe.json) is the same.
/// Then it copies every unit folder and side file (fine-tuned checkpoints), and merges Table 1's runs.csv,
/// which every table1 unit appends to, with FineTuneTable::merge into the plan's unit order.
///
/// @code
/// darkbert::study::write_shard_manifest(shard_dir, {.fingerprint = fp, .index = 2, .count = 3, .units = ids});
/// auto merged = darkbert::study::merge_study_shards({"s1", "s2", "s3"}, plan.units, fp, "study");
/// @endcode

#include <algorithm>   // std::stable_sort, std::equal
#include <cstddef>     // std::size_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <iterator>    // std::istreambuf_iterator
#include <map>         // std::map
#include <set>         // std::set
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/work_units.hpp"

namespace darkbert::study {

/// What a shard folder holds: `shard.json`.
struct ShardManifest {
  nlohmann::json fingerprint;      ///< the study's (work_units.hpp)
  int index = 1;                   ///< K, counted from 1
  int count = 1;                   ///< N
  std::vector<std::string> units;  ///< ids of the units it holds, in the order they ran
  std::size_t ran = 0;             ///< units it computed
  std::size_t resumed = 0;         ///< units it found done (a resumed shard)
};

/// Writes `dir/shard.json` (atomically, after the units: a folder with it is a finished shard).
inline void write_shard_manifest(const std::filesystem::path& dir, const ShardManifest& m) {
  std::filesystem::create_directories(dir);
  const nlohmann::json j = {{"shard", m.index}, {"shards", m.count}, {"fingerprint", m.fingerprint},
                            {"units", m.units},  {"ran", m.ran},      {"resumed", m.resumed}};
  write_file_atomically(dir / "shard.json", j.dump(2) + "\n");
}

/// Reads `dir/shard.json`; a folder without one is not a finished shard (error naming it).
inline ShardManifest read_shard_manifest(const std::filesystem::path& dir) {
  const auto file = dir / "shard.json";
  require(std::filesystem::is_regular_file(file), dir.string(),
          ": no shard.json, so not a finished shard (darkbert reproduce --shard K/N --out ", dir.string(),
          " writes it after its last unit)");
  const auto j = detail::read_json_file(file);
  try {
    return {.fingerprint = j.at("fingerprint"), .index = j.at("shard").get<int>(), .count = j.at("shards").get<int>(),
            .units = j.at("units").get<std::vector<std::string>>(), .ran = j.at("ran").get<std::size_t>(),
            .resumed = j.at("resumed").get<std::size_t>()};
  } catch (const nlohmann::json::exception& e) {
    fail(file.string(), ": not a shard manifest: ", e.what());
  }
}

/// What merge_study_shards did.
struct MergeSummary {
  std::size_t shards = 0;   ///< folders merged
  std::size_t units = 0;    ///< units merged (every planned one)
  std::size_t ran = 0;      ///< units the shards computed
  std::size_t resumed = 0;  ///< units the shards found done
};

namespace detail {

inline bool same_bytes(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  require(fa && fb, "merge: cannot read ", a.string(), " or ", b.string());
  return std::equal(std::istreambuf_iterator<char>(fa), {}, std::istreambuf_iterator<char>(fb), {});
}

// The table1 unit id a runs.csv row belongs to (study/study_plan.hpp names them so).
inline std::string table1_unit_of(const FineTuneRow& r) {
  return "table1/" + r.task + "/" + r.setting + "/seed-" + std::to_string(r.seed);
}

}  // namespace detail

/// Puts Table 1's rows in the order of their units in `units` (the order a single run of one worker
/// appends them in): rows of shards, or of workers that finished in another order, read the same. Every
/// row must belong to a unit of `units`.
inline void sort_table1_runs(std::vector<FineTuneRow>& rows, const std::vector<WorkUnit>& units) {
  std::map<std::string, std::size_t> planned;
  for (std::size_t i = 0; i < units.size(); ++i) planned.emplace(units[i].id, i);
  for (const auto& r : rows)
    require(planned.count(detail::table1_unit_of(r)), "table1/runs.csv has a run (", detail::table1_unit_of(r),
            ") that is not a unit of this study");
  std::stable_sort(rows.begin(), rows.end(), [&](const FineTuneRow& a, const FineTuneRow& b) {
    return planned.at(detail::table1_unit_of(a)) < planned.at(detail::table1_unit_of(b));
  });
}

/// Checks the shard folders `dirs` against the plan (`units`, `fingerprint`) and merges them into `out`
/// (see the file comment); every problem is an error naming the folder, the unit or the file.
inline MergeSummary merge_study_shards(const std::vector<std::filesystem::path>& dirs, const std::vector<WorkUnit>& units,
                                       const nlohmann::json& fingerprint, const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  require(!dirs.empty(), "merge: no shard folders given");
  std::map<std::string, std::size_t> planned;
  for (std::size_t i = 0; i < units.size(); ++i) planned.emplace(units[i].id, i);

  // Every check before the first copy: a failed merge leaves `out` as it was.
  MergeSummary summary;
  std::vector<ShardManifest> manifests;
  std::map<std::string, fs::path> holder;  // unit id -> the shard folder that has it
  for (const auto& dir : dirs) {
    std::error_code ec;
    require(!fs::equivalent(dir, out, ec), "merge: ", out.string(), " is one of the shard folders; merge into another folder");
    auto m = read_shard_manifest(dir);
    const auto differing = fingerprint_differences(fingerprint, m.fingerprint);
    require(differing.empty(), dir.string(), ": shard ", m.index, "/", m.count, " belongs to another study (", differing,
            " differ from this one's); merge shards run with the same --model, --seeds, --tasks, --lr and --quick");
    for (const auto& id : m.units) {
      require(planned.count(id), dir.string(), ": unit '", id, "' is not a unit of this study");
      const auto [it, added] = holder.emplace(id, dir);
      require(added, "merge: unit '", id, "' is in two shards: ", it->second.string(), " and ", dir.string(),
              " (give each shard's folder once)");
      require(unit_done(dir / "units" / id), dir.string(), ": shard.json lists unit '", id, "' but ",
              (dir / "units" / id / "unit.json").string(), " is missing");
    }
    summary.ran += m.ran, summary.resumed += m.resumed;
    manifests.push_back(std::move(m));
  }
  std::map<int, std::vector<std::string>> missing_by_shard;  // under the first shard's N
  const int n = manifests.front().count;
  const auto assignment = plan_shards(units, n);
  for (std::size_t i = 0; i < units.size(); ++i)
    if (!holder.count(units[i].id)) missing_by_shard[assignment.shard_of[i]].push_back(units[i].id);
  if (!missing_by_shard.empty()) {
    std::string what;
    for (const auto& [k, ids] : missing_by_shard)
      what += "\n  shard " + std::to_string(k) + "/" + std::to_string(n) + " should have had: " + detail::join_names(ids);
    fail("merge: units missing from the shards given:", what, "\ngive the folder of every shard, each finished (its shard.json written)");
  }

  // Files by their path relative to a shard: a unit's folder, or a side file (checkpoints, recipe.json).
  std::map<std::string, fs::path> files;  // relative path -> source
  for (std::size_t s = 0; s < dirs.size(); ++s) {
    const std::set<std::string> mine(manifests[s].units.begin(), manifests[s].units.end());
    for (const auto& entry : fs::recursive_directory_iterator(dirs[s])) {
      if (!entry.is_regular_file()) continue;
      const auto rel = entry.path().lexically_relative(dirs[s]);
      const std::string name = rel.generic_string();
      if (name == "shard.json" || name == "table1/runs.csv") continue;  // the manifest; runs.csv is merged below
      if (*rel.begin() == "units" && name != "units/study.json") {
        // Only the units this shard ran: a folder it left unfinished is not part of the study.
        bool listed = false;
        for (fs::path up = rel.parent_path(); !listed && up.has_relative_path() && up != "units"; up = up.parent_path())
          listed = mine.count(up.lexically_relative("units").generic_string()) > 0;
        if (!listed) continue;
      }
      const auto [it, added] = files.emplace(name, entry.path());
      require(added || detail::same_bytes(it->second, entry.path()), "merge: ", name, " differs between ",
              dirs[s].string(), " and the shard holding ", it->second.string());
    }
  }

  // Table 1's rows in the plan's unit order (a single run appends them in that order).
  FineTuneTable table;
  bool any_table = false;
  for (const auto& dir : dirs) {
    if (!fs::exists(dir / "table1" / "runs.csv")) continue;
    auto shard_table = FineTuneTable::load(dir / "table1");
    try {
      table.merge(shard_table);
    } catch (const error& e) {
      fail(dir.string(), ": ", e.what());
    }
    any_table = true;
  }
  for (const auto& r : table.rows) {
    const auto id = detail::table1_unit_of(r);
    require(planned.count(id) && holder.count(id), "merge: table1/runs.csv of the shards has a run (", id,
            ") that is not a finished unit of this study");
  }
  sort_table1_runs(table.rows, units);

  check_fingerprint(out / "units", fingerprint);  // refuses an `out` of another study
  for (const auto& [name, source] : files) {
    const fs::path target = out / name;
    fs::create_directories(target.parent_path());
    fs::copy_file(source, target, fs::copy_options::overwrite_existing);
  }
  if (any_table)
    write_file_atomically(out / "table1" / "runs.csv", std::string(detail::runs_header) + detail::runs_csv_lines(table.rows));
  summary.shards = dirs.size();
  summary.units = holder.size();
  return summary;
}

}  // namespace darkbert::study
