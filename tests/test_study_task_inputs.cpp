// Tests for study/task_inputs.hpp: a task's evaluation examples sampled, encoded, annotated and run through
// the model, one attention view per example.
#include <doctest/doctest.h>

#include <cmath>  // std::abs

#include "darkbert/study/task_inputs.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

using darkbert::test::shared_root;

TEST_CASE("load_task_inputs: a seeded sample in file order, encoded and annotated per token") {
  const auto dir = darkbert::test::golden_dir() / "models/bert_model_real_vocab";
  const auto model = darkbert::Transformer<float>::load(dir);
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  const auto root = shared_root();
  const auto a = darkbert::study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, model.config(),
                                                   {.max_examples = 7, .seed = 3, .max_length = 40});
  const auto b = darkbert::study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, model.config(),
                                                   {.max_examples = 7, .seed = 3, .max_length = 40});
  const auto c = darkbert::study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, model.config(),
                                                   {.max_examples = 7, .seed = 4, .max_length = 40});
  REQUIRE(a.size() == 7);
  CHECK(a.tokens.size() == 7);
  CHECK(a.provenance.find("7 of 408") != std::string::npos);
  bool same_as_b = true, same_as_c = true;
  for (std::size_t i = 0; i < 7; ++i) {
    same_as_b = same_as_b && a.eval.examples[i].id == b.eval.examples[i].id;
    same_as_c = same_as_c && a.eval.examples[i].id == c.eval.examples[i].id;
    CHECK(a.tokens[i].size() == a.texts.encodings[i].ids.size());
    CHECK(a.texts.encodings[i].ids.size() <= 40);
  }
  CHECK(same_as_b);
  CHECK_FALSE(same_as_c);

  // `first`: the first examples, as Table 1 scores them (load_glue_finetune's max_eval).
  const auto first = darkbert::study::load_task_inputs(root, darkbert::GlueTask::mrpc, tokenizer, model.config(),
                                                       {.max_examples = 7, .first = true, .max_length = 40});
  const auto table1 = darkbert::load_glue_finetune(root, darkbert::GlueTask::mrpc, {.max_train = 1, .max_eval = 7});
  REQUIRE(first.size() == 7);
  for (std::size_t i = 0; i < 7; ++i) CHECK(first.eval.examples[i].id == table1.eval.examples[i].id);
  CHECK(first.provenance.find("7 of 408 evaluation examples (the first ones)") != std::string::npos);

  std::size_t seen = 0;
  darkbert::study::for_each_attention(model, a, [&](std::size_t i, const darkbert::AttentionView<float>& v) {
    CHECK(i == seen++);
    CHECK(v.length() == static_cast<darkbert::Index>(a.texts.encodings[i].ids.size()));
    double row = 0;
    for (darkbert::Index j = 0; j < v.length(); ++j) row += v(v.layers() - 1, 0, 0, j);
    CHECK(std::abs(row - 1.0) < 1e-5);
  }, /*batch_size=*/3);
  CHECK(seen == 7);
}

TEST_CASE("for_each_attention_pair: a model against itself gives the same maps; shapes must agree") {
  const auto dir = darkbert::test::golden_dir() / "models/bert_model_real_vocab";
  const auto model = darkbert::Transformer<float>::load(dir);
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  const auto inputs = darkbert::study::load_task_inputs(shared_root(), darkbert::GlueTask::sst2, tokenizer, model.config(),
                                                        {.max_examples = 4, .seed = 1});
  darkbert::study::for_each_attention_pair(model, model, inputs,
      [&](std::size_t, const darkbert::AttentionView<float>& x, const darkbert::AttentionView<float>& y) {
        CHECK(x(0, 1, 0, 0) == y(0, 1, 0, 0));
      });
  const auto other = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model");
  CHECK_THROWS_WITH_AS(darkbert::study::for_each_attention_pair(model, other, inputs, [](auto, const auto&, const auto&) {}),
                       doctest::Contains("differ in shape"), darkbert::error);
}
