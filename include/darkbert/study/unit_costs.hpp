#pragma once
/// @file
/// The estimated seconds of each kind of study unit (study/study_plan.hpp) on two cores: what the progress
/// bar's ETA, the shards' balance and `darkbert reproduce --plan` rest on.
///
/// The model: a unit costs a small fixed start-up, loading and tokenizing its data (a cost per example),
/// and examples x a cost per example of its passes, which grows with the example's length (the mean
/// characters of the task's first examples, plus a constant for [CLS], [SEP] and padding) and with the
/// model's size (layers x hidden^2 against the default study model's 6 x 128^2, the size the constants
/// were measured on). The constants are fitted to
/// the unit.json `seconds` of a full study of the default model (5 tasks x 3 seeds, 2,000 training and 500
/// scored examples per task) on an idle two-core AMD EPYC (Zen 5): e.g. an untrained evaluation 0.5 s;
/// §3.6 on MRPC 10-25 s. Fine-tuning batches examples of like length, so a training example costs little
/// more than its own characters: that constant is fitted to the 48-head GPT-2's Table 1 on a Zen 4 (MRPC,
/// 227 characters a pair, 40 s of training; SST-2, 57 characters, 12 s) and brought to the Zen 5 by the
/// 1.8 times that CPU measured faster on the same study. The loading costs are per example so that tiny
/// runs (`--quick`: tens of examples, units of 0.03-0.4 s) are not priced as full ones.
///
/// @code
/// darkbert::study::UnitCosts c{.layers = 12, .hidden = 768};
/// double s = c.fine_tune(2000, 3, 231.0) + c.evaluate(500, 231.0);  // one BERT-base MRPC run, in seconds
/// @endcode

#include <algorithm>  // std::clamp, std::max, std::min
#include <cmath>      // std::log2
#include <cstddef>    // std::size_t
#include <vector>     // std::vector

#include "darkbert/data/glue.hpp"

namespace darkbert::study {

/// Estimated seconds on two cores for the units of one model.
struct UnitCosts {
  double layers = 6;    ///< encoder layers
  double hidden = 128;  ///< hidden size
  double heads = 8;     ///< heads per layer

  /// Per token-ish work against the default study model (6 x 128).
  double size() const { return layers * hidden * hidden / (6.0 * 128.0 * 128.0); }
  /// Seconds per example of a forward and backward pass in a length-grouped batch, for examples of
  /// `chars` characters.
  double train_example(double chars) const { return 0.78e-5 * (chars + 12.0) * size(); }
  /// Seconds per example of a forward pass (the analysis sections' batches, padded to their longest).
  double eval_example(double chars) const { return 0.36e-5 * (chars + 108.0) * size(); }
  /// Seconds per example of a forward pass in batches sorted by length (scoring, §3.6): 0.4 of
  /// eval_example, the ratio of the measured to the priced seconds of the untrained and §3.6 units once
  /// scoring was sorted (0.36-0.43 over both study models' full studies on a Zen 4, brought to the Zen 5).
  double sorted_eval_example(double chars) const { return 0.4 * eval_example(chars); }

