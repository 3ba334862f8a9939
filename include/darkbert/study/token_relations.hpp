#pragma once
/// @file
/// §3.5 of the paper, token-to-token attention: which heads attend from verbs to their subjects and from
/// pronouns to nouns, and are those candidates the diagonal (previous/next-token) heads? And where does the
/// [CLS] token of the last layer look, category by category (the paper's Figure 7)?
///
/// @code
/// auto inputs = darkbert::study::load_task_inputs(root, darkbert::GlueTask::rte, tokenizer, model.config(),
///                                                 {.max_examples = 1000, .seed = 1, .annotator = &annotator});
/// auto ud = darkbert::study::ud_verb_subject_inputs(root, tokenizer, model.config(), {.max_sentences = 500});
/// auto r = darkbert::study::run_token_relations(model, inputs, {}, &ud);
/// r.save("out/token_to_token/RTE");
/// darkbert::study::write_cls_category_figure({r, ...}, "out/token_to_token");   // tasks x categories
/// @endcode
///
/// **Relation candidates.** For each relation (token classes A -> B, analysis/token_to_token.hpp) and head:
/// per example the maximum single weight a[i][j] from an A token i to a B token j (and the mean share of an A
/// token's attention on B tokens), averaged over the examples that have such a pair. The candidates are the
/// heads strictly above the `candidate_percentile`-th percentile of the maximum (90: the top tenth; the
/// paper names no cut-off). The annotator labels subjects but not their verbs, so "verb -> subject" over
/// task inputs pairs every verb with every subject of the example; ud_verb_subject_inputs adds the
/// dependency-linked pairs of UD EWT's gold trees (each nsubj with its own VERB head), scored with
/// analysis/link_attention.hpp.
///
/// **Diagonal heads.** A head is diagonal when, on the same inputs, its mean share on the ±1 neighbours
/// (analysis/head_summary.hpp neighbour_share) is at least `diagonal_threshold` = 0.5: at least half of
/// every row on the two adjacent tokens, 10-20 times a uniform head's share at GLUE lengths, and the level
/// darkbert's pretraining probe calls a positional head. Pass `diagonal_heads` to use another classifier
/// (e.g. §3.1's). Each candidate is marked diagonal or not, and the Spearman correlation over all heads of
/// the relation score with the neighbour share says how far the relation follows adjacency.
///
/// **[CLS] attention by category.** For the query token (default: the first [CLS]) in `query_layer`
/// (default: the last), per head and category, the paper's code's measure: the maximum weight from the query
/// to a token of the category (the query itself included, so "[CLS]" is the self weight), averaged over the
/// examples that contain the category; and, beside it, the exclusive shares (each key to its first matching
/// category, the rest to "other"; they sum to 1). For a causal model the query is a choice
/// (CategoryQuery::last_token sees the whole input; first_token only itself); categories are arguments.

#include <algorithm>    // std::stable_sort, std::find
#include <cmath>        // std::isnan
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <filesystem>   // std::filesystem::path
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <utility>      // std::pair, std::move
#include <vector>       // std::vector

#include <nlohmann/json.hpp>  // the result's summary file

#include "darkbert/analysis/correlation.hpp"
#include "darkbert/analysis/head_summary.hpp"
#include "darkbert/analysis/link_attention.hpp"
#include "darkbert/analysis/percentile.hpp"
#include "darkbert/analysis/results.hpp"
#include "darkbert/analysis/running_mean.hpp"
#include "darkbert/analysis/token_annotation.hpp"
#include "darkbert/analysis/token_to_token.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/data/conllu.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/seeded_shuffle.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/study/linguistic_features.hpp"  // paper_features, file_stem and the shared JSON helpers
#include "darkbert/study/task_inputs.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "darkbert/viz/heatmap.hpp"

namespace darkbert::study {

/// Which token of an example is the query of the category measure.
struct CategoryQuery {
  /// How the position is found.
  enum class Position {
    first_of_class,  ///< the first token of `cls` (BERT: [CLS]); examples without one are skipped
    first_token,     ///< position 0
    last_token,      ///< the last valid token (what GPT-2's classifier reads)
  };
  Position position = Position::first_of_class;   ///< how the query is found
  TokenClass cls = token_class::cls_token();      ///< for first_of_class
  std::string name = "[CLS]";                     ///< shown in tables and figures

  /// The token a model's classifier reads: [CLS] for BERT; for a causal model (GPT-2) the last token, since
  /// its first token (the <|endoftext|> BOS) sees only itself.
  static CategoryQuery for_model(const ModelConfig& config) {
    if (config.causal) return {.position = Position::last_token, .name = "last token"};
    return {};
  }

