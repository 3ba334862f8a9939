#pragma once
/// @file
/// The paper's Table 1 (§3.3): each GLUE task scored in four settings, several fine-tuning seeds each,
/// mean ± sd beside the paper's BERT-base values.
///
///   pretrained  the checkpoint's encoder + a new classifier, everything trained   (paper: "fine-tuned")
///   random      the same architecture from random weights, everything trained    (paper: "normal init")
///   frozen      the checkpoint's encoder frozen, only pooler + classifier train  (not in the paper)
///   untrained   the checkpoint's encoder + a new, seeded classifier, scored as is (paper: "pretrained",
///               i.e. not fine-tuned)
///
/// The unit of work is one (task, setting, seed) run. `run_fine_tune_table_unit` runs one unit into an
/// output folder and records it in `runs.csv` (one finished run at a time, crash-safe); a unit already
/// recorded is skipped, so a killed table resumes where it stopped and a scheduler (`darkbert reproduce`)
/// can order and resume units itself. `runs.csv` of tables computed on different machines merge with
/// FineTuneTable::merge. With `keep_checkpoint`, the "pretrained" unit also keeps its fine-tuned model
/// (`checkpoints/<TASK>/seed-<k>/`, with tokenizer files and metrics.json) for the sections that compare
/// pretrained and fine-tuned attention (§3.3 cosine change, §3.4, §3.5, §3.6).
///
/// @code
/// namespace study = darkbert::study;
/// study::FineTuneTablePlan plan{.tasks = {darkbert::GlueTask::mrpc}, .seeds = 3, .keep_checkpoints = true};
/// plan.recipe.learning_rate = 5e-4;   // small models need more than BERT-base's 2e-5
/// plan.recipe.max_train = 8000;       // stated in table.md and table.json
/// study::FineTuneTable table = study::run_fine_tune_table(root, model_dir, model_dir, "out/table1", plan);
/// std::cout << table.markdown();
/// @endcode
///
/// Output folder: recipe.json (what every run of the table shares; a rerun with another recipe is refused
/// by name), runs.csv (`task,setting,seed,metric,value,majority_rate,seconds`, one row per run and metric;
/// read and written under runs.csv.lock, so one process per core may run units into the same folder),
/// table.md and table.json (= FineTuneTable::summary()).


#include <algorithm>   // std::find
#include <array>       // std::array
#include <chrono>      // std::chrono::steady_clock
#include <cstdint>     // std::uint64_t, std::int64_t
#include <cstdio>      // std::snprintf
#include <filesystem>  // std::filesystem::path
#include <functional>  // std::function
#include <map>         // std::map
#include <optional>    // std::optional
#include <set>         // std::set
#include <sstream>     // std::istringstream
#include <string>      // std::string
#include <string_view> // std::string_view
#include <tuple>       // std::tuple
#include <vector>      // std::vector

#include <nlohmann/json.hpp>  // nlohmann::json

#include "darkbert/analysis/predictions.hpp"        // glue_metric_function
#include "darkbert/core/atomic_file.hpp"            // write_file_atomically, append_file_atomically
#include "darkbert/core/detail/text_file.hpp"       // read_text_file
#include "darkbert/core/error.hpp"                  // darkbert::require, darkbert::fail
#include "darkbert/core/file_lock.hpp"              // FileLock (runs.csv)
#include "darkbert/data/glue.hpp"                   // GlueTask, load_glue_finetune
#include "darkbert/data/root.hpp"                   // DataRoot
#include "darkbert/io/json.hpp"                     // read_json_file
#include "darkbert/model/task_heads.hpp"            // TaskHeads
#include "darkbert/model/transformer.hpp"           // Transformer
#include "darkbert/study/across_seeds.hpp"          // mean_sd, task_dir, seed_dir
#include "darkbert/tokenizer/tokenizer.hpp"         // Tokenizer
#include "darkbert/tokenizer/tokenizer_files.hpp"   // copy_tokenizer_files
#include "darkbert/train/fine_tune.hpp"             // fine_tune, predict
#include "darkbert/train/labelled_texts.hpp"        // encode_glue

