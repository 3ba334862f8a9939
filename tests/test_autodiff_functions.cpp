// Every differentiable function against central finite differences in double, on small shapes; and the
// tape's own rules (replaying arena, no recording, bad input).
#include <doctest/doctest.h>

#include <cmath>       // std::abs
#include <functional>  // std::function
#include <random>      // std::mt19937_64
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/autodiff/functions.hpp"
#include "test_support.hpp"

namespace {

namespace ad = darkbert::autodiff;
using darkbert::Index;
using darkbert::Activation;
using Tape = ad::Tape<double>;
using Var = ad::Var<double>;

std::vector<double> random_doubles(Index n, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = normal(rng);
  return v;
}

// loss = Σ y ⊙ R for a fixed random R, so every output element carries its own gradient.
Var weighted_sum(Tape& tape, const Var& y, const std::vector<double>& r) {
  Var loss = tape.variable({});
  double total = 0;
  for (Index i = 0; i < y.size(); ++i) total += y.value()[i] * r[static_cast<std::size_t>(i)];
  loss.value()[0] = total;
  tape.record([=, &r] {
    for (Index i = 0; i < y.size(); ++i) y.grad()[i] += loss.grad()[0] * r[static_cast<std::size_t>(i)];
  });
  return loss;
}

struct Input {
  ad::Shape shape;
  std::vector<double> value;
};

// Builds y = f(inputs) on a tape; compares the tape's gradient of Σ y ⊙ R for every element of every input
// with (L(x + h) - L(x - h)) / 2h. Returns the worst |analytic - numeric| / (1 + |numeric|).
double worst_gradient_error(std::vector<Input> inputs, const std::function<Var(Tape&, std::vector<Var>&)>& f,
                            double h = 1e-6) {
  std::vector<double> r;
  auto evaluate = [&](bool backward, std::vector<std::vector<double>>* grads) {
    Tape tape;
    std::vector<Var> vars;
    for (auto& in : inputs) vars.push_back(tape.external(in.value.data(), in.shape));
    Var y = f(tape, vars);
    if (r.empty()) r = random_doubles(y.size(), 99);
    Var loss = weighted_sum(tape, y, r);
    if (backward) {
      tape.backward(loss);
      for (auto& v : vars) grads->emplace_back(v.grad(), v.grad() + v.size());
    }
    return loss.value()[0];
  };
  std::vector<std::vector<double>> grads;
  evaluate(true, &grads);
  double worst = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    for (std::size_t i = 0; i < inputs[k].value.size(); ++i) {
      const double keep = inputs[k].value[i];
      inputs[k].value[i] = keep + h;
      const double up = evaluate(false, nullptr);
      inputs[k].value[i] = keep - h;
      const double down = evaluate(false, nullptr);
      inputs[k].value[i] = keep;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(grads[k][i] - numeric) / (1 + std::abs(numeric)));
    }
  return worst;
}

Input random_input(ad::Shape shape, std::uint64_t seed, double scale = 1.0) {
  return {shape, random_doubles(shape.size(), seed, scale)};
}

constexpr double kTolerance = 1e-7;

}  // namespace

TEST_CASE("linear: x Wᵀ + b with every activation, and without bias") {
  for (auto f : {Activation::none, Activation::gelu_erf, Activation::gelu_tanh, Activation::relu, Activation::tanh}) {
    CAPTURE(static_cast<int>(f));
    const double e = worst_gradient_error({random_input({5, 7}, 1), random_input({4, 7}, 2), random_input({4}, 3)},
                                          [&](Tape& t, std::vector<Var>& v) { return ad::linear(t, v[0], v[1], v[2], f); });
    CHECK(e < kTolerance);
  }
  const double e = worst_gradient_error({random_input({3, 6}, 4), random_input({2, 6}, 5)},
                                        [](Tape& t, std::vector<Var>& v) { return ad::linear(t, v[0], v[1], Var{}); });
  CHECK(e < kTolerance);
}

