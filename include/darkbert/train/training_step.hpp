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

#include <omp.h>  // omp_get_max_threads, omp_set_num_threads, omp_in_parallel

#include <algorithm>  // std::min
#include <cmath>      // std::isfinite
#include <cstdint>    // std::uint64_t
#include <exception>  // std::exception_ptr
#include <memory>     // std::unique_ptr
#include <utility>    // std::pair
#include <vector>     // std::vector

#include "../core/error.hpp"
#include "../model/parameter_names.hpp"
#include "../model/training_pass.hpp"
#include "../model/transformer.hpp"
#include "sampled_softmax.hpp"
#include "task_loss.hpp"

namespace darkbert {

/// The random and trainable parts of one step.
struct StepSettings {
  bool dropout = true;         ///< the config's dropout probabilities
  double dropout_scale = 1;    ///< ... times this (TrainingPass::dropout_scale)
  std::uint64_t seed = 0;      ///< dropout masks: stream_key(seed, step, site)
  std::uint64_t step = 0;      ///< the step number (dropout stream)
  bool train_encoder = true;   ///< false: the frozen-encoder baseline (only task heads get gradients)
};

/// A training step's reusable buffers (see the file comment).
template <class T>
class TrainingStep {
 public:
  /// Gradients shaped like `model`'s parameters, all zero. `slices` > 1 splits each batch into that many
  /// slices of whole sequences, run side by side on the threads (see forward_backward).
  explicit TrainingStep(const Transformer<T>& model, int slices = 1) {
    require(slices >= 1, "TrainingStep: the number of batch slices must be at least 1, got ", slices);
    for (int k = 0; k < slices; ++k) {
      auto& slice = *slices_.emplace_back(std::make_unique<Slice>());  // a tape does not move
      slice.grads = model.zero_gradients();
      slice.options.keep_attentions = false;  // the tape keeps what the backward needs
      slice.options.keep_hidden_states = false;
      // The gradient tensors never move: walked once here, added up after every sliced step.
      for (const auto& slot : parameter_slots(slice.grads, model.config())) slice.gradient_blocks.emplace_back(slot.data, slot.elements());
    }
  }

