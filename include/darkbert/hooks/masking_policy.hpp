#pragma once
// Masking policies: replace the attention pattern of chosen heads (or whole layers) at the
// `attn.hook_pattern` point, before it multiplies V. They compose: policies are applied in the order they
// were added, each to its own (layer, head) set.
//
//   darkbert::MaskingPolicies<float> policies;
//   policies.add(darkbert::uniform_policy<float>(), {{3, 7}, {5, darkbert::all_heads}});
//   model.forward(batch, {.policies = &policies});
//
// Built-in policies (each works row by row on one [L, L] map):
//   uniform      every query attends 1/n to each of the n non-padding keys (the paper's "disabled" head);
//                for a causal model 1/(t+1) over the visible prefix (non-padding keys j <= t)
//   zero         the head contributes nothing (Hugging Face head_mask = 0)
//   mean         the head's pattern replaced by its mean over a reference set (MeanPatterns)
//   custom       any function of the map

#include <algorithm>   // std::fill, std::min
#include <functional>  // std::function
#include <memory>      // std::shared_ptr
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "../core/matrix.hpp"

namespace darkbert {

inline constexpr int all_heads = -1;

// One attention map and where it sits. map is [L, L] row-major, rows = queries.
template <class T>
struct PatternSite {
  T* map;
  Index length;
  const int* key_mask;  // [L], 1 = real token
  bool causal;
  int layer, head;
  Index batch_index;

  // The keys query i may attend to: non-padding, and j <= i for a causal model.
  bool allowed(Index i, Index j) const { return key_mask[j] && (!causal || j <= i); }
};

template <class T>
using MaskingPolicy = std::function<void(const PatternSite<T>&)>;

template <class T>
MaskingPolicy<T> uniform_policy() {
  return [](const PatternSite<T>& s) {
    const Index L = s.length;
    for (Index i = 0; i < L; ++i) {
      Index n = 0;
      for (Index j = 0; j < L; ++j) n += s.allowed(i, j);
      if (n == 0) continue;  // a query with no allowed key (all-padding input) keeps its own pattern
      const T value = T(1) / static_cast<T>(n);
      T* row = s.map + i * L;
      for (Index j = 0; j < L; ++j) row[j] = s.allowed(i, j) ? value : T(0);
    }
  };
}

template <class T>
MaskingPolicy<T> zero_policy() {
  return [](const PatternSite<T>& s) { std::fill(s.map, s.map + s.length * s.length, T(0)); };
}

// Mean attention pattern of every (layer, head) over a reference set, position by position.
// Fold examples with add(); a position pair (i, j) is averaged over the examples long enough to have it.
template <class T>
class MeanPatterns {
 public:
  MeanPatterns(int layers, int heads, Index max_length)
      : layers_(layers), heads_(heads), max_length_(max_length),
        sum_(static_cast<std::size_t>(layers) * heads * max_length * max_length, 0.0),
        count_(static_cast<std::size_t>(max_length), 0) {}

  // attentions: one example's [layers, heads, L, L] maps with stride between layers `layer_stride`
  // (elements); only the valid n x n block is used.
  void add(const T* attentions, Index L, Index n, Index layer_stride) {
    require(n <= max_length_, "MeanPatterns: example length ", n, " exceeds the reference maximum ", max_length_);
    for (int l = 0; l < layers_; ++l)
      for (int h = 0; h < heads_; ++h) {
        const T* map = attentions + l * layer_stride + h * L * L;
        double* acc = slot(l, h);
        for (Index i = 0; i < n; ++i)
          for (Index j = 0; j < n; ++j) acc[i * max_length_ + j] += map[i * L + j];
      }
    for (Index i = 0; i < n; ++i) ++count_[static_cast<std::size_t>(i)];  // examples with length > i
  }

  // Mean of pattern[i][j] over the examples that contain both positions (0 if none).
  double mean(int layer, int head, Index i, Index j) const {
    const Index c = count_[static_cast<std::size_t>(std::max(i, j))];
    return c ? slot(layer, head)[i * max_length_ + j] / static_cast<double>(c) : 0.0;
  }
  Index max_length() const { return max_length_; }

