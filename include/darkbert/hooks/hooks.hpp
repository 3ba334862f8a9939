#pragma once
/// @file
/// Hooks: functions called at named points of the forward pass (see hook_point.hpp) that observe the
/// tensor there or modify it in place. Registration is scoped: the returned handle removes the hook when
/// it goes out of scope. With nothing registered the forward pass pays one pointer test per point.
///
/// @code
/// darkbert::HookRegistry<float> hooks;
/// {
///   auto handle = hooks.add({.pattern = "blocks.*.attn.hook_pattern", .heads = {3}},
///                           [&](darkbert::HookContext<float>& ctx) { /* ctx.tensor is [B, L, L] of head 3 */ });
///   model.forward(batch, {.hooks = &hooks});
/// }  // hook removed here
/// @endcode
///
/// In a training pass hooks are part of the graph (TransformerLens's "bwd" hooks and autograd, by hand):
///  - add_backward registers a gradient hook: during backward it sees ∂loss/∂tensor at its point
///    (ctx.gradient is true, same shape and head filter as the forward tensor) and may modify it.
///  - A forward hook that changes its tensor in a training pass must say how the gradient passes it,
///    with HookFilter::gradient: stop (the value was replaced: ablation, patching with a constant) or
///    pass_through (identity; add a backward hook for any other vector-Jacobian product, e.g. scaling
///    the gradient by the factor the forward hook scaled by). A hook left at the default `observe` that
///    changes its tensor in a training pass is an error naming the hook, never a silently wrong gradient.
///
/// @code
/// auto ablate = hooks.add({.pattern = "blocks.1.attn.hook_z", .heads = {2}, .gradient = HookGradient::stop},
///                         [](auto& ctx) { zero(ctx.tensor); });
/// auto saliency = hooks.add_backward({.pattern = "hook_embed"}, [&](auto& ctx) { save(ctx.tensor); });
/// @endcode

#include <algorithm>   // std::find, std::remove_if
#include <array>       // std::array
#include <cstdint>     // std::uint64_t
#include <functional>  // std::function
#include <optional>    // std::optional
#include <set>         // std::set
#include <string>      // std::string
#include <utility>     // std::exchange
#include <memory>      // std::shared_ptr
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "hook_point.hpp"

namespace darkbert {

/// A strided view of up to 4 dimensions over the forward pass's own buffers (no copy).
template <class T>
struct TensorView {
  T* data = nullptr;  ///<  first element
  int rank = 0;  ///<  number of dimensions used (1 to 4)
  std::array<Index, 4> shape{};  ///<  extent of each used dimension
  std::array<Index, 4> strides{};  ///< in elements

  /// Number of elements (product of the shape).
  Index size() const {
    Index n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
  /// Element (i0, i1, i2, i3); unused trailing indices stay 0.
  T& operator()(Index i0, Index i1 = 0, Index i2 = 0, Index i3 = 0) const {
    return data[i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3]];
  }
  /// Contiguous row-major view of the given shape.
  static TensorView contiguous(T* data, std::initializer_list<Index> dims) {
    TensorView v;
    v.data = data;
    v.rank = static_cast<int>(dims.size());
    int i = 0;
    for (Index d : dims) v.shape[i++] = d;
    Index stride = 1;
    for (int k = v.rank - 1; k >= 0; --k) {
      v.strides[k] = stride;
      stride *= v.shape[k];
    }
    return v;
  }
  /// Fixes axis `axis` at `index`, dropping it.
  TensorView slice(int axis, Index index) const {
    TensorView v;
    v.data = data + index * strides[axis];
    v.rank = rank - 1;
    for (int i = 0, j = 0; i < rank; ++i)
      if (i != axis) {
        v.shape[j] = shape[i];
        v.strides[j++] = strides[i];
      }
    return v;
  }
};

/// What a hook sees: where it is, the tensor, and the batch it belongs to.
template <class T>
struct HookContext {
  HookPoint point;            ///< where the hook fires
  int layer = -1;             ///< -1 for global points
  int head = -1;              ///< set when the hook was registered for a head subset
  TensorView<T> tensor;       ///< writable: modify in place to intervene (a backward hook: the gradient)
  const int* attention_mask;  ///< [B, L], 1 = real token
  /// @{
  /// B and L of the batch
  Index batch = 0, length = 0;
  /// @}
  bool causal = false;        ///< whether the model masks future keys (GPT-2)
  bool gradient = false;      ///< a backward hook: tensor holds ∂loss/∂(the point's tensor)