  /// The query position of an example of `n` tokens, or -1 when it has none.
  Index find(std::span<const TokenAnnotation> tokens, Index n) const {
    if (n <= 0) return -1;
    if (position == Position::first_token) return 0;
    if (position == Position::last_token) return n - 1;
    for (Index i = 0; i < n; ++i)
      if (cls(tokens[static_cast<std::size_t>(i)])) return i;
    return -1;
  }
};

/// Streaming §3.5 category measure of the paper's code: for one query token per example, per head and
/// category, the maximum weight from the query to a token of the category (the query itself included),
/// averaged over the examples that contain the category. Memory: categories x layers x heads sums.
/// @code
/// darkbert::study::QueryClassMaxAttention<float> acc(12, 12, {}, darkbert::study::paper_features());
/// acc.add(view, tokens);
/// auto grids = acc.result();          // one [layers, heads] matrix per category
/// @endcode
template <class T>
class QueryClassMaxAttention {
 public:
  /// Empty means for `layers` x `heads` heads, query chosen by `query`, one per category.
  QueryClassMaxAttention(Index layers, Index heads, CategoryQuery query, std::vector<TokenClass> categories)
      : layers_(layers), heads_(heads), query_(std::move(query)), categories_(std::move(categories)),
        example_(static_cast<std::size_t>(layers * heads)) {
    require(!categories_.empty(), "query class attention: no categories");
    for (const auto& c : categories_)
      require(static_cast<bool>(c.test), "query class attention: category '", c.name, "' has no predicate");
    for (std::size_t c = 0; c < categories_.size(); ++c) means_.emplace_back(layers, heads);
  }

  /// Folds in one example; returns false (counted in skipped()) when it has no query token.
  bool add(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
    darkbert::detail::require_shape(view, layers_, heads_, "query class attention");
    darkbert::detail::require_annotations(view, tokens, "query class attention");
    const Index q = query_.find(tokens, view.length());
    if (q < 0) {
      ++skipped_;
      return false;
    }
    ++examples_;
    const Index keys = view.allowed_keys(q);
    for (std::size_t c = 0; c < categories_.size(); ++c) {
      members_.clear();
      for (Index j = 0; j < keys; ++j)
        if (categories_[c](tokens[static_cast<std::size_t>(j)])) members_.push_back(j);
      if (members_.empty()) continue;
      for (Index l = 0; l < layers_; ++l)
        for (Index h = 0; h < heads_; ++h) {
          T best = -std::numeric_limits<T>::infinity();
          for (Index j : members_) best = std::max(best, view(l, h, q, j));
          example_[static_cast<std::size_t>(l * heads_ + h)] = best;
        }
      means_[c].add(example_);
    }
    return true;
  }

  /// Adds another accumulator's examples (same query and categories).
  void merge(const QueryClassMaxAttention& other) {
    require(other.categories_.size() == categories_.size() && other.query_.name == query_.name,
            "query class attention: cannot merge accumulators with different queries or categories");
    for (std::size_t c = 0; c < categories_.size(); ++c) means_[c].merge(other.means_[c]);
    examples_ += other.examples_;
    skipped_ += other.skipped_;
  }

  /// One [layers, heads] matrix per category, named "<query>_max_to_<category>"; NaN where no example had it.
  std::vector<HeadMatrix<T>> result() const {
    std::vector<HeadMatrix<T>> out;
    for (std::size_t c = 0; c < categories_.size(); ++c) {
      out.push_back(make_head_matrix<T>(query_.name + "_max_to_" + categories_[c].name, layers_, heads_));
      means_[c].write_mean(out.back());
    }
    return out;
  }
  /// Examples with a query token.
  std::size_t examples() const { return examples_; }
  /// Examples without one.
  std::size_t skipped() const { return skipped_; }
  /// Examples that had a token of category `c` visible from the query.
  std::size_t examples_with(std::size_t c) const { return means_.at(c).examples(); }