  /// Forward (recording), task loss, backward: gradients are added to gradients(). `positions`: compute
  /// LM logits only there (the masked positions of BERT's MLM). `candidates`: compute them only for these
  /// vocabulary columns (sampled softmax; the labels are then column indices). Returns the loss; a
  /// non-finite loss is an error naming the step.
  ///
  /// With several slices, slice k takes the k-th run of about B / slices sequences and runs its own
  /// forward and backward on one thread, slices side by side (each on the threads' share of a step that
  /// is too small to split every product and element-wise loop well: ≈ 1.1× the tokens/s of the whole
  /// batch on two threads, docs/performance.md). Each slice's loss is weighted by its share of the batch's
  /// predicted tokens and sequences, so the slices' losses and gradients add up to the batch's mean. The
  /// bits differ from one slice's (other sums, each slice its own dropout stream) but not with the thread
  /// count: with fewer threads than slices, slices share threads; with more, they run one after another
  /// on all of them.
  double forward_backward(const Transformer<T>& model, const Batch& batch, const TaskLabels& labels,
                          const StepSettings& s, const std::vector<std::pair<Index, Index>>& positions = {},
                          const SampledCandidates* candidates = nullptr) {
    const Index count = std::min<Index>(static_cast<Index>(slices_.size()), batch.batch_size);
    if (count == 1) {  // the batch itself, not a copy
      slice_at(0).input = {&batch, &labels};
      prepare(slice_at(0), s, 0, positions, candidates);
    } else {
      model.validate_batch(batch);  // errors name the batch's rows, not a slice's
      for (Index k = 0; k < count; ++k) {
        auto& slice = slice_at(k);
        const Index first = batch.batch_size * k / count, last = batch.batch_size * (k + 1) / count;
        cut(batch, labels, positions, first, last, slice);
        slice.input = {&slice.batch, &slice.labels};
        prepare(slice, s, static_cast<std::uint64_t>(k), slice.positions, candidates);
      }
    }
    auto forward = [&](Index k) {
      auto& slice = slice_at(k);
      const auto [in, in_labels] = slice.input;
      model.forward_into(*in, slice.options, slice.result);
      slice.parts = task_loss_parts(slice.tape, model, *in, slice.result, *in_labels, slice.targets);
    };
    // Each slice's loss weighted by its share of the batch's rows (on one thread: it records onto every
    // slice's tape while the others wait); their sum is the batch's loss. A whole batch weighs 1 and 1,
    // which adds nothing to the tape: task_loss's bits.
    double value = 0;
    auto weigh = [&] {
      Index token_rows = 0, sequence_rows = 0;
      for (Index k = 0; k < count; ++k) {
        token_rows += slice_at(k).parts.token_rows;
        sequence_rows += slice_at(k).parts.sequence_rows;
      }
      const auto share = [](Index part, Index whole) {
        return part == whole ? 1.0 : static_cast<double>(part) / static_cast<double>(whole);
      };
      for (Index k = 0; k < count; ++k) {
        auto& slice = slice_at(k);
        slice.loss = weighted_loss(slice.tape, slice.parts, {.tokens = share(slice.parts.token_rows, token_rows),
                                                             .sequences = share(slice.parts.sequence_rows, sequence_rows)});
        value += static_cast<double>(slice.loss.value()[0]);
      }
      return std::isfinite(value);
    };
    auto backward = [&](Index k) {
      auto& slice = slice_at(k);
      slice.tape.backward(slice.loss);
      slice.options.training = nullptr;
    };
    const int threads = omp_get_max_threads();
    if (threads >= 2 && threads <= count && !omp_in_parallel()) {
      std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
      auto guarded = [&](Index k, auto&& f) {
        try {
          f(k);
        } catch (...) {
          errors[static_cast<std::size_t>(k)] = std::current_exception();
        }
      };
      bool failed = false, finite = true;
#pragma omp parallel num_threads(threads)
      {
        omp_set_num_threads(1);  // a slice's kernels run on its own thread
#pragma omp for schedule(static)
        for (Index k = 0; k < count; ++k) guarded(k, forward);
#pragma omp single
        {
          for (const auto& e : errors) failed = failed || e;
          if (!failed) guarded(0, [&](Index) { finite = weigh(); });
          failed = failed || errors[0];
        }
        if (!failed && finite) {
#pragma omp for schedule(static)
          for (Index k = 0; k < count; ++k) guarded(k, backward);
        }
      }
      for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
      if (!finite) require_finite(value, s.step);
    } else {
      for (Index k = 0; k < count; ++k) forward(k);
      if (!weigh()) require_finite(value, s.step);
      for (Index k = 0; k < count; ++k) backward(k);
    }
    gather_gradients(count);
    return value;
  }

  /// Where the gradients accumulate (AdamW::step reads them, AdamW::zero_grad clears them).
  TransformerParams<T>& gradients() { return slices_[0]->grads; }
  /// The tape of the last step's first slice (its arena size, for memory reports).
  const autodiff::Tape<T>& tape() const { return slices_[0]->tape; }
  /// How many slices each batch is split into.
  int slices() const { return static_cast<int>(slices_.size()); }

 private:
  // One slice's inputs, tape and gradients (slice 0's gradients are the step's).
  struct Slice {
    autodiff::Tape<T> tape;
    TransformerParams<T> grads;
    ForwardOptions<T> options;
    ForwardResult<T> result;
    LossTargets<T> targets;
    TrainingPass<T> pass;
    Batch batch;
    TaskLabels labels;
    std::vector<std::pair<Index, Index>> positions;
    std::pair<const Batch*, const TaskLabels*> input;  // the step's batch, or this slice's cut of it
    TaskLossParts<T> parts;
    autodiff::Var<T> loss;  // parts weighted by the slice's share of the batch
    std::vector<std::pair<T*, Index>> gradient_blocks;  // grads' tensors: data, elements
  };

