#pragma once
/// @file
/// AdamW (Loshchilov & Hutter) with decoupled weight decay, BERT's learning-rate schedule (linear warm-up,
/// then linear decay to zero), global-norm gradient clipping, and gradient accumulation.
///
/// @code
/// darkbert::AdamW<float> optimizer(model, {.weight_decay = 0.01});
/// darkbert::LinearSchedule schedule{.peak = 2e-5, .warmup_steps = 100, .total_steps = 1000};
/// ... forward + backward into grads (accumulated over micro-batches) ...
/// const double norm = optimizer.step(grads, schedule(step), {.max_grad_norm = 1.0, .micro_batches = 4});
/// optimizer.zero_grad(grads);
/// @endcode
///
/// Weight decay applies to matrices only, never to biases or LayerNorm parameters (every 1-d parameter),
/// as in BERT's and Hugging Face's recipes. Every update is element-wise and the norm is summed in a
/// fixed order, so a training run is bit-identical from run to run.

#include <omp.h>  // omp_in_parallel

#include <algorithm>  // std::min, std::fill
#include <cmath>      // std::sqrt, std::pow
#include <cstdint>    // std::int64_t
#include <vector>     // std::vector

#include "../core/error.hpp"
#include "../kernels/adamw_update.hpp"
#include "../model/parameter_names.hpp"
#include "../model/transformer.hpp"

namespace darkbert {

/// AdamW hyper-parameters (Hugging Face's defaults for BERT).
struct AdamWOptions {
  double beta1 = 0.9;  ///<  decay of the first moment
  double beta2 = 0.999;  ///<  decay of the second moment
  double epsilon = 1e-6;  ///< BERT's AdamW
  double weight_decay = 0.01;  ///<  decoupled decay of matrices (never biases or LayerNorm)
  /// false: only the task heads are updated (the frozen-encoder baseline); the encoder's parameters get
  /// neither steps nor weight decay and its gradients are left out of the clipping norm.
  bool train_encoder = true;
};

/// Options of one optimizer step.
struct StepOptions {
  double max_grad_norm = 1.0;  ///< clip the global gradient norm to this (<= 0: no clipping)
  int micro_batches = 1;       ///< gradients summed over this many micro-batches are averaged
};

/// Linear warm-up to `peak` over warmup_steps, then linear decay to 0 at total_steps.
struct LinearSchedule {
  double peak = 2e-5;  ///<  the learning rate after warm-up
  std::int64_t warmup_steps = 0;  ///<  steps of linear warm-up
  std::int64_t total_steps = 1;  ///<  the step at which the rate reaches 0
  std::int64_t decay_steps = 0;  ///<  the rate holds at peak until this many steps before the end (0: none)

  /// As Hugging Face's get_linear_schedule_with_warmup: the update at step s (from 0) uses
  /// peak · s / warmup during warm-up, then peak · (total - s) / (total - warmup). With decay_steps, a
  /// warm-up-stable-decay schedule: peak until total - decay, then peak · (total - s) / decay.
  double operator()(std::int64_t step) const {
    if (step < warmup_steps) return peak * static_cast<double>(step) / static_cast<double>(warmup_steps);
    const auto after_warmup = total_steps - warmup_steps;
    const auto left = decay_steps > 0 ? std::min(decay_steps, after_warmup) : after_warmup;
    if (step < total_steps - left) return peak;
    return left > 0 ? peak * std::max(0.0, static_cast<double>(total_steps - step) / static_cast<double>(left)) : 0.0;
  }
};

/// AdamW with decoupled weight decay, global-norm clipping and micro-batch accumulation.
/// @code
/// darkbert::AdamW<float> optimizer(model, {.weight_decay = 0.01});
/// optimizer.step(grads, schedule(step), {.max_grad_norm = 1.0});
/// optimizer.zero_grad(grads);
/// @endcode
template <class T>
class AdamW {
 public:
  /// An optimizer of `model`'s parameters (kept by reference; zero moments).
  AdamW(Transformer<T>& model, AdamWOptions options = {}) : model_(model), options_(options) {
    // The parameters never move, so their slots are walked once; so are a gradient set's (grad_slots).
    const auto all = parameter_slots(model.params(), model.config());
    for (std::size_t k = 0; k < all.size(); ++k) {
      const auto& slot = all[k];
      if (slot.encoder && !options.train_encoder) continue;
      const Index n = slot.elements();
      slots_.push_back({offset_, n, slot.shape.size() >= 2, slot.data, k});
      offset_ += n;
    }
    slot_count_ = all.size();
    for (std::size_t k = 0; k < slots_.size(); ++k)
      for (Index first = 0; first < slots_[k].size; first += kChunk)
        chunks_.push_back({k, first, std::min(slots_[k].size, first + kChunk)});
    chunk_squares_.assign(chunks_.size(), 0.0);
    m_.assign(static_cast<std::size_t>(offset_), T(0));
    v_.assign(static_cast<std::size_t>(offset_), T(0));
  }

