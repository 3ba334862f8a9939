#pragma once
/// @file
/// The estimated seconds of each kind of study unit (study/study_plan.hpp) on two cores: what the progress
/// bar's ETA, the shards' balance and `darkbert reproduce --plan` rest on.
///
/// The model: a unit costs a fixed start-up (loading models, tokenizer and data) plus examples x a cost
/// per example, which grows with the example's length (the mean characters of the task's first examples,
/// plus a constant for [CLS], [SEP] and padding) and with the model's size (layers x hidden^2 against the
/// default study model's 6 x 128^2, the size the constants were measured on). The constants are fitted to
/// the unit.json `seconds` of a full study of the default model (5 tasks x 3 seeds, 2,000 training and 500
/// scored examples per task) on an idle two-core AMD EPYC: e.g. an MRPC fine-tuning run (231 characters a
/// pair) 22 s, SST-2 (53 characters) 11 s; an untrained evaluation 0.5 s; §3.6 on MRPC 10-25 s.
///
/// @code
/// darkbert::study::UnitCosts c{.layers = 12, .hidden = 768};
/// double s = c.fine_tune(2000, 3, 231.0) + c.evaluate(500, 231.0);  // one BERT-base MRPC run, in seconds
/// @endcode

#include <algorithm>  // std::min
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
  /// Seconds per example of a forward and backward pass, for examples of `chars` characters.
  double train_example(double chars) const { return 1.08e-5 * (chars + 108.0) * size(); }
  /// Seconds per example of a forward pass.
  double eval_example(double chars) const { return 0.36e-5 * (chars + 108.0) * size(); }

  /// A fine-tuning run's training: examples x epochs (start-up: loading and tokenizing the data, 1 s).
  double fine_tune(std::size_t examples, int epochs, double chars) const {
    return 1.0 + static_cast<double>(examples) * epochs * train_example(chars);
  }
  /// Scoring `examples` once.
  double evaluate(std::size_t examples, double chars) const { return 0.3 + static_cast<double>(examples) * eval_example(chars); }
  /// §3.6: a forward pass per head, per layer and the baseline; the prefix cache saves about half.
  double disable_heads(std::size_t examples, double chars) const {
    return 0.5 + (layers * heads + layers + 1) * 0.55 * static_cast<double>(examples) * eval_example(chars);
  }
  /// A section reading `examples` maps: `passes` forward passes' worth of work each (two models, the
  /// annotator, the pattern classifier), plus start-up.
  double section(std::size_t examples, double chars, double passes) const {
    return 0.3 + passes * static_cast<double>(examples) * eval_example(chars);
  }
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
