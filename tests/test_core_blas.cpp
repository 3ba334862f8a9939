// gemm over OpenBLAS, split over the threads by output blocks: right against a double reference for every
// transpose, and the same bits at any thread count — including the shapes whose blocks would cross
// OpenBLAS's small-matrix limit (a 64 × 64 weight gradient over 384 rows: a tiny model's batch of 32
// twelve-token sentences, whose bits once depended on the thread count), and on OpenBLAS's AVX2 kernels,
// whose sums depend on the call's extent (640 of 4,000 float cases differed there when the blocks
// followed the thread count; the @avx2 entry runs them).
#include <doctest/doctest.h>
#include <omp.h>  // omp_get_max_threads, omp_set_num_threads

#include <cmath>    // std::abs
#include <cstring>  // std::memcmp
#include <random>   // std::mt19937_64
#include <vector>   // std::vector

#include "darkbert/core/blas.hpp"

namespace {

using darkbert::Index;
using darkbert::Transpose;

// Restores the thread count when the test case ends.
struct BlasThreadCount {
  int saved = omp_get_max_threads();
  ~BlasThreadCount() { omp_set_num_threads(saved); }
};

template <class T>
struct BlasCase {
  Transpose ta, tb;
  Index m, n, k;
  std::vector<T> a, b, c;
  Index lda() const { return ta == Transpose::yes ? m : k; }
  Index ldb() const { return tb == Transpose::yes ? k : n; }
  T a_at(Index i, Index p) const { return ta == Transpose::yes ? a[p * m + i] : a[i * k + p]; }
  T b_at(Index p, Index j) const { return tb == Transpose::yes ? b[j * k + p] : b[p * n + j]; }

  BlasCase(Transpose ta_, Transpose tb_, Index m_, Index n_, Index k_, std::mt19937_64& rng)
      : ta(ta_), tb(tb_), m(m_), n(n_), k(k_), a(m_ * k_), b(k_ * n_), c(m_ * n_) {
    std::normal_distribution<T> normal;
    for (auto* v : {&a, &b, &c})
      for (auto& x : *v) x = normal(rng);
  }
  // C = op(A)·op(B) + beta·C on `threads` threads.
  std::vector<T> run(T beta, int threads) const {
    omp_set_num_threads(threads);
    std::vector<T> out = c;
    darkbert::gemm<T>(ta, tb, m, n, k, T(1), a.data(), lda(), b.data(), ldb(), beta, out.data(), n);
    return out;
  }
};

template <class T>
void check_blas_bits_and_values() {
  const BlasThreadCount restore;
  std::mt19937_64 rng(7);
  const T tolerance = sizeof(T) == 4 ? T(2e-4) : T(1e-11);
  for (const Transpose ta : {Transpose::no, Transpose::yes})
    for (const Transpose tb : {Transpose::no, Transpose::yes})
      for (const Index m : {1, 33, 64, 128, 200})
        for (const Index n : {2, 32, 64, 100, 384})
          for (const Index k : {16, 160, 384, 448, 1000}) {
            const BlasCase<T> t(ta, tb, m, n, k, rng);
            for (const T beta : {T(0), T(1)}) {
              CAPTURE(m);
              CAPTURE(n);
              CAPTURE(k);
              CAPTURE(static_cast<int>(ta));
              CAPTURE(static_cast<int>(tb));
              CAPTURE(beta);
              const std::vector<T> one = t.run(beta, 1);
              for (const int threads : {2, 3, 4}) {
                CAPTURE(threads);
                CHECK(std::memcmp(t.run(beta, threads).data(), one.data(), one.size() * sizeof(T)) == 0);
              }
              double worst = 0;
              for (Index i = 0; i < m; ++i)
                for (Index j = 0; j < n; j += 7) {
                  double want = double(beta) * double(t.c[i * n + j]);
                  for (Index p = 0; p < k; ++p) want += double(t.a_at(i, p)) * double(t.b_at(p, j));
                  worst = std::max(worst, std::abs(want - double(one[i * n + j])) / std::sqrt(double(k)));
                }
              CHECK(worst < tolerance);
            }
          }
}

}  // namespace

TEST_CASE("gemm: every transpose right, and the same bits at 1, 2, 3 and 4 threads (float)") {
  check_blas_bits_and_values<float>();
}

TEST_CASE("gemm: every transpose right, and the same bits at 1, 2, 3 and 4 threads (double)") {
  check_blas_bits_and_values<double>();
}
