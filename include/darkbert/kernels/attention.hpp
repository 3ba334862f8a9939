#pragma once
/// @file
/// Multi-head scaled dot-product attention on a fused QKV activation, one (batch, head) pair at a time, so
/// heads are never copied apart: Q, K and V of head h are strided column blocks of qkv, and the head's
/// context is written straight into its column block of ctx.
///
/// Shapes (N = B * L tokens, H = heads * d):
/// @code
/// qkv    [N, 3H]          rows b*L..b*L+L-1 belong to sequence b; columns [0,H) Q, [H,2H) K, [2H,3H) V
/// scores [B, heads, L, L] pre-softmax after masking, then (in place) the attention pattern
/// ctx    [N, H]           pattern · V, head h in columns [h*d, (h+1)*d)
/// @endcode
///
/// Masking follows Hugging Face exactly: a padding key gets the lowest finite score (HF adds finfo.min),
/// a future key of a causal model gets -inf. A query row whose keys are all padding therefore spreads
/// uniformly over them, as in HF.
///
/// The two per-head products run on darkbert's tile kernels for float, AVX-512 or AVX2 + FMA by the path of
/// core/kernel_dispatch.hpp (scores: Q's rows against K packed as panels of 32 or 16 keys; context: the
/// pattern's rows against V's rows read in place, no packing), and as one single-threaded BLAS call
/// otherwise (double, or the blas path). They need a little per-thread memory: AttentionScratch, prepared
/// before the loop. The float softmax rows (forward and backward) run in AVX-512 or AVX2 intrinsics on
/// those paths, whatever flags the consumer compiled with.
///
/// On every path a map's values do not depend on where it lives (the result's attentions, or the lean
/// forward's scratch): both kernels pack or read their operands the same way at any address, and the
/// softmax's exp goes through aligned chunks (core/aligned_chunks.hpp). Eigen's own products would not
/// do: below ~20 rows + columns + depth it evaluates them coefficient by coefficient, peeling the
/// unaligned first elements of a row off its vectorised loop.

#include <omp.h>  // omp_get_thread_num

#include <algorithm>    // std::min, std::max
#include <limits>       // std::numeric_limits
#include <type_traits>  // std::is_same_v
#include <vector>

#include <Eigen/Core>  // Eigen::Map, Eigen::OuterStride

#include "../core/aligned_chunks.hpp"  // transform_in_aligned_chunks
#include "../core/blas.hpp"            // detail::blas_gemm
#include "../core/error.hpp"
#include "../core/fixed_order_sum.hpp"
#include "../core/matrix.hpp"
#include "../core/tensor.hpp"  // AlignedAllocator
#include "../core/xwt_gemm.hpp"  // xwt_kernel_available
#include "dropout.hpp"
#if DARKBERT_HAS_AVX512_KERNEL
#include "../core/detail/xwt_kernel_avx512.hpp"
#endif
#if DARKBERT_HAS_AVX2_KERNEL
#include "../core/detail/vector_math_avx2.hpp"  // exp_avx2, fixed_order_lane_sum_avx2
#include "../core/detail/xwt_kernel_avx2.hpp"
#endif

namespace darkbert::kernels {

/// The shape of one attention call (see the top of this header).
struct AttentionShape {
  /// @{
  /// B, L, heads and d
  Index batch = 0, length = 0, heads = 0, head_dim = 0;
  /// @}
  bool causal = false;  ///<  whether query i sees only keys j <= i

  /// H = heads · d.
  Index hidden() const { return heads * head_dim; }
  /// L·L, the size of one map.
  Index map_size() const { return length * length; }
  /// Offset of the [L, L] map of (b, h) inside a [B, heads, L, L] buffer.
  Index map_offset(Index b, Index h) const { return (b * heads + h) * map_size(); }
};

/// Working memory of the float kernel path, one slice per thread: K of one head packed as panels, and
/// spare rows for a partial last tile. prepare(shape, threads) before a parallel loop that runs with
/// num_threads(threads); for_thread() inside it (it cannot fail there, so nothing throws inside the region).
struct AttentionScratch {
  std::vector<float, AlignedAllocator<float>> buffer;  ///<  every thread's slice
  /// @{
  /// floats per thread, and of those the packed K panels
  Index per_thread = 0, panel_floats = 0;
  /// @}

