#pragma once
/// @file
/// §3.1 of "Revealing the Dark Secrets of BERT", the section: every head's attention map on every example
/// of a task is classified as vertical, diagonal, vertical + diagonal, block or heterogeneous (or, with the
/// GPT-2 replication's classes, PatternClassifierOptions::replication(), as diagonal, block, overall or
/// majority in sentence 1, by its rules and its batch-normalised CNN) by two classifiers — the transparent rules (study/pattern_rules.hpp) and the paper's CNN
/// (study/pattern_cnn.hpp, trained on labelled maps: synthetic prototypes by default) — and counted: per
/// head the share of each class and the majority class, per task the class proportions over all
/// (head, example) maps (the paper's Figure 2), the two classifiers' agreement, and a few maps of each
/// class on which both agree (for figures).
///
/// @code
/// auto classifiers = darkbert::study::train_pattern_classifiers(model.config().causal, {.seed = 1});
/// auto result = darkbert::study::attention_patterns(model, inputs, classifiers, {.model = dir.string()});
/// result.save("out/attention_patterns/MRPC");      // CSV, JSON, .npy, PNG and SVG figures
/// auto same = darkbert::study::AttentionPatternResult::load("out/attention_patterns/MRPC");
/// darkbert::study::write_class_proportions_figure("out/figure2.png", {{"MRPC", mrpc.proportions()},
///                                                                     {"SST-2", sst2.proportions()}}, scheme);
/// @endcode
///
/// Files written by AttentionPatternResult::save(dir):
/// @code
/// attention_patterns.json   every number: counts per head and class for both classifiers, their agreement,
///                           the CNN's evaluation, the example maps' index (load() reads this)
/// head_classes.csv          layer,head,class, then share_<class> for each class of the scheme
///                           (share_vertical,share_diagonal,share_vertical_diagonal,share_block,
///                           share_heterogeneous for the paper's; share_diagonal,share_block,share_overall,
///                           share_majority_first_sentence for the replication's) (CNN; layers and heads
///                           from 0; class = the majority, ties to the earlier class)
/// head_classes_rules.csv    the same for the rule classifier
/// class_proportions.{csv,json,npy}  rows cnn, rules; columns the classes: share of all (head, example) maps
/// classifier_agreement.{csv,json,npy}  rows the rules' class, columns the CNN's: counts of maps
/// example_maps.npy          [count, s, s] float32, the kept maps resampled to s x s (attention values)
/// example_maps.csv          index,class,layer,head,example,length
/// pattern_classes.md        the classes with their written definitions, the rules, the CNN's training set
/// class_proportions.{png,svg}      stacked bars: the class proportions of the CNN and of the rules
/// example_maps_<class>.{png,svg}   the kept maps of one class, each scaled to its own maximum
/// @endcode

#include <algorithm>            // std::min, std::max_element
#include <cstddef>              // std::size_t
#include <cstdint>              // std::uint64_t
#include <filesystem>           // std::filesystem::path
#include <nlohmann/json.hpp>    // nlohmann::json
#include <span>                 // std::span
#include <string>               // std::string
#include <utility>              // std::pair
#include <vector>               // std::vector
#include <xtensor/xtensor.hpp>  // xt::xtensor

#include "darkbert/analysis/attention_view.hpp"    // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"           // darkbert::Table, write_table, format_number
#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation
#include "darkbert/core/atomic_file.hpp"           // darkbert::write_file_atomically
#include "darkbert/core/error.hpp"                 // darkbert::require, darkbert::fail
#include "darkbert/io/json.hpp"                    // darkbert::read_json_file
#include "darkbert/io/npy.hpp"                     // darkbert::read_npy, write_npy
#include "darkbert/study/pattern_cnn.hpp"          // PatternCnn, pattern_image, PatternCnnEvaluation
#include "darkbert/study/pattern_prototypes.hpp"   // PrototypeOptions
#include "darkbert/study/pattern_rules.hpp"        // PatternRules, PatternBaseline, PatternScheme
#include "darkbert/study/task_inputs.hpp"          // TaskInputs, for_each_attention
#include "darkbert/viz/attention_grid.hpp"         // write_attention_grid
#include "darkbert/viz/bar_chart.hpp"              // write_stacked_bar_chart

