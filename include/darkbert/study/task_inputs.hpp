#pragma once
/// @file
/// What every section of the study reads: a task's evaluation examples, encoded for the model, annotated
/// with the linguistic features of §3.4/§3.5, and run through the model to get one attention view per
/// example. The sections (study/*.hpp) and `darkbert reproduce` share this, so every figure of one run is
/// computed on the same examples.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// auto model = darkbert::Transformer<float>::load(dir);
/// auto tokenizer = darkbert::Tokenizer::from_directory(dir);
/// auto annotator = darkbert::default_annotator(root);
/// auto inputs = darkbert::study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, model.config(),
///                                                 {.max_examples = 200, .seed = 1, .annotator = &annotator});
/// darkbert::study::for_each_attention(model, inputs, [&](std::size_t i, const darkbert::AttentionView<float>& v) {
///   // v: [layers, heads, n, n] of example i; inputs.tokens[i]: its token annotations
/// });
/// @endcode
///
/// Causal models are read the same way: the view knows it is causal and every metric keeps to the visible
/// (lower-triangle) keys.

#include <algorithm>  // std::min, std::sort
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/analysis/attention_view.hpp"
#include "darkbert/analysis/linguistic_tokens.hpp"
#include "darkbert/analysis/token_annotation.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/data/annotator.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/data/seeded_shuffle.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "darkbert/train/labelled_texts.hpp"

namespace darkbert::study {

/// Which examples a section reads, and how they are prepared.
struct TaskInputOptions {
  std::size_t max_examples = 0;         ///< at most this many evaluation examples (0 = all)
  std::uint64_t seed = 0;               ///< which ones, when capped: a seeded sample, kept in file order
  bool first = false;                   ///< when capped: the first ones instead (Table 1's scored examples)
  std::size_t max_length = 128;         ///< tokens per example (pairs truncated longest-first)
  const Annotator* annotator = nullptr;  ///< POS, subject/object, negation for every token (null = none)
};

/// A task's evaluation examples, encoded and annotated.
struct TaskInputs {
  GlueTask task = GlueTask::mrpc;                    ///< which GLUE task
  GlueData eval;                                     ///< the chosen examples' texts and labels
  LabelledTexts texts;                               ///< their encodings and labels (metric inputs)
  std::vector<std::vector<TokenAnnotation>> tokens;  ///< per example, per valid token
  std::string provenance;                            ///< file, split and the sample taken, in one sentence
  bool causal = false;                               ///< the model attends only to earlier tokens
  int pad_id = 0;                                    ///< the tokenizer's padding id (batches pad with it)

