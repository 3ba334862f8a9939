#pragma once
/// @file
/// y = x · Wᵀ for a weight matrix in its natural [out, in] layout (every Linear layer), followed by a
/// per-row epilogue (bias, activation) applied to each block of y as soon as it is complete, while it is
/// still in cache.
///
/// @code
/// x [rows, in], W [out, in], y [rows, out], all row-major.
/// epilogue(float* y_row_part, Index first_column, Index columns) is called exactly once for every part
/// of every row of y, and the parts of a row cover it; it must only touch the span it is given.
/// @endcode
///
/// float runs darkbert's own register-tiled kernels: the AVX-512 one (core/detail/xwt_kernel_avx512.hpp,
/// ≈93% of the FMA peak on BERT-sized layers) on the avx512 path, the AVX2 + FMA one
/// (core/detail/xwt_kernel_avx2.hpp) on the avx2 path; W's rows are the kernel's A for few rows and large
/// W (inference), x's rows for many rows and small W (training batches; xwt_row_blocks_chosen).
/// Everything else — double, the blas path, and the shapes where OpenBLAS was measured to win
/// (xwt_kernel_chosen) — goes to BLAS followed by one parallel epilogue pass. The kernels are compiled by target attributes and chosen at run time
/// (core/kernel_dispatch.hpp), so the consumer's compiler flags do not matter.

#include <omp.h>  // omp_in_parallel, omp_get_max_threads, omp_get_thread_num, omp_get_num_threads

#include <algorithm>    // std::min
#include <type_traits>  // std::is_same_v
#include <vector>

#include "blas.hpp"  // gemm, detail::blas_runs_avx512
#include "kernel_dispatch.hpp"  // kernel_path, DARKBERT_HAS_AVX512_KERNEL, DARKBERT_HAS_AVX2_KERNEL
#include "matrix.hpp"
#include "tensor.hpp"  // AlignedAllocator

#if DARKBERT_HAS_AVX512_KERNEL
#include "detail/xwt_kernel_avx512.hpp"
#endif
#if DARKBERT_HAS_AVX2_KERNEL
#include "detail/xwt_kernel_avx2.hpp"
#endif

namespace darkbert {

/// Reusable working memory of xwt_gemm (the packed activations); keep one per forward pass so the layer
/// loop never allocates.
struct XwtScratch {
  std::vector<float, AlignedAllocator<float>> buffer;  ///<  the packed activations