namespace darkbert::study {

// ------------------------------------------------------------------ the two classifiers

/// How the classifiers are built. The defaults are the paper's classes and CNN; replication() gives the GPT-2
/// replication's four classes, their rules and its batch-normalised CNN.
struct PatternClassifierOptions {
  PatternClasses classes = PatternClasses::paper;  ///< which classes, hence which rules and prototypes
  std::filesystem::path labelled;       ///< a labelled-map folder to train and score the CNN on (empty: prototypes)
  std::size_t train_per_class = 300;    ///< prototypes per class to train on
  std::size_t held_out_per_class = 60;  ///< prototypes per class to score on
  double held_out_share = 0.2;          ///< of a labelled folder's maps, per class
  std::uint64_t seed = 1;               ///< every random choice: prototypes, initial weights, training order
  PrototypeOptions prototypes;          ///< lengths of the prototypes (causal is set from the model)
  PatternCnnOptions cnn;                ///< the network's shape
  PatternCnnTraining training;          ///< epochs, batch, learning rate (its seed is replaced by `seed`)
  PatternThresholds thresholds;         ///< the paper's rules' cut-offs
  ReplicationThresholds replication_thresholds;  ///< the replication's rules' cut-offs

  /// The GPT-2 replication's classes (diagonal, block, overall, M1) with its CNN (PatternCnnOptions::replication).
  static PatternClassifierOptions replication() {
    PatternClassifierOptions o;
    o.classes = PatternClasses::replication;
    o.cnn = PatternCnnOptions::replication();
    return o;
  }
  /// The classes and CNN of `classes`: the defaults, or replication().
  static PatternClassifierOptions of(PatternClasses classes) {
    return classes == PatternClasses::paper ? PatternClassifierOptions{} : replication();
  }
  /// The small set of a quick run: 100 prototypes per class to train on (a few seconds for the paper's CNN,
  /// ~20 s for the replication's), 30 held out.
  static PatternClassifierOptions quick(PatternClasses classes = PatternClasses::paper) {
    PatternClassifierOptions o = of(classes);
    o.train_per_class = 100;
    o.held_out_per_class = 30;
    return o;
  }
};

/// The rules and the trained CNN, with the CNN's evaluation.
struct PatternClassifiers {
  PatternScheme scheme;             ///< the classes both return indices into
  PatternRule rule;                 ///< summary -> class
  std::string rule_description;     ///< the rule and its thresholds, in one line
  PatternCnn cnn;                   ///< the trained network
  PatternCnnEvaluation evaluation;  ///< its held-out scores (and the rules' on the same maps, for prototypes)
};

namespace detail {
inline std::string describe_rules(const PatternThresholds& t) {
  return "PatternRules: pattern " + format_number(t.pattern) + ", mix " + format_number(t.mix) + ", block " +
         format_number(t.block) + ", block spread " + format_number(t.block_spread) + ", min length " +
         std::to_string(t.min_length);
}
inline std::string describe_rules(const ReplicationThresholds& t) {
  return "ReplicationPatternRules: diagonal " + format_number(t.diagonal) + ", first sentence " +
         format_number(t.first_sentence) + ", block " + format_number(t.block) + ", block spread " +
         format_number(t.block_spread) + ", min length " + std::to_string(t.min_length);
}
}  // namespace detail

/// The rules of `o.classes` (the paper's with `o.thresholds`, or the replication's with
/// `o.replication_thresholds`), and a CNN of shape `o.cnn` trained on `o.labelled` (when given) or on seeded
/// prototypes of those classes (causal ones for a causal model), scored on held-out maps.
/// @code
/// auto c = darkbert::study::train_pattern_classifiers(false, darkbert::study::PatternClassifierOptions::quick());
/// std::cout << "CNN macro F1 " << c.evaluation.cnn.macro_f1 << "\n";
/// @endcode
inline PatternClassifiers train_pattern_classifiers(bool causal, const PatternClassifierOptions& o = {}) {
  const bool paper = o.classes == PatternClasses::paper;
  const PatternRule rule =
      paper ? PatternRules{o.thresholds}.rule() : ReplicationPatternRules{o.replication_thresholds}.rule();
  const PatternScheme scheme = pattern_scheme(o.classes);
  PatternTrainingSet set;
  if (!o.labelled.empty()) {
    set = labelled_training_set(o.labelled, scheme, o.cnn.input_size, o.held_out_share, o.seed);
  } else {
    PrototypeSetOptions p;
    p.classes = o.classes;
    p.train_per_class = o.train_per_class;
    p.held_out_per_class = o.held_out_per_class;
    p.seed = o.seed;
    p.maps = o.prototypes;
    p.maps.causal = causal;
    p.input_size = o.cnn.input_size;
    set = prototype_training_set(p);
  }
  PatternCnn cnn(scheme, o.cnn, o.seed);
  PatternCnnTraining training = o.training;
  training.seed = o.seed;
  cnn.train(set.train, training);
  auto evaluation = evaluate_pattern_cnn(cnn, set, rule);
  return {scheme, rule,
          paper ? detail::describe_rules(o.thresholds) : detail::describe_rules(o.replication_thresholds),
          std::move(cnn), std::move(evaluation)};
}

// ------------------------------------------------------------------ the result

/// Which classifier a count comes from.
enum class PatternClassifier { cnn, rules };

/// One map kept for the figures: a map both classifiers put in `label`.
struct PatternExampleMap {
  int label = 0;             ///< class index
  Index layer = 0;           ///< from 0
  Index head = 0;            ///< from 0
  std::size_t example = 0;   ///< index of the example in the task inputs
  Index length = 0;          ///< its valid length n
  std::vector<float> image;  ///< [s, s]: the map resampled (resample_attention_map), attention values
};

/// The section's result: class counts per head for both classifiers, their agreement, example maps.
/// Counts add up, so results of shards of one task's examples merge exactly (merge()).
struct AttentionPatternResult {
  std::string task;                               ///< "MRPC"
  std::string model;                              ///< which model (its folder)
  std::string inputs;                             ///< which examples (TaskInputs::provenance)
  std::string rules;                              ///< the rule classifier and its thresholds
  PatternScheme scheme = paper_pattern_scheme();  ///< the classes
  Index layers = 0;                               ///< of the model
  Index heads = 0;                                ///< per layer
  bool causal = false;                            ///< the model is causal
  std::size_t examples = 0;                       ///< examples counted
  std::vector<std::uint64_t> cnn_counts;          ///< [layers, heads, classes]: maps of each class, CNN
  std::vector<std::uint64_t> rule_counts;         ///< [layers, heads, classes]: maps of each class, rules
  std::vector<std::uint64_t> agreement_counts;    ///< maps per (rules' class, CNN's class), [classes, classes]
  PatternCnnEvaluation evaluation;                ///< the CNN's held-out scores
  Index example_size = 48;                        ///< s, the side of the kept maps
  std::size_t examples_per_class = 4;             ///< kept maps per class, at most
  std::vector<PatternExampleMap> example_maps;    ///< the kept maps, in the order found

