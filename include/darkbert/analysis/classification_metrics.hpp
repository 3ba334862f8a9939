#pragma once
/// @file
/// Task metrics for classification (GLUE: accuracy, F1, Matthews correlation) with scikit-learn 1.2's
/// conventions, as a streaming confusion matrix and as plain functions over whole label vectors.
///
/// @code
/// double acc = accuracy(y_true, y_pred);            // fraction equal
/// double f1  = f1_binary(y_true, y_pred);           // positive label 1; 0 when no true and no predicted 1
/// double f1m = f1_macro(y_true, y_pred);            // mean over the sorted union of labels
/// double m   = matthews_corrcoef(y_true, y_pred);   // 0 when the denominator is 0
/// @endcode
///
/// @code
/// ConfusionMatrix cm;                                // streaming: one prediction at a time
/// for (each example) cm.add(label, prediction);
/// double mcc = cm.mcc();
/// @endcode
///
/// Conventions (sklearn f1_score(zero_division=0), matthews_corrcoef):
///   - per label: precision = tp/(tp+fp), recall = tp/(tp+fn), each 0 when its denominator is 0;
///     F1 = 2 p r / (p + r), 0 when p + r = 0.
///   - macro F1: unweighted mean over the labels present in y_true or y_pred (sorted union).
///   - binary F1: F1 of label 1; every label must be 0 or 1 (sklearn also refuses other binary label sets).
///   - MCC: multiclass formula (cov(true, pred) / sqrt(cov(true, true) cov(pred, pred)) from the confusion
///     matrix, in float64); 0 when the denominator is 0 (a single class, constant predictions).
/// Empty input or vectors of different lengths throw darkbert::error.

#include <algorithm>  // std::lower_bound
#include <cmath>      // std::sqrt
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t
#include <span>       // std::span
#include <string>     // std::string
#include <utility>    // std::move
#include <vector>     // std::vector

#include "darkbert/analysis/results.hpp"  // darkbert::Table
#include "darkbert/core/error.hpp"        // darkbert::require, darkbert::fail

namespace darkbert {

/// Counts of (true label, predicted label) over the examples seen. Memory: K^2 counters for K distinct labels,
/// independent of the number of examples.
class ConfusionMatrix {
 public:
  ConfusionMatrix() = default;

  /// Builds the matrix of two whole label vectors.
  ConfusionMatrix(std::span<const int> y_true, std::span<const int> y_pred) { add(y_true, y_pred); }

  /// One example.
  void add(int truth, int predicted) {
    insert(truth);
    insert(predicted);  // may shift every index: look both up only afterwards
    ++counts_[find(truth) * labels_.size() + find(predicted)];
    ++total_;
  }

  /// Many examples.
  void add(std::span<const int> y_true, std::span<const int> y_pred) {
    require(y_true.size() == y_pred.size(), "confusion matrix: ", y_true.size(), " true labels but ", y_pred.size(),
            " predictions");
    for (std::size_t k = 0; k < y_true.size(); ++k) add(y_true[k], y_pred[k]);
  }

  /// Adds another matrix's counts (same number of classes).
  void merge(const ConfusionMatrix& other) {
    for (int label : other.labels_) insert(label);
    for (std::size_t t = 0; t < other.labels_.size(); ++t)
      for (std::size_t p = 0; p < other.labels_.size(); ++p)
        counts_[find(other.labels_[t]) * labels_.size() + find(other.labels_[p])] +=
            other.counts_[t * other.labels_.size() + p];
    total_ += other.total_;
  }

  /// Sorted union of the labels seen as truth or prediction.
  const std::vector<int>& labels() const { return labels_; }
  /// Number of (truth, prediction) pairs counted.
  std::uint64_t total() const { return total_; }
  /// How often class `truth` was predicted as `predicted`.
  std::uint64_t count(int truth, int predicted) const {
    const auto t = find(truth), p = find(predicted);
    if (t == npos || p == npos) return 0;
    return counts_[t * labels_.size() + p];
  }

  /// Share of correct predictions.
  template <class T = double>
  T accuracy() const {
    require_examples("accuracy");
    std::uint64_t correct = 0;
    for (std::size_t k = 0; k < labels_.size(); ++k) correct += counts_[k * labels_.size() + k];
    return static_cast<T>(static_cast<double>(correct) / static_cast<double>(total_));
  }

  /// F1 of label `label` (precision/recall 0 when undefined).
  template <class T = double>
  T f1_of(int label) const {
    require_examples("f1");
    const std::size_t k = find(label);
    if (k == npos) return T(0);
    const std::size_t K = labels_.size();
    std::uint64_t tp = counts_[k * K + k], predicted = 0, actual = 0;
    for (std::size_t j = 0; j < K; ++j) {
      predicted += counts_[j * K + k];
      actual += counts_[k * K + j];
    }
    const double precision = predicted == 0 ? 0.0 : static_cast<double>(tp) / static_cast<double>(predicted);
    const double recall = actual == 0 ? 0.0 : static_cast<double>(tp) / static_cast<double>(actual);
    const double denom = precision + recall;
    return static_cast<T>(denom == 0.0 ? 0.0 : 2.0 * precision * recall / denom);
  }

  /// F1 of the positive label 1; all labels must be 0 or 1.
  template <class T = double>
  T f1_binary() const {
    require_examples("f1_binary");
    for (int label : labels_)
      require(label == 0 || label == 1, "f1_binary: label ", label,
              " is not 0 or 1 (binary F1 needs labels in {0, 1}; use f1_macro for other label sets)");
    return f1_of<T>(1);
  }

