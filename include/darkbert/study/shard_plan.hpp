#pragma once
/// @file
/// The units of a study (study/work_units.hpp) split into N shards for N machines or ranks: which shard runs
/// which unit, and how long N ranks should take. Units of one group (a fine-tuned checkpoint and every unit
/// that reads it) always land in one shard, so no shard needs another's files; the groups are spread by
/// estimated cost with the longest-processing-time rule (largest group first, onto the least loaded shard;
/// ties go to the earlier group and the lower shard), which depends on nothing but the unit list. Inside a
/// shard the units keep their list order, which puts every unit after what it reads.
///
/// Shards are counted from 1: `--shard 1/3`, `2/3`, `3/3`. Under a Slurm job array, shard_from_slurm takes
/// K and N from SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP and SLURM_ARRAY_TASK_COUNT
/// (`--array=0-3` and `--array=1-4` both give shards 1/4 .. 4/4).
///
/// @code
/// const auto shards = darkbert::study::plan_shards(plan.units, 4);
/// for (std::size_t i : shards.units_of(2)) run(plan.units[i]);      // shard 2/4
/// std::printf("%.0f s on 4 ranks\n", shards.makespan);               // the most loaded shard
/// @endcode

#include <algorithm>   // std::max, std::stable_sort
#include <cstddef>     // std::size_t
#include <map>         // std::map
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/data/root.hpp"  // EnvironmentLookup, process_environment
#include "darkbert/study/unit_costs.hpp"
#include "darkbert/study/work_units.hpp"

namespace darkbert::study {

namespace detail {

// "a, b, c", at most `max_shown` names, then how many in all: the units or ablations an error names.
inline std::string join_names(const std::vector<std::string>& names, std::size_t max_shown = 12) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max_shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max_shown) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

}  // namespace detail

/// Which shard of how many: 1 <= index <= count.
struct ShardSpec {
  int index = 1;  ///< K, counted from 1
  int count = 1;  ///< N
};

/// Parses "K/N" (1 <= K <= N), e.g. "2/3"; anything else is an error quoting the text.
inline ShardSpec parse_shard_spec(const std::string& text) {
  const auto slash = text.find('/');
  auto number = [&](const std::string& part) -> std::optional<int> {
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoi(part);
  };
  const auto k = slash == std::string::npos ? std::nullopt : number(text.substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : number(text.substr(slash + 1));
  require(k && n && *n >= 1 && *k >= 1 && *k <= *n, "--shard '", text,
          "': expected K/N with 1 <= K <= N (shards are counted from 1), or 'auto' under a Slurm job array");
  return {*k, *n};
}

/// The shard of this Slurm array task: K = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / STEP + 1,
/// N = SLURM_ARRAY_TASK_COUNT. Outside an array job it fails, naming the missing variables.
inline ShardSpec shard_from_slurm(const EnvironmentLookup& env = process_environment) {
  std::string missing;
  auto get = [&](const char* name) -> long {
    const auto v = env(name);
    if (!v || v->empty()) {
      missing += (missing.empty() ? "" : ", ") + std::string(name);
      return 0;
    }
    try {
      std::size_t used = 0;
      const long x = std::stol(*v, &used);
      require(used == v->size(), "");
      return x;
    } catch (...) {
      fail("--shard auto: ", name, "='", *v, "' is not a whole number");
    }
  };
  const long id = get("SLURM_ARRAY_TASK_ID"), count = get("SLURM_ARRAY_TASK_COUNT"), min = get("SLURM_ARRAY_TASK_MIN");
  require(missing.empty(), "--shard auto: ", missing,
          " not set; --shard auto is for Slurm job arrays (sbatch --array=1-N), elsewhere give --shard K/N");
  const auto step_text = env("SLURM_ARRAY_TASK_STEP");
  const long step = step_text && !step_text->empty() ? std::stol(*step_text) : 1;
  require(count >= 1 && step >= 1 && id >= min && (id - min) % step == 0 && (id - min) / step < count,
          "--shard auto: SLURM_ARRAY_TASK_ID=", id, " does not fit SLURM_ARRAY_TASK_MIN=", min, ", SLURM_ARRAY_TASK_STEP=", step,
          ", SLURM_ARRAY_TASK_COUNT=", count);
  return {static_cast<int>((id - min) / step + 1), static_cast<int>(count)};
}

/// Units spread over shards, and what that predicts.
struct ShardPlan {
  int count = 1;                                   ///< N
  std::vector<int> shard_of;                       ///< per unit (list index): its shard, 1..N
  std::vector<double> load;                        ///< per shard (index K-1): summed estimated cost
  double total = 0;                                ///< every unit's cost: the time on one rank
  double critical_path = 0;                        ///< the costliest group: no number of ranks goes below it
  double makespan = 0;                             ///< the most loaded shard: the predicted time on N ranks
  std::size_t groups = 0;                          ///< dependency groups

  /// The list indices of shard K's units, in list order.
  std::vector<std::size_t> units_of(int k) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < shard_of.size(); ++i)
      if (shard_of[i] == k) out.push_back(i);
    return out;
  }
  /// Mean load over the most loaded shard's: 1 when perfectly balanced.
  double balance() const { return makespan > 0 ? total / count / makespan : 1.0; }
};

/// Spreads `units` over `n` shards: groups (a unit with an empty group is its own) by decreasing cost, each
/// onto the least loaded shard. Deterministic: the same list gives the same shards on every machine.
inline ShardPlan plan_shards(const std::vector<WorkUnit>& units, int n) {
  require(n >= 1, "shards: need at least one, got ", n);
  const auto chains = unit_chains(units);  // a group (or an ungrouped unit) goes to one shard whole
  ShardPlan plan;
  plan.count = n;
  plan.groups = chains.size();
  plan.shard_of.assign(units.size(), 0);
  plan.load.assign(static_cast<std::size_t>(n), 0.0);
  for (const auto& chain : chains) {
    std::size_t best = 0;
    for (std::size_t s = 1; s < plan.load.size(); ++s)
      if (plan.load[s] < plan.load[best]) best = s;
    plan.load[best] += chain.cost;
    for (std::size_t i : chain.units) plan.shard_of[i] = static_cast<int>(best) + 1;
    plan.critical_path = std::max(plan.critical_path, chain.cost);
  }
  for (double l : plan.load) plan.total += l, plan.makespan = std::max(plan.makespan, l);
  return plan;
}

/// The predicted wall time of `plan` on its N ranks with `cores` cores each, for units priced by `costs`:
/// a process's overhead (start-up, the report) and the most loaded shard's units, their two-core costs
/// scaled to `cores` (UnitCosts::on_cores). With `workers` units at once on each rank (run_unit_lists),
/// the shard's load is shared by the workers (UnitCosts::on_workers), but takes at least the costliest
/// chain on one worker. The merge's copying and transfers are not counted.
inline double predicted_seconds(const ShardPlan& plan, const UnitCosts& costs, double cores = 2, int workers = 1) {
  const int w = std::max(workers, 1);
  const double shared = costs.on_workers(plan.makespan, cores, w), chain = costs.on_workers(plan.critical_path, cores, w) * w;
  return UnitCosts::process_overhead + std::max(shared, w > 1 ? chain : 0.0);
}

}  // namespace darkbert::study
