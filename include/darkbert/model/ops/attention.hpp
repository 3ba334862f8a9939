#pragma once
// Multi-head scaled dot-product attention on a fused QKV activation, one (batch, head) pair at a time, so
// heads are never copied apart: Q, K and V of head h are strided column blocks of qkv, and the head's
// context is written straight into its column block of ctx.
//
// Shapes (N = B * L tokens, H = heads * d):
//   qkv    [N, 3H]          rows b*L..b*L+L-1 belong to sequence b; columns [0,H) Q, [H,2H) K, [2H,3H) V
//   scores [B, heads, L, L] pre-softmax after masking, then (in place) the attention pattern
//   ctx    [N, H]           pattern · V, head h in columns [h*d, (h+1)*d)
//
// Masking follows Hugging Face exactly: a padding key gets the lowest finite score (HF adds finfo.min),
// a future key of a causal model gets -inf. A query row whose keys are all padding therefore spreads
// uniformly over them, as in HF.
//
// The two per-head products run on darkbert's AVX-512 tile kernel for float (scores: Q's rows against
// K packed as 32-key panels; context: the pattern's rows against V's rows read in place, no packing) and
// on Eigen otherwise. They need a little per-thread memory: AttentionScratch, prepared before the loop.

#include <omp.h>  // omp_get_thread_num

#include <algorithm>    // std::min, std::max
#include <cmath>        // std::exp
#include <limits>       // std::numeric_limits
#include <type_traits>  // std::is_same_v
#include <vector>

#include <Eigen/Core>  // Eigen::Map, Eigen::OuterStride

#include "../../core/error.hpp"
#include "../../core/matrix.hpp"
#include "../../core/tensor.hpp"  // AlignedAllocator
#include "../../core/xwt_gemm.hpp"  // xwt_kernel_available
#include "dropout.hpp"
#if defined(__AVX512F__)
#include "../../core/detail/xwt_kernel_avx512.hpp"
#endif

namespace darkbert::ops {

struct AttentionShape {
  Index batch = 0, length = 0, heads = 0, head_dim = 0;
  bool causal = false;

  Index hidden() const { return heads * head_dim; }
  Index map_size() const { return length * length; }
  // Offset of the [L, L] map of (b, h) inside a [B, heads, L, L] buffer.
  Index map_offset(Index b, Index h) const { return (b * heads + h) * map_size(); }
};

// Working memory of the float kernel path, one slice per thread: K of one head packed as panels, and
// spare rows for a partial last tile. prepare(shape, threads) before a parallel loop that runs with
// num_threads(threads); for_thread() inside it (it cannot fail there, so nothing throws inside the region).
struct AttentionScratch {
  std::vector<float, AlignedAllocator<float>> buffer;
  Index per_thread = 0, panel_floats = 0;

