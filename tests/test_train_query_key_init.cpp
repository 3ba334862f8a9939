// The start of a fresh model's query and key weights: the model's N(0, 0.02) draw rescaled, the value
// rows and everything else left as drawn.
#include <doctest/doctest.h>

#include "darkbert/model/transformer.hpp"
#include "darkbert/train/query_key_init.hpp"
#include "test_support.hpp"

TEST_CASE("rescale_query_key: query and key rows of every block at the asked scale, values untouched") {
  constexpr double init = darkbert::Transformer<float>::random_init_std;
  const auto c = darkbert::ModelConfig::gpt2_shape(3, 64, 4, 128, 50, 32);
  const auto model = darkbert::Transformer<float>::random(c, {}, 5);

  auto same = model.params();
  darkbert::rescale_query_key(same, init, init);
  for (std::size_t b = 0; b < same.blocks.size(); ++b)
    CHECK(same.blocks[b].qkv.weight == model.params().blocks[b].qkv.weight);  // the default is bit-identical

  auto larger = model.params();
  darkbert::rescale_query_key(larger, 0.05, init);
  const darkbert::Index H = 64;
  for (std::size_t b = 0; b < larger.blocks.size(); ++b) {
    const auto& drawn = model.params().blocks[b];
    const auto& scaled = larger.blocks[b];
    CHECK(scaled.qkv.weight.topRows(2 * H).isApprox(drawn.qkv.weight.topRows(2 * H) * 2.5f));
    CHECK(darkbert::test::root_mean_square(scaled.qkv.weight.topRows(2 * H)) == doctest::Approx(0.05).epsilon(0.05));
    CHECK(scaled.qkv.weight.bottomRows(H) == drawn.qkv.weight.bottomRows(H));  // the value rows
    CHECK(scaled.qkv.bias == drawn.qkv.bias);
    CHECK(scaled.attn_out.weight == drawn.attn_out.weight);
  }
  CHECK(larger.embeddings.word == model.params().embeddings.word);

  CHECK(darkbert::test::message_of([&] { darkbert::rescale_query_key(same, 0.0, init); }).find("positive") != std::string::npos);
}
