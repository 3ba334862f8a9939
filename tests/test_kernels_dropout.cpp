// Dropout masks: the integer comparison the vector loops use is keep() exactly, and dropout_apply gives
// the scalar reference's bits on every kernel path (the @avx2 and @blas entries), in place and into another
// buffer, at any length, offset and thread count.
#include <doctest/doctest.h>
#include <omp.h>  // omp_get_max_threads, omp_set_num_threads

#include <algorithm>  // std::all_of, std::count_if
#include <cmath>    // std::nextafter
#include <cstdint>  // std::uint64_t
#include <cstring>  // std::memcmp
#include <random>   // std::mt19937_64
#include <vector>   // std::vector

#include "darkbert/core/counter_rng.hpp"
#include "darkbert/kernels/dropout.hpp"

namespace {
using darkbert::kernels::DropoutMask;

// The probabilities the recipes use, awkward ones, and the edges of the 24-bit grid.
std::vector<float> dropout_probabilities() {
  std::vector<float> ps{0.05f, 0.1f, 0.15f, 0.2f, 1.0f / 3.0f, 0.5f, 0.99f, 1e-8f, 0.999999f};
  for (std::uint64_t k : {1, 2, 1677722, 8388608, 16777215}) {
    const float on_grid = static_cast<float>(k) / 16777216.0f;
    ps.insert(ps.end(), {on_grid, std::nextafter(on_grid, 0.0f), std::nextafter(on_grid, 1.0f)});
  }
  return ps;
}

// x[i] * (keep ? 1 / (1 - p) : 0), element by element through DropoutMask::keep.
template <class T>
std::vector<T> dropout_reference(std::vector<T> x, std::uint64_t first, const DropoutMask& m) {
  const T scale = T(1) / (T(1) - static_cast<T>(m.p));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = m.keep(first + i) ? x[i] * scale : T(0);
  return x;
}

template <class T>
void check_dropout_bits() {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  for (float p : {0.1f, 0.2f, 1.0f / 3.0f}) {
    for (darkbert::Index n : {1, 7, 16, 17, 1000, 40001}) {  // 40,001 > 2^15: split over the threads
      for (std::uint64_t first : {0, 3, 123457}) {
        std::vector<T> x(static_cast<std::size_t>(n));
        for (auto& v : x) v = static_cast<T>(normal(rng));
        const DropoutMask m{p, darkbert::stream_key(5, 17, 3)};
        const auto expected = dropout_reference(x, first, m);
        for (int threads : {1, 2}) {
          const int before = omp_get_max_threads();
          omp_set_num_threads(threads);
          auto got = x;
          darkbert::kernels::dropout_apply(got.data(), n, static_cast<darkbert::Index>(first), m);
          std::vector<T> into(x.size(), T(7));  // out of place: the input stays, the result is the same
          darkbert::kernels::dropout_apply(x.data(), into.data(), n, static_cast<darkbert::Index>(first), m);
          omp_set_num_threads(before);
          CAPTURE(p);
          CAPTURE(n);
          CAPTURE(first);
          CAPTURE(threads);
          CHECK(std::memcmp(got.data(), expected.data(), sizeof(T) * x.size()) == 0);
          CHECK(std::memcmp(into.data(), expected.data(), sizeof(T) * x.size()) == 0);
        }
      }
    }
  }
}
}  // namespace

TEST_CASE("dropout: the integer threshold keeps exactly the elements keep() keeps") {
  for (float p : dropout_probabilities()) {
    CAPTURE(p);
    const DropoutMask m{p, 0};
    const std::uint64_t threshold = m.keep_threshold();
    // Every 24-bit value near the threshold, and a spread over the whole range.
    for (std::uint64_t u = threshold > 3 ? threshold - 3 : 0; u < threshold + 4 && u < (1ULL << 24); ++u)
      CHECK((u >= threshold) == (static_cast<float>(u) * (1.0f / 16777216.0f) >= p));
    for (std::uint64_t u = 0; u < (1ULL << 24); u += 4099)
      CHECK((u >= threshold) == (static_cast<float>(u) * (1.0f / 16777216.0f) >= p));
    // And through the generator itself.
    for (std::uint64_t key : {std::uint64_t{1}, darkbert::stream_key(3, 1200, 7)}) {
      const DropoutMask keyed{p, key};
      for (std::uint64_t i = 0; i < 2000; ++i)
        CHECK(((darkbert::counter_bits(key, i) >> 40) >= threshold) == keyed.keep(i));
    }
  }
}

TEST_CASE("dropout: dropout_apply gives the element-wise reference's bits, float and double, in place or not, at any length, offset and thread count") {
  check_dropout_bits<float>();
  check_dropout_bits<double>();
}

TEST_CASE("dropout: p = 0 leaves the values untouched; the kept share is near 1 - p") {
  std::vector<float> x(100000, 1.0f);
  darkbert::kernels::dropout_apply(x.data(), static_cast<darkbert::Index>(x.size()), 0, DropoutMask{0.0f, 9});
  CHECK(std::all_of(x.begin(), x.end(), [](float v) { return v == 1.0f; }));
  std::vector<float> copied(x.size(), 3.0f);  // out of place, p = 0: a copy
  darkbert::kernels::dropout_apply(x.data(), copied.data(), static_cast<darkbert::Index>(x.size()), 0, DropoutMask{0.0f, 9});
  CHECK(copied == x);
  darkbert::kernels::dropout_apply(x.data(), static_cast<darkbert::Index>(x.size()), 0, DropoutMask{0.2f, 9});
  const auto kept = std::count_if(x.begin(), x.end(), [](float v) { return v != 0.0f; });
  CHECK(static_cast<double>(kept) / 100000.0 == doctest::Approx(0.8).epsilon(0.01));
  CHECK(std::all_of(x.begin(), x.end(), [](float v) { return v == 0.0f || v == 1.0f / (1.0f - 0.2f); }));
}
