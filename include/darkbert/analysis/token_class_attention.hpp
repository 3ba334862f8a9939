#pragma once
/// @file
/// Attention to linguistic features (paper §3.4, Fig. 6): how much attention a token class receives.
///
/// Definition (per head, per example), following the paper's method section:
/// @code
/// received(j) = sum over valid queries i of a[i][j]              (the weight token j gets "from every token")
/// score(j)    = received(j) / n                                   (normalised by sequence length n)
/// example     = max over tokens j of the class of score(j)        (several nouns / negations: the maximum)
/// dataset     = mean over the examples that contain the class     (examples without it are disregarded)
/// @endcode
/// For causal models only queries i >= j can see token j; with ReceivedNormalisation::visible_queries the sum
/// is divided by the number of such queries (n - j) instead of n, which removes the bias towards early tokens.
/// The default (sequence_length) is the paper's definition.
///
/// @code
/// TokenClassAttention<float> acc(12, 12, {token_class::sep_token(), token_class::cls_token(),
///                                         token_class::upos("NOUN"), token_class::negation()});
/// for (each example) acc.add(view, tokens);
/// std::vector<HeadMatrix<float>> maps = acc.result();   // one [layers, heads] matrix per class
/// @endcode

#include <algorithm>  // std::max
#include <cstddef>    // std::size_t
#include <limits>     // std::numeric_limits
#include <optional>   // std::optional
#include <span>       // std::span
#include <string>     // std::string
#include <utility>    // std::move
#include <vector>     // std::vector

#include "darkbert/analysis/attention_view.hpp"    // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"           // darkbert::HeadMatrix
#include "darkbert/analysis/running_mean.hpp"      // darkbert::RunningMean
#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation, darkbert::TokenClass
#include "darkbert/core/error.hpp"                 // darkbert::require

namespace darkbert {

/// What the attention a token class receives is divided by.
enum class ReceivedNormalisation {
  sequence_length,  ///< divide by n (the paper)
  visible_queries,  ///< divide by the number of queries that can see the token: n (bidirectional), n - j (causal)
};

/// Streaming §3.4 measure for several token classes at once. Memory: classes*layers*heads sums plus scratch
/// buffers of size O(max valid length seen); nothing grows with the number of examples.
template <class T>
class TokenClassAttention {
 public:
  /// Empty means for each class in `classes` over `layers` × `heads` heads.
  TokenClassAttention(Index layers, Index heads, std::vector<TokenClass> classes,
                      ReceivedNormalisation normalisation = ReceivedNormalisation::sequence_length)
      : TokenClassAttention(layers, heads, classes, std::vector<ReceivedNormalisation>(classes.size(), normalisation)) {}

  /// The same, with a normalisation per class (`normalisations[c]` for `classes[c]`): e.g. the paper's
  /// measure for every feature and, beside it, the separator per query that can see it.
  TokenClassAttention(Index layers, Index heads, std::vector<TokenClass> classes,
                      std::vector<ReceivedNormalisation> normalisations)
      : layers_(layers), heads_(heads), classes_(std::move(classes)), normalisations_(std::move(normalisations)) {
    require(!classes_.empty(), "token class attention: no token classes given");
    require(normalisations_.size() == classes_.size(), "token class attention: ", normalisations_.size(),
            " normalisations for ", classes_.size(), " token classes");
    for (const auto& c : classes_)
      require(static_cast<bool>(c.test), "token class attention: class '", c.name, "' has no predicate");
    means_.reserve(classes_.size());
    for (std::size_t c = 0; c < classes_.size(); ++c) means_.emplace_back(layers, heads);
    example_.resize(static_cast<std::size_t>(layers * heads));
  }

