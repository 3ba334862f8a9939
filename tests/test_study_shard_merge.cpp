// Tests for study/shard_merge.hpp: shards of a small unit list, run into their own folders and merged in any
// order, give the single run's files (unit.json apart from its seconds; runs.csv in the single run's row
// order); missing, duplicated and foreign shards, and a side file two shards disagree on, are named.
#include <doctest/doctest.h>

#include <algorithm>   // std::next_permutation
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <map>         // std::map
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "darkbert/study/shard_merge.hpp"
#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/work_units.hpp"
#include "test_support.hpp"

using darkbert::test::read_bytes;

namespace fs = std::filesystem;
using darkbert::study::WorkUnit;
using darkbert::test::message_of;

namespace {

// A study in miniature, written into the folder `root` as plan_study's units are: table1 units append to
// table1/runs.csv and the pretrained ones keep a checkpoint that later units of their group read.
std::vector<WorkUnit> mini_study(const fs::path& root) {
  std::vector<WorkUnit> units;
  const auto table = root / "table1";
  auto table1 = [&](const std::string& setting, int seed, double value) {
    return [=](const fs::path& dir) {
      darkbert::study::detail::claim_table_folder(table, {{"model", "m"}, {"epochs", 1}});
      if (setting == "pretrained") {
        fs::create_directories(table / "checkpoints/MRPC" / ("seed-" + std::to_string(seed)));
        std::ofstream(table / "checkpoints/MRPC" / ("seed-" + std::to_string(seed)) / "model.txt") << "weights " << seed;
      }
      std::vector<darkbert::study::FineTuneRow> rows = {{"MRPC", setting, std::uint64_t(seed), "accuracy", value, 0.68, 2.5},
                                                        {"MRPC", setting, std::uint64_t(seed), "f1", value / 2, 0.68, 2.5}};
      darkbert::append_file_atomically(table / "runs.csv", darkbert::study::detail::runs_csv_lines(rows), "runs");
      std::ofstream(dir / "note.txt") << setting << seed;
    };
  };
  auto reader = [&](int seed) {
    return [=](const fs::path& dir) {
      const auto ck = table / "checkpoints/MRPC" / ("seed-" + std::to_string(seed)) / "model.txt";
      REQUIRE(fs::exists(ck));  // a shard never reads another shard's files
      std::ofstream(dir / "change.txt") << read_bytes(ck) << " compared";
    };
  };
  for (int seed = 1; seed <= 2; ++seed) {
    const std::string g = "checkpoint/MRPC/seed-" + std::to_string(seed), s = "/seed-" + std::to_string(seed);
    units.push_back({.id = "table1/MRPC/pretrained" + s, .cost = 10, .run = table1("pretrained", seed, 0.8 + seed / 100.0), .group = g});
    units.push_back({.id = "table1/MRPC/random" + s, .cost = 9, .run = table1("random", seed, 0.6 + seed / 100.0)});
    units.push_back({.id = "table1/MRPC/untrained" + s, .cost = 1, .run = table1("untrained", seed, 0.5)});
  }
  units.push_back({.id = "framenet", .cost = 3, .run = [](const fs::path& dir) { std::ofstream(dir / "f.txt") << "frames"; }});
  for (int seed = 1; seed <= 2; ++seed)
    units.push_back({.id = "change/MRPC/seed-" + std::to_string(seed), .cost = 2, .run = reader(seed),
                     .group = "checkpoint/MRPC/seed-" + std::to_string(seed)});
  return units;
}

const nlohmann::json study_fingerprint = {{"study", 1}, {"model", "m"}, {"seeds", 2}};

// Runs shard k of n into `dir` as `darkbert reproduce --shard k/n` does.
void run_shard(const fs::path& dir, int k, int n, const nlohmann::json& fp = study_fingerprint) {
  const auto units = mini_study(dir);
  const auto shards = darkbert::study::plan_shards(units, n);
  std::vector<WorkUnit> mine;
  darkbert::study::ShardManifest m{.fingerprint = fp, .index = k, .count = n};
  for (std::size_t i : shards.units_of(k)) mine.push_back(units[i]), m.units.push_back(units[i].id);
  const auto s = darkbert::study::run_units(mine, dir / "units", fp, {.show_progress = false});
  m.ran = s.ran;
  darkbert::study::write_shard_manifest(dir, m);
}

// Every file below `dir`, by relative path; unit.json without its wall time.
std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto text = read_bytes(e.path());
    if (e.path().filename() == "unit.json") {
      auto j = nlohmann::json::parse(text);
      j.erase("seconds");
      text = j.dump();
    }
    files[e.path().lexically_relative(dir).generic_string()] = text;
  }
  return files;
}

}  // namespace

