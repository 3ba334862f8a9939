#pragma once
/// @file
/// Differentiable functions on tape Vars. Each computes its output with a kernel from kernels/ and
/// records the closure that runs the kernel's backward; shapes in the comment above each one. Tensors are
/// row-major; a Var of rank r is treated as a [rows, cols] matrix over its last axis where that matters.
///
/// @code
/// Tape<float> tape;
/// auto x = tape.external(input.data(), {B, H});
/// auto w = parameter(tape, linear.weight, &grads.weight), b = parameter(tape, linear.bias, &grads.bias);
/// auto logits = linear(tape, x, w, b);
/// auto loss = cross_entropy(tape, logits, labels.data());
/// tape.backward(loss);
/// @endcode
///
/// A tape that is not recording (Tape::set_recording(false)) runs the same functions as plain inference:
/// no gradients are allocated and nothing is recorded.

#include <algorithm>  // std::fill, std::max, std::min
#include <utility>    // std::pair
#include <limits>     // std::numeric_limits

#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "../kernels/activation.hpp"
#include "../kernels/attention.hpp"
#include "../kernels/batch_norm.hpp"
#include "../kernels/conv2d.hpp"
#include "../kernels/dropout.hpp"
#include "../kernels/layer_norm.hpp"
#include "../kernels/linear.hpp"
#include "../kernels/loss.hpp"
#include "tape.hpp"

