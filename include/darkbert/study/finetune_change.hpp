#pragma once
/// @file
/// §3.3 "Change in self-attention patterns after fine-tuning" (Figure 5): for every head, the cosine
/// similarity between the flattened attention map of the pretrained model and that of the fine-tuned model
/// on the same example, averaged over the task's evaluation examples; which layers change most (mean of
/// 1 − cosine over a layer's heads, ranked; the paper: the last two layers, on every task but QQP); and the
/// same over several fine-tuning seeds (mean and sd per head and per layer).
///
/// @code
/// namespace study = darkbert::study;
/// auto inputs = study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, pretrained.config(),
///                                       {.max_examples = 200, .seed = 1});
/// std::vector<study::FineTuneChange> seeds;
/// for (auto& [seed, finetuned] : models)                       // one fine-tuned model per seed
///   seeds.push_back(study::measure_fine_tune_change(pretrained, finetuned, inputs, {.seed = seed}));
/// auto across = study::aggregate_fine_tune_change(seeds);       // cosine_mean / cosine_sd [layers, heads]
/// across.save(out / "MRPC");                                    // tables, figures, fine_tune_change.json
/// across.layers_by_change();                                    // most changed layer first
/// @endcode
///
/// Causal models (GPT-2) are measured on the visible lower triangle: the structural zeros above the
/// diagonal add nothing to a dot product or a norm.

#include <algorithm>   // std::sort, std::stable_sort
#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <numeric>     // std::iota
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>  // nlohmann::json

#include "darkbert/analysis/cosine_similarity.hpp"  // CosineSimilarityAccumulator
#include "darkbert/analysis/results.hpp"            // HeadMatrix, write_table
#include "darkbert/core/atomic_file.hpp"            // write_file_atomically
#include "darkbert/core/error.hpp"                  // darkbert::require, darkbert::fail
#include "darkbert/hooks/masking_policy.hpp"        // MaskingPolicies
#include "darkbert/io/json.hpp"                     // read_json_file
#include "darkbert/study/across_seeds.hpp"          // mean_sd, table_mean_sd
#include "darkbert/study/task_inputs.hpp"           // TaskInputs, for_each_attention_pair
#include "darkbert/viz/heatmap.hpp"                 // write_heatmap

namespace darkbert::study {

/// What a measurement records besides the numbers.
struct FineTuneChangeOptions {
  std::uint64_t seed = 0;        ///< the fine-tuning seed of the fine-tuned model (its label across seeds)
  std::string pretrained;        ///< where the pretrained model came from (recorded as given)
  std::string finetuned;         ///< where the fine-tuned model came from
  std::size_t batch_size = 16;   ///< examples per forward pass
};

/// §3.3 on one task for one fine-tuned model: per-head mean cosine similarity of its attention maps to the
/// pretrained model's.
struct FineTuneChange {
  std::string task;        ///< GLUE name
  std::uint64_t seed = 0;  ///< fine-tuning seed
  std::string pretrained;  ///< the pretrained model (as given)
  std::string finetuned;   ///< the fine-tuned model (as given)
  std::string provenance;  ///< which evaluation examples, in one sentence
  bool causal = false;     ///< the models attend to earlier tokens only
  HeadMatrix<double> cosine;  ///< [layers, heads] mean cosine similarity; `examples` = how many examples

  /// Number of layers.
  Index layers() const { return cosine.rows(); }
  /// Heads per layer.
  Index heads() const { return cosine.cols(); }
  /// Examples averaged over.
  std::size_t examples() const { return cosine.examples; }

  /// [layers] mean over each layer's heads of 1 − cosine (0 = unchanged).
  std::vector<double> layer_change() const {
    std::vector<double> out;
    for (Index l = 0; l < layers(); ++l) {
      double sum = 0;
      for (Index h = 0; h < heads(); ++h) sum += 1.0 - cosine(l, h);
      out.push_back(sum / static_cast<double>(heads()));
    }
    return out;
  }

  /// Layers (from 0), the most changed first.
  std::vector<int> layers_by_change() const;

