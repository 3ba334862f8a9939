#pragma once
/// @file
/// The pretraining loop: batches from a PretrainingTask, forward + loss + backward on the one model
/// definition, AdamW with linear warm-up and linear decay to zero, held-out evaluations and checkpoints at
/// fixed step intervals. Everything random is keyed by (seed, step) or (seed, epoch, example), so the loop
/// state below is all a resumed run needs: a run killed and resumed from its last checkpoint ends
/// bit-identical to one that was never interrupted.
///
/// @code
/// darkbert::PretrainState state;                         // or from a checkpoint's state.json
/// darkbert::AdamW<float> optimizer(model, {.weight_decay = 0.01});
/// state = darkbert::pretrain(model, optimizer, task, {.learning_rate = 1e-3, .steps = 1000}, state,
///                            {.evaluate = log_eval, .checkpoint = save});
/// @endcode
///
/// With a time budget (minutes) instead of a step count, the step count at which the learning rate reaches
/// zero is estimated from the speed of the first steps (as the PyTorch reference does), refitted every
/// 100 steps from the speed since, and kept in the state; the run ends at that step or when the budget is
/// spent, whichever comes first. Training time excludes evaluations and checkpoints.
///
/// Two sequence lengths, as BERT was pretrained (Devlin et al. 2019: 90% of the steps at 128 tokens, the
/// rest at 512): with short_length set, the first short_fraction of the schedule's steps train on examples
/// of short_length tokens, the rest on the task's max_length. Short examples are cheaper per token and give
/// each attention head fewer positions to choose from. Each change of length starts a new epoch.

#include <algorithm>   // std::min, std::max
#include <chrono>      // std::chrono::steady_clock
#include <cmath>       // std::llround
#include <cstdint>     // std::int64_t
#include <cstdio>      // std::snprintf
#include <functional>  // std::function

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "../core/progress.hpp"
#include "../core/threads.hpp"
#include "../model/transformer.hpp"
#include "optimizer.hpp"
#include "pretraining_task.hpp"
#include "training_step.hpp"

namespace darkbert {

/// The loop's settings.
struct PretrainOptions {
  std::size_t batch_size = 32;       ///< sequences per step
  int batch_slices = 1;              ///< run as this many slices side by side (TrainingStep)
  double learning_rate = 1e-3;       ///< peak learning rate
  std::int64_t warmup_steps = 200;   ///< linear warm-up
  double decay_fraction = 1;         ///< the rate falls to 0 over this last share of the steps, at peak before (1: linear decay after warm-up)
  std::int64_t steps = 0;   ///< train this many steps in all, or
  double minutes = 0;       ///< for this much training time
  double max_grad_norm = 1.0;  ///< global-norm clipping
  bool dropout = true;         ///< the config's dropout probabilities
  std::int64_t dropout_warmup_steps = 0;  ///< ... ramped linearly from 0 over this many steps (0: full from the start)
  std::uint64_t seed = 0;   ///< dropout; the data order and masks come from the task's seed
  std::int64_t eval_every = 100;        ///< also at step 0 and at the end (0: only there)
  std::int64_t checkpoint_every = 200;  ///< also at the end
  bool show_progress = true;  ///< a progress bar with loss and tokens/s
  int short_length = 0;         ///< tokens per example in the short phase (0 = no short phase)
  double short_fraction = 0;    ///< share of the schedule's steps in the short phase
  std::string progress_label = "pretrain";  ///< the progress bar's name
  std::int64_t stop_at = 0;  ///< end the loop at this step although the schedule runs on (0: at its end)
  std::int64_t rewarm_at = 0;     ///< from this step on (a fresh optimizer: a grown model) ...
  std::int64_t rewarm_steps = 0;  ///< ... the schedule's rate is scaled from 0 to 1 over this many steps

