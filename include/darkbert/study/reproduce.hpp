#pragma once
/// @file
/// `darkbert reproduce`: "Revealing the Dark Secrets of BERT" end to end on one pretrained checkpoint — the
/// plan (study/study_plan.hpp), its units run or resumed (study/work_units.hpp), and the findings report
/// written from the result files (study/findings.hpp).
///
/// On many machines, each shard runs a share of the units into its own folder and one merge writes the
/// report (study/shard_plan.hpp, study/shard_merge.hpp); the merged folder is the single run's, file for file,
/// apart from wall times.
///
/// @code
/// auto run = darkbert::study::reproduce({.out = "study", .model = "bert-base-uncased/", .seeds = 3});
/// // study/report.md, study/report.html, study/summary.json
/// darkbert::study::reproduce_shard({.out = "s2", .quick = true}, {.index = 2, .count = 2});  // on machine 2
/// darkbert::study::merge_study({.out = "study", .quick = true}, {"s1", "s2"});             // then, anywhere
/// darkbert::study::reproduce_side_by_side({.out = "study"}, "gpt2");   // BERT in study, GPT-2 in study/gpt2
/// @endcode

#include <chrono>      // std::chrono::steady_clock
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <utility>     // std::pair, std::move
#include <vector>      // std::vector

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/file_lock.hpp"
#include "darkbert/core/threads.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "darkbert/study/findings.hpp"
#include "darkbert/study/shard_merge.hpp"
#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/study_plan.hpp"
#include "darkbert/study/work_units.hpp"