  /// A fine-tuning run's training: examples x epochs, after loading and tokenizing the data (0.5 ms an
  /// example: 1 s for 2,000).
  double fine_tune(std::size_t examples, int epochs, double chars) const {
    const double n = static_cast<double>(examples);
    return 0.05 + 4.75e-4 * n + n * epochs * train_example(chars);
  }
  /// Scoring `examples` once (loading and tokenizing them: 0.3 s for 500).
  double evaluate(std::size_t examples, double chars) const {
    const double n = static_cast<double>(examples);
    return 0.02 + 5.6e-4 * n + n * sorted_eval_example(chars);
  }
  /// §3.6: a forward pass per head, per layer and the baseline; the prefix cache saves about half.
  double disable_heads(std::size_t examples, double chars) const {
    const double n = static_cast<double>(examples);
    return 0.02 + 1e-3 * n + (layers * heads + layers + 1) * 0.55 * n * sorted_eval_example(chars);
  }
  /// A section reading `examples` maps: `passes` forward passes' worth of work each (two models, the
  /// annotator, the pattern classifier), after loading them and its data: `startup` seconds (0.3 for the
  /// sections that load the annotator or the pattern classifiers, measured on --quick runs) and a cost
  /// per example.
  double section(std::size_t examples, double chars, double passes, double startup = 0.02) const {
    const double n = static_cast<double>(examples);
    return startup + 5.6e-4 * n + passes * n * eval_example(chars);
  }
  /// How much longer the units take on one core than on two: the time ratio of a training step at one and
  /// two threads (`darkbert bench train-step`, sequence 64) measured on an idle two-core AMD EPYC (Zen 5) at
  /// three widths: 1.31 at 2 x 64 (the --quick model), 1.54 at 6 x 128 (the study model), 1.90 at
  /// BERT-base; between them linear in log2(hidden), outside them the nearest. Small products leave the
  /// second core idle more.
  double one_core_slowdown() const {
    const double x = std::log2(std::max(hidden, 1.0));
    const double xs[] = {6.0, 7.0, std::log2(768.0)}, ys[] = {1.31, 1.54, 1.90};
    if (x <= xs[0]) return ys[0];
    if (x >= xs[2]) return ys[2];
    const int k = x < xs[1] ? 0 : 1;
    return ys[k] + (ys[k + 1] - ys[k]) * (x - xs[k]) / (xs[k + 1] - xs[k]);
  }
  /// `two_core_seconds` of these units on a rank with `cores` cores: Amdahl's law through
  /// one_core_slowdown (serial share f = 2 / slowdown - 1; time(c) / time(2) = (f + (1 - f) / c) /
  /// (f + (1 - f) / 2)).
  double on_cores(double two_core_seconds, double cores) const {
    const double f = std::clamp(2.0 / one_core_slowdown() - 1.0, 0.0, 1.0);
    const double c = std::max(cores, 1.0);
    return two_core_seconds * (f + (1.0 - f) / c) / (f + (1.0 - f) / 2.0);
  }
  /// How much slower a unit runs on its share of the cores with other workers busy beside it than alone on
  /// as many (shared caches, memory bandwidth, the clock): measured on a two-core AMD EPYC (Zen 4), where
  /// the full study's units ran 1.79 (BERT) and 1.89 (GPT-2) times slower on one thread beside another
  /// than alone on two, against the 1.54 of one thread alone (one_core_slowdown).
  static constexpr double worker_contention = 1.2;
  /// `two_core_seconds` of units shared by `workers` workers on `cores` cores (cores / workers each, at
  /// least one; study/work_units.hpp).
  double on_workers(double two_core_seconds, double cores, int workers) const {
    if (workers <= 1) return on_cores(two_core_seconds, cores);
    return on_cores(two_core_seconds, std::max(cores / workers, 1.0)) * worker_contention / workers;
  }
  /// How many units to run at once on `threads` threads: the fewest workers (dividing the threads) within
  /// 5% of the fastest by on_workers, since each holds its own models and batches. On two threads: 2 for
  /// the study models (one thread each), 1 for BERT-base, whose products keep both cores busy.
  int fastest_workers(int threads) const {
    const int t = std::max(threads, 1);
    auto seconds = [&](int w) { return on_workers(1.0, t, w); };
    double best = seconds(1);
    for (int w = 2; w <= t; ++w)
      if (t % w == 0) best = std::min(best, seconds(w));
    for (int w = 1; w <= t; ++w)
      if (t % w == 0 && seconds(w) <= 1.05 * best) return w;
    return 1;
  }
  /// What a process spends outside its units: start-up (the data root, the plan, the models' files) and,
  /// for a whole run or a merge, the report (measured: a --quick study's wall time minus its units').
  static constexpr double process_overhead = 1.0;
};

/// The mean characters (both texts) of at most the first `n` examples: the length the costs scale with.
inline double mean_characters(const GlueData& data, std::size_t n = 200) {
  const std::size_t m = std::min(n, data.examples.size());
  if (m == 0) return 0.0;
  double sum = 0;
  for (std::size_t i = 0; i < m; ++i) sum += static_cast<double>(data.examples[i].text_a.size() + data.examples[i].text_b.size());
  return sum / static_cast<double>(m);
}

}  // namespace darkbert::study