 private:
  Index layers_, heads_;
  CategoryQuery query_;
  std::vector<TokenClass> categories_;
  std::vector<RunningMean<T>> means_;
  std::vector<T> example_;
  std::vector<Index> members_;
  std::size_t examples_ = 0, skipped_ = 0;
};

// ---------------------------------------------------------------- relations

/// A token-to-token relation measured between token classes: attention from `from` tokens to `to` tokens.
struct RelationSpec {
  std::string name;  ///< e.g. "verb -> subject"
  TokenClass from;   ///< the querying tokens
  TokenClass to;     ///< the attended tokens
};

/// The paper's two relations: "verb -> subject" (UPOS VERB to nsubj / nsubj:pass) and "pronoun -> noun"
/// (PRON to NOUN / PROPN).
inline std::vector<RelationSpec> paper_relations() {
  return {{"verb -> subject", token_class::upos("VERB"), token_class::subject()},
          {"pronoun -> noun", token_class::upos("PRON"), token_class::upos_any("noun", {"NOUN", "PROPN"})}};
}

/// Examples with annotated token links (e.g. each subject with its own verb), ready for the model.
struct LinkedInputs {
  std::string name;                           ///< the relation, e.g. "verb -> subject (dependency)"
  std::string source;                         ///< where the links come from
  TaskInputs inputs;                          ///< encodings and token annotations
  std::vector<std::vector<TokenLink>> links;  ///< per example: from = the head word's pieces, to = the dependent's
};

/// Options of ud_verb_subject_inputs.
struct UdLinkOptions {
  std::size_t max_sentences = 500;  ///< a seeded sample of UD EWT dev (0 = all 2,001)
  std::uint64_t seed = 0;           ///< of the sample
  std::size_t max_length = 128;     ///< tokens per sentence (longer ones are cut; their cut links dropped)
};

/// Dependency-linked verb -> subject pairs from UD English EWT dev's gold trees (`ud/en_ewt-ud-dev.conllu`
/// in the data root): for every word whose DEPREL is nsubj or nsubj:pass and whose HEAD is a VERB, a link
/// from the verb's pieces to the subject's. Sentences without such a pair are left out. The annotations
/// carry the gold UPOS and DEPREL, so class-based measures read the same sentences.
inline LinkedInputs ud_verb_subject_inputs(const DataRoot& root, const Tokenizer& tokenizer, const ModelConfig& config,
                                           const UdLinkOptions& options = {}) {
  const auto file = root.find("ud/en_ewt-ud-dev.conllu", "UD English EWT dev (gold dependency trees)", ud_hint);
  auto sentences = read_conllu(file);
  const std::size_t total = sentences.size();
  std::vector<std::size_t> order(total);
  for (std::size_t i = 0; i < total; ++i) order[i] = i;
  if (options.max_sentences > 0 && options.max_sentences < total) {
    order = seeded_permutation(total, options.seed);
    order.resize(options.max_sentences);
    std::sort(order.begin(), order.end());
  }
  LinkedInputs out;
  out.name = "verb -> subject (UD dependency links)";
  out.inputs.causal = config.causal;
  out.inputs.pad_id = tokenizer.pad_id();
  out.inputs.texts.num_labels = 1;
  for (std::size_t s : order) {
    const auto& sentence = sentences[s];
    std::vector<std::string> forms;
    for (const auto& w : sentence.words) forms.push_back(w.form);
    Encoding e = tokenizer.encode_words(forms, {.max_length = options.max_length});
    std::vector<std::vector<Index>> pieces(forms.size());
    for (std::size_t t = 0; t < e.size(); ++t)
      if (e.attention_mask.empty() || e.attention_mask[t] == 1)
        if (!e.sequence_ids.empty() && e.sequence_ids[t] == 0 && e.word_ids[t] >= 0)
          pieces[static_cast<std::size_t>(e.word_ids[t])].push_back(static_cast<Index>(t));
    std::vector<TokenLink> links;
    for (std::size_t w = 0; w < forms.size(); ++w) {
      const auto& word = sentence.words[w];
      if ((word.deprel != "nsubj" && word.deprel != "nsubj:pass") || word.head <= 0) continue;
      const auto head = static_cast<std::size_t>(word.head - 1);
      if (sentence.words[head].upos != "VERB" || pieces[head].empty() || pieces[w].empty()) continue;
      links.push_back({pieces[head], pieces[w]});
    }
    if (links.empty()) continue;
    auto tokens = annotations_from_encoding(e);
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      if (e.sequence_ids.empty() || e.sequence_ids[t] != 0 || e.word_ids[t] < 0) continue;
      const auto& word = sentence.words[static_cast<std::size_t>(e.word_ids[t])];
      tokens[t].upos = word.upos;
      tokens[t].deprel = (word.deprel == "nsubj" || word.deprel == "nsubj:pass" || word.deprel == "obj") ? word.deprel
                                                                                                         : std::string();
    }
    out.inputs.tokens.push_back(std::move(tokens));
    out.inputs.texts.encodings.push_back(std::move(e));
    out.inputs.texts.labels.push_back(0);
    out.links.push_back(std::move(links));
  }
  out.source = file.string() + ": " + std::to_string(out.links.size()) + " sentences with a verb -> subject link, of " +
               std::to_string(order.size()) + (order.size() < total ? " sampled (seed " + std::to_string(options.seed) + ")" : "") +
               " of " + std::to_string(total);
  out.inputs.provenance = out.source;
  return out;
}

/// One relation's per-head scores, its candidate heads and whether they are diagonal.
struct RelationHeads {
  std::string name;                 ///< e.g. "verb -> subject"
  std::string source;               ///< "token classes upos=VERB -> subject" or the links' source
  HeadMatrix<double> max;           ///< [layers, heads] mean over examples of the largest single weight
  std::optional<HeadMatrix<double>> mass;  ///< [layers, heads] mean share on the relation (class-based only)
  std::size_t examples = 0;         ///< examples with a pair
  std::size_t skipped = 0;          ///< examples without one
  double q = 90;                    ///< percentile of the candidates
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< the q-th percentile of `max`
  std::vector<ScoredHead<double>> candidates;  ///< heads strictly above it, best first
  std::vector<bool> diagonal;       ///< per candidate: in the diagonal set
  double spearman_with_neighbour_share = std::numeric_limits<double>::quiet_NaN();  ///< over all heads

  /// Candidates that are diagonal.
  std::size_t diagonal_candidates() const {
    std::size_t n = 0;
    for (bool d : diagonal) n += d;
    return n;
  }
};

