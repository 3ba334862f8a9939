#pragma once
// Thin, typed wrapper over CBLAS GEMM (OpenBLAS): the large products go here, everything else is Eigen
// or plain loops. Row-major throughout.

#include <cblas.h>  // cblas_sgemm, cblas_dgemm

#include <type_traits>  // std::is_same_v

namespace darkbert {

enum class Transpose : bool { no = false, yes = true };

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, with leading dimensions lda, ldb, ldc (row-major).
template <class T>
void gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, T alpha, const T* a, int lda,
          const T* b, int ldb, T beta, T* c, int ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "gemm: float or double");
  const auto ta = trans_a == Transpose::yes ? CblasTrans : CblasNoTrans;
  const auto tb = trans_b == Transpose::yes ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace darkbert