  /// Number of examples.
  std::size_t size() const { return texts.size(); }
};

/// The evaluation split of `task` (the one fine-tuning scores; QNLI: its documented split of dev), a seeded
/// sample of it when capped (or its first examples), encoded for a model with `config` and annotated when an annotator is given.
inline TaskInputs load_task_inputs(const DataRoot& root, GlueTask task, const Tokenizer& tokenizer,
                                   const ModelConfig& config, const TaskInputOptions& options = {}) {
  TaskInputs out;
  out.task = task;
  out.causal = config.causal;
  out.pad_id = tokenizer.pad_id();
  auto data = load_glue_finetune(root, task);
  out.eval = std::move(data.eval);
  const std::size_t total = out.eval.examples.size();
  if (options.max_examples > 0 && options.max_examples < total && options.first) {
    out.eval.examples.resize(options.max_examples);
  } else if (options.max_examples > 0 && options.max_examples < total) {
    auto order = seeded_permutation(total, options.seed);
    order.resize(options.max_examples);
    std::sort(order.begin(), order.end());
    std::vector<GlueExample> kept;
    kept.reserve(order.size());
    for (std::size_t i : order) kept.push_back(std::move(out.eval.examples[i]));
    out.eval.examples = std::move(kept);
  }
  out.texts = encode_glue(tokenizer, out.eval, task, options.max_length);
  out.provenance = data.provenance + "; " + std::to_string(out.size()) + " of " + std::to_string(total) +
                   " evaluation examples" +
                   (out.size() == total ? ""
                    : options.first       ? " (the first ones)"
                                          : " (seeded sample, seed " + std::to_string(options.seed) + ")");
  const bool pair = glue_task_info(task).pair;
  out.tokens.reserve(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& e = out.texts.encodings[i];
    const auto& ex = out.eval.examples[i];
    if (options.annotator != nullptr)
      out.tokens.push_back(pair ? annotate_example(*options.annotator, e, ex.text_a, ex.text_b)
                                : annotate_example(*options.annotator, e, ex.text_a));
    else
      out.tokens.push_back(annotations_from_encoding(e));
  }
  return out;
}

namespace detail {

// Example b of a forward's attentions [layers, B, heads, L, L].
template <class T>
AttentionView<T> example_view(const Tensor<T, 5>& attentions, Index b, Index length, bool causal) {
  const auto& s = attentions.shape();
  return AttentionView<T>::batch_slice(attentions.data(), static_cast<Index>(s[0]), static_cast<Index>(s[1]),
                                       static_cast<Index>(s[2]), static_cast<Index>(s[3]), b, length, causal);
}

}  // namespace detail

/// Inference options that keep the attention maps and skip what the study does not read.
template <class T>
ForwardOptions<T> attention_only_options() {
  ForwardOptions<T> o;
  o.keep_hidden_states = false;
  o.compute_heads = false;
  o.token_logits = false;
  return o;
}

/// Runs `model` over `inputs` in batches of `batch_size` and calls fn(example index, view) for every
/// example, in order. The view points into the batch's output and is valid only inside the call.
/// `options` may add hooks or masking policies (its keep_attentions is forced on).
template <class T, class Fn>
void for_each_attention(const Transformer<T>& model, const TaskInputs& inputs, Fn&& fn, std::size_t batch_size = 16,
                        ForwardOptions<T> options = attention_only_options<T>()) {
  require(batch_size > 0, "for_each_attention: batch size must be positive");
  options.keep_attentions = true;
  const auto types = token_types_for(model.config());
  ForwardResult<T> out;
  std::vector<std::size_t> indices;
  for (std::size_t first = 0; first < inputs.size(); first += batch_size) {
    indices.clear();
    for (std::size_t i = first; i < std::min(inputs.size(), first + batch_size); ++i) indices.push_back(i);
    const Batch batch = batch_of(inputs.texts, indices, inputs.pad_id, types);
    model.forward_into(batch, options, out);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const auto b = static_cast<Index>(k);
      fn(indices[k], detail::example_view(out.attentions, b, batch.valid_length(b), model.config().causal));
    }
  }
}

/// The same examples through two models of one shape (e.g. pretrained and fine-tuned): fn(i, view_a, view_b);
/// `policies_b` (may be null) masks heads in the second model's forward.
template <class T, class Fn>
void for_each_attention_pair(const Transformer<T>& a, const Transformer<T>& b, const TaskInputs& inputs, Fn&& fn,
                             std::size_t batch_size = 16, const MaskingPolicies<T>* policies_b = nullptr) {
  require(a.config().num_layers == b.config().num_layers && a.config().num_heads == b.config().num_heads,
          "for_each_attention_pair: the models differ in shape (", a.config().num_layers, " x ", a.config().num_heads,
          " against ", b.config().num_layers, " x ", b.config().num_heads, " heads)");
  require(batch_size > 0, "for_each_attention_pair: batch size must be positive");
  const auto options = attention_only_options<T>();
  auto options_b = options;
  options_b.policies = policies_b;
  const auto types = token_types_for(a.config());
  ForwardResult<T> out_a, out_b;
  std::vector<std::size_t> indices;
  for (std::size_t first = 0; first < inputs.size(); first += batch_size) {
    indices.clear();
    for (std::size_t i = first; i < std::min(inputs.size(), first + batch_size); ++i) indices.push_back(i);
    const Batch batch = batch_of(inputs.texts, indices, inputs.pad_id, types);
    a.forward_into(batch, options, out_a);
    b.forward_into(batch, options_b, out_b);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const auto r = static_cast<Index>(k);
      const Index n = batch.valid_length(r);
      fn(indices[k], detail::example_view(out_a.attentions, r, n, a.config().causal),
         detail::example_view(out_b.attentions, r, n, b.config().causal));
    }
  }
}

}  // namespace darkbert::study