/// The §3.5 result for one task and model. Saved as `token_relations.json` (every scalar) and tables
/// `neighbour_share`, `<relation>_max`, `<relation>_mass`, `query_max_<category>`, `query_share_<category>`.
struct TokenRelationsResult {
  std::string task;                     ///< e.g. "RTE"
  std::string provenance;               ///< which examples
  std::string model;                    ///< what was analysed
  bool causal = false;                  ///< the model attends only to earlier tokens
  std::size_t examples = 0;             ///< task examples read
  HeadMatrix<double> neighbour_share;   ///< [layers, heads] mean share on the ±1 neighbours
  double diagonal_threshold = 0.5;      ///< neighbour share that makes a head diagonal (when not given)
  std::string diagonal_source;          ///< "neighbour_share >= 0.5" or what gave the set
  std::vector<ScoredHead<double>> diagonal;  ///< the diagonal heads (value: neighbour share)
  std::vector<RelationHeads> relations; ///< the relations measured
  std::string query = "[CLS]";          ///< the category measure's query
  Index query_layer = 0;                ///< its layer (the paper: the last)
  std::vector<std::string> categories;  ///< category names
  std::vector<std::size_t> category_examples;  ///< per category: examples that contain it
  std::vector<HeadMatrix<double>> query_max;   ///< per category [layers, heads]: the paper's code's measure
  std::vector<std::string> share_categories;   ///< categories + "other"
  std::vector<HeadMatrix<double>> query_share; ///< per share category [layers, heads]: exclusive shares
  std::size_t query_examples = 0;       ///< examples with a query token
  std::size_t query_skipped = 0;        ///< examples without one

  /// Per category, the mean over the heads of query_layer of query_max (one row of Figure 7).
  std::vector<double> query_layer_means() const;
  /// [heads, categories] of query_max in query_layer.
  Table<double> query_layer_table() const;
  /// Whether (layer, head) is in the diagonal set.
  bool is_diagonal(Index layer, Index head) const {
    for (const auto& d : diagonal)
      if (d.layer == layer && d.head == head) return true;
    return false;
  }
  /// The numbers a report states (the body of token_relations.json).
  nlohmann::json summary() const;
  /// Writes the result into `dir` (created).
  void save(const std::filesystem::path& dir) const;
  /// Reads a result written by save; errors name the file and what is wrong.
  static TokenRelationsResult load(const std::filesystem::path& dir);
  /// Adds another run over other examples of the same task and model (a shard): every grid becomes the mean
  /// over both sets of examples that count for it; a threshold-made diagonal set and the candidates are
  /// recomputed.
  void merge(const TokenRelationsResult& other);
};

namespace detail {

inline double mean_over_heads(const HeadMatrix<double>& m, Index layer) {
  double s = 0;
  std::size_t n = 0;
  for (Index h = 0; h < m.cols(); ++h)
    if (!std::isnan(m(layer, h))) s += m(layer, h), ++n;
  return n ? s / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

/// Candidates above the percentile, their diagonal flags and the rank correlation with the neighbour share.
inline void rank_relation(RelationHeads& r, const TokenRelationsResult& owner) {
  r.candidates.clear();
  r.diagonal.clear();
  r.threshold = std::numeric_limits<double>::quiet_NaN();
  r.spearman_with_neighbour_share = std::numeric_limits<double>::quiet_NaN();
  if (r.examples == 0) return;
  const auto p = heads_above_percentile(r.max, r.q);
  r.threshold = p.threshold;
  r.candidates = p.heads;
  for (const auto& c : r.candidates) r.diagonal.push_back(owner.is_diagonal(c.layer, c.head));
  std::vector<double> x, y;
  for (Index l = 0; l < r.max.rows(); ++l)
    for (Index h = 0; h < r.max.cols(); ++h)
      if (!std::isnan(r.max(l, h)) && !std::isnan(owner.neighbour_share(l, h))) {
        x.push_back(r.max(l, h));
        y.push_back(owner.neighbour_share(l, h));
      }
  if (x.size() >= 2) r.spearman_with_neighbour_share = spearman(x, y);
}

inline nlohmann::json scored_json(const std::vector<ScoredHead<double>>& heads) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& h : heads)
    a.push_back({{"layer", h.layer}, {"head", h.head}, {"value", darkbert::detail::json_number(h.value)}});
  return a;
}

inline std::vector<ScoredHead<double>> scored_from_json(const nlohmann::json& a, const std::string& where) {
  require(a.is_array(), where, ": expected an array of heads");
  std::vector<ScoredHead<double>> out;
  for (const auto& h : a)
    out.push_back({json_get<Index>(h, "layer", where), json_get<Index>(h, "head", where), json_double(h, "value", where)});
  return out;
}

inline std::string relation_stem(const std::string& name) { return file_stem(name); }

}  // namespace detail

inline std::vector<double> TokenRelationsResult::query_layer_means() const {
  std::vector<double> out;
  for (const auto& m : query_max) out.push_back(detail::mean_over_heads(m, query_layer));
  return out;
}

