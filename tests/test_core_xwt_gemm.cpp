// xwt_gemm: y = x Wᵀ with a per-row epilogue, on ragged shapes (partial panels, partial tiles, K not a
// multiple of 16), against a double-precision reference; the kernel and BLAS paths agree; the result does
// not depend on the thread count; the epilogue sees every element exactly once.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/core/threads.hpp"
#include "darkbert/core/xwt_gemm.hpp"

namespace {
using darkbert::Index;

template <class T>
std::vector<T> random_values(Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = static_cast<T>(u(rng));
  return v;
}

// y[r, o] = Σ_k x[r, k] w[o, k] + (o + 1), in double; also the bound Σ_k |x||w| for the tolerance.
template <class T>
void reference(const std::vector<T>& x, const std::vector<T>& w, Index rows, Index in, Index out,
               std::vector<double>& y, std::vector<double>& magnitude) {
  y.assign(static_cast<std::size_t>(rows * out), 0.0);
  magnitude = y;
  for (Index r = 0; r < rows; ++r)
    for (Index o = 0; o < out; ++o) {
      double s = 0, m = 0;
      for (Index k = 0; k < in; ++k) {
        s += double(x[r * in + k]) * double(w[o * in + k]);
        m += std::abs(double(x[r * in + k]) * double(w[o * in + k]));
      }
      y[r * out + o] = s + double(o + 1);
      magnitude[r * out + o] = m + double(o + 1);
    }
}

// Runs xwt_gemm with the epilogue "add o + 1" and counts how often each element was passed to it.
template <class T>
std::vector<T> run(const std::vector<T>& x, const std::vector<T>& w, Index rows, Index in, Index out,
                   std::vector<int>& visits) {
  std::vector<T> y(static_cast<std::size_t>(rows * out), T(-12345));
  visits.assign(y.size(), 0);
  darkbert::XwtScratch scratch;
  darkbert::xwt_gemm<T>(x.data(), rows, in, w.data(), out, y.data(), scratch, [&](T* part, Index first, Index n) {
    const Index row = (part - first - y.data()) / out;
    for (Index i = 0; i < n; ++i) {
      part[i] += T(first + i + 1);
      ++visits[static_cast<std::size_t>(row * out + first + i)];
    }
  });
  return y;
}

template <class T>
void check_shape(Index rows, Index in, Index out, double tolerance) {
  CAPTURE(rows);
  CAPTURE(in);
  CAPTURE(out);
  const auto x = random_values<T>(rows * in, 1 + rows), w = random_values<T>(out * in, 2 + out);
  std::vector<double> expected, magnitude;
  reference(x, w, rows, in, out, expected, magnitude);
  std::vector<int> visits;
  const auto y = run(x, w, rows, in, out, visits);
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    worst = std::max(worst, std::abs(double(y[i]) - expected[i]) / magnitude[i]);
    REQUIRE(visits[i] == 1);
  }
  CHECK(worst < tolerance);
}
}  // namespace

TEST_CASE("xwt_gemm matches a double reference on ragged shapes, float and double") {
  for (Index rows : {1, 15, 16, 31, 32, 33, 70})
    for (Index out : {1, 11, 12, 13, 25, 100})
      for (Index in : {1, 7, 16, 33, 130}) {
        check_shape<float>(rows, in, out, 1e-6);
        check_shape<double>(rows, in, out, 1e-14);
      }
  // Long K with many rows (BLAS, when OpenBLAS runs its AVX-512 kernels), and a BERT-sized kernel shape.
  check_shape<float>(300, 1100, 20, 1e-6);
  check_shape<float>(128, 768, 96, 1e-6);
}

TEST_CASE("xwt_gemm: the kernel is chosen where it was measured to win") {
  CHECK(darkbert::xwt_kernel_chosen(128, 768));
  CHECK(darkbert::xwt_kernel_chosen(1024, 768));
  CHECK(darkbert::xwt_kernel_chosen(128, 3072));
  // OpenBLAS keeps the long-K product at many rows only when it runs its own AVX-512 kernels.
  CHECK(darkbert::xwt_kernel_chosen(1024, 3072) == !darkbert::is_avx512_core(darkbert::blas_core_name()));
  CHECK_FALSE(darkbert::xwt_kernel_chosen(8, 768));
  CHECK(darkbert::xwt_kernel_available<float>() == (darkbert::kernel_path() == darkbert::KernelPath::avx512));
  CHECK_FALSE(darkbert::xwt_kernel_available<double>());
}

TEST_CASE("xwt_gemm: the kernel and BLAS agree, and the result does not depend on the thread count") {
  const Index rows = 77, in = 96, out = 50;
  const auto x = random_values<float>(rows * in, 7), w = random_values<float>(out * in, 8);
  std::vector<int> visits;
  const int threads = darkbert::num_threads();
  darkbert::set_num_threads(1);
  const auto one = run(x, w, rows, in, out, visits);
  darkbert::set_num_threads(2);
  const auto two = run(x, w, rows, in, out, visits);
  darkbert::set_num_threads(threads);
  CHECK(one == two);  // bit for bit

  std::vector<float> blas(static_cast<std::size_t>(rows * out));
  darkbert::gemm<float>(darkbert::Transpose::no, darkbert::Transpose::yes, rows, out, in, 1.0f, x.data(), in, w.data(),
                        in, 0.0f, blas.data(), out);
  double worst = 0;
  for (Index r = 0; r < rows; ++r)
    for (Index o = 0; o < out; ++o)
      worst = std::max(worst, double(std::abs(one[r * out + o] - (blas[r * out + o] + float(o + 1)))));
  CHECK(worst < 1e-4);
}
