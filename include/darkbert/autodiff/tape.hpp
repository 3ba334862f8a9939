#pragma once
/// @file
/// Reverse-mode automatic differentiation over whole tensors, in the spirit of micrograd: a Var holds a
/// value and a gradient of the same shape; every operation that makes a Var records, on a Tape, a closure
/// that pushes the output's gradient to its inputs; backward() runs those closures newest first.
///
/// @code
/// darkbert::autodiff::Tape<double> tape;
/// auto x = tape.variable({2, 3});                  // value and gradient from the tape's arena
/// auto y = darkbert::autodiff::tanh(tape, x);      // autodiff/functions.hpp
/// auto loss = darkbert::autodiff::sum(tape, y);
/// tape.backward(loss);                             // x.grad() = 1 - tanh(x)^2
/// @endcode
///
/// Operations are layer-sized (a linear layer, an attention, a whole transformer block), their backward
/// kernels are written by hand beside their forwards (kernels/), so the tape holds a few dozen nodes
/// per step, not millions.
///
/// Memory: the tape's arena replays. A training step asks for the same sequence of buffer sizes every
/// time, so after reset() each request reuses the buffer it got in the previous step: after the first
/// step nothing is allocated (nodes are stored inline too, see detail::InlineFunction).

#include <array>        // std::array
#include <cstddef>      // std::size_t, std::max_align_t
#include <cstring>      // std::memset
#include <memory>       // std::unique_ptr
#include <new>          // placement new
#include <type_traits>  // std::decay_t
#include <utility>      // std::move
#include <vector>       // std::vector

#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "../core/tensor.hpp"  // AlignedAllocator
#include "../core/xwt_gemm.hpp"  // XwtScratch

namespace darkbert::autodiff {

/// The tape a Var lives on (defined below).
template <class T>
class Tape;

/// A shape of rank 0..4 (rank 0 = scalar).
struct Shape {
  int rank = 0;  ///<  number of dimensions used
  std::array<Index, 4> dims{};  ///<  extent of each used dimension

  Shape() = default;
  /// `Shape{B, L, H}`.
  Shape(std::initializer_list<Index> d) : rank(static_cast<int>(d.size())) {
    if (d.size() > 4) fail("autodiff::Shape: rank ", d.size(), " > 4");
    int i = 0;
    for (Index v : d) dims[i++] = v;
  }
  /// Number of elements.
  Index size() const {
    Index n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  /// Extent of dimension i.
  Index operator[](int i) const { return dims[i]; }
  /// [rows, cols] of the row-major matrix this shape flattens to (last axis = columns).
  Index cols() const { return rank == 0 ? 1 : dims[rank - 1]; }
  /// All but the last dimension, flattened.
  Index rows() const { return cols() == 0 ? 0 : size() / cols(); }
  /// Same rank and extents.
  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; ++i)
      if (a.dims[i] != b.dims[i]) return false;
    return true;
  }
};

/// A handle to a tensor recorded on a tape. Copying a Var copies the handle, not the data.
template <class T>
class Var {
 public:
  Var() = default;
  /// Entry `id` of `tape` (the tape makes Vars).
  Var(Tape<T>* tape, int id) : tape_(tape), id_(id) {}

  /// Whether the Var refers to a tape entry.
  bool valid() const { return tape_ != nullptr; }
  /// The values.
  T* value() const { return entry().value; }
  /// The gradient (null when nothing needs it).
  T* grad() const { return entry().grad; }
  /// Whether a backward pass should compute this tensor's gradient: false on a tape that does not record
  /// and for Tape::constant inputs (functions may then skip that work; the buffer is still there).
  bool needs_grad() const { return entry().grad != nullptr && !entry().constant; }
  /// The shape.
  const Shape& shape() const { return entry().shape; }
  /// Number of elements.
  Index size() const { return shape().size(); }
  /// Rows when viewed as a matrix.
  Index rows() const { return shape().rows(); }
  /// Columns when viewed as a matrix (the last dimension).
  Index cols() const { return shape().cols(); }
  /// The tape it lives on.
  Tape<T>& tape() const { return *tape_; }
  /// The value as a row-major [rows, cols] matrix.
  MatrixMap<T> matrix() const { return MatrixMap<T>(value(), rows(), cols()); }
  /// The gradient as a [rows, cols] matrix.
  MatrixMap<T> grad_matrix() const { return MatrixMap<T>(grad(), rows(), cols()); }

 private:
  const auto& entry() const { return tape_->entry(id_); }
  Tape<T>* tape_ = nullptr;
  int id_ = -1;
};

namespace detail {

/// A move-only void() callable stored inline (no heap allocation); a closure that does not fit is a
/// compile error, so a node can never allocate behind the tape's back.
class InlineFunction {
 public:
  static constexpr std::size_t capacity = 384;

  template <class F>
  explicit InlineFunction(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= capacity, "autodiff node closure too large: capture pointers, not objects");
    static_assert(alignof(Fn) <= alignof(std::max_align_t));
    new (storage_) Fn(std::forward<F>(f));
    call_ = [](void* p) { (*static_cast<Fn*>(p))(); };
    move_ = [](void* from, void* to) {
      new (to) Fn(std::move(*static_cast<Fn*>(from)));
      static_cast<Fn*>(from)->~Fn();
    };
    destroy_ = [](void* p) { static_cast<Fn*>(p)->~Fn(); };
  }
  InlineFunction(InlineFunction&& o) noexcept : call_(o.call_), move_(o.move_), destroy_(o.destroy_) {
    move_(o.storage_, storage_);
    o.destroy_ = nullptr;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  InlineFunction& operator=(InlineFunction&&) = delete;
  ~InlineFunction() {
    if (destroy_) destroy_(storage_);
  }
  void operator()() { call_(storage_); }

 private:
  alignas(std::max_align_t) unsigned char storage_[capacity];
  void (*call_)(void*) = nullptr;
  void (*move_)(void*, void*) = nullptr;
  void (*destroy_)(void*) = nullptr;
};

}  // namespace detail

