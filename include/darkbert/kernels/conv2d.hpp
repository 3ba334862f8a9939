#pragma once
/// @file
/// 2-d convolution with stride and zero padding, forward and backward side by side (the §3.1 classifiers
/// of attention-map images):
/// @code
/// y[n, o, i, j] = b[o] + Σ_(c, u, v) x[n, c, i·S + u - P, j·S + v - P] · w[o, c, u, v]      (in order c, u, v)
/// dw[o, c, u, v] += Σ_(n, i, j) dy[n, o, i, j] · x[n, c, i·S + u - P, j·S + v - P]          (in order n, i, j)
/// db[o]          += Σ_(n, i, j) dy[n, o, i, j]
/// dx[n, c, r, q] += Σ_(o, i, j) dy[n, o, i, j] · w[o, c, r + P - i·S, q + P - j·S]          (in order o, i, j)
/// @endcode
/// x [B, C, Hi, Wi], w [O, C, kh, kw], b [O], y [B, O, Ho, Wo]; taps outside the input read zero.
///
/// Every output element is written by one thread and sums its terms in the order above, so the bits do not
/// depend on the thread count. The orders are the contract: the faster paths below keep them (each
/// accumulator still adds its terms one after another; they gain by running independent accumulators side
/// by side, not by reordering a sum). Each term is added with multiply_add, so whether a product is fused
/// depends on the build's target alone, never on how the compiler vectorised a loop.

#include <algorithm>  // std::fill, std::max, std::min
#include <tuple>      // std::tie
#include <utility>    // std::pair

#include "../core/matrix.hpp"        // darkbert::Index
#include "../core/multiply_add.hpp"  // darkbert::multiply_add

namespace darkbert::kernels {

/// The extents of a convolution.
struct Conv2dGeometry {
  /// @{
  /// batch, input channels, input height and width, output channels, kernel height and width
  Index batch = 0, in_channels = 0, in_height = 0, in_width = 0, out_channels = 0, kernel_height = 0,
        kernel_width = 0;
  /// @}
  Index stride = 1;   ///< S
  Index padding = 0;  ///< P, zeros on every side