  /// Empty counts for a model of `layers` x `heads` heads.
  void reset(Index layer_count, Index head_count) {
    layers = layer_count, heads = head_count;
    const auto K = static_cast<std::size_t>(scheme.size());
    cnn_counts.assign(static_cast<std::size_t>(layers * heads) * K, 0);
    rule_counts.assign(cnn_counts.size(), 0);
    agreement_counts.assign(K * K, 0);
  }

  /// Counts of one classifier.
  const std::vector<std::uint64_t>& counts(PatternClassifier c) const {
    return c == PatternClassifier::cnn ? cnn_counts : rule_counts;
  }
  /// Maps of head (layer, head) put in class k.
  std::uint64_t count(PatternClassifier c, Index layer, Index head, int k) const {
    return counts(c)[static_cast<std::size_t>((layer * heads + head) * scheme.size() + k)];
  }
  /// Share of head (layer, head)'s maps in class k (0 before any example).
  double share(PatternClassifier c, Index layer, Index head, int k) const {
    return examples ? static_cast<double>(count(c, layer, head, k)) / static_cast<double>(examples) : 0.0;
  }
  /// The class most of the head's maps are in (ties: the earlier class).
  int majority(PatternClassifier c, Index layer, Index head) const {
    int best = 0;
    for (int k = 1; k < scheme.size(); ++k)
      if (count(c, layer, head, k) > count(c, layer, head, best)) best = k;
    return best;
  }
  /// Share of every (head, example) map in each class (Figure 2): [classes].
  std::vector<double> proportions(PatternClassifier c = PatternClassifier::cnn) const {
    std::vector<double> out(static_cast<std::size_t>(scheme.size()), 0.0);
    double total = 0;
    const auto& n = counts(c);
    for (std::size_t i = 0; i < n.size(); ++i) {
      out[i % out.size()] += static_cast<double>(n[i]);
      total += static_cast<double>(n[i]);
    }
    if (total > 0)
      for (double& v : out) v /= total;
    return out;
  }
  /// Heads whose majority class is k, per class: [classes].
  std::vector<std::size_t> majority_heads(PatternClassifier c) const {
    std::vector<std::size_t> out(static_cast<std::size_t>(scheme.size()), 0);
    for (Index l = 0; l < layers; ++l)
      for (Index h = 0; h < heads; ++h) ++out[static_cast<std::size_t>(majority(c, l, h))];
    return out;
  }
  /// Agreement of the rules (first) and the CNN (second) over all maps.
  PatternAgreement classifier_agreement() const {
    const auto K = static_cast<std::size_t>(scheme.size());
    std::vector<std::vector<std::size_t>> t(K, std::vector<std::size_t>(K, 0));
    for (std::size_t r = 0; r < K; ++r)
      for (std::size_t c = 0; c < K; ++c) t[r][c] = static_cast<std::size_t>(agreement_counts[r * K + c]);
    return agreement_from_counts(std::move(t));
  }
  /// The [layers, heads] share of class k (a layer x head grid for figures).
  HeadMatrix<double> share_matrix(PatternClassifier c, int k) const {
    auto m = make_head_matrix<double>(std::string(c == PatternClassifier::cnn ? "cnn" : "rules") + "_share_" +
                                          scheme.names[static_cast<std::size_t>(k)],
                                      layers, heads);
    for (Index l = 0; l < layers; ++l)
      for (Index h = 0; h < heads; ++h) m(l, h) = share(c, l, h, k);
    m.examples = examples;
    return m;
  }