  /// Folds in a measurement of the same task, seed and shape on other examples (e.g. another machine's
  /// share): the mean over the union, each example weighing the same.
  void merge(const FineTuneChange& other) {
    require(other.task == task && other.seed == seed, "fine-tuning change: cannot merge ", other.task, " seed ",
            other.seed, " into ", task, " seed ", seed);
    require(other.layers() == layers() && other.heads() == heads(), "fine-tuning change: cannot merge a ",
            other.layers(), " x ", other.heads(), " result into a ", layers(), " x ", heads(), " one");
    const double a = static_cast<double>(examples()), b = static_cast<double>(other.examples());
    if (a + b == 0) return;
    for (Index l = 0; l < layers(); ++l)
      for (Index h = 0; h < heads(); ++h)
        cosine(l, h) = (a == 0 ? 0.0 : a * cosine(l, h)) / (a + b) + (b == 0 ? 0.0 : b * other.cosine(l, h)) / (a + b);
    cosine.examples += other.examples();
    provenance += "; merged with: " + other.provenance;
  }

  /// The numbers a report states: task, seed, examples, per-layer change, ranking, extremes.
  nlohmann::json summary() const;
  /// Writes cosine.{csv,json,npy} (the per-head matrix), layer_change.{csv,json,npy} and
  /// fine_tune_change.json (every scalar and label) into `dir`.
  void save(const std::filesystem::path& dir) const;
  /// Reads what save wrote; errors name the file.
  static FineTuneChange load(const std::filesystem::path& dir);
};

namespace detail {

// Layers by decreasing change; ties keep the lower layer first.
inline std::vector<int> rank_layers(const std::vector<double>& change) {
  std::vector<int> order(change.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return change[static_cast<std::size_t>(a)] > change[static_cast<std::size_t>(b)];
  });
  return order;
}

// Whether the two most changed layers are the last two (the paper's finding).
inline bool last_two_change_most(const std::vector<int>& ranked) {
  const int n = static_cast<int>(ranked.size());
  if (n < 3) return false;  // with two layers or fewer the question has no content
  const int a = std::max(ranked[0], ranked[1]), b = std::min(ranked[0], ranked[1]);
  return a == n - 1 && b == n - 2;
}

inline Table<double> layer_table(const std::string& name, const std::vector<std::string>& columns,
                                 const std::vector<std::vector<double>>& per_column) {
  auto t = make_table<double>(name, "layer", darkbert::detail::index_names(static_cast<Index>(per_column.front().size())),
                              "", columns);
  t.col_axis = "value";
  for (std::size_t c = 0; c < per_column.size(); ++c)
    for (std::size_t l = 0; l < per_column[c].size(); ++l) t(static_cast<Index>(l), static_cast<Index>(c)) = per_column[c][l];
  return t;
}

}  // namespace detail

inline std::vector<int> FineTuneChange::layers_by_change() const { return detail::rank_layers(layer_change()); }

inline nlohmann::json FineTuneChange::summary() const {
  const auto change = layer_change();
  const auto ranked = layers_by_change();
  Index low_l = 0, low_h = 0;
  double mean = 0;
  for (Index l = 0; l < layers(); ++l)
    for (Index h = 0; h < heads(); ++h) {
      mean += cosine(l, h);
      if (cosine(l, h) < cosine(low_l, low_h)) low_l = l, low_h = h;
    }
  mean /= static_cast<double>(layers() * heads());
  return {{"task", task}, {"seed", seed}, {"examples", examples()}, {"layers", layers()}, {"heads", heads()},
          {"causal", causal}, {"pretrained", pretrained}, {"finetuned", finetuned}, {"data", provenance},
          {"mean_cosine", darkbert::detail::json_number(mean)},
          {"layer_change", detail::numbers_json(change)}, {"layers_by_change", ranked},
          {"last_two_layers_change_most", detail::last_two_change_most(ranked)},
          {"most_changed_head", {{"layer", low_l}, {"head", low_h},
                                 {"cosine", darkbert::detail::json_number(cosine(low_l, low_h))}}}};
}

inline void FineTuneChange::save(const std::filesystem::path& dir) const {
  auto m = cosine;
  m.name = "cosine";
  write_table(m, dir);
  write_table(detail::layer_table("layer_change", {"mean_1_minus_cosine"}, {layer_change()}), dir);
  write_file_atomically(dir / "fine_tune_change.json", summary().dump(2) + "\n");
}

inline FineTuneChange FineTuneChange::load(const std::filesystem::path& dir) {
  const auto source = (dir / "fine_tune_change.json").string();
  const auto j = read_json_file(dir / "fine_tune_change.json");
  FineTuneChange c;
  c.task = detail::string_field(j, "task", source);
  c.seed = detail::unsigned_field(j, "seed", source);
  c.pretrained = detail::string_field(j, "pretrained", source);
  c.finetuned = detail::string_field(j, "finetuned", source);
  c.provenance = detail::string_field(j, "data", source);
  c.causal = detail::bool_field(j, "causal", source);
  const auto layers = static_cast<Index>(detail::unsigned_field(j, "layers", source));
  const auto heads = static_cast<Index>(detail::unsigned_field(j, "heads", source));
  c.cosine = detail::read_table_file(dir, "cosine", layers, heads);
  require(c.cosine.examples == detail::unsigned_field(j, "examples", source), source, ": 'examples' is ",
          j["examples"].dump(), " but cosine.json says ", c.cosine.examples);
  return c;
}