TEST_CASE("activations, layer norm, add, scale, sum") {
  for (auto f : {Activation::gelu_erf, Activation::gelu_tanh, Activation::relu, Activation::tanh}) {
    CAPTURE(static_cast<int>(f));
    CHECK(worst_gradient_error({random_input({4, 5}, 6)},
                               [&](Tape& t, std::vector<Var>& v) { return ad::activation(t, v[0], f); }) < kTolerance);
  }
  CHECK(worst_gradient_error({random_input({4, 6}, 7, 3.0), random_input({6}, 8), random_input({6}, 9)},
                             [](Tape& t, std::vector<Var>& v) { return ad::layer_norm(t, v[0], v[1], v[2], 1e-5); }) <
        kTolerance);
  CHECK(worst_gradient_error({random_input({3, 4}, 10), random_input({3, 4}, 11)},
                             [](Tape& t, std::vector<Var>& v) { return ad::add(t, v[0], v[1]); }) < kTolerance);
  CHECK(worst_gradient_error({random_input({3, 4}, 12)}, [](Tape& t, std::vector<Var>& v) { return ad::sum(t, v[0]); }) <
        kTolerance);
  CHECK(worst_gradient_error({random_input({3, 4}, 13)},
                             [](Tape& t, std::vector<Var>& v) { return ad::scale(t, v[0], -0.375); }) < kTolerance);
}

TEST_CASE("dropout: the same counter-based mask forward and backward") {
  const darkbert::kernels::DropoutMask mask{0.3f, darkbert::stream_key(1, 2, 3)};
  CHECK(worst_gradient_error({random_input({6, 9}, 13)},
                             [&](Tape& t, std::vector<Var>& v) { return ad::dropout(t, v[0], mask); }) < kTolerance);
  Tape tape;
  auto x = random_doubles(10000, 14);
  const Var y = ad::dropout(tape, tape.external(x.data(), {100, 100}), mask);
  Index zeros = 0;
  for (Index i = 0; i < y.size(); ++i) zeros += y.value()[i] == 0.0;
  CHECK(zeros > 2700);  // ~30% dropped
  CHECK(zeros < 3300);
}

TEST_CASE("gather_rows and embedding (the padding row gets no gradient)") {
  static const Index rows[] = {2, 0, 2};
  CHECK(worst_gradient_error({random_input({4, 3}, 15)},
                             [](Tape& t, std::vector<Var>& v) { return ad::gather_rows(t, v[0], rows, 3); }) < kTolerance);
  static const int ids[] = {1, 3, 0, 3, 2};
  CHECK(worst_gradient_error({random_input({5, 4}, 16)},
                             [](Tape& t, std::vector<Var>& v) { return ad::embedding(t, v[0], ids, 5); }) < kTolerance);
  Tape tape;
  auto table = random_doubles(20, 17);
  Var w = tape.external(table.data(), {5, 4});
  Var y = ad::embedding(tape, w, ids, 5, /*padding_idx=*/3);
  tape.backward(ad::sum(tape, y));
  for (Index c = 0; c < 4; ++c) {
    CHECK(w.grad()[3 * 4 + c] == 0.0);
    CHECK(w.grad()[1 * 4 + c] == 1.0);
  }
  CHECK(darkbert::test::message_of([] {
          Tape t;
          static const int bad[] = {7};
          auto v = random_doubles(4, 1);
          ad::embedding(t, t.external(v.data(), {2, 2}), bad, 1);
        }).find("id 7 at 0 outside [0, 2)") != std::string::npos);
}

TEST_CASE("attention: padding and causal masks, with and without dropout") {
  static const int mask[] = {1, 1, 1, 0, 1, 1, 1, 1, 1, 1};  // B = 2, L = 5; row 0 has one padding key
  for (bool causal : {false, true})
    for (float p : {0.0f, 0.25f}) {
      CAPTURE(causal);
      CAPTURE(p);
      const darkbert::kernels::DropoutMask drop{p, darkbert::stream_key(5, 6, 7)};
      const double e = worst_gradient_error({random_input({10, 3 * 6}, 18)}, [&](Tape& t, std::vector<Var>& v) {
        return ad::attention(t, v[0], 2, 5, 2, mask, causal, drop);
      });
      CHECK(e < kTolerance);
    }
}

TEST_CASE("cross-entropy with ignored rows, and MSE") {
  static const int labels[] = {2, -100, 0, 1};
  CHECK(worst_gradient_error({random_input({4, 3}, 19)},
                             [](Tape& t, std::vector<Var>& v) { return ad::cross_entropy(t, v[0], labels); }) < kTolerance);
  static const double target[] = {0.5, -1.0, 2.0};
  CHECK(worst_gradient_error({random_input({3, 1}, 20)},
                             [](Tape& t, std::vector<Var>& v) { return ad::mse(t, v[0], target); }) < kTolerance);
  // A label outside the classes is named.
  static const int bad[] = {3};
  auto logits = random_doubles(3, 21);
  Tape tape;
  CHECK(darkbert::test::message_of([&] { ad::cross_entropy(tape, tape.external(logits.data(), {1, 3}), bad); }) ==
        "cross_entropy: label 3 of row 0 is outside [0, 3) (use -100 to ignore a row)");
}

