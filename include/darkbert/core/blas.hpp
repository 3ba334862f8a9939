#pragma once
/// @file
/// Typed GEMM over CBLAS (OpenBLAS), parallelised by darkbert itself: the output is split into column
/// (or row) blocks, one per OpenMP thread, each computed by a single-threaded BLAS call. darkbert keeps one
/// thread pool (OpenMP) for every phase of the forward pass, so BLAS threads and OpenMP threads never
/// compete for the same cores; OpenBLAS is therefore set to one thread on first use.

#include <cblas.h>  // cblas_sgemm, cblas_dgemm, openblas_set_num_threads
#include <omp.h>    // omp_get_max_threads, omp_in_parallel, omp_get_thread_num

#include <algorithm>    // std::min
#include <limits>       // std::numeric_limits
#include <mutex>        // std::call_once
#include <type_traits>  // std::is_same_v

#include "error.hpp"
#include "matrix.hpp"

namespace darkbert {

/// Whether gemm reads an operand transposed (op(A) = Aᵀ).
enum class Transpose : bool { no = false, yes = true };

namespace detail {

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
  // Split the wider output dimension into blocks of whole 64-byte vectors. Each thread's call packs the
  // operand the threads share (A when columns are split, B when rows are), so splitting the wider
  // dimension re-packs the smaller operand (docs/performance.md, "Training batches").
  constexpr Index lanes = 64 / sizeof(T);
  const bool split_columns = n >= m;
  const Index extent = split_columns ? n : m;
  const Index chunk = ((extent + threads - 1) / threads + lanes - 1) / lanes * lanes;
  // Split only when every block, the last and smallest too, stays above OpenBLAS's small-matrix limit:
  // then each element is the packed path's sum, as in one call, whatever the thread count. Otherwise one
  // call for any count; a block that small would gain little from a second thread anyway.
  const Index last = extent - (extent - 1) / chunk * chunk;
  const double smallest_block = double(m) * double(n) * double(k) / double(extent) * double(last);
  if (threads == 1 || extent <= chunk || smallest_block <= detail::blas_small_matrix_limit) {
    detail::blas_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const Index begin = std::min(extent, chunk * omp_get_thread_num());
    const Index end = std::min(extent, begin + chunk);
    if (end > begin) {
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
}

}  // namespace darkbert
