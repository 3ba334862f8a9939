// The start of a fresh model's position table: Vaswani's sinusoids at a given root-mean-square, or the
// model's own normal draw rescaled.
#include <doctest/doctest.h>

#include <cmath>  // std::sin, std::cos, std::pow, std::sqrt

#include "darkbert/model/transformer.hpp"
#include "darkbert/train/position_init.hpp"
#include "test_support.hpp"

TEST_CASE("sinusoidal positions: sin and cos of p / 10000^(2i/H) at the asked root-mean-square") {
  darkbert::Matrix<float> table(512, 64);
  darkbert::init_sinusoidal_positions(table, 0.05);
  const double scale = 0.05 * std::sqrt(2.0);
  CHECK(table(0, 0) == 0.0f);
  CHECK(table(0, 1) == doctest::Approx(scale));
  CHECK(table(7, 0) == doctest::Approx(scale * std::sin(7.0)));
  CHECK(table(7, 1) == doctest::Approx(scale * std::cos(7.0)));
  CHECK(table(300, 10) == doctest::Approx(scale * std::sin(300.0 / std::pow(10000.0, 10.0 / 64.0))));
  CHECK(darkbert::test::root_mean_square(table) == doctest::Approx(0.05).epsilon(0.05));
  // The shift by one position is the same rotation everywhere: <p, p + 1> does not depend on p.
  const double first = table.row(0).cast<double>().dot(table.row(1).cast<double>());
  CHECK(table.row(200).cast<double>().dot(table.row(201).cast<double>()) == doctest::Approx(first).epsilon(1e-4));

  darkbert::Matrix<float> odd(8, 7);
  CHECK(darkbert::test::message_of([&] { darkbert::init_sinusoidal_positions(odd, 0.02); }).find("even") != std::string::npos);
}

TEST_CASE("init_positions: normal rescales the model's draw, sinusoidal replaces it, anything else is refused") {
  auto c = darkbert::ModelConfig::bert_shape(1, 32, 2, 64, 50, 128);
  const auto model = darkbert::Transformer<float>::random(c, {}, 3);
  const auto& drawn = model.params().embeddings.position;
  constexpr double init = darkbert::Transformer<float>::random_init_std;

  auto same = drawn;
  darkbert::init_positions(same, "normal", init, init);
  CHECK(same == drawn);  // the default leaves the draw bit-identical
  auto scaled = drawn;
  darkbert::init_positions(scaled, "normal", 4 * init, init);
  CHECK(scaled.isApprox(drawn * 4.0f));
  CHECK(darkbert::test::root_mean_square(scaled) == doctest::Approx(4 * init).epsilon(0.1));

  auto sinusoids = drawn, expected = drawn;
  darkbert::init_positions(sinusoids, "sinusoidal", 0.1, init);
  darkbert::init_sinusoidal_positions(expected, 0.1);
  CHECK(sinusoids == expected);

  CHECK(darkbert::test::message_of([&] { darkbert::init_positions(same, "learned", 0.02, init); })
            .find("unknown kind 'learned'") != std::string::npos);
  CHECK(darkbert::test::message_of([&] { darkbert::init_positions(same, "normal", 0.0, init); })
            .find("positive") != std::string::npos);
}
