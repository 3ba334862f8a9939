// Activations (kernels/activation.hpp): every float activation and the GELU backward on the avx2 path's
// intrinsics (called directly, whatever path this process runs) against double references, on lengths
// around the 8-lane vector and at any buffer address; and the dispatched bias_epilogue / activation_backward
// of this process's path against the same references.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "darkbert/core/tensor.hpp"  // AlignedAllocator
#include "darkbert/kernels/activation.hpp"

namespace {
using darkbert::Activation;
using darkbert::Index;

double reference_activation(Activation f, double x) {
  switch (f) {
    case Activation::gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(darkbert::kernels::kSqrtTwoOverPi * (x + 0.044715 * x * x * x)));
    case Activation::tanh: return std::tanh(x);
    case Activation::relu: return x > 0 ? x : 0;
    case Activation::none: return x;
  }
  return x;
}

// f'(x) by a central difference in double (the functions are smooth; h balances truncation and rounding).
double reference_derivative(Activation f, double x) {
  const double h = 1e-5;
  return (reference_activation(f, x + h) - reference_activation(f, x - h)) / (2 * h);
}

// n values: a normal spread over [-6, 6] plus the edges of the approximations (0, the tanh series' 0.4,
// erf's clamp at ±4·sqrt 2, large magnitudes).
std::vector<float> inputs(Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 2.5);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = static_cast<float>(normal(rng));
  const float edges[] = {0.0f, 0.4f, -0.4f, 0.39999f, 5.657f, -5.657f, 30.0f, -30.0f, 1e-6f, -1e-3f};
  for (std::size_t i = 0; i < v.size() && i < std::size(edges); ++i) v[i * 3 % v.size()] = edges[i];
  return v;
}
}  // namespace

#if DARKBERT_HAS_AVX2_KERNEL
TEST_CASE("activations on the avx2 path match double references at every length and address") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the avx2 path cannot be tested here");
  for (Activation f : {Activation::gelu_erf, Activation::gelu_tanh, Activation::tanh})
    for (Index n : {1, 7, 8, 9, 16, 33, 1000}) {
      CAPTURE(static_cast<int>(f));
      CAPTURE(n);
      const auto x = inputs(n, 5 + n);
      std::vector<float> first;
      for (Index offset = 0; offset < 8; ++offset) {
        std::vector<float, darkbert::AlignedAllocator<float>> buffer(x.size() + 8, -3.0f);
        std::copy(x.begin(), x.end(), buffer.begin() + offset);
        darkbert::kernels::detail::activate_avx2(buffer.data() + offset, n, f);
        for (Index i = 0; i < offset; ++i) REQUIRE(buffer[i] == -3.0f);  // nothing before the row is written
        for (Index i = offset + n; i < Index(buffer.size()); ++i) REQUIRE(buffer[i] == -3.0f);  // nor after it
        std::vector<float> y(buffer.begin() + offset, buffer.begin() + offset + n);
        if (offset == 0) {
          for (Index i = 0; i < n; ++i) {
            const double expected = reference_activation(f, x[i]);
            CAPTURE(x[i]);
            // tanh: within a few ulp. The GELUs: 0.5 x (1 + erf or tanh) carries the approximations' absolute
            // error (≈1e-7, as the scalar float code) times |x| where 1 + erf cancels, so absolute there.
            if (f == Activation::tanh) REQUIRE(std::abs(y[i] - expected) <= 5e-7 * std::abs(expected));
            else REQUIRE(std::abs(y[i] - expected) <= 5e-7 + 1e-6 * std::abs(expected));
          }
          first = y;
        } else {
          CHECK(y == first);  // the same bits at any address
        }
      }
    }
}

TEST_CASE("the GELU backward on the avx2 path matches the derivative at every length and address") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the avx2 path cannot be tested here");
  for (Activation f : {Activation::gelu_erf, Activation::gelu_tanh})
    for (Index n : {1, 7, 8, 9, 33, 256}) {
      CAPTURE(static_cast<int>(f));
      CAPTURE(n);
      const auto x = inputs(n, 50 + n);
      const auto grad_in = inputs(n, 90 + n);
      std::vector<float> first;
      for (Index offset = 0; offset < 8; ++offset) {
        std::vector<float, darkbert::AlignedAllocator<float>> xb(x.size() + 8), gb(x.size() + 8, -3.0f);
        std::copy(x.begin(), x.end(), xb.begin() + offset);
        std::copy(grad_in.begin(), grad_in.end(), gb.begin() + offset);
        darkbert::kernels::detail::gelu_backward_avx2(xb.data() + offset, gb.data() + offset, n, f);
        for (Index i = offset + n; i < Index(gb.size()); ++i) REQUIRE(gb[i] == -3.0f);
        std::vector<float> g(gb.begin() + offset, gb.begin() + offset + n);
        if (offset == 0) {
          for (Index i = 0; i < n; ++i) {
            CAPTURE(x[i]);
            const double expected = grad_in[i] * reference_derivative(f, x[i]);
            REQUIRE(std::abs(g[i] - expected) <= 2e-6 * (1 + std::abs(expected)));
          }
          first = g;
        } else {
          CHECK(g == first);
        }
      }
    }
}
#endif

TEST_CASE("the dispatched activations of this process's kernel path match double references") {
  // Under the <test>@<path> entries (tests/CMakeLists.txt) this runs each path's code through the dispatch.
  for (Activation f : {Activation::gelu_erf, Activation::gelu_tanh, Activation::tanh, Activation::relu}) {
    CAPTURE(static_cast<int>(f));
    const Index n = 301;
    const auto x = inputs(n, 7), bias = inputs(n, 8), grad_in = inputs(n, 9);
    std::vector<float> y = x, pre(static_cast<std::size_t>(n));
    darkbert::kernels::bias_epilogue(y.data(), bias.data(), n, f, pre.data());
    std::vector<float> g = grad_in;
    darkbert::kernels::activation_backward(pre.data(), y.data(), g.data(), n, f);
    for (Index i = 0; i < n; ++i) {
      REQUIRE(pre[i] == x[i] + bias[i]);
      REQUIRE(std::abs(y[i] - reference_activation(f, pre[i])) <= 1e-6 * (1 + std::abs(reference_activation(f, pre[i]))));
      if (f == Activation::relu && std::abs(pre[i]) < 1e-4) continue;  // the kink
      const double expected = grad_in[i] * reference_derivative(f, pre[i]);
      // gelu_tanh's float derivative loses to 1 - t² where |t| -> 1, then grows as x³: a bound to match
      const double x3 = std::abs(double(pre[i]) * pre[i] * pre[i]);
      REQUIRE(std::abs(g[i] - expected) <= 2e-6 * (1 + std::abs(expected)) + 1e-7 * std::abs(grad_in[i]) * x3);
    }
  }
}
