#pragma once
/// @file
/// The plan of `darkbert reproduce` (study/reproduce.hpp): "Revealing the Dark Secrets of BERT" end to end
/// on one pretrained checkpoint.
/// Every available GLUE task is fine-tuned with several seeds in the four settings of Table 1, and every
/// section of the paper runs on the models it reads (§3.1 fine-tuned maps, §3.2 the pretrained model,
/// §3.3-§3.5 pretrained against fine-tuned, §3.6 every fine-tuned seed); then the findings report is
/// written from the result files alone (study/findings.hpp).
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// auto plan = darkbert::study::plan_study(root, {.out = "study", .model = "bert-base-uncased/", .seeds = 3});
/// darkbert::study::run_units(plan.units, plan.run.out / "units", plan.run.fingerprint);
/// @endcode
///
/// The work is a list of units (study/work_units.hpp), one folder each under `<out>/units/`:
/// @code
/// table1/<TASK>/<setting>/seed-<k>   one fine-tuning run (rows in <out>/table1/runs.csv; the pretrained
///                                    setting keeps its model in <out>/table1/checkpoints/<TASK>/seed-<k>)
/// framenet                           §3.2 on the pretrained model
/// patterns/<TASK>                    §3.1 on the seed-1 fine-tuned model
/// change/<TASK>/seed-<k>             §3.3 cosine similarity, pretrained against fine-tuned seed k
/// features/<TASK>                    §3.4 pretrained and seed-1 fine-tuned
/// relations/<TASK>                   §3.5 on the seed-1 fine-tuned model
/// disable/<TASK>/seed-<k>            §3.6 every head and layer disabled in fine-tuned seed k
/// @endcode
/// A killed run resumes at the first unfinished unit. A unit that reads a fine-tuned checkpoint is in the
/// group of the unit that writes it (`checkpoint/<TASK>/seed-<k>`), so the units spread over machines as
/// shards that never read each other's files (study/shard_plan.hpp) and merge into this folder
/// (study/shard_merge.hpp). Result files name a checkpoint relative to the study folder, and a quick run's
/// model lives in the cache, so the files do not depend on where the folder is.

#include <algorithm>   // std::max
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <map>         // std::map
#include <memory>      // std::shared_ptr, std::make_shared (the classifiers a process trains once)
#include <mutex>       // std::mutex, std::lock_guard (... under a lock)
#include <optional>    // std::optional
#include <ostream>     // std::ostream
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/error.hpp"
#include "darkbert/core/file_lock.hpp"  // FileLock (the quick model)
#include "darkbert/data/annotator.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/study/attention_patterns.hpp"
#include "darkbert/study/disable_heads.hpp"
#include "darkbert/study/finetune_change.hpp"
#include "darkbert/study/finetune_table.hpp"
#include "darkbert/study/framenet_heads.hpp"
#include "darkbert/study/linguistic_features.hpp"
#include "darkbert/study/task_inputs.hpp"
#include "darkbert/study/token_relations.hpp"
#include "darkbert/study/unit_costs.hpp"
#include "darkbert/study/work_units.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "darkbert/train/default_models.hpp"
#include "darkbert/train/pretraining_recipe.hpp"  // recipe_config (plan_only)

namespace darkbert::study {

/// How much of each task the study reads. The full sizes fit the whole study of the default model in
/// about 45 minutes on two cores; `quick` checks every step in minutes.
struct StudySizes {
  std::size_t max_train = 2000;          ///< fine-tuning examples per task (the first N of its train split)
  std::size_t eval_examples = 500;       ///< evaluation examples scored (Table 1, §3.6)
  std::size_t analysis_examples = 200;   ///< evaluation examples whose maps §3.1, §3.3-§3.5 read
  std::size_t framenet_sentences = 1000;  ///< FrameNet sentences scored (a seeded sample of the selection)
  std::size_t ud_sentences = 300;        ///< UD EWT sentences for the linked verb -> subject pairs
  int epochs = 3;                        ///< fine-tuning passes
  bool quick_classifiers = false;        ///< the pattern CNN's small training set