  /// Room for `floats` floats (grows, never shrinks).
  float* reserve(Index floats) {
    if (static_cast<Index>(buffer.size()) < floats) buffer.resize(static_cast<std::size_t>(floats));
    return buffer.data();
  }
};

/// Whether a tile kernel (rather than BLAS) computes products of T in this process: float on the avx512
/// and avx2 paths.
template <class T>
bool xwt_kernel_available() {
  return std::is_same_v<T, float> && kernel_path() != KernelPath::blas;
}

/// Whether the tile kernel of `path` (avx512 or avx2) takes a product of `rows` rows and depth `in`.
inline bool xwt_kernel_chosen(Index rows, Index in, KernelPath path = kernel_path()) {
  if (path == KernelPath::avx2) {
    // Measured against OpenBLAS's Haswell kernels (benchmarks/bench_xwt_gemm.cpp): under 8 rows most of
    // the 16-token panel would be padding.
    return rows >= 8;
  }
  // Measured on BERT-base shapes (benchmarks/bench_xwt_gemm.cpp): the kernel wins at every shape with
  // in <= 1024 and at every shape with up to 256 rows; OpenBLAS's SkylakeX kernels win for in = 3072 with
  // 1024 rows (its K-blocking keeps more in cache), its AVX2 kernels never do. Under 16 rows most of the
  // 32-row panel would be padding.
  return rows >= 16 && (in <= 1024 || rows <= 256 || !detail::blas_runs_avx512());
}

/// Whether a tile-kernel product of `rows` rows, depth `in` and `out` outputs runs with x's rows as the
/// kernel's A (detail::xwt_gemm_row_blocks) rather than W's. Measured on a Zen 4 on both paths
/// (benchmarks/bench_xwt_gemm.cpp, docs/performance.md): x's rows win by 1.1-1.8× on every training
/// shape of the study and mini models (512 to 8192 rows, width 128-256) and on their language-model
/// heads, and lose 10-25% on BERT-base's layers at 128 rows, where W is the large operand.
inline bool xwt_row_blocks_chosen(Index rows, Index in, Index out) { return rows >= 512 && (in <= 256 || out <= 256); }

namespace detail {

template <class T, class Epilogue>
void xwt_gemm_blas(const T* x, Index rows, Index in, const T* w, Index out, T* y, Epilogue& epilogue) {
  gemm<T>(Transpose::no, Transpose::yes, rows, out, in, T(1), x, in, w, in, T(0), y, out);
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
  for (Index r = 0; r < rows; ++r) epilogue(y + r * out, Index(0), out);
}

#if DARKBERT_HAS_AVX512_KERNEL
/// (The OpenMP region's outlined body inherits the target attribute; the epilogue, compiled for the
/// consumer's flags, is inlined into it as a subset of AVX-512.)
template <class Epilogue>
DARKBERT_AVX512_TARGET void xwt_gemm_avx512(const float* x, Index rows, Index in, const float* w, Index out, float* y, XwtScratch& scratch,
                     Epilogue& epilogue) {
  using namespace avx512;
  const Index panels = (rows + kTileColumns - 1) / kTileColumns;
  const Index tiles = (out + kTileRows - 1) / kTileRows;
  const Index panel_floats = kTileColumns * in;
  float* packed = scratch.reserve(panels * panel_floats + kTileRows * in);
  // The last tile, when out is not a multiple of 12, reads a zero-padded copy of W's last rows (either
  // way its row stride is `in`).
  Index last_ld = 0;
  const float* last_tile = tile_rows(w + (tiles - 1) * kTileRows * in, in, out - (tiles - 1) * kTileRows, in,
                                     packed + panels * panel_floats, last_ld);
  // 8 tiles (96 outputs × in) of W stay in L2 while every panel of x streams past them.
  constexpr Index tiles_per_block = 8;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (Index p = 0; p < panels; ++p)
      pack_panel(x + p * kTileColumns * in, in, std::min(kTileColumns, rows - p * kTileColumns), in, packed + p * panel_floats);
    // (implicit barrier: every panel is packed before any thread reads one)
    const Index n = omp_get_num_threads(), id = omp_get_thread_num();
    const Index first_tile = tiles * id / n, end_tile = tiles * (id + 1) / n;
    alignas(64) float tile[kTileRows * kTileColumns];
    for (Index block = first_tile; block < end_tile; block += tiles_per_block) {
      const Index block_end = std::min(end_tile, block + tiles_per_block);
      const Index col_begin = block * kTileRows, col_end = std::min(out, block_end * kTileRows);
      for (Index p = 0; p < panels; ++p) {
        const Index row_begin = p * kTileColumns, tokens = std::min(kTileColumns, rows - row_begin);
        for (Index t_i = block; t_i < block_end; ++t_i) {
          const Index o = t_i * kTileRows, outs = std::min(kTileRows, out - o);
          tile_12x32(t_i == tiles - 1 ? last_tile : w + o * in, in, packed + p * panel_floats, kTileColumns, kTileColumns,
                     in, tile, kTileColumns);
          for (Index t = 0; t < tokens; ++t) {
            float* y_row = y + (row_begin + t) * out + o;
            for (Index i = 0; i < outs; ++i) y_row[i] = tile[i * kTileColumns + t];
          }
        }
        for (Index t = 0; t < tokens; ++t)
          epilogue(y + (row_begin + t) * out + col_begin, col_begin, col_end - col_begin);
      }
    }
  }
}
#endif

#if DARKBERT_HAS_AVX2_KERNEL
/// The same on the AVX2 + FMA kernel: 6 × 16 tiles, panels of 16 tokens, blocks of 16 tiles (96 outputs).
template <class Epilogue>
DARKBERT_AVX2_TARGET void xwt_gemm_avx2(const float* x, Index rows, Index in, const float* w, Index out, float* y,
                                        XwtScratch& scratch, Epilogue& epilogue) {
  using namespace avx2;
  const Index panels = (rows + kTileColumns - 1) / kTileColumns;
  const Index tiles = (out + kTileRows - 1) / kTileRows;
  const Index panel_floats = kTileColumns * in;
  float* packed = scratch.reserve(panels * panel_floats + kTileRows * in);
  Index last_ld = 0;
  const float* last_tile = tile_rows(w + (tiles - 1) * kTileRows * in, in, out - (tiles - 1) * kTileRows, in,
                                     packed + panels * panel_floats, last_ld);
  // 16 tiles (96 outputs × in) of W stay in L2 while every panel of x streams past them.
  constexpr Index tiles_per_block = 16;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (Index p = 0; p < panels; ++p)
      pack_panel(x + p * kTileColumns * in, in, std::min(kTileColumns, rows - p * kTileColumns), in, packed + p * panel_floats);
    // (implicit barrier: every panel is packed before any thread reads one)
    const Index n = omp_get_num_threads(), id = omp_get_thread_num();
    const Index first_tile = tiles * id / n, end_tile = tiles * (id + 1) / n;
    alignas(32) float tile[kTileRows * kTileColumns];
    for (Index block = first_tile; block < end_tile; block += tiles_per_block) {
      const Index block_end = std::min(end_tile, block + tiles_per_block);
      const Index col_begin = block * kTileRows, col_end = std::min(out, block_end * kTileRows);
      for (Index p = 0; p < panels; ++p) {
        const Index row_begin = p * kTileColumns, tokens = std::min(kTileColumns, rows - row_begin);
        for (Index t_i = block; t_i < block_end; ++t_i) {
          const Index o = t_i * kTileRows, outs = std::min(kTileRows, out - o);
          tile_6x16(t_i == tiles - 1 ? last_tile : w + o * in, in, packed + p * panel_floats, kTileColumns, kTileColumns,
                    in, tile, kTileColumns);
          for (Index t = 0; t < tokens; ++t) {
            float* y_row = y + (row_begin + t) * out + o;
            for (Index i = 0; i < outs; ++i) y_row[i] = tile[i * kTileColumns + t];
          }
        }
        for (Index t = 0; t < tokens; ++t)
          epilogue(y + (row_begin + t) * out + col_begin, col_begin, col_end - col_begin);
      }
    }
  }
}
#endif