  /// Adds another result's counts and fills up the example maps from it (same task, model shape and classes).
  void merge(const AttentionPatternResult& other) {
    require(other.task == task && other.scheme == scheme && other.layers == layers && other.heads == heads &&
                other.causal == causal && other.example_size == example_size,
            "attention patterns: cannot merge results of ", other.task, " (", other.layers, " x ", other.heads,
            " heads, scheme ", other.scheme.name, ") into ", task, " (", layers, " x ", heads, ", ", scheme.name, ")");
    for (std::size_t i = 0; i < cnn_counts.size(); ++i) cnn_counts[i] += other.cnn_counts[i];
    for (std::size_t i = 0; i < rule_counts.size(); ++i) rule_counts[i] += other.rule_counts[i];
    for (std::size_t i = 0; i < agreement_counts.size(); ++i) agreement_counts[i] += other.agreement_counts[i];
    examples += other.examples;
    for (const auto& e : other.example_maps) keep_example(e);
  }

  /// Whether a map of class `label` from (layer, head) on example `example` would be kept: not when the class
  /// has examples_per_class maps already, or one of the same head or of the same example (so a figure shows
  /// different heads on different inputs).
  bool accepts_example(int label, Index layer, Index head, std::size_t example) const {
    std::size_t have = 0;
    for (const auto& x : example_maps) {
      if (x.label != label) continue;
      ++have;
      if ((x.layer == layer && x.head == head) || x.example == example) return false;
    }
    return have < examples_per_class;
  }
  /// Keeps `e` if accepts_example says so; returns whether it did.
  bool keep_example(const PatternExampleMap& e) {
    if (!accepts_example(e.label, e.layer, e.head, e.example)) return false;
    example_maps.push_back(e);
    return true;
  }
  /// Whether class k has all its example maps (the section stops looking then).
  bool examples_full(int k) const {
    std::size_t have = 0;
    for (const auto& x : example_maps) have += x.label == k;
    return have >= examples_per_class;
  }

  /// The numbers a report states: proportions, agreement, majority heads, the CNN's held-out scores.
  nlohmann::json summary() const {
    auto by_class = [&](const auto& values) {
      nlohmann::json j = nlohmann::json::object();
      for (int k = 0; k < scheme.size(); ++k)
        j[scheme.names[static_cast<std::size_t>(k)]] = values[static_cast<std::size_t>(k)];
      return j;
    };
    const auto agree = classifier_agreement();
    nlohmann::json s = {{"task", task},
                        {"model", model},
                        {"inputs", inputs},
                        {"layers", layers},
                        {"heads", heads},
                        {"causal", causal},
                        {"examples", examples},
                        {"maps", examples * static_cast<std::size_t>(layers * heads)},
                        {"proportions_cnn", by_class(proportions(PatternClassifier::cnn))},
                        {"proportions_rules", by_class(proportions(PatternClassifier::rules))},
                        {"majority_heads_cnn", by_class(majority_heads(PatternClassifier::cnn))},
                        {"majority_heads_rules", by_class(majority_heads(PatternClassifier::rules))},
                        {"agreement_share", agree.share},
                        {"agreement_kappa", agree.kappa},
                        {"cnn_training_set", evaluation.training_set},
                        {"cnn_held_out_set", evaluation.held_out_set},
                        {"cnn_held_out_macro_f1", evaluation.cnn.macro_f1},
                        {"cnn_held_out_accuracy", evaluation.cnn.accuracy},
                        {"cnn_held_out_f1", by_class(evaluation.cnn.f1)},
                        {"rules", rules}};
    if (evaluation.rules) s["rules_held_out_macro_f1"] = evaluation.rules->macro_f1;
    if (evaluation.agreement) {
      s["held_out_agreement_share"] = evaluation.agreement->share;
      s["held_out_agreement_kappa"] = evaluation.agreement->kappa;
    }
    return s;
  }