  /// Sets every gradient of `grads` to zero (after a step, before the next micro-batches).
  void zero_grad(TransformerParams<T>& grads) {
    const auto& g = grad_slots(grads);
    const Index chunks = static_cast<Index>(chunks_.size());
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (Index c = 0; c < chunks; ++c) {
      const Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
      std::fill(g[chunk.slot] + chunk.first, g[chunk.slot] + chunk.last, T(0));
    }
  }

  /// One update with learning rate lr from gradients summed over `micro_batches` micro-batches; clips
  /// their global norm first. Returns the norm before clipping.
  double step(TransformerParams<T>& grads, double lr, StepOptions step_options = {}) {
    const auto& gs = grad_slots(grads);
    const double average = 1.0 / std::max(1, step_options.micro_batches);
    // Σ g² per fixed chunk of a slot (threads take whole chunks), then the chunks added in order: the
    // same bits for any thread count.
    const Index chunks = static_cast<Index>(chunks_.size());
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (Index c = 0; c < chunks; ++c) {
      const Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
      chunk_squares_[static_cast<std::size_t>(c)] = sum_of_squares(gs[chunk.slot] + chunk.first, chunk.last - chunk.first);
    }
    double squares = 0;
    for (double s : chunk_squares_) squares += s;
    const double norm = std::sqrt(squares) * average;
    const double clip = step_options.max_grad_norm > 0 && norm > step_options.max_grad_norm
                            ? step_options.max_grad_norm / (norm + 1e-6)
                            : 1.0;
    ++steps_;
    const T rate = static_cast<T>(lr);
    const kernels::AdamWUpdate<T> update{.beta1 = static_cast<T>(options_.beta1),
                                         .beta2 = static_cast<T>(options_.beta2),
                                         .correction1 = static_cast<T>(1 - std::pow(options_.beta1, static_cast<double>(steps_))),
                                         .correction2 = static_cast<T>(1 - std::pow(options_.beta2, static_cast<double>(steps_))),
                                         .grad_scale = static_cast<T>(average * clip),
                                         .rate = rate,
                                         .eps = static_cast<T>(options_.epsilon),
                                         .decay = T(1) - rate * static_cast<T>(options_.weight_decay)};
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (Index c = 0; c < chunks; ++c) {  // element-wise: any split gives the same bits
      const Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
      const Slot& slot = slots_[chunk.slot];
      auto u = update;
      if (!slot.decayed) u.decay = T(1);
      const Index at = slot.offset + chunk.first;
      kernels::adamw_update(slot.param + chunk.first, gs[chunk.slot] + chunk.first, m_.data() + at, v_.data() + at,
                            chunk.last - chunk.first, u);
    }
    return norm;
  }

  /// Steps taken.
  std::int64_t steps() const { return steps_; }
  /// The moment estimates, for checkpointing and resuming (same order as parameter_slots).
  std::vector<T>& first_moments() { return m_; }
  /// The second-moment estimates (same order as first_moments).
  std::vector<T>& second_moments() { return v_; }
  /// Sets the step count (when resuming).
  void set_steps(std::int64_t steps) { steps_ = steps; }

 private:
  struct Slot {
    Index offset, size;
    bool decayed;
    T* param;
    std::size_t index;  ///< position in parameter_slots (and in a gradient set's slots)
  };
  /// A piece of a slot: the unit of the parallel norm, update and zeroing (fixed, so the norm is deterministic).
  struct Chunk {
    std::size_t slot;
    Index first, last;
  };
  static constexpr Index kChunk = Index(1) << 15;
  /// Σ v[i]² in double, element i into lane i % 8, the lanes added in order (vectorises, fixed order).
  static double sum_of_squares(const T* v, Index n) {
    double lane[8] = {};
    Index i = 0;
    for (; i + 8 <= n; i += 8)
#pragma omp simd
      for (Index l = 0; l < 8; ++l) lane[l] += static_cast<double>(v[i + l]) * static_cast<double>(v[i + l]);
    for (Index l = 0; i < n; ++i, ++l) lane[l] += static_cast<double>(v[i]) * static_cast<double>(v[i]);
    double s = 0;
    for (double x : lane) s += x;
    return s;
  }
  /// Where each slot's gradient lives in `grads`, walked once per gradient set (no allocation per step).
  const std::vector<T*>& grad_slots(TransformerParams<T>& grads) {
    if (grads_of_ != &grads) {
      const auto gs = parameter_slots(grads, model_.config());
      require(gs.size() == slot_count_, "AdamW: the gradients do not have the model's parameter layout");
      grad_data_.clear();
      for (const auto& slot : slots_) {
        const auto& g = gs[slot.index];
        const Index n = g.elements();
        require(n == slot.size, "AdamW: gradient '", g.name, "' has ", n, " elements, the parameter ", slot.size);
        grad_data_.push_back(g.data);
      }
      grads_of_ = &grads;
    }
    return grad_data_;
  }
  Transformer<T>& model_;
  AdamWOptions options_;
  std::vector<Slot> slots_;
  std::vector<Chunk> chunks_;
  std::vector<double> chunk_squares_;
  Index offset_ = 0;
  std::size_t slot_count_ = 0;
  std::vector<T> m_, v_;
  std::int64_t steps_ = 0;
  const TransformerParams<T>* grads_of_ = nullptr;
  std::vector<T*> grad_data_;
};

}  // namespace darkbert