/// §3.3 on one task: runs both models over `inputs` and averages each head's cosine similarity between
/// the pretrained and the fine-tuned map of every example. The models must have the same number of
/// layers and heads (a BertForPreTraining against its BertForSequenceClassification is the usual pair).
/// `finetuned_policies`, when given, act on the fine-tuned model's forward (e.g. to measure how far a
/// head's learned map is from its disabled, uniform version).
template <class T>
FineTuneChange measure_fine_tune_change(const Transformer<T>& pretrained, const Transformer<T>& finetuned,
                                        const TaskInputs& inputs, const FineTuneChangeOptions& options = {},
                                        const MaskingPolicies<T>* finetuned_policies = nullptr) {
  require(inputs.size() > 0, "fine-tuning change: ", glue_task_info(inputs.task).name, " has no examples to compare on");
  require(pretrained.config().causal == finetuned.config().causal,
          "fine-tuning change: one model is causal and the other is not");
  const auto& c = pretrained.config();
  CosineSimilarityAccumulator<T> acc(c.num_layers, c.num_heads, "cosine");
  for_each_attention_pair(
      pretrained, finetuned, inputs, [&](std::size_t, const AttentionView<T>& a, const AttentionView<T>& b) { acc.add(a, b); },
      options.batch_size, finetuned_policies);
  const auto result = acc.result();
  FineTuneChange out;
  out.task = std::string(glue_task_info(inputs.task).name);
  out.seed = options.seed;
  out.pretrained = options.pretrained;
  out.finetuned = options.finetuned;
  out.provenance = inputs.provenance;
  out.causal = c.causal;
  out.cosine = make_head_matrix<double>("cosine", c.num_layers, c.num_heads);
  for (Index l = 0; l < c.num_layers; ++l)
    for (Index h = 0; h < c.num_heads; ++h) out.cosine(l, h) = static_cast<double>(result(l, h));
  out.cosine.examples = acc.examples();
  return out;
}

/// §3.3 on one task over several fine-tuning seeds.
struct FineTuneChangeAggregate {
  std::string task;                  ///< GLUE name
  std::vector<std::uint64_t> seeds;  ///< one per fine-tuned model, in the order given
  std::vector<std::size_t> examples;  ///< examples of each seed's measurement
  bool causal = false;               ///< causal models
  HeadMatrix<double> cosine_mean;    ///< [layers, heads] mean over seeds of the mean cosine
  HeadMatrix<double> cosine_sd;      ///< [layers, heads] sample sd over seeds (NaN with one seed)
  Table<double> layer_change;        ///< [layers, seeds + mean + sd]: mean 1 − cosine per layer

  /// Number of layers.
  Index layers() const { return cosine_mean.rows(); }
  /// Heads per layer.
  Index heads() const { return cosine_mean.cols(); }
  /// [layers] mean over seeds of the layer's change.
  std::vector<double> layer_change_mean() const {
    return column(static_cast<Index>(seeds.size()));
  }
  /// [layers] sd over seeds of the layer's change.
  std::vector<double> layer_change_sd() const { return column(static_cast<Index>(seeds.size()) + 1); }
  /// Layers (from 0), the most changed (on average over seeds) first.
  std::vector<int> layers_by_change() const { return detail::rank_layers(layer_change_mean()); }
  /// Whether the two most changed layers are the last two (the paper's finding; false with < 3 layers).
  bool last_two_change_most() const { return detail::last_two_change_most(layers_by_change()); }

  /// The numbers a report states: per-layer change mean and sd, the ranking, each seed's ranking, whether
  /// the last two layers change most (on the mean and in how many seeds).
  nlohmann::json summary() const;
  /// Writes cosine_mean / cosine_sd / layer_change tables, fine_tune_change.json and the Figure 5 grid
  /// (cosine.png / cosine.svg) into `dir`.
  void save(const std::filesystem::path& dir) const;
  /// Reads the tables and JSON that save wrote.
  static FineTuneChangeAggregate load(const std::filesystem::path& dir);

 private:
  std::vector<double> column(Index c) const {
    std::vector<double> v;
    for (Index l = 0; l < layer_change.rows(); ++l) v.push_back(layer_change(l, c));
    return v;
  }
};

