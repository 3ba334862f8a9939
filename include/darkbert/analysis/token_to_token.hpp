#pragma once
/// @file
/// Token-to-token attention (paper §3.5, Fig. 7): attention from tokens of one class to tokens of another
/// (verb -> subject, pronoun -> noun), and how one query token (usually [CLS]) spreads its attention over
/// token categories.
///
/// ClassToClassAttention, per head and example, over the valid pairs (i in class A, j in class B, i != j, j
/// visible from i — causal models: j <= i):
/// @code
/// mass = mean over A tokens i that have at least one such j of  sum_j a[i][j]   (share of A's attention on B)
/// max  = max over all such pairs of a[i][j]
/// @endcode
/// averaged over the examples that have at least one valid pair (others are counted in skipped()).
/// For dependency-linked pairs (each subject with its own verb) use LinkAttentionAccumulator instead.
///
/// QueryCategoryAttention, per head and example: the attention row of the query token (the first valid token
/// of the query class, or an explicit position) split over categories — each valid key goes to the FIRST
/// category it matches, keys matching none go to "other" — so the shares of one row sum to 1. Averaged over the
/// examples that have a query token.
///
/// @code
/// ClassToClassAttention<float> v2s(12, 12, token_class::upos("VERB"), token_class::subject());
/// QueryCategoryAttention<float> cls(12, 12, token_class::cls_token(),
///     {token_class::cls_token(), token_class::sep_token(), token_class::punctuation(), token_class::upos("NOUN")});
/// for (each example) { v2s.add(view, tokens); cls.add(view, tokens); }
/// auto [mass, max] = v2s.result();
/// Table<float> last_layer = cls.layer_table(11);       // [heads, categories + other]
/// @endcode

#include <algorithm>  // std::max, std::fill
#include <cstddef>    // std::size_t
#include <limits>     // std::numeric_limits
#include <optional>   // std::optional
#include <span>       // std::span
#include <string>     // std::string
#include <utility>    // std::move
#include <vector>     // std::vector

#include "darkbert/analysis/attention_view.hpp"    // darkbert::AttentionView
#include "darkbert/analysis/results.hpp"           // darkbert::HeadMatrix, darkbert::Table
#include "darkbert/analysis/running_mean.hpp"      // darkbert::RunningMean
#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation, darkbert::TokenClass
#include "darkbert/core/error.hpp"                 // darkbert::require

namespace darkbert {

/// Mean class-to-class attention per head.
template <class T>
struct ClassToClassResult {
  HeadMatrix<T> mass;  ///< mean share of a class-A token's attention that lands on class-B tokens
  HeadMatrix<T> max;   ///< maximum single weight from a class-A token to a class-B token
};

/// Streaming attention from tokens of one class to tokens of another (§3.5), e.g. verbs to subjects.
/// @code
/// darkbert::ClassToClassAttention<float> acc(12, 12, darkbert::upos("VERB"), darkbert::deprel("nsubj"));
/// acc.add(view, tokens);                         // once per example
/// auto r = acc.result();                         // r.mass, r.max: [12, 12]
/// @endcode
template <class T>
class ClassToClassAttention {
 public:
  /// Empty means over `layers` × `heads` heads for attention from class `from` to class `to`.
  ClassToClassAttention(Index layers, Index heads, TokenClass from, TokenClass to)
      : layers_(layers), heads_(heads), from_(std::move(from)), to_(std::move(to)), mass_(layers, heads),
        max_(layers, heads), example_mass_(static_cast<std::size_t>(layers * heads)),
        example_max_(static_cast<std::size_t>(layers * heads)) {
    require(static_cast<bool>(from_.test) && static_cast<bool>(to_.test),
            "class-to-class attention: token class without predicate");
  }