  /// Ho = (Hi + 2P - kh) / S + 1.
  Index out_height() const { return (in_height + 2 * padding - kernel_height) / stride + 1; }
  /// Wo = (Wi + 2P - kw) / S + 1.
  Index out_width() const { return (in_width + 2 * padding - kernel_width) / stride + 1; }
  /// The outputs [first, last] along an axis of `in` inputs and `out` outputs whose tap `u` lands inside
  /// the input (i·S + u - P in [0, in)); last < first when none does.
  std::pair<Index, Index> outputs_of_tap(Index u, Index in, Index out) const {
    const Index S = stride, P = padding;
    const Index first = u >= P ? 0 : (P - u + S - 1) / S;
    const Index last = in - 1 + P - u < 0 ? -1 : std::min(out - 1, (in - 1 + P - u) / S);
    return {first, last};
  }
};

/// y = conv(x, w) + b (b null: no bias).
template <class T>
void conv2d_forward(const T* x, const T* w, const T* b, T* y, const Conv2dGeometry& g) {
  const Index B = g.batch, C = g.in_channels, Hi = g.in_height, Wi = g.in_width, O = g.out_channels;
  const Index kh = g.kernel_height, kw = g.kernel_width, S = g.stride, P = g.padding;
  const Index Ho = g.out_height(), Wo = g.out_width();
#pragma omp parallel for schedule(static) collapse(2)
  for (Index n = 0; n < B; ++n)
    for (Index o = 0; o < O; ++o) {
      T* out = y + (n * O + o) * Ho * Wo;
      std::fill(out, out + Ho * Wo, b ? b[o] : T(0));
      for (Index c = 0; c < C; ++c) {
        const T* in = x + (n * C + c) * Hi * Wi;
        for (Index u = 0; u < kh; ++u) {
          const auto [i0, i1] = g.outputs_of_tap(u, Hi, Ho);
          for (Index v = 0; v < kw; ++v) {
            const auto [j0, j1] = g.outputs_of_tap(v, Wi, Wo);
            const T wv = w[((o * C + c) * kh + u) * kw + v];
            for (Index i = i0; i <= i1; ++i) {
              const Index row = (i * S + u - P) * Wi + v - P;  // + j·S: the tap of output (i, j)
              T* yr = out + i * Wo;
              for (Index j = j0; j <= j1; ++j) yr[j] = multiply_add(in[row + j * S], wv, yr[j]);
            }
          }
        }
      }
    }
}

namespace detail {

/// dw for one (o, c) of a 3 x 3 kernel: the nine accumulators run side by side over (n, i, j), each adding
/// its own terms in that order (one chain of dependent additions at a time would wait on every addition).
template <class T>
void conv2d_weight_grad_3x3(const T* x, const T* dy, T* dw, Index o, Index c, const Conv2dGeometry& g) {
  const Index C = g.in_channels, Hi = g.in_height, Wi = g.in_width, O = g.out_channels;
  const Index S = g.stride, P = g.padding, Ho = g.out_height(), Wo = g.out_width();
  T a[9];
  for (int k = 0; k < 9; ++k) a[k] = dw[(o * C + c) * 9 + k];
  Index j_first[3], j_last[3], i_first[3], i_last[3];
  for (Index t = 0; t < 3; ++t) {
    std::tie(j_first[t], j_last[t]) = g.outputs_of_tap(t, Wi, Wo);
    std::tie(i_first[t], i_last[t]) = g.outputs_of_tap(t, Hi, Ho);
  }
  // Columns where all three taps v land inside the input.
  const Index inner_first = std::max({j_first[0], j_first[1], j_first[2]});
  const Index inner_last = std::min({j_last[0], j_last[1], j_last[2]});
  for (Index n = 0; n < g.batch; ++n) {
    const T* in = x + (n * C + c) * Hi * Wi;
    for (Index i = 0; i < Ho; ++i) {
      const T* d = dy + ((n * O + o) * Ho + i) * Wo;
      // in[row[u] + j·S + v] is the tap (u, v) of output (i, j), for the rows u that land inside the input.
      bool inside[3];
      Index row[3];
      for (Index u = 0; u < 3; ++u) {
        inside[u] = i >= i_first[u] && i <= i_last[u];
        row[u] = (i * S + u - P) * Wi - P;
      }
      auto edge = [&](Index j) {
        for (Index u = 0; u < 3; ++u)
          if (inside[u])
            for (Index v = 0; v < 3; ++v)
              if (j >= j_first[v] && j <= j_last[v]) a[u * 3 + v] = multiply_add(d[j], in[row[u] + j * S + v], a[u * 3 + v]);
      };
      if (!(inside[0] && inside[1] && inside[2])) {  // a top or bottom row: every column checks its taps
        for (Index j = 0; j < Wo; ++j) edge(j);
        continue;
      }
      for (Index j = 0; j < std::min(inner_first, Wo); ++j) edge(j);
      const T *r0 = in + row[0] + P, *r1 = in + row[1] + P, *r2 = in + row[2] + P;  // column -P + P = 0
      for (Index j = inner_first; j <= inner_last; ++j) {
        const T dj = d[j];
        const Index q = j * S - P;  // >= 0: every tap of column j is inside
        for (Index v = 0; v < 3; ++v) {
          a[v] = multiply_add(dj, r0[q + v], a[v]);
          a[3 + v] = multiply_add(dj, r1[q + v], a[3 + v]);
          a[6 + v] = multiply_add(dj, r2[q + v], a[6 + v]);
        }
      }
      for (Index j = std::max(inner_last + 1, inner_first); j < Wo; ++j) edge(j);
    }
  }
  for (int k = 0; k < 9; ++k) dw[(o * C + c) * 9 + k] = a[k];
}

}  // namespace detail

/// dw += Σ dy · x and db += Σ dy (db null: no bias), given y's gradient dy.
template <class T>
void conv2d_backward_weight(const T* x, const T* dy, T* dw, T* db, const Conv2dGeometry& g) {
  const Index B = g.batch, C = g.in_channels, Hi = g.in_height, Wi = g.in_width, O = g.out_channels;
  const Index kh = g.kernel_height, kw = g.kernel_width, S = g.stride, P = g.padding;
  const Index Ho = g.out_height(), Wo = g.out_width();
  const bool three_by_three = kh == 3 && kw == 3;
#pragma omp parallel for schedule(static) collapse(2)
  for (Index o = 0; o < O; ++o)
    for (Index c = 0; c < C; ++c) {
      if (three_by_three) {
        detail::conv2d_weight_grad_3x3(x, dy, dw, o, c, g);
        continue;
      }
      for (Index u = 0; u < kh; ++u) {
        const auto [i0, i1] = g.outputs_of_tap(u, Hi, Ho);
        for (Index v = 0; v < kw; ++v) {
          const auto [j0, j1] = g.outputs_of_tap(v, Wi, Wo);
          T acc = dw[((o * C + c) * kh + u) * kw + v];
          for (Index n = 0; n < B; ++n) {
            const T* in = x + (n * C + c) * Hi * Wi;
            const T* d = dy + (n * O + o) * Ho * Wo;
            for (Index i = i0; i <= i1; ++i) {
              const Index row = (i * S + u - P) * Wi + v - P;
              for (Index j = j0; j <= j1; ++j) acc = multiply_add(d[i * Wo + j], in[row + j * S], acc);
            }
          }
          dw[((o * C + c) * kh + u) * kw + v] = acc;
        }
      }
    }
  if (db)
    for (Index o = 0; o < O; ++o)
      for (Index n = 0; n < B; ++n) {
        const T* d = dy + (n * O + o) * Ho * Wo;
        for (Index k = 0; k < Ho * Wo; ++k) db[o] += d[k];
      }
}

/// dx += the gradient through the convolution, given y's gradient dy. Each output's gradient is scattered
/// onto its taps; with u and v descending, the outputs reach an input element (r, q) with i and j ascending
/// (u = r + P - i·S), the order (o, i, j) of the contract.
template <class T>
void conv2d_backward_input(const T* w, const T* dy, T* dx, const Conv2dGeometry& g) {
  const Index B = g.batch, C = g.in_channels, Hi = g.in_height, Wi = g.in_width, O = g.out_channels;
  const Index kh = g.kernel_height, kw = g.kernel_width, S = g.stride, P = g.padding;
  const Index Ho = g.out_height(), Wo = g.out_width();
#pragma omp parallel for schedule(static) collapse(2)
  for (Index n = 0; n < B; ++n)
    for (Index c = 0; c < C; ++c) {
      T* plane = dx + (n * C + c) * Hi * Wi;
      for (Index o = 0; o < O; ++o) {
        const T* d = dy + (n * O + o) * Ho * Wo;
        for (Index u = kh - 1; u >= 0; --u) {
          const auto [i0, i1] = g.outputs_of_tap(u, Hi, Ho);
          for (Index v = kw - 1; v >= 0; --v) {
            const auto [j0, j1] = g.outputs_of_tap(v, Wi, Wo);
            const T wv = w[((o * C + c) * kh + u) * kw + v];
            for (Index i = i0; i <= i1; ++i) {
              const Index row = (i * S + u - P) * Wi + v - P;
              for (Index j = j0; j <= j1; ++j) plane[row + j * S] = multiply_add(d[i * Wo + j], wv, plane[row + j * S]);
            }
          }
        }
      }
    }
}

}  // namespace darkbert::kernels
