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
///
/// On a machine of several cores, `workers` > 1 runs units at once, each worker on its share of the
/// threads: a small model's products leave the second core of a two-thread product half idle, so two
/// units on one thread each finish sooner than one after the other on two (study/unit_costs.hpp). A
/// dependency group stays in one worker, in list order; results are the same bits whatever the split,
/// since every kernel gives the same bits at any thread count (core/blas.hpp).

#include <chrono>      // std::chrono::steady_clock
#include <cstdint>     // std::uint64_t
#include <algorithm>   // std::stable_sort, std::min, std::max
#include <cstdio>      // std::snprintf
#include <exception>   // std::exception_ptr, std::current_exception, std::rethrow_exception
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <map>         // std::map
#include <mutex>       // std::mutex, std::lock_guard
#include <set>         // std::set
#include <string>      // std::string
#include <thread>      // std::thread
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/core/progress.hpp"
#include "darkbert/core/threads.hpp"

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

/// How run_units runs and reports.
struct RunUnitsOptions {
  std::string label = "study";  ///< progress bar label
  bool show_progress = true;    ///< progress bar on stderr
  int workers = 1;              ///< units at once, each worker on num_threads() / workers threads (at least one;
                                ///< more once the others are done: ThreadShares)
};

/// The OpenMP threads each of `workers` workers runs its units on: an equal share, at least one.
inline int threads_per_worker(int workers) { return equal_thread_share(num_threads(), workers); }

/// One study's units, the folder they go to and the fingerprint that folder must carry: run_unit_lists
/// runs several studies' units in one pool (both architectures of `darkbert reproduce`).
struct UnitList {
  const std::vector<WorkUnit>* units = nullptr;  ///< in an order where every unit follows what it reads
  std::filesystem::path units_dir;               ///< unit u goes to units_dir / u.id
  nlohmann::json fingerprint;                    ///< written to (or checked against) units_dir / study.json
};

/// Units that must run together, in list order: a dependency group's units, or one ungrouped unit alone.
/// The unit of scheduling for shards (study/shard_plan.hpp) and for run_unit_lists' workers.
struct UnitChain {
  std::vector<std::size_t> units;  ///< indices into the unit list, in list order
  double cost = 0;                 ///< their summed cost
};

/// The chains of `units`, the costliest first (ties in list order): longest-first list scheduling starts
/// the longest chains at once, so the shards or workers finish together.
inline std::vector<UnitChain> unit_chains(const std::vector<WorkUnit>& units) {
  std::vector<UnitChain> chains;
  std::map<std::string, std::size_t> chain_of_group;
  for (std::size_t i = 0; i < units.size(); ++i) {
    std::size_t c = chains.size();
    if (!units[i].group.empty()) c = chain_of_group.try_emplace(units[i].group, chains.size()).first->second;
    if (c == chains.size()) chains.emplace_back();
    chains[c].units.push_back(i);
    chains[c].cost += units[i].cost;
  }
  std::stable_sort(chains.begin(), chains.end(), [](const UnitChain& a, const UnitChain& b) { return a.cost > b.cost; });
  return chains;
}

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

