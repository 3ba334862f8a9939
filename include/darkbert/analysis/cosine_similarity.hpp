#pragma once
/// @file
/// How much fine-tuning changed each head (paper §3.3, Fig. 5): cosine similarity between the flattened
/// valid n x n attention maps of two models (pre-trained vs fine-tuned) on the same example, per head,
/// averaged over a dataset (every example weighs the same).
///
/// @code
/// HeadMatrix<float> one = head_cosine_similarity(pretrained_view, finetuned_view);     // one example
/// @endcode
///
/// @code
/// CosineSimilarityAccumulator<float> acc(12, 12);
/// for (each example) acc.add(pretrained_view, finetuned_view);                         // streaming
/// HeadMatrix<float> drift = acc.result();                                              // [layers, heads]
/// @endcode
///
/// For causal models the structural zeros above the diagonal contribute nothing to dot product or norms.

#include <cmath>    // std::sqrt
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string
#include <utility>  // std::move
#include <vector>   // std::vector

#include "darkbert/analysis/attention_view.hpp"  // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"         // darkbert::HeadMatrix
#include "darkbert/analysis/running_mean.hpp"    // darkbert::RunningMean
#include "darkbert/core/error.hpp"               // darkbert::require, darkbert::fail

namespace darkbert {

namespace detail {
/// out[l*heads + h] = cos(a_lh, b_lh) over the valid block. [layers*heads]
template <class T>
void cosine_kernel(const AttentionView<T>& a, const AttentionView<T>& b, T* out) {
  require(a.layers() == b.layers() && a.heads() == b.heads(), "cosine similarity: first maps have ", a.layers(),
          " layers x ", a.heads(), " heads, second maps ", b.layers(), " x ", b.heads());
  require(a.length() == b.length(), "cosine similarity: first maps have valid length ", a.length(), ", second ",
          b.length(), " (must be the same example)");
  using A = accumulate_t<T>;
  for (Index l = 0; l < a.layers(); ++l)
    for (Index h = 0; h < a.heads(); ++h) {
      const auto x = a.block(l, h);
      const auto y = b.block(l, h);
      const A dot = static_cast<A>(x.cwiseProduct(y).sum());
      const A nx = static_cast<A>(x.squaredNorm());
      const A ny = static_cast<A>(y.squaredNorm());
      if (nx == 0 || ny == 0)
        fail("cosine similarity: layer ", l, " head ", h, ": ", nx == 0 ? "first" : "second",
             " attention map is all zero over the valid block");
      out[l * a.heads() + h] = static_cast<T>(dot / (std::sqrt(nx) * std::sqrt(ny)));
    }
}
}  // namespace detail

/// Streaming mean of per-head cosine similarity over a dataset. Memory: layers*heads sums + one example buffer.
template <class T>
class CosineSimilarityAccumulator {
 public:
  /// Empty mean for `layers` × `heads` heads; `name` labels the result table.
  CosineSimilarityAccumulator(Index layers, Index heads, std::string name = "attention_cosine_similarity")
      : layers_(layers), heads_(heads), name_(std::move(name)), mean_(layers, heads),
        example_(static_cast<std::size_t>(layers * heads)) {}

  /// Folds in one example seen by both models (same tokens, same valid length).
  void add(const AttentionView<T>& a, const AttentionView<T>& b) {
    detail::require_shape(a, layers_, heads_, "cosine similarity");
    detail::cosine_kernel(a, b, example_.data());
    mean_.add(example_);
  }

  /// Adds another accumulator's examples.
  void merge(const CosineSimilarityAccumulator& other) { mean_.merge(other.mean_); }

  /// Mean over the examples added; NaN when none was.
  HeadMatrix<T> result() const {
    auto m = make_head_matrix<T>(name_, layers_, heads_);
    mean_.write_mean(m);
    return m;
  }

  /// Examples added.
  std::size_t examples() const { return mean_.examples(); }
  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const { return mean_.memory_bytes() + example_.capacity() * sizeof(T); }

 private:
  Index layers_;
  Index heads_;
  std::string name_;
  RunningMean<T> mean_;
  std::vector<T> example_;
};

/// Per-head cosine similarity of one example's maps under two models.
template <class T>
HeadMatrix<T> head_cosine_similarity(const AttentionView<T>& a, const AttentionView<T>& b) {
  CosineSimilarityAccumulator<T> acc(a.layers(), a.heads());
  acc.add(a, b);
  return acc.result();
}

}  // namespace darkbert