namespace darkbert::study {

/// One column of Table 1.
enum class FineTuneSetting { pretrained, random, frozen, untrained };

/// Every setting, in the table's column order.
inline constexpr std::array<FineTuneSetting, 4> all_fine_tune_settings = {
    FineTuneSetting::pretrained, FineTuneSetting::random, FineTuneSetting::frozen, FineTuneSetting::untrained};

/// "pretrained", "random", "frozen", "untrained" (the names in runs.csv).
inline std::string_view to_string(FineTuneSetting s) {
  switch (s) {
    case FineTuneSetting::pretrained: return "pretrained";
    case FineTuneSetting::random: return "random";
    case FineTuneSetting::frozen: return "frozen";
    case FineTuneSetting::untrained: return "untrained";
  }
  fail("unknown fine-tuning setting");
}

/// The setting named `name`; the error lists the names.
inline FineTuneSetting parse_fine_tune_setting(std::string_view name) {
  for (auto s : all_fine_tune_settings)
    if (to_string(s) == name) return s;
  fail("unknown fine-tuning setting '", name, "' (expected pretrained, random, frozen or untrained)");
}

/// The column title of a setting in table.md.
inline std::string_view setting_title(FineTuneSetting s) {
  switch (s) {
    case FineTuneSetting::pretrained: return "fine-tuned from pretrained";
    case FineTuneSetting::random: return "fine-tuned from random init";
    case FineTuneSetting::frozen: return "frozen encoder + trained head";
    case FineTuneSetting::untrained: return "pretrained, untrained head";
  }
  fail("unknown fine-tuning setting");
}

/// How a model is made and trained: the settings are points of this space (`spec_of`); `darkbert finetune`
/// reaches the others (e.g. random weights with a frozen encoder).
struct FineTuneSpec {
  bool random_weights = false;  ///< the architecture from random weights instead of the checkpoint's encoder
  bool train_encoder = true;    ///< false: only the task heads (pooler, classifier) learn
  bool train = true;            ///< false: the seeded new head is scored without any training
};

/// The spec of a Table 1 setting.
inline FineTuneSpec spec_of(FineTuneSetting s) {
  switch (s) {
    case FineTuneSetting::pretrained: return {};
    case FineTuneSetting::random: return {.random_weights = true};
    case FineTuneSetting::frozen: return {.train_encoder = false};
    case FineTuneSetting::untrained: return {.train = false};
  }
  fail("unknown fine-tuning setting");
}

/// What every run of one table shares: BERT's run_classifier recipe and the data slice.
struct FineTuneRecipe {
  int epochs = 3;                ///< passes over the training set
  std::size_t batch_size = 32;   ///< examples per step
  double learning_rate = 2e-5;   ///< peak (10% linear warm-up, then linear decay); small models need ~5e-4
  std::size_t max_train = 0;     ///< the first N training examples of each task (0 = all)
  std::size_t max_eval = 0;      ///< the first N evaluation examples (0 = all)
  std::size_t max_length = 128;  ///< tokens per example (pairs truncated longest-first)
  /// Dropout on the embeddings, attention probabilities, hidden states and (BERT) the classifier while
  /// fine-tuning: BERT's 0.1, whatever the checkpoint's config says (the study model pretrains without
  /// dropout, and its config.json says so). Negative: the checkpoint's own probabilities.
  double dropout = 0.1;
  /// Batches of examples of like length (train/length_grouped_batches.hpp), not of random ones: the same
  /// examples and steps per epoch at a third to a half of the padded tokens.
  bool group_by_length = true;
};

/// The config of `checkpoint_config` as a sequence classifier for `task`: the family's Hugging Face
/// architecture name, the task's labels (one output and "regression" for STS-B), and for GPT-2, which has
/// no padding token, `<|endoftext|>` as padding (as Hugging Face's recipe; the classifier reads each
/// row's last token that is not it).
inline ModelConfig classifier_config(ModelConfig c, GlueTask task, const Tokenizer& tokenizer) {
  static const char* names[] = {"BertForSequenceClassification", "RobertaForSequenceClassification",
                                "DistilBertForSequenceClassification", "GPT2ForSequenceClassification"};
  const auto& info = glue_task_info(task);
  c.architecture = names[static_cast<int>(c.family)];
  c.labels.clear();
  if (info.regression) {
    c.labels = {"LABEL_0"};
    c.problem_type = "regression";
  } else {
    for (auto l : info.labels) c.labels.emplace_back(l);
    c.problem_type = "single_label_classification";
  }
  if (c.family == Family::gpt2 && c.pad_token_id < 0) c.pad_token_id = tokenizer.pad_id();
  return c;
}

/// A task's fine-tuning and evaluation examples, encoded (load once, run every setting and seed on it).
struct FineTuneData {
  GlueTask task = GlueTask::mrpc;  ///< the task
  std::string provenance;          ///< where both parts came from (one sentence)
  std::string eval_split;          ///< the evaluation split's name ("dev", "dev[evaluation part]")
  LabelledTexts train;             ///< fine-tuning examples (recipe.max_train first rows)
  LabelledTexts eval;              ///< evaluation examples (recipe.max_eval first rows)
};

/// The fine-tuning and evaluation parts of `task` (data/glue.hpp's load_glue_finetune), capped and encoded
/// as `recipe` says.
inline FineTuneData load_fine_tune_data(const DataRoot& root, GlueTask task, const Tokenizer& tokenizer,
                                        const FineTuneRecipe& recipe) {
  const auto data = load_glue_finetune(root, task, {.max_train = recipe.max_train, .max_eval = recipe.max_eval});
  FineTuneData out;
  out.task = task;
  out.provenance = data.provenance;
  out.eval_split = data.eval.split;
  out.train = encode_glue(tokenizer, data.train, task, recipe.max_length);
  out.eval = encode_glue(tokenizer, data.eval, task, recipe.max_length);
  return out;
}

/// What one run did and scored (the `metrics.json` of `darkbert finetune`).
struct FineTuneRun {
  std::string task;                     ///< GLUE name
  std::string setting;                  ///< Table 1 setting, empty for a run outside the table
  std::string data;                     ///< provenance of the examples
  std::string model;                    ///< the checkpoint it started from (as given)
  std::string init = "pretrained";      ///< "pretrained" or "random"
  bool freeze_encoder = false;          ///< only the task heads learned
  bool trained = true;                  ///< false: the untrained setting (scored as made)
  std::uint64_t seed = 0;               ///< classifier init, example order, dropout
  int epochs = 0;                       ///< passes made (0 when untrained)
  std::size_t batch = 0;                ///< examples per step
  double learning_rate = 0;             ///< peak learning rate
  std::size_t max_length = 0;           ///< tokens per example
  std::size_t train_examples = 0;       ///< examples trained on (0 when untrained)
  std::size_t eval_examples = 0;        ///< examples scored
  std::string eval_split;               ///< which split was scored
  double majority_rate = 0;             ///< accuracy of always guessing the most frequent class (0: regression)
  std::map<std::string, double> scores;  ///< metric name -> value after the last epoch (fractions, not %)
  nlohmann::json per_epoch = nlohmann::json::array();  ///< [{"epoch", "scores"}], epoch 0 = untrained
  std::vector<double> train_loss;       ///< mean training loss of each epoch
  std::int64_t steps = 0;               ///< optimizer steps
  double seconds = 0;                   ///< wall time of training and evaluations
  double examples_per_second = 0;       ///< training examples per second