  /// A run of minutes that still goes through every step.
  static StudySizes quick() {
    return {.max_train = 96, .eval_examples = 48, .analysis_examples = 16, .framenet_sentences = 40,
            .ud_sentences = 20, .epochs = 1, .quick_classifiers = true};
  }
};

/// What `darkbert reproduce` is asked for.
struct ReproduceOptions {
  std::filesystem::path out;                  ///< the study folder (resumed when it exists)
  std::filesystem::path model;                ///< pretrained BERT-family or GPT-2 folder; empty: `arch`'s default model
  std::string arch = "bert";                  ///< without a model: whose default model (bert or gpt2)
  std::filesystem::path companion;            ///< another architecture's study folder, set beside this one in the report
  std::vector<GlueTask> tasks;                ///< empty: every task whose data is present
  int seeds = 3;                              ///< fine-tuning seeds 1..seeds
  bool quick = false;                         ///< StudySizes::quick(), and a seconds-long model if none given
  double learning_rate = 5e-4;                ///< fine-tuning peak (small models learn nothing at 2e-5)
  std::optional<StudySizes> sizes;            ///< instead of the full or quick sizes
  bool show_progress = true;                  ///< progress bars on stderr
  std::ostream* log = nullptr;                ///< what happens (may be null)
  int workers = 0;                            ///< units at once on this machine's threads; 0: what the unit
                                              ///< costs predict fastest (UnitCosts::fastest_workers)
  bool plan_only = false;                     ///< list the units only: no folder made, no model trained or read
                                              ///< beyond its config (an absent default or quick model: its recipe's)
};

/// A task the study wanted and could not read.
struct AbsentTask {
  std::string task;    ///< GLUE name
  std::string reason;  ///< the error that names the missing file and how to get it
};

/// What a run produced, for the report.
struct StudyRun {
  std::filesystem::path out;            ///< the study folder
  std::filesystem::path model;          ///< the pretrained folder analysed
  std::string model_description;        ///< where it came from
  std::vector<GlueTask> tasks;          ///< tasks studied
  std::vector<AbsentTask> absent;       ///< tasks named but absent
  int seeds = 0;                        ///< fine-tuning seeds
  bool quick = false;                   ///< quick sizes
  bool causal = false;                  ///< the model is causal (GPT-2): its inputs and measures are the replication's
  std::filesystem::path companion;      ///< the other architecture's study folder (its summary.json), if any
  StudySizes sizes;                     ///< what was read
  double learning_rate = 0;             ///< fine-tuning peak
  nlohmann::json fingerprint;           ///< everything the results depend on
  RunUnitsSummary units;                ///< what this invocation computed
  double seconds = 0;                   ///< wall time of this invocation
};

namespace detail {

inline std::vector<GlueTask> paper_tasks() {
  return {GlueTask::mrpc, GlueTask::stsb, GlueTask::sst2, GlueTask::qqp, GlueTask::rte, GlueTask::qnli, GlueTask::mnli};
}

inline std::string task_name(GlueTask t) { return std::string(glue_task_info(t).name); }

// The recipe of a quick run's seconds-long model of `arch` (bert or gpt2).
inline PretrainRecipe quick_model_recipe(const std::string& arch) {
  auto recipe = named_recipe("tiny", arch);
  recipe.layers = 2, recipe.heads = 4, recipe.steps = 120, recipe.max_documents = 400, recipe.probe_pairs = 8;
  recipe.heldout_examples = 32;  // a held-out score of GPT-2 is a full 50,257-way softmax per token
  recipe.eval_every = 120, recipe.checkpoint_every = 120;
  return recipe;
}

// Where a quick run's model is cached: one folder for every quick study using this cache, so that the shards
// of one study (study/shard_plan.hpp) analyse the same model at the same path.
inline std::filesystem::path quick_model_dir(const DataRoot& root, const std::string& arch) {
  return root.cache_dir() / "models" / ("quick-study-" + arch + "-v1");
}

// The cache entry of the model a study without --model analyses: the quick run's seconds-long model, or
// `arch`'s default model.
inline CacheEntry study_model_entry(const DataRoot& root, const std::string& arch, bool quick) {
  if (quick) return {quick_model_dir(root, arch), quick_model_recipe(arch)};
  return {default_model_dir(root, arch), named_recipe(default_recipe_name(arch), arch)};
}

// How a path appears in the study's result files: relative to the study folder when inside it (a fine-tuned
// checkpoint), so that the files do not depend on where the folder is, and shards merge into any folder.
inline std::string shown_path(const std::filesystem::path& p, const std::filesystem::path& out) {
  const auto rel = std::filesystem::absolute(p).lexically_normal().lexically_relative(std::filesystem::absolute(out).lexically_normal());
  if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  return p.string();
}

}  // namespace detail

/// The units of a study and the run they belong to (no work is done).
struct StudyPlan {
  StudyRun run;                 ///< the run's settings
  std::vector<WorkUnit> units;  ///< in an order where every unit follows what it reads
  UnitCosts costs;              ///< what the units' costs were estimated with (the model's size)
};

/// Decides the model, tasks and sizes, and lists the units.
inline StudyPlan plan_study(const DataRoot& root, const ReproduceOptions& o) {
  namespace fs = std::filesystem;
  require(!o.out.empty(), "reproduce: no output folder given");
  require(o.seeds >= 1, "reproduce: --seeds must be at least 1 (got ", o.seeds, ")");
  StudyPlan plan;
  StudyRun& run = plan.run;
  run.out = o.out;
  run.quick = o.quick;
  run.companion = o.companion;
  run.seeds = o.seeds;
  run.learning_rate = o.learning_rate;
  run.sizes = o.sizes.value_or(o.quick ? StudySizes::quick() : StudySizes{});
  if (!o.plan_only) fs::create_directories(o.out);
  std::optional<ModelConfig> planned_config;  // plan_only and the model is not trained yet: its recipe's shape
  if (!o.model.empty()) {
    run.model = o.model;
    run.model_description = "the checkpoint " + o.model.string();
  } else {
    // Trained into the cache on first use (a quick run's in seconds; reproduce_side_by_side trains both
    // architectures' at once before planning).
    const auto entry = detail::study_model_entry(root, o.arch, o.quick);
    run.model = o.plan_only ? entry.dir : model_in_cache(root, entry, o.show_progress, o.log);
    if (o.plan_only && !fs::exists(run.model / "config.json")) planned_config = recipe_config(entry.recipe);
    run.model_description =
        o.quick ? "a seconds-long " + std::string(o.arch == "gpt2" ? "GPT-2" : "BERT") +
                      " (the tiny recipe; --quick checks the steps, not the findings)"
                : "darkbert's default " + std::string(o.arch == "gpt2" ? "GPT-2" : "study model") + " (recipe `" +
                      default_recipe_name(o.arch) + "`, " + entry.dir.filename().string() + ")";
  }
  const auto config = planned_config ? *planned_config : ModelConfig::from_json_file(run.model / "config.json");
  run.causal = config.causal;

  std::map<GlueTask, std::pair<double, double>> chars;  // mean characters of (train, eval) examples: the costs
  for (GlueTask t : o.tasks.empty() ? detail::paper_tasks() : o.tasks) {
    try {
      const auto first = load_glue_finetune(root, t, {.max_train = 200, .max_eval = 200});
      chars[t] = {mean_characters(first.train), mean_characters(first.eval)};
      run.tasks.push_back(t);
    } catch (const error& e) {
      run.absent.push_back({detail::task_name(t), e.what()});
    }
  }
  // Not require(): its message would read absent.front() even when every task is present.
  if (run.tasks.empty()) fail("reproduce: none of the asked tasks has its data (", run.absent.front().reason, ")");

  std::vector<std::string> task_names;
  for (GlueTask t : run.tasks) task_names.push_back(detail::task_name(t));
  const auto& s = run.sizes;
  run.fingerprint = {{"study", 1},
                     {"model", fs::absolute(run.model).lexically_normal().string()},
                     {"model_digest", planned_config ? std::string("not trained yet") : file_digest(run.model / "model.safetensors")},
                     {"tasks", task_names},
                     {"seeds", run.seeds},
                     {"learning_rate", run.learning_rate},
                     {"fine_tuning_batches", "grouped by length"},
                     {"sizes", {{"max_train", s.max_train}, {"eval_examples", s.eval_examples},
                                {"analysis_examples", s.analysis_examples}, {"framenet_sentences", s.framenet_sentences},
                                {"ud_sentences", s.ud_sentences}, {"epochs", s.epochs},
                                {"quick_classifiers", s.quick_classifiers}}}};

  // Estimated seconds on two cores (study/unit_costs.hpp).
  plan.costs = {.layers = double(config.num_layers), .hidden = double(config.hidden_size), .heads = double(config.num_heads)};
  const UnitCosts& costs = plan.costs;
  const fs::path model = run.model, out = o.out;
  const fs::path table_dir = out / "table1";
  FineTuneRecipe recipe;
  recipe.epochs = s.epochs, recipe.learning_rate = run.learning_rate, recipe.max_train = s.max_train,
  recipe.max_eval = s.eval_examples;
  std::ostream* log = o.log;
  auto fine_tuned = [table_dir](GlueTask t, int seed) {
    return fine_tuned_checkpoint_dir(table_dir, t, static_cast<std::uint64_t>(seed));
  };
  // How the result files name a fine-tuned checkpoint: relative to the study folder.
  auto fine_tuned_label = [fine_tuned, out](GlueTask t, int seed) { return detail::shown_path(fine_tuned(t, seed), out); };
  // Every unit that reads the fine-tuned checkpoint of (task, seed) runs with the unit that writes it.
  auto checkpoint_group = [](GlueTask t, int seed) { return "checkpoint/" + detail::task_name(t) + "/seed-" + std::to_string(seed); };

  // Table 1 first: every later unit reads the fine-tuned checkpoints.
  for (GlueTask t : run.tasks)
    for (int seed = 1; seed <= run.seeds; ++seed)
      for (FineTuneSetting setting : {FineTuneSetting::pretrained, FineTuneSetting::random, FineTuneSetting::frozen,
                                      FineTuneSetting::untrained}) {
        const auto [train_chars, eval_chars] = chars.at(t);
        const double eval_cost = costs.evaluate(s.eval_examples, eval_chars);
        // Frozen: the encoder's backward pass is skipped and its forward is a third of a step.
        const double cost = setting == FineTuneSetting::untrained ? eval_cost
                            : setting == FineTuneSetting::frozen  ? 0.3 * costs.fine_tune(s.max_train, s.epochs, train_chars) + eval_cost
                                                                  : costs.fine_tune(s.max_train, s.epochs, train_chars) + eval_cost;
        plan.units.push_back(
            {.id = "table1/" + detail::task_name(t) + "/" + std::string(to_string(setting)) + "/seed-" + std::to_string(seed),
             .cost = cost,
             .run = [=, &root](const fs::path&) {
               run_fine_tune_table_unit(root, model, model, table_dir, {.task = t, .setting = setting, .seed = std::uint64_t(seed)},
                                        recipe, {.keep_checkpoint = true, .show_progress = false});
             },
             .group = setting == FineTuneSetting::pretrained ? checkpoint_group(t, seed) : std::string()});
      }

  // §3.2 on the pretrained model.
  plan.units.push_back({.id = "framenet", .cost = 2 + costs.section(s.framenet_sentences, 120, 5), .run = [=, &root](const fs::path& dir) {
                          const auto m = Transformer<float>::load(model);
                          const auto tokenizer = Tokenizer::from_directory(model);
                          const auto release = locate_framenet(root);
                          const FrameNet fn(release.dir);
                          const auto selections = select_framenet_sentences(fn, release);
                          const auto r = run_framenet_heads(m, tokenizer, selections,
                                                            {.max_sentences = s.framenet_sentences, .seed = 1,
                                                             .model = model.string()});
                          r.save(dir);
                          write_framenet_figures(r, dir);
                        }});

  // The per-task sections on the fine-tuned models.
  const std::size_t analysis = s.analysis_examples, scored = s.eval_examples, ud = s.ud_sentences;
  const bool quick_classifiers = s.quick_classifiers, causal = config.causal;
  // Trained by the first unit that needs them, under a lock: units of other tasks run beside it on other
  // workers and wait for the same classifiers rather than train (and replace) their own copy.
  struct SharedClassifiers {
    std::mutex mutex;
    std::optional<PatternClassifiers> value;
  };
  auto classifiers = std::make_shared<SharedClassifiers>();
  auto replication = std::make_shared<SharedClassifiers>();
  for (GlueTask t : run.tasks) {
    const std::string name = detail::task_name(t);
    // §3.1 with the paper's classes, and on GPT-2 also with the replication's (its classes and CNN).
    auto patterns_unit = [&](const std::string& id, std::shared_ptr<SharedClassifiers> shared,
                             PatternClasses classes, double cnn_seconds) {
      plan.units.push_back({.id = id + "/" + name, .cost = costs.section(analysis, chars.at(t).second, cnn_seconds, 0.3),
                            .run = [=, &root](const fs::path& dir) {
                              const auto m = Transformer<float>::load(fine_tuned(t, 1));
                              const auto tokenizer = Tokenizer::from_directory(model);
                              const PatternClassifiers& trained = [&]() -> const PatternClassifiers& {
                                const std::lock_guard lock(shared->mutex);
                                if (!shared->value) {  // once per process, from the seed: every shard trains the same CNN
                                  auto co = quick_classifiers ? PatternClassifierOptions::quick(classes) : PatternClassifierOptions::of(classes);
                                  co.seed = 1;
                                  shared->value = train_pattern_classifiers(causal, co);
                                }
                                return *shared->value;  // never assigned again: safe to read unlocked
                              }();
                              const auto inputs = load_task_inputs(root, t, tokenizer, m.config(), {.max_examples = analysis, .seed = 1});
                              attention_patterns(m, inputs, trained, {.model = fine_tuned_label(t, 1)}).save(dir);
                            }, .group = checkpoint_group(t, 1)});
    };
    patterns_unit("patterns", classifiers, PatternClasses::paper, 15);
    if (causal) patterns_unit("patterns-replication", replication, PatternClasses::replication, 25);
    for (int seed = 1; seed <= run.seeds; ++seed)
      plan.units.push_back({.id = "change/" + name + "/seed-" + std::to_string(seed), .cost = costs.section(analysis, chars.at(t).second, 1),
                            .run = [=, &root](const fs::path& dir) {
                              const auto pre = Transformer<float>::load(model);
                              const auto ft = Transformer<float>::load(fine_tuned(t, seed));
                              const auto tokenizer = Tokenizer::from_directory(model);
                              const auto inputs = load_task_inputs(root, t, tokenizer, pre.config(), {.max_examples = analysis, .seed = 1});
                              measure_fine_tune_change(pre, ft, inputs, {.seed = std::uint64_t(seed), .pretrained = model.string(),
                                                                         .finetuned = fine_tuned_label(t, seed)})
                                  .save(dir);
                            }, .group = checkpoint_group(t, seed)});
    plan.units.push_back({.id = "features/" + name, .cost = costs.section(analysis, chars.at(t).second, 3, 0.3), .run = [=, &root](const fs::path& dir) {
                            const auto pre = Transformer<float>::load(model);
                            const auto ft = Transformer<float>::load(fine_tuned(t, 1));
                            const auto tokenizer = Tokenizer::from_directory(model);
                            const auto annotator = default_annotator(root, log);
                            const auto inputs = load_task_inputs(root, t, tokenizer, pre.config(),
                                                                 {.max_examples = analysis, .seed = 1, .annotator = &annotator});
                            const auto r = run_linguistic_features(pre, &ft, inputs, {.pretrained_model = model.string(),
                                                                                      .finetuned_model = fine_tuned_label(t, 1)});
                            r.save(dir);
                            write_linguistic_feature_figures(r, dir);
                          }, .group = checkpoint_group(t, 1)});
    plan.units.push_back({.id = "relations/" + name, .cost = costs.section(analysis, chars.at(t).second, 2, 0.3), .run = [=, &root](const fs::path& dir) {
                            const auto ft = Transformer<float>::load(fine_tuned(t, 1));
                            const auto tokenizer = Tokenizer::from_directory(model);
                            const auto annotator = default_annotator(root, log);
                            const auto inputs = load_task_inputs(root, t, tokenizer, ft.config(),
                                                                 {.max_examples = analysis, .seed = 1, .annotator = &annotator});
                            const auto linked = ud_verb_subject_inputs(root, tokenizer, ft.config(), {.max_sentences = ud, .seed = 1});
                            const auto r = run_token_relations(ft, inputs, {.query = CategoryQuery::for_model(ft.config()),
                                                                            .model = fine_tuned_label(t, 1)}, &linked);
                            r.save(dir);
                            write_token_relation_figures(r, dir);
                          }, .group = checkpoint_group(t, 1)});
    for (int seed = 1; seed <= run.seeds; ++seed)
      plan.units.push_back({.id = "disable/" + name + "/seed-" + std::to_string(seed),
                            .cost = costs.disable_heads(scored, chars.at(t).second), .run = [=, &root](const fs::path& dir) {
                              const auto ft = Transformer<float>::load(fine_tuned(t, seed));
                              const auto tokenizer = Tokenizer::from_directory(model);
                              // Table 1's scored examples, so that the baseline is Table 1's score.
                              const auto inputs = load_task_inputs(root, t, tokenizer, ft.config(), {.max_examples = scored, .first = true});
                              disable_heads(ft, inputs, {.seed = std::uint64_t(seed), .show_progress = false,
                                                         .model = fine_tuned_label(t, seed)})
                                  .save(dir);
                            }, .group = checkpoint_group(t, seed)});
  }
  return plan;
}

}  // namespace darkbert::study