/// micrograd's tape on whole tensors: records each differentiable function with its backward closure.
/// @code
/// darkbert::autodiff::Tape<float> tape;
/// auto loss = darkbert::autodiff::mse(tape, prediction, target);
/// tape.backward(loss);   // gradients land in the parameters' gradient buffers
/// tape.reset();          // next step reuses the arena
/// @endcode
template <class T>
class Tape {
 public:
  /// Where a Var's values and gradient live.
  struct Entry {
    T* value = nullptr;  ///<  the values
    T* grad = nullptr;  ///<  the gradient, or null
    Shape shape;  ///<  the shape
    bool constant = false;  ///<  an input nothing differentiates with respect to
  };

  Tape() = default;
  Tape(const Tape&) = delete;  ///< Vars point at this object
  Tape& operator=(const Tape&) = delete;

  /// A new tensor with value and gradient from the arena; the gradient starts at zero, the value is
  /// uninitialised (the operation that creates it writes it).
  Var<T> variable(const Shape& shape) {
    T* value = take(shape.size());
    return add({value, zeroed_grad(shape.size()), shape});
  }
  /// A tensor whose value lives elsewhere (a parameter, an input, a model output). Its gradient is
  /// `grad` when given (a parameter's gradient buffer, accumulated into), else a zeroed arena buffer.
  Var<T> external(T* value, const Shape& shape, T* grad = nullptr) {
    if (!recording_) grad = nullptr;
    else if (!grad) grad = zeroed_grad(shape.size());
    return add({value, grad, shape});
  }
  /// An input no gradient is wanted for (the images a classifier trains on). It still gets a zeroed
  /// gradient buffer, so any function may write into it, but functions that can skip the work (conv2d's
  /// input gradient) do: needs_grad() is false.
  Var<T> constant(const T* value, const Shape& shape) {
    return add({const_cast<T*>(value), zeroed_grad(shape.size()), shape, true});
  }
  /// The same value and gradient under another shape of the same size (a reshape, nothing recorded).
  Var<T> alias(const Var<T>& x, const Shape& shape) {
    if (shape.size() != x.size()) fail("Tape::alias: ", x.size(), " elements cannot take a shape of ", shape.size());
    return add({x.value(), x.grad(), shape, !x.needs_grad()});
  }
  /// Scratch memory that lives until reset() (saved activations of a node).
  T* scratch(Index n) { return take(n); }

  /// Records the backward closure of an operation (runs in reverse order of recording).
  template <class F>
  void record(F&& backward) {
    if (recording_) nodes_.emplace_back(std::forward<F>(backward));
  }

  /// A tape that does not record runs the functions as plain inference: Vars get no gradient and no
  /// node is kept. Recording is on by default.
  bool recording() const { return recording_; }
  /// Turns recording on or off.
  void set_recording(bool on) { recording_ = on; }

  /// Packed-activation memory for the linear layers recorded on this tape.
  XwtScratch& gemm_scratch() { return gemm_; }

  /// d loss / d loss = 1, then every recorded node newest first. `loss` must be a scalar (size 1).
  void backward(const Var<T>& loss) {
    if (!recording_) fail("Tape::backward: the tape did not record (set_recording(false))");
    if (loss.size() != 1) fail("Tape::backward: the loss must have one element, it has ", loss.size());
    loss.grad()[0] += T(1);
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) (*it)();
  }

  /// Forgets every node and Var (their handles become invalid) and rewinds the arena, keeping its memory.
  void reset() {
    nodes_.clear();
    entries_.clear();
    next_buffer_ = 0;
  }

  /// Recorded nodes (functions with a backward).
  std::size_t nodes() const { return nodes_.size(); }
  /// Bytes the arena holds (for memory reports).
  std::size_t arena_bytes() const {
    std::size_t n = 0;
    for (const auto& b : buffers_) n += b.size() * sizeof(T);
    return n;
  }
  /// Entry `id`.
  const Entry& entry(int id) const { return entries_[static_cast<std::size_t>(id)]; }

 private:
  Var<T> add(const Entry& e) {
    entries_.push_back(e);
    return Var<T>(this, static_cast<int>(entries_.size() - 1));
  }
  T* zeroed_grad(Index n) {
    if (!recording_) return nullptr;
    T* grad = take(n);
    std::memset(grad, 0, sizeof(T) * static_cast<std::size_t>(n));
    return grad;
  }
  T* take(Index n) {
    const auto need = static_cast<std::size_t>(std::max<Index>(n, 1));
    if (next_buffer_ == buffers_.size()) buffers_.emplace_back();
    auto& b = buffers_[next_buffer_++];
    if (b.size() < need) b.resize(need);  // only while shapes still grow
    return b.data();
  }

  std::vector<detail::InlineFunction> nodes_;
  std::vector<Entry> entries_;
  std::vector<std::vector<T, AlignedAllocator<T>>> buffers_;
  std::size_t next_buffer_ = 0;
  bool recording_ = true;
  XwtScratch gemm_;
};

}  // namespace darkbert::autodiff