  /// Every field as JSON (the keys of `darkbert finetune`'s metrics.json, plus setting and trained).
  nlohmann::json to_json() const {
    nlohmann::json j = {{"task", task}, {"data", data}, {"model", model}, {"init", init},
                        {"freeze_encoder", freeze_encoder}, {"trained", trained}, {"seed", seed},
                        {"epochs", epochs}, {"batch", batch}, {"learning_rate", learning_rate},
                        {"max_length", max_length}, {"train_examples", train_examples},
                        {"eval_examples", eval_examples}, {"eval_split", eval_split},
                        {"majority_rate", majority_rate}, {"scores", scores}, {"per_epoch", per_epoch},
                        {"train_loss", train_loss}, {"steps", steps}, {"seconds", seconds},
                        {"examples_per_second", examples_per_second}};
    if (!setting.empty()) j["setting"] = setting;
    return j;
  }
};

/// Where a run's messages go and what it keeps.
struct FineTuneRunOptions {
  std::filesystem::path save_to;        ///< write the trained model here (Hugging Face folder); empty = not kept
  std::filesystem::path tokenizer_dir;  ///< copy its tokenizer files beside the saved model (empty = none)
  std::string model_label;              ///< recorded as FineTuneRun::model
  bool show_progress = false;           ///< a progress bar on stderr
  std::function<void(const std::string&)> log;  ///< one call per message (the run, each epoch's scores)
};

/// Makes a classifier for `data.task` from `checkpoint` as `spec` says, trains it with `recipe` and `seed`
/// (unless spec.train is false), scores it on data.eval after every epoch, and returns the run. The
/// classifier head is drawn from `seed`, so the untrained setting of seed k is the model the pretrained
/// setting of seed k starts from.
template <class T>
FineTuneRun fine_tune_and_score(const Transformer<T>& checkpoint, const Tokenizer& tokenizer, const FineTuneData& data,
                                const FineTuneSpec& spec, std::uint64_t seed, const FineTuneRecipe& recipe,
                                const FineTuneRunOptions& options = {}) {
  const auto& info = glue_task_info(data.task);
  require(data.eval.size() > 0, info.name, ": no evaluation examples to score");
  auto config = classifier_config(checkpoint.config(), data.task, tokenizer);
  if (recipe.dropout >= 0) {
    config.embedding_dropout = config.attention_dropout = config.hidden_dropout = recipe.dropout;
    if (config.family != Family::gpt2) config.classifier_dropout = recipe.dropout;  // GPT-2's score has none
  }
  const auto heads = TaskHeads::for_architecture(config);
  auto model = spec.random_weights ? Transformer<T>::random(config, heads, seed)
                                   : checkpoint.with_task_heads(config, heads, seed);
  FineTuneRun run;
  run.task = std::string(info.name);
  run.data = data.provenance;
  run.model = options.model_label;
  run.init = spec.random_weights ? "random" : "pretrained";
  run.freeze_encoder = !spec.train_encoder;
  run.trained = spec.train;
  run.seed = seed;
  run.epochs = spec.train ? recipe.epochs : 0;
  run.batch = recipe.batch_size;
  run.learning_rate = recipe.learning_rate;
  run.max_length = recipe.max_length;
  run.train_examples = spec.train ? data.train.size() : 0;
  run.eval_examples = data.eval.size();
  run.eval_split = data.eval_split;
  run.majority_rate = data.eval.majority_rate();
  if (options.log) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s: %s; %zu training and %zu evaluation examples\nmodel %s (%s, %d layers x %d heads, init %s%s), "
                  "%d epochs, batch %zu, lr %g, seed %llu",
                  std::string(info.name).c_str(), data.provenance.c_str(), run.train_examples, run.eval_examples,
                  options.model_label.c_str(), family_name(config.family), config.num_layers, config.num_heads,
                  run.init.c_str(), !spec.train ? ", head untrained" : run.freeze_encoder ? ", encoder frozen" : "",
                  run.epochs, recipe.batch_size, recipe.learning_rate, static_cast<unsigned long long>(seed));
    options.log(line);
  }
  const int pad = tokenizer.pad_id();
  auto evaluate = [&](int epoch) {
    const auto predictions = predict(model, data.eval, pad);
    nlohmann::json scores;
    run.scores.clear();
    for (auto metric : info.metrics) {
      const double value = glue_metric_function(metric)(predictions, data.eval.labels);
      scores[std::string(to_string(metric))] = value;
      run.scores[std::string(to_string(metric))] = value;
    }
    run.per_epoch.push_back({{"epoch", epoch + 1}, {"scores", scores}});
    if (options.log) options.log("epoch " + std::to_string(epoch + 1) + ": " + scores.dump());
  };
  if (spec.train) {
    const FineTuneOptions o{.epochs = recipe.epochs, .batch_size = recipe.batch_size,
                            .learning_rate = recipe.learning_rate, .train_encoder = spec.train_encoder,
                            .seed = seed, .group_by_length = recipe.group_by_length,
                            .show_progress = options.show_progress};
    const auto history = fine_tune(model, data.train, pad, o, evaluate);
    run.train_loss = history.epoch_loss;
    run.steps = history.steps;
    run.seconds = history.seconds;
    run.examples_per_second = history.examples_per_second;
  } else {
    const auto start = std::chrono::steady_clock::now();
    evaluate(-1);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!options.save_to.empty()) {
    std::filesystem::create_directories(options.save_to);
    model.save(options.save_to);
    if (!options.tokenizer_dir.empty()) copy_tokenizer_files(options.tokenizer_dir, options.save_to);
  }
  return run;
}

