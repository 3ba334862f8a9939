// darkbert reproduce --out DIR [--quick] [--model DIR] [--seeds N] [--tasks MRPC,STS-B,...] [--lr 5e-4]
// darkbert reproduce ... --shard K/N|auto --out SHARD_DIR       one shard's units, no report
// darkbert reproduce ... --merge SHARD_DIR... --out DIR         the shards checked, merged, and the report
// mpirun -np N darkbert reproduce ... --shard mpi --out DIR     rank r runs shard r+1 of N, rank 0 merges
// darkbert reproduce ... --plan --ranks N [--cores-per-rank C]  the units, their costs, the shards, the time
//
// "Revealing the Dark Secrets of BERT" end to end (study/reproduce.hpp): Table 1 and every section on every
// available task, then the findings report (report.md, report.html, summary.json) beside the CSV, .npy and
// figure files each section wrote. A killed run resumes where it stopped. On a cluster (docs/cluster.md) the
// same units run as N shards (study/shard_plan.hpp), merged into the single run's folder.

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem::path
#include <iostream>    // std::cerr
#include <memory>      // std::make_shared
#include <string>      // std::string
#include <vector>      // std::vector

#include "commands.hpp"
#include "mpi_shards.hpp"
#include "darkbert/study/reproduce.hpp"
#include "darkbert/study/shard_plan.hpp"

