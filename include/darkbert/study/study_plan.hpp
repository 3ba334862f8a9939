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
/// A killed run resumes at the first unfinished unit; units are independent files, so a later step can run
/// them on many machines and merge the folders.

#include <algorithm>   // std::max
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <map>         // std::map
#include <optional>    // std::optional
#include <ostream>     // std::ostream
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/error.hpp"
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
#include "darkbert/study/work_units.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "darkbert/train/default_models.hpp"

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
  std::filesystem::path model;                ///< pretrained BERT-family folder; empty: the default model
  std::vector<GlueTask> tasks;                ///< empty: every task whose data is present
  int seeds = 3;                              ///< fine-tuning seeds 1..seeds
  bool quick = false;                         ///< StudySizes::quick(), and a seconds-long model if none given
  double learning_rate = 5e-4;                ///< fine-tuning peak (small models learn nothing at 2e-5)
  std::optional<StudySizes> sizes;            ///< instead of the full or quick sizes
  bool show_progress = true;                  ///< progress bars on stderr
  std::ostream* log = nullptr;                ///< what happens (may be null)
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
  StudySizes sizes;                     ///< what was read
  double learning_rate = 0;             ///< fine-tuning peak
  nlohmann::json fingerprint;           ///< everything the results depend on
  RunUnitsSummary units;                ///< what this invocation computed
  double seconds = 0;                   ///< wall time of this invocation
};

namespace detail {

// FNV-1a over a file's bytes: the model's identity in the fingerprint (a different checkpoint at the same
// path must not resume another's results).
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

inline std::vector<GlueTask> paper_tasks() {
  return {GlueTask::mrpc, GlueTask::stsb, GlueTask::sst2, GlueTask::qqp, GlueTask::rte, GlueTask::qnli, GlueTask::mnli};
}

inline std::string task_name(GlueTask t) { return std::string(glue_task_info(t).name); }

// The seconds-long model of a quick run without --model: the tiny recipe, cached in the study folder.
inline std::filesystem::path quick_model(const DataRoot& root, const std::filesystem::path& out, std::ostream* log,
                                         bool show_progress) {
  namespace fs = std::filesystem;
  const fs::path dir = out / "quick-model";
  if (fs::exists(dir / "model.safetensors") && fs::exists(dir / "config.json")) return dir;
  auto recipe = named_recipe("tiny", "bert");
  recipe.layers = 2, recipe.heads = 4, recipe.steps = 120, recipe.max_documents = 400, recipe.probe_pairs = 8;
  recipe.eval_every = 120, recipe.checkpoint_every = 120;
  if (log) *log << "reproduce --quick: pretraining a seconds-long model (tiny recipe, 120 steps) into " << dir.string() << "\n";
  run_pretraining(root, {.out = dir, .recipe = recipe, .resume = true, .show_progress = show_progress, .log = log});
  fs::remove_all(dir / "checkpoint");
  return dir;
}

}  // namespace detail

/// The units of a study and the run they belong to (no work is done).
struct StudyPlan {
  StudyRun run;                 ///< the run's settings
  std::vector<WorkUnit> units;  ///< in an order where every unit follows what it reads
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
  run.seeds = o.seeds;
  run.learning_rate = o.learning_rate;
  run.sizes = o.sizes.value_or(o.quick ? StudySizes::quick() : StudySizes{});
  fs::create_directories(o.out);
  if (!o.model.empty()) {
    run.model = o.model;
    run.model_description = "the checkpoint " + o.model.string();
  } else if (o.quick) {
    run.model = detail::quick_model(root, o.out, o.log, o.show_progress);
    run.model_description = "a seconds-long model (the tiny recipe; --quick checks the steps, not the findings)";
  } else {
    run.model = default_model(root, "bert", {.show_progress = o.show_progress, .log = o.log});
    run.model_description = "darkbert's default study model (recipe `study`, " + default_model_dir(root, "bert").filename().string() + ")";
  }
  const auto config = ModelConfig::from_json_file(run.model / "config.json");
  require(!config.causal, "reproduce: ", run.model.string(), " is a causal model; the GPT-2 study is not part of this command yet");

