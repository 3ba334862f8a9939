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

#include <cmath>   // std::exp
#include <limits>  // std::numeric_limits

#include <Eigen/Core>  // Eigen::Map, Eigen::OuterStride

#include "../../core/matrix.hpp"

namespace darkbert::ops {

struct AttentionShape {
  Index batch = 0, length = 0, heads = 0, head_dim = 0;
  bool causal = false;

  Index hidden() const { return heads * head_dim; }
  Index map_size() const { return length * length; }
  // Offset of the [L, L] map of (b, h) inside a [B, heads, L, L] buffer.
  Index map_offset(Index b, Index h) const { return (b * heads + h) * map_size(); }
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
                      T scale) {
  const Index L = s.length, d = s.head_dim, H = s.hidden();
  const T* q = qkv + b * L * 3 * H + h * d;
  detail::StridedMatrix<T> Q(q, L, d, Eigen::OuterStride<>(3 * H));
  detail::StridedMatrix<T> K(q + H, L, d, Eigen::OuterStride<>(3 * H));
  MatrixMap<T> S(scores + s.map_offset(b, h), L, L);
  S.noalias() = scale * (Q * K.transpose());
  const int* mask = key_mask + b * L;
  constexpr T lowest = std::numeric_limits<T>::lowest();
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  for (Index i = 0; i < L; ++i) {
    T* row = S.data() + i * L;
    const Index visible = s.causal ? i + 1 : L;
#pragma omp simd
    for (Index j = 0; j < visible; ++j) row[j] = mask[j] ? row[j] : lowest;
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

// ctx[b rows, head h columns] = pattern_bh · V_bh.
template <class T>
void attention_context(const T* qkv, const T* pattern, T* ctx, const AttentionShape& s, Index b, Index h) {
  const Index L = s.length, d = s.head_dim, H = s.hidden();
  ConstMatrixMap<T> P(pattern + s.map_offset(b, h), L, L);
  detail::StridedMatrix<T> V(qkv + b * L * 3 * H + 2 * H + h * d, L, d, Eigen::OuterStride<>(3 * H));
  detail::MutableStridedMatrix<T> C(ctx + b * L * H + h * d, L, d, Eigen::OuterStride<>(H));
  C.noalias() = P * V;
}

}  // namespace darkbert::ops