/// The aggregate over per-seed measurements of one task (e.g. loaded from the seed folders of several
/// machines). Throws when the list is empty or mixes tasks or shapes.
inline FineTuneChangeAggregate aggregate_fine_tune_change(const std::vector<FineTuneChange>& per_seed) {
  require(!per_seed.empty(), "fine-tuning change: no per-seed results to aggregate");
  FineTuneChangeAggregate a;
  a.task = per_seed.front().task;
  a.causal = per_seed.front().causal;
  std::vector<Table<double>> grids;
  std::vector<std::vector<double>> columns;
  for (const auto& r : per_seed) {
    require(r.task == a.task, "fine-tuning change: cannot aggregate ", r.task, " with ", a.task);
    require(r.examples() == per_seed.front().examples(), "fine-tuning change: ", a.task, " seed ", r.seed,
            " was measured on ", r.examples(), " examples, seed ", per_seed.front().seed, " on ",
            per_seed.front().examples(), "; measurements on different examples do not average");
    a.seeds.push_back(r.seed);
    a.examples.push_back(r.examples());
    grids.push_back(r.cosine);
    columns.push_back(r.layer_change());
  }
  for (std::size_t i = 0; i < a.seeds.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      require(a.seeds[i] != a.seeds[k], "fine-tuning change: seed ", a.seeds[i], " appears twice among the results of ",
              a.task);
  auto stats = table_mean_sd(grids, "cosine");
  a.cosine_mean = std::move(stats.mean);
  a.cosine_sd = std::move(stats.sd);
  std::vector<double> mean, sd;
  for (std::size_t l = 0; l < columns.front().size(); ++l) {
    std::vector<double> v;
    for (const auto& c : columns) v.push_back(c[l]);
    const MeanSd s = mean_sd(v);
    mean.push_back(s.mean);
    sd.push_back(s.sd);
  }
  auto names = detail::seed_columns(a.seeds);
  names.push_back("mean");
  names.push_back("sd");
  columns.push_back(mean);
  columns.push_back(sd);
  a.layer_change = detail::layer_table("layer_change", names, columns);
  return a;
}

/// Loads every `seed-<k>` folder of `task_dir` (FineTuneChange::save) and aggregates them.
inline FineTuneChangeAggregate aggregate_fine_tune_change(const std::filesystem::path& task_dir) {
  std::vector<FineTuneChange> per_seed;
  for (const auto& dir : seed_dirs(task_dir)) per_seed.push_back(FineTuneChange::load(dir));
  require(!per_seed.empty(), task_dir.string(), ": no seed-<k> folders with fine-tuning change results");
  return aggregate_fine_tune_change(per_seed);
}

/// Figure 5 for one task: the per-head cosine grid (layers down, heads across, counted from 0) as
/// `<stem>.png` and `<stem>.svg`; darker = more changed (viridis, low = dark).
inline void write_fine_tune_change_figure(const std::filesystem::path& stem, const HeadMatrix<double>& cosine,
                                          const std::string& title) {
  HeatmapOptions o;
  o.title = title;
  o.x = {"head", {}, 0};
  o.y = {"layer", {}, 0};
  o.value_label = "cosine similarity, pretrained vs fine-tuned";
  detail::write_png_and_svg(stem, detail::matrix_of(cosine), o);
}

inline nlohmann::json FineTuneChangeAggregate::summary() const {
  nlohmann::json per_seed = nlohmann::json::array();
  int seeds_with_last_two = 0;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const auto ranked = detail::rank_layers(column(static_cast<Index>(s)));
    const bool last_two = detail::last_two_change_most(ranked);
    seeds_with_last_two += last_two;
    per_seed.push_back({{"seed", seeds[s]}, {"examples", examples[s]}, {"layers_by_change", ranked},
                        {"last_two_layers_change_most", last_two}});
  }
  double mean = 0;
  for (Index l = 0; l < layers(); ++l)
    for (Index h = 0; h < heads(); ++h) mean += cosine_mean(l, h);
  mean /= static_cast<double>(layers() * heads());
  const auto ranked = layers_by_change();
  return {{"task", task}, {"seeds", seeds}, {"layers", layers()}, {"heads", heads()}, {"causal", causal},
          {"mean_cosine", darkbert::detail::json_number(mean)},
          {"layer_change_mean", detail::numbers_json(layer_change_mean())},
          {"layer_change_sd", detail::numbers_json(layer_change_sd())},
          {"layers_by_change", ranked},
          {"most_changed_layers", std::vector<int>(ranked.begin(), ranked.begin() + std::min<std::size_t>(2, ranked.size()))},
          {"last_two_layers_change_most", last_two_change_most()},
          {"seeds_where_last_two_change_most", seeds_with_last_two},
          {"per_seed", per_seed}};
}