  /// Folds in one example. `tokens` annotates the valid tokens (or all L positions; only the first n are used).
  void add(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
    detail::require_shape(view, layers_, heads_, "token class attention");
    detail::require_annotations(view, tokens, "token class attention");
    const Index n = view.length();
    ++examples_;

    // Members of every class in this example: member_index_[member_begin_[c] .. member_begin_[c+1]).
    member_index_.clear();
    member_begin_.clear();
    // Worst case up front, so scratch size depends on the longest example only, never on the example count.
    member_index_.reserve(classes_.size() * static_cast<std::size_t>(n));
    member_begin_.reserve(classes_.size() + 1);
    for (const auto& cls : classes_) {
      member_begin_.push_back(member_index_.size());
      for (Index j = 0; j < n; ++j)
        if (cls(tokens[static_cast<std::size_t>(j)])) member_index_.push_back(j);
    }
    member_begin_.push_back(member_index_.size());
    if (member_index_.empty()) return;  // no class present: nothing to compute

    // received_[(l*heads+h)*n + j] = sum over queries i that see j of a[i][j]
    received_.assign(static_cast<std::size_t>(layers_ * heads_ * n), T(0));
    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h) {
        Eigen::Map<Vector<T>> received(received_.data() + (l * heads_ + h) * n, n);
        for (Index i = 0; i < n; ++i) {
          const auto row = view.row(l, h, i);
          received.head(row.size()) += row;
        }
      }

    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const std::size_t begin = member_begin_[c], end = member_begin_[c + 1];
      if (begin == end) continue;  // class absent: this example does not count for it
      // Divisor of key j: the n queries, or for a causal model per visible query the n - j that see it.
      const bool per_visible = normalisations_[c] == ReceivedNormalisation::visible_queries && view.causal();
      for (Index lh = 0; lh < layers_ * heads_; ++lh) {
        const T* received = received_.data() + lh * n;
        T best = -std::numeric_limits<T>::infinity();
        for (std::size_t m = begin; m < end; ++m) {
          const Index j = member_index_[m];
          best = std::max(best, received[j] / T(per_visible ? n - j : n));
        }
        example_[static_cast<std::size_t>(lh)] = best;
      }
      means_[c].add(example_);
    }
  }

  /// Adds another accumulator's examples (same classes).
  void merge(const TokenClassAttention& other) {
    require(other.classes_.size() == classes_.size(), "token class attention: cannot merge ", other.classes_.size(),
            " classes into ", classes_.size());
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      require(other.classes_[c].name == classes_[c].name, "token class attention: cannot merge class '",
              other.classes_[c].name, "' into class '", classes_[c].name, "'");
      require(other.normalisations_[c] == normalisations_[c], "token class attention: cannot merge class '",
              classes_[c].name, "' measured with another normalisation");
      means_[c].merge(other.means_[c]);
    }
    examples_ += other.examples_;
  }

  /// One [layers, heads] matrix per class, named "attention_to_<class name>", in the order given; its
  /// `examples` is the number of examples that contained the class (NaN everywhere if none did).
  std::vector<HeadMatrix<T>> result() const {
    std::vector<HeadMatrix<T>> out;
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      out.push_back(make_head_matrix<T>("attention_to_" + classes_[c].name, layers_, heads_));
      means_[c].write_mean(out.back());
    }
    return out;
  }

  /// The classes measured.
  const std::vector<TokenClass>& classes() const { return classes_; }
  /// What class `class_index`'s received sums are divided by.
  ReceivedNormalisation normalisation(std::size_t class_index) const { return normalisations_.at(class_index); }
  /// Examples added.
  std::size_t examples() const { return examples_; }  // all examples added
  /// Examples that had a token of class `class_index`.
  std::size_t examples_with(std::size_t class_index) const { return means_.at(class_index).examples(); }

  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    std::size_t bytes = example_.capacity() * sizeof(T) + received_.capacity() * sizeof(T) +
                        member_index_.capacity() * sizeof(Index) +
                        member_begin_.capacity() * sizeof(std::size_t) + means_.capacity() * sizeof(RunningMean<T>);
    for (const auto& m : means_) bytes += m.memory_bytes();
    return bytes;
  }

 private:
  Index layers_;
  Index heads_;
  std::vector<TokenClass> classes_;
  std::vector<ReceivedNormalisation> normalisations_;
  std::vector<RunningMean<T>> means_;
  std::size_t examples_ = 0;
  /// scratch, reused across examples
  std::vector<T> example_;
  std::vector<T> received_;
  std::vector<Index> member_index_;
  std::vector<std::size_t> member_begin_;
};

/// The §3.4 score of one example for one class; std::nullopt when the example has no token of the class.
/// @code
/// auto m = attention_to_class(view, tokens, token_class::sep_token());
/// @endcode
template <class T>
std::optional<HeadMatrix<T>> attention_to_class(
    const AttentionView<T>& view, std::span<const TokenAnnotation> tokens, const TokenClass& cls,
    ReceivedNormalisation normalisation = ReceivedNormalisation::sequence_length) {
  TokenClassAttention<T> acc(view.layers(), view.heads(), {cls}, normalisation);
  acc.add(view, tokens);
  if (acc.examples_with(0) == 0) return std::nullopt;
  return acc.result().front();
}

}  // namespace darkbert