  /// The full hook name, e.g. "blocks.3.attn.hook_pattern".
  std::string name() const { return hook_name(point, layer); }
};

/// How the gradient of a training pass passes a forward hook (see the file comment).
enum class HookGradient : std::uint8_t {
  observe,       ///< the hook only reads; changing the tensor in a training pass is an error
  pass_through,  ///< identity: the gradient passes unchanged (compose with a backward hook for other rules)
  stop,          ///< the hook replaced the values: no gradient flows back through its scope
};

/// Which points a hook fires at. Empty fields match everything.
struct HookFilter {
  std::string pattern;          ///< glob over full names, '*' = any run of characters ("blocks.*.attn.hook_pattern")
  std::set<HookPoint> points;   ///< alternatively: a set of points
  std::set<int> layers;         ///< restrict to these layers (per-layer points only)
  std::set<int> heads;          ///< per-head points (q, k, v, attn_scores, pattern, z): one call per listed head
  HookGradient gradient = HookGradient::observe;  ///< forward hooks in a training pass

  /// Whether the filter selects point `p` of `layer` (heads are applied separately).
  bool matches(HookPoint p, int layer) const {
    if (!points.empty() && !points.count(p)) return false;
    if (!layers.empty() && is_per_layer(p) && !layers.count(layer)) return false;
    return pattern.empty() || glob_match(pattern, hook_name(p, layer));
  }

  /// `glob_match("blocks.*.hook_z", "blocks.3.attn.hook_z")`: '*' matches any run of characters.
  static bool glob_match(std::string_view pattern, std::string_view text) {
    // Iterative '*' matcher with backtracking to the last star.
    std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
    while (t < text.size()) {
      if (p < pattern.size() && pattern[p] == '*') {
        star = p++;
        mark = t;
      } else if (p < pattern.size() && pattern[p] == text[t]) {
        ++p;
        ++t;
      } else if (star != std::string_view::npos) {
        p = star + 1;
        t = ++mark;
      } else {
        return false;
      }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
  }
};

/// Whether the point's tensor has a head dimension (q, k, v, attn_scores, pattern, z), so a head filter applies.
inline bool is_per_head(HookPoint p) {
  return p == HookPoint::q || p == HookPoint::k || p == HookPoint::v || p == HookPoint::attn_scores ||
         p == HookPoint::pattern || p == HookPoint::z;
}

/// Removes its hook when destroyed. Must not outlive the registry it came from.
class HookHandle {
 public:
  HookHandle() = default;
  /// A handle that calls `remove` when reset or destroyed (HookRegistry::add makes them).
  HookHandle(std::function<void()> remove) : remove_(std::move(remove)) {}
  /// Takes over other's hook; other no longer removes it.
  HookHandle(HookHandle&& other) noexcept : remove_(std::exchange(other.remove_, nullptr)) {}
  /// Removes this handle's hook, then takes over other's.
  HookHandle& operator=(HookHandle&& other) noexcept {
    if (this != &other) {
      reset();
      remove_ = std::exchange(other.remove_, nullptr);
    }
    return *this;
  }
  HookHandle(const HookHandle&) = delete;
  HookHandle& operator=(const HookHandle&) = delete;
  ~HookHandle() { reset(); }

  /// Removes the hook now (idempotent).
  void reset() {
    if (remove_) std::exchange(remove_, nullptr)();
  }