  /// Unweighted mean of the per-label F1 over the sorted union of labels.
  template <class T = double>
  T f1_macro() const {
    require_examples("f1_macro");
    double sum = 0;
    for (int label : labels_) sum += static_cast<double>(f1_of<double>(label));
    return static_cast<T>(sum / static_cast<double>(labels_.size()));
  }

  /// Matthews correlation coefficient (multiclass form); 0 when undefined.
  template <class T = double>
  T mcc() const {
    require_examples("mcc");
    const std::size_t K = labels_.size();
    double n_correct = 0, t_dot_p = 0, p_dot_p = 0, t_dot_t = 0;
    for (std::size_t k = 0; k < K; ++k) {
      double t_sum = 0, p_sum = 0;  // true count / predicted count of label k
      for (std::size_t j = 0; j < K; ++j) {
        t_sum += static_cast<double>(counts_[k * K + j]);
        p_sum += static_cast<double>(counts_[j * K + k]);
      }
      n_correct += static_cast<double>(counts_[k * K + k]);
      t_dot_p += t_sum * p_sum;
      p_dot_p += p_sum * p_sum;
      t_dot_t += t_sum * t_sum;
    }
    const double n = static_cast<double>(total_);
    const double cov_ytyp = n_correct * n - t_dot_p;
    const double cov_ypyp = n * n - p_dot_p;
    const double cov_ytyt = n * n - t_dot_t;
    if (cov_ypyp * cov_ytyt == 0.0) return T(0);
    return static_cast<T>(cov_ytyp / std::sqrt(cov_ytyt * cov_ypyp));
  }

  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    return labels_.capacity() * sizeof(int) + counts_.capacity() * sizeof(std::uint64_t);
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t find(int label) const {
    const auto it = std::lower_bound(labels_.begin(), labels_.end(), label);
    return (it != labels_.end() && *it == label) ? static_cast<std::size_t>(it - labels_.begin()) : npos;
  }

  /// Adds a label the first time it is seen, re-laying out the counts (indices of larger labels shift by one).
  void insert(int label) {
    if (find(label) != npos) return;
    const auto at = static_cast<std::size_t>(std::lower_bound(labels_.begin(), labels_.end(), label) - labels_.begin());
    const std::size_t K = labels_.size();
    std::vector<std::uint64_t> grown((K + 1) * (K + 1), 0);
    for (std::size_t t = 0; t < K; ++t)
      for (std::size_t p = 0; p < K; ++p)
        grown[(t + (t >= at)) * (K + 1) + (p + (p >= at))] = counts_[t * K + p];
    counts_ = std::move(grown);
    labels_.insert(labels_.begin() + static_cast<std::ptrdiff_t>(at), label);
  }

  void require_examples(const char* metric) const {
    require(total_ > 0, metric, ": no examples (empty input)");
  }

  std::vector<int> labels_;
  std::vector<std::uint64_t> counts_;  ///< [K, K], row = true label, column = predicted label
  std::uint64_t total_ = 0;
};

namespace detail {
inline ConfusionMatrix confusion_of(std::span<const int> y_true, std::span<const int> y_pred, const char* metric) {
  require(y_true.size() == y_pred.size(), metric, ": ", y_true.size(), " true labels but ", y_pred.size(),
          " predictions");
  require(!y_true.empty(), metric, ": no examples (empty input)");
  return ConfusionMatrix(y_true, y_pred);
}
}  // namespace detail

/// Fraction of predictions equal to the true label.
template <class T = double>
T accuracy(std::span<const int> y_true, std::span<const int> y_pred) {
  require(y_true.size() == y_pred.size(), "accuracy: ", y_true.size(), " true labels but ", y_pred.size(),
          " predictions");
  require(!y_true.empty(), "accuracy: no examples (empty input)");
  std::size_t correct = 0;
  for (std::size_t k = 0; k < y_true.size(); ++k) correct += y_true[k] == y_pred[k];
  return static_cast<T>(static_cast<double>(correct) / static_cast<double>(y_true.size()));
}

/// F1 of class 1, as sklearn.metrics.f1_score(average="binary").
template <class T = double>
T f1_binary(std::span<const int> y_true, std::span<const int> y_pred) {
  return detail::confusion_of(y_true, y_pred, "f1_binary").f1_binary<T>();
}

/// Unweighted mean F1 over classes, as sklearn's average="macro".
template <class T = double>
T f1_macro(std::span<const int> y_true, std::span<const int> y_pred) {
  return detail::confusion_of(y_true, y_pred, "f1_macro").f1_macro<T>();
}

/// Matthews correlation coefficient, as sklearn.metrics.matthews_corrcoef.
template <class T = double>
T matthews_corrcoef(std::span<const int> y_true, std::span<const int> y_pred) {
  return detail::confusion_of(y_true, y_pred, "matthews_corrcoef").mcc<T>();
}

/// A one-row table "<name>": accuracy, f1_macro, mcc and — when every label is 0 or 1 — f1_binary.
/// @code
/// write_table(classification_report(cm, "mrpc_dev"), "results");
/// @endcode
template <class T = double>
Table<T> classification_report(const ConfusionMatrix& cm, std::string name) {
  bool binary = true;
  for (int label : cm.labels()) binary = binary && (label == 0 || label == 1);
  std::vector<std::string> cols = {"accuracy", "f1_macro", "mcc"};
  if (binary) cols.push_back("f1_binary");
  Table<T> t = make_table<T>(std::move(name), "split", {"value"}, "metric", cols);
  t(0, 0) = cm.accuracy<T>();
  t(0, 1) = cm.f1_macro<T>();
  t(0, 2) = cm.mcc<T>();
  if (binary) t(0, 3) = cm.f1_binary<T>();
  t.examples = static_cast<std::size_t>(cm.total());
  return t;
}

}  // namespace darkbert
