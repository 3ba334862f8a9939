#pragma once
// darkbert's AVX-512 float micro-kernel and its packing helpers, used by xwt_gemm (core/xwt_gemm.hpp) for
// every Linear layer and by the per-head attention products (kernels/attention.hpp).
//
// The kernel computes one register tile  C[12, 32] = A[12, K] · B[K, 32]:
//   A's 12 rows are read in place (any row stride) and broadcast element by element;
//   B's rows are loaded as two vectors of 16 (any row stride; fewer than 32 columns are masked).
// 24 zmm accumulators; per k: 2 vector loads, 12 broadcasts, 24 FMAs — 12 cycles on two FMA pipes, so
// the loads hide behind the arithmetic (≈95% of the FMA peak measured on BERT-sized layers).
// Every element is a sum over k in increasing order: results never depend on threads or work split.
//
// For a Linear layer y[N, O] = x[N, K] · W[O, K]ᵀ, A is W itself (never packed: it is the large operand,
// which a BLAS call would re-pack on every call) and B is a "panel" of x transposed:
// panel[k * 32 + t] = x[t, k] for 32 tokens, packed once per call with in-register 16 × 16 transposes.
//
// Every function carries DARKBERT_AVX512_TARGET, so the kernel is compiled for AVX-512 whatever flags the
// including translation unit has; it must only be called when kernel_path() says avx512
// (core/kernel_dispatch.hpp), which checks the CPU once.

#include <immintrin.h>  // AVX-512 intrinsics (GCC and Clang declare them whatever the -m flags)

#include <algorithm>  // std::min, std::copy, std::fill

#include "../kernel_dispatch.hpp"  // DARKBERT_AVX512_TARGET
#include "../matrix.hpp"

#if !DARKBERT_HAS_AVX512_KERNEL
#error "xwt_kernel_avx512.hpp needs x86-64 with GCC or Clang; include it only when DARKBERT_HAS_AVX512_KERNEL"
#endif

namespace darkbert::detail::avx512 {

inline constexpr Index kTileRows = 12;     // rows of A (and C) per register tile
inline constexpr Index kTileColumns = 32;  // columns of B (and C) per register tile: two zmm

// The first n of 16 lanes (n clamped to [0, 16]).
DARKBERT_AVX512_TARGET inline __mmask16 first_lanes(Index n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
}

// C[i, t] = Σ_{k<K} A[i, k] · B[k, t] for i < 12, t < columns (<= 32).
// A[i, k] = a[i * lda + k] (all 12 rows must be readable), B[k, t] = b[k * ldb + t], C[i, t] = c[i * ldc + t];
// only rows i < c_rows of C are written.
DARKBERT_AVX512_TARGET inline void tile_12x32(const float* a, Index lda, const float* b, Index ldb, Index columns, Index K, float* c,
                       Index ldc, Index c_rows = kTileRows) {
  const __mmask16 m0 = first_lanes(columns), m1 = first_lanes(columns - 16);
  __m512 acc[kTileRows][2];
#pragma GCC unroll 12
  for (Index i = 0; i < kTileRows; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (Index k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * ldb);
    const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + k * ldb + 16);
#pragma GCC unroll 12
    for (Index i = 0; i < kTileRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * lda + k]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  // A constant trip count (rows past c_rows get an empty mask and the last valid row's address) keeps
  // acc[][] in registers; a loop bounded by c_rows would make the compiler spill it on every k.
#pragma GCC unroll 12
  for (Index i = 0; i < kTileRows; ++i) {
    const bool valid = i < c_rows;
    float* row = c + (valid ? i : c_rows - 1) * ldc;
    _mm512_mask_storeu_ps(row, valid ? m0 : __mmask16(0), acc[i][0]);
    _mm512_mask_storeu_ps(row + 16, valid ? m1 : __mmask16(0), acc[i][1]);
  }
}

// A tile's rows as the kernel reads them: a itself when all 12 rows exist, otherwise the `rows` that do
// exist copied into `spare` [12, K] and padded with zeros (so the kernel never reads past a buffer).
DARKBERT_AVX512_TARGET inline const float* tile_rows(const float* a, Index lda, Index rows, Index K, float* spare, Index& ld) {
  if (rows >= kTileRows) {
    ld = lda;
    return a;
  }
  for (Index i = 0; i < rows; ++i) std::copy(a + i * lda, a + i * lda + K, spare + i * K);
  std::fill(spare + rows * K, spare + kTileRows * K, 0.0f);
  ld = K;
  return spare;
}

// Transposes the 16 × 16 block r[i][j] (16 rows of 16 floats) in registers: on return r[j] holds column j.
DARKBERT_AVX512_TARGET inline void transpose_16x16(__m512 r[16]) {
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

// panel[k * 32 + t] = x[t * ldx + k] for t < tokens (<= 32) and k < K; 0 for tokens <= t < 32.
// Full 16 × 16 blocks go through registers; the ragged edges element by element.
DARKBERT_AVX512_TARGET inline void pack_panel(const float* x, Index ldx, Index tokens, Index K, float* panel) {
  const Index K16 = tokens == kTileColumns ? K / 16 * 16 : 0;
  for (Index half = 0; half < kTileColumns; half += 16)
    for (Index k = 0; k < K16; k += 16) {
      __m512 r[16];
      for (Index t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(x + (half + t) * ldx + k);
      transpose_16x16(r);
      for (Index j = 0; j < 16; ++j) _mm512_storeu_ps(panel + (k + j) * kTileColumns + half, r[j]);
    }
  for (Index k = K16; k < K; ++k)
    for (Index t = 0; t < kTileColumns; ++t) panel[k * kTileColumns + t] = t < tokens ? x[t * ldx + k] : 0.0f;
}

// The kernel and its helpers under the names the drivers written once for both paths use
// (xwt_gemm_row_blocks in core/xwt_gemm.hpp; xwt_kernel_avx2.hpp has the same for its kernel).
struct Kernel {
  static constexpr Index rows = kTileRows, columns = kTileColumns;
  DARKBERT_AVX512_TARGET static void tile(const float* a, Index lda, const float* b, Index ldb, Index cols, Index K,
                                          float* c, Index ldc, Index c_rows) {
    tile_12x32(a, lda, b, ldb, cols, K, c, ldc, c_rows);
  }
  DARKBERT_AVX512_TARGET static void pack(const float* x, Index ldx, Index tokens, Index K, float* panel) {
    pack_panel(x, ldx, tokens, K, panel);
  }
  DARKBERT_AVX512_TARGET static const float* readable_rows(const float* a, Index lda, Index n, Index K, float* spare,
                                                           Index& ld) {
    return tile_rows(a, lda, n, K, spare, ld);
  }
};

}  // namespace darkbert::detail::avx512
