#pragma once
/// @file
/// §3.4 of the paper, attention to linguistic features: which heads give much attention to [CLS], [SEP],
/// punctuation, nouns, verbs, pronouns, subjects, objects and negation, in a pretrained and a fine-tuned
/// model on the same task inputs, as layer x head grids (the paper's Figure 6), plus the per-layer trend of
/// [CLS] against [SEP] (the paper: early layers attend to [CLS], later ones to [SEP]).
///
/// @code
/// auto annotator = darkbert::default_annotator(root);
/// auto inputs = darkbert::study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, pretrained.config(),
///                                                 {.max_examples = 1000, .seed = 1, .annotator = &annotator});
/// auto r = darkbert::study::run_linguistic_features(pretrained, &finetuned, inputs);
/// r.save("out/features/MRPC");
/// darkbert::study::write_linguistic_feature_figures(r, "out/features/MRPC");
/// @endcode
///
/// The measure is the paper's (analysis/token_class_attention.hpp): for each head and example, the attention
/// a token receives summed over all queries and divided by the sequence length, the maximum over the tokens
/// of the feature, the mean over the examples that contain the feature (the others are skipped, and counted
/// per feature). Features are token classes (analysis/token_annotation.hpp) over the annotations of
/// study/task_inputs.hpp (`default_annotator`: noun = NOUN or PROPN, subject = nsubj or nsubj:pass, object =
/// obj, negation from data/negation.hpp). They are arguments: a causal model (GPT-2, no [CLS] or [SEP]) is
/// measured with its own classes, and a class no example contains gives a grid of NaN, not an error. On a
/// causal model the separator is measured a second time per query that can see it
/// (separator_per_visible_query(), the GPT-2 replication's "vertical pattern where the sentences separate").