/// One unit of Table 1's work.
struct FineTuneUnit {
  GlueTask task = GlueTask::mrpc;                        ///< which task
  FineTuneSetting setting = FineTuneSetting::pretrained;  ///< which column
  std::uint64_t seed = 1;                                ///< which fine-tuning seed
};

/// The paper's Table 1 values (BERT-base, dev scores in %) for one task and metric: fine-tuned from
/// pretrained weights, fine-tuned from normal-distribution init, pretrained without fine-tuning. The
/// paper reports one STS-B score (labelled "Acc"); it is put beside our Pearson correlation. MNLI and QQP
/// are listed for tables that have them.
struct PaperTable1 {
  double pretrained;     ///< "fine-tuned"
  double random;         ///< "normal init" + fine-tuned
  double not_finetuned;  ///< "pretrained", no fine-tuning
};

/// The paper's values for `task` (GLUE name) and `metric`, if it reports them.
inline std::optional<PaperTable1> paper_table1(std::string_view task, std::string_view metric) {
  struct Entry {
    std::string_view task, metric;
    PaperTable1 scores;
  };
  static constexpr Entry table[] = {
      {"MRPC", "f1", {87.9, 81.2, 0.0}},       {"MRPC", "accuracy", {82.3, 68.3, 31.6}},
      {"STS-B", "pearson", {82.7, 2.9, 33.1}}, {"SST-2", "accuracy", {92.0, 80.5, 49.1}},
      {"QQP", "f1", {65.2, 0.0, 0.0}},         {"QQP", "accuracy", {78.6, 63.2, 60.9}},
      {"RTE", "accuracy", {64.6, 52.7, 52.7}}, {"QNLI", "accuracy", {84.4, 49.5, 52.8}},
      {"MNLI", "accuracy", {78.6, 61.0, 31.7}}};
  for (const auto& e : table)
    if (e.task == task && e.metric == metric) return e.scores;
  return std::nullopt;
}

/// The paper's value for one setting (none for "frozen", which the paper did not run).
inline std::optional<double> paper_value(const PaperTable1& p, FineTuneSetting s) {
  switch (s) {
    case FineTuneSetting::pretrained: return p.pretrained;
    case FineTuneSetting::random: return p.random;
    case FineTuneSetting::untrained: return p.not_finetuned;
    case FineTuneSetting::frozen: return std::nullopt;
  }
  return std::nullopt;
}

/// One line of runs.csv: one metric of one run.
struct FineTuneRow {
  std::string task;         ///< GLUE name
  std::string setting;      ///< pretrained, random, frozen, untrained
  std::uint64_t seed = 0;   ///< fine-tuning seed
  std::string metric;       ///< accuracy, f1, pearson, spearman
  double value = 0;         ///< the score (a fraction)
  double majority = 0;      ///< the task's majority-class rate on the evaluation examples
  double seconds = 0;       ///< wall time of the run
};

/// The rows of a finished run, in metric-name order.
inline std::vector<FineTuneRow> rows_of(const FineTuneRun& run) {
  std::vector<FineTuneRow> rows;
  for (const auto& [metric, value] : run.scores)
    rows.push_back({run.task, run.setting, run.seed, metric, value, run.majority_rate, run.seconds});
  return rows;
}