#if DARKBERT_HAS_AVX512_KERNEL || DARKBERT_HAS_AVX2_KERNEL
/// y = x · Wᵀ the other way round, for many rows and a small W (a training batch): x's rows are the
/// kernel's A, read in place, and W is packed once per call as panels of Kernel::columns outputs. Each
/// thread owns a contiguous range of row blocks, so it never reads rows another core wrote, and a tile
/// lands in y straight from the registers. Every element is the same sum over k in the same order as in
/// xwt_gemm_avx512/avx2 (fma(x, w, acc) = fma(w, x, acc)), so the bits do not depend on the driver.
/// Kernel: avx512::Kernel or avx2::Kernel.
template <class Kernel, class Epilogue>
void xwt_gemm_row_blocks(const float* x, Index rows, Index in, const float* w, Index out, float* y, XwtScratch& scratch,
                         Epilogue& epilogue) {
  constexpr Index tile_rows = Kernel::rows, tile_columns = Kernel::columns;
  const Index panels = (out + tile_columns - 1) / tile_columns;
  const Index panel_floats = tile_columns * in;
  const Index row_blocks = (rows + tile_rows - 1) / tile_rows;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // W panels, then each thread's spare rows for a partial last row block.
  float* packed = scratch.reserve(panels * panel_floats + threads * tile_rows * in);
  // A chunk of the thread's rows (≈ 128 KB of x) meets W one pass of panels (≈ 128 KB) at a time: both
  // stay in L2 (512 KB per core on Zen 3, the smallest here).
  constexpr Index l2_share = (Index(128) << 10) / Index(sizeof(float));
  const Index pass_panels = std::max<Index>(1, l2_share / panel_floats);
  const Index chunk_blocks = std::max<Index>(1, l2_share / (tile_rows * in));
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (Index p = 0; p < panels; ++p)
      Kernel::pack(w + p * tile_columns * in, in, std::min(tile_columns, out - p * tile_columns), in,
                   packed + p * panel_floats);
    // (implicit barrier: every panel is packed before any thread reads one)
    const Index n = omp_get_num_threads(), id = omp_get_thread_num();
    const Index first_block = row_blocks * id / n, end_block = row_blocks * (id + 1) / n;
    float* spare = packed + panels * panel_floats + id * tile_rows * in;
    for (Index chunk = first_block; chunk < end_block; chunk += chunk_blocks)
      for (Index pass = 0; pass < panels; pass += pass_panels) {
        const Index pass_end = std::min(panels, pass + pass_panels);
        const Index col_begin = pass * tile_columns, col_end = std::min(out, pass_end * tile_columns);
        for (Index block = chunk; block < std::min(end_block, chunk + chunk_blocks); ++block) {
          const Index r0 = block * tile_rows, n_rows = std::min(tile_rows, rows - r0);
          Index lda = 0;
          const float* a = Kernel::readable_rows(x + r0 * in, in, n_rows, in, spare, lda);
          for (Index p = pass; p < pass_end; ++p)
            Kernel::tile(a, lda, packed + p * panel_floats, tile_columns, std::min(tile_columns, out - p * tile_columns),
                         in, y + r0 * out + p * tile_columns, out, n_rows);
          for (Index t = 0; t < n_rows; ++t) epilogue(y + (r0 + t) * out + col_begin, col_begin, col_end - col_begin);
        }
      }
  }
}
#endif

}  // namespace detail