#include <algorithm>    // std::max
#include <cctype>       // std::isalnum, std::tolower
#include <cmath>        // std::isnan
#include <cstddef>      // std::size_t
#include <filesystem>   // std::filesystem::path
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional (the fine-tuned model's accumulator)
#include <string>       // std::string
#include <type_traits>  // std::type_identity_t (a null fine-tuned model does not decide T)
#include <utility>      // std::move
#include <vector>       // std::vector

#include <nlohmann/json.hpp>  // the result's summary file

#include "darkbert/analysis/results.hpp"
#include "darkbert/analysis/token_annotation.hpp"
#include "darkbert/analysis/token_class_attention.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/study/framenet_heads.hpp"  // detail: JSON reading and merging helpers shared by the sections
#include "darkbert/study/task_inputs.hpp"
#include "darkbert/viz/colormap.hpp"
#include "darkbert/viz/heatmap.hpp"
#include "darkbert/viz/line_chart.hpp"

namespace darkbert::study {

/// The paper's §3.4 features as token classes, in its order: "[CLS]", "[SEP]", "punctuation", "noun" (NOUN,
/// PROPN), "verb" (VERB; auxiliaries are AUX), "pronoun" (PRON), "subject", "object", "negation".
/// @code
/// auto features = darkbert::study::paper_features();   // pass your own list for another model family
/// @endcode
inline std::vector<TokenClass> paper_features() {
  auto named = [](TokenClass c, std::string name) {
    c.name = std::move(name);
    return c;
  };
  return {token_class::cls_token(),
          token_class::sep_token(),
          token_class::punctuation(),
          token_class::upos_any("noun", {"NOUN", "PROPN"}),
          named(token_class::upos("VERB"), "verb"),
          named(token_class::upos("PRON"), "pronoun"),
          token_class::subject(),
          token_class::object(),
          token_class::negation()};
}

/// The name of the feature separator_per_visible_query() measures.
inline constexpr std::string_view separator_per_visible_query_name = "[SEP] per visible query";

/// [SEP] (GPT-2: the `<|endoftext|>` between the two sentences) measured per query that can see it: on a
/// causal model only the queries after it can, so the paper's division by the length would show a head that
/// gives the separator all of their attention at about half its height. The GPT-2 replication's "no vertical
/// pattern where the sentences separate" is read from it. On a bidirectional model it equals [SEP].
inline TokenClass separator_per_visible_query() {
  auto c = token_class::sep_token();
  c.name = std::string(separator_per_visible_query_name);
  return c;
}

namespace detail {

/// A file-name stem for a feature or task name: lower case, runs of other characters as one '_'
/// ("[CLS]" -> "cls", "STS-B" -> "sts_b").
inline std::string file_stem(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!out.empty() && out.back() != '_') {
      out.push_back('_');
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "feature" : out;
}

inline nlohmann::json head_extremes(const HeadMatrix<double>& m) {
  using darkbert::detail::json_number;
  double sum = 0, best = std::numeric_limits<double>::quiet_NaN(), worst = best;
  Index bl = -1, bh = -1, wl = -1, wh = -1;
  std::size_t n = 0;
  for (Index l = 0; l < m.rows(); ++l)
    for (Index h = 0; h < m.cols(); ++h) {
      const double v = m(l, h);
      if (std::isnan(v)) continue;
      sum += v;
      ++n;
      if (std::isnan(best) || v > best) best = v, bl = l, bh = h;
      if (std::isnan(worst) || v < worst) worst = v, wl = l, wh = h;
    }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {{"mean", json_number(n ? sum / static_cast<double>(n) : nan)},
          {"max", {{"layer", bl}, {"head", bh}, {"value", json_number(best)}}},
          {"min", {{"layer", wl}, {"head", wh}, {"value", json_number(worst)}}}};
}

/// Least-squares slope of y over x = 0, 1, ... (NaN entries left out; NaN with fewer than two points).
inline double slope(const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(y[i])) continue;
    const double x = static_cast<double>(i);
    sx += x, sy += y[i], sxx += x * x, sxy += x * y[i];
    ++n;
  }
  const double d = static_cast<double>(n) * sxx - sx * sx;
  if (n < 2 || d == 0) return std::numeric_limits<double>::quiet_NaN();
  return (static_cast<double>(n) * sxy - sx * sy) / d;
}

inline std::string_view to_string(ReceivedNormalisation n) {
  return n == ReceivedNormalisation::sequence_length ? "sequence_length" : "visible_queries";
}

inline ReceivedNormalisation parse_normalisation(const std::string& name, const std::string& where) {
  require(name == "sequence_length" || name == "visible_queries", where, ": normalisation '", name,
          "' is not sequence_length or visible_queries");
  return name == "sequence_length" ? ReceivedNormalisation::sequence_length : ReceivedNormalisation::visible_queries;
}

}  // namespace detail

/// The §3.4 result for one task: one [layers, heads] grid per feature for the pretrained model and, when
/// given, the fine-tuned one. Saved as `linguistic_features.json` (every scalar) and tables
/// `pretrained_<feature>`, `finetuned_<feature>`, `difference_<feature>`, `layer_trend` (.csv/.json/.npy).
struct LinguisticFeaturesResult {
  std::string task;                      ///< e.g. "MRPC"
  std::string provenance;                ///< which examples (study/task_inputs.hpp)
  std::string pretrained_model;          ///< what was analysed as "pretrained"
  std::string finetuned_model;           ///< what was analysed as "fine-tuned" ("" when none)
  bool causal = false;                   ///< the models attend only to earlier tokens
  ReceivedNormalisation normalisation = ReceivedNormalisation::sequence_length;  ///< of the received sums
  std::size_t examples = 0;              ///< examples read
  std::vector<std::string> features;     ///< feature names, in order
  /// Per feature, what its received sums were divided by (`normalisation` unless the feature says otherwise,
  /// e.g. separator_per_visible_query()).
  std::vector<ReceivedNormalisation> normalisations;

