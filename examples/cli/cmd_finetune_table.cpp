// darkbert finetune-table --model DIR --out DIR [--tasks MRPC,STS-B,SST-2,RTE,QNLI] [--seeds 3] [--first-seed 1]
//                         [--settings pretrained,random,frozen] [the recipe options of `darkbert finetune`]
//
// The paper's Table 1 for one checkpoint: every task fine-tuned in three settings, several seeds each.
//   pretrained  the checkpoint's encoder + a new classifier, everything trained  (paper: "fine-tuned")
//   random      the same architecture from random weights, everything trained   (paper: "normal init")
//   frozen      the checkpoint's encoder frozen, only pooler + classifier train (paper: "pre-trained",
//               which trains nothing; a trained head is the closer-to-useful baseline the issue asks for)
// Each finished run appends its scores to OUT/runs.csv (crash-safe), so a rerun with the same options
// skips what is done. OUT/table.md and OUT/table.json hold mean ± sd over the seeds beside the paper's
// values (Kovaleva et al., 2019, Table 1; BERT-base, dev sets).

#include <CLI/CLI.hpp>

#include <algorithm>   // std::find
#include <cmath>       // std::sqrt
#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem
#include <map>         // std::map
#include <memory>      // std::make_shared
#include <optional>    // std::optional
#include <set>         // std::set
#include <sstream>     // std::istringstream
#include <string>      // std::string
#include <tuple>       // std::tuple
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/io/json.hpp"
#include "finetune_run.hpp"

