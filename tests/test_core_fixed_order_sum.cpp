// fixed_order_sum, and the loss's log_sum_exp built on it: the same bits wherever the data sits.
#include <doctest/doctest.h>

#include <algorithm>  // std::copy
#include <cmath>      // std::abs, std::exp, std::log
#include <random>     // std::mt19937_64
#include <vector>     // std::vector

#include "darkbert/core/fixed_order_sum.hpp"
#include "darkbert/kernels/loss.hpp"

TEST_CASE("fixed_order_sum gives the same bits wherever the data sits") {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> buffer(200);
  for (darkbert::Index n : {1, 15, 16, 17, 128, 150}) {
    std::vector<float> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = u(rng);
    const float at_start = darkbert::fixed_order_sum(values.data(), n);
    for (darkbert::Index offset = 1; offset < 8; ++offset) {
      std::copy(values.begin(), values.end(), buffer.begin() + offset);
      CHECK(darkbert::fixed_order_sum(buffer.data() + offset, n) == at_start);
    }
    double exact = 0;
    for (float v : values) exact += v;
    CHECK(std::abs(at_start - exact) < 1e-5 * exact);
  }
}

TEST_CASE("log_sum_exp of a vocabulary-sized row: exact to float precision, independent of alignment") {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> logit(0.0f, 4.0f);
  const darkbert::Index n = 50257;  // GPT-2's vocabulary: chunks plus a ragged tail
  std::vector<float> row(static_cast<std::size_t>(n));
  for (auto& v : row) v = logit(rng);
  double max = row[0], sum = 0;
  for (float v : row) max = std::max(max, static_cast<double>(v));
  for (float v : row) sum += std::exp(static_cast<double>(v) - max);
  const float lse = darkbert::kernels::log_sum_exp(row.data(), n);
  CHECK(lse == doctest::Approx(max + std::log(sum)).epsilon(1e-6));
  std::vector<float> shifted(row.size() + 7);
  for (darkbert::Index offset = 1; offset < 8; ++offset) {
    std::copy(row.begin(), row.end(), shifted.begin() + offset);
    CHECK(darkbert::kernels::log_sum_exp(shifted.data() + offset, n) == lse);
  }
}