  std::vector<std::size_t> examples_with;  ///< per feature: examples that contain it
  std::vector<HeadMatrix<double>> pretrained;  ///< per feature: [layers, heads]
  std::vector<HeadMatrix<double>> finetuned;   ///< per feature: [layers, heads]; empty without a fine-tuned model
  std::vector<std::string> trend = {"[CLS]", "[SEP]"};  ///< the features whose per-layer means are compared

  /// Whether a fine-tuned model was measured.
  bool has_finetuned() const { return !finetuned.empty(); }
  /// What feature `f`'s sums were divided by (`normalisation` when `normalisations` does not say).
  ReceivedNormalisation normalisation_of(std::size_t f) const {
    return f < normalisations.size() ? normalisations[f] : normalisation;
  }
  /// Index of a feature by name; an error listing the features when absent.
  std::size_t feature_index(std::string_view name) const {
    for (std::size_t f = 0; f < features.size(); ++f)
      if (features[f] == name) return f;
    std::string list;
    for (const auto& f : features) list += (list.empty() ? "" : ", ") + f;
    fail("linguistic features: no feature '", name, "' (have ", list, ")");
  }
  /// Fine-tuned minus pretrained for feature `f` (needs a fine-tuned model).
  HeadMatrix<double> difference(std::size_t f) const {
    require(has_finetuned(), "linguistic features: no fine-tuned model was measured");
    require(f < features.size(), "linguistic features: feature ", f, " of ", features.size());
    auto d = finetuned[f];
    d.name = "difference_" + detail::file_stem(features[f]);
    for (Index l = 0; l < d.rows(); ++l)
      for (Index h = 0; h < d.cols(); ++h) d(l, h) -= pretrained[f](l, h);
    return d;
  }
  /// Per layer, the mean over heads of each trend feature: rows layers, columns "<feature> pretrained"
  /// (and "<feature> fine-tuned"). Trend features the result does not have are left out.
  Table<double> layer_trend() const;
  /// The numbers a report states (the body of linguistic_features.json).
  nlohmann::json summary() const;
  /// Writes the result into `dir` (created).
  void save(const std::filesystem::path& dir) const;
  /// Reads a result written by save; errors name the file and what is wrong.
  static LinguisticFeaturesResult load(const std::filesystem::path& dir);
  /// Adds another run over other examples of the same task and models (a shard): every grid becomes the
  /// mean over both sets of examples that contain its feature.
  void merge(const LinguisticFeaturesResult& other);
};

inline Table<double> LinguisticFeaturesResult::layer_trend() const {
  std::vector<std::size_t> which;
  for (const auto& t : trend)
    for (std::size_t f = 0; f < features.size(); ++f)
      if (features[f] == t) which.push_back(f);
  std::vector<std::string> cols;
  for (auto f : which) {
    cols.push_back(features[f] + " pretrained");
    if (has_finetuned()) cols.push_back(features[f] + " fine-tuned");
  }
  const Index layers = pretrained.empty() ? 0 : pretrained.front().rows();
  auto t = make_table<double>("layer_trend", "layer", darkbert::detail::index_names(layers), "series", cols);
  t.examples = examples;
  auto mean_of = [](const HeadMatrix<double>& m, Index l) {
    double s = 0;
    std::size_t n = 0;
    for (Index h = 0; h < m.cols(); ++h)
      if (!std::isnan(m(l, h))) s += m(l, h), ++n;
    return n ? s / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
  };
  for (Index l = 0; l < layers; ++l) {
    Index c = 0;
    for (auto f : which) {
      t(l, c++) = mean_of(pretrained[f], l);
      if (has_finetuned()) t(l, c++) = mean_of(finetuned[f], l);
    }
  }
  return t;
}