namespace darkbert::cli {

struct ReproduceCommand {
  std::filesystem::path out, model;
  std::vector<std::string> tasks;
  std::vector<std::string> archs;             // default models to study: bert, gpt2
  int seeds = 3;
  int workers = 0;                            // 0: as the unit costs predict fastest
  double lr = 5e-4;
  bool quick = false, quiet = false, check = false;
  std::string shard;                          // K/N, auto or mpi
  std::string shard_dir;                      // with mpi: each rank's shard folder
  std::vector<std::filesystem::path> merge;   // shard folders
  bool plan = false;
  int ranks = 1;
  double cores = 2;                           // per rank, for --plan
};

namespace {

// --plan: every unit with its estimated cost and shard, each shard's load, and the predicted wall time.
void print_plan(const study::StudyPlan& plan, int ranks, double cores, int workers) {
  if (workers <= 0) workers = plan.costs.fastest_workers(static_cast<int>(cores));
  const auto shards = study::plan_shards(plan.units, ranks);
  std::printf("%-40s %10s %6s  %s\n", "unit", "cost (s)", "shard", "group");
  for (std::size_t i = 0; i < plan.units.size(); ++i)
    std::printf("%-40s %10.2f %3d/%-2d  %s\n", plan.units[i].id.c_str(), plan.units[i].cost, shards.shard_of[i], ranks,
                plan.units[i].group.c_str());
  for (int k = 1; k <= ranks; ++k)
    std::printf("shard %d/%d: %zu units, %.1f s\n", k, ranks, shards.units_of(k).size(), shards.load[static_cast<std::size_t>(k - 1)]);
  std::printf("units: %zu in %zu dependency groups; one rank: %.1f s\n", plan.units.size(), shards.groups, shards.total);
  std::printf("predicted on %d rank%s of %g core%s, %d worker%s each: %.1f s (the most loaded shard %.1f s on two cores; "
              "critical path: the costliest group, %.1f s; balance %.2f; speed-up %.2f)\n",
              ranks, ranks == 1 ? "" : "s", cores, cores == 1 ? "" : "s", workers, workers == 1 ? "" : "s",
              study::predicted_seconds(shards, plan.costs, cores, workers), shards.makespan, shards.critical_path,
              shards.balance(), shards.makespan > 0 ? shards.total / shards.makespan : 1.0);
  std::printf("unit costs are seconds on two cores, scaled to %g by Amdahl's law (one core %.2fx slower at this width); "
              "one process's start-up and report (%.0f s) included, the merge's copying not\n",
              cores, plan.costs.one_core_slowdown(), study::UnitCosts::process_overhead);
}

// What a finished study printed, and --check on its folder.
void report_study(const ReproduceCommand& o, const study::StudyRun& run, const char* computed) {
  std::printf("study: %s\nunits: %zu computed %s, %zu resumed, %.0f s\nreport: %s, %s, %s\n", run.model_description.c_str(),
              run.units.ran, computed, run.units.resumed, run.seconds, (o.out / "report.md").string().c_str(),
              (o.out / "report.html").string().c_str(), (o.out / "summary.json").string().c_str());
  if (!o.check) return;
  const auto problems = study::check_report(o.out);
  for (const auto& p : problems) std::fprintf(stderr, "check: %s\n", p.message.c_str());
  if (!problems.empty()) fail(o.out.string(), ": the report check found ", problems.size(), " problem(s)");
  std::printf("check: every file parses, every figure decodes, every number of report.md is in summary.json\n");
}

}  // namespace

void add_reproduce_command(CLI::App& app) {
  auto o = std::make_shared<ReproduceCommand>();
  auto* cmd = app.add_subcommand("reproduce", "Reproduce 'Revealing the Dark Secrets of BERT': every section on every task, "
                                              "and the findings report");
  cmd->footer("Example: darkbert reproduce --out study            (both default models; about 42 minutes on 2 cores once cached)\n"
              "         darkbert reproduce --out quick --quick    (every step on tiny sizes, in minutes)");
  cmd->add_option("--out", o->out, "Study folder: report.md, report.html, summary.json, units/, table1/ (resumed if it exists); "
                                   "with --shard, the shard's folder");
  cmd->add_option("--model", o->model, "Pretrained BERT-family checkpoint folder (default: darkbert's study model, "
                                       "pretrained into the cache on first use)")->check(CLI::ExistingDirectory);
  cmd->add_option("--arch", o->archs, "Default models to study, in order (default: bert,gpt2; one with --model, --shard, "
                                      "--merge or --plan): BERT into --out, GPT-2 into OUT/gpt2, and the BERT report "
                                      "sets both side by side")
      ->delimiter(',')->check(CLI::IsMember({"bert", "gpt2"}));
  cmd->add_option("--seeds", o->seeds, "Fine-tuning seeds per task and setting")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--tasks", o->tasks, "GLUE tasks (default: every one whose data is present)")->delimiter(',');
  cmd->add_option("--lr", o->lr, "Fine-tuning peak learning rate (BERT-base used 2e-5; small models need ~5e-4)")->capture_default_str();
  cmd->add_option("--workers", o->workers, "Units at once, each on its share of the threads (default: what the unit "
                                           "costs predict fastest: on two cores, two of one thread for the study models, "
                                           "one for BERT-base; the results are the same bits)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quick", o->quick, "Tiny sizes (and a seconds-long model if none is given): checks every step in minutes");
  cmd->add_flag("--quiet", o->quiet, "No progress bars");
  cmd->add_option("--shard", o->shard, "Run only shard K of N (K counted from 1, e.g. 2/3) into --out and write its shard.json, "
                                       "no report; 'auto': K and N from the Slurm job array (SLURM_ARRAY_TASK_ID/COUNT/MIN); "
                                       "'mpi': under mpirun, rank r runs shard r+1 of N and rank 0 merges into --out and "
                                       "writes the report");
  cmd->add_option("--shard-dir", o->shard_dir, shard_dir_help);
  cmd->add_option("--merge", o->merge, "Merge these shard folders (every shard of one study, any order) into --out and write "
                                       "the report")->check(CLI::ExistingDirectory);
  cmd->add_flag("--plan", o->plan, "Print the units, their estimated costs, the shards for --ranks and the predicted wall "
                                   "time; runs nothing");
  cmd->add_option("--ranks", o->ranks, "Ranks (shards) for --plan")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--cores-per-rank", o->cores, "Cores (OpenMP threads) of each rank, for --plan's prediction")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--check", o->check, "Then check the folder: every file parses, every figure decodes, every number of "
                                     "report.md is in summary.json (fails naming each problem)");
  cmd->callback([o] {
    require(int(!o->shard.empty()) + int(!o->merge.empty()) + int(o->plan) <= 1, "reproduce: give one of --shard, --merge, --plan");
    require(o->plan || !o->out.empty(), "reproduce: --out is required");
    require(!o->check || ((o->shard.empty() || o->shard == "mpi") && !o->plan),
            "reproduce: --check checks a report; a shard or a plan has none");
    require(o->shard_dir.empty() || o->shard == "mpi", "reproduce: --shard-dir is for --shard mpi");
    const bool one_study = !o->model.empty() || !o->shard.empty() || !o->merge.empty() || o->plan;
    if (o->archs.empty()) o->archs = one_study ? std::vector<std::string>{"bert"} : std::vector<std::string>{"bert", "gpt2"};
    require(o->archs.size() == 1 || !one_study, "reproduce: --model, --shard, --merge and --plan take one --arch (got ",
            o->archs.size(), ")");
    require(o->archs.size() <= 2 && (o->archs.size() == 1 || o->archs.front() != o->archs.back()),
            "reproduce: --arch names bert and gpt2 at most once each");
    study::ReproduceOptions options{.out = o->out, .model = o->model, .arch = o->archs.front(), .seeds = o->seeds,
                                    .quick = o->quick, .learning_rate = o->lr, .show_progress = !o->quiet, .log = &std::cerr,
                                    .workers = o->workers};
    for (const auto& t : o->tasks) options.tasks.push_back(parse_glue_task(t));
    if (o->plan) {
      options.plan_only = true, options.log = nullptr;
      if (options.out.empty()) options.out = "study";  // names the folders; nothing is written
      print_plan(study::plan_study(DataRoot::from_environment(), options), o->ranks, o->cores, o->workers);
      return;
    }
    if (o->shard == "mpi") {
      study::StudyRun run;
      const bool root = run_over_mpi_ranks(
          o->out, o->shard_dir, "shard.json",
          [&](study::ShardSpec shard, const std::filesystem::path& dir) {
            auto mine = options;  // N ranks share a terminal: rank 0 alone shows its progress
            mine.out = dir;
            if (shard.index != 1) mine.show_progress = false, mine.log = nullptr;
            study::reproduce_shard(mine, shard);
          },
          [&](const std::vector<std::filesystem::path>& shards) { run = study::merge_study(options, shards); });
      if (!root) return;
      report_study(*o, run, "by the ranks");
      return;
    }
    if (!o->shard.empty()) {
      const auto shard = o->shard == "auto" ? study::shard_from_slurm() : study::parse_shard_spec(o->shard);
      const auto run = study::reproduce_shard(options, shard);
      std::printf("study: %s\nshard %d/%d: %zu computed now, %zu resumed, %.0f s\nmanifest: %s\n", run.model_description.c_str(),
                  shard.index, shard.count, run.units.ran, run.units.resumed, run.seconds, (o->out / "shard.json").string().c_str());
      return;
    }
    if (o->archs.size() == 1) {
      const auto run = o->merge.empty() ? study::reproduce(options) : study::merge_study(options, o->merge);
      report_study(*o, run, o->merge.empty() ? "now" : "by the shards");
      return;
    }
    const auto [first_run, second_run] = study::reproduce_side_by_side(options, o->archs.back());
    report_study(ReproduceCommand{.out = second_run.out, .check = o->check}, second_run, "now");
    report_study(*o, first_run, "now");
  });
}

}  // namespace darkbert::cli