inline Table<double> TokenRelationsResult::query_layer_table() const {
  const Index heads = neighbour_share.cols();
  auto t = make_table<double>(detail::file_stem(query) + "_attention_layer_" + std::to_string(query_layer), "head",
                              darkbert::detail::index_names(heads), "category", categories);
  t.examples = query_examples;
  for (std::size_t c = 0; c < query_max.size(); ++c)
    for (Index h = 0; h < heads; ++h) t(h, static_cast<Index>(c)) = query_max[c](query_layer, h);
  return t;
}

inline nlohmann::json TokenRelationsResult::summary() const {
  using darkbert::detail::json_number;
  nlohmann::json j;
  j["format"] = "darkbert-token-relations/1";
  j["task"] = task;
  j["provenance"] = provenance;
  j["model"] = model;
  j["causal"] = causal;
  j["examples"] = examples;
  j["layers"] = neighbour_share.rows();
  j["heads"] = neighbour_share.cols();
  j["diagonal"] = {{"threshold", json_number(diagonal_threshold)}, {"source", diagonal_source},
                   {"heads", detail::scored_json(diagonal)}};
  nlohmann::json rels = nlohmann::json::array();
  for (const auto& r : relations) {
    nlohmann::json cands = nlohmann::json::array();
    for (std::size_t k = 0; k < r.candidates.size(); ++k)
      cands.push_back({{"layer", r.candidates[k].layer},
                       {"head", r.candidates[k].head},
                       {"value", json_number(r.candidates[k].value)},
                       {"diagonal", static_cast<bool>(r.diagonal[k])},
                       {"neighbour_share", json_number(neighbour_share(r.candidates[k].layer, r.candidates[k].head))}});
    rels.push_back({{"name", r.name},
                    {"file_stem", detail::relation_stem(r.name)},
                    {"source", r.source},
                    {"has_mass", r.mass.has_value()},
                    {"examples", r.examples},
                    {"skipped", r.skipped},
                    {"percentile", r.q},
                    {"threshold", json_number(r.threshold)},
                    {"candidates", cands},
                    {"diagonal_candidates", r.diagonal_candidates()},
                    {"spearman_with_neighbour_share", json_number(r.spearman_with_neighbour_share)},
                    {"max", detail::head_extremes(r.max)}});
  }
  j["relations"] = rels;
  nlohmann::json cats = nlohmann::json::array();
  const auto means = query_layer_means();
  for (std::size_t c = 0; c < categories.size(); ++c)
    cats.push_back({{"name", categories[c]},
                    {"file_stem", detail::file_stem(categories[c])},
                    {"examples_with", category_examples[c]},
                    {"query_layer_mean", json_number(means[c])}});
  nlohmann::json shares = nlohmann::json::array();
  for (std::size_t c = 0; c < share_categories.size(); ++c)
    shares.push_back({{"name", share_categories[c]},
                      {"query_layer_mean", json_number(detail::mean_over_heads(query_share[c], query_layer))}});
  std::string most;
  double best = -1;
  for (std::size_t c = 0; c < categories.size(); ++c)
    if (!std::isnan(means[c]) && means[c] > best) best = means[c], most = categories[c];
  j["query"] = {{"name", query},
                {"layer", query_layer},
                {"examples", query_examples},
                {"skipped", query_skipped},
                {"categories", cats},
                {"shares", shares},
                {"most_attended", most}};
  return j;
}

inline void TokenRelationsResult::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  auto ns = neighbour_share;
  ns.name = "neighbour_share";
  write_table(ns, dir);
  for (const auto& r : relations) {
    auto m = r.max;
    m.name = detail::relation_stem(r.name) + "_max";
    write_table(m, dir);
    if (r.mass) {
      auto s = *r.mass;
      s.name = detail::relation_stem(r.name) + "_mass";
      write_table(s, dir);
    }
  }
  for (std::size_t c = 0; c < categories.size(); ++c) {
    auto m = query_max[c];
    m.name = "query_max_" + detail::file_stem(categories[c]);
    write_table(m, dir);
  }
  for (std::size_t c = 0; c < share_categories.size(); ++c) {
    auto m = query_share[c];
    m.name = "query_share_" + detail::file_stem(share_categories[c]);
    write_table(m, dir);
  }
  write_table(query_layer_table(), dir);
  write_file_atomically(dir / "token_relations.json", summary().dump(1) + "\n");  // last: the marker
}