  /// Folds in one example; returns false (counted in skipped()) when it has no valid (A, B) pair.
  bool add(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
    detail::require_shape(view, layers_, heads_, "class-to-class attention");
    detail::require_annotations(view, tokens, "class-to-class attention");
    const Index n = view.length();
    sources_.clear();
    targets_.clear();
    sources_.reserve(static_cast<std::size_t>(n));  // worst case: scratch depends on the longest example only
    targets_.reserve(static_cast<std::size_t>(n));
    for (Index j = 0; j < n; ++j) {
      if (from_(tokens[static_cast<std::size_t>(j)])) sources_.push_back(j);
      if (to_(tokens[static_cast<std::size_t>(j)])) targets_.push_back(j);
    }
    // Keep only sources that see at least one target other than themselves.
    std::size_t kept = 0;
    for (Index i : sources_) {
      bool sees = false;
      for (Index j : targets_) sees = sees || (j != i && view.visible(i, j));
      if (sees) sources_[kept++] = i;
    }
    sources_.resize(kept);
    if (sources_.empty()) {
      ++skipped_;
      return false;
    }
    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h) {
        T mass_sum = 0;
        T best = -std::numeric_limits<T>::infinity();
        for (Index i : sources_) {
          T row_mass = 0;
          for (Index j : targets_) {
            if (j == i || !view.visible(i, j)) continue;
            const T w = view(l, h, i, j);
            row_mass += w;
            best = std::max(best, w);
          }
          mass_sum += row_mass;
        }
        const auto k = static_cast<std::size_t>(l * heads_ + h);
        example_mass_[k] = mass_sum / static_cast<T>(sources_.size());
        example_max_[k] = best;
      }
    mass_.add(example_mass_);
    max_.add(example_max_);
    return true;
  }

  /// Adds another accumulator's examples.
  void merge(const ClassToClassAttention& other) {
    require(other.from_.name == from_.name && other.to_.name == to_.name,
            "class-to-class attention: cannot merge '", other.from_.name, "' -> '", other.to_.name, "' into '",
            from_.name, "' -> '", to_.name, "'");
    mass_.merge(other.mass_);
    max_.merge(other.max_);
    skipped_ += other.skipped_;
  }

  /// Tables named "<A>_to_<B>_mass" and "<A>_to_<B>_max"; NaN when no example counted.
  ClassToClassResult<T> result() const {
    const std::string stem = from_.name + "_to_" + to_.name;
    ClassToClassResult<T> r{make_head_matrix<T>(stem + "_mass", layers_, heads_),
                            make_head_matrix<T>(stem + "_max", layers_, heads_)};
    mass_.write_mean(r.mass);
    max_.write_mean(r.max);
    return r;
  }

  /// Examples that had tokens of both classes.
  std::size_t examples() const { return mass_.examples(); }
  /// Examples without a token of one of the classes.
  std::size_t skipped() const { return skipped_; }
  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    return mass_.memory_bytes() + max_.memory_bytes() + (example_mass_.capacity() + example_max_.capacity()) * sizeof(T) +
           (sources_.capacity() + targets_.capacity()) * sizeof(Index);
  }

 private:
  Index layers_;
  Index heads_;
  TokenClass from_;
  TokenClass to_;
  RunningMean<T> mass_;
  RunningMean<T> max_;
  std::size_t skipped_ = 0;
  std::vector<T> example_mass_;
  std::vector<T> example_max_;
  std::vector<Index> sources_;
  std::vector<Index> targets_;
};

/// One example's class-to-class attention; std::nullopt when it has no valid pair.
template <class T>
std::optional<ClassToClassResult<T>> class_to_class_attention(const AttentionView<T>& view,
                                                             std::span<const TokenAnnotation> tokens,
                                                             const TokenClass& from, const TokenClass& to) {
  ClassToClassAttention<T> acc(view.layers(), view.heads(), from, to);
  if (!acc.add(view, tokens)) return std::nullopt;
  return acc.result();
}

/// Streaming share of one query class's attention on each of several categories (§3.5: [CLS]'s attention by category).
/// @code
/// darkbert::QueryCategoryAttention<float> acc(12, 12, darkbert::cls_token(), {darkbert::sep_token(), darkbert::punctuation()});
/// @endcode
template <class T>
class QueryCategoryAttention {
 public:
  /// Empty means over `layers` × `heads` heads for queries of class `query`.
  QueryCategoryAttention(Index layers, Index heads, TokenClass query, std::vector<TokenClass> categories)
      : layers_(layers), heads_(heads), query_(std::move(query)), categories_(std::move(categories)),
        mean_(layers * heads, static_cast<Index>(categories_.size()) + 1),
        example_(static_cast<std::size_t>(layers * heads) * (categories_.size() + 1)) {
    require(static_cast<bool>(query_.test), "query category attention: query class '", query_.name,
            "' has no predicate");
    for (const auto& c : categories_)
      require(static_cast<bool>(c.test), "query category attention: category '", c.name, "' has no predicate");
  }

  /// Folds in one example, the query being its first valid token of the query class; returns false (counted
  /// in skipped()) when there is none.
  bool add(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens) {
    detail::require_annotations(view, tokens, "query category attention");
    for (Index i = 0; i < view.length(); ++i)
      if (query_(tokens[static_cast<std::size_t>(i)])) return add(view, tokens, i);
    ++skipped_;
    return false;
  }