TEST_CASE("conv2d, max and average pooling, flatten") {
  for (Index stride : {1, 2})
    for (Index padding : {0, 1}) {
      CAPTURE(stride);
      CAPTURE(padding);
      const double e = worst_gradient_error(
          {random_input({2, 3, 6, 5}, 22), random_input({4, 3, 3, 2}, 23), random_input({4}, 24)},
          [&](Tape& t, std::vector<Var>& v) { return ad::conv2d(t, v[0], v[1], v[2], {stride, padding}); });
      CHECK(e < kTolerance);
    }
  for (auto kind : {ad::Pooling::max, ad::Pooling::average})
    CHECK(worst_gradient_error({random_input({2, 2, 6, 4}, 25)}, [&](Tape& t, std::vector<Var>& v) {
            return ad::flatten(t, ad::pool2d(t, v[0], kind, 2));
          }) < kTolerance);
}

TEST_CASE("batch_norm: gradients in training and inference, on images and on features") {
  // Training: the statistics depend on x, so every dx carries the mean's and the variance's terms.
  for (ad::Shape shape : {ad::Shape{3, 2, 2, 3}, ad::Shape{5, 3}}) {
    CAPTURE(shape.rank);
    const Index C = shape[1];
    CHECK(worst_gradient_error({random_input(shape, 40, 2.0), random_input({C}, 41), random_input({C}, 42)},
                               [](Tape& t, std::vector<Var>& v) { return ad::batch_norm(t, v[0], v[1], v[2]); }) <
          kTolerance);
  }
  // Inference: running statistics, an affine map per channel.
  static std::vector<double> mean = {0.3, -0.5}, variance = {1.7, 0.4};
  CHECK(worst_gradient_error({random_input({2, 2, 3, 2}, 43), random_input({2}, 44), random_input({2}, 45)},
                             [](Tape& t, std::vector<Var>& v) {
                               return ad::batch_norm(t, v[0], v[1], v[2],
                                                     {.training = false, .running_mean = mean.data(),
                                                      .running_variance = variance.data()});
                             }) < kTolerance);
}

TEST_CASE("batch_norm by hand: batch statistics, running update, inference, same bits every run") {
  // One channel, x = [N = 2, C = 1, 1, 2] = {1, 2 | 3, 6}: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5.
  std::vector<double> x = {1, 2, 3, 6}, gain = {2.0}, shift = {0.5};
  std::vector<double> running_mean = {0.0}, running_variance = {1.0};
  Tape tape;
  const Var xv = tape.external(x.data(), {2, 1, 1, 2}), g = tape.external(gain.data(), {1}),
            b = tape.external(shift.data(), {1});
  const ad::BatchNormOptions<double> training{.eps = 1e-5,
                                              .momentum = 0.1,
                                              .running_mean = running_mean.data(),
                                              .running_variance = running_variance.data()};
  const Var y = ad::batch_norm(tape, xv, g, b, training);
  const double rstd = 1 / std::sqrt(3.5 + 1e-5);
  for (Index i = 0; i < 4; ++i) CHECK(y.value()[i] == doctest::Approx((x[i] - 3) * rstd * 2 + 0.5).epsilon(1e-12));
  CHECK(running_mean[0] == doctest::Approx(0.3).epsilon(1e-12));  // 0.9 · 0 + 0.1 · 3
  // 0.9 · 1 + 0.1 · 3.5 · 4/3: the running variance is unbiased.
  CHECK(running_variance[0] == doctest::Approx(0.9 + 0.35 * 4 / 3).epsilon(1e-12));
  // d Σ y / d shift = 4, d Σ y / d gain = Σ x̂ = 0, d Σ y / dx = 0 (a constant shift is normalised away).
  tape.backward(ad::sum(tape, y));
  CHECK(b.grad()[0] == doctest::Approx(4.0));
  CHECK(std::abs(g.grad()[0]) < 1e-12);
  for (Index i = 0; i < 4; ++i) CHECK(std::abs(xv.grad()[i]) < 1e-12);

  // Inference reads the running statistics and leaves them as they are.
  Tape inference;
  inference.set_recording(false);
  const Var z = ad::batch_norm(inference, inference.external(x.data(), {2, 1, 1, 2}),
                               inference.external(gain.data(), {1}), inference.external(shift.data(), {1}),
                               {.training = false,
                                .running_mean = running_mean.data(),
                                .running_variance = running_variance.data()});
  CHECK(z.value()[3] == doctest::Approx((6 - 0.3) / std::sqrt(0.9 + 0.35 * 4 / 3 + 1e-5) * 2 + 0.5).epsilon(1e-12));
  CHECK(running_mean[0] == doctest::Approx(0.3).epsilon(1e-12));

  // The same float input gives the same bits, forward and backward.
  auto run = [] {
    auto values = random_doubles(4 * 3 * 5 * 5, 46, 3.0);
    std::vector<float> xf(values.begin(), values.end()), gf = {1.5f, -0.5f, 0.25f}, bf = {0.1f, 0.2f, 0.3f};
    std::vector<float> rm(3, 0.0f), rv(3, 1.0f);
    ad::Tape<float> t;
    const auto xv = t.external(xf.data(), {4, 3, 5, 5});
    const auto gv = t.external(gf.data(), {3});
    const auto y = ad::batch_norm(t, xv, gv, t.external(bf.data(), {3}),
                                  {.running_mean = rm.data(), .running_variance = rv.data()});
    t.backward(ad::sum(t, ad::activation(t, y, Activation::tanh)));
    std::vector<float> out(y.value(), y.value() + y.size());
    out.insert(out.end(), xv.grad(), xv.grad() + xv.size());
    out.insert(out.end(), gv.grad(), gv.grad() + 3);
    out.insert(out.end(), rv.begin(), rv.end());
    return out;
  };
  CHECK(run() == run());
}

