#pragma once
/// @file
/// Fine-tuning a sequence classifier (or regressor) on labelled texts, and scoring it, as BERT's
/// run_classifier does: AdamW, linear warm-up over the first 10% of the steps then linear decay, batch 32,
/// 3 epochs, dropout on, examples reshuffled every epoch from the seed. With `group_by_length` the batches
/// hold examples of like length (train/length_grouped_batches.hpp): the same examples per epoch with far
/// less padding.
///
/// @code
/// auto model = pretrained.with_task_heads(config, heads, seed);          // add a fresh classifier
/// darkbert::FineTuneOptions options{.learning_rate = 2e-5, .seed = 1};
/// auto history = darkbert::fine_tune(model, train, tokenizer.pad_id(), options);
/// auto predictions = darkbert::predict(model, dev, tokenizer.pad_id());
/// double acc = darkbert::accuracy_metric(predictions, dev.labels);
/// @endcode
///
/// A frozen encoder (options.train_encoder = false) is the paper's third baseline: the encoder runs as in
/// inference and only the task heads (pooler and classifier) learn.

#include <algorithm>   // std::min
#include <cmath>       // std::ceil
#include <cstdint>     // std::uint64_t, std::int64_t
#include <cstdio>      // std::snprintf
#include <functional>  // std::function
#include <span>        // std::span
#include <vector>      // std::vector

#include "../analysis/predictions.hpp"  // append_sequence_predictions
#include "../core/error.hpp"
#include "../core/progress.hpp"
#include "../core/threads.hpp"
#include "../data/seeded_shuffle.hpp"  // seeded_permutation
#include "../model/transformer.hpp"
#include "labelled_texts.hpp"
#include "length_grouped_batches.hpp"
#include "optimizer.hpp"
#include "task_loss.hpp"
#include "training_step.hpp"

namespace darkbert {

/// BERT's fine-tuning recipe (run_classifier's defaults).
struct FineTuneOptions {
  int epochs = 3;                ///< passes over the training set
  std::size_t batch_size = 32;   ///< examples per step
  double learning_rate = 2e-5;   ///< peak learning rate
  double warmup_fraction = 0.1;  ///< share of all steps spent warming up
  double weight_decay = 0.01;    ///< AdamW's decoupled decay (matrices only)
  double max_grad_norm = 1.0;    ///< global-norm clipping
  bool dropout = true;           ///< the config's dropout probabilities
  bool train_encoder = true;  ///< false: frozen encoder, only the task heads learn
  std::uint64_t seed = 0;     ///< example order (seed + epoch) and dropout masks
  bool group_by_length = false;  ///< batch examples of like length together (less padding, same epochs)
  bool show_progress = true;  ///< a progress bar with loss and examples/s
};

/// What a fine-tuning run did.
struct FineTuneHistory {
  std::vector<double> epoch_loss;  ///< mean training loss of each epoch
  std::int64_t steps = 0;            ///< optimizer steps
  double seconds = 0;                ///< wall time (evaluations in after_epoch included)
  double examples_per_second = 0;    ///< training examples per second of wall time
};

/// Scores of the model on `texts`: the argmax class (as a double), or the regression output.
template <class T>
std::vector<double> predict(const Transformer<T>& model, const LabelledTexts& texts, int pad_id,
                            std::size_t batch_size = 64) {
  std::vector<double> sorted;
  sorted.reserve(texts.size());
  ForwardOptions<T> options;
  options.keep_attentions = false;
  options.keep_hidden_states = false;
  ForwardResult<T> result;
  const EvaluationBatches eval = evaluation_batches(texts, batch_size, pad_id, token_types_for(model.config()));
  for (const auto& batch : eval.batches) {
    adopt_thread_share();
    model.forward_into(batch, options, result);
    append_sequence_predictions(result, sorted);
  }
  std::vector<double> out(texts.size());
  for (std::size_t r = 0; r < sorted.size(); ++r) out[eval.order[r]] = sorted[r];
  return out;
}

namespace detail {
/// The example indices of each step of one epoch: consecutive slices of a seeded permutation, or
/// length-grouped batches.
inline std::vector<std::vector<std::size_t>> epoch_batches(const LabelledTexts& train, const FineTuneOptions& o,
                                                           std::uint64_t seed) {
  if (o.group_by_length) return length_grouped_batches(train.lengths(), o.batch_size, seed);
  return consecutive_batches(seeded_permutation(train.size(), seed), o.batch_size);
}
}  // namespace detail

/// Trains `model` in place. `after_epoch(epoch)` runs after each epoch (e.g. to evaluate).
template <class T>
FineTuneHistory fine_tune(Transformer<T>& model, const LabelledTexts& train, int pad_id,
                          const FineTuneOptions& o, const std::function<void(int)>& after_epoch = {}) {
  const auto& head = model.params().task_heads.classifier;
  require(head.has_value(), "fine_tune: the model has no sequence classification head (use with_task_heads)");
  require(head->out.out() == train.num_labels, "fine_tune: the classifier has ", head->out.out(),
          " outputs but the texts have ", train.num_labels, train.regression ? " (regression)" : " labels");
  require(train.size() > 0 && o.batch_size > 0 && o.epochs > 0, "fine_tune: need examples, a batch size and epochs");
  const std::size_t per_epoch = (train.size() + o.batch_size - 1) / o.batch_size;
  const auto total = static_cast<std::int64_t>(per_epoch) * o.epochs;
  const LinearSchedule schedule{.peak = o.learning_rate,
                                .warmup_steps = static_cast<std::int64_t>(std::ceil(o.warmup_fraction * total)),
                                .total_steps = total};
  AdamW<T> optimizer(model, {.weight_decay = o.weight_decay, .train_encoder = o.train_encoder});
  TrainingStep<T> training(model);
  TaskLabels labels;

  FineTuneHistory history;
  Progress progress("fine-tune", static_cast<long>(total), o.show_progress);
  std::int64_t step = 0;
  std::size_t seen = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto batches = detail::epoch_batches(train, o, o.seed + static_cast<std::uint64_t>(epoch));
    double loss_sum = 0;
    for (std::size_t b = 0; b < batches.size(); ++b) {
      adopt_thread_share();  // a worker beside others takes the threads they gave back (core/threads.hpp)
      const std::span<const std::size_t> rows(batches[b]);
      const Batch batch = batch_of(train, rows, pad_id, token_types_for(model.config()), &labels);
      const double value = training.forward_backward(model, batch, labels, {.dropout = o.dropout, .seed = o.seed,
                                                     .step = static_cast<std::uint64_t>(step), .train_encoder = o.train_encoder});
      optimizer.step(training.gradients(), schedule(step), {.max_grad_norm = o.max_grad_norm});
      optimizer.zero_grad(training.gradients());
      loss_sum += value;
      seen += rows.size();
      ++step;
      char note[96];
      std::snprintf(note, sizeof note, "epoch %d  loss %.4f  %.0f ex/s", epoch + 1, loss_sum / static_cast<double>(b + 1),
                    static_cast<double>(seen) / std::max(1e-9, progress.elapsed_seconds()));
      progress.set_note(note);
      progress.advance();
    }
    history.epoch_loss.push_back(loss_sum / static_cast<double>(per_epoch));
    if (after_epoch) after_epoch(epoch);
  }
  progress.finish();
  history.steps = step;
  history.seconds = progress.elapsed_seconds();
  history.examples_per_second = static_cast<double>(seen) / std::max(1e-9, history.seconds);
  return history;
}

}  // namespace darkbert