  /// Writes every file listed in the header comment into `dir` (created).
  void save(const std::filesystem::path& dir) const;
  /// Reads what save() wrote; errors name the file.
  static AttentionPatternResult load(const std::filesystem::path& dir);
};

namespace detail {

inline std::string head_classes_csv(const AttentionPatternResult& r, PatternClassifier c) {
  std::string out = "layer,head,class";
  for (const auto& n : r.scheme.names) out.append(",share_").append(n);
  out += '\n';
  for (Index l = 0; l < r.layers; ++l)
    for (Index h = 0; h < r.heads; ++h) {
      out.append(std::to_string(l)).append(",").append(std::to_string(h)).append(",");
      out.append(r.scheme.names[static_cast<std::size_t>(r.majority(c, l, h))]);
      for (int k = 0; k < r.scheme.size(); ++k) out.append(",").append(format_number(r.share(c, l, h, k)));
      out += '\n';
    }
  return out;
}

inline std::string classifier_label(PatternClassifier c) { return c == PatternClassifier::cnn ? "CNN" : "rules"; }

// The classes a result counts, defined in words, and the two classifiers that counted them.
inline std::string pattern_classes_markdown(const AttentionPatternResult& r) {
  std::string out = "# Attention-pattern classes (" + r.scheme.name + ")\n\n| class | figure label | definition |\n|---|---|---|\n";
  for (std::size_t k = 0; k < r.scheme.names.size(); ++k)
    out += "| `" + r.scheme.names[k] + "` | " + r.scheme.labels[k] + " | " + r.scheme.definitions[k] +
           (r.scheme.two_segments[k] ? " (two-sentence inputs only)" : "") + " |\n";
  out += "\nRules: " + r.rules + ".\n\nCNN: trained on " + r.evaluation.training_set + "; held-out macro F1 " +
         format_number(r.evaluation.cnn.macro_f1) + " on " + r.evaluation.held_out_set + ".\n";
  return out;
}

}  // namespace detail

/// The class proportions of several tasks as one table: rows the tasks in the order given, columns the
/// classes.
inline Table<double> class_proportions_table(const std::vector<std::pair<std::string, std::vector<double>>>& by_task,
                                             const PatternScheme& scheme, std::string name = "class_proportions") {
  std::vector<std::string> rows;
  for (const auto& [task, values] : by_task) rows.push_back(task);
  auto t = make_table<double>(std::move(name), "task", rows, "class", scheme.names);
  for (std::size_t r = 0; r < by_task.size(); ++r) {
    require(by_task[r].second.size() == scheme.names.size(), "class proportions of ", by_task[r].first, ": ",
            by_task[r].second.size(), " values for ", scheme.names.size(), " classes");
    for (std::size_t k = 0; k < scheme.names.size(); ++k)
      t(static_cast<Index>(r), static_cast<Index>(k)) = by_task[r].second[k];
  }
  return t;
}

/// The paper's Figure 2 for any set of tasks: one stacked bar per task (in the order given), the share of
/// each class over all (head, example) maps. `path` ends in .png, .svg or .pdf. (The bars can be anything
/// else with class proportions, e.g. two classifiers: then say so in `x_label`.)
/// @code
/// write_class_proportions_figure("figure2.svg", {{"MRPC", mrpc.proportions()}, {"RTE", rte.proportions()}},
///                                darkbert::study::paper_pattern_scheme());
/// @endcode
inline BarChartGeometry write_class_proportions_figure(
    const std::filesystem::path& path, const std::vector<std::pair<std::string, std::vector<double>>>& by_task,
    const PatternScheme& scheme, const std::string& title = "Attention pattern classes per task",
    const std::string& x_label = "task") {
  require(!by_task.empty(), path.string(), ": no task proportions to draw");
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  for (const auto& label : scheme.labels) series.push_back({label, {}});
  for (const auto& [task, values] : by_task) {
    require(values.size() == scheme.labels.size(), path.string(), ": ", task, " has ", values.size(),
            " proportions for ", scheme.labels.size(), " classes");
    categories.push_back(task);
    for (std::size_t k = 0; k < values.size(); ++k) series[k].values.push_back(values[k]);
  }
  return write_stacked_bar_chart(
      path, categories, series,
      {.title = title, .x_label = x_label, .y_label = "share of (head, example) maps", .y_max = 1.0});
}

inline void AttentionPatternResult::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  const auto K = static_cast<std::size_t>(scheme.size());
  auto per_head = [&](const std::vector<std::uint64_t>& n) {
    nlohmann::json a = nlohmann::json::array();
    for (std::size_t i = 0; i < n.size(); i += K)
      a.push_back(std::vector<std::uint64_t>(n.begin() + static_cast<std::ptrdiff_t>(i),
                                             n.begin() + static_cast<std::ptrdiff_t>(i + K)));
    return a;
  };
  nlohmann::json maps = nlohmann::json::array();
  for (const auto& e : example_maps)
    maps.push_back({{"class", scheme.names[static_cast<std::size_t>(e.label)]},
                    {"layer", e.layer},
                    {"head", e.head},
                    {"example", e.example},
                    {"length", e.length}});
  const nlohmann::json j = {{"format", "darkbert-attention-patterns/1"},
                            {"task", task},
                            {"model", model},
                            {"inputs", inputs},
                            {"rules", rules},
                            {"scheme", detail::scheme_to_json(scheme)},
                            {"layers", layers},
                            {"heads", heads},
                            {"causal", causal},
                            {"examples", examples},
                            {"counts_cnn", per_head(cnn_counts)},
                            {"counts_rules", per_head(rule_counts)},
                            {"agreement", per_head(agreement_counts)},
                            {"cnn_evaluation", evaluation.to_json()},
                            {"example_size", example_size},
                            {"examples_per_class", examples_per_class},
                            {"example_maps", maps},
                            {"summary", summary()}};
  write_file_atomically(dir / "attention_patterns.json", j.dump(1) + "\n");
  write_file_atomically(dir / "head_classes.csv", detail::head_classes_csv(*this, PatternClassifier::cnn));
  write_file_atomically(dir / "pattern_classes.md", detail::pattern_classes_markdown(*this));
  write_file_atomically(dir / "head_classes_rules.csv", detail::head_classes_csv(*this, PatternClassifier::rules));

