#pragma once
// darkbert's AVX2 + FMA float micro-kernel and its packing helpers: the 8-wide counterpart of
// xwt_kernel_avx512.hpp, for CPUs without AVX-512 (Zen 2/3, Intel client CPUs). Used by xwt_gemm
// (core/xwt_gemm.hpp) for every Linear layer and by the per-head attention products (kernels/attention.hpp)
// on the avx2 path of core/kernel_dispatch.hpp.
//
// The kernel computes one register tile  C[6, 16] = A[6, K] · B[K, 16]:
//   A's 6 rows are read in place (any row stride) and broadcast element by element;
//   B's rows are loaded as two vectors of 8 (any row stride; fewer than 16 columns are masked).
// 12 ymm accumulators + 2 for B + 1 broadcast of the 16 registers; per k: 2 vector loads, 6 broadcasts
// (loads too), 12 FMAs — 6 cycles on two FMA pipes, while the 8 loads need 4 (or 3) cycles.
// Every element is a sum over k in increasing order, one FMA per k starting from 0, exactly as in the
// AVX-512 kernel: results never depend on threads or work split, and equal the AVX-512 kernel's bits.
//
// For a Linear layer y[N, O] = x[N, K] · W[O, K]ᵀ, A is W itself (never packed) and B is a "panel" of x
// transposed: panel[k * 16 + t] = x[t, k] for 16 tokens, packed once per call with in-register 8 × 8
// transposes.
//
// Every function carries DARKBERT_AVX2_TARGET, so the kernel is compiled for AVX2 + FMA whatever flags the
// including translation unit has; it must only be called when kernel_path() says avx2
// (core/kernel_dispatch.hpp), which checks the CPU once.

#include <immintrin.h>  // AVX2 and FMA intrinsics (GCC and Clang declare them whatever the -m flags)

#include <algorithm>  // std::min, std::copy, std::fill

#include "../kernel_dispatch.hpp"  // DARKBERT_AVX2_TARGET
#include "../matrix.hpp"
#include "vector_math_avx2.hpp"  // first_lanes

#if !DARKBERT_HAS_AVX2_KERNEL
#error "xwt_kernel_avx2.hpp needs x86-64 with GCC or Clang; include it only when DARKBERT_HAS_AVX2_KERNEL"
#endif

