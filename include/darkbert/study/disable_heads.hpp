#pragma once
/// @file
/// §3.6 "Disabling self-attention heads" (Figures 8 and 9): a fine-tuned classifier scored on the task's
/// evaluation examples with nothing disabled (the baseline), with each single head disabled and with each
/// whole layer disabled. A disabled head attends uniformly to the keys it may see (1/n; 1/(t+1) over the
/// visible prefix of a causal model), the paper's definition. The sweep is analysis/ablation_sweep.hpp's
/// prefix-cached one: an ablation at layer l resumes from the cached hidden states entering l.
///
/// Per fine-tuning seed (DisableHeadsResult): the change of every head and layer against the baseline, the
/// share of heads whose removal helps, the mean effect of disabling a random head, the best and worst
/// head and layer. Across seeds (DisableHeadsAggregate): the mean change per head and layer with its sd,
/// those shares and effects as mean ± sd, the best and worst head and layer by mean change with their
/// spread, and each seed's largest single-head gain (the paper: from 0.1 points on STS-B to 1.2 on MRPC).
///
/// @code
/// namespace study = darkbert::study;
/// auto inputs = study::load_task_inputs(root, darkbert::GlueTask::rte, tokenizer, model.config(),
///                                       {.max_examples = 500, .seed = 1});
/// auto one = study::disable_heads(model, inputs, {.seed = 1});      // one fine-tuned model
/// one.save(out / "RTE" / "seed-1");
/// auto across = study::aggregate_disable_heads(out / "RTE");        // every seed-<k> folder there
/// across.save(out / "RTE");                                          // tables + Figures 8 and 9
/// @endcode

#include <algorithm>   // std::max_element
#include <cmath>       // std::isnan
#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <limits>      // std::numeric_limits
#include <optional>    // std::optional
#include <utility>     // std::pair
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>  // nlohmann::json

#include "darkbert/analysis/ablation_sweep.hpp"  // AblationSweep, SweepResult
#include "darkbert/analysis/predictions.hpp"     // glue_metric_function
#include "darkbert/analysis/results.hpp"         // HeadMatrix, write_table
#include "darkbert/core/atomic_file.hpp"         // write_file_atomically
#include "darkbert/core/error.hpp"               // darkbert::require, darkbert::fail
#include "darkbert/hooks/masking_policy.hpp"     // uniform_policy, zero_policy
#include "darkbert/io/json.hpp"                  // read_json_file
#include "darkbert/study/across_seeds.hpp"       // mean_sd, table_mean_sd, seed_dirs
#include "darkbert/study/task_inputs.hpp"        // TaskInputs
#include "darkbert/train/labelled_texts.hpp"     // LabelledTexts, evaluation_batches
#include "darkbert/viz/heatmap.hpp"              // write_heatmap