  /// Sizes the buffer for `threads` threads on shape `s`.
  void prepare(const AttentionShape& s, int threads) {
    // The AVX-512 kernel's register tile; the AVX2 kernel's (6 × 16) needs no more: panels of 16 keys
    // round L up to less, and its spare rows are half as many.
    constexpr Index tile_rows = 12, tile_columns = 32;
    const Index panels = (s.length + tile_columns - 1) / tile_columns;
    panel_floats = panels * tile_columns * s.head_dim;
    per_thread = (panel_floats + tile_rows * std::max(s.length, s.head_dim) + 15) / 16 * 16;
    const auto total = static_cast<std::size_t>(per_thread * threads);
    if (buffer.size() < total) buffer.resize(total);
  }
  /// This thread's slice.
  float* for_thread() { return buffer.data() + omp_get_thread_num() * per_thread; }
};

namespace detail {
template <class T>
using StridedMatrix = Eigen::Map<const Matrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MutableStridedMatrix = Eigen::Map<Matrix<T>, 0, Eigen::OuterStride<>>;

#if DARKBERT_HAS_AVX512_KERNEL
/// S [L, L] (row stride L) = Q Kᵀ for one head on the tile kernel: Q's rows against K packed as 32-key
/// panels; a causal head skips the panels wholly in its queries' future. q, k: the head's first element in
/// qkv, row stride ld; `work` is this thread's scratch slice.
DARKBERT_AVX512_TARGET inline void scores_by_tile(const float* q, const float* k, float* S, Index L, Index d, Index ld,
                                                  float* work, Index panel_floats, bool causal) {
  using namespace darkbert::detail::avx512;
  float* panels = work;
  float* spare = work + panel_floats;
  for (Index p = 0; p * kTileColumns < L; ++p)
    pack_panel(k + p * kTileColumns * ld, ld, std::min(kTileColumns, L - p * kTileColumns), d, panels + p * kTileColumns * d);
  for (Index q0 = 0; q0 < L; q0 += kTileRows) {
    const Index rows = std::min(kTileRows, L - q0);
    Index lda = 0;
    const float* a = tile_rows(q + q0 * ld, ld, rows, d, spare, lda);
    // A causal block's queries see keys [0, q0 + rows): later panels are masked to -inf by the caller.
    const Index keys = causal ? std::min(L, q0 + rows) : L;
    for (Index p = 0; p * kTileColumns < keys; ++p)
      tile_12x32(a, lda, panels + p * kTileColumns * d, kTileColumns, std::min(kTileColumns, L - p * kTileColumns), d,
                 S + q0 * L + p * kTileColumns, L, rows);
  }
}

/// c [L, d] (row stride H) = P [L, L] · V [L, d] (row stride 3H, read in place) on the tile kernel. Row i
/// of P is read up to column i + future (causal_reach; L for a bidirectional map): dropping exact zeros
/// from the end of a sum leaves it unchanged.
DARKBERT_AVX512_TARGET inline void context_by_tile(const float* P, const float* v, float* c, Index L, Index d, Index H,
                                                   float* spare, Index future) {
  using namespace darkbert::detail::avx512;
  for (Index q0 = 0; q0 < L; q0 += kTileRows) {
    const Index rows = std::min(kTileRows, L - q0);
    Index lda = 0;
    const float* a = tile_rows(P + q0 * L, L, rows, L, spare, lda);
    const Index keys = std::min(L, q0 + rows + future);  // the rest of the block's rows is exactly 0
    for (Index j0 = 0; j0 < d; j0 += kTileColumns)
      tile_12x32(a, lda, v + j0, 3 * H, std::min(kTileColumns, d - j0), keys, c + q0 * H + j0, H, rows);
  }
}
#endif

#if DARKBERT_HAS_AVX2_KERNEL
/// scores_by_tile on the AVX2 kernel: Q's rows against K packed as 16-key panels.
DARKBERT_AVX2_TARGET inline void scores_by_tile_avx2(const float* q, const float* k, float* S, Index L, Index d,
                                                     Index ld, float* work, Index panel_floats, bool causal) {
  using namespace darkbert::detail::avx2;
  float* panels = work;
  float* spare = work + panel_floats;
  for (Index p = 0; p * kTileColumns < L; ++p)
    pack_panel(k + p * kTileColumns * ld, ld, std::min(kTileColumns, L - p * kTileColumns), d, panels + p * kTileColumns * d);
  for (Index q0 = 0; q0 < L; q0 += kTileRows) {
    const Index rows = std::min(kTileRows, L - q0);
    Index lda = 0;
    const float* a = tile_rows(q + q0 * ld, ld, rows, d, spare, lda);
    // A causal block's queries see keys [0, q0 + rows): later panels are masked to -inf by the caller.
    const Index keys = causal ? std::min(L, q0 + rows) : L;
    for (Index p = 0; p * kTileColumns < keys; ++p)
      tile_6x16(a, lda, panels + p * kTileColumns * d, kTileColumns, std::min(kTileColumns, L - p * kTileColumns), d,
                S + q0 * L + p * kTileColumns, L, rows);
  }
}

/// context_by_tile on the AVX2 kernel: P's rows against V's rows read in place.
DARKBERT_AVX2_TARGET inline void context_by_tile_avx2(const float* P, const float* v, float* c, Index L, Index d,
                                                      Index H, float* spare, Index future) {
  using namespace darkbert::detail::avx2;
  for (Index q0 = 0; q0 < L; q0 += kTileRows) {
    const Index rows = std::min(kTileRows, L - q0);
    Index lda = 0;
    const float* a = tile_rows(P + q0 * L, L, rows, L, spare, lda);
    const Index keys = std::min(L, q0 + rows + future);  // the rest of the block's rows is exactly 0
    for (Index j0 = 0; j0 < d; j0 += kTileColumns)
      tile_6x16(a, lda, v + j0, 3 * H, std::min(kTileColumns, d - j0), keys, c + q0 * H + j0, H, rows);
  }
}
#endif

/// Whether the per-head products of T run on a tile kernel in this process.
template <class T>
bool attention_on_tile() {
  return (DARKBERT_HAS_AVX512_KERNEL || DARKBERT_HAS_AVX2_KERNEL) && xwt_kernel_available<T>();
}
}  // namespace detail

/// scores[b, h] = scale · Q_bh K_bhᵀ, then the padding and causal masks.
/// key_mask [B, L]: 1 = real token, 0 = padding.
template <class T>
void attention_scores(const T* qkv, const int* key_mask, T* scores, const AttentionShape& s, Index b, Index h,
                      T scale, AttentionScratch& scratch) {
  const Index L = s.length, d = s.head_dim, ld = 3 * s.hidden();
  const T* q = qkv + b * L * ld + h * d;
  const T* k = q + s.hidden();
  T* S = scores + s.map_offset(b, h);
  if (detail::attention_on_tile<T>()) {
    if constexpr (std::is_same_v<T, float>) {
#if DARKBERT_HAS_AVX512_KERNEL
      if (kernel_path() == KernelPath::avx512)
        detail::scores_by_tile(q, k, S, L, d, ld, scratch.for_thread(), scratch.panel_floats, s.causal);
#endif
#if DARKBERT_HAS_AVX2_KERNEL
      if (kernel_path() == KernelPath::avx2)
        detail::scores_by_tile_avx2(q, k, S, L, d, ld, scratch.for_thread(), scratch.panel_floats, s.causal);
#endif
    }
  } else {
    (void)scratch;  // only the tile kernel needs it
    // S [L, L] = Q [L, d] · K [L, d]ᵀ, Q and K read in place (row stride ld)
    darkbert::detail::single_threaded_blas();  // the callers run one (b, h) pair per OpenMP thread
    darkbert::detail::blas_gemm<T>(Transpose::no, Transpose::yes, L, L, d, T(1), q, ld, k, ld, T(0), S, L);
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

namespace detail {
#if DARKBERT_HAS_AVX512_KERNEL
DARKBERT_INTRINSICS_WARNINGS_OFF
/// exp(x) of 16 floats: Eigen's float algorithm (Cephes: x = m ln 2 + r, a degree-5 polynomial in r, times
/// 2^m, the argument clamped to ±88.723) written in intrinsics. A scalar loop of it was not vectorised by
/// GCC 12 inside a target-attributed function (the int/float bit casts), which cost the forward 3-5%.
DARKBERT_AVX512_TARGET inline __m512 exp_avx512(__m512 x_in) {
  const __m512 x = _mm512_min_ps(_mm512_set1_ps(88.723f), _mm512_max_ps(_mm512_set1_ps(-88.723f), x_in));
  const __m512 m = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
                                        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(m, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(m, _mm512_set1_ps(2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r), r3 = _mm512_mul_ps(r2, r);
  __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500E-4f), r, _mm512_set1_ps(1.3981999507E-3f));
  __m512 y1 = _mm512_fmadd_ps(_mm512_set1_ps(4.1665795894E-2f), r, _mm512_set1_ps(1.6666665459E-1f));
  const __m512 y2 = _mm512_add_ps(r, _mm512_set1_ps(1.0f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073E-3f));
  y1 = _mm512_fmadd_ps(y1, r, _mm512_set1_ps(5.0000001201E-1f));
  y = _mm512_fmadd_ps(y, r3, y1);
  y = _mm512_fmadd_ps(y, r2, y2);
  // 2^m for m in [-128, 128] as two factors 2^(m/2) that are each normal floats.
  const __m512i e = _mm512_cvtps_epi32(m), e1 = _mm512_srai_epi32(e, 1), e2 = _mm512_sub_epi32(e, e1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 p1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e1, bias), 23));
  const __m512 p2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e2, bias), 23));
  return _mm512_max_ps(_mm512_mul_ps(_mm512_mul_ps(y, p1), p2), x_in);  // +inf stays +inf
}