inline nlohmann::json LinguisticFeaturesResult::summary() const {
  using darkbert::detail::json_number;
  nlohmann::json j;
  j["format"] = "darkbert-linguistic-features/1";
  j["task"] = task;
  j["provenance"] = provenance;
  j["pretrained_model"] = pretrained_model;
  j["finetuned_model"] = finetuned_model;
  j["causal"] = causal;
  j["normalisation"] = detail::to_string(normalisation);
  j["examples"] = examples;
  j["trend_features"] = trend;
  j["layers"] = pretrained.empty() ? 0 : pretrained.front().rows();
  j["heads"] = pretrained.empty() ? 0 : pretrained.front().cols();
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t f = 0; f < features.size(); ++f) {
    nlohmann::json e = {{"name", features[f]},
                        {"file_stem", detail::file_stem(features[f])},
                        {"examples_with", examples_with[f]},
                        {"normalisation", detail::to_string(normalisation_of(f))},
                        {"pretrained", detail::head_extremes(pretrained[f])}};
    if (has_finetuned()) {
      e["finetuned"] = detail::head_extremes(finetuned[f]);
      e["difference"] = detail::head_extremes(difference(f));
    }
    list.push_back(std::move(e));
  }
  j["features"] = list;
  const auto t = layer_trend();
  nlohmann::json trend_json = nlohmann::json::object();
  for (Index c = 0; c < t.cols(); ++c) {
    std::vector<double> series;
    nlohmann::json values = nlohmann::json::array();
    for (Index l = 0; l < t.rows(); ++l) {
      series.push_back(t(l, c));
      values.push_back(json_number(t(l, c)));
    }
    Index peak = -1;
    for (Index l = 0; l < t.rows(); ++l)
      if (!std::isnan(t(l, c)) && (peak < 0 || t(l, c) > t(peak, c))) peak = l;
    trend_json[t.col_names[static_cast<std::size_t>(c)]] = {
        {"per_layer", values}, {"peak_layer", peak}, {"slope_per_layer", json_number(detail::slope(series))}};
  }
  // The paper's claim in one number per model: the slope over layers of (second trend feature - first),
  // positive when attention moves from the first ([CLS]) to the second ([SEP]) with depth.
  if (trend.size() == 2) {
    for (const char* which : {"pretrained", "fine-tuned"}) {
      const std::string a = trend[0] + " " + which, b = trend[1] + " " + which;
      Index ca = -1, cb = -1;
      for (Index c = 0; c < t.cols(); ++c) {
        if (t.col_names[static_cast<std::size_t>(c)] == a) ca = c;
        if (t.col_names[static_cast<std::size_t>(c)] == b) cb = c;
      }
      if (ca < 0 || cb < 0) continue;
      std::vector<double> d;
      for (Index l = 0; l < t.rows(); ++l) d.push_back(t(l, cb) - t(l, ca));
      trend_json[trend[1] + " minus " + trend[0] + " " + which] = {{"slope_per_layer", json_number(detail::slope(d))}};
    }
  }
  j["layer_trend"] = trend_json;
  return j;
}

inline void LinguisticFeaturesResult::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  for (std::size_t f = 0; f < features.size(); ++f) {
    auto p = pretrained[f];
    p.name = "pretrained_" + detail::file_stem(features[f]);
    write_table(p, dir);
    if (!has_finetuned()) continue;
    auto q = finetuned[f];
    q.name = "finetuned_" + detail::file_stem(features[f]);
    write_table(q, dir);
    write_table(difference(f), dir);
  }
  write_table(layer_trend(), dir);
  write_file_atomically(dir / "linguistic_features.json", summary().dump(1) + "\n");  // last: the marker
}

