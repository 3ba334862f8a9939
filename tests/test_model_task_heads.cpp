// TaskHeads::for_architecture: every Hugging Face architecture name darkbert builds maps to its heads,
// for each family, and a name a family does not have is refused by name.
#include <doctest/doctest.h>

#include "darkbert/model/task_heads.hpp"
#include "test_support.hpp"

namespace {

darkbert::TaskHeads heads_of(darkbert::Family family, const std::string& architecture) {
  auto c = family == darkbert::Family::gpt2 ? darkbert::ModelConfig::gpt2_shape(2, 16, 2, 32, 100, 64)
                                            : darkbert::ModelConfig::bert_shape(2, 16, 2, 32, 100, 64);
  c.family = family;
  c.architecture = architecture;
  return darkbert::TaskHeads::for_architecture(c);
}

}  // namespace

TEST_CASE("GPT2LMHeadModel has the causal-LM head (the name also ends with \"Model\")") {
  const auto h = heads_of(darkbert::Family::gpt2, "GPT2LMHeadModel");
  CHECK(h.causal_lm);
  CHECK_FALSE(h.pooler);
  CHECK_FALSE(h.masked_lm);
  CHECK(h.classifier_labels == 0);
}

TEST_CASE("base models, classifiers and BERT's pretraining heads") {
  const auto base = heads_of(darkbert::Family::gpt2, "GPT2Model");
  CHECK_FALSE(base.causal_lm);
  CHECK_FALSE(base.pooler);
  CHECK(heads_of(darkbert::Family::bert, "BertModel").pooler);
  CHECK_FALSE(heads_of(darkbert::Family::roberta, "RobertaModel").pooler);

  const auto cls = heads_of(darkbert::Family::gpt2, "GPT2ForSequenceClassification");
  CHECK(cls.classifier_labels == 2);
  CHECK_FALSE(cls.causal_lm);
  CHECK(heads_of(darkbert::Family::bert, "BertForSequenceClassification").pooler);

  const auto pre = heads_of(darkbert::Family::bert, "BertForPreTraining");
  CHECK(pre.pooler);
  CHECK(pre.masked_lm);
  CHECK(pre.next_sentence);
  CHECK(heads_of(darkbert::Family::distilbert, "DistilBertForMaskedLM").masked_lm);
}

TEST_CASE("a head the family does not have is refused by name") {
  CHECK(darkbert::test::message_of([] { heads_of(darkbert::Family::bert, "BertLMHeadModel"); }) ==
        "architecture \"BertLMHeadModel\": only GPT-2 has a causal-LM head");
  CHECK(darkbert::test::message_of([] { heads_of(darkbert::Family::gpt2, "GPT2ForMaskedLM"); }) ==
        "architecture \"GPT2ForMaskedLM\": GPT-2 has no masked-LM head");
  CHECK(darkbert::test::message_of([] { heads_of(darkbert::Family::gpt2, "GPT2ForPreTraining"); }) ==
        "architecture \"GPT2ForPreTraining\" is not supported (pretraining heads are BERT's)");
  CHECK(darkbert::test::message_of([] { heads_of(darkbert::Family::bert, "BertForQuestionAnswering"); })
            .starts_with("architecture \"BertForQuestionAnswering\" is not supported"));
}
