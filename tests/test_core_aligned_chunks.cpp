// transform_in_aligned_chunks: Eigen's vectorised exp/tanh with the same bits wherever the data sits, which
// a plain Eigen::Map does not give (checked here too, so the test shows what it guards against).
#include <doctest/doctest.h>

#include <algorithm>  // std::copy
#include <cmath>      // std::exp, std::tanh
#include <random>     // std::mt19937_64
#include <vector>     // std::vector

#include <Eigen/Core>  // Eigen::Map, Eigen::ArrayXf

#include "darkbert/core/aligned_chunks.hpp"
#include "darkbert/core/tensor.hpp"  // AlignedAllocator

using darkbert::Index;

namespace {
// exp of n values stored at `offset` floats past a 64-byte boundary, through transform_in_aligned_chunks.
std::vector<float> exp_at(const std::vector<float>& values, Index offset) {
  std::vector<float, darkbert::AlignedAllocator<float>> buffer(values.size() + 16);
  float* at = buffer.data() + offset;
  std::copy(values.begin(), values.end(), at);
  const auto n = static_cast<Index>(values.size());
  darkbert::transform_in_aligned_chunks(at, at, n, [](auto chunk) { chunk = (chunk - 1.0f).exp(); });
  return {at, at + n};
}
}  // namespace

TEST_CASE("transform_in_aligned_chunks gives the same bits at every address, and the right values") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-30.0f, 1.0f);
  // Below one packet, ragged, and across chunks (256). At offset 0 the multiples of 16 (16, 48, 128, 512)
  // take the unbuffered path, so they are compared with the buffered one at offsets 1-15.
  for (Index n : {1, 7, 16, 37, 48, 128, 300, 512, 600}) {
    CAPTURE(n);
    std::vector<float> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = u(rng);
    const auto reference = exp_at(values, 0);
    for (Index offset = 1; offset < 16; ++offset) CHECK(exp_at(values, offset) == reference);
    for (Index j = 0; j < n; ++j) {
      const double expected = std::exp(double(values[static_cast<std::size_t>(j)]) - 1.0);
      CHECK(reference[static_cast<std::size_t>(j)] == doctest::Approx(expected).epsilon(1e-6));
    }
  }
}

TEST_CASE("transform_in_aligned_chunks writes out of place and leaves the input") {
  std::vector<float> x = {-1.0f, 0.0f, 0.5f, 2.0f, 3.0f};
  std::vector<float> y(5, 9.0f);
  darkbert::transform_in_aligned_chunks(x.data(), y.data(), 5, [](auto chunk) { chunk = chunk.tanh(); });
  CHECK(x == std::vector<float>{-1.0f, 0.0f, 0.5f, 2.0f, 3.0f});
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(std::tanh(double(x[i]))).epsilon(1e-6));
  darkbert::transform_in_aligned_chunks(x.data(), y.data(), 0, [](auto chunk) { chunk = chunk.tanh(); });  // n = 0
  CHECK(y[0] == doctest::Approx(std::tanh(-1.0)).epsilon(1e-6));
}

TEST_CASE("out of place into an aligned result gives the bits of the buffered path") {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<float> u(-30.0f, 1.0f);
  for (Index n : {64, 256, 320}) {
    CAPTURE(n);
    std::vector<float> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = u(rng);
    std::vector<float, darkbert::AlignedAllocator<float>> y(values.size(), 9.0f);
    darkbert::transform_in_aligned_chunks(values.data(), y.data(), n, [](auto chunk) { chunk = (chunk - 1.0f).exp(); });
    CHECK(std::vector<float>(y.begin(), y.end()) == exp_at(values, 3));  // offset 3: buffered
  }
}

TEST_CASE("a plain Eigen map is what differs: its peeled elements take the scalar exp") {
  // The reason for the header: at some address a plain Map gives other bits for some element. If a later
  // Eigen evaluates every element with its packet code, this test fails and the header can go.
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<float> u(-30.0f, 1.0f);
  std::vector<float> values(64);
  for (auto& v : values) v = u(rng);
  std::vector<float, darkbert::AlignedAllocator<float>> a(80), b(80);
  int differing = 0;
  for (Index offset = 1; offset < 16; ++offset) {
    std::copy(values.begin(), values.end(), a.begin());
    std::copy(values.begin(), values.end(), b.begin() + offset);
    Eigen::Map<Eigen::ArrayXf>(a.data(), 64) = Eigen::Map<Eigen::ArrayXf>(a.data(), 64).exp();
    Eigen::Map<Eigen::ArrayXf>(b.data() + offset, 64) = Eigen::Map<Eigen::ArrayXf>(b.data() + offset, 64).exp();
    for (Index i = 0; i < 64; ++i) differing += a[static_cast<std::size_t>(i)] != b[static_cast<std::size_t>(offset + i)];
  }
  CHECK(differing > 0);
}