  for (GlueTask t : o.tasks.empty() ? detail::paper_tasks() : o.tasks) {
    try {
      (void)load_glue_finetune(root, t, {.max_train = 1, .max_eval = 1});
      run.tasks.push_back(t);
    } catch (const error& e) {
      run.absent.push_back({detail::task_name(t), e.what()});
    }
  }
  require(!run.tasks.empty(), "reproduce: none of the asked tasks has its data (", run.absent.front().reason, ")");

  std::vector<std::string> task_names;
  for (GlueTask t : run.tasks) task_names.push_back(detail::task_name(t));
  const auto& s = run.sizes;
  run.fingerprint = {{"study", 1},
                     {"model", fs::absolute(run.model).lexically_normal().string()},
                     {"model_digest", detail::file_digest(run.model / "model.safetensors")},
                     {"tasks", task_names},
                     {"seeds", run.seeds},
                     {"learning_rate", run.learning_rate},
                     {"sizes", {{"max_train", s.max_train}, {"eval_examples", s.eval_examples},
                                {"analysis_examples", s.analysis_examples}, {"framenet_sentences", s.framenet_sentences},
                                {"ud_sentences", s.ud_sentences}, {"epochs", s.epochs},
                                {"quick_classifiers", s.quick_classifiers}}}};

  // Costs in seconds on two cores for the default model (measured per unit kind; only ratios matter).
  const double train_cost = static_cast<double>(std::max<std::size_t>(s.max_train, 1) * static_cast<std::size_t>(s.epochs)) / 60.0;
  const double eval_cost = static_cast<double>(std::max<std::size_t>(s.eval_examples, 1)) / 200.0;
  const double layers = config.num_layers, heads = config.num_heads;
  const fs::path model = run.model, out = o.out;
  const fs::path table_dir = out / "table1";
  FineTuneRecipe recipe;
  recipe.epochs = s.epochs, recipe.learning_rate = run.learning_rate, recipe.max_train = s.max_train,
  recipe.max_eval = s.eval_examples;
  std::ostream* log = o.log;
  auto fine_tuned = [table_dir](GlueTask t, int seed) {
    return fine_tuned_checkpoint_dir(table_dir, t, static_cast<std::uint64_t>(seed));
  };

  // Table 1 first: every later unit reads the fine-tuned checkpoints.
  for (GlueTask t : run.tasks)
    for (int seed = 1; seed <= run.seeds; ++seed)
      for (FineTuneSetting setting : {FineTuneSetting::pretrained, FineTuneSetting::random, FineTuneSetting::frozen,
                                      FineTuneSetting::untrained}) {
        const double cost = setting == FineTuneSetting::untrained ? eval_cost
                            : setting == FineTuneSetting::frozen  ? train_cost * 0.4 + eval_cost
                                                                  : train_cost + eval_cost;
        plan.units.push_back(
            {.id = "table1/" + detail::task_name(t) + "/" + std::string(to_string(setting)) + "/seed-" + std::to_string(seed),
             .cost = cost,
             .run = [=, &root](const fs::path&) {
               run_fine_tune_table_unit(root, model, model, table_dir, {.task = t, .setting = setting, .seed = std::uint64_t(seed)},
                                        recipe, {.keep_checkpoint = true, .show_progress = false});
             }});
      }