inline LinguisticFeaturesResult LinguisticFeaturesResult::load(const std::filesystem::path& dir) {
  const auto file = dir / "linguistic_features.json";
  const std::string where = file.string();
  const auto j = detail::read_study_json(file);
  require(j.value("format", "") == "darkbert-linguistic-features/1", where, ": format is ",
          j.contains("format") ? j["format"].dump() : "missing", ", expected \"darkbert-linguistic-features/1\"");
  LinguisticFeaturesResult r;
  r.task = detail::json_get<std::string>(j, "task", where);
  r.provenance = detail::json_get<std::string>(j, "provenance", where);
  r.pretrained_model = detail::json_get<std::string>(j, "pretrained_model", where);
  r.finetuned_model = detail::json_get<std::string>(j, "finetuned_model", where);
  r.causal = detail::json_get<bool>(j, "causal", where);
  r.normalisation = detail::parse_normalisation(detail::json_get<std::string>(j, "normalisation", where), where);
  r.examples = detail::json_get<std::size_t>(j, "examples", where);
  r.trend = detail::json_get<std::vector<std::string>>(j, "trend_features", where);
  const auto layers = detail::json_get<Index>(j, "layers", where), heads = detail::json_get<Index>(j, "heads", where);
  bool finetuned = false;
  const auto& list = detail::json_at(j, "features", where);
  require(list.is_array(), where, ": 'features' must be an array");
  for (const auto& e : list) {
    r.features.push_back(detail::json_get<std::string>(e, "name", where));
    r.examples_with.push_back(detail::json_get<std::size_t>(e, "examples_with", where));
    r.normalisations.push_back(e.contains("normalisation")
                                   ? detail::parse_normalisation(detail::json_get<std::string>(e, "normalisation", where), where)
                                   : r.normalisation);
    const auto stem = detail::file_stem(r.features.back());
    auto read = [&](const std::string& name) {
      auto t = read_json_table<double>(dir / (name + ".json"));
      require(t.rows() == layers && t.cols() == heads, (dir / (name + ".json")).string(), ": table is ", t.rows(),
              " x ", t.cols(), ", expected ", layers, " x ", heads, " (", where, ")");
      return t;
    };
    r.pretrained.push_back(read("pretrained_" + stem));
    if (e.contains("finetuned")) {
      finetuned = true;
      r.finetuned.push_back(read("finetuned_" + stem));
    }
  }
  require(!finetuned || r.finetuned.size() == r.features.size(), where,
          ": some features have fine-tuned grids and some do not");
  return r;
}

inline void LinguisticFeaturesResult::merge(const LinguisticFeaturesResult& other) {
  bool same = other.features == features;
  for (std::size_t f = 0; same && f < features.size(); ++f) same = other.normalisation_of(f) == normalisation_of(f);
  require(same, "linguistic features: cannot merge results over different features");
  require(other.has_finetuned() == has_finetuned(), "linguistic features: cannot merge a result with a fine-tuned "
                                                    "model into one without");
  require(other.task == task, "linguistic features: cannot merge task ", other.task, " into ", task);
  for (std::size_t f = 0; f < features.size(); ++f) {
    detail::merge_means(pretrained[f], examples_with[f], other.pretrained[f], other.examples_with[f]);
    if (has_finetuned()) detail::merge_means(finetuned[f], examples_with[f], other.finetuned[f], other.examples_with[f]);
    examples_with[f] += other.examples_with[f];
  }
  examples += other.examples;
}

/// What run_linguistic_features measures and records.
struct LinguisticFeaturesOptions {
  std::vector<TokenClass> features = paper_features();          ///< the token classes measured
  std::vector<std::string> trend = {"[CLS]", "[SEP]"};          ///< features compared layer by layer
  ReceivedNormalisation normalisation = ReceivedNormalisation::sequence_length;  ///< the paper's: / n
  /// On a causal model, also measure separator_per_visible_query() (divided by the queries that see it).
  bool separator_per_visible_query = true;
  std::size_t batch_size = 16;                                  ///< examples per forward pass
  std::string pretrained_model;                                 ///< recorded in the result
  std::string finetuned_model;                                  ///< recorded in the result
};