/// The 16 lanes added pairwise (lane l + lane l+8, then l+4, l+2, l+1): the reduction of fixed_order_sum.
DARKBERT_AVX512_TARGET inline float fixed_order_lane_sum(__m512 partial) {
  const __m256 half = _mm256_add_ps(_mm512_extractf32x8_ps(partial, 0), _mm512_extractf32x8_ps(partial, 1));
  const __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  const __m128 eighth = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(eighth, _mm_shuffle_ps(eighth, eighth, 1)));
}

/// One row's softmax over its first `visible` entries on the avx512 path (core/kernel_dispatch.hpp): the
/// same steps and the same summation order as attention_softmax, in AVX-512 intrinsics whatever flags the
/// consumer compiled with.
DARKBERT_AVX512_TARGET inline void softmax_row_avx512(float* row, Index visible) {
  using darkbert::detail::avx512::first_lanes;
  __m512 vmax = _mm512_set1_ps(row[0]);
  for (Index j = 0; j < visible; j += 16)
    vmax = _mm512_mask_max_ps(vmax, first_lanes(visible - j), vmax, _mm512_maskz_loadu_ps(first_lanes(visible - j), row + j));
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));  // exact in any order
  __m512 partial = _mm512_setzero_ps();  // element j adds to lane j % 16, as in fixed_order_sum
  for (Index j = 0; j < visible; j += 16) {
    const __mmask16 lanes = first_lanes(visible - j);
    const __m512 e = _mm512_maskz_mov_ps(lanes, exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, row + j), max)));
    _mm512_mask_storeu_ps(row + j, lanes, e);
    partial = _mm512_add_ps(partial, e);
  }
  const __m512 inverse = _mm512_set1_ps(1.0f / fixed_order_lane_sum(partial));
  for (Index j = 0; j < visible; j += 16) {
    const __mmask16 lanes = first_lanes(visible - j);
    _mm512_mask_storeu_ps(row + j, lanes, _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, row + j), inverse));
  }
}
DARKBERT_INTRINSICS_WARNINGS_ON
#endif

