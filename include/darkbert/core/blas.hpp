#pragma once
/// @file
/// Typed GEMM over CBLAS (OpenBLAS), parallelised by darkbert itself: the output is split into column
/// (or row) blocks, shared among the OpenMP threads, each computed by a single-threaded BLAS call. darkbert
/// keeps one thread pool (OpenMP) for every phase of the forward pass, so BLAS threads and OpenMP threads
/// never compete for the same cores; OpenBLAS is therefore set to one thread on first use.

#include <cblas.h>  // cblas_sgemm, cblas_dgemm, openblas_set_num_threads
#include <omp.h>    // omp_get_max_threads, omp_in_parallel

#include <algorithm>    // std::min, std::max
#include <limits>       // std::numeric_limits
#include <mutex>        // std::call_once
#include <string>       // std::string
#include <thread>       // std::thread::hardware_concurrency
#include <type_traits>  // std::is_same_v

#include "error.hpp"
#include "matrix.hpp"

namespace darkbert {

/// Whether gemm reads an operand transposed (op(A) = Aᵀ).
enum class Transpose : bool { no = false, yes = true };

/// The name of the kernel set OpenBLAS uses ("Haswell", "SkylakeX", ...).
inline std::string blas_core_name() { return openblas_get_corename(); }

/// Whether an OpenBLAS kernel-set name (blas_core_name()) is one of its AVX-512 sets.
/// @code
/// if (!darkbert::is_avx512_core(darkbert::blas_core_name())) std::puts("OpenBLAS runs AVX2 kernels");
/// @endcode
inline bool is_avx512_core(const std::string& core) {
  return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
}

/// Whether an OpenBLAS kernel-set name runs AVX2 + FMA kernels (its Haswell and Zen sets).
inline bool is_avx2_core(const std::string& core) { return core == "Haswell" || core == "Zen"; }

namespace detail {

/// Whether OpenBLAS runs its AVX-512 kernels (fixed when the library loads; see core/blas_kernel.hpp).
inline bool blas_runs_avx512() {
  static const bool avx512 = is_avx512_core(blas_core_name());
  return avx512;
}

inline void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

template <class T>
void blas_gemm(Transpose trans_a, Transpose trans_b, Index m, Index n, Index k, T alpha, const T* a, Index lda,
               const T* b, Index ldb, T beta, T* c, Index ldc) {
  const auto ta = trans_a == Transpose::yes ? CblasTrans : CblasNoTrans;
  const auto tb = trans_b == Transpose::yes ? CblasTrans : CblasNoTrans;
  const auto i = [](Index v) { return static_cast<int>(v); };
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ on the same buffers. OpenBLAS makes that
  // swap itself, but its row-major entry first hands small NN products (M·N·K < 28·512², β = 0, α = 1) to
  // a direct AVX-512 kernel that sums in another order than the packed one; asked column-major it never
  // does, so only the small-matrix limit below decides the path.
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasColMajor, tb, ta, i(n), i(m), i(k), alpha, b, i(ldb), a, i(lda), beta, c, i(ldc));
  else
    cblas_dgemm(CblasColMajor, tb, ta, i(n), i(m), i(k), alpha, b, i(ldb), a, i(lda), beta, c, i(ldc));
}

/// OpenBLAS computes a product with M·N·K at most 100³ in a small-matrix kernel (AVX-512 cores, float and
/// double) whose sums over K are not cut into blocks as the packed kernel's are: an element's bits depend
/// on the path. Above the limit the packed path's bits depend only on K, not on how many rows or columns
/// one call covers (tests/test_core_blas.cpp).
inline constexpr double blas_small_matrix_limit = 100.0 * 100.0 * 100.0;

/// How many output blocks gemm cuts a product into, at most. On OpenBLAS's AVX-512 kernel sets an element's
/// bits do not depend on the call that covers it (above the small-matrix limit), so one block per thread.
/// Its AVX2 kernel sets (Haswell, Zen) sum an element in an order that depends on where it falls in the
/// call's internal blocking and on the call's extent, so there the blocks must not follow the thread
/// count: one per CPU of the machine, shared among however many threads run. hardware_concurrency, unlike
/// omp_get_num_procs, ignores the process's core binding, so MPI ranks bound to one core each cut a
/// product as a single process does.
inline int gemm_blocks(int threads) {
  static const int cpus = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return blas_runs_avx512() ? threads : cpus;
}

}  // namespace detail

/// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, with leading dimensions lda, ldb, ldc (row-major).
template <class T>
void gemm(Transpose trans_a, Transpose trans_b, Index m, Index n, Index k, T alpha, const T* a, Index lda,
          const T* b, Index ldb, T beta, T* c, Index ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "gemm: float or double");
  constexpr Index max_int = std::numeric_limits<int>::max();
  if (m > max_int || n > max_int || k > max_int || lda > max_int || ldb > max_int || ldc > max_int)
    fail("gemm: dimension beyond the 32-bit BLAS interface (", m, " x ", n, " x ", k, ")");
  detail::single_threaded_blas();
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int blocks = detail::gemm_blocks(threads);
  // Split the wider output dimension into blocks of whole 64-byte vectors. Each block's call packs the
  // operand the blocks share (A when columns are split, B when rows are), so splitting the wider
  // dimension re-packs the smaller operand (docs/performance.md, "Training batches").
  constexpr Index lanes = 64 / sizeof(T);
  const bool split_columns = n >= m;
  const Index extent = split_columns ? n : m;
  const Index chunk = ((extent + blocks - 1) / blocks + lanes - 1) / lanes * lanes;
  // Split only when every block, the last and smallest too, stays above OpenBLAS's small-matrix limit:
  // then each element is the packed path's sum whatever the thread count. Otherwise one call; a block
  // that small would gain little from a second thread anyway.
  const Index block_count = (extent + chunk - 1) / chunk;
  const Index last = extent - (block_count - 1) * chunk;
  const double smallest_block = double(m) * double(n) * double(k) / double(extent) * double(last);
  if (block_count == 1 || smallest_block <= detail::blas_small_matrix_limit) {
    detail::blas_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(std::min<Index>(threads, block_count))) if (threads > 1)
  for (Index block = 0; block < block_count; ++block) {
    const Index begin = chunk * block;
    const Index end = std::min(extent, begin + chunk);
    if (split_columns) {
      // Columns [begin, end) of op(B) and C.
      const T* b_block = trans_b == Transpose::yes ? b + begin * ldb : b + begin;
      detail::blas_gemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_block, ldb, beta, c + begin, ldc);
    } else {
      // Rows [begin, end) of op(A) and C.
      const T* a_block = trans_a == Transpose::yes ? a + begin : a + begin * lda;
      detail::blas_gemm(trans_a, trans_b, end - begin, n, k, alpha, a_block, lda, b, ldb, beta, c + begin * ldc, ldc);
    }
  }
}

}  // namespace darkbert