namespace darkbert::study {

/// How the sweep runs and what it records.
struct DisableHeadsOptions {
  std::uint64_t seed = 0;            ///< the fine-tuning seed of the model (its label across seeds)
  std::string policy = "uniform";    ///< how a disabled head attends: "uniform" (the paper) or "zero"
  std::optional<GlueMetric> metric;  ///< the score (default: the task's first GLUE metric)
  std::size_t batch_size = 16;       ///< examples per forward pass
  bool show_progress = false;        ///< a progress bar on stderr
  bool naive_check = false;          ///< also run the sweep without the prefix cache and compare the scores
  std::string model;                 ///< where the model came from (recorded as given)
  /// Only ablations [first, second) of the list (every head layer-major, then every layer); the others are
  /// NaN. A part of a sweep split over processes (study/sweep_shards.hpp).
  std::optional<std::pair<std::size_t, std::size_t>> ablations;
};

/// Throws unless `model` has a sequence classifier with the outputs `task` needs; `where` names the model.
template <class T>
void require_task_classifier(const Transformer<T>& model, GlueTask task, const std::string& where) {
  const auto& info = glue_task_info(task);
  const auto& classifier = model.params().task_heads.classifier;
  if (!classifier)
    fail(where, ": the model has no sequence classification head (", model.config().architecture,
         "); disabling heads needs a model fine-tuned on ", info.name);
  const Index outputs = classifier->out.out();
  const Index expected = info.regression ? 1 : static_cast<Index>(info.labels.size());
  if (outputs != expected)
    fail(where, ": the classifier has ", outputs, " outputs but ", info.name, " needs ", expected,
         info.regression ? " (regression)" : " labels");
}

/// The masking policy named "uniform" or "zero".
template <class T>
MaskingPolicy<T> disabling_policy(const std::string& name) {
  if (name == "uniform") return uniform_policy<T>();
  if (name == "zero") return zero_policy<T>();
  fail("unknown disabling policy '", name, "' (expected uniform or zero)");
}

/// §3.6 on one task for one fine-tuned model.
struct DisableHeadsResult {
  std::string task;        ///< GLUE name
  std::string metric;      ///< the score ("accuracy", "pearson", ...)
  std::string policy;      ///< "uniform" or "zero"
  std::string model;       ///< the model (as given)
  std::string provenance;  ///< which evaluation examples, in one sentence
  std::uint64_t seed = 0;  ///< fine-tuning seed
  std::size_t examples = 0;  ///< examples scored
  bool causal = false;     ///< a causal model
  double baseline = std::numeric_limits<double>::quiet_NaN();  ///< metric with nothing disabled
  HeadMatrix<double> head_scores;  ///< [layers, heads] metric with that head disabled
  Table<double> layer_scores;      ///< [layers, 1] metric with that whole layer disabled
  double seconds = 0;              ///< wall time of the prefix-cached sweep
  long block_evaluations = 0;      ///< transformer blocks it ran
  std::optional<double> naive_seconds;        ///< wall time of the sweep without the cache (naive_check)
  long naive_block_evaluations = 0;           ///< transformer blocks the naive sweep ran (naive_check)
  std::optional<bool> naive_identical;        ///< whether both sweeps gave identical scores (naive_check)

  /// Number of layers.
  Index layers() const { return head_scores.rows(); }
  /// Heads per layer.
  Index heads() const { return head_scores.cols(); }
  /// [layers, heads] score with the head disabled minus the baseline (> 0: disabling it helps).
  HeadMatrix<double> head_change() const {
    auto m = head_scores;
    m.name = "head_change";
    for (Index l = 0; l < layers(); ++l)
      for (Index h = 0; h < heads(); ++h) m(l, h) -= baseline;
    return m;
  }
  /// [layers] score with the layer disabled minus the baseline.
  std::vector<double> layer_change() const {
    std::vector<double> v;
    for (Index l = 0; l < layers(); ++l) v.push_back(layer_scores(l, 0) - baseline);
    return v;
  }
  /// Share of heads whose removal raises the score (strictly).
  double share_helping() const {
    std::size_t helping = 0;
    for (Index l = 0; l < layers(); ++l)
      for (Index h = 0; h < heads(); ++h) helping += head_scores(l, h) > baseline;
    return static_cast<double>(helping) / static_cast<double>(layers() * heads());
  }
  /// Expected change when one head drawn uniformly at random is disabled: the mean change over heads.
  double random_head_effect() const {
    double sum = 0;
    for (Index l = 0; l < layers(); ++l)
      for (Index h = 0; h < heads(); ++h) sum += head_scores(l, h) - baseline;
    return sum / static_cast<double>(layers() * heads());
  }