#if DARKBERT_HAS_AVX2_KERNEL
DARKBERT_INTRINSICS_WARNINGS_OFF
/// softmax_row_avx512 on the avx2 path, 8 lanes at a time: element j adds to partial sum j % 16 (two
/// registers), so the sum, like exp_avx2, has the avx512 path's bits.
DARKBERT_AVX2_TARGET inline void softmax_row_avx2(float* row, Index visible) {
  using namespace darkbert::detail::avx2;
  __m256 vmax = _mm256_set1_ps(row[0]);
  for (Index j = 0; j < visible; j += 8) {
    const Index n = visible - j;
    const __m256 v = _mm256_blendv_ps(vmax, load_first(row + j, n), _mm256_castsi256_ps(first_lanes(n)));
    vmax = _mm256_max_ps(vmax, v);
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));  // exact in any order
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const __m256 max = _mm256_set1_ps(_mm_cvtss_f32(m4));
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();  // partial sums of lanes 0-7 and 8-15
  for (Index j = 0; j < visible; j += 16)
    for (Index half = 0; half < 16; half += 8) {
      const Index n = visible - j - half;  // none past the row's end
      const __m256 x = _mm256_sub_ps(load_first(row + j + half, n), max);
      const __m256 e = _mm256_and_ps(exp_avx2(x), _mm256_castsi256_ps(first_lanes(n)));
      store_first(row + j + half, n, e);
      if (half == 0) lo = _mm256_add_ps(lo, e);
      else hi = _mm256_add_ps(hi, e);
    }
  const __m256 inverse = _mm256_set1_ps(1.0f / fixed_order_lane_sum_avx2(lo, hi));
  for (Index j = 0; j < visible; j += 8) {
    store_first(row + j, visible - j, _mm256_mul_ps(load_first(row + j, visible - j), inverse));
  }
}

