#pragma once
/// @file
/// Per-head summaries of attention maps — numbers that tell the paper's pattern classes apart (§3.1:
/// vertical = mass on special tokens, diagonal = mass on the neighbours, block = mass inside the own segment,
/// heterogeneous = none of these, high entropy).
///
/// For each valid query row i (allowed keys only: j < n, and j <= i for causal models):
/// @code
/// entropy          -sum_j a[i][j] ln a[i][j]        (nats; 0 ln 0 = 0, so a row with one allowed key has 0)
/// mean_distance     sum_j a[i][j] |i - j|            (expected distance in tokens)
/// special_share     sum over special keys j           (TokenAnnotation::is_special)
/// self_share        a[i][i]
/// neighbour_share   a[i][i-1] + a[i][i+1]            (the ±1 diagonal, where allowed)
/// segment_share     sum over keys j with segment(j) == segment(i)   (TokenAnnotation::segment)
/// @endcode
/// Per example: the mean over the n valid query rows (special-token rows included). Dataset: the mean over
/// examples, every example weighing the same.
///
/// @code
/// HeadSummaryAccumulator<float> acc(12, 12);
/// for (each example) acc.add(view, tokens);
/// HeadSummary<float> s = acc.result();       // s.entropy, s.mean_distance, ... each [layers, heads]
/// for (auto& t : s.tables()) write_table(t, "out");
/// @endcode

#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <utility>  // std::move
#include <vector>   // std::vector

#include <Eigen/Core>  // Eigen::Map

#include "darkbert/analysis/attention_view.hpp"    // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"           // darkbert::HeadMatrix
#include "darkbert/analysis/running_mean.hpp"      // darkbert::RunningMean
#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation
#include "darkbert/analysis/xlogx.hpp"             // detail::xlogx_sum
#include "darkbert/core/error.hpp"                 // darkbert::require
#include "darkbert/core/matrix.hpp"                // darkbert::Vector, darkbert::Index

namespace darkbert {

/// Per-head means of the summaries, each a [layers, heads] matrix.
template <class T>
struct HeadSummary {
  HeadMatrix<T> entropy;  ///<  entropy of a query's weights, nats
  HeadMatrix<T> mean_distance;  ///<  expected |i - j| between query and key
  HeadMatrix<T> special_share;  ///<  weight on special tokens ([CLS], [SEP], …)
  HeadMatrix<T> self_share;  ///<  weight on the query itself
  HeadMatrix<T> neighbour_share;  ///<  weight on the ±1 diagonal
  HeadMatrix<T> segment_share;  ///<  weight within the query's own segment

  /// All six, in the order above (for writing).
  std::vector<HeadMatrix<T>> tables() const {
    return {entropy, mean_distance, special_share, self_share, neighbour_share, segment_share};
  }
};

/// Streaming HeadSummary over examples (§3.1).
/// @code
/// darkbert::HeadSummaryAccumulator<float> acc(12, 12);
/// acc.add(view, tokens);          // once per example
/// darkbert::HeadSummary<float> s = acc.result();
/// @endcode
template <class T>
class HeadSummaryAccumulator {
 public:
  /// Number of statistics per head (the fields of HeadSummary).
  static constexpr Index kStatistics = 6;

  /// Empty means for `layers` × `heads` heads.
  HeadSummaryAccumulator(Index layers, Index heads)
      : layers_(layers), heads_(heads), mean_(layers * heads, kStatistics),
        example_(static_cast<std::size_t>(layers * heads * kStatistics)) {}

  /// Adds one example; `tokens` annotates its n valid tokens (special or not, segment).
  void add(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
    detail::require_shape(view, layers_, heads_, "head summary");
    detail::require_annotations(view, tokens, "head summary");
    const Index n = view.length();

    // Per-example key vectors (scratch keeps its capacity): 1 for special keys, positions, and for every query
    // row i the 0/1 mask of keys in i's segment ([n, n], shared by all heads).
    special_.resize(static_cast<std::size_t>(n));
    position_.resize(static_cast<std::size_t>(n));
    same_segment_.resize(static_cast<std::size_t>(n * n));
    for (Index j = 0; j < n; ++j) {
      special_[static_cast<std::size_t>(j)] = tokens[static_cast<std::size_t>(j)].is_special ? T(1) : T(0);
      position_[static_cast<std::size_t>(j)] = T(j);
    }
    for (Index i = 0; i < n; ++i)
      for (Index j = 0; j < n; ++j)
        same_segment_[static_cast<std::size_t>(i * n + j)] =
            tokens[static_cast<std::size_t>(i)].segment == tokens[static_cast<std::size_t>(j)].segment ? T(1) : T(0);
    using VectorMapT = Eigen::Map<Vector<T>>;
    const VectorMapT special_keys(special_.data(), n), positions(position_.data(), n);

    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h) {
        T entropy = 0, distance = 0, special = 0, self = 0, neighbour = 0, segment = 0;
        for (Index i = 0; i < n; ++i) {
          const auto row = view.row(l, h, i);  // allowed keys only
          const Index k = row.size();
          const auto p = row.array();
          entropy -= detail::xlogx_sum(row.data(), k);  // 0 ln 0 = 0
          distance += (p * (positions.head(k).array() - T(i)).abs()).sum();
          special += row.dot(special_keys.head(k));
          self += row[i];
          if (i >= 1) neighbour += row[i - 1];
          if (i + 1 < k) neighbour += row[i + 1];
          segment += row.dot(VectorMapT(same_segment_.data() + i * n, k));
        }
        T* out = example_.data() + (l * heads_ + h) * kStatistics;
        const T rows = T(n);
        out[0] = entropy / rows;
        out[1] = distance / rows;
        out[2] = special / rows;
        out[3] = self / rows;
        out[4] = neighbour / rows;
        out[5] = segment / rows;
      }
    mean_.add(example_);
  }

  /// Adds another accumulator's examples.
  void merge(const HeadSummaryAccumulator& other) { mean_.merge(other.mean_); }

  /// The means over the examples added.
  HeadSummary<T> result() const {
    const char* names[kStatistics] = {"entropy",       "mean_distance",   "special_share",
                                      "self_share",    "neighbour_share", "segment_share"};
    std::vector<HeadMatrix<T>> m;
    for (Index s = 0; s < kStatistics; ++s) {
      auto t = make_head_matrix<T>(names[s], layers_, heads_);
      for (Index l = 0; l < layers_; ++l)
        for (Index h = 0; h < heads_; ++h) t(l, h) = mean_.mean(l * heads_ + h, s);
      t.examples = mean_.examples();
      m.push_back(std::move(t));
    }
    return {std::move(m[0]), std::move(m[1]), std::move(m[2]), std::move(m[3]), std::move(m[4]), std::move(m[5])};
  }

  /// Examples added.
  std::size_t examples() const { return mean_.examples(); }
  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    return mean_.memory_bytes() +
           (example_.capacity() + special_.capacity() + position_.capacity() + same_segment_.capacity()) *
               sizeof(T);
  }

 private:
  Index layers_;
  Index heads_;
  RunningMean<T> mean_;  ///< [layers*heads, 6]
  std::vector<T> example_;
  /// scratch, reused across examples
  std::vector<T> special_;
  std::vector<T> position_;
  std::vector<T> same_segment_;
};

/// The six summaries of one example.
template <class T>
HeadSummary<T> head_summary(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
  HeadSummaryAccumulator<T> acc(view.layers(), view.heads());
  acc.add(view, tokens);
  return acc.result();
}

}  // namespace darkbert