namespace detail {

inline constexpr std::string_view runs_header = "task,setting,seed,metric,value,majority_rate,seconds\n";

inline std::string runs_csv_lines(const std::vector<FineTuneRow>& rows) {
  std::string text;
  for (const auto& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "%s,%s,%llu,%s,%.6f,%.6f,%.1f\n", r.task.c_str(), r.setting.c_str(),
                  static_cast<unsigned long long>(r.seed), r.metric.c_str(), r.value, r.majority, r.seconds);
    text += line;
  }
  return text;
}

inline std::string percent_mean_sd(const std::vector<double>& v) {
  if (v.empty()) return "—";
  const MeanSd s = mean_sd(v);
  char text[64];
  if (v.size() == 1) std::snprintf(text, sizeof text, "%.1f", s.mean);
  else std::snprintf(text, sizeof text, "%.1f ± %.1f", s.mean, s.sd);
  return text;
}

}  // namespace detail

/// Reads runs.csv (none when the file is absent); a damaged line is an error naming file and line.
inline std::vector<FineTuneRow> read_fine_tune_runs(const std::filesystem::path& path) {
  std::vector<FineTuneRow> rows;
  if (!std::filesystem::exists(path)) return rows;
  std::istringstream in(darkbert::detail::read_text_file(path, "fine-tuning runs"));
  std::string line;
  std::getline(in, line);  // header
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    FineTuneRow row;
    std::string seed, value, majority, seconds;
    if (!std::getline(fields, row.task, ',') || !std::getline(fields, row.setting, ',') ||
        !std::getline(fields, seed, ',') || !std::getline(fields, row.metric, ',') ||
        !std::getline(fields, value, ',') || !std::getline(fields, majority, ','))
      fail(path.string(), ":", number, ": expected task,setting,seed,metric,value,majority_rate,seconds");
    std::getline(fields, seconds, ',');
    try {
      std::size_t used = 0;
      row.seed = std::stoull(seed, &used);
      if (used != seed.size() || seed.find('-') != std::string::npos) throw std::invalid_argument(seed);
      row.value = std::stod(value), row.majority = std::stod(majority);
      row.seconds = seconds.empty() ? 0.0 : std::stod(seconds);
    } catch (const std::exception&) {
      fail(path.string(), ":", number, ": not a number in '", line, "'");
    }
    (void)parse_fine_tune_setting(row.setting);  // an unknown setting fails by name
    rows.push_back(row);
  }
  return rows;
}

/// What must match between the runs of one table (`recipe.json`): a rerun that changed it would mix two
/// recipes in one mean.
inline nlohmann::json table_recipe(const std::filesystem::path& model, const FineTuneRecipe& r) {
  return {{"model", std::filesystem::absolute(model).lexically_normal().string()}, {"epochs", r.epochs},
          {"learning_rate", r.learning_rate}, {"batch", r.batch_size}, {"max_train", r.max_train},
          {"max_eval", r.max_eval}, {"max_length", r.max_length}, {"dropout", r.dropout},
          {"group_by_length", r.group_by_length}};
}

/// One (task, metric, setting) cell of Table 1.
struct FineTuneCell {
  std::string task;                    ///< GLUE name
  std::string metric;                  ///< accuracy, f1, pearson, spearman
  std::string setting;                 ///< pretrained, random, frozen, untrained
  std::vector<double> values_percent;  ///< one per seed, in %
  std::vector<std::uint64_t> seeds;    ///< the seeds, in the same order
  MeanSd percent;                      ///< mean ± sd of values_percent
  std::optional<double> paper_percent;  ///< the paper's value, if it has one
};

/// Table 1 as runs: the recipe they share and one row per run and metric.
struct FineTuneTable {
  nlohmann::json recipe = nlohmann::json::object();  ///< table_recipe() of the runs
  std::vector<FineTuneRow> rows;                      ///< runs.csv
  std::vector<std::string> tasks;     ///< row order of the table (empty: order of appearance in rows)
  std::vector<std::string> settings;  ///< column order (empty: the settings present, in the canonical order)

  /// The tasks shown, in order.
  std::vector<std::string> task_order() const {
    if (!tasks.empty()) return tasks;
    std::vector<std::string> out;
    for (const auto& r : rows)
      if (std::find(out.begin(), out.end(), r.task) == out.end()) out.push_back(r.task);
    return out;
  }
  /// The settings shown, in order.
  std::vector<std::string> setting_order() const {
    if (!settings.empty()) return settings;
    std::vector<std::string> out;
    for (auto s : all_fine_tune_settings)
      for (const auto& r : rows)
        if (r.setting == to_string(s)) {
          out.emplace_back(to_string(s));
          break;
        }
    return out;
  }

  /// Whether runs.csv holds the unit.
  bool has(const FineTuneUnit& u) const {
    const std::string task(glue_task_info(u.task).name), setting(to_string(u.setting));
    for (const auto& r : rows)
      if (r.task == task && r.setting == setting && r.seed == u.seed) return true;
    return false;
  }

