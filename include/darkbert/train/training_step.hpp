#pragma once
/// @file
/// One forward + loss + backward of a model on a batch, with the buffers a training loop reuses from step
/// to step (tape, gradients, outputs, loss targets). Fine-tuning, pretraining and the train-step benchmark
/// all step through this, so there is one place where a training step is written.
///
/// @code
/// darkbert::TrainingStep<float> step(model);
/// darkbert::AdamW<float> optimizer(model);
/// for (std::uint64_t s = 0; s < steps; ++s) {
///   const double loss = step.forward_backward(model, batch, labels, {.seed = 7, .step = s});
///   optimizer.step(step.gradients(), schedule(s));
///   optimizer.zero_grad(step.gradients());
/// }
/// @endcode

#include <cmath>    // std::isfinite
#include <cstdint>  // std::uint64_t
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "../core/error.hpp"
#include "../model/training_pass.hpp"
#include "../model/transformer.hpp"
#include "sampled_softmax.hpp"
#include "task_loss.hpp"

namespace darkbert {

/// The random and trainable parts of one step.
struct StepSettings {
  bool dropout = true;         ///< the config's dropout probabilities
  std::uint64_t seed = 0;      ///< dropout masks: stream_key(seed, step, site)
  std::uint64_t step = 0;      ///< the step number (dropout stream)
  bool train_encoder = true;   ///< false: the frozen-encoder baseline (only task heads get gradients)
};

/// A training step's reusable buffers (see the file comment).
template <class T>
class TrainingStep {
 public:
  /// Gradients shaped like `model`'s parameters, all zero.
  explicit TrainingStep(const Transformer<T>& model) : grads_(model.zero_gradients()) {
    options_.keep_attentions = false;  // the tape keeps what the backward needs
    options_.keep_hidden_states = false;
  }

  /// Forward (recording), task loss, backward: gradients are added to gradients(). `positions`: compute
  /// LM logits only there (the masked positions of BERT's MLM). `candidates`: compute them only for these
  /// vocabulary columns (sampled softmax; the labels are then column indices). Returns the loss; a
  /// non-finite loss is an error naming the step.
  double forward_backward(const Transformer<T>& model, const Batch& batch, const TaskLabels& labels,
                          const StepSettings& s, const std::vector<std::pair<Index, Index>>& positions = {},
                          const SampledCandidates* candidates = nullptr) {
    const TrainingPass<T> pass{.tape = &tape_, .gradients = &grads_, .dropout = s.dropout, .seed = s.seed,
                               .step = s.step, .train_encoder = s.train_encoder};
    options_.training = &pass;
    options_.logit_positions = positions;
    options_.decoder_rows.clear();
    options_.decoder_offsets.clear();
    if (candidates) {
      options_.decoder_rows = candidates->rows;
      options_.decoder_offsets = candidates->offsets;
    }
    model.forward_into(batch, options_, result_);
    const auto loss = task_loss(tape_, model, batch, result_, labels, targets_);
    const double value = static_cast<double>(loss.value()[0]);
    if (!std::isfinite(value)) fail("training: the loss is ", value, " at step ", s.step, " (learning rate too high?)");
    tape_.backward(loss);
    options_.training = nullptr;
    return value;
  }

  /// Where the gradients accumulate (AdamW::step reads them, AdamW::zero_grad clears them).
  TransformerParams<T>& gradients() { return grads_; }
  /// The tape of the last step (its arena size, for memory reports).
  const autodiff::Tape<T>& tape() const { return tape_; }

 private:
  autodiff::Tape<T> tape_;
  TransformerParams<T> grads_;
  ForwardOptions<T> options_;
  ForwardResult<T> result_;
  LossTargets<T> targets_;
};

}  // namespace darkbert