TEST_CASE("merge_study_shards: 1, 2 and 3 shards in any order give the single run's files") {
  const auto base = darkbert::test::scratch_dir("study_shard_merge/equal");
  const auto single_units = mini_study(base / "single");
  darkbert::study::run_units(single_units, base / "single/units", study_fingerprint, {.show_progress = false});
  const auto expected = files_of(base / "single");
  REQUIRE(expected.count("table1/runs.csv"));
  REQUIRE(expected.count("table1/checkpoints/MRPC/seed-2/model.txt"));
  for (int n = 1; n <= 3; ++n) {
    std::vector<fs::path> dirs;
    for (int k = 1; k <= n; ++k) {
      dirs.push_back(base / std::string("n").append(std::to_string(n)) / std::string("shard-").append(std::to_string(k)));
      run_shard(dirs.back(), k, n);
    }
    int order = 0;
    do {
      CAPTURE(n);
      CAPTURE(order);
      const auto out = base / ("merged-" + std::to_string(n) + "-" + std::to_string(order++));
      const auto merged = darkbert::study::merge_study_shards(dirs, mini_study(out), study_fingerprint, out);
      CHECK(merged.units == single_units.size());
      CHECK(merged.ran == single_units.size());
      const auto got = files_of(out);
      for (const auto& [file_name, text] : expected) {
        const std::string& name = file_name;
        CAPTURE(name);
        REQUIRE(got.count(name));
        CHECK(got.at(name) == text);
      }
      CHECK(got.size() == expected.size());
    } while (std::next_permutation(dirs.begin(), dirs.end()));
  }
}

TEST_CASE("merge_study_shards: missing, duplicated and foreign shards, and disagreeing files, are named") {
  const auto base = darkbert::test::scratch_dir("study_shard_merge/errors");
  const auto units = mini_study(base / "out");
  for (int k = 1; k <= 3; ++k) run_shard(base / ("s" + std::to_string(k)), k, 3);
  const fs::path s1 = base / "s1", s2 = base / "s2", s3 = base / "s3", out = base / "out";
  const auto shards = darkbert::study::plan_shards(units, 3);
  std::string third;
  for (std::size_t i : shards.units_of(3)) third += (third.empty() ? "" : ", ") + units[i].id;
  REQUIRE_FALSE(third.empty());

  // Missing: named with the shard that should have had them.
  CHECK(message_of([&] { darkbert::study::merge_study_shards({s1, s2}, units, study_fingerprint, out); }) ==
        "merge: units missing from the shards given:\n  shard 3/3 should have had: " + third +
            "\ngive the folder of every shard, each finished (its shard.json written)");
  // Duplicated: both folders named.
  const auto twice = message_of([&] { darkbert::study::merge_study_shards({s1, s2, s3, s2}, units, study_fingerprint, out); });
  CHECK(twice.find("' is in two shards: " + s2.string() + " and " + s2.string()) != std::string::npos);
  run_shard(base / "two-of-2", 2, 2);
  const auto overlap = message_of([&] { darkbert::study::merge_study_shards({s1, s2, s3, base / "two-of-2"}, units, study_fingerprint, out); });
  CHECK(overlap.find("is in two shards: ") != std::string::npos);
  CHECK(overlap.find(" and " + (base / "two-of-2").string()) != std::string::npos);
  // Foreign: another configuration, named by folder and differing keys.
  const nlohmann::json other = {{"study", 1}, {"model", "m2"}, {"seeds", 3}};
  run_shard(base / "foreign", 3, 3, other);
  CHECK(message_of([&] { darkbert::study::merge_study_shards({s1, s2, base / "foreign"}, units, study_fingerprint, out); }) ==
        (base / "foreign").string() + ": shard 3/3 belongs to another study (model, seeds differ from this one's); merge "
                                      "shards run with the same --model, --seeds, --tasks, --lr and --quick");
  // Into one of the shards' own folders.
  CHECK(message_of([&] { darkbert::study::merge_study_shards({s1, s2, s3}, units, study_fingerprint, s2); }) ==
        "merge: " + s2.string() + " is one of the shard folders; merge into another folder");
  // Not a shard folder; a unit listed but not finished; a shared file that differs.
  fs::create_directories(base / "empty");
  CHECK(message_of([&] { darkbert::study::merge_study_shards({s1, base / "empty"}, units, study_fingerprint, out); }).find(
            (base / "empty").string() + ": no shard.json") == 0);
  const auto listed = shards.units_of(3).front();
  fs::remove(s3 / "units" / units[listed].id / "unit.json");
  CHECK(message_of([&] { darkbert::study::merge_study_shards({s1, s2, s3}, units, study_fingerprint, out); }) ==
        s3.string() + ": shard.json lists unit '" + units[listed].id + "' but " +
            (s3 / "units" / units[listed].id / "unit.json").string() + " is missing");
  run_shard(s3, 3, 3);
  std::ofstream(s2 / "units/study.json") << "{\"study\": 1}";
  const auto differ = message_of([&] { darkbert::study::merge_study_shards({s1, s2, s3}, units, study_fingerprint, out); });
  CHECK(differ.find("merge: units/study.json differs between ") == 0);
  CHECK_FALSE(fs::exists(out));  // nothing copied by a refused merge
}