  /// The numbers a report states (baseline, best and worst head and layer, shares, timings).
  nlohmann::json summary() const;
  /// Writes head_scores and layer_scores (CSV, JSON, .npy) and disable_heads.json into `dir`.
  void save(const std::filesystem::path& dir) const;
  /// Reads what save wrote; errors name the file.
  static DisableHeadsResult load(const std::filesystem::path& dir);
};

/// §3.6 on labelled texts: the metric of `model` with nothing, each head and each layer disabled.
/// `texts` carries the labels; `pad_id` is the tokenizer's padding id; `provenance` says where the texts
/// came from. `darkbert sweep` calls this with its own data slice.
template <class T>
DisableHeadsResult disable_heads(const Transformer<T>& model, GlueTask task, const LabelledTexts& texts, int pad_id,
                                 const std::string& provenance, const DisableHeadsOptions& options = {}) {
  const auto& info = glue_task_info(task);
  require_task_classifier(model, task, options.model.empty() ? std::string("disable_heads") : options.model);
  require(texts.size() > 0, info.name, ": no examples to score");
  require(options.batch_size > 0, "disable_heads: batch size must be positive");
  const GlueMetric metric = options.metric.value_or(info.metrics.front());
  // Batches of like length (the metrics do not depend on the examples' order); labels in the same order.
  EvaluationBatches eval = evaluation_batches(texts, options.batch_size, pad_id, token_types_for(model.config()));
  std::vector<double> labels(texts.size());
  for (std::size_t r = 0; r < labels.size(); ++r) labels[r] = texts.labels[eval.order[r]];
  AblationSweep<T> sweep(model, std::move(eval.batches), std::move(labels), glue_metric_function(metric),
                         disabling_policy<T>(options.policy));
  sweep.set_show_progress(options.show_progress);
  if (options.ablations) sweep.set_ablation_range(options.ablations->first, options.ablations->second);
  const SweepResult r = sweep.run();
  DisableHeadsResult out;
  out.task = std::string(info.name);
  out.metric = std::string(to_string(metric));
  out.policy = options.policy;
  out.model = options.model;
  out.provenance = provenance;
  out.seed = options.seed;
  out.examples = texts.size();
  out.causal = model.config().causal;
  out.baseline = r.baseline;
  out.head_scores = make_head_matrix<double>("head_scores", r.head_scores.rows(), r.head_scores.cols());
  for (Index l = 0; l < r.head_scores.rows(); ++l)
    for (Index h = 0; h < r.head_scores.cols(); ++h) out.head_scores(l, h) = r.head_scores(l, h);
  out.layer_scores = make_table<double>("layer_scores", "layer",
                                        darkbert::detail::index_names(static_cast<Index>(r.layer_scores.size())),
                                        "metric", {out.metric});
  for (std::size_t l = 0; l < r.layer_scores.size(); ++l) out.layer_scores(static_cast<Index>(l), 0) = r.layer_scores[l];
  out.head_scores.examples = out.layer_scores.examples = texts.size();
  out.seconds = r.seconds;
  out.block_evaluations = r.block_evaluations;
  if (options.naive_check) {
    const SweepResult naive = sweep.run_naive();
    out.naive_seconds = naive.seconds;
    out.naive_block_evaluations = naive.block_evaluations;
    out.naive_identical =
        naive.baseline == r.baseline && naive.head_scores == r.head_scores && naive.layer_scores == r.layer_scores;
  }
  return out;
}

/// §3.6 on a task's evaluation examples (study/task_inputs.hpp), the data every section shares.
template <class T>
DisableHeadsResult disable_heads(const Transformer<T>& model, const TaskInputs& inputs,
                                 const DisableHeadsOptions& options = {}) {
  return disable_heads(model, inputs.task, inputs.texts, inputs.pad_id, inputs.provenance, options);
}

namespace detail {

struct HeadExtreme {
  int layer = 0, head = 0;
  double value = 0;
};

// The largest (best = true) or smallest value of a [layers, heads] table; ties keep the first in
// layer-major order.
inline HeadExtreme extreme_head(const Table<double>& m, bool best) {
  HeadExtreme e{0, 0, m(0, 0)};
  for (Index l = 0; l < m.rows(); ++l)
    for (Index h = 0; h < m.cols(); ++h)
      if (best ? m(l, h) > e.value : m(l, h) < e.value) e = {static_cast<int>(l), static_cast<int>(h), m(l, h)};
  return e;
}

inline int extreme_index(const std::vector<double>& v, bool best) {
  std::size_t k = 0;
  for (std::size_t i = 1; i < v.size(); ++i)
    if (best ? v[i] > v[k] : v[i] < v[k]) k = i;
  return static_cast<int>(k);
}

}  // namespace detail

inline nlohmann::json DisableHeadsResult::summary() const {
  using darkbert::detail::json_number;
  const auto change = head_change();
  const auto best = detail::extreme_head(change, true), worst = detail::extreme_head(change, false);
  const auto layers_changed = layer_change();
  const int best_layer = detail::extreme_index(layers_changed, true);
  const int worst_layer = detail::extreme_index(layers_changed, false);
  nlohmann::json j = {
      {"task", task}, {"metric", metric}, {"policy", policy}, {"model", model}, {"data", provenance}, {"seed", seed},
      {"examples", examples}, {"causal", causal}, {"layers", layers()}, {"heads", heads()},
      {"baseline", json_number(baseline)},
      {"best_head", {{"layer", best.layer}, {"head", best.head}, {"change", json_number(best.value)}}},
      {"worst_head", {{"layer", worst.layer}, {"head", worst.head}, {"change", json_number(worst.value)}}},
      {"best_layer", {{"layer", best_layer}, {"change", json_number(layers_changed[static_cast<std::size_t>(best_layer)])}}},
      {"worst_layer", {{"layer", worst_layer}, {"change", json_number(layers_changed[static_cast<std::size_t>(worst_layer)])}}},
      {"layer_change", detail::numbers_json(layers_changed)},
      {"share_of_heads_helping", json_number(share_helping())},
      {"random_head_effect", json_number(random_head_effect())},
      {"prefix_cached_seconds", seconds}, {"prefix_cached_block_evaluations", block_evaluations}};
  if (naive_seconds) {
    j["naive_seconds"] = *naive_seconds;
    j["naive_block_evaluations"] = naive_block_evaluations;
    j["speedup"] = *naive_seconds / seconds;
  }
  if (naive_identical) j["naive_scores_identical"] = *naive_identical;
  return j;
}

inline void DisableHeadsResult::save(const std::filesystem::path& dir) const {
  write_table(head_scores, dir);
  write_table(layer_scores, dir);
  write_file_atomically(dir / "disable_heads.json", summary().dump(2) + "\n");
}

inline DisableHeadsResult DisableHeadsResult::load(const std::filesystem::path& dir) {
  const auto source = (dir / "disable_heads.json").string();
  const auto j = read_json_file(dir / "disable_heads.json");
  DisableHeadsResult r;
  r.task = detail::string_field(j, "task", source);
  r.metric = detail::string_field(j, "metric", source);
  r.policy = detail::string_field(j, "policy", source);
  r.model = detail::string_field(j, "model", source);
  r.provenance = detail::string_field(j, "data", source);
  r.seed = detail::unsigned_field(j, "seed", source);
  r.examples = detail::unsigned_field(j, "examples", source);
  r.causal = detail::bool_field(j, "causal", source);
  r.baseline = detail::number_field(j, "baseline", source);
  r.seconds = detail::number_field(j, "prefix_cached_seconds", source);
  r.block_evaluations = static_cast<long>(detail::unsigned_field(j, "prefix_cached_block_evaluations", source));
  if (j.contains("naive_seconds")) {
    r.naive_seconds = detail::number_field(j, "naive_seconds", source);
    r.naive_block_evaluations = static_cast<long>(detail::unsigned_field(j, "naive_block_evaluations", source));
  }
  if (j.contains("naive_scores_identical")) r.naive_identical = detail::bool_field(j, "naive_scores_identical", source);
  const auto layers = static_cast<Index>(detail::unsigned_field(j, "layers", source));
  const auto heads = static_cast<Index>(detail::unsigned_field(j, "heads", source));
  r.head_scores = detail::read_table_file(dir, "head_scores", layers, heads);
  r.layer_scores = detail::read_table_file(dir, "layer_scores", layers, 1);
  return r;
}

/// One head or layer and its change across seeds.
struct AblationExtreme {
  int layer = 0;          ///< from 0
  int head = all_heads;   ///< from 0; all_heads for a whole layer
  MeanSd change;          ///< mean and sd over seeds of (score − baseline)
  std::vector<double> per_seed;  ///< the change in each seed, in seed order