  void prepare(Slice& slice, const StepSettings& s, std::uint64_t index,
               const std::vector<std::pair<Index, Index>>& positions, const SampledCandidates* candidates) {
    slice.pass = TrainingPass<T>{.tape = &slice.tape, .gradients = &slice.grads, .dropout = s.dropout,
                                 .dropout_scale = s.dropout_scale, .seed = s.seed, .step = s.step, .train_encoder = s.train_encoder, .slice = index};
    slice.options.training = &slice.pass;
    slice.options.logit_positions = positions;
    slice.options.decoder_rows.clear();
    slice.options.decoder_offsets.clear();
    if (candidates) {
      slice.options.decoder_rows = candidates->rows;
      slice.options.decoder_offsets = candidates->offsets;
    }
  }

  static void require_finite(double loss, std::uint64_t step) {
    if (!std::isfinite(loss)) fail("training: the loss is ", loss, " at step ", step, " (learning rate too high?)");
  }

  // Sequences [first, last) of the batch, their labels and their logit positions (renumbered).
  static void cut(const Batch& batch, const TaskLabels& labels, const std::vector<std::pair<Index, Index>>& positions,
                  Index first, Index last, Slice& slice) {
    const auto u = [](Index v) { return static_cast<std::size_t>(v); };
    const Index L = batch.length;
    auto rows = [&](const auto& from, auto& to, Index width) {
      if (from.empty()) return to.clear();
      to.assign(from.begin() + static_cast<std::ptrdiff_t>(first * width), from.begin() + static_cast<std::ptrdiff_t>(last * width));
    };
    Batch& b = slice.batch;
    b.batch_size = last - first;
    b.length = L;
    rows(batch.input_ids, b.input_ids, L);
    rows(batch.attention_mask, b.attention_mask, L);
    rows(batch.token_type_ids, b.token_type_ids, L);
    TaskLabels& t = slice.labels;
    require(labels.tokens.empty() || labels.tokens.size() == u(batch.tokens()), "TrainingStep: ", labels.tokens.size(),
            " token labels for a batch of ", batch.tokens(), " tokens");
    for (const auto* per_sequence : {&labels.classes, &labels.next_sentence})
      require(per_sequence->empty() || per_sequence->size() == u(batch.batch_size), "TrainingStep: ",
              per_sequence->size(), " labels for a batch of ", batch.batch_size, " sequences");
    require(labels.values.empty() || labels.values.size() == u(batch.batch_size), "TrainingStep: ",
            labels.values.size(), " values for a batch of ", batch.batch_size, " sequences");
    rows(labels.tokens, t.tokens, L);
    rows(labels.classes, t.classes, 1);
    rows(labels.next_sentence, t.next_sentence, 1);
    rows(labels.values, t.values, 1);
    slice.positions.clear();
    for (std::size_t r = 0; r < positions.size(); ++r) {
      const auto [sequence, i] = positions[r];
      require(sequence >= 0 && sequence < batch.batch_size && i >= 0 && i < L, "TrainingStep: logit position ", r,
              " = (", sequence, ", ", i, ") is outside the batch [", batch.batch_size, ", ", L, "]");
      if (sequence >= first && sequence < last) slice.positions.emplace_back(sequence - first, i);
    }
  }

  // Slice 0's gradients += every other slice's, in slice order; the others back to zero.
  void gather_gradients(Index count) {
    const auto& total = slice_at(0).gradient_blocks;
    for (Index k = 1; k < count; ++k) {
      const auto& part = slice_at(k).gradient_blocks;
      for (std::size_t p = 0; p < total.size(); ++p) {
        T* to = total[p].first;
        T* from = part[p].first;
        const Index n = total[p].second;
#pragma omp parallel for schedule(static) if (n > (1 << 16) && !omp_in_parallel())
        for (Index i = 0; i < n; ++i) {
          to[i] += from[i];
          from[i] = T(0);
        }
      }
    }
  }

  Slice& slice_at(Index k) { return *slices_[static_cast<std::size_t>(k)]; }

  std::vector<std::unique_ptr<Slice>> slices_;
};

}  // namespace darkbert