  /// The learning rate at `step` (0 = the schedule's end not known yet: it only warms up).
  double rate_at(std::int64_t step, std::int64_t total_steps) const {
    const std::int64_t total = total_steps ? total_steps : std::int64_t{1} << 40;
    const auto decay = static_cast<std::int64_t>(std::llround(decay_fraction * static_cast<double>(total)));
    const LinearSchedule schedule{.peak = learning_rate, .warmup_steps = warmup_steps, .total_steps = total,
                                  .decay_steps = decay_fraction < 1 ? std::max<std::int64_t>(decay, 1) : 0};
    double rate = schedule(step);
    if (rewarm_steps > 0 && step >= rewarm_at && step < rewarm_at + rewarm_steps)
      rate *= static_cast<double>(step - rewarm_at) / static_cast<double>(rewarm_steps);
    return rate;
  }

  /// The share of the config's dropout probabilities used at `step`.
  double dropout_scale_at(std::int64_t step) const {
    return step >= dropout_warmup_steps ? 1.0 : static_cast<double>(step) / static_cast<double>(dropout_warmup_steps);
  }

  /// Tokens per training example at `step` of a schedule of `total_steps` (0 = not known yet: the start).
  int length_at(std::int64_t step, std::int64_t total_steps, int max_length) const {
    if (short_length <= 0 || short_fraction <= 0) return max_length;
    return static_cast<double>(step) < short_fraction * static_cast<double>(total_steps) || total_steps == 0
               ? short_length : max_length;
  }
};

/// Everything the loop needs to continue where it stopped (besides the weights and the optimizer).
struct PretrainState {
  std::int64_t step = 0;         ///< steps done
  std::int64_t total_steps = 0;  ///< where the schedule reaches zero (0 = not yet estimated)
  std::int64_t epoch = 0;        ///< data position: example `offset` of `epoch`
  std::int64_t offset = 0;       ///< (see epoch)
  std::int64_t tokens = 0;       ///< non-padding tokens trained on
  double seconds = 0;            ///< training time so far
  int length = 0;                ///< tokens per example of the current epoch (0 = none started)

