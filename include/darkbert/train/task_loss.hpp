#pragma once
/// @file
/// The loss of a model's task head, as Hugging Face computes it (mean reduction):
/// @code
/// sequence classifier, several labels    cross-entropy of sequence_logits against classes
/// sequence classifier, one label         MSE of sequence_logits against values (regression)
/// masked LM (+ NSP)                      cross-entropy over tokens != -100 (+ cross-entropy of NSP)
/// causal LM (GPT-2)                      cross-entropy of logits[:, :-1] against tokens[:, 1:] (or, with
///                                        logit_positions, of the logits there against the next tokens)
/// @endcode
///
/// @code
/// TaskLabels labels{.classes = {2, 0, 1}};
/// auto loss = darkbert::task_loss(tape, model, batch, result, labels);   // after a training forward
/// tape.backward(loss);
/// @endcode

#include <vector>  // std::vector

#include "../autodiff/functions.hpp"
#include "../core/error.hpp"
#include "../model/batch.hpp"
#include "../kernels/loss.hpp"  // ignore_index
#include "../model/transformer.hpp"

namespace darkbert {

/// The labels of a batch for the model's task head(s); fill the fields the model's heads need.
struct TaskLabels {
  std::vector<int> classes;        ///< [B]    sequence classification
  std::vector<double> values;      ///< [B]    regression (a model with one label)
  std::vector<int> tokens;         ///< [B·L]  masked / causal LM targets, kernels::ignore_index = ignored; for a
                                   ///< causal LM tokens[b, i] is the token at i (the shift is done here)
  std::vector<int> next_sentence;  ///< [B]    BERT NSP: 0 = B follows A, 1 = random
};

/// Targets converted for the loss functions, kept until backward has run (the tape points at them).
template <class T>
struct LossTargets {
  std::vector<int> classes;  ///<  class per row, converted for cross-entropy
  std::vector<T> values;  ///<  target per row, converted for MSE
};

/// A task's loss in its two parts, each the mean over its own rows: the per-token part (masked or causal LM)
/// and the per-sequence part (classification, regression, NSP). Either may be absent (invalid Var).
template <class T>
struct TaskLossParts {
  autodiff::Var<T> tokens;     ///< mean over token_rows predicted tokens
  Index token_rows = 0;        ///< tokens with a target (not kernels::ignore_index)
  autodiff::Var<T> sequences;  ///< mean over sequence_rows sequences
  Index sequence_rows = 0;     ///< sequences with a target
};

/// The weight of each part in the loss: 1 and 1 for a whole batch; a slice of a batch weighs its parts by
/// its share of the batch's rows, so that the slices' losses add up to the batch's mean (TrainingStep).
struct LossWeights {
  double tokens = 1;     ///< weight of TaskLossParts::tokens
  double sequences = 1;  ///< weight of TaskLossParts::sequences
};

/// The parts of the model's task loss as Hugging Face computes it (cross-entropy, MSE, MLM + NSP or
/// shifted causal LM), recorded on `tape`; `targets` must outlive tape.backward.
template <class T>
TaskLossParts<T> task_loss_parts(autodiff::Tape<T>& tape, const Transformer<T>& model, const Batch& batch,
                                 const ForwardResult<T>& result, const TaskLabels& labels, LossTargets<T>& targets) {
  namespace af = autodiff;
  const auto& heads = model.params().task_heads;
  const auto& c = model.config();
  const Index B = batch.batch_size, L = batch.length;
  const auto u = [](Index v) { return static_cast<std::size_t>(v); };
  const auto& vars = result.vars;
  TaskLossParts<T> parts;
  if (heads.classifier) {
    require(vars.sequence_logits.valid(), "task_loss: run a training forward (ForwardOptions::training) first");
    const Index outputs = heads.classifier->out.out();
    parts.sequence_rows = B;
    if (outputs == 1 || c.problem_type == "regression") {
      require(outputs == 1, "task_loss: regression needs a classifier with one output, this one has ", outputs);
      require(labels.values.size() == u(B), "task_loss: regression needs ", B, " values, got ", labels.values.size());
      targets.values.assign(labels.values.begin(), labels.values.end());
      parts.sequences = af::mse(tape, vars.sequence_logits, targets.values.data());
      return parts;
    }
    require(labels.classes.size() == u(B), "task_loss: classification needs ", B, " class labels, got ",
            labels.classes.size());
    targets.classes = labels.classes;
    parts.sequences = af::cross_entropy(tape, vars.sequence_logits, targets.classes.data());
    return parts;
  }
  if (heads.masked_lm || heads.causal_lm) {
    require(labels.tokens.size() == u(B * L), "task_loss: a language-model head needs B·L = ", B * L,
            " token labels, got ", labels.tokens.size());
    const bool selected = vars.selected_logits.valid();
    require(selected || vars.token_logits.valid(), "task_loss: run a training forward with token logits first");
    targets.classes.clear();
    if (selected) {
      // The logits exist only at the selected positions (BERT's masked tokens, or the positions a causal
      // LM predicts from): gather their labels, shifted by one for a causal LM.
      const Index shift = heads.causal_lm ? 1 : 0;
      for (Index r = 0; r < vars.selected_logits.rows(); ++r) {
        const Index row = result.scratch.rows[u(2 * B + r)];
        require(row % L + shift < L, "task_loss: logit position ", r, " is the last of its row: a causal LM",
                " predicts nothing there");
        targets.classes.push_back(labels.tokens[u(row + shift)]);
      }
    } else if (heads.causal_lm) {
      // Position i predicts the token at i + 1; the last position of each row predicts nothing.
      targets.classes.assign(u(B * L), kernels::ignore_index);
      for (Index b = 0; b < B; ++b)
        for (Index i = 0; i + 1 < L; ++i) targets.classes[u(b * L + i)] = labels.tokens[u(b * L + i + 1)];
    } else {
      targets.classes = labels.tokens;
    }
    parts.tokens = af::cross_entropy(tape, selected ? vars.selected_logits : vars.token_logits, targets.classes.data());
    for (const int t : targets.classes) parts.token_rows += t != kernels::ignore_index;
    if (heads.next_sentence && !labels.next_sentence.empty()) {
      require(labels.next_sentence.size() == u(B), "task_loss: NSP needs ", B, " labels, got ",
              labels.next_sentence.size());
      parts.sequences = af::cross_entropy(tape, vars.next_sentence_logits, labels.next_sentence.data());
      parts.sequence_rows = B;
    }
    return parts;
  }
  fail("task_loss: the model has no task head to train (", c.architecture, ")");
}

/// The loss from its parts: weights.tokens · tokens + weights.sequences · sequences (a weight of 1 adds
/// nothing to the tape).
template <class T>
autodiff::Var<T> weighted_loss(autodiff::Tape<T>& tape, const TaskLossParts<T>& parts, const LossWeights& weights = {}) {
  namespace af = autodiff;
  auto weighted = [&](const af::Var<T>& part, double w) {
    return w == 1.0 ? part : af::scale(tape, part, static_cast<T>(w));
  };
  if (parts.tokens.valid() && parts.sequences.valid())
    return af::add(tape, weighted(parts.tokens, weights.tokens), weighted(parts.sequences, weights.sequences));
  return parts.tokens.valid() ? weighted(parts.tokens, weights.tokens) : weighted(parts.sequences, weights.sequences);
}

/// The loss of the model's task as Hugging Face computes it (cross-entropy, MSE, MLM + NSP or shifted
/// causal LM), recorded on `tape`; `targets` must outlive tape.backward.
template <class T>
autodiff::Var<T> task_loss(autodiff::Tape<T>& tape, const Transformer<T>& model, const Batch& batch,
                           const ForwardResult<T>& result, const TaskLabels& labels, LossTargets<T>& targets) {
  return weighted_loss(tape, task_loss_parts(tape, model, batch, result, labels, targets));
}

}  // namespace darkbert