inline TokenRelationsResult TokenRelationsResult::load(const std::filesystem::path& dir) {
  const auto file = dir / "token_relations.json";
  const std::string where = file.string();
  const auto j = detail::read_study_json(file);
  require(j.value("format", "") == "darkbert-token-relations/1", where, ": format is ",
          j.contains("format") ? j["format"].dump() : "missing", ", expected \"darkbert-token-relations/1\"");
  TokenRelationsResult r;
  r.task = detail::json_get<std::string>(j, "task", where);
  r.provenance = detail::json_get<std::string>(j, "provenance", where);
  r.model = detail::json_get<std::string>(j, "model", where);
  r.causal = detail::json_get<bool>(j, "causal", where);
  r.examples = detail::json_get<std::size_t>(j, "examples", where);
  const auto layers = detail::json_get<Index>(j, "layers", where), heads = detail::json_get<Index>(j, "heads", where);
  auto read = [&](const std::string& name) {
    const auto path = dir / (name + ".json");
    auto t = read_json_table<double>(path);
    require(t.rows() == layers && t.cols() == heads, path.string(), ": table is ", t.rows(), " x ", t.cols(),
            ", expected ", layers, " x ", heads, " (", where, ")");
    return t;
  };
  r.neighbour_share = read("neighbour_share");
  const auto& d = detail::json_at(j, "diagonal", where);
  r.diagonal_threshold = detail::json_double(d, "threshold", where);
  r.diagonal_source = detail::json_get<std::string>(d, "source", where);
  r.diagonal = detail::scored_from_json(detail::json_at(d, "heads", where), where);
  for (const auto& e : detail::json_at(j, "relations", where)) {
    RelationHeads rel;
    rel.name = detail::json_get<std::string>(e, "name", where);
    rel.source = detail::json_get<std::string>(e, "source", where);
    rel.examples = detail::json_get<std::size_t>(e, "examples", where);
    rel.skipped = detail::json_get<std::size_t>(e, "skipped", where);
    rel.q = detail::json_double(e, "percentile", where);
    rel.max = read(detail::relation_stem(rel.name) + "_max");
    if (detail::json_get<bool>(e, "has_mass", where)) rel.mass = read(detail::relation_stem(rel.name) + "_mass");
    detail::rank_relation(rel, r);
    r.relations.push_back(std::move(rel));
  }
  const auto& q = detail::json_at(j, "query", where);
  r.query = detail::json_get<std::string>(q, "name", where);
  r.query_layer = detail::json_get<Index>(q, "layer", where);
  require(r.query_layer >= 0 && r.query_layer < layers, where, ": query layer ", r.query_layer, " is outside [0, ",
          layers, ")");
  r.query_examples = detail::json_get<std::size_t>(q, "examples", where);
  r.query_skipped = detail::json_get<std::size_t>(q, "skipped", where);
  for (const auto& c : detail::json_at(q, "categories", where)) {
    r.categories.push_back(detail::json_get<std::string>(c, "name", where));
    r.category_examples.push_back(detail::json_get<std::size_t>(c, "examples_with", where));
    r.query_max.push_back(read("query_max_" + detail::file_stem(r.categories.back())));
  }
  for (const auto& c : detail::json_at(q, "shares", where)) {
    r.share_categories.push_back(detail::json_get<std::string>(c, "name", where));
    r.query_share.push_back(read("query_share_" + detail::file_stem(r.share_categories.back())));
  }
  return r;
}

inline void TokenRelationsResult::merge(const TokenRelationsResult& other) {
  require(other.task == task, "token relations: cannot merge task ", other.task, " into ", task);
  require(other.neighbour_share.rows() == neighbour_share.rows() && other.neighbour_share.cols() == neighbour_share.cols(),
          "token relations: cannot merge results of models of different shapes");
  require(other.relations.size() == relations.size() && other.categories == categories && other.query == query &&
              other.query_layer == query_layer && other.share_categories == share_categories,
          "token relations: cannot merge results with different relations, query or categories");
  for (std::size_t k = 0; k < relations.size(); ++k) {
    auto& a = relations[k];
    const auto& b = other.relations[k];
    require(a.name == b.name && a.mass.has_value() == b.mass.has_value(), "token relations: cannot merge relation '",
            b.name, "' into '", a.name, "'");
    detail::merge_means(a.max, a.examples, b.max, b.examples);
    if (a.mass) detail::merge_means(*a.mass, a.examples, *b.mass, b.examples);
    a.examples += b.examples;
    a.skipped += b.skipped;
  }
  detail::merge_means(neighbour_share, examples, other.neighbour_share, other.examples);
  examples += other.examples;
  for (std::size_t c = 0; c < categories.size(); ++c) {
    detail::merge_means(query_max[c], category_examples[c], other.query_max[c], other.category_examples[c]);
    category_examples[c] += other.category_examples[c];
  }
  for (std::size_t c = 0; c < share_categories.size(); ++c)
    detail::merge_means(query_share[c], query_examples, other.query_share[c], other.query_examples);
  query_examples += other.query_examples;
  query_skipped += other.query_skipped;
  if (diagonal_source.rfind("neighbour_share >= ", 0) == 0) {
    diagonal.clear();
    for (Index l = 0; l < neighbour_share.rows(); ++l)
      for (Index h = 0; h < neighbour_share.cols(); ++h)
        if (neighbour_share(l, h) >= diagonal_threshold) diagonal.push_back({l, h, neighbour_share(l, h)});
  } else {
    for (auto& d : diagonal) d.value = neighbour_share(d.layer, d.head);
  }
  for (auto& r : relations) detail::rank_relation(r, *this);
}

// ---------------------------------------------------------------- running it

