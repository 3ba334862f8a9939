// xwt_gemm: y = x Wᵀ with a per-row epilogue, on ragged shapes (partial panels, partial tiles, K not a
// multiple of 16), against a double-precision reference; the kernel and BLAS paths agree; the result does
// not depend on the thread count; the epilogue sees every element exactly once. The AVX2 kernel
// (core/detail/xwt_kernel_avx2.hpp) is also called directly, whatever path this process runs: ragged
// shapes down to 1 row and K = 1, the same bits at any thread count and buffer address, and the AVX-512
// kernel's bits. The driver with x's rows as the kernel's A (xwt_gemm_row_blocks) gives the W-major
// driver's bits on either kernel, on ragged shapes and at any thread count.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/core/tensor.hpp"  // AlignedAllocator
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
void reference_product(const std::vector<T>& x, const std::vector<T>& w, Index rows, Index in, Index out,
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
  reference_product(x, w, rows, in, out, expected, magnitude);
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
  using darkbert::KernelPath;
  using darkbert::xwt_kernel_chosen;
  CHECK(xwt_kernel_chosen(128, 768, KernelPath::avx512));
  CHECK(xwt_kernel_chosen(1024, 768, KernelPath::avx512));
  CHECK(xwt_kernel_chosen(128, 3072, KernelPath::avx512));
  // OpenBLAS keeps the long-K product at many rows only when it runs its own AVX-512 kernels.
  CHECK(xwt_kernel_chosen(1024, 3072, KernelPath::avx512) == !darkbert::is_avx512_core(darkbert::blas_core_name()));
  CHECK_FALSE(xwt_kernel_chosen(8, 768, KernelPath::avx512));
  // The AVX2 kernel against OpenBLAS's Haswell kernels: every BERT-base and study-model layer shape.
  for (Index rows : {128, 1024})
    for (Index in : {128, 512, 768, 3072}) CHECK(xwt_kernel_chosen(rows, in, KernelPath::avx2));
  CHECK(xwt_kernel_chosen(8, 768, KernelPath::avx2));
  CHECK_FALSE(xwt_kernel_chosen(4, 768, KernelPath::avx2));
  CHECK(darkbert::xwt_kernel_available<float>() == (darkbert::kernel_path() != KernelPath::blas));
  CHECK_FALSE(darkbert::xwt_kernel_available<double>());
}

TEST_CASE("xwt_gemm: x's rows as the kernel's A where they were measured to win") {
  using darkbert::xwt_row_blocks_chosen;
  // Training batches of the study and mini models (16-64 x 128 tokens) and their language-model heads.
  for (Index rows : {512, 2048, 8192}) {
    CHECK(xwt_row_blocks_chosen(rows, 128, 384));
    CHECK(xwt_row_blocks_chosen(rows, 512, 128));
    CHECK(xwt_row_blocks_chosen(rows, 1024, 256));
    CHECK(xwt_row_blocks_chosen(rows, 128, 50257));
  }
  // BERT-base's layers, and every product of under 512 rows (inference on a few sequences).
  for (auto [in, out] : {std::array<Index, 2>{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}}) {
    CHECK_FALSE(xwt_row_blocks_chosen(128, in, out));
    CHECK_FALSE(xwt_row_blocks_chosen(1024, in, out));
  }
  CHECK_FALSE(xwt_row_blocks_chosen(511, 128, 128));
}