  /// {"layer", "head" (absent for a layer), "change": {mean, sd, n}, "per_seed"}.
  nlohmann::json to_json() const {
    nlohmann::json j = {{"layer", layer}, {"change", change.to_json()}, {"per_seed", detail::numbers_json(per_seed)}};
    if (head != all_heads) j["head"] = head;
    return j;
  }
};

/// §3.6 on one task over several fine-tuning seeds.
struct DisableHeadsAggregate {
  std::string task;                   ///< GLUE name
  std::string metric;                 ///< the score
  std::string policy;                 ///< how heads were disabled
  std::vector<std::uint64_t> seeds;   ///< one per fine-tuned model
  std::vector<double> baselines;      ///< each seed's baseline
  std::vector<std::size_t> examples;  ///< each seed's examples
  bool causal = false;                ///< causal models
  HeadMatrix<double> head_change_mean;  ///< [layers, heads] mean change (Figure 8)
  HeadMatrix<double> head_change_sd;    ///< [layers, heads] its sd over seeds
  std::vector<HeadMatrix<double>> head_change_per_seed;  ///< [layers, heads] per seed, in seed order
  Table<double> layer_change;           ///< [layers, seeds + mean + sd] (Figure 9)
  std::vector<double> share_helping;    ///< per seed: share of heads whose removal helps
  std::vector<double> random_head_effect;  ///< per seed: mean change of disabling a random head
  std::vector<double> best_head_gain;      ///< per seed: the largest single-head change