/// What run_token_relations measures.
struct TokenRelationsOptions {
  std::vector<RelationSpec> relations = paper_relations();  ///< class-to-class relations
  double candidate_percentile = 90;       ///< candidates: heads strictly above this percentile of the max
  double diagonal_threshold = 0.5;        ///< neighbour share that makes a head diagonal
  std::optional<std::vector<std::pair<Index, Index>>> diagonal_heads;  ///< a given set (layer, head) instead
  std::string diagonal_source = "given";  ///< what gave that set (recorded)
  CategoryQuery query;                    ///< the category measure's query ([CLS]; GPT-2: CategoryQuery::for_model)
  std::vector<TokenClass> categories = paper_features();  ///< its categories
  std::optional<Index> query_layer;       ///< its layer (default: the last)
  std::size_t batch_size = 16;            ///< examples per forward pass
  std::string model;                      ///< recorded in the result
};

/// Measures the relations, the neighbour share and the query's attention by category on `inputs`
/// (annotated), plus the dependency-linked relation of `linked` when given. `forward` may add hooks or
/// masking policies (it applies to both runs).
/// @code
/// auto r = darkbert::study::run_token_relations(model, inputs, {.model = dir.string()});
/// for (const auto& rel : r.relations) std::cout << rel.name << ": " << rel.diagonal_candidates() << " of "
///                                               << rel.candidates.size() << " candidates are diagonal\n";
/// @endcode
template <class T>
TokenRelationsResult run_token_relations(const Transformer<T>& model, const TaskInputs& inputs,
                                         const TokenRelationsOptions& options = {}, const LinkedInputs* linked = nullptr,
                                         ForwardOptions<T> forward = attention_only_options<T>()) {
  require(inputs.tokens.size() == inputs.size(), "run_token_relations: ", inputs.tokens.size(),
          " token annotations for ", inputs.size(), " examples");
  require(options.candidate_percentile >= 0 && options.candidate_percentile <= 100,
          "run_token_relations: candidate percentile ", options.candidate_percentile, " is outside [0, 100]");
  const auto layers = static_cast<Index>(model.config().num_layers);
  const auto heads = static_cast<Index>(model.config().num_heads);
  const Index query_layer = options.query_layer.value_or(layers - 1);
  require(query_layer >= 0 && query_layer < layers, "run_token_relations: query layer ", query_layer,
          " is outside [0, ", layers, ")");
  HeadSummaryAccumulator<T> summary(layers, heads);
  std::vector<ClassToClassAttention<T>> rel;
  for (const auto& spec : options.relations) rel.emplace_back(layers, heads, spec.from, spec.to);
  QueryClassMaxAttention<T> query_max(layers, heads, options.query, options.categories);
  QueryCategoryAttention<T> query_share(layers, heads, options.query.cls, options.categories);
  for_each_attention(
      model, inputs,
      [&](std::size_t i, const AttentionView<T>& view) {
        const auto& tokens = inputs.tokens[i];
        summary.add(view, tokens);
        for (auto& r : rel) r.add(view, tokens);
        query_max.add(view, tokens);
        const Index q = options.query.find(tokens, view.length());
        if (q >= 0) query_share.add(view, tokens, q);
      },
      options.batch_size, forward);

  TokenRelationsResult r;
  r.task = std::string(glue_task_info(inputs.task).name);
  r.provenance = inputs.provenance;
  r.model = options.model;
  r.causal = model.config().causal;
  r.examples = summary.examples();
  r.neighbour_share = detail::to_double(summary.result().neighbour_share);
  r.neighbour_share.name = "neighbour_share";
  r.diagonal_threshold = options.diagonal_threshold;
  if (options.diagonal_heads) {
    r.diagonal_source = options.diagonal_source;
    for (const auto& [l, h] : *options.diagonal_heads) {
      require(l >= 0 && l < layers && h >= 0 && h < heads, "run_token_relations: diagonal head ", l, ":", h,
              " is outside ", layers, " x ", heads);
      r.diagonal.push_back({l, h, r.neighbour_share(l, h)});
    }
  } else {
    r.diagonal_source = "neighbour_share >= " + format_number(options.diagonal_threshold);
    for (Index l = 0; l < layers; ++l)
      for (Index h = 0; h < heads; ++h)
        if (r.neighbour_share(l, h) >= options.diagonal_threshold) r.diagonal.push_back({l, h, r.neighbour_share(l, h)});
  }
  for (std::size_t k = 0; k < rel.size(); ++k) {
    RelationHeads h;
    h.name = options.relations[k].name;
    h.source = "token classes " + options.relations[k].from.name + " -> " + options.relations[k].to.name +
               " (every pair of the example)";
    const auto res = rel[k].result();
    h.max = detail::to_double(res.max);
    h.mass = detail::to_double(res.mass);
    h.examples = rel[k].examples();
    h.skipped = rel[k].skipped();
    h.q = options.candidate_percentile;
    detail::rank_relation(h, r);
    r.relations.push_back(std::move(h));
  }
  if (linked != nullptr && linked->inputs.size() > 0) {
    LinkAttentionAccumulator<T> acc(layers, heads, LinkDirection::from_to, "linked");
    for_each_attention(
        model, linked->inputs, [&](std::size_t i, const AttentionView<T>& view) { acc.add(view, linked->links[i]); },
        options.batch_size, forward);
    RelationHeads h;
    h.name = linked->name;
    h.source = linked->source;
    h.max = detail::to_double(acc.result());
    h.examples = acc.examples();
    h.skipped = acc.skipped();
    h.q = options.candidate_percentile;
    detail::rank_relation(h, r);
    r.relations.push_back(std::move(h));
  }
  r.query = options.query.name;
  r.query_layer = query_layer;
  r.query_examples = query_max.examples();
  r.query_skipped = query_max.skipped();
  const auto qm = query_max.result();
  for (std::size_t c = 0; c < options.categories.size(); ++c) {
    r.categories.push_back(options.categories[c].name);
    r.category_examples.push_back(query_max.examples_with(c));
    r.query_max.push_back(detail::to_double(qm[c]));
  }
  r.share_categories = query_share.category_names();
  for (const auto& m : query_share.result()) r.query_share.push_back(detail::to_double(m));
  return r;
}