  /// As saved in a checkpoint's state.json.
  nlohmann::json to_json() const {
    return {{"step", step}, {"total_steps", total_steps}, {"epoch", epoch}, {"offset", offset},
            {"tokens", tokens}, {"seconds", seconds}, {"length", length}};
  }
  /// Reads to_json's output; `source` names the file in errors.
  static PretrainState from_json(const nlohmann::json& j, const std::string& source) {
    PretrainState s;
    try {
      s.step = j.at("step").get<std::int64_t>();
      s.total_steps = j.at("total_steps").get<std::int64_t>();
      s.epoch = j.at("epoch").get<std::int64_t>();
      s.offset = j.at("offset").get<std::int64_t>();
      s.tokens = j.at("tokens").get<std::int64_t>();
      s.seconds = j.at("seconds").get<double>();
      s.length = j.value("length", 0);  // absent before two-length runs: the task's max_length
    } catch (const nlohmann::json::exception& e) {
      fail(source, ": not a pretraining state (", e.what(), ")");
    }
    require(s.step >= 0 && s.epoch >= 0 && s.offset >= 0 && s.total_steps >= 0 && s.length >= 0, source,
            ": negative counters in the state");
    return s;
  }
};

/// What the loop calls back.
template <class T>
struct PretrainCallbacks {
  /// Called at step 0, every eval_every steps and at the end, with the mean training loss since the last call.
  std::function<void(const PretrainState&, double train_loss)> evaluate;
  /// Called every checkpoint_every steps and at the end.
  std::function<void(const PretrainState&)> checkpoint;
  /// Called after every step, after the evaluation and checkpoint due at it.
  std::function<void(const PretrainState&)> after_step;
};

/// Trains `model` from `state` until the step count or the time budget of `o`; returns the final state.
template <class T>
PretrainState pretrain(Transformer<T>& model, AdamW<T>& optimizer, PretrainingTask& task, const PretrainOptions& o,
                       PretrainState state, const PretrainCallbacks<T>& callbacks = {}) {
  using Clock = std::chrono::steady_clock;
  require(o.steps > 0 || o.minutes > 0, "pretrain: give a number of steps or a time budget");
  require(o.batch_size > 0, "pretrain: the batch size must be positive");
  if (o.steps > 0) state.total_steps = o.steps;
  constexpr std::int64_t timing_steps = 20;  // steps timed before estimating the budget's step count
  constexpr std::int64_t refit_steps = 100;  // steps between refits of that estimate
  const double budget = o.minutes * 60.0;
  TrainingStep<T> training(model, o.batch_slices);
  double loss_sum = 0;
  std::int64_t loss_count = 0, timed_from = -1;
  double timed_start = 0;
  auto report = [&] {
    if (callbacks.evaluate) callbacks.evaluate(state, loss_count ? loss_sum / static_cast<double>(loss_count) : 0.0);
    loss_sum = 0;
    loss_count = 0;
  };
  auto done = [&] {
    return (state.total_steps > 0 && state.step >= state.total_steps) || (budget > 0 && state.seconds >= budget) ||
           (o.stop_at > 0 && state.step >= o.stop_at);
  };
  if (state.step == 0) report();
  const std::int64_t first_step = state.step;
  const std::int64_t last_step = o.stop_at > 0 && state.total_steps > 0 ? std::min(o.stop_at, state.total_steps) : state.total_steps;
  Progress progress(o.progress_label, static_cast<long>(last_step ? std::max<std::int64_t>(0, last_step - first_step) : 0),
                    o.show_progress);
  while (!done()) {
    adopt_thread_share();  // a worker beside others takes the threads they gave back (core/threads.hpp)
    const auto start = Clock::now();
    const int length = o.length_at(state.step, state.total_steps, task.max_length());
    if (state.length == 0) state.length = length;  // a fresh run, or a checkpoint from before two lengths
    const bool new_length = length != state.length;
    if (new_length || state.offset + static_cast<std::int64_t>(o.batch_size) >
                          static_cast<std::int64_t>(task.examples(state.epoch, length))) {
      ++state.epoch;
      state.offset = 0;
      state.length = length;
      require(task.examples(state.epoch, length) >= o.batch_size, "pretrain: an epoch has fewer examples than one batch (",
              task.examples(state.epoch, length), " < ", o.batch_size, ")");
    }
    const auto b = task.batch(state.epoch, static_cast<std::size_t>(state.offset), o.batch_size, length);
    const double value = training.forward_backward(model, b.batch, b.labels,
                                                   {.dropout = o.dropout, .dropout_scale = o.dropout_scale_at(state.step), .seed = o.seed,
                                                    .step = static_cast<std::uint64_t>(state.step)},
                                                   b.positions, b.candidates);
    optimizer.step(training.gradients(), o.rate_at(state.step, state.total_steps), {.max_grad_norm = o.max_grad_norm});
    optimizer.zero_grad(training.gradients());
    ++state.step;
    state.offset += static_cast<std::int64_t>(o.batch_size);
    state.tokens += b.real_tokens;
    state.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    loss_sum += value;
    ++loss_count;
    // A time budget: time steps [1, 1 + timing_steps) (step 0 warms the buffers up) and fix the step count;
    // then refit it every refit_steps from the speed since the last fit, since the first steps run slower
    // (a 20-minute mini run ended after 16 minutes with a single estimate).
    if (budget > 0 && o.steps <= 0) {
      if (timed_from < 0) {
        timed_from = state.step;
        timed_start = state.seconds;
      } else if (state.step - timed_from == (state.total_steps == 0 ? timing_steps : refit_steps)) {
        const double per_step = (state.seconds - timed_start) / static_cast<double>(state.step - timed_from);
        state.total_steps = state.step + std::max<std::int64_t>(1, static_cast<std::int64_t>((budget - state.seconds) / per_step));
        progress.set_total(static_cast<long>(state.total_steps - first_step));
        timed_from = state.step;
        timed_start = state.seconds;
      }
    }
    char note[128];
    std::snprintf(note, sizeof note, "step %lld  loss %.3f  %.0f tok/s", static_cast<long long>(state.step), value,
                  static_cast<double>(state.tokens) / std::max(1e-9, state.seconds));
    progress.set_note(note);
    progress.advance();
    const bool last = done();
    if ((o.eval_every > 0 && state.step % o.eval_every == 0) || last) report();  // the final line scores the end
    if (callbacks.checkpoint && ((o.checkpoint_every > 0 && state.step % o.checkpoint_every == 0) || last))
      callbacks.checkpoint(state);
    if (callbacks.after_step) callbacks.after_step(state);
  }
  progress.finish();
  return state;
}

}  // namespace darkbert