namespace darkbert::cli {

struct FinetuneTableOptions {
  FinetuneOptions recipe;  // model, recipe and data slice; task, init, freeze and seed are set per run
  std::filesystem::path out;
  std::vector<std::string> tasks = {"MRPC", "STS-B", "SST-2", "RTE", "QNLI"};
  std::vector<std::string> settings = {"pretrained", "random", "frozen"};
  int seeds = 3;
  std::uint64_t first_seed = 1;
};

// The paper's Table 1 (BERT-base, dev scores in %): fine-tuned from pretrained weights, fine-tuned from
// random weights, pretrained without fine-tuning. It reports one STS-B score (labelled "Acc"); it sits
// beside our Pearson correlation.
struct PaperScores {
  double pretrained, random, frozen;
};
inline std::optional<PaperScores> paper_table1(const std::string& task, const std::string& metric) {
  static const std::map<std::pair<std::string, std::string>, PaperScores> table = {
      {{"MRPC", "f1"}, {87.9, 81.2, 0.0}},         {{"MRPC", "accuracy"}, {82.3, 68.3, 31.6}},
      {{"STS-B", "pearson"}, {82.7, 2.9, 33.1}},   {{"SST-2", "accuracy"}, {92.0, 80.5, 49.1}},
      {{"QQP", "f1"}, {65.2, 0.0, 0.0}},           {{"QQP", "accuracy"}, {78.6, 63.2, 60.9}},
      {{"RTE", "accuracy"}, {64.6, 52.7, 52.7}},   {{"QNLI", "accuracy"}, {84.4, 49.5, 52.8}},
      {{"MNLI", "accuracy"}, {78.6, 61.0, 31.7}}};
  const auto it = table.find({task, metric});
  if (it == table.end()) return std::nullopt;
  return it->second;
}

// What must match between the runs of one table (a rerun that changed them would mix two recipes).
inline nlohmann::json table_recipe(const FinetuneOptions& r) {
  return {{"model", std::filesystem::absolute(r.model).lexically_normal().string()}, {"epochs", r.epochs},
          {"learning_rate", r.lr}, {"batch", r.batch}, {"max_train", r.max_train}, {"max_eval", r.max_eval},
          {"max_length", r.max_length}};
}

struct RunRow {
  std::string task, setting, metric;
  std::uint64_t seed;
  double value, majority;
};

inline std::vector<RunRow> read_runs(const std::filesystem::path& path) {
  std::vector<RunRow> rows;
  if (!std::filesystem::exists(path)) return rows;
  std::istringstream in(detail::read_text_file(path, "finetune-table runs"));
  std::string line;
  std::getline(in, line);  // header
  for (int number = 2; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    RunRow row;
    std::string seed, value, majority;
    if (!std::getline(fields, row.task, ',') || !std::getline(fields, row.setting, ',') || !std::getline(fields, seed, ',') ||
        !std::getline(fields, row.metric, ',') || !std::getline(fields, value, ',') || !std::getline(fields, majority, ','))
      fail(path.string(), ":", number, ": expected task,setting,seed,metric,value,majority_rate,seconds");
    try {
      row.seed = std::stoull(seed), row.value = std::stod(value), row.majority = std::stod(majority);
    } catch (const std::exception&) {
      fail(path.string(), ":", number, ": not a number in '", line, "'");
    }
    rows.push_back(row);
  }
  return rows;
}

inline std::string mean_sd(const std::vector<double>& v) {
  if (v.empty()) return "—";
  double mean = 0, squares = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  for (double x : v) squares += (x - mean) * (x - mean);
  char text[64];
  if (v.size() == 1) std::snprintf(text, sizeof text, "%.1f", mean);
  else std::snprintf(text, sizeof text, "%.1f ± %.1f", mean, std::sqrt(squares / double(v.size() - 1)));
  return text;
}

inline void write_table(const FinetuneTableOptions& o, const std::vector<RunRow>& rows) {
  // (task, metric) in the order the tasks were asked for; values in % per setting.
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> values;
  std::map<std::string, double> majority;
  for (const auto& task : o.tasks)
    for (const auto& r : rows)
      if (r.task == task) {
        if (std::find(keys.begin(), keys.end(), std::pair{r.task, r.metric}) == keys.end()) keys.emplace_back(r.task, r.metric);
        values[{r.task, r.metric, r.setting}].push_back(100 * r.value);
        majority[r.task] = 100 * r.majority;
      }
  static const std::map<std::string, std::string> titles = {
      {"pretrained", "fine-tuned from pretrained"}, {"random", "fine-tuned from random init"}, {"frozen", "frozen encoder + trained head"}};
  std::string md = "| task | metric |";
  for (const auto& s : o.settings) md += " " + titles.at(s) + (s == "frozen" ? " | paper (not fine-tuned) |" : " | paper |");
  md += " majority class |\n|---|---|";
  for (std::size_t i = 0; i < o.settings.size(); ++i) md += "---|---|";
  md += "---|\n";
  nlohmann::json json = nlohmann::json::array();
  for (const auto& [task, metric] : keys) {
    const auto paper = paper_table1(task, metric);
    md += "| " + task + " | " + metric + " |";
    nlohmann::json entry = {{"task", task}, {"metric", metric}, {"majority_rate", majority[task] / 100}};
    for (const auto& s : o.settings) {
      const auto& v = values[{task, metric, s}];
      const std::optional<double> reference =
          paper ? std::optional(s == "pretrained" ? paper->pretrained : s == "random" ? paper->random : paper->frozen) : std::nullopt;
      md += " " + mean_sd(v) + " | " + (reference ? mean_sd({*reference}) : "—") + " |";
      entry[s] = {{"values_percent", v}, {"paper_percent", reference ? nlohmann::json(*reference) : nlohmann::json()}};
    }
    char m[32];
    std::snprintf(m, sizeof m, "%.1f", majority[task]);
    md += std::string(" ") + (metric == "accuracy" ? m : "—") + " |\n";
    json.push_back(entry);
  }
  write_file_atomically(o.out / "table.md", md);
  write_file_atomically(o.out / "table.json", nlohmann::json{{"recipe", table_recipe(o.recipe)}, {"rows", json}}.dump(2) + "\n");
  std::printf("%s", md.c_str());
}

inline void run_finetune_table_command(const FinetuneTableOptions& o) {
  std::filesystem::create_directories(o.out);
  // The recipe is fixed by the first run; a rerun continues it only with the same recipe.
  const auto recipe_path = o.out / "recipe.json";
  const auto recipe = table_recipe(o.recipe);
  if (std::filesystem::exists(recipe_path)) {
    const auto saved = read_json_file(recipe_path);
    for (const auto& [key, value] : recipe.items())
      if (!saved.contains(key) || saved[key] != value)
        fail("finetune-table: ", recipe_path.string(), " has ", key, " = ", saved.value(key, nlohmann::json()).dump(),
             ", this run asks for ", value.dump(), "; use another --out or the same options");
  } else {
    write_file_atomically(recipe_path, recipe.dump(2) + "\n");
  }
  const auto runs_path = o.out / "runs.csv";
  auto rows = read_runs(runs_path);
  std::set<std::tuple<std::string, std::string, std::uint64_t>> done;
  for (const auto& r : rows) done.insert({r.task, r.setting, r.seed});
  if (!std::filesystem::exists(runs_path))
    write_file_atomically(runs_path, "task,setting,seed,metric,value,majority_rate,seconds\n");
  for (const auto& task : o.tasks)
    for (const auto& setting : o.settings)
      for (int i = 0; i < o.seeds; ++i) {
        const std::uint64_t seed = o.first_seed + std::uint64_t(i);
        if (done.count({task, setting, seed})) continue;
        FinetuneOptions run = o.recipe;
        run.task = task, run.seed = seed;
        run.init = setting == "random" ? "random" : "pretrained";
        run.freeze_encoder = setting == "frozen";
        std::printf("\n== %s, %s, seed %llu\n", task.c_str(), setting.c_str(), static_cast<unsigned long long>(seed));
        const auto metrics = fine_tune_and_score(run, {});
        std::string lines;
        for (const auto& [metric, value] : metrics["scores"].items()) {
          const RunRow row{task, setting, metric, seed, value.get<double>(), metrics["majority_rate"].get<double>()};
          char line[256];
          std::snprintf(line, sizeof line, "%s,%s,%llu,%s,%.6f,%.6f,%.1f\n", task.c_str(), setting.c_str(),
                        static_cast<unsigned long long>(seed), metric.c_str(), row.value, row.majority,
                        metrics["seconds"].get<double>());
          lines += line;
          rows.push_back(row);
        }
        append_file_atomically(runs_path, lines, "finetune-table runs");  // one finished run at a time: a kill loses at most the current one
      }
  write_table(o, rows);
}

void add_finetune_table_command(CLI::App& app) {
  auto o = std::make_shared<FinetuneTableOptions>();
  auto* cmd = app.add_subcommand("finetune-table",
                                 "The paper's Table 1 for one checkpoint: each task fine-tuned from pretrained weights, from\n"
                                 "random weights and with a frozen encoder, several seeds each; mean ± sd beside the paper\n"
                                 "  e.g. darkbert finetune-table --model mini-bert --out table1 --seeds 3");
  add_model_option(cmd, o->recipe.model);
  cmd->add_option("--out", o->out, "Write runs.csv, table.md and table.json here (a rerun continues)")->required();
  cmd->add_option("--tasks", o->tasks, "GLUE tasks")->delimiter(',')->capture_default_str();
  cmd->add_option("--settings", o->settings, "pretrained, random, frozen")->delimiter(',')
      ->check(CLI::IsMember({"pretrained", "random", "frozen"}))->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Runs per task and setting")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--first-seed", o->first_seed, "Seed of the first run (then +1, +2, ...)")->capture_default_str();
  add_fine_tuning_recipe_options(cmd, o->recipe);
  cmd->callback([o] {
    for (const auto& task : o->tasks) (void)parse_glue_task(task);  // a typo fails before an hour of runs
    o->recipe.model = resolve_model(o->recipe.model);
    run_finetune_table_command(*o);
  });
}

}  // namespace darkbert::cli
