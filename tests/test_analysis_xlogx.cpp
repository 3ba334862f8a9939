// The vectorised x ln x kernels agree with std::log (in long double) to the documented accuracy over the whole
// range attention weights take, give exactly 0 at 0, and the row sums equal naive loops.

#include <doctest/doctest.h>

#include <cmath>   // std::log, std::exp
#include <limits>  // std::numeric_limits
#include <random>  // std::mt19937_64
#include <vector>  // std::vector

#include "darkbert/analysis/xlogx.hpp"

using darkbert::Index;
using namespace darkbert::detail;

TEST_CASE("x ln x accuracy: float below 2e-7 relative, double below 2 ulp") {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst_float = 0, worst_double = 0;
  for (int k = 0; k < 200000; ++k) {
    // Log-uniform over [1e-300, 1] (double) plus plain uniform values; 1 and powers of two included below.
    const double x = k % 2 ? u(rng) : std::exp(-690.0 * u(rng));
    const long double ref = static_cast<long double>(x) * std::log(static_cast<long double>(x));
    if (ref != 0) worst_double = std::max(worst_double, double(std::abs((xlogx(x) - ref) / ref)));
    const float xf = static_cast<float>(x);
    if (xf >= std::numeric_limits<float>::min()) {
      const long double reff = static_cast<long double>(xf) * std::log(static_cast<long double>(xf));
      if (reff != 0) worst_float = std::max(worst_float, double(std::abs((xlogx(xf) - reff) / reff)));
    }
  }
  MESSAGE("worst relative error: float " << worst_float << ", double " << worst_double);
  CHECK(worst_float < 2e-7);
  CHECK(worst_double < 2 * std::numeric_limits<double>::epsilon());
  for (double p : {0.5, 0.25, 0.125, 2.0 / 3.0, 0.70710678118654752, 0.70710678118654757}) {
    CHECK(std::abs(xlogx(p) - p * std::log(p)) <= 2 * std::numeric_limits<double>::epsilon() * std::abs(p * std::log(p)));
  }
  CHECK(xlogx(0.0) == 0.0);
  CHECK(xlogx(0.0f) == 0.0f);
  CHECK(xlogx(1.0) == 0.0);
  CHECK(xlogx(1.0f) == 0.0f);
  CHECK(std::abs(xlogx(1e-310)) < 1e-305);   // subnormal: tiny, finite
  CHECK(std::abs(xlogx(1e-40f)) < 1e-36f);
}

TEST_CASE_TEMPLATE("row sums equal naive loops", T, float, double) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (Index k : {1, 3, 16, 17, 128, 131}) {
    std::vector<T> p(static_cast<std::size_t>(k)), q(p.size());
    for (auto& v : p) v = static_cast<T>(u(rng));
    for (auto& v : q) v = static_cast<T>(u(rng) < 0.2 ? 0.0 : u(rng));  // some zeros
    long double naive = 0, naive_mix = 0;
    for (Index j = 0; j < k; ++j) {
      const long double a = p[j], b = 0.5L * (static_cast<long double>(p[j]) + q[j]);
      naive += a * std::log(a);
      if (b > 0) naive_mix += b * std::log(b);
    }
    const double tol = (std::is_same_v<T, float> ? 1e-6 : 1e-14) * static_cast<double>(k);
    CHECK(std::abs(xlogx_sum(p.data(), k) - naive) <= tol);
    CHECK(std::abs(mixture_xlogx_sum(p.data(), q.data(), k) - naive_mix) <= tol);
  }
}
