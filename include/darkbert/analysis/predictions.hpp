#pragma once
/// @file
/// From a classifier's logits to the predictions a task metric scores, and from a GLUE metric name to the
/// metric function:
///
/// @code
/// std::vector<double> predictions;
/// darkbert::append_sequence_predictions(result, predictions);   // argmax class, or the score (regression)
/// double f1 = darkbert::glue_metric_function(darkbert::GlueMetric::f1)(predictions, labels);
/// @endcode

#include <cstddef>  // std::size_t
#include <vector>   // std::vector

#include "darkbert/analysis/task_metrics.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/model/transformer.hpp"

namespace darkbert {

/// Appends one prediction per row of result.sequence_logits: the argmax class as a double (first on
/// ties), or the single logit of a regression head.
template <class T>
void append_sequence_predictions(const ForwardResult<T>& result, std::vector<double>& out) {
  const auto& logits = result.sequence_logits;
  const std::size_t B = logits.shape()[0], K = logits.shape()[1];
  for (std::size_t b = 0; b < B; ++b) {
    if (K == 1) {
      out.push_back(static_cast<double>(logits(b, 0)));
      continue;
    }
    std::size_t best = 0;
    for (std::size_t k = 1; k < K; ++k)
      if (logits(b, k) > logits(b, best)) best = k;
    out.push_back(static_cast<double>(best));
  }
}

/// The metric function of a GLUE metric (accuracy, F1 of class 1, Pearson, Spearman).
inline TaskMetric glue_metric_function(GlueMetric metric) {
  switch (metric) {
    case GlueMetric::accuracy: return accuracy_metric;
    case GlueMetric::f1: return f1_metric;
    case GlueMetric::pearson: return pearson_metric;
    case GlueMetric::spearman: return spearman_metric;
  }
  return accuracy_metric;
}

}  // namespace darkbert
