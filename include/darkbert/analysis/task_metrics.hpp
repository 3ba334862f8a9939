#pragma once
// GLUE task metrics in the shape an evaluation loop or the ablation sweep takes them: a function
// (predictions, labels) -> score over a whole evaluation set, both as std::vector<double> (classification
// predictions are the argmax class index as a double, regression predictions the single logit).
//
//   double acc = accuracy_metric(predicted_classes, gold_labels);
//   AblationSweep<float> sweep(model, batches, labels, accuracy_metric);   // analysis/ablation_sweep.hpp
//
// They forward to classification_metrics.hpp / correlation.hpp (scikit-learn / scipy conventions). The argument
// order (predictions first) is the reverse of the sklearn-style functions (y_true first); every metric here is
// symmetric in its two arguments (binary F1 = 2TP / (2TP + FP + FN)), so only the names differ.

#include <cmath>    // std::round, std::isfinite
#include <cstddef>  // std::size_t
#include <functional>  // std::function
#include <limits>   // std::numeric_limits
#include <vector>   // std::vector

#include "darkbert/analysis/classification_metrics.hpp"  // accuracy, f1_binary, f1_macro, matthews_corrcoef
#include "darkbert/analysis/correlation.hpp"             // pearson, spearman
#include "darkbert/core/error.hpp"                       // darkbert::require, darkbert::fail

namespace darkbert {

// A task metric over a whole evaluation set: (predictions, labels) -> score. Classification predictions
// are the argmax class as a double; regression predictions the single logit.
using TaskMetric = std::function<double(const std::vector<double>& predictions, const std::vector<double>& labels)>;

namespace detail {
// Class indices stored as doubles -> ints; anything that is not an exact integer is an error.
inline std::vector<int> class_indices(const std::vector<double>& values, const char* metric, const char* what) {
  std::vector<int> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!std::isfinite(v) || v != std::round(v) || std::abs(v) > double(std::numeric_limits<int>::max()))
      fail(metric, ": ", what, "[", i, "] = ", v, " is not a class index");
    out[i] = static_cast<int>(v);
  }
  return out;
}
}  // namespace detail

inline double accuracy_metric(const std::vector<double>& predictions, const std::vector<double>& labels) {
  return accuracy(detail::class_indices(labels, "accuracy_metric", "label"),
                  detail::class_indices(predictions, "accuracy_metric", "prediction"));
}

// Binary F1 of class 1 (MRPC, QQP).
inline double f1_metric(const std::vector<double>& predictions, const std::vector<double>& labels) {
  return f1_binary(detail::class_indices(labels, "f1_metric", "label"),
                   detail::class_indices(predictions, "f1_metric", "prediction"));
}

inline double f1_macro_metric(const std::vector<double>& predictions, const std::vector<double>& labels) {
  return f1_macro(detail::class_indices(labels, "f1_macro_metric", "label"),
                  detail::class_indices(predictions, "f1_macro_metric", "prediction"));
}

// Matthews correlation (CoLA).
inline double mcc_metric(const std::vector<double>& predictions, const std::vector<double>& labels) {
  return matthews_corrcoef(detail::class_indices(labels, "mcc_metric", "label"),
                           detail::class_indices(predictions, "mcc_metric", "prediction"));
}

// Pearson / Spearman correlation (STS-B); NaN when either side is constant.
inline double pearson_metric(const std::vector<double>& predictions, const std::vector<double>& labels) {
  return pearson(labels, predictions);
}

inline double spearman_metric(const std::vector<double>& predictions, const std::vector<double>& labels) {
  return spearman(labels, predictions);
}

}  // namespace darkbert