  /// Folds in one example with an explicit query position (e.g. the last valid token of a causal model).
  bool add(const AttentionView<T>& view, std::span<const TokenAnnotation> tokens, Index query) {
    detail::require_shape(view, layers_, heads_, "query category attention");
    detail::require_annotations(view, tokens, "query category attention");
    require(query >= 0 && query < view.length(), "query category attention: query position ", query,
            " is outside the valid length ", view.length());
    const Index keys = view.allowed_keys(query);
    const auto other = static_cast<Index>(categories_.size());
    category_.reserve(static_cast<std::size_t>(view.length()));  // longest example decides the scratch size
    category_.resize(static_cast<std::size_t>(keys));
    for (Index j = 0; j < keys; ++j) {
      Index c = 0;
      while (c < other && !categories_[static_cast<std::size_t>(c)](tokens[static_cast<std::size_t>(j)])) ++c;
      category_[static_cast<std::size_t>(j)] = c;
    }
    const Index width = other + 1;
    std::fill(example_.begin(), example_.end(), T(0));
    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h) {
        const auto row = view.row(l, h, query);
        T* out = example_.data() + (l * heads_ + h) * width;
        for (Index j = 0; j < keys; ++j) out[category_[static_cast<std::size_t>(j)]] += row[j];
      }
    mean_.add(example_);
    return true;
  }

  /// Adds another accumulator's examples.
  void merge(const QueryCategoryAttention& other) {
    require(other.categories_.size() == categories_.size() && other.query_.name == query_.name,
            "query category attention: cannot merge accumulators with different query or categories");
    mean_.merge(other.mean_);
    skipped_ += other.skipped_;
  }

  /// Names of the columns: the categories in order, then "other".
  std::vector<std::string> category_names() const {
    std::vector<std::string> names;
    for (const auto& c : categories_) names.push_back(c.name);
    names.push_back("other");
    return names;
  }

  /// One [layers, heads] matrix per category (+ "other"), named "<query>_attention_to_<category>".
  std::vector<HeadMatrix<T>> result() const {
    std::vector<HeadMatrix<T>> out;
    const auto names = category_names();
    const auto width = static_cast<Index>(names.size());
    for (Index c = 0; c < width; ++c) {
      auto m = make_head_matrix<T>(query_.name + "_attention_to_" + names[static_cast<std::size_t>(c)], layers_,
                                   heads_);
      for (Index l = 0; l < layers_; ++l)
        for (Index h = 0; h < heads_; ++h) m(l, h) = mean_.mean(l * heads_ + h, c);
      m.examples = mean_.examples();
      out.push_back(std::move(m));
    }
    return out;
  }

  /// One layer as a [heads, categories + other] table (the paper's Fig. 7 uses the last layer).
  Table<T> layer_table(Index layer) const {
    require(layer >= 0 && layer < layers_, "query category attention: layer ", layer, " is outside [0, ", layers_,
            ")");
    auto t = make_table<T>(query_.name + "_attention_layer_" + std::to_string(layer), "head",
                           detail::index_names(heads_), "category", category_names());
    for (Index h = 0; h < heads_; ++h)
      for (Index c = 0; c < t.cols(); ++c) t(h, c) = mean_.mean(layer * heads_ + h, c);
    t.examples = mean_.examples();
    return t;
  }

  /// Examples that had a query token.
  std::size_t examples() const { return mean_.examples(); }
  /// Examples without a query token.
  std::size_t skipped() const { return skipped_; }
  /// Heap bytes held (independent of the number of examples).
  std::size_t memory_bytes() const {
    return mean_.memory_bytes() + example_.capacity() * sizeof(T) + category_.capacity() * sizeof(Index);
  }

 private:
  Index layers_;
  Index heads_;
  TokenClass query_;
  std::vector<TokenClass> categories_;
  RunningMean<T> mean_;  ///< [layers*heads, categories+1]
  std::size_t skipped_ = 0;
  std::vector<T> example_;
  std::vector<Index> category_;
};

/// One example's query attention per category (+ "other"); std::nullopt when it has no token of the query class.
/// @code
/// auto shares = query_category_attention(view, tokens, token_class::cls_token(), {token_class::sep_token()});
/// @endcode
template <class T>
std::optional<std::vector<HeadMatrix<T>>> query_category_attention(const AttentionView<T>& view,
                                                                  std::span<const TokenAnnotation> tokens,
                                                                  const TokenClass& query,
                                                                  const std::vector<TokenClass>& categories) {
  QueryCategoryAttention<T> acc(view.layers(), view.heads(), query, categories);
  if (!acc.add(view, tokens)) return std::nullopt;
  return acc.result();
}

}  // namespace darkbert