  auto proportions_table =
      make_table<double>("class_proportions", "classifier", {"cnn", "rules"}, "class", scheme.names);
  const auto p_cnn = proportions(PatternClassifier::cnn), p_rules = proportions(PatternClassifier::rules);
  for (std::size_t k = 0; k < K; ++k) {
    proportions_table(0, static_cast<Index>(k)) = p_cnn[k];
    proportions_table(1, static_cast<Index>(k)) = p_rules[k];
  }
  proportions_table.examples = examples;
  write_table(proportions_table, dir);
  auto agreement_table = make_table<double>("classifier_agreement", "rules", scheme.names, "cnn", scheme.names);
  for (std::size_t r = 0; r < K; ++r)
    for (std::size_t c = 0; c < K; ++c)
      agreement_table(static_cast<Index>(r), static_cast<Index>(c)) = static_cast<double>(agreement_counts[r * K + c]);
  agreement_table.examples = examples;
  write_table(agreement_table, dir);

  const auto s = static_cast<std::size_t>(example_size);
  xt::xtensor<float, 3> images = xt::xtensor<float, 3>::from_shape({example_maps.size(), s, s});
  std::string csv = "index,class,layer,head,example,length\n";
  for (std::size_t i = 0; i < example_maps.size(); ++i) {
    const auto& e = example_maps[i];
    require(e.image.size() == s * s, "attention patterns: example map ", i, " has ", e.image.size(),
            " values, expected ", s * s);
    std::copy(e.image.begin(), e.image.end(), images.begin() + static_cast<std::ptrdiff_t>(i * s * s));
    csv += std::to_string(i) + "," + scheme.names[static_cast<std::size_t>(e.label)] + "," + std::to_string(e.layer) +
           "," + std::to_string(e.head) + "," + std::to_string(e.example) + "," + std::to_string(e.length) + "\n";
  }
  write_npy(dir / "example_maps.npy", images);
  write_file_atomically(dir / "example_maps.csv", csv);

  // Figures: the two classifiers' proportions side by side, and the kept maps of each class.
  const std::string title = task + ": attention pattern classes (" + std::to_string(examples) + " examples x " +
                            std::to_string(layers * heads) + " heads)";
  for (const char* ext : {".png", ".svg"})
    write_class_proportions_figure(dir / (std::string("class_proportions") + ext),
                                   {{detail::classifier_label(PatternClassifier::cnn), p_cnn},
                                    {detail::classifier_label(PatternClassifier::rules), p_rules}},
                                   scheme, title, "classifier");
  for (int k = 0; k < scheme.size(); ++k) {
    std::vector<Matrix<float>> panels;
    std::string heads_shown;
    for (const auto& e : example_maps) {
      if (e.label != k) continue;
      Matrix<float> m(example_size, example_size);
      for (Index i = 0; i < example_size; ++i)
        for (Index j = 0; j < example_size; ++j) m(i, j) = e.image[static_cast<std::size_t>(i * example_size + j)];
      panels.push_back(std::move(m));
      heads_shown += std::string(heads_shown.empty() ? "" : ", ") + "layer " + std::to_string(e.layer) + " head " +
                     std::to_string(e.head) + " ex. " + std::to_string(e.example);
    }
    if (panels.empty()) continue;
    AttentionGridOptions o;
    o.title = task + ", " + scheme.labels[static_cast<std::size_t>(k)] + ": " + heads_shown;
    o.row_title = "";
    o.col_title = "map (both classifiers agree)";
    o.scale_each_panel = true;
    o.panel_size = 96;
    for (const char* ext : {".png", ".svg"})
      write_attention_grid(dir / ("example_maps_" + scheme.names[static_cast<std::size_t>(k)] + ext), panels,
                           static_cast<Index>(panels.size()), o);
  }
}