 private:
  std::function<void()> remove_;
};

/// The hooks of a forward pass: pass `&registry` in ForwardOptions::hooks.
/// @code
/// darkbert::HookRegistry<float> hooks;
/// auto handle = hooks.add({.pattern = "blocks.*.attn.hook_pattern", .heads = {7}},
///                         [](darkbert::HookContext<float>& ctx) { /* ctx.tensor: [B, L, L] of head 7 */ });
/// model.forward(batch, {.hooks = &hooks});   // the hook lives as long as `handle`
/// @endcode
template <class T>
class HookRegistry {
 public:
  /// A hook: observes ctx.tensor or modifies it in place.
  using Function = std::function<void(HookContext<T>&)>;

  HookRegistry() = default;
  HookRegistry(const HookRegistry&) = delete;  ///< handles point at this object
  HookRegistry& operator=(const HookRegistry&) = delete;

  /// A forward hook.
  [[nodiscard]] HookHandle add(HookFilter filter, Function fn) { return insert(std::move(filter), std::move(fn), false); }
  /// A backward (gradient) hook: called during a training pass's backward with ∂loss/∂tensor at its
  /// points, last registered first; it may modify the gradient. filter.gradient does not apply.
  [[nodiscard]] HookHandle add_backward(HookFilter filter, Function fn) {
    return insert(std::move(filter), std::move(fn), true);
  }