TEST_CASE("batch_norm refuses bad shapes and options, naming them") {
  auto x = random_doubles(24, 47), p = random_doubles(3, 48);
  auto message = [&](ad::Shape xs, ad::Shape ps, ad::BatchNormOptions<double> o = {}) {
    return darkbert::test::message_of([&] {
      Tape t;
      ad::batch_norm(t, t.external(x.data(), xs), t.external(p.data(), ps), t.external(p.data(), ps), o);
    });
  };
  CHECK(message({24}, {3}) == "autodiff::batch_norm: x must be [N, C, ...], it has rank 1");
  CHECK(message({2, 3, 4}, {2}) == "autodiff::batch_norm: 3 channels but a gain of 2 and a shift of 2");
  CHECK(message({1, 3, 1}, {3}) == "batch_norm: training needs more than one value per channel (N·H·W = 1)");
  CHECK(message({2, 3, 4}, {3}, {.training = false}) ==
        "autodiff::batch_norm: inference needs the running mean and variance");
  CHECK(message({2, 3, 4}, {3}, {.running_mean = p.data()}) ==
        "autodiff::batch_norm: give both running statistics (mean and variance) or neither");
  CHECK(message({2, 3, 4}, {3}, {.momentum = 1.5}).find("momentum 1.5 in [0, 1]") != std::string::npos);
  std::vector<double> negative = {1.0, -0.5, 1.0};
  CHECK(message({2, 3, 4}, {3}, {.training = false, .running_mean = p.data(), .running_variance = negative.data()}) ==
        "batch_norm: running variance -0.5 < 0 in channel 1");
  CHECK(message({2, 3, 4}, {3}) == "");
}

TEST_CASE("the tape replays its arena: a second identical step allocates nothing new") {
  auto x = random_doubles(12, 26), w = random_doubles(8, 27);
  Tape tape;
  auto step = [&] {
    tape.reset();
    Var xv = tape.external(x.data(), {3, 4}), wv = tape.external(w.data(), {2, 4});
    Var y = ad::linear(tape, xv, wv, Var{}, Activation::gelu_erf);
    tape.backward(ad::sum(tape, y));
    return std::vector<double>(xv.grad(), xv.grad() + 12);
  };
  const auto first = step();
  const auto bytes = tape.arena_bytes();
  CHECK(step() == first);
  CHECK(tape.arena_bytes() == bytes);
}

TEST_CASE("a tape that does not record computes values only") {
  auto x = random_doubles(6, 28), w = random_doubles(6, 29);
  Tape tape;
  tape.set_recording(false);
  Var y = ad::linear(tape, tape.external(x.data(), {3, 2}), tape.external(w.data(), {3, 2}), Var{});
  CHECK(y.grad() == nullptr);
  CHECK(tape.nodes() == 0);
  CHECK(darkbert::test::message_of([&] { tape.backward(ad::sum(tape, y)); }).find("did not record") != std::string::npos);
}