  void prepare(const AttentionShape& s, int threads) {
    constexpr Index tile_rows = 12, tile_columns = 32;  // the kernel's register tile
    const Index panels = (s.length + tile_columns - 1) / tile_columns;
    panel_floats = panels * tile_columns * s.head_dim;
    per_thread = (panel_floats + tile_rows * std::max(s.length, s.head_dim) + 15) / 16 * 16;
    const auto total = static_cast<std::size_t>(per_thread * threads);
    if (buffer.size() < total) buffer.resize(total);
  }
  float* for_thread() { return buffer.data() + omp_get_thread_num() * per_thread; }
};

namespace detail {
template <class T>
using StridedMatrix = Eigen::Map<const Matrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MutableStridedMatrix = Eigen::Map<Matrix<T>, 0, Eigen::OuterStride<>>;
}  // namespace detail

// Sum of v[0..n) in an order fixed by the indices alone (element j goes to partial sum j % 16, and the
// 16 partial sums are added pairwise), so it vectorises and yet never depends on the buffer's alignment.
template <class T>
T fixed_order_sum(const T* v, Index n) {
  constexpr Index lanes = 16;
  T partial[lanes] = {};
  Index j = 0;
  for (; j + lanes <= n; j += lanes)
#pragma omp simd
    for (Index l = 0; l < lanes; ++l) partial[l] += v[j + l];
  for (Index l = 0; j < n; ++j, ++l) partial[l] += v[j];
  for (Index width = lanes / 2; width > 0; width /= 2)
    for (Index l = 0; l < width; ++l) partial[l] += partial[l + width];
  return partial[0];
}

// scores[b, h] = scale · Q_bh K_bhᵀ, then the padding and causal masks.
// key_mask [B, L]: 1 = real token, 0 = padding.
template <class T>
void attention_scores(const T* qkv, const int* key_mask, T* scores, const AttentionShape& s, Index b, Index h,
                      T scale, AttentionScratch& scratch) {
  const Index L = s.length, d = s.head_dim, ld = 3 * s.hidden();
  const T* q = qkv + b * L * ld + h * d;
  const T* k = q + s.hidden();
  T* S = scores + s.map_offset(b, h);
  if constexpr (xwt_kernel_available<T>()) {
#if defined(__AVX512F__)
    using namespace darkbert::detail::avx512;
    float* panels = scratch.for_thread();
    float* spare = panels + scratch.panel_floats;
    for (Index p = 0; p * kTileColumns < L; ++p)
      pack_panel(k + p * kTileColumns * ld, ld, std::min(kTileColumns, L - p * kTileColumns), d, panels + p * kTileColumns * d);
    for (Index q0 = 0; q0 < L; q0 += kTileRows) {
      const Index rows = std::min(kTileRows, L - q0);
      Index lda = 0;
      const float* a = tile_rows(q + q0 * ld, ld, rows, d, spare, lda);
      for (Index p = 0; p * kTileColumns < L; ++p)
        tile_12x32(a, lda, panels + p * kTileColumns * d, kTileColumns, std::min(kTileColumns, L - p * kTileColumns), d,
                   S + q0 * L + p * kTileColumns, L, rows);
    }
#endif
  } else {
    (void)scratch;
    detail::StridedMatrix<T> Q(q, L, d, Eigen::OuterStride<>(ld));
    detail::StridedMatrix<T> K(k, L, d, Eigen::OuterStride<>(ld));
    MatrixMap<T>(S, L, L).noalias() = Q * K.transpose();
  }
  const int* mask = key_mask + b * L;
  constexpr T lowest = std::numeric_limits<T>::lowest();
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  for (Index i = 0; i < L; ++i) {
    T* row = S + i * L;
    const Index visible = s.causal ? i + 1 : L;
#pragma omp simd
    for (Index j = 0; j < visible; ++j) row[j] = mask[j] ? row[j] * scale : lowest;
    for (Index j = visible; j < L; ++j) row[j] = minus_inf;
  }
}

// In-place row softmax of the masked scores of (b, h). Future keys of a causal row are exactly 0.
template <class T>
void attention_softmax(T* scores, const AttentionShape& s, Index b, Index h) {
  const Index L = s.length;
  T* map = scores + s.map_offset(b, h);
  for (Index i = 0; i < L; ++i) {
    T* row = map + i * L;
    const Index visible = s.causal ? i + 1 : L;  // entries beyond are -inf -> 0
    T max = row[0];
#pragma omp simd reduction(max : max)
    for (Index j = 1; j < visible; ++j) max = row[j] > max ? row[j] : max;
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> v(row, visible);
    v = (v - max).exp();  // Eigen's vectorised exp (element-wise: independent of alignment)
    v *= T(1) / fixed_order_sum(row, visible);
    for (Index j = visible; j < L; ++j) row[j] = T(0);
  }
}

// ctx[b rows, head h columns] = P · V_bh for an [L, L] map P of (b, h): its pattern, or a dropped-out
// copy of it during training.
template <class T>
void attention_context_from(const T* qkv, const T* P, T* ctx, const AttentionShape& s, Index b, Index h,
                            AttentionScratch& scratch) {
  const Index L = s.length, d = s.head_dim, H = s.hidden();
  const T* v = qkv + b * L * 3 * H + 2 * H + h * d;
  T* c = ctx + b * L * H + h * d;
  if constexpr (xwt_kernel_available<T>()) {
#if defined(__AVX512F__)
    using namespace darkbert::detail::avx512;
    float* spare = scratch.for_thread() + scratch.panel_floats;
    for (Index q0 = 0; q0 < L; q0 += kTileRows) {
      const Index rows = std::min(kTileRows, L - q0);
      Index lda = 0;
      const float* a = tile_rows(P + q0 * L, L, rows, L, spare, lda);
      for (Index j0 = 0; j0 < d; j0 += kTileColumns)
        tile_12x32(a, lda, v + j0, 3 * H, std::min(kTileColumns, d - j0), L, c + q0 * H + j0, H, rows);
    }
#endif
  } else {
    (void)scratch;
    ConstMatrixMap<T> Pm(P, L, L);
    detail::StridedMatrix<T> V(v, L, d, Eigen::OuterStride<>(3 * H));
    detail::MutableStridedMatrix<T> C(c, L, d, Eigen::OuterStride<>(H));
    C.noalias() = Pm * V;
  }
}

// ctx[b rows, head h columns] = pattern_bh · V_bh.
template <class T>
void attention_context(const T* qkv, const T* pattern, T* ctx, const AttentionShape& s, Index b, Index h,
                       AttentionScratch& scratch) {
  attention_context_from(qkv, pattern + s.map_offset(b, h), ctx, s, b, h, scratch);
}

// Backward of one (b, h) pair. P is the pattern that multiplied V (after masking policies, before
// attention dropout, whose mask `drop` is regenerated: element (i, j) of the pair has index
// drop_first + i·L + j). dctx [N, H] is the gradient of the context; dQ, dK, dV of (b, h) are written
// into their own rows and columns of dqkv [N, 3H], so pairs run in parallel without conflicts.
//   Pd = drop(P);  dV = Pdᵀ dC;  dP = drop(dC Vᵀ)
//   dS = P ⊙ (dP - rowsum(dP ⊙ P))      softmax backward; masked keys have P = 0 and get nothing
//   dQ = scale · dS K;  dK = scale · dSᵀ Q
// When `through_scores` is false (a masking policy replaced the pattern, e.g. a disabled head) the
// pattern does not depend on Q and K: dQ = dK = 0 and only V gets a gradient.
// work: 2·L·L elements of this thread's scratch.
template <class T>
void attention_backward(const T* qkv, const T* P, const T* dctx, T* dqkv, const AttentionShape& s, Index b, Index h,
                        T scale, bool through_scores, const DropoutMask& drop, Index drop_first, T* work) {
  const Index L = s.length, d = s.head_dim, H = s.hidden(), ld = 3 * H;
  const Index base = b * L * ld + h * d;
  detail::StridedMatrix<T> Q(qkv + base, L, d, Eigen::OuterStride<>(ld));
  detail::StridedMatrix<T> K(qkv + base + H, L, d, Eigen::OuterStride<>(ld));
  detail::StridedMatrix<T> V(qkv + base + 2 * H, L, d, Eigen::OuterStride<>(ld));
  detail::StridedMatrix<T> dC(dctx + b * L * H + h * d, L, d, Eigen::OuterStride<>(H));
  detail::MutableStridedMatrix<T> dQ(dqkv + base, L, d, Eigen::OuterStride<>(ld));
  detail::MutableStridedMatrix<T> dK(dqkv + base + H, L, d, Eigen::OuterStride<>(ld));
  detail::MutableStridedMatrix<T> dV(dqkv + base + 2 * H, L, d, Eigen::OuterStride<>(ld));

  const T* Pd = P;
  if (drop.active()) {
    std::copy(P, P + L * L, work);
    dropout_apply(work, L * L, drop_first, drop);
    Pd = work;
  }
  dV.noalias() = ConstMatrixMap<T>(Pd, L, L).transpose() * dC;
  MatrixMap<T> dP(work + L * L, L, L);
  dP.noalias() = dC * V.transpose();
  dropout_apply(dP.data(), L * L, drop_first, drop);
  if (!through_scores) {
    dQ.setZero();
    dK.setZero();
    return;
  }
  for (Index i = 0; i < L; ++i) {
    const T* p = P + i * L;
    T* g = dP.data() + i * L;
    T dot = 0;
    for (Index j = 0; j < L; ++j) dot += g[j] * p[j];
    for (Index j = 0; j < L; ++j) g[j] = scale * p[j] * (g[j] - dot);
  }
  dQ.noalias() = dP * K;
  dK.noalias() = dP.transpose() * Q;
}

}  // namespace darkbert::ops