/// One row of softmax_backward_rows on the avx2 path: the dot product in fixed_order_sum's order of
/// partial sums (one FMA per element), then g = factor · p · (g - dot).
DARKBERT_AVX2_TARGET inline void softmax_backward_row_avx2(const float* p, float* g, Index L, float factor) {
  using namespace darkbert::detail::avx2;
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();  // partial sums of lanes 0-7 and 8-15
  for (Index j = 0; j < L; j += 16) {
    lo = _mm256_fmadd_ps(load_first(g + j, L - j), load_first(p + j, L - j), lo);
    hi = _mm256_fmadd_ps(load_first(g + j + 8, L - j - 8), load_first(p + j + 8, L - j - 8), hi);
  }
  const __m256 dot = _mm256_set1_ps(fixed_order_lane_sum_avx2(lo, hi));
  const __m256 f = _mm256_set1_ps(factor);
  for (Index j = 0; j < L; j += 8) {
    const __m256 pj = load_first(p + j, L - j), gj = load_first(g + j, L - j);
    store_first(g + j, L - j, _mm256_mul_ps(_mm256_mul_ps(f, pj), _mm256_sub_ps(gj, dot)));
  }
}
DARKBERT_INTRINSICS_WARNINGS_ON
#endif
}  // namespace detail

/// In-place row softmax of the masked scores of (b, h). Future keys of a causal row are exactly 0.
template <class T>
void attention_softmax(T* scores, const AttentionShape& s, Index b, Index h) {
  const Index L = s.length;
  T* map = scores + s.map_offset(b, h);
#if DARKBERT_HAS_AVX512_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if (kernel_path() == KernelPath::avx512) {
      for (Index i = 0; i < L; ++i) {
        const Index visible = s.causal ? i + 1 : L;
        detail::softmax_row_avx512(map + i * L, visible);
        std::fill(map + i * L + visible, map + (i + 1) * L, 0.0f);
      }
      return;
    }
  }
#endif
#if DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if (kernel_path() == KernelPath::avx2) {
      for (Index i = 0; i < L; ++i) {
        const Index visible = s.causal ? i + 1 : L;
        detail::softmax_row_avx2(map + i * L, visible);
        std::fill(map + i * L + visible, map + (i + 1) * L, 0.0f);
      }
      return;
    }
  }
#endif
  for (Index i = 0; i < L; ++i) {
    T* row = map + i * L;
    const Index visible = s.causal ? i + 1 : L;  // entries beyond are -inf -> 0
    T max = row[0];
#pragma omp simd reduction(max : max)
    for (Index j = 1; j < visible; ++j) max = row[j] > max ? row[j] : max;
    // Eigen's vectorised exp on aligned chunks: the same bits at any address of the row
    transform_in_aligned_chunks(row, row, visible, [max](auto chunk) { chunk = (chunk - max).exp(); });
    const T inverse = T(1) / fixed_order_sum(row, visible);
#pragma omp simd
    for (Index j = 0; j < visible; ++j) row[j] *= inverse;
    for (Index j = visible; j < L; ++j) row[j] = T(0);
  }
}