inline AttentionPatternResult AttentionPatternResult::load(const std::filesystem::path& dir) {
  const auto path = dir / "attention_patterns.json";
  const std::string where = path.string();
  const auto j = read_json_file(path);
  require(j.is_object() && j.value("format", "") == "darkbert-attention-patterns/1", where,
          ": not an attention-pattern result (format 'darkbert-attention-patterns/1' expected)");
  AttentionPatternResult r;
  try {
    r.task = j.at("task").get<std::string>();
    r.model = j.at("model").get<std::string>();
    r.inputs = j.at("inputs").get<std::string>();
    r.rules = j.at("rules").get<std::string>();
    r.scheme = detail::scheme_from_json(j, where);
    r.reset(json_integer<Index>(j.at("layers"), where + ": layers"),
            json_integer<Index>(j.at("heads"), where + ": heads"));
    r.causal = j.at("causal").get<bool>();
    r.examples = json_integer<std::size_t>(j.at("examples"), where + ": examples");
    const auto K = static_cast<std::size_t>(r.scheme.size());
    auto read_counts = [&](const char* key, std::vector<std::uint64_t>& out) {
      const auto rows = j.at(key).get<std::vector<std::vector<std::uint64_t>>>();
      require(rows.size() * K == out.size(), where, ": '", key, "' has ", rows.size(), " rows, expected ",
              out.size() / K);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        require(rows[i].size() == K, where, ": '", key, "' row ", i, " has ", rows[i].size(), " counts for ", K,
                " classes");
        std::copy(rows[i].begin(), rows[i].end(), out.begin() + static_cast<std::ptrdiff_t>(i * K));
      }
    };
    read_counts("counts_cnn", r.cnn_counts);
    read_counts("counts_rules", r.rule_counts);
    read_counts("agreement", r.agreement_counts);
    r.evaluation = PatternCnnEvaluation::from_json(j.at("cnn_evaluation"), where);
    r.example_size = json_integer<Index>(j.at("example_size"), where + ": example_size");
    r.examples_per_class = json_integer<std::size_t>(j.at("examples_per_class"), where + ": examples_per_class");
    const auto images = read_npy<float>(dir / "example_maps.npy");
    const auto& maps = j.at("example_maps");
    const auto s = static_cast<std::size_t>(r.example_size);
    require(images.dimension() == 3 && images.shape()[0] == maps.size() &&
                (maps.empty() || (images.shape()[1] == s && images.shape()[2] == s)),
            (dir / "example_maps.npy").string(), ": shape does not match the ", maps.size(), " example maps of ", s,
            " x ", s, " in ", where);
    for (std::size_t i = 0; i < maps.size(); ++i) {
      PatternExampleMap e;
      e.label = r.scheme.index_of(maps[i].at("class").get<std::string>(), where + ": example map " + std::to_string(i));
      e.layer = maps[i].at("layer").get<Index>();
      e.head = maps[i].at("head").get<Index>();
      e.example = maps[i].at("example").get<std::size_t>();
      e.length = maps[i].at("length").get<Index>();
      e.image.assign(images.begin() + static_cast<std::ptrdiff_t>(i * s * s),
                     images.begin() + static_cast<std::ptrdiff_t>((i + 1) * s * s));
      r.example_maps.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": ", e.what());
  }
  return r;
}

// ------------------------------------------------------------------ running the section

/// Options of the section.
struct AttentionPatternOptions {
  std::string model;                   ///< which model, for the result (e.g. its folder)
  std::size_t examples_per_class = 4;  ///< maps kept per class for the figures
  Index example_size = 48;             ///< side of the kept maps
  std::size_t batch_size = 16;         ///< examples per forward pass
};

