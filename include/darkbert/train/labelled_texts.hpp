#pragma once
/// @file
/// Labelled texts ready for a sequence classifier: one Encoding and one label per example, and the batches
/// a training or evaluation loop draws from them (padded to the longest row of each batch, so short
/// sentences cost little).
///
/// @code
/// auto data = darkbert::load_glue_finetune(root, darkbert::GlueTask::sst2);
/// auto train = darkbert::encode_glue(tokenizer, data.train, darkbert::GlueTask::sst2, 128);
/// darkbert::TaskLabels labels;
/// darkbert::Batch batch = darkbert::batch_of(train, {0, 1, 2, 3}, tokenizer.pad_id(),
///                                             darkbert::token_types_for(model.config()), &labels);
/// @endcode

#include <algorithm>  // std::max, std::count
#include <cstddef>    // std::size_t
#include <map>        // std::map
#include <span>       // std::span
#include <string>     // std::string
#include <vector>     // std::vector

#include "../core/error.hpp"
#include "../data/glue.hpp"
#include "../model/batch.hpp"
#include "../tokenizer/tokenizer.hpp"
#include "length_grouped_batches.hpp"  // length_sorted_order, consecutive_batches
#include "task_loss.hpp"              // TaskLabels

namespace darkbert {

/// Encoded examples and their labels.
struct LabelledTexts {
  std::vector<Encoding> encodings;  ///< one per example
  std::vector<double> labels;  ///< class index (as a double) or score (regression)
  bool regression = false;     ///< labels are scores
  int num_labels = 0;          ///< classes; 1 for regression (the classifier's outputs)
  std::string provenance;      ///< where the texts came from, for logs and results

  /// Number of examples.
  std::size_t size() const { return encodings.size(); }

  /// Tokens of each example (what a batch pads to its longest).
  std::vector<std::size_t> lengths() const {
    std::vector<std::size_t> out(encodings.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = encodings[i].size();
    return out;
  }

  /// Share of the most frequent class (the accuracy of always guessing it); 0 for regression.
  double majority_rate() const {
    if (regression || labels.empty()) return 0.0;
    std::map<double, std::size_t> counts;
    std::size_t best = 0;
    for (double l : labels) best = std::max(best, ++counts[l]);
    return static_cast<double>(best) / static_cast<double>(labels.size());
  }
};

/// Tokenises a GLUE split, truncated longest-first to max_length: BERT pairs as [CLS] a [SEP] b [SEP]; GPT-2
/// inputs as the GPT-2 replication built them, <|endoftext|> a (<|endoftext|> b) (EncodeOptions::end_of_text_boundaries).
inline LabelledTexts encode_glue(const Tokenizer& tokenizer, const GlueData& data, GlueTask task,
                                 std::size_t max_length) {
  const auto& info = glue_task_info(task);
  LabelledTexts out;
  out.regression = info.regression;
  out.num_labels = info.regression ? 1 : static_cast<int>(info.labels.size());
  out.provenance = std::string(info.name) + " " + data.split + " (" + data.file.string() + ")";
  const EncodeOptions options{.max_length = max_length, .end_of_text_boundaries = true};
  out.encodings.reserve(data.examples.size());
  for (const auto& ex : data.examples) {
    out.encodings.push_back(info.pair ? tokenizer.encode_pair(ex.text_a, ex.text_b, options)
                                      : tokenizer.encode(ex.text_a, options));
    out.labels.push_back(info.regression ? ex.score : static_cast<double>(ex.label));
  }
  return out;
}

/// The examples at `indices` as one batch padded with pad_id, with or without their token types (pass
/// token_types_for(model.config())); their labels go to `labels` when given.
inline Batch batch_of(const LabelledTexts& texts, std::span<const std::size_t> indices, int pad_id, TokenTypes types,
                      TaskLabels* labels = nullptr) {
  require(!indices.empty(), "batch_of: no examples");
  std::vector<Encoding> rows;
  rows.reserve(indices.size());
  if (labels) {
    labels->classes.clear();
    labels->values.clear();
  }
  for (std::size_t i : indices) {
    require(i < texts.size(), "batch_of: example ", i, " is out of range (", texts.size(), " examples)");
    rows.push_back(texts.encodings[i]);
    if (!labels) continue;
    if (texts.regression) labels->values.push_back(texts.labels[i]);
    else labels->classes.push_back(static_cast<int>(texts.labels[i]));
  }
  return Batch::from_encodings(rows, pad_id, types);
}

/// Evaluation batches: every example once, in batches of like length, and which example each row is.
struct EvaluationBatches {
  std::vector<Batch> batches;      ///< batch_size examples each (the last fewer), longest first
  std::vector<std::size_t> order;  ///< order[r]: the example of the r-th row over all batches
};

/// All of `texts` in batches of batch_size examples of like length (length_sorted_order): a random slice of
/// GLUE in file order pads to 1.5-3 times its tokens, sorted to a few percent more. Scores of row r belong to
/// example order[r].
inline EvaluationBatches evaluation_batches(const LabelledTexts& texts, std::size_t batch_size, int pad_id,
                                            TokenTypes types) {
  require(batch_size > 0, "evaluation_batches: batch size must be positive");
  EvaluationBatches out;
  out.order = length_sorted_order(texts.lengths());
  for (const auto& rows : consecutive_batches(out.order, batch_size)) out.batches.push_back(batch_of(texts, rows, pad_id, types));
  return out;
}

/// Consecutive batches of batch_size examples over all of `texts`, in order.
inline std::vector<Batch> sequential_batches(const LabelledTexts& texts, std::size_t batch_size, int pad_id,
                                             TokenTypes types) {
  require(batch_size > 0, "sequential_batches: batch size must be positive");
  std::vector<Batch> batches;
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    indices.push_back(i);
    if (indices.size() == batch_size || i + 1 == texts.size()) {
      batches.push_back(batch_of(texts, indices, pad_id, types));
      indices.clear();
    }
  }
  return batches;
}

}  // namespace darkbert