namespace detail {

// Refuses ids that are not unique relative paths of their own, and units without a cost or a function.
inline double checked_total_cost(const std::vector<WorkUnit>& units) {
  std::set<std::string> ids;
  double total = 0;
  for (const auto& u : units) {
    for (const auto& other : units)
      require(other.id.size() <= u.id.size() || other.id.compare(0, u.id.size() + 1, u.id + "/") != 0,
              "study unit '", other.id, "' lies inside the folder of unit '", u.id, "'");
    require(!u.id.empty() && u.id.front() != '/' && u.id.find("..") == std::string::npos,
            "study unit id '", u.id, "' must be a relative path without '..'");
    require(ids.insert(u.id).second, "study unit '", u.id, "' is listed twice");
    require(u.cost > 0, "study unit '", u.id, "' has a cost of ", u.cost, " (must be positive)");
    require(static_cast<bool>(u.run), "study unit '", u.id, "' has nothing to run");
    total += u.cost;
  }
  return total;
}

// Runs one unit into units_dir / u.id unless it is done there; true when it ran.
inline bool run_unit(const WorkUnit& u, const std::filesystem::path& units_dir) {
  namespace fs = std::filesystem;
  const fs::path dir = units_dir / u.id;
  if (unit_done(dir)) return false;
  fs::remove_all(dir);  // what a killed attempt left; the unit starts over
  fs::create_directories(dir);
  const auto t0 = std::chrono::steady_clock::now();
  u.run(dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_file_atomically(dir / unit_done_file(), nlohmann::json{{"id", u.id}, {"seconds", seconds}, {"cost", u.cost}}.dump(2) + "\n");
  return true;
}

}  // namespace detail

/// Runs every unit of every list that is not done yet, each into `list.units_dir / unit.id` (emptied first:
/// a killed attempt's files are not trusted), marking it done with unit.json (id, seconds) once its function
/// returns. One worker runs the units in list order; several take dependency groups (an ungrouped unit
/// alone), the costliest first, and a group's units in list order. The first error stops the pool: the
/// workers finish the units they are in, and it is rethrown. Unit ids must be unique in a list, and no id
/// may be a folder of another (a unit's folder is its own). Returns one summary per list.
inline std::vector<RunUnitsSummary> run_unit_lists(const std::vector<UnitList>& lists, const RunUnitsOptions& options = {}) {
  double total_cost = 0, done_cost = 0;
  for (const auto& list : lists) {
    require(list.units != nullptr, "run_unit_lists: a list without units");
    total_cost += detail::checked_total_cost(*list.units);
  }
  for (const auto& list : lists) check_fingerprint(list.units_dir, list.fingerprint);
  std::vector<RunUnitsSummary> summaries(lists.size());
  // The bar counts cost in thousandths, so its rate and ETA weigh a fine-tuning run above a figure.
  const double scale = 1000.0 / (total_cost > 0 ? total_cost : 1.0);
  Progress progress(options.label, 1000, options.show_progress);
  const auto start = std::chrono::steady_clock::now();
  std::mutex mutex;  // guards the progress bar, the summaries and the pool's state below
  auto run_counted = [&](std::size_t l, std::size_t i) {
    const auto& u = (*lists[l].units)[i];
    adopt_thread_share();
    {
      const std::lock_guard<std::mutex> lock(mutex);
      progress.set_note(u.id);
    }
    const bool ran = detail::run_unit(u, lists[l].units_dir);
    const std::lock_guard<std::mutex> lock(mutex);
    const long before = static_cast<long>(done_cost * scale);
    done_cost += u.cost;
    ++(ran ? summaries[l].ran : summaries[l].resumed);
    progress.advance(static_cast<long>(done_cost * scale) - before);
  };

  // Every list's chains, the costliest first (ties in list order).
  std::vector<std::pair<std::size_t, UnitChain>> chains;
  for (std::size_t l = 0; l < lists.size(); ++l)
    for (auto& chain : unit_chains(*lists[l].units)) chains.emplace_back(l, std::move(chain));
  std::stable_sort(chains.begin(), chains.end(), [](const auto& a, const auto& b) { return a.second.cost > b.second.cost; });
  const int workers = std::max(1, std::min(options.workers, static_cast<int>(chains.size())));
  if (workers == 1) {
    for (std::size_t l = 0; l < lists.size(); ++l)
      for (std::size_t i = 0; i < lists[l].units->size(); ++i) run_counted(l, i);
  } else {
    std::size_t next = 0;
    std::exception_ptr error;
    // Each worker starts on its share of the threads; when the chains run out, a worker that is done gives
    // its share to those still in a unit (at their next training step or evaluation batch).
    ThreadShares shares(num_threads(), workers);
    auto work = [&] {
      const ThreadShareScope share(shares);
      for (;;) {
        std::size_t c;
        {
          const std::lock_guard<std::mutex> lock(mutex);
          if (error || next == chains.size()) return;
          c = next++;
        }
        for (std::size_t i : chains[c].second.units) {
          {
            const std::lock_guard<std::mutex> lock(mutex);
            if (error) return;
          }
          try {
            run_counted(chains[c].first, i);
          } catch (...) {
            const std::lock_guard<std::mutex> lock(mutex);
            if (!error) error = std::current_exception();
            return;
          }
        }
      }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w) pool.emplace_back(work);
    work();  // the calling thread is a worker too (its thread count is restored when it is done)
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
  }
  progress.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto& summary : summaries) summary.seconds = seconds;
  return summaries;
}

/// run_unit_lists for one list: every unit not done yet into `units_dir / unit.id`.
inline RunUnitsSummary run_units(const std::vector<WorkUnit>& units, const std::filesystem::path& units_dir,
                                 const nlohmann::json& fingerprint, const RunUnitsOptions& options = {}) {
  return run_unit_lists({{.units = &units, .units_dir = units_dir, .fingerprint = fingerprint}}, options).front();
}

/// The seconds a finished unit took (from its unit.json).
inline double unit_seconds(const std::filesystem::path& dir) {
  return detail::read_json_file(dir / detail::unit_done_file()).at("seconds").get<double>();
}

}  // namespace darkbert::study
