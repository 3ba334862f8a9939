// Tests for study/work_units.hpp: units run in order into their own folders, a killed run resumes at the
// first unfinished unit, and results from other settings are refused by name.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <stdexcept>   // std::runtime_error
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/work_units.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::study::WorkUnit;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = darkbert::test::scratch_root() / "study_work_units" / name;
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("run_units: every unit once, in order; a killed run resumes where it stopped") {
  const auto dir = fresh_dir("resume");
  std::vector<std::string> calls;
  bool kill_second = true;
  std::vector<WorkUnit> units = {
      {.id = "finetune/MRPC/seed1", .cost = 3, .run = [&](const fs::path& d) {
         calls.push_back("a");
         std::ofstream(d / "model.txt") << "weights";
       }},
      {.id = "sweep/MRPC/seed1", .cost = 1, .run = [&](const fs::path& d) {
         calls.push_back("b");
         std::ofstream(d / "partial.txt") << "half";
         if (kill_second) throw std::runtime_error("killed");
       }},
      {.id = "report", .cost = 1, .run = [&](const fs::path&) { calls.push_back("c"); }}};
  const nlohmann::json fingerprint = {{"model", "m"}, {"seeds", 3}};
  CHECK_THROWS_WITH(darkbert::study::run_units(units, dir, fingerprint, {.show_progress = false}), "killed");
  CHECK(calls == std::vector<std::string>{"a", "b"});
  CHECK(darkbert::study::unit_done(dir / "finetune/MRPC/seed1"));
  CHECK_FALSE(darkbert::study::unit_done(dir / "sweep/MRPC/seed1"));

  kill_second = false;
  calls.clear();
  std::ofstream(dir / "sweep/MRPC/seed1/stale.txt") << "left by the killed attempt";
  const auto summary = darkbert::study::run_units(units, dir, fingerprint, {.show_progress = false});
  CHECK(calls == std::vector<std::string>{"b", "c"});
  CHECK(summary.ran == 2);
  CHECK(summary.resumed == 1);
  CHECK_FALSE(fs::exists(dir / "sweep/MRPC/seed1/stale.txt"));
  CHECK(fs::exists(dir / "sweep/MRPC/seed1/partial.txt"));
  CHECK(darkbert::study::unit_seconds(dir / "report") >= 0.0);

  calls.clear();
  darkbert::study::run_units(units, dir, fingerprint, {.show_progress = false});
  CHECK(calls.empty());
}

TEST_CASE("run_units: other settings, duplicate or nested ids and bad costs are refused by name") {
  const auto dir = fresh_dir("refuse");
  std::vector<WorkUnit> one = {{.id = "a", .cost = 1, .run = [](const fs::path&) {}}};
  darkbert::study::run_units(one, dir, {{"model", "m"}, {"seeds", 3}}, {.show_progress = false});
  CHECK_THROWS_WITH_AS(darkbert::study::run_units(one, dir, {{"model", "m"}, {"seeds", 5}}, {.show_progress = false}),
                       doctest::Contains("other settings (seeds)"), darkbert::error);
  CHECK_THROWS_WITH_AS(darkbert::study::run_units(one, dir, {{"model", "other"}, {"seeds", 3}, {"tasks", "MRPC"}},
                                                  {.show_progress = false}),
                       doctest::Contains("other settings (model, tasks)"), darkbert::error);
  const auto noop = [](const fs::path&) {};
  const nlohmann::json fp = {{"model", "m"}, {"seeds", 3}};
  CHECK_THROWS_WITH_AS(darkbert::study::run_units({{.id = "a", .run = noop}, {.id = "a", .run = noop}}, dir, fp),
                       doctest::Contains("'a' is listed twice"), darkbert::error);
  CHECK_THROWS_WITH_AS(darkbert::study::run_units({{.id = "a", .run = noop}, {.id = "a/b", .run = noop}}, dir, fp),
                       doctest::Contains("lies inside the folder of unit 'a'"), darkbert::error);
  CHECK_THROWS_WITH_AS(darkbert::study::run_units({{.id = "../x", .run = noop}}, dir, fp),
                       doctest::Contains("without '..'"), darkbert::error);
  CHECK_THROWS_WITH_AS(darkbert::study::run_units({{.id = "x", .cost = 0, .run = noop}}, dir, fp),
                       doctest::Contains("cost of 0"), darkbert::error);
}
