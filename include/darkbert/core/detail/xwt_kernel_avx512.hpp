#pragma once
// The AVX-512 float kernel behind xwt_gemm (core/xwt_gemm.hpp): y[N, O] = x[N, K] · W[O, K]ᵀ with W read
// in its own [out, in] layout, never packed. Why this shape: W is the large operand (weights), x the small
// one (activations). Broadcasting W's elements straight from its rows and packing only x costs one cheap
// pass over the activations, where a BLAS call re-packs the weights on every call (≈20% of the GEMM time
// at batch 1 here). The output tile stays in registers for the whole K, so the bias and activation are
// applied by the caller while the block is still in cache.
//
// Register tile: 12 outputs × 32 tokens = 24 zmm accumulators. Per k: two vector loads of packed x (32
// tokens), 12 broadcasts of W[o, k], 24 FMAs — 12 cycles on two FMA pipes, so the loads hide behind them.
// Every output element is a sum over k in increasing order, so the result does not depend on the
// thread count or on how the work is split.
//
// Packed x ("panel" p): tokens [32p, 32p + 32) as panel[k * 32 + t], zero beyond the last token.

#include <immintrin.h>

#include <algorithm>  // std::min

#include "../matrix.hpp"

namespace darkbert::detail::avx512 {

inline constexpr Index kTileOutputs = 12;  // W rows per register tile
inline constexpr Index kPanelTokens = 32;  // x rows per packed panel (two zmm)

// Transposes the 16 × 16 block r[i][j] (16 rows of 16 floats) in registers: on return r[j] holds column j.
inline void transpose_16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // interleave pairs of rows, 32-bit granules
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // 64-bit granules
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 16; i += 8)  // 128-bit lanes, within groups of 8 rows
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {  // 128-bit lanes, across the two groups
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
}

// panel[k * 32 + t] = x[t, k] for t < tokens, 0 for tokens <= t < 32.   x [tokens, K] row-major, ldx = K.
// Full 16 × 16 blocks go through registers; the ragged edges element by element.
inline void pack_panel(const float* x, Index tokens, Index K, float* panel) {
  const Index K16 = tokens == kPanelTokens ? K / 16 * 16 : 0;
  for (Index half = 0; half < kPanelTokens; half += 16)
    for (Index k = 0; k < K16; k += 16) {
      __m512 r[16];
      for (Index t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(x + (half + t) * K + k);
      transpose_16x16(r);
      for (Index j = 0; j < 16; ++j) _mm512_store_ps(panel + (k + j) * kPanelTokens + half, r[j]);
    }
  for (Index k = K16; k < K; ++k)
    for (Index t = 0; t < kPanelTokens; ++t) panel[k * kPanelTokens + t] = t < tokens ? x[t * K + k] : 0.0f;
}

// tile[i * 32 + t] = Σ_k w[i * ldw + k] · panel[k * 32 + t]  for i < 12, t < 32.
inline void tile_12x32(const float* w, Index ldw, const float* panel, Index K, float* tile) {
  __m512 c[kTileOutputs][2];
  for (auto& row : c) row[0] = row[1] = _mm512_setzero_ps();
  for (Index k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_load_ps(panel + k * kPanelTokens);
    const __m512 b1 = _mm512_load_ps(panel + k * kPanelTokens + 16);
#pragma GCC unroll 12
    for (Index i = 0; i < kTileOutputs; ++i) {
      const __m512 a = _mm512_set1_ps(w[i * ldw + k]);
      c[i][0] = _mm512_fmadd_ps(a, b0, c[i][0]);
      c[i][1] = _mm512_fmadd_ps(a, b1, c[i][1]);
    }
  }
  for (Index i = 0; i < kTileOutputs; ++i) {
    _mm512_store_ps(tile + i * kPanelTokens, c[i][0]);
    _mm512_store_ps(tile + i * kPanelTokens + 16, c[i][1]);
  }
}

}  // namespace darkbert::detail::avx512