/// y = x · Wᵀ, then the epilogue on each finished block of y (see the top of this header).
/// @code
/// darkbert::XwtScratch scratch;
/// darkbert::xwt_gemm<float>(x, rows, in, w, out, y, scratch, [&](float* part, darkbert::Index first, darkbert::Index n) {
///   for (darkbert::Index i = 0; i < n; ++i) part[i] += bias[first + i];
/// });
/// @endcode
template <class T, class Epilogue>
void xwt_gemm(const T* x, Index rows, Index in, const T* w, Index out, T* y, XwtScratch& scratch, Epilogue&& epilogue) {
  if (rows == 0 || out == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    const KernelPath path = kernel_path();
#if DARKBERT_HAS_AVX512_KERNEL
    if (path == KernelPath::avx512 && xwt_kernel_chosen(rows, in, path)) {
      if (xwt_row_blocks_chosen(rows, in, out))
        detail::xwt_gemm_row_blocks<detail::avx512::Kernel>(x, rows, in, w, out, y, scratch, epilogue);
      else
        detail::xwt_gemm_avx512(x, rows, in, w, out, y, scratch, epilogue);
      return;
    }
#endif
#if DARKBERT_HAS_AVX2_KERNEL
    if (path == KernelPath::avx2 && xwt_kernel_chosen(rows, in, path)) {
      if (xwt_row_blocks_chosen(rows, in, out))
        detail::xwt_gemm_row_blocks<detail::avx2::Kernel>(x, rows, in, w, out, y, scratch, epilogue);
      else
        detail::xwt_gemm_avx2(x, rows, in, w, out, y, scratch, epilogue);
      return;
    }
#endif
  }
  (void)scratch;
  detail::xwt_gemm_blas(x, rows, in, w, out, y, epilogue);
}

}  // namespace darkbert