/// Measures every feature in every head of `pretrained` and (when not null) `finetuned` on the same
/// `inputs` (annotated: load_task_inputs with an annotator). The two models must have the same shape.
/// @code
/// auto r = darkbert::study::run_linguistic_features(pretrained, &finetuned, inputs, {.pretrained_model = dir});
/// double sep = r.pretrained[r.feature_index("[SEP]")](5, 3);
/// @endcode
template <class T>
LinguisticFeaturesResult run_linguistic_features(const Transformer<T>& pretrained,
                                                 const std::type_identity_t<Transformer<T>>* finetuned,
                                                 const TaskInputs& inputs, const LinguisticFeaturesOptions& options = {}) {
  require(!options.features.empty(), "run_linguistic_features: no features to measure");
  require(inputs.tokens.size() == inputs.size(), "run_linguistic_features: ", inputs.tokens.size(),
          " token annotations for ", inputs.size(), " examples");
  const auto layers = static_cast<Index>(pretrained.config().num_layers);
  const auto heads = static_cast<Index>(pretrained.config().num_heads);
  auto features = options.features;
  std::vector<ReceivedNormalisation> normalisations(features.size(), options.normalisation);
  if (options.separator_per_visible_query && pretrained.config().causal) {
    features.push_back(separator_per_visible_query());
    normalisations.push_back(ReceivedNormalisation::visible_queries);
  }
  TokenClassAttention<T> pre(layers, heads, features, normalisations);
  std::optional<TokenClassAttention<T>> fine;
  if (finetuned != nullptr) {
    fine.emplace(layers, heads, features, normalisations);
    for_each_attention_pair(
        pretrained, *finetuned, inputs,
        [&](std::size_t i, const AttentionView<T>& a, const AttentionView<T>& b) {
          pre.add(a, inputs.tokens[i]);
          fine->add(b, inputs.tokens[i]);
        },
        options.batch_size);
  } else {
    for_each_attention(
        pretrained, inputs, [&](std::size_t i, const AttentionView<T>& a) { pre.add(a, inputs.tokens[i]); },
        options.batch_size);
  }
  LinguisticFeaturesResult r;
  r.task = std::string(glue_task_info(inputs.task).name);
  r.provenance = inputs.provenance;
  r.pretrained_model = options.pretrained_model;
  r.finetuned_model = finetuned != nullptr ? options.finetuned_model : std::string();
  r.causal = pretrained.config().causal;
  r.normalisation = options.normalisation;
  r.examples = pre.examples();
  r.trend = options.trend;
  const auto p = pre.result();
  for (std::size_t f = 0; f < features.size(); ++f) {
    r.features.push_back(features[f].name);
    r.normalisations.push_back(normalisations[f]);
    r.examples_with.push_back(pre.examples_with(f));
    r.pretrained.push_back(detail::to_double(p[f]));
    r.pretrained.back().name = "pretrained_" + detail::file_stem(features[f].name);
  }
  if (fine) {
    const auto q = fine->result();
    for (std::size_t f = 0; f < features.size(); ++f) {
      r.finetuned.push_back(detail::to_double(q[f]));
      r.finetuned.back().name = "finetuned_" + detail::file_stem(features[f].name);
    }
  }
  return r;
}

namespace detail {

/// The feature grids stacked: rows "<feature> <layer>", columns the heads (one block per model).
inline std::pair<Matrix<double>, std::vector<std::string>> stacked_features(const std::vector<HeadMatrix<double>>& grids,
                                                                            const std::vector<std::string>& names) {
  const Index layers = grids.front().rows(), heads = grids.front().cols();
  Matrix<double> m(layers * static_cast<Index>(grids.size()), heads);
  std::vector<std::string> rows;
  for (std::size_t f = 0; f < grids.size(); ++f)
    for (Index l = 0; l < layers; ++l) {
      for (Index h = 0; h < heads; ++h) m(static_cast<Index>(f) * layers + l, h) = grids[f](l, h);
      rows.push_back(names[f] + " " + std::to_string(l));
    }
  return {m, rows};
}

}  // namespace detail

