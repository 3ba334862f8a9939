// AdamW's element-wise update (kernels/adamw_update.hpp): the avx512 and avx2 blocks (called directly,
// whatever path this process runs) give exactly the bits of the update written with std::fma, at every
// length around the 8- and 16-lane blocks and at any buffer address, and never touch an element past the
// end; the dispatched update of this process's path matches it too.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "darkbert/kernels/adamw_update.hpp"

namespace {
using darkbert::Index;
using darkbert::kernels::AdamWUpdate;

// One block of parameters, gradients and moments with `pad` sentinel elements after each, so a write
// past the end shows.
struct Block {
  std::vector<float> p, g, m, v;
};

constexpr Index kPad = 17;
constexpr float kSentinel = -12345.0f;

Block block(Index n, Index offset, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto size = static_cast<std::size_t>(offset + n + kPad);
  Block b{std::vector<float>(size, kSentinel), std::vector<float>(size, kSentinel), std::vector<float>(size, kSentinel),
          std::vector<float>(size, kSentinel)};
  for (Index i = offset; i < offset + n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    b.p[k] = normal(rng);
    b.g[k] = 0.01f * normal(rng);
    b.m[k] = 0.001f * normal(rng);
    b.v[k] = 1e-6f * std::abs(normal(rng));  // the second moment is never negative
  }
  return b;
}

// x rounded to float on its own (never fused into an FMA by the compiler).
float rounded(float x) {
  volatile float r = x;
  return r;
}

// The update of kernels/adamw_update.hpp with its two FMAs written out.
void reference(Block& b, Index offset, Index n, const AdamWUpdate<float>& u) {
  for (Index i = offset; i < offset + n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const float gi = b.g[k] * u.grad_scale;
    b.m[k] = std::fma(u.beta1, b.m[k], (1.0f - u.beta1) * gi);
    b.v[k] = std::fma(u.beta2, b.v[k], rounded((1.0f - u.beta2) * gi) * gi);
    b.p[k] = rounded(b.p[k] * u.decay) - rounded(u.rate * (b.m[k] / u.correction1)) / (std::sqrt(b.v[k] / u.correction2) + u.eps);
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const AdamWUpdate<float> kUpdate{.beta1 = 0.9f,
                                 .beta2 = 0.999f,
                                 .correction1 = 1.0f - 0.9f * 0.9f * 0.9f,
                                 .correction2 = 1.0f - 0.999f * 0.999f * 0.999f,
                                 .grad_scale = 0.73f,
                                 .rate = 3e-3f,
                                 .eps = 1e-8f,
                                 .decay = 1.0f - 3e-3f * 0.01f};

// Runs `update` on blocks of every length 0-40 and 1,000 at offsets 0-3 and checks it against reference.
template <class Update>
void check_against_reference(Update update) {
  for (Index n : {0, 1, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 40, 1000})
    for (Index offset = 0; offset < 4; ++offset) {
      CAPTURE(n);
      CAPTURE(offset);
      Block got = block(n, offset, static_cast<std::uint64_t>(n * 7 + offset));
      Block want = got;
      update(got.p.data() + offset, got.g.data() + offset, got.m.data() + offset, got.v.data() + offset, n, kUpdate);
      reference(want, offset, n, kUpdate);
      CHECK(same_bits(got.p, want.p));  // also the sentinels after the end: nothing written past it
      CHECK(same_bits(got.m, want.m));
      CHECK(same_bits(got.v, want.v));
      CHECK(same_bits(got.g, want.g));
    }
}

}  // namespace

#if DARKBERT_HAS_AVX512_KERNEL && DARKBERT_HAS_AVX2_KERNEL
TEST_CASE("the avx512 and avx2 AdamW updates give the bits of the std::fma update at every length and address") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the avx2 update cannot be tested here");
  check_against_reference(darkbert::kernels::detail::adamw_update_avx2);
  if (darkbert::cpu_has_avx512())
    check_against_reference(darkbert::kernels::detail::adamw_update_avx512);
  else
    MESSAGE("this CPU has no AVX-512: only the avx2 update was checked");
}
#endif

TEST_CASE("the dispatched AdamW update of this process's kernel path matches the std::fma update") {
  const auto path = darkbert::kernel_path();
  if (path != darkbert::KernelPath::blas) {
    check_against_reference(darkbert::kernels::adamw_update<float>);
    return;
  }
  // The blas path runs the plain loop, which the compiler may or may not contract into FMAs (it does
  // with -march=native): the same values to rounding.
  Block got = block(1000, 1, 99), want = got;
  darkbert::kernels::adamw_update(got.p.data() + 1, got.g.data() + 1, got.m.data() + 1, got.v.data() + 1, 1000, kUpdate);
  reference(want, 1, 1000, kUpdate);
  for (std::size_t k = 0; k < got.p.size(); ++k) {
    CAPTURE(k);
    REQUIRE(got.p[k] == doctest::Approx(want.p[k]).epsilon(1e-6));
    REQUIRE(got.m[k] == doctest::Approx(want.m[k]).epsilon(1e-5));
    REQUIRE(got.v[k] == doctest::Approx(want.v[k]).epsilon(1e-5));
  }
}

TEST_CASE("the double AdamW update is the plain loop") {
  const AdamWUpdate<double> u{.beta1 = 0.9, .beta2 = 0.999, .correction1 = 0.271, .correction2 = 0.002997,
                              .grad_scale = 0.5, .rate = 1e-3, .eps = 1e-8, .decay = 0.99999};
  std::vector<double> p{1.0, -2.0, 0.5}, g{0.1, -0.2, 0.0}, m{0.0, 0.01, -0.02}, v{0.0, 1e-4, 4e-4};
  darkbert::kernels::adamw_update(p.data(), g.data(), m.data(), v.data(), 3, u);
  // Element 0 by hand: gi = 0.05, m = 0.005, v = 2.5e-6, p = 0.99999 - 1e-3 (0.005 / 0.271) / (sqrt(2.5e-6 /
  // 0.002997) + 1e-8).
  const double m0 = 0.1 * 0.05, v0 = 0.001 * 0.05 * 0.05;
  CHECK(m[0] == doctest::Approx(m0).epsilon(1e-14));
  CHECK(v[0] == doctest::Approx(v0).epsilon(1e-14));
  CHECK(p[0] == doctest::Approx(0.99999 - 1e-3 * (m0 / 0.271) / (std::sqrt(v0 / 0.002997) + 1e-8)).epsilon(1e-14));
  CHECK(m[2] == doctest::Approx(0.9 * -0.02).epsilon(1e-14));  // a zero gradient only decays the moments
  CHECK(v[2] == doctest::Approx(0.999 * 4e-4).epsilon(1e-14));
}