  /// Whether no hook is registered.
  bool empty() const { return size() == 0; }
  /// Number of registered hooks.
  std::size_t size() const {
    return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return !e->removed; }));
  }

  /// Whether a forward hook fires at (p, layer).
  bool active(HookPoint p, int layer) const { return any_at(p, layer, fires_forward); }
  /// Whether the backward at (p, layer) has work: a backward hook, or a forward hook that stops the gradient.
  bool active_backward(HookPoint p, int layer) const { return any_at(p, layer, fires_backward); }
  /// Whether a forward hook at (p, layer) lets the gradient pass (pass_through): the backward then needs
  /// the values from before the hook where its own formula reads them (the softmax output of a pattern).
  bool passes_gradient(HookPoint p, int layer) const {
    return any_at(p, layer, [](const Entry& e) { return fires_forward(e) && e.filter.gradient == HookGradient::pass_through; });
  }

  /// Calls every matching forward hook, in registration order. `head_axis` is the axis of the tensor that
  /// indexes heads (for per-head points), used for head-filtered hooks. `training`: a hook left at
  /// HookGradient::observe must not change the tensor (checked on a copy; the check costs only then).
  /// A hook may add or remove hooks (its own handle included) while it runs: an entry is held by
  /// shared_ptr while it is called, removals during a run only mark the entry and are swept afterwards,
  /// and hooks added during a run first fire on the next run.
  void run(HookContext<T> ctx, int head_axis = -1, bool training = false) const {
    for_each_call(ctx, head_axis, false, [&](const Entry& e, HookContext<T>& c) {
      if (!training || e.filter.gradient != HookGradient::observe) return e.fn(c);
      const std::vector<T> before = copy_of(c.tensor);
      e.fn(c);
      if (copy_of(c.tensor) != before)
        fail("hook on ", c.name(), (c.head >= 0 ? " (head " + std::to_string(c.head) + ")" : std::string()),
             " changed its tensor in a training pass but declares no gradient rule: set HookFilter::gradient to "
             "HookGradient::stop or HookGradient::pass_through (with a backward hook for any other rule)");
    });
  }

  /// The backward at one point: ctx.tensor is the gradient there. Entries run last registered first (the
  /// reverse of the forward): a backward hook is called; a forward hook with HookGradient::stop zeroes the
  /// gradient over its scope (its heads, or the whole tensor).
  void run_backward(HookContext<T> ctx, int head_axis = -1) const {
    ctx.gradient = true;
    for_each_call(ctx, head_axis, true, [](const Entry& e, HookContext<T>& c) {
      if (e.backward) return e.fn(c);
      for_each_element(c.tensor, [](T& g) { g = T(0); });  // a forward hook here stops the gradient
    });
  }

  /// Calls f(element) for every element of a view, in row-major order.
  template <class F>
  static void for_each_element(const TensorView<T>& v, F&& f) {
    std::array<Index, 4> shape{1, 1, 1, 1}, strides{0, 0, 0, 0};
    for (int i = 0; i < v.rank; ++i) shape[4 - v.rank + i] = v.shape[i], strides[4 - v.rank + i] = v.strides[i];
    for (Index a = 0; a < shape[0]; ++a)
      for (Index b = 0; b < shape[1]; ++b)
        for (Index c = 0; c < shape[2]; ++c)
          for (Index d = 0; d < shape[3]; ++d) f(v.data[a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3]]);
  }

 private:
  struct Entry {
    std::uint64_t id;
    HookFilter filter;
    Function fn;
    bool backward = false;  // a gradient hook (add_backward)
    bool removed = false;
  };

  // Which pass an entry takes part in: forward hooks run forward; backward hooks, and forward hooks that
  // stop the gradient, act in the backward.
  static bool fires_forward(const Entry& e) { return !e.backward; }
  static bool fires_backward(const Entry& e) { return e.backward || e.filter.gradient == HookGradient::stop; }

  // Whether a live entry at (p, layer) satisfies `pred`.
  template <class Pred>
  bool any_at(HookPoint p, int layer, Pred pred) const {
    for (const auto& e : entries_)
      if (!e->removed && pred(*e) && e->filter.matches(p, layer)) return true;
    return false;
  }

  HookHandle insert(HookFilter filter, Function fn, bool backward) {
    if (!fn) fail("HookRegistry::add: empty hook function");
    // A pattern without '*' must be an exact hook name; catches typos that would silently never fire.
    if (!filter.pattern.empty() && filter.pattern.find('*') == std::string::npos && !parse_hook_name(filter.pattern))
      fail("HookRegistry::add: \"", filter.pattern, "\" is not a hook name (e.g. blocks.3.attn.hook_pattern) and has no '*'");
    const std::uint64_t id = next_id_++;
    entries_.push_back(std::make_shared<Entry>(Entry{id, std::move(filter), std::move(fn), backward}));
    return HookHandle([this, id] { remove(id); });
  }

  static std::vector<T> copy_of(const TensorView<T>& v) {
    std::vector<T> out;
    out.reserve(static_cast<std::size_t>(v.size()));
    for_each_element(v, [&](T& x) { out.push_back(x); });
    return out;
  }

  /// Calls `call(entry, context)` for each matching entry of the pass (forward: forward hooks in
  /// registration order; backward: backward hooks and forward hooks with a gradient rule, in reverse),
  /// once per listed head for head-filtered entries.
  template <class Call>
  void for_each_call(const HookContext<T>& ctx, int head_axis, bool backward_pass, Call&& call) const {
    ++running_;
    struct Sweep {
      const HookRegistry* r;
      ~Sweep() {
        if (--r->running_ == 0) r->sweep();
      }
    } sweep_after{this};
    const std::size_t n = entries_.size();
    for (std::size_t k = 0; k < n; ++k) {
      const std::shared_ptr<Entry> e = entries_[backward_pass ? n - 1 - k : k];
      if (e->removed || !e->filter.matches(ctx.point, ctx.layer)) continue;
      if (!(backward_pass ? fires_backward(*e) : fires_forward(*e))) continue;
      if (e->filter.heads.empty() || head_axis < 0) {
        HookContext<T> c = ctx;
        call(*e, c);
        continue;
      }
      for (int h : e->filter.heads) {
        if (e->removed) break;
        if (h < 0 || h >= ctx.tensor.shape[head_axis])
          fail("hook on ", ctx.name(), ": head ", h, " out of range (", ctx.tensor.shape[head_axis], " heads)");
        HookContext<T> c = ctx;
        c.head = h;
        c.tensor = ctx.tensor.slice(head_axis, h);
        call(*e, c);
      }
    }
  }
  void remove(std::uint64_t id) {
    for (auto& e : entries_)
      if (e->id == id) e->removed = true;
    if (running_ == 0) sweep();
  }
  void sweep() const {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [](const auto& e) { return e->removed; }),
                   entries_.end());
  }
  mutable std::vector<std::shared_ptr<Entry>> entries_;  // mutable: run() sweeps removals made during it
  mutable int running_ = 0;                                // nesting depth of run()
  std::uint64_t next_id_ = 0;
};

}  // namespace darkbert