  // §3.2 on the pretrained model.
  plan.units.push_back({.id = "framenet", .cost = static_cast<double>(s.framenet_sentences) / 100.0 + 2, .run = [=, &root](const fs::path& dir) {
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
  const bool quick_classifiers = s.quick_classifiers;
  auto classifiers = std::make_shared<std::optional<PatternClassifiers>>();
  for (GlueTask t : run.tasks) {
    const std::string name = detail::task_name(t);
    plan.units.push_back({.id = "patterns/" + name, .cost = analysis * layers * heads / 2000.0 + 5, .run = [=, &root](const fs::path& dir) {
                            const auto m = Transformer<float>::load(fine_tuned(t, 1));
                            const auto tokenizer = Tokenizer::from_directory(model);
                            if (!*classifiers) {
                              auto co = quick_classifiers ? PatternClassifierOptions::quick() : PatternClassifierOptions{};
                              co.seed = 1;
                              *classifiers = train_pattern_classifiers(false, co);
                            }
                            const auto inputs = load_task_inputs(root, t, tokenizer, m.config(), {.max_examples = analysis, .seed = 1});
                            const auto r = attention_patterns(m, inputs, **classifiers, {.model = fine_tuned(t, 1).string()});
                            r.save(dir);
                          }});
    for (int seed = 1; seed <= run.seeds; ++seed)
      plan.units.push_back({.id = "change/" + name + "/seed-" + std::to_string(seed), .cost = analysis * layers / 500.0 + 1,
                            .run = [=, &root](const fs::path& dir) {
                              const auto pre = Transformer<float>::load(model);
                              const auto ft = Transformer<float>::load(fine_tuned(t, seed));
                              const auto tokenizer = Tokenizer::from_directory(model);
                              const auto inputs = load_task_inputs(root, t, tokenizer, pre.config(), {.max_examples = analysis, .seed = 1});
                              measure_fine_tune_change(pre, ft, inputs, {.seed = std::uint64_t(seed), .pretrained = model.string(),
                                                                         .finetuned = fine_tuned(t, seed).string()})
                                  .save(dir);
                            }});
    plan.units.push_back({.id = "features/" + name, .cost = analysis * layers / 400.0 + 2, .run = [=, &root](const fs::path& dir) {
                            const auto pre = Transformer<float>::load(model);
                            const auto ft = Transformer<float>::load(fine_tuned(t, 1));
                            const auto tokenizer = Tokenizer::from_directory(model);
                            const auto annotator = default_annotator(root, log);
                            const auto inputs = load_task_inputs(root, t, tokenizer, pre.config(),
                                                                 {.max_examples = analysis, .seed = 1, .annotator = &annotator});
                            const auto r = run_linguistic_features(pre, &ft, inputs, {.pretrained_model = model.string(),
                                                                                      .finetuned_model = fine_tuned(t, 1).string()});
                            r.save(dir);
                            write_linguistic_feature_figures(r, dir);
                          }});
    plan.units.push_back({.id = "relations/" + name, .cost = analysis * layers / 400.0 + 2, .run = [=, &root](const fs::path& dir) {
                            const auto ft = Transformer<float>::load(fine_tuned(t, 1));
                            const auto tokenizer = Tokenizer::from_directory(model);
                            const auto annotator = default_annotator(root, log);
                            const auto inputs = load_task_inputs(root, t, tokenizer, ft.config(),
                                                                 {.max_examples = analysis, .seed = 1, .annotator = &annotator});
                            const auto linked = ud_verb_subject_inputs(root, tokenizer, ft.config(), {.max_sentences = ud, .seed = 1});
                            const auto r = run_token_relations(ft, inputs, {.model = fine_tuned(t, 1).string()}, &linked);
                            r.save(dir);
                            write_token_relation_figures(r, dir);
                          }});
    for (int seed = 1; seed <= run.seeds; ++seed)
      plan.units.push_back({.id = "disable/" + name + "/seed-" + std::to_string(seed),
                            .cost = eval_cost * (layers * heads + layers) * 0.6 + 1, .run = [=, &root](const fs::path& dir) {
                              const auto ft = Transformer<float>::load(fine_tuned(t, seed));
                              const auto tokenizer = Tokenizer::from_directory(model);
                              // Table 1's scored examples, so that the baseline is Table 1's score.
                              const auto inputs = load_task_inputs(root, t, tokenizer, ft.config(), {.max_examples = scored, .first = true});
                              disable_heads(ft, inputs, {.seed = std::uint64_t(seed), .show_progress = false,
                                                         .model = fine_tuned(t, seed).string()})
                                  .save(dir);
                            }});
  }
  return plan;
}

}  // namespace darkbert::study