 private:
  double* slot(int l, int h) { return sum_.data() + (static_cast<std::size_t>(l) * heads_ + h) * max_length_ * max_length_; }
  const double* slot(int l, int h) const {
    return sum_.data() + (static_cast<std::size_t>(l) * heads_ + h) * max_length_ * max_length_;
  }
  int layers_, heads_;
  Index max_length_;
  std::vector<double> sum_;
  std::vector<Index> count_;
};

// Replaces a head's pattern by its reference mean, restricted to the allowed keys and renormalised
// (so padding stays masked and rows sum to 1). Rows or keys beyond the reference length fall back to
// uniform over the allowed keys.
template <class T>
MaskingPolicy<T> mean_policy(std::shared_ptr<const MeanPatterns<T>> means) {
  require(means != nullptr, "mean_policy: no reference means");
  return [means](const PatternSite<T>& s) {
    const Index L = s.length;
    for (Index i = 0; i < L; ++i) {
      T* row = s.map + i * L;
      double total = 0;
      Index n = 0;
      for (Index j = 0; j < L; ++j) {
        const bool ok = s.allowed(i, j);
        n += ok;
        const double m = ok && i < means->max_length() && j < means->max_length() ? means->mean(s.layer, s.head, i, j) : 0;
        row[j] = static_cast<T>(m);
        total += m;
      }
      if (n == 0) continue;
      for (Index j = 0; j < L; ++j)
        row[j] = !s.allowed(i, j) ? T(0) : total > 0 ? static_cast<T>(row[j] / total) : T(1) / static_cast<T>(n);
    }
  };
}

// A (layer, head) pair; head == all_heads selects the whole layer.
struct HeadRef {
  int layer = 0;
  int head = all_heads;
  friend bool operator==(const HeadRef&, const HeadRef&) = default;
};

template <class T>
class MaskingPolicies {
 public:
  MaskingPolicies& add(MaskingPolicy<T> policy, std::vector<HeadRef> heads) {
    require(static_cast<bool>(policy), "MaskingPolicies::add: empty policy");
    entries_.push_back({std::move(policy), std::move(heads)});
    return *this;
  }
  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }

  bool affects_layer(int layer) const {
    for (const auto& e : entries_)
      for (const auto& h : e.heads)
        if (h.layer == layer) return true;
    return false;
  }
  // Whether some policy replaces the pattern of (layer, head): then that pattern is a constant of the
  // forward pass and no gradient flows through it to Q and K.
  bool replaces(int layer, int head) const {
    for (const auto& e : entries_)
      for (const auto& h : e.heads)
        if (h.layer == layer && (h.head == all_heads || h.head == head)) return true;
    return false;
  }
  // Lowest layer any policy touches (num_layers if none): everything below it is unaffected.
  int first_layer(int num_layers) const {
    int first = num_layers;
    for (const auto& e : entries_)
      for (const auto& h : e.heads) first = std::min(first, h.layer);
    return first;
  }

  // Applies every policy to the patterns of one layer: pattern [B, heads, L, L], key_mask [B, L].
  void apply(int layer, T* pattern, const int* key_mask, Index batch, int heads, Index L, bool causal) const {
    for (const auto& e : entries_)
      for (const auto& ref : e.heads) {
        if (ref.layer != layer) continue;
        if (ref.head != all_heads && (ref.head < 0 || ref.head >= heads))
          fail("masking policy: head ", ref.head, " of layer ", layer, " out of range (", heads, " heads)");
        const int h0 = ref.head == all_heads ? 0 : ref.head;
        const int h1 = ref.head == all_heads ? heads : ref.head + 1;
        for (Index b = 0; b < batch; ++b)
          for (int h = h0; h < h1; ++h)
            e.policy(PatternSite<T>{pattern + (b * heads + h) * L * L, L, key_mask + b * L, causal, layer, h, b});
      }
  }

  // Checks every referenced layer/head exists in a model of this size.
  void validate(int num_layers, int num_heads) const {
    for (const auto& e : entries_)
      for (const auto& h : e.heads) {
        if (h.layer < 0 || h.layer >= num_layers)
          fail("masking policy: layer ", h.layer, " out of range (model has ", num_layers, " layers)");
        if (h.head != all_heads && (h.head < 0 || h.head >= num_heads))
          fail("masking policy: head ", h.head, " out of range (model has ", num_heads, " heads)");
      }
  }

 private:
  struct Entry {
    MaskingPolicy<T> policy;
    std::vector<HeadRef> heads;
  };
  std::vector<Entry> entries_;
};

}  // namespace darkbert