/// Writes the section's figures for one task into `dir` (PNG and SVG each): `features_<task>` (every
/// feature's layer x head grid stacked, rows "<feature> <layer>", pretrained heads then fine-tuned heads),
/// `features_<task>_difference` (fine-tuned minus pretrained, diverging colours; with a fine-tuned model)
/// and `features_<task>_trend` (per layer, the mean over heads of [CLS] and [SEP]). Counted from 0.
inline void write_linguistic_feature_figures(const LinguisticFeaturesResult& r, const std::filesystem::path& dir) {
  require(!r.features.empty() && !r.pretrained.empty(), "linguistic features: nothing to draw");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  const std::string stem = "features_" + detail::file_stem(r.task);
  const Index heads = r.pretrained.front().cols();
  auto [pre, rows] = detail::stacked_features(r.pretrained, r.features);
  Matrix<double> both = pre;
  std::vector<std::string> cols;
  for (Index h = 0; h < heads; ++h) cols.push_back((r.has_finetuned() ? "pre " : "") + std::to_string(h));
  if (r.has_finetuned()) {
    const auto ft = detail::stacked_features(r.finetuned, r.features).first;
    both.resize(pre.rows(), 2 * heads);
    both << pre, ft;
    for (Index h = 0; h < heads; ++h) cols.push_back("ft " + std::to_string(h));
  }
  HeatmapOptions o;
  o.title = "Attention to linguistic features, " + r.task + " (" + std::to_string(r.examples) + " examples" +
            (r.has_finetuned() ? "; pre = pretrained, ft = fine-tuned)" : ")");
  o.x = {r.has_finetuned() ? "model, head" : "head", cols, 0};
  o.y = {"feature, layer", rows, 0};
  bool per_visible = false;
  for (std::size_t f = 0; f < r.features.size(); ++f)
    per_visible = per_visible || r.normalisation_of(f) == ReceivedNormalisation::visible_queries;
  o.value_label = per_visible ? "attention received / length (per visible query: / queries that see it)"
                              : "attention received / length";
  o.vmin = 0;
  o.annotate = CellValues::hide;
  for (const char* ext : {".png", ".svg"}) write_heatmap(dir / (stem + ext), both, o);
  if (r.has_finetuned()) {
    std::vector<HeadMatrix<double>> diffs;
    for (std::size_t f = 0; f < r.features.size(); ++f) diffs.push_back(r.difference(f));
    const auto d = detail::stacked_features(diffs, r.features).first;
    HeatmapOptions od = o;
    od.title = "Fine-tuned minus pretrained, " + r.task;
    od.x = {"head", {}, 0};
    od.map = Colormap::coolwarm();
    od.vmin.reset();
    od.value_label = "fine-tuned - pretrained";
    for (const char* ext : {".png", ".svg"}) write_heatmap(dir / (stem + "_difference" + ext), d, od);
  }
  const auto t = r.layer_trend();
  if (t.cols() > 0 && t.rows() > 0) {
    std::vector<LineSeries> series;
    for (Index c = 0; c < t.cols(); ++c) {
      LineSeries s{t.col_names[static_cast<std::size_t>(c)], {}, {}};
      for (Index l = 0; l < t.rows(); ++l) {
        s.x.push_back(static_cast<double>(l));
        s.y.push_back(t(l, c));
      }
      series.push_back(std::move(s));
    }
    LineChartOptions lo;
    std::string names;
    for (const auto& n : r.trend) names += (names.empty() ? "" : " and ") + n;
    lo.title = names + " by layer, " + r.task;
    lo.x_label = "layer";
    lo.y_label = "mean over heads";
    for (const char* ext : {".png", ".svg"}) write_line_chart(dir / (stem + "_trend" + ext), series, lo);
  }
}

}  // namespace darkbert::study