// ---------------------------------------------------------------- figures

/// Writes one task's figures into `dir` (PNG and SVG): `<relation>_max_<task>` for every relation and
/// `neighbour_share_<task>` (layer x head heatmaps), and `<query>_categories_<task>` (heads x categories
/// of the query layer). Counted from 0.
inline void write_token_relation_figures(const TokenRelationsResult& r, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  const std::string task = detail::file_stem(r.task);
  auto grid = [&](const HeadMatrix<double>& m, const std::string& stem, const std::string& title,
                  const std::string& value) {
    HeatmapOptions o;
    o.title = title;
    o.x = {"head", {}, 0};
    o.y = {"layer", {}, 0};
    o.value_label = value;
    Matrix<double> v(m.rows(), m.cols());
    for (Index l = 0; l < m.rows(); ++l)
      for (Index h = 0; h < m.cols(); ++h) v(l, h) = m(l, h);
    for (const char* ext : {".png", ".svg"}) write_heatmap(dir / (stem + ext), v, o);
  };
  for (const auto& rel : r.relations)
    grid(rel.max, detail::relation_stem(rel.name) + "_max_" + task,
         rel.name + ", " + r.task + " (" + std::to_string(rel.examples) + " examples)", "mean max attention");
  grid(r.neighbour_share, "neighbour_share_" + task,
       "Share on the +-1 neighbours, " + r.task + " (diagonal: >= " + format_number(r.diagonal_threshold) + ")",
       "neighbour share");
  const auto t = r.query_layer_table();
  HeatmapOptions o;
  o.title = r.query + " attention by category, layer " + std::to_string(r.query_layer) + ", " + r.task;
  o.x = {"category", r.categories, 0};
  o.y = {"head", {}, 0};
  o.value_label = "max weight from " + r.query;
  Matrix<double> v(t.rows(), t.cols());
  for (Index i = 0; i < t.rows(); ++i)
    for (Index c = 0; c < t.cols(); ++c) v(i, c) = t(i, c);
  for (const char* ext : {".png", ".svg"})
    write_heatmap(dir / (detail::file_stem(r.query) + "_categories_" + task + ext), v, o);
}

/// The paper's Figure 7 over several tasks: rows tasks, columns categories, each cell the mean over the
/// query layer's heads of the query's maximum weight to the category. Writes `<query>_categories.{png,svg}`
/// and the table `<query>_categories.{csv,json,npy}` into `dir`. The results must share their categories.
inline void write_cls_category_figure(const std::vector<TokenRelationsResult>& results, const std::filesystem::path& dir) {
  require(!results.empty(), "write_cls_category_figure: no results");
  const auto& first = results.front();
  std::vector<std::string> tasks;
  for (const auto& r : results) {
    require(r.categories == first.categories, "write_cls_category_figure: task ", r.task,
            " has other categories than ", first.task);
    tasks.push_back(r.task);
  }
  const std::string stem = detail::file_stem(first.query) + "_categories";
  auto t = make_table<double>(stem, "task", tasks, "category", first.categories);
  for (std::size_t k = 0; k < results.size(); ++k) {
    const auto means = results[k].query_layer_means();
    for (std::size_t c = 0; c < means.size(); ++c) t(static_cast<Index>(k), static_cast<Index>(c)) = means[c];
  }
  write_table(t, dir);
  HeatmapOptions o;
  o.title = first.query + " attention by category, layer " + std::to_string(first.query_layer) + " (mean over heads)";
  o.x = {"category", first.categories, 0};
  o.y = {"task", tasks, 0};
  o.value_label = "max weight from " + first.query;
  Matrix<double> v(t.rows(), t.cols());
  for (Index i = 0; i < t.rows(); ++i)
    for (Index c = 0; c < t.cols(); ++c) v(i, c) = t(i, c);
  for (const char* ext : {".png", ".svg"}) write_heatmap(dir / (stem + ext), v, o);
}

}  // namespace darkbert::study