  /// Every (task, metric, setting) cell, tasks and settings in order, metrics in order of appearance.
  std::vector<FineTuneCell> cells() const {
    std::vector<FineTuneCell> out;
    for (const auto& task : task_order()) {
      std::vector<std::string> metrics;
      for (const auto& r : rows)
        if (r.task == task && std::find(metrics.begin(), metrics.end(), r.metric) == metrics.end())
          metrics.push_back(r.metric);
      for (const auto& metric : metrics) {
        const auto paper = paper_table1(task, metric);
        for (const auto& setting : setting_order()) {
          FineTuneCell c{task, metric, setting, {}, {}, {}, {}};
          for (const auto& r : rows)
            if (r.task == task && r.metric == metric && r.setting == setting) {
              c.values_percent.push_back(100 * r.value);
              c.seeds.push_back(r.seed);
            }
          c.percent = mean_sd(c.values_percent);
          if (paper) c.paper_percent = paper_value(*paper, parse_fine_tune_setting(setting));
          out.push_back(std::move(c));
        }
      }
    }
    return out;
  }

  /// The table as Markdown: mean ± sd in % per setting, the paper's value beside the settings it has,
  /// the majority-class rate, then one line stating the recipe and the caps on training/evaluation sets.
  std::string markdown() const {
    const auto settings_shown = setting_order();
    auto has_paper = [](const std::string& s) { return parse_fine_tune_setting(s) != FineTuneSetting::frozen; };
    std::string md = "| task | metric |";
    std::string rule = "|---|---|";
    for (const auto& s : settings_shown) {
      const auto setting = parse_fine_tune_setting(s);
      md += " " + std::string(setting_title(setting)) + " |";
      rule += "---|";
      if (has_paper(s)) {
        md += setting == FineTuneSetting::untrained ? " paper (not fine-tuned) |" : " paper |";
        rule += "---|";
      }
    }
    md += " majority class |\n" + rule + "---|\n";
    const auto all = cells();
    for (std::size_t k = 0; k < all.size(); k += settings_shown.size()) {
      const auto& first = all[k];
      md += "| " + first.task + " | " + first.metric + " |";
      auto add_cell = [&md](const std::string& text) {
        md += ' ';
        md += text;
        md += " |";
      };
      for (std::size_t s = 0; s < settings_shown.size(); ++s) {
        const auto& c = all[k + s];
        add_cell(detail::percent_mean_sd(c.values_percent));
        if (has_paper(c.setting)) add_cell(c.paper_percent ? detail::percent_mean_sd({*c.paper_percent}) : std::string("—"));
      }
      char m[32] = "—";
      if (first.metric == "accuracy")
        for (const auto& r : rows)
          if (r.task == first.task) {
            std::snprintf(m, sizeof m, "%.1f", 100 * r.majority);
            break;
          }
      md += std::string(" ") + m + " |\n";
    }
    md += '\n';
    md += recipe_sentence();
    md += '\n';
    return md;
  }

  /// One sentence stating the recipe and the caps (from `recipe`).
  std::string recipe_sentence() const {
    auto number = [&](const char* key) { return recipe.contains(key) ? recipe[key].dump() : std::string("?"); };
    auto cap = [&](const char* key, const char* all, const char* some) {
      const std::string n = number(key);
      return n == "0" ? std::string(all) : std::string(some) + n;
    };
    std::set<std::uint64_t> seeds;
    for (const auto& r : rows) seeds.insert(r.seed);
    return "Dev scores in %, mean ± sd over " + std::to_string(seeds.size()) + " seed(s); epochs: " +
           number("epochs") + ", batch " + number("batch") + ", peak learning rate " + number("learning_rate") +
           (recipe.contains("dropout") && recipe["dropout"].get<double>() >= 0 ? ", dropout " + number("dropout") : "") +
           ", at most " + number("max_length") + " tokens" +
           (recipe.value("group_by_length", false) ? ", batches grouped by length" : "") + "; training examples: " +
           cap("max_train", "all", "the first ") + " per task; evaluation examples: " +
           cap("max_eval", "all", "the first ") + ".";
  }

  /// table.json: the recipe (with the sentence stating it) and one entry per task and metric with every
  /// setting's values, mean, sd and the paper's value.
  nlohmann::json summary() const {
    nlohmann::json entries = nlohmann::json::array();
    const auto settings_shown = setting_order();
    const auto all = cells();
    for (std::size_t k = 0; k < all.size(); k += std::max<std::size_t>(1, settings_shown.size())) {
      const auto& first = all[k];
      double majority = 0;
      for (const auto& r : rows)
        if (r.task == first.task) majority = r.majority;
      nlohmann::json entry = {{"task", first.task}, {"metric", first.metric}, {"majority_rate", majority}};
      for (std::size_t s = 0; s < settings_shown.size(); ++s) {
        const auto& c = all[k + s];
        entry[c.setting] = {{"values_percent", c.values_percent}, {"seeds", c.seeds},
                            {"mean_percent", darkbert::detail::json_number(c.percent.mean)},
                            {"sd_percent", darkbert::detail::json_number(c.percent.sd)},
                            {"paper_percent", c.paper_percent ? nlohmann::json(*c.paper_percent) : nlohmann::json()}};
      }
      entries.push_back(std::move(entry));
    }
    return {{"recipe", recipe}, {"recipe_sentence", recipe_sentence()}, {"rows", entries}};
  }