#if DARKBERT_HAS_AVX512_KERNEL || DARKBERT_HAS_AVX2_KERNEL
namespace {
// Both drivers of one kernel on the same product, with the epilogue "add o + 1" counting its visits.
template <class Kernel, class WMajor>
void check_row_blocks(WMajor w_major) {
  for (const auto& shape : {std::array<Index, 3>{1, 1, 1}, {5, 7, 3}, {13, 33, 70}, {37, 130, 100}, {70, 16, 33},
                             {600, 128, 200}, {530, 300, 45}})
    for (int threads : {1, 2}) {
      const Index rows = shape[0], in = shape[1], out = shape[2];
      CAPTURE(rows);
      CAPTURE(in);
      CAPTURE(out);
      CAPTURE(threads);
      const auto x = random_values<float>(rows * in, 41 + rows), w = random_values<float>(out * in, 42 + out);
      std::vector<float> by_rows(static_cast<std::size_t>(rows * out), -1.0f), by_w(by_rows.size(), -2.0f);
      std::vector<int> visits(by_rows.size(), 0);
      auto epilogue_on = [&](std::vector<float>& y, bool count) {
        return [&y, &visits, out, count](float* part, Index first, Index n) {
          const Index row = (part - first - y.data()) / out;
          for (Index i = 0; i < n; ++i) {
            part[i] += float(first + i + 1);
            if (count) ++visits[static_cast<std::size_t>(row * out + first + i)];
          }
        };
      };
      const int before = darkbert::num_threads();
      darkbert::set_num_threads(threads);
      darkbert::XwtScratch scratch;
      auto count = epilogue_on(by_rows, true);
      darkbert::detail::xwt_gemm_row_blocks<Kernel>(x.data(), rows, in, w.data(), out, by_rows.data(), scratch, count);
      auto plain = epilogue_on(by_w, false);
      w_major(x.data(), rows, in, w.data(), out, by_w.data(), scratch, plain);
      darkbert::set_num_threads(before);
      CHECK(by_rows == by_w);  // bit for bit
      for (int v : visits) REQUIRE(v == 1);
    }
}
}  // namespace

TEST_CASE("xwt_gemm: x's rows as A give W's rows' bits, on each kernel, every element visited once") {
#if DARKBERT_HAS_AVX512_KERNEL
  if (darkbert::cpu_has_avx512())
    check_row_blocks<darkbert::detail::avx512::Kernel>([](auto&&... a) { darkbert::detail::xwt_gemm_avx512(a...); });
#endif
#if DARKBERT_HAS_AVX2_KERNEL
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the AVX2 kernel cannot be tested here");
  check_row_blocks<darkbert::detail::avx2::Kernel>([](auto&&... a) { darkbert::detail::xwt_gemm_avx2(a...); });
#endif
}
#endif

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

#if DARKBERT_HAS_AVX2_KERNEL
namespace {
// xwt_gemm_avx2 called directly (any process path), x and W `offset` floats into their buffers, with the
// epilogue "add o + 1" counting its visits.
std::vector<float> run_avx2(const std::vector<float>& x, const std::vector<float>& w, Index rows, Index in, Index out,
                            std::vector<int>& visits, Index offset = 0) {
  std::vector<float, darkbert::AlignedAllocator<float>> xb(x.size() + 16), wb(w.size() + 16);
  std::copy(x.begin(), x.end(), xb.begin() + offset);
  std::copy(w.begin(), w.end(), wb.begin() + offset);
  std::vector<float> y(static_cast<std::size_t>(rows * out), -12345.0f);
  visits.assign(y.size(), 0);
  darkbert::XwtScratch scratch;
  auto epilogue = [&](float* part, Index first, Index n) {
    const Index row = (part - first - y.data()) / out;
    for (Index i = 0; i < n; ++i) {
      part[i] += float(first + i + 1);
      ++visits[static_cast<std::size_t>(row * out + first + i)];
    }
  };
  darkbert::detail::xwt_gemm_avx2(xb.data() + offset, rows, in, wb.data() + offset, out, y.data(), scratch, epilogue);
  return y;
}
}  // namespace