namespace darkbert::autodiff {

/// A parameter (matrix or vector) as a Var; its gradient accumulates into `grad` (null: frozen).
template <class T>
Var<T> parameter(Tape<T>& tape, Matrix<T>& value, Matrix<T>* grad) {
  return tape.external(value.data(), {value.rows(), value.cols()}, grad ? grad->data() : nullptr);
}
/// A vector parameter on the tape (its gradient, if given, accumulates into `grad`).
template <class T>
Var<T> parameter(Tape<T>& tape, Vector<T>& value, Vector<T>* grad) {
  return tape.external(value.data(), {value.size()}, grad ? grad->data() : nullptr);
}

/// y = f(x Wᵀ + b):  x [rows, in], w [out, in], b [out] (invalid Var: no bias) -> y [rows, out].
/// `into`, when valid, is the output Var to write (e.g. a model output tensor).
template <class T>
Var<T> linear(Tape<T>& tape, const Var<T>& x, const Var<T>& w, const Var<T>& b, Activation f = Activation::none,
              Var<T> into = {}) {
  const Index rows = x.rows(), in = x.cols(), out = w.rows();
  require(w.cols() == in, "autodiff::linear: x has ", in, " columns but the weight is [", out, ", ", w.cols(), "]");
  require(!b.valid() || b.size() == out, "autodiff::linear: bias of ", b.valid() ? b.size() : 0, " for ", out, " outputs");
  Var<T> y = into.valid() ? into : tape.variable({rows, out});
  const bool need_pre = tape.recording() && (f == Activation::gelu_erf || f == Activation::gelu_tanh || f == Activation::relu);
  T* pre = need_pre ? tape.scratch(rows * out) : nullptr;
  kernels::linear_forward_raw<T>(x.value(), rows, in, w.value(), b.valid() ? b.value() : nullptr, out, y.value(), f,
                             tape.gemm_scratch(), pre);
  tape.record([=] {
    kernels::activation_backward<T>(pre, y.value(), y.grad(), rows * out, f);
    kernels::linear_backward_raw<T>(x.value(), y.grad(), rows, in, out, w.value(), w.grad(), b.valid() ? b.grad() : nullptr,
                                x.grad(), /*accumulate_dx=*/true);
  });
  return y;
}

/// y = f(x), element-wise, any shape.
template <class T>
Var<T> activation(Tape<T>& tape, const Var<T>& x, Activation f) {
  Var<T> y = tape.variable(x.shape());
  const Index n = x.size();
  std::copy(x.value(), x.value() + n, y.value());
  kernels::activate(y.value(), n, f);
  tape.record([=] {
    kernels::activation_backward<T>(x.value(), y.value(), y.grad(), n, f);  // y's gradient is consumed only here
    for (Index i = 0; i < n; ++i) x.grad()[i] += y.grad()[i];
  });
  return y;
}

/// y = LayerNorm(x) over the last axis:  x [rows, cols], w, b [cols] -> y [rows, cols].
template <class T>
Var<T> layer_norm(Tape<T>& tape, const Var<T>& x, const Var<T>& w, const Var<T>& b, double eps) {
  const Index rows = x.rows(), cols = x.cols();
  require(w.size() == cols && b.size() == cols, "autodiff::layer_norm: ", cols, " features but parameters of ",
          w.size(), " and ", b.size());
  Var<T> y = tape.variable(x.shape());
  kernels::NormStats<T> stats;
  if (tape.recording()) stats = {tape.scratch(rows), tape.scratch(rows)};
  kernels::add_layer_norm_forward_raw<T>(x.value(), nullptr, nullptr, y.value(), rows, cols, w.value(), b.value(), eps, stats);
  tape.record([=] {
    kernels::layer_norm_backward_raw<T>(x.value(), stats, y.grad(), rows, cols, w.value(), w.grad(), b.grad(), x.grad(),
                                    /*accumulate=*/true);
  });
  return y;
}

/// y = a + b (same shape).
template <class T>
Var<T> add(Tape<T>& tape, const Var<T>& a, const Var<T>& b) {
  require(a.shape() == b.shape(), "autodiff::add: shapes differ (", a.size(), " vs ", b.size(), " elements)");
  Var<T> y = tape.variable(a.shape());
  const Index n = a.size();
  for (Index i = 0; i < n; ++i) y.value()[i] = a.value()[i] + b.value()[i];
  tape.record([=] {
    for (Index i = 0; i < n; ++i) {
      a.grad()[i] += y.grad()[i];
      b.grad()[i] += y.grad()[i];
    }
  });
  return y;
}

/// y = factor · x (the weight of one slice's loss in its batch's mean).
template <class T>
Var<T> scale(Tape<T>& tape, const Var<T>& x, T factor) {
  Var<T> y = tape.variable(x.shape());
  const Index n = x.size();
  for (Index i = 0; i < n; ++i) y.value()[i] = factor * x.value()[i];
  tape.record([=] {
    for (Index i = 0; i < n; ++i) x.grad()[i] += factor * y.grad()[i];
  });
  return y;
}

/// y = Σ x (a scalar).
template <class T>
Var<T> sum(Tape<T>& tape, const Var<T>& x) {
  Var<T> y = tape.variable({});
  const Index n = x.size();
  T total = 0;
  for (Index i = 0; i < n; ++i) total += x.value()[i];
  y.value()[0] = total;
  tape.record([=] {
    for (Index i = 0; i < n; ++i) x.grad()[i] += y.grad()[0];
  });
  return y;
}

/// Inverted dropout with a counter-based mask (kernels/dropout.hpp); identity when mask.p == 0.
template <class T>
Var<T> dropout(Tape<T>& tape, const Var<T>& x, const kernels::DropoutMask& mask) {
  if (!mask.active()) return x;
  Var<T> y = tape.variable(x.shape());
  const Index n = x.size();
  kernels::dropout_apply(x.value(), y.value(), n, 0, mask);
  tape.record([=] {
    kernels::dropout_apply(y.grad(), n, 0, mask);
    for (Index i = 0; i < n; ++i) x.grad()[i] += y.grad()[i];
  });
  return y;
}

/// y[r] = x[rows[r]]:  x [R0, C] -> y [count, C]. `rows` must live until backward.
template <class T>
Var<T> gather_rows(Tape<T>& tape, const Var<T>& x, const Index* rows, Index count) {
  const Index C = x.cols(), R0 = x.rows();
  for (Index r = 0; r < count; ++r)
    require(rows[r] >= 0 && rows[r] < R0, "autodiff::gather_rows: row ", rows[r], " outside [0, ", R0, ")");
  Var<T> y = tape.variable({count, C});
  for (Index r = 0; r < count; ++r) std::copy(x.value() + rows[r] * C, x.value() + (rows[r] + 1) * C, y.value() + r * C);
  tape.record([=] {
    for (Index r = 0; r < count; ++r)
      for (Index c = 0; c < C; ++c) x.grad()[rows[r] * C + c] += y.grad()[r * C + c];
  });
  return y;
}

/// y[i] = table[ids[i]]:  table [V, H], ids [n] -> y [n, H]. Row `padding_idx` gets no gradient (as
/// Hugging Face's nn.Embedding(padding_idx=...)); -1 = none. `ids` must live until backward.
template <class T>
Var<T> embedding(Tape<T>& tape, const Var<T>& table, const int* ids, Index n, int padding_idx = -1) {
  const Index V = table.rows(), H = table.cols();
  for (Index i = 0; i < n; ++i)
    require(ids[i] >= 0 && ids[i] < V, "autodiff::embedding: id ", ids[i], " at ", i, " outside [0, ", V, ")");
  Var<T> y = tape.variable({n, H});
  for (Index i = 0; i < n; ++i) std::copy(table.value() + ids[i] * H, table.value() + (ids[i] + 1) * H, y.value() + i * H);
  tape.record([=] {
    for (Index i = 0; i < n; ++i) {
      if (ids[i] == padding_idx) continue;
      for (Index c = 0; c < H; ++c) table.grad()[ids[i] * H + c] += y.grad()[i * H + c];
    }
  });
  return y;
}

/// Multi-head scaled dot-product attention on a fused projection (the layout of the transformer block):
/// @code
/// qkv [B·L, 3H] (Q | K | V, head h in columns h·d..), key_mask [B, L] (1 = real) -> ctx [B·L, H].
/// @endcode
/// Padding keys are masked, and future keys too when causal; `mask` drops attention probabilities.
/// `key_mask` must live until backward.
template <class T>
Var<T> attention(Tape<T>& tape, const Var<T>& qkv, Index batch, Index length, Index heads, const int* key_mask,
                 bool causal, const kernels::DropoutMask& drop = {}) {
  const Index H = qkv.cols() / 3;
  require(qkv.cols() == 3 * H && H % heads == 0 && qkv.rows() == batch * length,
          "autodiff::attention: qkv is [", qkv.rows(), ", ", qkv.cols(), "], expected [B·L, 3H] with H divisible by ", heads);
  const kernels::AttentionShape s{batch, length, heads, H / heads, causal};
  const T scale = T(1) / std::sqrt(static_cast<T>(s.head_dim));
  Var<T> ctx = tape.variable({batch * length, H});
  T* pattern = tape.scratch(batch * heads * length * length);
  const Index L2 = length * length;
  T* dropped = drop.active() ? tape.scratch(L2) : nullptr;
  kernels::AttentionScratch scratch;  // (this general op is not on the transformer's hot path)
  scratch.prepare(s, 1);
  for (Index b = 0; b < batch; ++b)
    for (Index h = 0; h < heads; ++h) {
      kernels::attention_scores(qkv.value(), key_mask, pattern, s, b, h, scale, scratch);
      kernels::attention_softmax(pattern, s, b, h);
      const T* P = pattern + s.map_offset(b, h);
      if (dropped) {
        kernels::dropout_apply(P, dropped, L2, s.map_offset(b, h), drop);
        P = dropped;
      }
      kernels::attention_context_from(qkv.value(), P, ctx.value(), s, b, h, scratch);
    }
  tape.record([=, &tape] {
    T* dqkv = tape.scratch(qkv.size());
    T* work = tape.scratch(2 * L2);
    for (Index b = 0; b < batch; ++b)
      for (Index h = 0; h < heads; ++h)
        kernels::attention_backward(qkv.value(), pattern + s.map_offset(b, h), ctx.grad(), dqkv, s, b, h, scale, true, drop,
                                s.map_offset(b, h), work);
    for (Index i = 0; i < qkv.size(); ++i) qkv.grad()[i] += dqkv[i];
  });
  return ctx;
}

/// Mean cross-entropy over the rows of logits [rows, classes] whose label is not kernels::ignore_index.
/// `labels` must live until backward.
template <class T>
Var<T> cross_entropy(Tape<T>& tape, const Var<T>& logits, const int* labels) {
  const Index rows = logits.rows(), classes = logits.cols();
  Var<T> loss = tape.variable({});
  T* row_lse = tape.scratch(rows);
  loss.value()[0] = kernels::cross_entropy_forward(logits.value(), labels, rows, classes, tape.scratch(rows), row_lse);
  tape.record([=] {
    kernels::cross_entropy_backward(logits.value(), labels, rows, classes, loss.grad()[0], logits.grad(), row_lse);
  });
  return loss;
}

/// Mean squared error between x and target (same number of elements). `target` must live until backward.
template <class T>
Var<T> mse(Tape<T>& tape, const Var<T>& x, const T* target) {
  const Index n = x.size();
  Var<T> loss = tape.variable({});
  loss.value()[0] = kernels::mse_forward(x.value(), target, n);
  tape.record([=] { kernels::mse_backward(x.value(), target, n, loss.grad()[0], x.grad()); });
  return loss;
}

// ------------------------------------------------------------------ 2-d convolution and pooling
// For the §3.1 classifiers of attention-map images. Tensors are [B, C, height, width].

/// Stride and zero padding of a 2-d convolution.
struct Conv2dShape {
  /// @{
  /// stride, and zero padding on every side
  Index stride = 1, padding = 0;
  /// @}
};

/// y = conv(x, w) + b:  x [B, C, Hi, Wi], w [O, C, kh, kw], b [O] -> y [B, O, Ho, Wo],
/// Ho = (Hi + 2·padding - kh) / stride + 1 (zero padding).
template <class T>
Var<T> conv2d(Tape<T>& tape, const Var<T>& x, const Var<T>& w, const Var<T>& b, Conv2dShape cs = {}) {
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  require(xs.rank == 4 && ws.rank == 4 && ws[1] == xs[1], "autodiff::conv2d: x [B, C, H, W] and w [O, C, kh, kw] expected");
  const Index B = xs[0], C = xs[1], Hi = xs[2], Wi = xs[3], O = ws[0], kh = ws[2], kw = ws[3];
  const Index S = cs.stride, P = cs.padding;
  require(S > 0 && Hi + 2 * P >= kh && Wi + 2 * P >= kw, "autodiff::conv2d: kernel ", kh, "x", kw,
          " larger than the padded input ", Hi + 2 * P, "x", Wi + 2 * P);
  const kernels::Conv2dGeometry g{B, C, Hi, Wi, O, kh, kw, S, P};
  Var<T> y = tape.variable({B, O, g.out_height(), g.out_width()});
  kernels::conv2d_forward(x.value(), w.value(), b.valid() ? b.value() : nullptr, y.value(), g);
  tape.record([=] {
    kernels::conv2d_backward_weight(x.value(), y.grad(), w.grad(), b.valid() ? b.grad() : nullptr, g);
    if (x.needs_grad()) kernels::conv2d_backward_input(w.value(), y.grad(), x.grad(), g);  // not for an image
  });
  return y;
}

/// The pooling of pool2d.
enum class Pooling { max, average };

/// Non-overlapping or strided pooling over k × k windows (no padding): x [B, C, Hi, Wi] -> [B, C, Ho, Wo].
/// Max pooling sends the gradient to the first maximum of each window (recomputed in backward).
template <class T>
Var<T> pool2d(Tape<T>& tape, const Var<T>& x, Pooling kind, Index k, Index stride = 0) {
  const auto& xs = x.shape();
  require(xs.rank == 4, "autodiff::pool2d: x must be [B, C, H, W]");
  if (stride <= 0) stride = k;
  const Index B = xs[0], C = xs[1], Hi = xs[2], Wi = xs[3];
  require(k > 0 && Hi >= k && Wi >= k, "autodiff::pool2d: window ", k, " larger than the input ", Hi, "x", Wi);
  const Index Ho = (Hi - k) / stride + 1, Wo = (Wi - k) / stride + 1;
  Var<T> y = tape.variable({B, C, Ho, Wo});
  // Index into x of the window's first maximum, or -1 for averaging.
  auto window = [=](Index plane, Index i, Index j, bool want_argmax, T& value) {
    const T* in = x.value() + plane * Hi * Wi;
    Index best = -1;
    T acc = kind == Pooling::max ? -std::numeric_limits<T>::infinity() : T(0);
    for (Index u = 0; u < k; ++u)
      for (Index v = 0; v < k; ++v) {
        const Index at = (i * stride + u) * Wi + j * stride + v;
        if (kind == Pooling::max) {
          if (in[at] > acc || best < 0) {
            acc = in[at];
            best = at;
          }
        } else {
          acc += in[at];
        }
      }
    value = kind == Pooling::max ? acc : acc / static_cast<T>(k * k);
    return want_argmax ? best : Index(-1);
  };
  for (Index plane = 0; plane < B * C; ++plane)
    for (Index i = 0; i < Ho; ++i)
      for (Index j = 0; j < Wo; ++j) window(plane, i, j, false, y.value()[(plane * Ho + i) * Wo + j]);
  tape.record([=] {
    for (Index plane = 0; plane < B * C; ++plane)
      for (Index i = 0; i < Ho; ++i)
        for (Index j = 0; j < Wo; ++j) {
          const T g = y.grad()[(plane * Ho + i) * Wo + j];
          T* dx = x.grad() + plane * Hi * Wi;
          if (kind == Pooling::max) {
            T unused;
            dx[window(plane, i, j, true, unused)] += g;
          } else {
            for (Index u = 0; u < k; ++u)
              for (Index v = 0; v < k; ++v) dx[(i * stride + u) * Wi + j * stride + v] += g / static_cast<T>(k * k);
          }
        }
  });
  return y;
}

/// How batch_norm normalises: with the batch's statistics (training; the running ones updated when given)
/// or with the running ones (inference).
template <class T>
struct BatchNormOptions {
  bool training = true;                ///< batch statistics (else the running ones)
  double eps = 1e-5;                   ///< added to the variance
  double momentum = 0.1;               ///< weight of a new batch in the running statistics
  T* running_mean = nullptr;           ///< [C]: updated in training, read in inference (null: none kept)
  T* running_variance = nullptr;       ///< [C], unbiased
};

/// Batch normalisation per channel (kernels/batch_norm.hpp): x [N, C, ...] (statistics over N and every
/// axis after C), gain, shift [C] -> y, the shape of x. Training updates the running statistics when
/// they are given; inference requires them.
template <class T>
Var<T> batch_norm(Tape<T>& tape, const Var<T>& x, const Var<T>& gain, const Var<T>& shift,
                  const BatchNormOptions<T>& o = {}) {
  const auto& xs = x.shape();
  require(xs.rank >= 2, "autodiff::batch_norm: x must be [N, C, ...], it has rank ", xs.rank);
  Index plane = 1;  // H·W for images
  for (int d = 2; d < xs.rank; ++d) plane *= xs[d];
  const kernels::BatchNormShape s{xs[0], xs[1], plane};
  require(gain.size() == s.channels && shift.size() == s.channels, "autodiff::batch_norm: ", s.channels,
          " channels but a gain of ", gain.size(), " and a shift of ", shift.size());
  require(o.eps > 0 && o.momentum >= 0 && o.momentum <= 1, "autodiff::batch_norm: eps ", o.eps,
          " must be > 0 and momentum ", o.momentum, " in [0, 1]");
  require((o.running_mean == nullptr) == (o.running_variance == nullptr),
          "autodiff::batch_norm: give both running statistics (mean and variance) or neither");
  require(o.training || o.running_mean, "autodiff::batch_norm: inference needs the running mean and variance");
  Var<T> y = tape.variable(xs);
  const kernels::BatchNormStats<T> stats{tape.scratch(s.channels), tape.scratch(s.channels)};
  if (o.training) {
    kernels::batch_norm_forward_training<T>(x.value(), y.value(), s, gain.value(), shift.value(), o.eps, stats,
                                            {o.running_mean, o.running_variance, o.momentum});
  } else {
    kernels::batch_norm_inference_stats<T>(o.running_mean, o.running_variance, s.channels, o.eps, stats);
    kernels::batch_norm_forward_inference<T>(x.value(), y.value(), s, gain.value(), shift.value(),
                                             {stats.mean, stats.rstd});
  }
  const bool training = o.training;
  tape.record([=] {
    const kernels::BatchNormStats<const T> saved{stats.mean, stats.rstd};
    if (training)
      kernels::batch_norm_backward_training<T>(x.value(), saved, y.grad(), s, gain.value(), gain.grad(), shift.grad(),
                                               x.grad());
    else
      kernels::batch_norm_backward_inference<T>(x.value(), saved, y.grad(), s, gain.value(), gain.grad(),
                                                shift.grad(), x.grad());
  });
  return y;
}

/// [B, ...] -> [B, rest]: the same memory and gradient under a new shape (nothing to record).
template <class T>
Var<T> flatten(Tape<T>& tape, const Var<T>& x) {
  const Index B = x.shape().rank ? x.shape()[0] : 1;
  return tape.alias(x, {B, B ? x.size() / B : 0});
}

}  // namespace darkbert::autodiff
