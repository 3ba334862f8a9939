// Tests for study/work_units.hpp: units run in order into their own folders, a killed run resumes at the
// first unfinished unit, results from other settings are refused by name, and a pool of workers runs every
// unit once, keeping a group in order on one worker.
#include <doctest/doctest.h>

#include <algorithm>   // std::find, std::count
#include <atomic>      // std::atomic
#include <chrono>      // std::chrono::milliseconds
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream, std::ifstream
#include <map>         // std::map
#include <mutex>       // std::mutex, std::lock_guard
#include <stdexcept>   // std::runtime_error
#include <string>      // std::string
#include <thread>      // std::this_thread
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "darkbert/core/threads.hpp"
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

TEST_CASE("run_unit_lists: several workers run every unit once, a group in list order on one worker, each on its share of the threads") {
  const auto base = fresh_dir("workers");
  const nlohmann::json fp = {{"model", "m"}};
  std::mutex mutex;
  std::map<std::string, std::thread::id> thread_of;  // unit -> the worker that ran it
  std::vector<std::string> order;                     // units as they started
  std::map<std::string, int> threads_seen;            // unit -> OpenMP threads it saw
  auto unit = [&](std::string id, double cost, std::string group) {
    return WorkUnit{.id = id, .cost = cost, .run = [&, id](const fs::path& d) {
                      {
                        const std::lock_guard<std::mutex> lock(mutex);
                        thread_of[id] = std::this_thread::get_id();
                        order.push_back(id);
                        threads_seen[id] = darkbert::num_threads();
                      }
                      std::this_thread::sleep_for(std::chrono::milliseconds(20));
                      std::ofstream(d / "result.txt") << id;
                    },
                    .group = group};
  };
  // Two studies in one pool; in each, a group whose units are apart in the list (a fine-tuned checkpoint
  // and the sections that read it) and ungrouped units.
  const std::vector<WorkUnit> bert = {unit("table1/a", 4, "a"), unit("table1/b", 3, ""), unit("section/a", 1, "a"),
                                      unit("section/b", 1, ""), unit("table1/c", 2, "c"), unit("section/c", 1, "c")};
  const std::vector<WorkUnit> gpt2 = {unit("table1/a", 5, "a"), unit("section/a", 1, "a"), unit("figure", 1, "")};
  const int caller_threads = darkbert::num_threads();
  darkbert::set_num_threads(4);
  const auto summaries = darkbert::study::run_unit_lists(
      {{.units = &bert, .units_dir = base / "bert", .fingerprint = fp}, {.units = &gpt2, .units_dir = base / "gpt2", .fingerprint = fp}},
      {.show_progress = false, .workers = 2});
  CHECK(darkbert::num_threads() == 4);  // the caller's thread count is its own again
  darkbert::set_num_threads(caller_threads);
  REQUIRE(summaries.size() == 2);
  CHECK(summaries[0].ran == 6);
  CHECK(summaries[1].ran == 3);
  CHECK(order.size() == 9);  // each unit once (ids repeat across the two studies: 9 starts, 7 distinct ids)
  for (const auto& [dir, units] : {std::pair{base / "bert", &bert}, std::pair{base / "gpt2", &gpt2}})
    for (const auto& u : *units) {
      CHECK(darkbert::study::unit_done(dir / u.id));
      std::ifstream in(dir / u.id / "result.txt");
      std::string text;
      in >> text;
      CHECK(text == u.id);
    }
  // Four threads, two workers: two each, or all four once the other worker has run out of chains.
  for (const auto& [unit_id, n] : threads_seen) {
    const auto id = unit_id;
    CHECK_MESSAGE((n == 2 || n == 4), id);
  }
  // The costliest chain (gpt2's group a: 6) starts first; a group's later unit comes after its first.
  CHECK(order.front() == "table1/a");
  auto position = [&](const std::string& id, std::size_t from = 0) {
    return std::find(order.begin() + static_cast<long>(from), order.end(), id) - order.begin();
  };
  CHECK(position("section/c") > position("table1/c"));
  CHECK(std::count(order.begin(), order.end(), "section/a") == 2);

  // Nothing left to do: every unit resumed, on any number of workers.
  const auto again = darkbert::study::run_unit_lists({{.units = &bert, .units_dir = base / "bert", .fingerprint = fp}},
                                                     {.show_progress = false, .workers = 3});
  CHECK(again[0].ran == 0);
  CHECK(again[0].resumed == 6);
}

TEST_CASE("run_unit_lists: a worker out of work gives its threads to the one still in a unit") {
  const auto base = fresh_dir("shares");
  const nlohmann::json fp = {{"model", "m"}};
  int at_start = 0, grew_to = 0;
  // The long unit starts on its half and waits, adopting its share between "steps", until the other
  // worker has run the short unit and left the pool; without the handover it would wait in vain.
  const std::vector<WorkUnit> units = {
      {.id = "long", .cost = 10, .run = [&](const fs::path&) {
         at_start = darkbert::num_threads();
         const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         while (darkbert::num_threads() == at_start && std::chrono::steady_clock::now() < give_up) {
           std::this_thread::sleep_for(std::chrono::milliseconds(1));
           darkbert::adopt_thread_share();
         }
         grew_to = darkbert::num_threads();
       }},
      {.id = "short", .cost = 1, .run = [](const fs::path&) {}}};
  const int caller_threads = darkbert::num_threads();
  darkbert::set_num_threads(2);
  darkbert::study::run_units(units, base, fp, {.show_progress = false, .workers = 2});
  CHECK(darkbert::num_threads() == 2);
  darkbert::set_num_threads(caller_threads);
  CHECK(at_start == 1);
  CHECK(grew_to == 2);
}

TEST_CASE("run_unit_lists: the first error stops the pool and is rethrown; the run resumes after it") {
  const auto dir = fresh_dir("workers_error");
  const nlohmann::json fp = {{"model", "m"}};
  std::atomic<int> ran{0};
  bool fail_it = true;
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(std::string(1, 'u').append(std::to_string(i)));
  std::vector<WorkUnit> units;
  for (int i = 0; i < 12; ++i)
    units.push_back({.id = ids[static_cast<std::size_t>(i)], .cost = double(12 - i), .run = [&, i](const fs::path&) {
                       ++ran;
                       std::this_thread::sleep_for(std::chrono::milliseconds(10));
                       if (fail_it && i == 2) throw std::runtime_error("unit 2 failed");
                     }});
  CHECK_THROWS_WITH(darkbert::study::run_units(units, dir, fp, {.show_progress = false, .workers = 2}), "unit 2 failed");
  CHECK(ran.load() < 12);  // the pool stopped: the workers started nothing after the error
  CHECK_FALSE(darkbert::study::unit_done(dir / "u2"));
  fail_it = false;
  const auto summary = darkbert::study::run_units(units, dir, fp, {.show_progress = false, .workers = 2});
  CHECK(summary.ran + summary.resumed == 12);
  CHECK(summary.ran >= 1);
  for (const auto& id : ids) CHECK(darkbert::study::unit_done(dir / id));
}