/// How far past the diagonal the nonzero entries of an [L, L] map reach: 0 when every entry above the
/// diagonal is exactly 0, as after a causal softmax; L - 1 at most.
template <class T>
Index causal_reach(const T* P, Index L) {
  Index reach = 0;
  for (Index i = 0; i + reach + 1 < L; ++i)
    for (Index j = L - 1; j > i + reach; --j)
      if (P[i * L + j] != T(0)) {
        reach = j - i;
        break;
      }
  return reach;
}

/// ctx[b rows, head h columns] = P · V_bh for an [L, L] map P of (b, h): its pattern, or a dropped-out
/// copy of it during training.
template <class T>
void attention_context_from(const T* qkv, const T* P, T* ctx, const AttentionShape& s, Index b, Index h,
                            AttentionScratch& scratch) {
  const Index L = s.length, d = s.head_dim, H = s.hidden();
  const T* v = qkv + b * L * 3 * H + 2 * H + h * d;
  T* c = ctx + b * L * H + h * d;
  if (detail::attention_on_tile<T>()) {
    if constexpr (std::is_same_v<T, float>) {
      // A causal row's future keys are exactly 0 after the softmax; a masking policy or hook may have
      // written some, so the product skips only the columns that are 0 in every row.
      [[maybe_unused]] const Index future = s.causal ? causal_reach(P, L) : L;
#if DARKBERT_HAS_AVX512_KERNEL
      if (kernel_path() == KernelPath::avx512)
        detail::context_by_tile(P, v, c, L, d, H, scratch.for_thread() + scratch.panel_floats, future);
#endif
#if DARKBERT_HAS_AVX2_KERNEL
      if (kernel_path() == KernelPath::avx2)
        detail::context_by_tile_avx2(P, v, c, L, d, H, scratch.for_thread() + scratch.panel_floats, future);
#endif
    }
  } else {
    (void)scratch;  // only the tile kernel needs it
    // c [L, d] (row stride H) = P [L, L] · V [L, d] (row stride 3H, read in place)
    darkbert::detail::single_threaded_blas();
    darkbert::detail::blas_gemm<T>(Transpose::no, Transpose::no, L, d, L, T(1), P, L, v, 3 * H, T(0), c, H);
  }
}

/// ctx[b rows, head h columns] = pattern_bh · V_bh.
template <class T>
void attention_context(const T* qkv, const T* pattern, T* ctx, const AttentionShape& s, Index b, Index h,
                       AttentionScratch& scratch) {
  attention_context_from(qkv, pattern + s.map_offset(b, h), ctx, s, b, h, scratch);
}

//// dV of (b, h) into dqkv, and dP [L, L] = drop(dC Vᵀ), the gradient of the pattern P, into `dP`.
/// work: L·L elements (the dropped-out pattern), unused without attention dropout.
template <class T>
void attention_backward_values(const T* qkv, const T* P, const T* dctx, T* dqkv, const AttentionShape& s, Index b,
                               Index h, const DropoutMask& drop, Index drop_first, T* dP, T* work) {
  const Index L = s.length, d = s.head_dim, H = s.hidden(), ld = 3 * H;
  const Index base = b * L * ld + h * d;
  detail::StridedMatrix<T> V(qkv + base + 2 * H, L, d, Eigen::OuterStride<>(ld));
  detail::StridedMatrix<T> dC(dctx + b * L * H + h * d, L, d, Eigen::OuterStride<>(H));
  detail::MutableStridedMatrix<T> dV(dqkv + base + 2 * H, L, d, Eigen::OuterStride<>(ld));
  const T* Pd = P;
  if (drop.active()) {
    dropout_apply(P, work, L * L, drop_first, drop);
    Pd = work;
  }
  dV.noalias() = ConstMatrixMap<T>(Pd, L, L).transpose() * dC;
  MatrixMap<T> dPm(dP, L, L);
  dPm.noalias() = dC * V.transpose();
  dropout_apply(dP, L * L, drop_first, drop);
}

