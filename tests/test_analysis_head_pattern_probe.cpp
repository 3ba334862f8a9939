// HeadPatternProbe: per-head neighbour / [CLS]+[SEP] / own-segment masses on fixed sentence pairs, for a
// BERT (token types) and a GPT-2 (none: the pairs' segments live only in the annotations).
#include <doctest/doctest.h>

#include "darkbert/analysis/head_pattern_probe.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "test_support.hpp"

namespace {

darkbert::HeadSummary<float> probe_random_model(darkbert::ModelConfig c, const std::string& vocab) {
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab" / vocab);
  std::vector<darkbert::Encoding> pairs;
  for (const auto& [a, b] : {std::pair{"The cat sat on the mat.", "It was warm."}, {"Stocks fell sharply.", "Investors sold."}})
    pairs.push_back(tokenizer.encode_pair(a, b, {.max_length = 32}));
  const darkbert::HeadPatternProbe probe(pairs, 1);
  const auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 3);
  return probe.measure(model, tokenizer.pad_id());
}

void check_shares(const darkbert::HeadSummary<float>& s, darkbert::Index layers, darkbert::Index heads) {
  REQUIRE(s.neighbour_share.rows() == layers);
  REQUIRE(s.neighbour_share.cols() == heads);
  for (const auto* table : {&s.neighbour_share, &s.special_share, &s.segment_share})
    for (darkbert::Index l = 0; l < layers; ++l)
      for (darkbert::Index h = 0; h < heads; ++h) {
        CHECK((*table)(l, h) >= 0.0f);
        CHECK((*table)(l, h) <= 1.0f + 1e-5f);
      }
}

}  // namespace

TEST_CASE("a random BERT's heads are near uniform on sentence pairs") {
  auto c = darkbert::ModelConfig::bert_shape(2, 32, 2, 64, 30522, 64);
  c.architecture = "BertModel";
  const auto s = probe_random_model(c, "bert-base-uncased");
  check_shares(s, 2, 2);
  // Uniform attention over ~15 tokens puts ~2/15 on the two neighbours; N(0, 0.02) weights stay close.
  CHECK(darkbert::max_over_heads(s.neighbour_share).value < 0.25);
}

TEST_CASE("GPT-2 is probed on pairs although it has no token types") {
  auto c = darkbert::ModelConfig::gpt2_shape(2, 32, 2, 64, 50257, 64);
  c.architecture = "GPT2LMHeadModel";
  const auto s = probe_random_model(c, "gpt2");
  check_shares(s, 2, 2);
  CHECK(darkbert::max_over_heads(s.neighbour_share).value > 0.0);  // the previous token (causal)
}