  /// Adds the runs of `other` (e.g. computed on another machine) that this table lacks; throws when the
  /// recipes differ. A unit present in both keeps this table's rows.
  void merge(const FineTuneTable& other) {
    if (recipe.empty()) recipe = other.recipe;
    require(other.recipe.empty() || other.recipe == recipe, "fine-tuning tables: cannot merge runs of recipe ",
            other.recipe.dump(), " into a table of recipe ", recipe.dump());
    std::set<std::tuple<std::string, std::string, std::uint64_t>> mine;
    for (const auto& r : rows) mine.insert({r.task, r.setting, r.seed});
    for (const auto& r : other.rows)
      if (!mine.count({r.task, r.setting, r.seed})) rows.push_back(r);
  }

  /// Writes recipe.json, runs.csv, table.md and table.json into `dir`.
  void save(const std::filesystem::path& dir) const {
    std::filesystem::create_directories(dir);
    write_file_atomically(dir / "recipe.json", recipe.dump(2) + "\n");
    write_file_atomically(dir / "runs.csv", std::string(detail::runs_header) + detail::runs_csv_lines(rows));
    write_tables(dir);
  }

  /// Writes only table.md and table.json (runs.csv and recipe.json are the record; these are derived).
  void write_tables(const std::filesystem::path& dir) const {
    std::filesystem::create_directories(dir);
    write_file_atomically(dir / "table.md", markdown());
    write_file_atomically(dir / "table.json", summary().dump(2) + "\n");
  }

  /// Reads recipe.json and runs.csv of `dir`.
  static FineTuneTable load(const std::filesystem::path& dir) {
    FineTuneTable t;
    t.recipe = read_json_file(dir / "recipe.json");
    require(t.recipe.is_object(), (dir / "recipe.json").string(), ": expected a JSON object");
    t.rows = read_fine_tune_runs(dir / "runs.csv");
    return t;
  }
};

/// The folder a kept fine-tuned checkpoint goes to: `<table>/checkpoints/<TASK>/seed-<k>`.
inline std::filesystem::path fine_tuned_checkpoint_dir(const std::filesystem::path& table_dir, GlueTask task,
                                                       std::uint64_t seed) {
  return seed_dir(task_dir(table_dir / "checkpoints", task), seed);
}

/// Whether `dir` holds a whole kept checkpoint (its metrics.json is written last).
inline bool has_fine_tuned_checkpoint(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "metrics.json") && std::filesystem::exists(dir / "model.safetensors");
}

namespace detail {

// Creates `out` and its recipe.json, or checks that an existing one says the same.
inline void claim_table_folder(const std::filesystem::path& out, const nlohmann::json& recipe) {
  std::filesystem::create_directories(out);
  const auto path = out / "recipe.json";
  if (std::filesystem::exists(path)) {
    const auto saved = read_json_file(path);
    for (const auto& [key, value] : recipe.items())
      if (!saved.is_object() || !saved.contains(key) || saved[key] != value)
        fail("fine-tuning table: ", path.string(), " has ", key, " = ",
             saved.is_object() ? saved.value(key, nlohmann::json()).dump() : std::string("?"), ", this run asks for ",
             value.dump(), "; use another output folder or the same options");
  } else {
    write_file_atomically(path, recipe.dump(2) + "\n");
  }
  if (!std::filesystem::exists(out / "runs.csv")) write_file_atomically(out / "runs.csv", std::string(runs_header));
}

}  // namespace detail

/// Options of a table run that do not change its numbers.
struct FineTuneTableOptions {
  bool keep_checkpoint = false;  ///< keep the fine-tuned model of the "pretrained" setting
  bool show_progress = false;    ///< progress bars on stderr
  std::function<void(const std::string&)> log;  ///< messages (which unit starts, each epoch's scores)
};

