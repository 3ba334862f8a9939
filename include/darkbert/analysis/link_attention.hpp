#pragma once
/// @file
/// Relation-specific heads (paper §3.2, Fig. 3): maximum attention over annotated token pairs.
///
/// Our reading of the method (seeds 003 §3.2 and 002 §6.2): for every sentence and head, take "the maximum
/// absolute attention weight among the token pairs that correspond to the annotated semantic links" — in
/// FrameNet, between the frame-evoking target (the lexical unit) and each core frame element — then average
/// these per-sentence maxima over all sentences, and single out heads above the 99th percentile over heads
/// (percentile.hpp, heads_above_percentile).
///   - A link joins two token sets (`from` = the target's word pieces, `to` = a frame element's word pieces);
///     multi-token spans contribute every (from, to) token pair, and the maximum is taken over all pairs of all
///     links of the sentence. (Attention weights are non-negative, so "absolute" changes nothing.)
///   - Direction: the paper's example reads the target's row ("while processing 'agitated' both heads attend
///     to 'He'"), i.e. query = target, key = frame element. That is LinkDirection::from_to (the default);
///     to_from reads the frame element's row; either takes both weights of each pair.
///   - Pairs of a token with itself are ignored, and so are pairs the model cannot see (causal models: key
///     after query). A sentence with no usable pair is skipped and counted in skipped().
/// The same accumulator serves any annotated relation, e.g. dependency-linked verb -> subject pairs.
///
/// @code
/// LinkAttentionAccumulator<float> acc(12, 12);
/// acc.add(view, {{{target_token}, {fe_token_1, fe_token_2}}});   // one link: target -> frame element span
/// HeadMatrix<float> m = acc.result();
/// auto top = heads_above_percentile(m, 99.0);
/// @endcode

#include <algorithm>  // std::max
#include <cstddef>    // std::size_t
#include <limits>     // std::numeric_limits
#include <optional>   // std::optional
#include <span>       // std::span
#include <string>     // std::string
#include <utility>    // std::pair, std::move
#include <vector>     // std::vector

#include "darkbert/analysis/attention_view.hpp"  // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"         // darkbert::HeadMatrix
#include "darkbert/analysis/running_mean.hpp"    // darkbert::RunningMean
#include "darkbert/core/error.hpp"               // darkbert::require

namespace darkbert {

/// An annotated relation between two token sets of one example (token positions, 0-based, < valid length).
struct TokenLink {
  std::vector<Index> from;  ///< e.g. the FrameNet target's word pieces
  std::vector<Index> to;    ///< e.g. one core frame element's word pieces
};

/// Which weight of a linked token pair counts.
enum class LinkDirection {
  from_to,  ///< weight a[from][to]: while processing `from`, attention on `to` (the paper's reading)
  to_from,  ///< weight a[to][from]
  either,   ///< both weights of every pair
};

/// Streaming mean of the per-example maximum link attention. Memory: layers*heads sums plus a scratch list of
/// the current example's pairs.
template <class T>
class LinkAttentionAccumulator {
 public:
  /// Empty means for `layers` × `heads` heads, reading pairs in `direction`.
  LinkAttentionAccumulator(Index layers, Index heads, LinkDirection direction = LinkDirection::from_to,
                           std::string name = "max_link_attention")
      : layers_(layers), heads_(heads), direction_(direction), name_(std::move(name)), mean_(layers, heads),
        example_(static_cast<std::size_t>(layers * heads)) {}

  /// Folds in one example; returns false (and counts it as skipped) if no link gives a usable token pair.
  bool add(const AttentionView<T>& view, std::span<const TokenLink> links) {
    detail::require_shape(view, layers_, heads_, "link attention");
    const Index n = view.length();
    pairs_.clear();
    for (std::size_t k = 0; k < links.size(); ++k) {
      const TokenLink& link = links[k];
      for (Index t : link.from) check_index(t, n, k, "from");
      for (Index t : link.to) check_index(t, n, k, "to");
      for (Index f : link.from)
        for (Index t : link.to) {
          if (direction_ != LinkDirection::to_from) push(view, f, t);
          if (direction_ != LinkDirection::from_to) push(view, t, f);
        }
    }
    if (pairs_.empty()) {
      ++skipped_;
      return false;
    }
    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h) {
        const T* map = view.map(l, h);
        const Index L = view.padded_length();
        T best = -std::numeric_limits<T>::infinity();
        for (const auto& [q, k] : pairs_) best = std::max(best, map[q * L + k]);
        example_[static_cast<std::size_t>(l * heads_ + h)] = best;
      }
    mean_.add(example_);
    return true;
  }

  /// Adds one example's maximum link weight per head; false (and counted as skipped) when no pair is usable.
  bool add(const AttentionView<T>& view, const std::vector<TokenLink>& links) {
    return add(view, std::span<const TokenLink>(links));
  }

  /// Adds another accumulator's examples.
  void merge(const LinkAttentionAccumulator& other) {
    require(other.direction_ == direction_, "link attention: cannot merge accumulators with different directions");
    mean_.merge(other.mean_);
    skipped_ += other.skipped_;
  }

  /// Mean over the examples that counted; NaN if none did.
  HeadMatrix<T> result() const {
    auto m = make_head_matrix<T>(name_, layers_, heads_);
    mean_.write_mean(m);
    return m;
  }

  /// Examples that counted.
  std::size_t examples() const { return mean_.examples(); }  // examples that counted
  /// Examples without a usable pair.
  std::size_t skipped() const { return skipped_; }           // examples without a usable pair
  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    return mean_.memory_bytes() + example_.capacity() * sizeof(T) + pairs_.capacity() * sizeof(pairs_[0]);
  }

 private:
  static void check_index(Index t, Index n, std::size_t link, const char* side) {
    require(t >= 0 && t < n, "link attention: link ", link, " '", side, "' token ", t,
            " is outside the valid length ", n);
  }
  void push(const AttentionView<T>& view, Index query, Index key) {
    if (query != key && view.visible(query, key)) pairs_.emplace_back(query, key);
  }

  Index layers_;
  Index heads_;
  LinkDirection direction_;
  std::string name_;
  RunningMean<T> mean_;
  std::vector<T> example_;
  std::vector<std::pair<Index, Index>> pairs_;  ///< (query, key) of the current example
  std::size_t skipped_ = 0;
};

/// Per-head maximum link attention of one example; std::nullopt when no link gives a usable pair.
template <class T>
std::optional<HeadMatrix<T>> max_link_attention(const AttentionView<T>& view, std::span<const TokenLink> links,
                                                LinkDirection direction = LinkDirection::from_to) {
  LinkAttentionAccumulator<T> acc(view.layers(), view.heads(), direction);
  if (!acc.add(view, links)) return std::nullopt;
  return acc.result();
}

}  // namespace darkbert
