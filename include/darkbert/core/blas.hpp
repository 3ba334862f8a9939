#pragma once
// Thin, typed wrapper over CBLAS GEMM (OpenBLAS): the large products go here, everything else is Eigen
// or plain loops. Row-major throughout.

#include <cblas.h>  // cblas_sgemm, cblas_dgemm

#include <limits>       // std::numeric_limits
#include <type_traits>  // std::is_same_v

#include "error.hpp"
#include "matrix.hpp"

namespace darkbert {

enum class Transpose : bool { no = false, yes = true };

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, with leading dimensions lda, ldb, ldc (row-major).
template <class T>
void gemm(Transpose trans_a, Transpose trans_b, Index m, Index n, Index k, T alpha, const T* a, Index lda,
          const T* b, Index ldb, T beta, T* c, Index ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "gemm: float or double");
  constexpr Index max_int = std::numeric_limits<int>::max();
  if (m > max_int || n > max_int || k > max_int || lda > max_int || ldb > max_int || ldc > max_int)
    fail("gemm: dimension beyond the 32-bit BLAS interface (", m, " x ", n, " x ", k, ")");
  const auto ta = trans_a == Transpose::yes ? CblasTrans : CblasNoTrans;
  const auto tb = trans_b == Transpose::yes ? CblasTrans : CblasNoTrans;
  const auto i = [](Index v) { return static_cast<int>(v); };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
}

}  // namespace darkbert