/// Classifies the maps of one example at a time into a result (streaming; merge results of shards).
/// @code
/// darkbert::study::AttentionPatternCounter<float> counter(classifiers, "MRPC", layers, heads, causal, {});
/// counter.add(i, view, inputs.tokens[i]);   // per example
/// auto result = counter.result();
/// @endcode
template <class T>
class AttentionPatternCounter {
 public:
  /// Counts for a model of `layers` x `heads` heads on `task`, with `classifiers` (kept by reference).
  AttentionPatternCounter(const PatternClassifiers& classifiers, std::string task, Index layers, Index heads,
                          bool causal, const AttentionPatternOptions& o = {})
      : classifiers_(classifiers) {
    result_.task = std::move(task);
    result_.model = o.model;
    result_.rules = classifiers.rule_description;
    result_.scheme = classifiers.scheme;
    result_.causal = causal;
    result_.evaluation = classifiers.evaluation;
    result_.example_size = o.example_size;
    result_.examples_per_class = o.examples_per_class;
    result_.reset(layers, heads);
    require(o.example_size >= 2, "attention patterns: example_size ", o.example_size, " < 2");
  }

  /// Classifies every head's map of example `example` (view [layers, heads, n, n], tokens [n]).
  void add(std::size_t example, const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
    darkbert::detail::require_shape(view, result_.layers, result_.heads, "attention patterns");
    darkbert::detail::require_annotations(view, tokens, "attention patterns");
    require(view.causal() == result_.causal, "attention patterns: a ", view.causal() ? "causal" : "bidirectional",
            " view for a ", result_.causal ? "causal" : "bidirectional", " model");
    const Index n = view.length(), L = view.padded_length(), S = classifiers_.cnn.input_size();
    const PatternBaseline base(n, view.causal(), tokens);
    const auto K = static_cast<std::size_t>(result_.scheme.size());
    const Index maps = result_.layers * result_.heads;
    images_.resize(static_cast<std::size_t>(maps * S * S));
    by_rules_.resize(static_cast<std::size_t>(maps));
    for (Index l = 0; l < result_.layers; ++l)
      for (Index h = 0; h < result_.heads; ++h) {
        const T* map = view.map(l, h);
        const Index m = l * result_.heads + h;
        by_rules_[static_cast<std::size_t>(m)] = classifiers_.rule(base.summarize(map, L));
        const auto image = pattern_image(map, L, n, S);
        std::copy(image.begin(), image.end(), images_.begin() + static_cast<std::ptrdiff_t>(m * S * S));
      }
    const auto logits = classifiers_.cnn.logits(images_.data(), maps);
    for (Index m = 0; m < maps; ++m) {
      const int rule = by_rules_[static_cast<std::size_t>(m)];
      const int cnn = classifiers_.cnn.choose(logits.data() + static_cast<std::size_t>(m) * K, base.two_segments());
      ++result_.rule_counts[static_cast<std::size_t>(m) * K + static_cast<std::size_t>(rule)];
      ++result_.cnn_counts[static_cast<std::size_t>(m) * K + static_cast<std::size_t>(cnn)];
      ++result_.agreement_counts[static_cast<std::size_t>(rule) * K + static_cast<std::size_t>(cnn)];
      const Index l = m / result_.heads, h = m % result_.heads;
      if (rule == cnn && result_.accepts_example(cnn, l, h, example)) {
        result_.keep_example(
            {cnn, l, h, example, n, resample_attention_map(view.map(l, h), L, n, result_.example_size)});
      }
    }
    ++result_.examples;
  }

  /// The counts so far.
  const AttentionPatternResult& result() const { return result_; }

 private:
  const PatternClassifiers& classifiers_;
  AttentionPatternResult result_;
  std::vector<float> images_;  // [maps, S, S] scratch
  std::vector<int> by_rules_;  // [maps] scratch
};

/// The section on one task: runs `model` over `inputs` (forward_options may add hooks or masking policies)
/// and classifies every head's map on every example with both classifiers.
template <class T>
AttentionPatternResult attention_patterns(const Transformer<T>& model, const TaskInputs& inputs,
                                          const PatternClassifiers& classifiers, const AttentionPatternOptions& o = {},
                                          ForwardOptions<T> forward_options = attention_only_options<T>()) {
  require(inputs.size() > 0, "attention patterns: no examples of ", glue_task_info(inputs.task).name);
  const auto& c = model.config();
  AttentionPatternCounter<T> counter(classifiers, std::string(glue_task_info(inputs.task).name), c.num_layers,
                                     c.num_heads, c.causal, o);
  for_each_attention(
      model, inputs, [&](std::size_t i, const AttentionView<T>& view) { counter.add(i, view, inputs.tokens[i]); },
      o.batch_size, std::move(forward_options));
  auto result = counter.result();
  result.inputs = inputs.provenance;
  return result;
}

}  // namespace darkbert::study
