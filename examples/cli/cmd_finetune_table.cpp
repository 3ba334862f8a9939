// darkbert finetune-table --model DIR --out DIR [--tasks MRPC,STS-B,SST-2,RTE,QNLI] [--seeds 3] [--first-seed 1]
//                         [--settings pretrained,random,frozen,untrained] [--keep-checkpoints]
//                         [the recipe options of `darkbert finetune`]
//
// The paper's Table 1 for one checkpoint: every task in up to four settings, several seeds each
// (study/finetune_table.hpp):
//   pretrained  the checkpoint's encoder + a new classifier, everything trained   (paper: "fine-tuned")
//   random      the same architecture from random weights, everything trained    (paper: "normal init")
//   frozen      the checkpoint's encoder frozen, only pooler + classifier train  (not in the paper)
//   untrained   the checkpoint's encoder + a new, seeded classifier, scored as is (paper: "pretrained")
// Each finished run appends its scores to OUT/runs.csv (crash-safe), so a rerun with the same options
// skips what is done. OUT/table.md and OUT/table.json hold mean ± sd over the seeds beside the paper's
// values (Kovaleva et al., 2019, Table 1; BERT-base, dev sets) and a sentence stating the recipe and caps.

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem
#include <memory>      // std::make_shared
#include <string>      // std::string
#include <vector>      // std::vector

#include "commands.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "finetune_run.hpp"

namespace darkbert::cli {

struct FinetuneTableOptions {
  FinetuneOptions recipe;  // model, recipe and data slice; task, init, freeze and seed are set per run
  std::filesystem::path out;
  std::vector<std::string> tasks = {"MRPC", "STS-B", "SST-2", "RTE", "QNLI"};
  std::vector<std::string> settings = {"pretrained", "random", "frozen"};
  int seeds = 3;
  bool keep_checkpoints = false;
  std::uint64_t first_seed = 1;
};

inline void run_finetune_table_command(const FinetuneTableOptions& o) {
  study::FineTuneTablePlan plan;
  plan.tasks.clear();
  for (const auto& task : o.tasks) plan.tasks.push_back(parse_glue_task(task));
  plan.settings.clear();
  for (const auto& setting : o.settings) plan.settings.push_back(study::parse_fine_tune_setting(setting));
  plan.seeds = o.seeds;
  plan.first_seed = o.first_seed;
  plan.recipe = o.recipe.recipe();
  plan.options = {.keep_checkpoint = o.keep_checkpoints, .show_progress = !o.recipe.quiet,
                  .log = [](const std::string& line) { std::printf("%s\n", line.c_str()); }};
  const auto table = study::run_fine_tune_table(DataRoot::from_environment(), o.recipe.model, o.recipe.tokenizer_dir(),
                                                o.out, plan);
  std::printf("%s", table.markdown().c_str());
}

void add_finetune_table_command(CLI::App& app) {
  auto o = std::make_shared<FinetuneTableOptions>();
  auto* cmd = app.add_subcommand("finetune-table",
                                 "The paper's Table 1 for one checkpoint: each task fine-tuned from pretrained weights, from\n"
                                 "random weights, with a frozen encoder, or scored untrained, several seeds each; mean ± sd\n"
                                 "beside the paper\n"
                                 "  e.g. darkbert finetune-table --model mini-bert --out table1 --seeds 3");
  add_model_option(cmd, o->recipe.model);
  cmd->add_option("--out", o->out, "Write runs.csv, table.md and table.json here (a rerun continues)")->required();
  cmd->add_option("--tasks", o->tasks, "GLUE tasks")->delimiter(',')->capture_default_str();
  cmd->add_option("--settings", o->settings, "pretrained, random, frozen, untrained")->delimiter(',')
      ->check(CLI::IsMember({"pretrained", "random", "frozen", "untrained"}))->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Runs per task and setting")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--first-seed", o->first_seed, "Seed of the first run (then +1, +2, ...)")->capture_default_str();
  cmd->add_flag("--keep-checkpoints", o->keep_checkpoints,
                "Keep each fine-tuned model of the pretrained setting in OUT/checkpoints/<TASK>/seed-<k>");
  add_fine_tuning_recipe_options(cmd, o->recipe);
  cmd->callback([o] {
    for (const auto& task : o->tasks) (void)parse_glue_task(task);  // a typo fails before an hour of runs
    o->recipe.model = resolve_model(o->recipe.model);
    run_finetune_table_command(*o);
  });
}

}  // namespace darkbert::cli