/// Softmax backward of L rows in place: d = factor · P ⊙ (d - rowsum(d ⊙ P)). With factor 1 the result
/// is the gradient of the scores the softmax read (what hook_attn_scores sees).
template <class T>
void softmax_backward_rows(const T* P, T* d, Index L, T factor) {
#if DARKBERT_HAS_AVX2_KERNEL
  if constexpr (std::is_same_v<T, float>) {
    if (kernel_path() == KernelPath::avx2) {
      for (Index i = 0; i < L; ++i) detail::softmax_backward_row_avx2(P + i * L, d + i * L, L, factor);
      return;
    }
  }
#endif
  for (Index i = 0; i < L; ++i) {
    const T* p = P + i * L;
    T* g = d + i * L;
    T dot = 0;
    for (Index j = 0; j < L; ++j) dot += g[j] * p[j];
    for (Index j = 0; j < L; ++j) g[j] = factor * p[j] * (g[j] - dot);
  }
}

/// dQ = dS K and dK = dSᵀ Q of (b, h) into dqkv, from dS [L, L], the gradient of Q Kᵀ (the attention
/// scale already applied). dS == nullptr: the pattern did not depend on Q and K, both are zero.
template <class T>
void attention_backward_scores(const T* qkv, const T* dS, T* dqkv, const AttentionShape& s, Index b, Index h) {
  const Index L = s.length, d = s.head_dim, H = s.hidden(), ld = 3 * H;
  const Index base = b * L * ld + h * d;
  detail::MutableStridedMatrix<T> dQ(dqkv + base, L, d, Eigen::OuterStride<>(ld));
  detail::MutableStridedMatrix<T> dK(dqkv + base + H, L, d, Eigen::OuterStride<>(ld));
  if (!dS) {
    dQ.setZero();
    dK.setZero();
    return;
  }
  detail::StridedMatrix<T> Q(qkv + base, L, d, Eigen::OuterStride<>(ld));
  detail::StridedMatrix<T> K(qkv + base + H, L, d, Eigen::OuterStride<>(ld));
  ConstMatrixMap<T> dSm(dS, L, L);
  dQ.noalias() = dSm * K;
  dK.noalias() = dSm.transpose() * Q;
}

//// Backward of one (b, h) pair. P is the pattern that multiplied V (after masking policies, before
/// attention dropout, whose mask `drop` is regenerated: element (i, j) of the pair has index
/// drop_first + i·L + j). dctx [N, H] is the gradient of the context; dQ, dK, dV of (b, h) are written
/// into their own rows and columns of dqkv [N, 3H], so pairs run in parallel without conflicts.
/// @code
/// Pd = drop(P);  dV = Pdᵀ dC;  dP = drop(dC Vᵀ)            attention_backward_values
/// dS = P ⊙ (dP - rowsum(dP ⊙ P))                          softmax_backward_rows (masked keys: P = 0)
/// dQ = scale · dS K;  dK = scale · dSᵀ Q                    attention_backward_scores
/// @endcode
/// When `through_scores` is false (a masking policy replaced the pattern, e.g. a disabled head) the
/// pattern does not depend on Q and K: dQ = dK = 0 and only V gets a gradient.
/// work: 2·L·L elements of this thread's scratch. The three stages are separate functions for callers
/// that read or change dP and dS in between (gradient hooks on hook_pattern and hook_attn_scores).
template <class T>
void attention_backward(const T* qkv, const T* P, const T* dctx, T* dqkv, const AttentionShape& s, Index b, Index h,
                        T scale, bool through_scores, const DropoutMask& drop, Index drop_first, T* work) {
  const Index L = s.length;
  T* dP = work + L * L;
  attention_backward_values(qkv, P, dctx, dqkv, s, b, h, drop, drop_first, dP, work);
  if (!through_scores) {
    attention_backward_scores<T>(qkv, nullptr, dqkv, s, b, h);
    return;
  }
  softmax_backward_rows(P, dP, L, scale);  // the scale folded in: dS = scale · P ⊙ (dP - rowsum)
  attention_backward_scores(qkv, dP, dqkv, s, b, h);
}

}  // namespace darkbert::kernels