  /// Number of layers.
  Index layers() const { return head_change_mean.rows(); }
  /// Heads per layer.
  Index heads() const { return head_change_mean.cols(); }
  /// The head whose removal helps most (best = true) or hurts most, by mean change over seeds.
  AblationExtreme head_extreme(bool best) const;
  /// The layer whose removal helps most (best = true) or hurts most, by mean change over seeds.
  AblationExtreme layer_extreme(bool best) const;

  /// The numbers a report states, also in percentage points where the paper gives them.
  nlohmann::json summary() const;
  /// Writes head_change_mean / head_change_sd / head_change_seed_<k> / layer_change tables,
  /// disable_heads.json and Figures 8 and 9 (head_change.{png,svg}, layer_change.{png,svg}) into `dir`.
  void save(const std::filesystem::path& dir) const;
  /// Reads the tables and JSON that save wrote.
  static DisableHeadsAggregate load(const std::filesystem::path& dir);
};

/// The aggregate over per-seed sweeps of one task. Throws when the list is empty or mixes tasks, metrics,
/// policies or shapes.
inline DisableHeadsAggregate aggregate_disable_heads(const std::vector<DisableHeadsResult>& per_seed) {
  require(!per_seed.empty(), "disable heads: no per-seed results to aggregate");
  DisableHeadsAggregate a;
  const auto& first = per_seed.front();
  a.task = first.task, a.metric = first.metric, a.policy = first.policy, a.causal = first.causal;
  std::vector<Table<double>> changes;
  std::vector<std::vector<double>> columns;
  for (const auto& r : per_seed) {
    require(r.task == a.task && r.metric == a.metric && r.policy == a.policy, "disable heads: cannot aggregate ",
            r.task, " ", r.metric, " (", r.policy, ") with ", a.task, " ", a.metric, " (", a.policy, ")");
    require(r.examples == first.examples, "disable heads: ", a.task, " seed ", r.seed, " was scored on ", r.examples,
            " examples, seed ", first.seed, " on ", first.examples, "; scores on different examples do not average");
    a.seeds.push_back(r.seed);
    a.baselines.push_back(r.baseline);
    a.examples.push_back(r.examples);
    changes.push_back(r.head_change());
    columns.push_back(r.layer_change());
    a.share_helping.push_back(r.share_helping());
    a.random_head_effect.push_back(r.random_head_effect());
    a.best_head_gain.push_back(detail::extreme_head(changes.back(), true).value);
  }
  for (std::size_t i = 0; i < a.seeds.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      require(a.seeds[i] != a.seeds[k], "disable heads: seed ", a.seeds[i], " appears twice among the results of ", a.task);
  for (std::size_t s = 0; s < changes.size(); ++s) {
    a.head_change_per_seed.push_back(changes[s]);
    a.head_change_per_seed.back().name = "head_change_seed_" + std::to_string(a.seeds[s]);
  }
  auto stats = table_mean_sd(changes, "head_change");
  a.head_change_mean = std::move(stats.mean);
  a.head_change_sd = std::move(stats.sd);
  const std::size_t layers = columns.front().size();
  for (const auto& c : columns) require(c.size() == layers, "disable heads: results differ in their number of layers");
  auto names = detail::seed_columns(a.seeds);
  names.push_back("mean");
  names.push_back("sd");
  a.layer_change = make_table<double>("layer_change", "layer", darkbert::detail::index_names(static_cast<Index>(layers)),
                                      "value", names);
  for (std::size_t l = 0; l < layers; ++l) {
    std::vector<double> v;
    for (std::size_t s = 0; s < columns.size(); ++s) {
      v.push_back(columns[s][l]);
      a.layer_change(static_cast<Index>(l), static_cast<Index>(s)) = columns[s][l];
    }
    const MeanSd m = mean_sd(v);
    a.layer_change(static_cast<Index>(l), static_cast<Index>(columns.size())) = m.mean;
    a.layer_change(static_cast<Index>(l), static_cast<Index>(columns.size()) + 1) = m.sd;
  }
  return a;
}

/// Loads every `seed-<k>` folder of `task_dir` (DisableHeadsResult::save) and aggregates them.
inline DisableHeadsAggregate aggregate_disable_heads(const std::filesystem::path& task_dir) {
  std::vector<DisableHeadsResult> per_seed;
  for (const auto& dir : seed_dirs(task_dir)) per_seed.push_back(DisableHeadsResult::load(dir));
  require(!per_seed.empty(), task_dir.string(), ": no seed-<k> folders with disable-heads results");
  return aggregate_disable_heads(per_seed);
}

inline AblationExtreme DisableHeadsAggregate::head_extreme(bool best) const {
  const auto e = detail::extreme_head(head_change_mean, best);
  AblationExtreme out;
  out.layer = e.layer;
  out.head = e.head;
  out.change.mean = head_change_mean(e.layer, e.head);
  out.change.sd = head_change_sd(e.layer, e.head);
  out.change.n = seeds.size();
  for (const auto& m : head_change_per_seed) out.per_seed.push_back(m(e.layer, e.head));
  return out;
}

inline AblationExtreme DisableHeadsAggregate::layer_extreme(bool best) const {
  const auto n = static_cast<Index>(seeds.size());
  std::vector<double> mean;
  for (Index l = 0; l < layer_change.rows(); ++l) mean.push_back(layer_change(l, n));
  const int l = detail::extreme_index(mean, best);
  AblationExtreme out;
  out.layer = l;
  out.change.mean = layer_change(l, n);
  out.change.sd = layer_change(l, n + 1);
  out.change.n = seeds.size();
  for (Index s = 0; s < n; ++s) out.per_seed.push_back(layer_change(l, s));
  return out;
}

inline nlohmann::json DisableHeadsAggregate::summary() const {
  auto percent = [](const MeanSd& s) {
    return nlohmann::json{{"mean", darkbert::detail::json_number(100 * s.mean)},
                          {"sd", darkbert::detail::json_number(100 * s.sd)}, {"n", s.n}};
  };
  const auto best_head = head_extreme(true), worst_head = head_extreme(false);
  const auto best_layer = layer_extreme(true), worst_layer = layer_extreme(false);
  std::vector<double> layer_mean;
  for (Index l = 0; l < layer_change.rows(); ++l) layer_mean.push_back(layer_change(l, static_cast<Index>(seeds.size())));
  return {{"task", task}, {"metric", metric}, {"policy", policy}, {"seeds", seeds}, {"examples", examples},
          {"causal", causal}, {"layers", layers()}, {"heads", heads()},
          {"baselines", detail::numbers_json(baselines)}, {"baseline", mean_sd(baselines).to_json()},
          {"share_of_heads_helping", mean_sd(share_helping).to_json()},
          {"share_of_heads_helping_per_seed", detail::numbers_json(share_helping)},
          {"random_head_effect", mean_sd(random_head_effect).to_json()},
          {"random_head_effect_points", percent(mean_sd(random_head_effect))},
          {"random_head_effect_per_seed", detail::numbers_json(random_head_effect)},
          {"best_single_head_gain", mean_sd(best_head_gain).to_json()},
          {"best_single_head_gain_points", percent(mean_sd(best_head_gain))},
          {"best_single_head_gain_per_seed", detail::numbers_json(best_head_gain)},
          {"best_head", best_head.to_json()}, {"worst_head", worst_head.to_json()},
          {"best_layer", best_layer.to_json()}, {"worst_layer", worst_layer.to_json()},
          {"layer_change_mean", detail::numbers_json(layer_mean)}};
}

/// Figure 8 for one task: the mean change of every head (layers down, heads across, counted from 0) as
/// `<stem>.png` and `<stem>.svg`, diverging colours centred on 0 (red: disabling helps).
inline void write_head_change_figure(const std::filesystem::path& stem, const Table<double>& change,
                                     const std::string& title, const std::string& metric) {
  HeatmapOptions o;
  o.title = title;
  o.x = {"head", {}, 0};
  o.y = {"layer", {}, 0};
  o.value_label = metric + " with the head disabled - baseline";
  o.map = Colormap::coolwarm();
  o.precision = 3;
  detail::write_png_and_svg(stem, detail::matrix_of(change), o);
}

inline void DisableHeadsAggregate::save(const std::filesystem::path& dir) const {
  write_table(head_change_mean, dir);
  write_table(head_change_sd, dir);
  for (const auto& m : head_change_per_seed) write_table(m, dir);
  write_table(layer_change, dir);
  nlohmann::json j = summary();
  j["best_head_gain"] = detail::numbers_json(best_head_gain);
  write_file_atomically(dir / "disable_heads.json", j.dump(2) + "\n");
  const std::string over = " (mean over " + std::to_string(seeds.size()) + (seeds.size() == 1 ? " seed)" : " seeds)");
  write_head_change_figure(dir / "head_change", head_change_mean, task + ": one head disabled" + over + " (Figure 8)",
                           metric);
  // Figure 9: each seed's change and their mean (the sd column is not a change, so it stays in the tables).
  const auto columns = static_cast<Index>(seeds.size()) + 1;
  const Matrix<double> shown = detail::matrix_of(layer_change).leftCols(columns);
  HeatmapOptions o;
  o.title = task + ": one layer disabled (Figure 9)";
  o.x = {"", std::vector<std::string>(layer_change.col_names.begin(), layer_change.col_names.begin() + columns), 0};
  o.y = {"layer", {}, 0};
  o.value_label = metric + " with the layer disabled - baseline";
  o.map = Colormap::coolwarm();
  o.precision = 3;
  detail::write_png_and_svg(dir / "layer_change", shown, o);
}

inline DisableHeadsAggregate DisableHeadsAggregate::load(const std::filesystem::path& dir) {
  const auto source = (dir / "disable_heads.json").string();
  const auto j = read_json_file(dir / "disable_heads.json");
  DisableHeadsAggregate a;
  a.task = detail::string_field(j, "task", source);
  a.metric = detail::string_field(j, "metric", source);
  a.policy = detail::string_field(j, "policy", source);
  a.causal = detail::bool_field(j, "causal", source);
  for (double s : detail::numbers_field(j, "seeds", source)) a.seeds.push_back(static_cast<std::uint64_t>(s));
  for (double e : detail::numbers_field(j, "examples", source)) a.examples.push_back(static_cast<std::size_t>(e));
  a.baselines = detail::numbers_field(j, "baselines", source);
  a.share_helping = detail::numbers_field(j, "share_of_heads_helping_per_seed", source);
  a.random_head_effect = detail::numbers_field(j, "random_head_effect_per_seed", source);
  a.best_head_gain = detail::numbers_field(j, "best_head_gain", source);
  const std::size_t n = a.seeds.size();
  require(a.examples.size() == n && a.baselines.size() == n && a.share_helping.size() == n &&
              a.random_head_effect.size() == n && a.best_head_gain.size() == n,
          source, ": the per-seed lists do not all have ", n, " entries");
  const auto layers = static_cast<Index>(detail::unsigned_field(j, "layers", source));
  const auto heads = static_cast<Index>(detail::unsigned_field(j, "heads", source));
  a.head_change_mean = detail::read_table_file(dir, "head_change_mean", layers, heads);
  a.head_change_sd = detail::read_table_file(dir, "head_change_sd", layers, heads);
  for (auto seed : a.seeds)
    a.head_change_per_seed.push_back(detail::read_table_file(dir, "head_change_seed_" + std::to_string(seed), layers, heads));
  a.layer_change = detail::read_table_file(dir, "layer_change", layers, static_cast<Index>(n) + 2);
  return a;
}

/// Every task's mean layer change side by side (layers down, tasks across: Figure 9 over tasks) as
/// layer_change_tasks.png and .svg in `dir`, and every task's mean head grid side by side (columns
/// "TASK:0", "1", ... per head) as head_change_tasks.png and .svg.
inline void write_disable_heads_overview(const std::filesystem::path& dir, const std::vector<DisableHeadsAggregate>& tasks) {
  require(!tasks.empty(), "disable heads overview: no tasks");
  const Index layers = tasks.front().layers(), heads = tasks.front().heads();
  for (const auto& t : tasks)
    require(t.layers() == layers && t.heads() == heads, "disable heads overview: ", t.task, " is ", t.layers(), " x ",
            t.heads(), " but ", tasks.front().task, " is ", layers, " x ", heads);
  const auto count = static_cast<Index>(tasks.size());
  Matrix<double> grid(layers, heads * count), change(layers, count);
  std::vector<std::string> columns, names;
  for (Index t = 0; t < count; ++t) {
    const auto& a = tasks[static_cast<std::size_t>(t)];
    names.push_back(a.task + " (" + a.metric + ")");
    for (Index h = 0; h < heads; ++h) columns.push_back(h == 0 ? a.task + ":0" : std::to_string(h));
    for (Index l = 0; l < layers; ++l) {
      for (Index h = 0; h < heads; ++h) grid(l, t * heads + h) = a.head_change_mean(l, h);
      change(l, t) = a.layer_change(l, static_cast<Index>(a.seeds.size()));
    }
  }
  HeatmapOptions o;
  o.title = "Change in the task score with one head disabled, per task (Figure 8)";
  o.x = {"task : head", columns, 0};
  o.y = {"layer", {}, 0};
  o.value_label = "score - baseline";
  o.map = Colormap::coolwarm();
  o.annotate = CellValues::hide;
  detail::write_png_and_svg(dir / "head_change_tasks", grid, o);
  HeatmapOptions c;
  c.title = "Change in the task score with one layer disabled, per task (Figure 9)";
  c.x = {"task", names, 0};
  c.y = {"layer", {}, 0};
  c.value_label = "score - baseline";
  c.map = Colormap::coolwarm();
  c.precision = 3;
  detail::write_png_and_svg(dir / "layer_change_tasks", change, c);
}

}  // namespace darkbert::study