inline void FineTuneChangeAggregate::save(const std::filesystem::path& dir) const {
  write_table(cosine_mean, dir);
  write_table(cosine_sd, dir);
  write_table(layer_change, dir);
  nlohmann::json j = summary();
  j["examples"] = examples;
  write_file_atomically(dir / "fine_tune_change.json", j.dump(2) + "\n");
  write_fine_tune_change_figure(dir / "cosine", cosine_mean,
                                task + ": attention after fine-tuning vs pretrained (mean over " +
                                    std::to_string(seeds.size()) + (seeds.size() == 1 ? " seed)" : " seeds)"));
}

inline FineTuneChangeAggregate FineTuneChangeAggregate::load(const std::filesystem::path& dir) {
  const auto source = (dir / "fine_tune_change.json").string();
  const auto j = read_json_file(dir / "fine_tune_change.json");
  FineTuneChangeAggregate a;
  a.task = detail::string_field(j, "task", source);
  a.causal = detail::bool_field(j, "causal", source);
  for (const auto& s : detail::numbers_field(j, "seeds", source)) a.seeds.push_back(static_cast<std::uint64_t>(s));
  for (const auto& e : detail::numbers_field(j, "examples", source)) a.examples.push_back(static_cast<std::size_t>(e));
  require(a.examples.size() == a.seeds.size(), source, ": ", a.examples.size(), " example counts for ",
          a.seeds.size(), " seeds");
  const auto layers = static_cast<Index>(detail::unsigned_field(j, "layers", source));
  const auto heads = static_cast<Index>(detail::unsigned_field(j, "heads", source));
  a.cosine_mean = detail::read_table_file(dir, "cosine_mean", layers, heads);
  a.cosine_sd = detail::read_table_file(dir, "cosine_sd", layers, heads);
  a.layer_change = detail::read_table_file(dir, "layer_change", layers, static_cast<Index>(a.seeds.size()) + 2);
  return a;
}

/// The combined Figure 5 over tasks: every task's mean cosine grid side by side (columns "TASK:0", "1",
/// ... per head) with one colour bar, as fine_tune_change_tasks.png and .svg in `dir`; and the per-layer
/// change of every task (layers down, tasks across) as layer_change_tasks.png and .svg.
inline void write_fine_tune_change_overview(const std::filesystem::path& dir,
                                            const std::vector<FineTuneChangeAggregate>& tasks) {
  require(!tasks.empty(), "fine-tuning change overview: no tasks");
  const Index layers = tasks.front().layers(), heads = tasks.front().heads();
  for (const auto& t : tasks)
    require(t.layers() == layers && t.heads() == heads, "fine-tuning change overview: ", t.task, " is ", t.layers(),
            " x ", t.heads(), " but ", tasks.front().task, " is ", layers, " x ", heads);
  const auto count = static_cast<Index>(tasks.size());
  Matrix<double> grid(layers, heads * count), change(layers, count);
  std::vector<std::string> columns, names;
  for (Index t = 0; t < count; ++t) {
    const auto& a = tasks[static_cast<std::size_t>(t)];
    const auto mean = a.layer_change_mean();
    names.push_back(a.task);
    for (Index h = 0; h < heads; ++h) columns.push_back(h == 0 ? a.task + ":0" : std::to_string(h));
    for (Index l = 0; l < layers; ++l) {
      for (Index h = 0; h < heads; ++h) grid(l, t * heads + h) = a.cosine_mean(l, h);
      change(l, t) = mean[static_cast<std::size_t>(l)];
    }
  }
  HeatmapOptions o;
  o.title = "Cosine similarity of attention, pretrained vs fine-tuned, per task (Figure 5)";
  o.x = {"task : head", columns, 0};
  o.y = {"layer", {}, 0};
  o.value_label = "cosine similarity";
  o.annotate = CellValues::hide;
  detail::write_png_and_svg(dir / "fine_tune_change_tasks", grid, o);
  HeatmapOptions c;
  c.title = "Change after fine-tuning per layer (mean 1 - cosine over heads and seeds)";
  c.x = {"task", names, 0};
  c.y = {"layer", {}, 0};
  c.value_label = "1 - cosine similarity";
  c.precision = 3;
  detail::write_png_and_svg(dir / "layer_change_tasks", change, c);
}

}  // namespace darkbert::study