namespace darkbert::detail::avx2 {

inline constexpr Index kTileRows = 6;      // rows of A (and C) per register tile
inline constexpr Index kTileColumns = 16;  // columns of B (and C) per register tile: two ymm

// C[i, t] = Σ_{k<K} A[i, k] · B[k, t] for i < 6, t < columns (<= 16).
// A[i, k] = a[i * lda + k] (all 6 rows must be readable), B[k, t] = b[k * ldb + t], C[i, t] = c[i * ldc + t];
// only rows i < c_rows of C are written.
DARKBERT_AVX2_TARGET inline void tile_6x16(const float* a, Index lda, const float* b, Index ldb, Index columns, Index K,
                                           float* c, Index ldc, Index c_rows = kTileRows) {
  __m256 acc[kTileRows][2];
#pragma GCC unroll 6
  for (Index i = 0; i < kTileRows; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  if (columns == kTileColumns) {  // the common case: plain loads (a masked load costs more on some CPUs)
    for (Index k = 0; k < K; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b + k * ldb);
      const __m256 b1 = _mm256_loadu_ps(b + k * ldb + 8);
#pragma GCC unroll 6
      for (Index i = 0; i < kTileRows; ++i) {
        const __m256 ai = _mm256_broadcast_ss(a + i * lda + k);
        acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
      }
    }
  } else {
    const __m256i m0 = first_lanes(columns), m1 = first_lanes(columns - 8);
    for (Index k = 0; k < K; ++k) {
      const __m256 b0 = _mm256_maskload_ps(b + k * ldb, m0);
      const __m256 b1 = _mm256_maskload_ps(b + k * ldb + 8, m1);
#pragma GCC unroll 6
      for (Index i = 0; i < kTileRows; ++i) {
        const __m256 ai = _mm256_broadcast_ss(a + i * lda + k);
        acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
      }
    }
  }
  // Whole tiles take plain stores (a masked store is microcode on AMD CPUs: store_first). A constant trip
  // count (rows past c_rows get an empty mask and the last valid row's address) keeps acc[][] in
  // registers, as in the AVX-512 kernel.
  if (columns == kTileColumns && c_rows == kTileRows) {
#pragma GCC unroll 6
    for (Index i = 0; i < kTileRows; ++i) {
      _mm256_storeu_ps(c + i * ldc, acc[i][0]);
      _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
    }
    return;
  }
  const __m256i m0 = first_lanes(columns), m1 = first_lanes(columns - 8), none = _mm256_setzero_si256();
#pragma GCC unroll 6
  for (Index i = 0; i < kTileRows; ++i) {
    const bool valid = i < c_rows;
    float* row = c + (valid ? i : c_rows - 1) * ldc;
    _mm256_maskstore_ps(row, valid ? m0 : none, acc[i][0]);
    _mm256_maskstore_ps(row + 8, valid ? m1 : none, acc[i][1]);
  }
}

// A tile's rows as the kernel reads them: a itself when all 6 rows exist, otherwise the `rows` that do
// exist copied into `spare` [6, K] and padded with zeros (so the kernel never reads past a buffer).
DARKBERT_AVX2_TARGET inline const float* tile_rows(const float* a, Index lda, Index rows, Index K, float* spare,
                                                   Index& ld) {
  if (rows >= kTileRows) {
    ld = lda;
    return a;
  }
  for (Index i = 0; i < rows; ++i) std::copy(a + i * lda, a + i * lda + K, spare + i * K);
  std::fill(spare + rows * K, spare + kTileRows * K, 0.0f);
  ld = K;
  return spare;
}

// Transposes the 8 × 8 block r[i][j] (8 rows of 8 floats) in registers: on return r[j] holds column j.
DARKBERT_AVX2_TARGET inline void transpose_8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {  // interleave pairs of rows, 32-bit granules
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // 64-bit granules
    const __m256d a = _mm256_castps_pd(t[i]), b = _mm256_castps_pd(t[i + 1]);
    const __m256d c = _mm256_castps_pd(t[i + 2]), d = _mm256_castps_pd(t[i + 3]);
    r[i] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, c));
    r[i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, c));
    r[i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(b, d));
    r[i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {  // 128-bit lanes, across the two groups of 4 rows
    t[j] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x20);
    t[j + 4] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x31);
  }
  for (int j = 0; j < 8; ++j) r[j] = t[j];
}

// panel[k * 16 + t] = x[t * ldx + k] for t < tokens (<= 16) and k < K; 0 for tokens <= t < 16.
// Full 8 × 8 blocks go through registers; the ragged edges element by element.
DARKBERT_AVX2_TARGET inline void pack_panel(const float* x, Index ldx, Index tokens, Index K, float* panel) {
  const Index K8 = tokens == kTileColumns ? K / 8 * 8 : 0;
  for (Index half = 0; half < kTileColumns; half += 8)
    for (Index k = 0; k < K8; k += 8) {
      __m256 r[8];
      for (Index t = 0; t < 8; ++t) r[t] = _mm256_loadu_ps(x + (half + t) * ldx + k);
      transpose_8x8(r);
      for (Index j = 0; j < 8; ++j) _mm256_storeu_ps(panel + (k + j) * kTileColumns + half, r[j]);
    }
  for (Index k = K8; k < K; ++k)
    for (Index t = 0; t < kTileColumns; ++t) panel[k * kTileColumns + t] = t < tokens ? x[t * ldx + k] : 0.0f;
}

// The kernel and its helpers under the names the drivers written once for both paths use
// (xwt_gemm_row_blocks in core/xwt_gemm.hpp), as in xwt_kernel_avx512.hpp.
struct Kernel {
  static constexpr Index rows = kTileRows, columns = kTileColumns;
  DARKBERT_AVX2_TARGET static void tile(const float* a, Index lda, const float* b, Index ldb, Index cols, Index K,
                                          float* c, Index ldc, Index c_rows) {
    tile_6x16(a, lda, b, ldb, cols, K, c, ldc, c_rows);
  }
  DARKBERT_AVX2_TARGET static void pack(const float* x, Index ldx, Index tokens, Index K, float* panel) {
    pack_panel(x, ldx, tokens, K, panel);
  }
  DARKBERT_AVX2_TARGET static const float* readable_rows(const float* a, Index lda, Index n, Index K, float* spare,
                                                           Index& ld) {
    return tile_rows(a, lda, n, K, spare, ld);
  }
};

}  // namespace darkbert::detail::avx2