namespace darkbert::study {

namespace detail {

// The workers asked for, or the count the unit costs predict fastest on this process's threads.
inline int workers_for(const ReproduceOptions& options, const UnitCosts& costs) {
  return options.workers > 0 ? options.workers : costs.fastest_workers(num_threads());
}

inline std::string workers_text(int workers) {
  const int threads = threads_per_worker(workers);
  return std::to_string(workers) + (workers == 1 ? " worker" : " workers") + " of " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

// Table 1's runs.csv in the plan's order once every unit is done: workers append rows as they finish.
inline void order_table1_runs(const std::filesystem::path& out, const std::vector<WorkUnit>& units) {
  const auto runs_path = out / "table1" / "runs.csv";
  if (!std::filesystem::exists(runs_path)) return;
  const FileLock lock(out / "table1" / "runs.csv.lock");
  auto rows = read_fine_tune_runs(runs_path);
  const std::string before = runs_csv_lines(rows);
  sort_table1_runs(rows, units);
  const std::string after = runs_csv_lines(rows);
  if (after != before) write_file_atomically(runs_path, std::string(runs_header) + after);
}

// Plans the study and runs every unit not yet done; no report.
inline StudyRun run_study(const DataRoot& root, const ReproduceOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto plan = plan_study(root, options);
  const int workers = workers_for(options, plan.costs);
  if (options.log)
    *options.log << "reproduce: " << plan.units.size() << " units into " << (options.out / "units").string() << " ("
                 << detail::workers_text(workers) << ")\n";
  plan.run.units = run_units(plan.units, options.out / "units", plan.run.fingerprint,
                             {.label = "study", .show_progress = options.show_progress, .workers = workers});
  order_table1_runs(options.out, plan.units);
  plan.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan.run;
}

}  // namespace detail

/// Plans the study, runs every unit not yet done, and writes the report. Returns what was run.
inline StudyRun reproduce(const ReproduceOptions& options) {
  const auto root = DataRoot::from_environment();
  auto run = detail::run_study(root, options);
  write_findings(root, run);
  return run;
}

/// Two architectures' studies: `first` (its `arch`) in first.out and `second_arch`'s default model in
/// `first.out / second_arch`, their units in one pool of workers (both models are trained if absent, at
/// once, then planned), then the second's report and the first's with the second beside it. Returns both
/// runs, in that order.
inline std::pair<StudyRun, StudyRun> reproduce_side_by_side(ReproduceOptions first, const std::string& second_arch) {
  require(first.model.empty(), "reproduce: two architectures study their default models; --model is one study");
  require(second_arch != first.arch, "reproduce: --arch names ", second_arch, " twice");
  const auto start = std::chrono::steady_clock::now();
  auto second = first;
  second.arch = second_arch, second.out = first.out / second_arch;
  first.companion = second.out;
  const auto root = DataRoot::from_environment();
  if (!first.plan_only)  // both models, the absent ones pretrained at once (train/default_models.hpp)
    models_in_cache(root, {detail::study_model_entry(root, first.arch, first.quick), detail::study_model_entry(root, second_arch, first.quick)},
                    first.show_progress, first.log);
  auto first_plan = plan_study(root, first);
  auto second_plan = plan_study(root, second);
  // The wider model sets how well a unit uses the threads.
  const auto& costs = first_plan.costs.hidden >= second_plan.costs.hidden ? first_plan.costs : second_plan.costs;
  const int workers = detail::workers_for(first, costs);
  if (first.log)
    *first.log << "reproduce: " << first_plan.units.size() << " + " << second_plan.units.size() << " units into "
               << (first.out / "units").string() << " and " << (second.out / "units").string() << " ("
               << detail::workers_text(workers) << ")\n";
  const auto summaries = run_unit_lists(
      {{.units = &first_plan.units, .units_dir = first.out / "units", .fingerprint = first_plan.run.fingerprint},
       {.units = &second_plan.units, .units_dir = second.out / "units", .fingerprint = second_plan.run.fingerprint}},
      {.label = "study", .show_progress = first.show_progress, .workers = workers});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  detail::order_table1_runs(first.out, first_plan.units);
  detail::order_table1_runs(second.out, second_plan.units);
  first_plan.run.units = summaries[0], second_plan.run.units = summaries[1];
  first_plan.run.seconds = second_plan.run.seconds = seconds;
  write_findings(root, second_plan.run);
  write_findings(root, first_plan.run);  // once both summaries exist
  return {std::move(first_plan.run), std::move(second_plan.run)};
}

/// Runs shard `shard` of the study into `options.out` (resumed like a whole run) and writes its shard.json;
/// no report (merge_study writes it from every shard).
inline StudyRun reproduce_shard(const ReproduceOptions& options, ShardSpec shard) {
  const auto start = std::chrono::steady_clock::now();
  const auto root = DataRoot::from_environment();
  auto plan = plan_study(root, options);
  const auto shards = plan_shards(plan.units, shard.count);
  std::vector<WorkUnit> mine;
  ShardManifest manifest{.fingerprint = plan.run.fingerprint, .index = shard.index, .count = shard.count};
  for (std::size_t i : shards.units_of(shard.index)) {
    mine.push_back(plan.units[i]);
    manifest.units.push_back(plan.units[i].id);
  }
  if (options.log)
    *options.log << "reproduce: shard " << shard.index << "/" << shard.count << ", " << mine.size() << " of "
                 << plan.units.size() << " units into " << (options.out / "units").string() << "\n";
  std::error_code ec;
  std::filesystem::remove(options.out / "shard.json", ec);  // the folder is a finished shard only when it is rewritten
  plan.run.units = run_units(mine, options.out / "units", plan.run.fingerprint,
                             {.label = "shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count),
                              .show_progress = options.show_progress, .workers = detail::workers_for(options, plan.costs)});
  manifest.ran = plan.run.units.ran, manifest.resumed = plan.run.units.resumed;
  write_shard_manifest(options.out, manifest);
  plan.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan.run;
}

/// Merges the shard folders `shards` into `options.out` (checked against the plan `options` gives:
/// study/shard_merge.hpp) and writes the report from them. Returns the run, its `units` counting what the
/// shards computed.
inline StudyRun merge_study(const ReproduceOptions& options, const std::vector<std::filesystem::path>& shards) {
  const auto start = std::chrono::steady_clock::now();
  const auto root = DataRoot::from_environment();
  auto plan = plan_study(root, options);
  const auto merged = merge_study_shards(shards, plan.units, plan.run.fingerprint, options.out);
  if (options.log)
    *options.log << "reproduce: merged " << merged.units << " units from " << merged.shards << " shards into "
                 << options.out.string() << "\n";
  plan.run.units = {.ran = merged.ran, .resumed = merged.resumed};
  plan.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_findings(root, plan.run);
  return plan.run;
}

}  // namespace darkbert::study