TEST_CASE("xwt_gemm, AVX2 kernel: ragged shapes against a double reference, every element visited once") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the AVX2 kernel cannot be tested here");
  // rows around the 16-token panel, out around the 6-row tile, in around the 8 × 8 transposes; 1 row, K = 1.
  for (Index rows : {1, 7, 8, 15, 16, 17, 33, 70})
    for (Index out : {1, 5, 6, 7, 13, 100})
      for (Index in : {1, 7, 8, 9, 16, 33, 130}) {
        CAPTURE(rows);
        CAPTURE(out);
        CAPTURE(in);
        const auto x = random_values<float>(rows * in, 11 + rows), w = random_values<float>(out * in, 12 + out);
        std::vector<double> expected, magnitude;
        reference_product(x, w, rows, in, out, expected, magnitude);
        std::vector<int> visits;
        const auto y = run_avx2(x, w, rows, in, out, visits);
        double worst = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
          worst = std::max(worst, std::abs(double(y[i]) - expected[i]) / magnitude[i]);
          REQUIRE(visits[i] == 1);
        }
        CHECK(worst < 1e-6);
      }
}

TEST_CASE("xwt_gemm, AVX2 kernel: the same bits at any thread count and buffer address, and the AVX-512 kernel's") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the AVX2 kernel cannot be tested here");
  for (const auto& shape : {std::array<Index, 3>{77, 96, 50}, {128, 768, 96}, {16, 13, 7}}) {
    const Index rows = shape[0], in = shape[1], out = shape[2];
    CAPTURE(rows);
    const auto x = random_values<float>(rows * in, 21), w = random_values<float>(out * in, 22);
    std::vector<int> visits;
    const int threads = darkbert::num_threads();
    darkbert::set_num_threads(1);
    const auto one = run_avx2(x, w, rows, in, out, visits);
    darkbert::set_num_threads(2);
    const auto two = run_avx2(x, w, rows, in, out, visits);
    darkbert::set_num_threads(threads);
    CHECK(one == two);
    for (Index offset : {1, 3, 8}) CHECK(run_avx2(x, w, rows, in, out, visits, offset) == one);
#if DARKBERT_HAS_AVX512_KERNEL
    if (darkbert::cpu_has_avx512()) {
      // Both kernels add one FMA per k, in increasing k, from 0: the same bits whatever the tile.
      std::vector<float> y512(one.size());
      darkbert::XwtScratch scratch;
      auto epilogue = [&](float* part, Index first, Index n) {
        for (Index i = 0; i < n; ++i) part[i] += float(first + i + 1);
      };
      darkbert::detail::xwt_gemm_avx512(x.data(), rows, in, w.data(), out, y512.data(), scratch, epilogue);
      CHECK(y512 == one);
    }
#endif
  }
}

TEST_CASE("xwt_gemm, AVX2 tile: masked columns and rows write only what exists") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the AVX2 kernel cannot be tested here");
  using darkbert::detail::avx2::kTileColumns;
  using darkbert::detail::avx2::kTileRows;
  const Index K = 19;
  const auto a = random_values<float>(kTileRows * K, 31), b = random_values<float>(K * kTileColumns, 32);
  for (Index columns : {1, 7, 8, 9, 15, 16})
    for (Index c_rows = 1; c_rows <= kTileRows; ++c_rows) {
      CAPTURE(columns);
      CAPTURE(c_rows);
      // B's rows exactly `columns` long (stride = columns): a read past a row would read the next one.
      std::vector<float> bc(static_cast<std::size_t>(K * columns));
      for (Index k = 0; k < K; ++k)
        for (Index t = 0; t < columns; ++t) bc[k * columns + t] = b[k * kTileColumns + t];
      const Index ldc = 20;
      std::vector<float> c(static_cast<std::size_t>(kTileRows * ldc), 99.0f);
      darkbert::detail::avx2::tile_6x16(a.data(), K, bc.data(), columns, columns, K, c.data(), ldc, c_rows);
      for (Index i = 0; i < kTileRows; ++i)
        for (Index t = 0; t < ldc; ++t) {
          const float got = c[i * ldc + t];
          if (i >= c_rows || t >= columns) {
            REQUIRE(got == 99.0f);
            continue;
          }
          double expected = 0;
          for (Index k = 0; k < K; ++k) expected += double(a[i * K + k]) * double(b[k * kTileColumns + t]);
          REQUIRE(std::abs(got - expected) < 1e-5);
        }
    }
}
#endif