/// Runs one unit of Table 1 into the table folder `out` and records it in runs.csv; a unit already there is
/// not run again (returns false), unless its kept checkpoint is asked for and missing, in which case its
/// rows are replaced. The checkpoint (with metrics.json) is written before the rows, so a kill leaves
/// either no rows or rows and a whole checkpoint. Returns whether it ran and recorded the unit. Processes
/// may run different units into one folder at once (runs.csv is read and written under a lock file);
/// tables of different machines merge with FineTuneTable::merge.
template <class T = float>
bool run_fine_tune_table_unit(const DataRoot& root, const std::filesystem::path& model_dir,
                              const std::filesystem::path& tokenizer_dir, const std::filesystem::path& out,
                              const FineTuneUnit& unit, const FineTuneRecipe& recipe,
                              const FineTuneTableOptions& options = {}) {
  const auto runs_path = out / "runs.csv";
  const bool keep = options.keep_checkpoint && unit.setting == FineTuneSetting::pretrained;
  const auto checkpoint_dir = fine_tuned_checkpoint_dir(out, unit.task, unit.seed);
  const std::string task(glue_task_info(unit.task).name), setting(to_string(unit.setting));
  auto is_unit = [&](const FineTuneRow& r) { return r.task == task && r.setting == setting && r.seed == unit.seed; };
  {
    std::filesystem::create_directories(out);
    const FileLock lock(out / "runs.csv.lock");  // processes running units into one table take turns
    detail::claim_table_folder(out, table_recipe(model_dir, recipe));
    FineTuneTable table;
    table.rows = read_fine_tune_runs(runs_path);
    if (table.has(unit)) {
      if (!keep || has_fine_tuned_checkpoint(checkpoint_dir)) return false;
      std::erase_if(table.rows, is_unit);
      write_file_atomically(runs_path, std::string(detail::runs_header) + detail::runs_csv_lines(table.rows));
    }
  }
  if (options.log)
    options.log("== " + std::string(glue_task_info(unit.task).name) + ", " + std::string(to_string(unit.setting)) +
                ", seed " + std::to_string(unit.seed));
  const auto tokenizer = Tokenizer::from_directory(tokenizer_dir);
  const auto data = load_fine_tune_data(root, unit.task, tokenizer, recipe);
  const auto checkpoint = Transformer<T>::load(model_dir);
  const std::filesystem::path partial = checkpoint_dir.string() + ".partial";
  if (keep) std::filesystem::remove_all(partial);
  FineTuneRun run = fine_tune_and_score(checkpoint, tokenizer, data, spec_of(unit.setting), unit.seed, recipe,
                                        {.save_to = keep ? partial : std::filesystem::path(),
                                         .tokenizer_dir = tokenizer_dir, .model_label = model_dir.string(),
                                         .show_progress = options.show_progress, .log = options.log});
  run.setting = std::string(to_string(unit.setting));
  if (keep) {
    write_file_atomically(partial / "metrics.json", run.to_json().dump(2) + "\n");
    std::filesystem::remove_all(checkpoint_dir);
    std::filesystem::rename(partial, checkpoint_dir);
  }
  // One finished run at a time: a kill loses at most the run in progress. A process that ran the same
  // unit meanwhile keeps its rows (the runs are identical).
  const FileLock lock(out / "runs.csv.lock");  // processes running units into one table take turns
  const auto rows = read_fine_tune_runs(runs_path);
  if (std::any_of(rows.begin(), rows.end(), is_unit)) return false;
  append_file_atomically(runs_path, detail::runs_csv_lines(rows_of(run)), "fine-tuning runs");
  return true;
}

/// The whole table: which tasks, settings and seeds.
struct FineTuneTablePlan {
  /// the table's rows (every task available here by default)
  std::vector<GlueTask> tasks = {GlueTask::mrpc, GlueTask::stsb, GlueTask::sst2, GlueTask::rte, GlueTask::qnli};
  /// its columns (all four by default)
  std::vector<FineTuneSetting> settings = {all_fine_tune_settings.begin(), all_fine_tune_settings.end()};
  int seeds = 3;                 ///< runs per task and setting
  std::uint64_t first_seed = 1;  ///< seeds first_seed, first_seed + 1, ...
  FineTuneRecipe recipe;         ///< shared by every run
  FineTuneTableOptions options;  ///< checkpoints kept, progress, messages
};

/// Every unit of the plan, task by task, setting by setting, seed by seed.
inline std::vector<FineTuneUnit> units_of(const FineTuneTablePlan& plan) {
  require(plan.seeds > 0, "fine-tuning table: needs at least one seed, got ", plan.seeds);
  std::vector<FineTuneUnit> units;
  for (auto task : plan.tasks)
    for (auto setting : plan.settings)
      for (int i = 0; i < plan.seeds; ++i) units.push_back({task, setting, plan.first_seed + static_cast<std::uint64_t>(i)});
  return units;
}

/// Runs every unit of `plan` not yet recorded in `out` (see run_fine_tune_table_unit), then writes
/// table.md and table.json and returns the table (tasks and settings in the plan's order).
template <class T = float>
FineTuneTable run_fine_tune_table(const DataRoot& root, const std::filesystem::path& model_dir,
                                  const std::filesystem::path& tokenizer_dir, const std::filesystem::path& out,
                                  const FineTuneTablePlan& plan) {
  const auto units = units_of(plan);
  detail::claim_table_folder(out, table_recipe(model_dir, plan.recipe));  // a wrong recipe fails before any run
  for (const auto& unit : units) run_fine_tune_table_unit<T>(root, model_dir, tokenizer_dir, out, unit, plan.recipe, plan.options);
  FineTuneTable table = FineTuneTable::load(out);
  for (auto task : plan.tasks) table.tasks.emplace_back(glue_task_info(task).name);
  for (auto setting : plan.settings) table.settings.emplace_back(to_string(setting));
  table.write_tables(out);
  return table;
}

}  // namespace darkbert::study
