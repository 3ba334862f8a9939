// Fine-tuning on a synthetic task a tiny model must learn (the label is whether token 5 or token 6 occurs),
// turning a pretraining model into a classifier with with_task_heads, and the frozen-encoder baseline.
#include <doctest/doctest.h>
#include <omp.h>  // omp_get_max_threads, omp_set_num_threads

#include <cstring>  // std::memcmp
#include <random>   // std::mt19937_64
#include <vector>   // std::vector

#include "darkbert/model/parameter_names.hpp"
#include "darkbert/train/fine_tune.hpp"
#include "test_support.hpp"

namespace {

darkbert::LabelledTexts synthetic_texts(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  darkbert::LabelledTexts t;
  t.num_labels = 2;
  for (int i = 0; i < n; ++i) {
    darkbert::Encoding e;
    const int label = static_cast<int>(rng() % 2);
    const int length = 4 + static_cast<int>(rng() % 6);
    e.ids.push_back(1);  // [CLS]
    for (int k = 0; k < length; ++k) e.ids.push_back(7 + static_cast<int>(rng() % 20));
    e.ids[1 + rng() % static_cast<unsigned>(length)] = label ? 5 : 6;
    e.ids.push_back(2);  // [SEP]
    e.attention_mask.assign(e.ids.size(), 1);
    e.token_type_ids.assign(e.ids.size(), 0);
    t.encodings.push_back(e);
    t.labels.push_back(label);
  }
  return t;
}

// Pairs as a tokenizer gives them: [CLS] a [SEP] b [SEP], segment b of type 1. The label (of num_labels) is
// which of the tokens 5, 6, 7 occurs in segment b. Ids stay within 10..39 otherwise, inside every golden
// vocabulary and clear of its padding id.
darkbert::LabelledTexts fine_tune_pairs(int n, int num_labels, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  darkbert::LabelledTexts t;
  t.num_labels = num_labels;
  for (int i = 0; i < n; ++i) {
    darkbert::Encoding e;
    const int label = static_cast<int>(rng() % static_cast<unsigned>(num_labels));
    e.ids.push_back(2);
    for (int k = 0; k < 3 + static_cast<int>(rng() % 3); ++k) e.ids.push_back(10 + static_cast<int>(rng() % 30));
    e.ids.push_back(3);
    e.token_type_ids.assign(e.ids.size(), 0);
    const std::size_t b_first = e.ids.size();
    for (int k = 0; k < 3 + static_cast<int>(rng() % 3); ++k) e.ids.push_back(10 + static_cast<int>(rng() % 30));
    e.ids[b_first + rng() % (e.ids.size() - b_first)] = 5 + label;
    e.ids.push_back(3);
    e.token_type_ids.resize(e.ids.size(), 1);
    e.attention_mask.assign(e.ids.size(), 1);
    t.encodings.push_back(e);
    t.labels.push_back(label);
  }
  return t;
}

darkbert::ModelConfig pretraining_config() {
  auto c = darkbert::ModelConfig::bert_shape(2, 16, 2, 32, 30, 32);
  c.architecture = "BertForPreTraining";
  return c;
}

darkbert::ModelConfig classifier_config() {
  auto c = pretraining_config();
  c.architecture = "BertForSequenceClassification";
  c.labels = {"no", "yes"};
  return c;
}

}  // namespace

TEST_CASE("with_task_heads keeps the encoder and the pooler and adds a fresh classifier") {
  const auto pretrained = darkbert::Transformer<float>::random(pretraining_config(), darkbert::TaskHeads::for_architecture(pretraining_config()), 3);
  const auto c = classifier_config();
  const auto classifier = pretrained.with_task_heads(c, darkbert::TaskHeads::for_architecture(c), 4);
  const auto& a = pretrained.params();
  const auto& b = classifier.params();
  CHECK(a.embeddings.word == b.embeddings.word);
  CHECK(a.blocks[1].mlp_out.weight == b.blocks[1].mlp_out.weight);
  CHECK(a.task_heads.pooler->weight == b.task_heads.pooler->weight);
  REQUIRE(b.task_heads.classifier.has_value());
  CHECK(b.task_heads.classifier->out.out() == 2);
  CHECK(!b.task_heads.masked_lm.has_value());
  auto wrong = c;
  wrong.hidden_size = 32;
  CHECK(darkbert::test::message_of([&] { pretrained.with_task_heads(wrong, darkbert::TaskHeads::for_architecture(wrong), 4); })
            .find("encoder shape") != std::string::npos);
}

TEST_CASE("fine_tune learns a task that needs attention to one token") {
  const auto c = classifier_config();
  auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 11);
  const auto train = synthetic_texts(512, 1), dev = synthetic_texts(200, 2);
  const auto before = darkbert::accuracy_metric(darkbert::predict(model, dev, 0), dev.labels);
  const auto history = darkbert::fine_tune(model, train, 0, {.epochs = 4, .batch_size = 16, .learning_rate = 3e-3,
                                                             .seed = 5, .show_progress = false});
  CHECK(history.steps == 4 * 32);
  REQUIRE(history.epoch_loss.size() == 4);
  CHECK(history.epoch_loss.back() < history.epoch_loss.front());
  const auto after = darkbert::accuracy_metric(darkbert::predict(model, dev, 0), dev.labels);
  INFO("accuracy before " << before << ", after " << after);
  CHECK(after > 0.95);
  CHECK(darkbert::test::message_of([&] {
          auto bad = train;
          bad.num_labels = 3;
          darkbert::fine_tune(model, bad, 0, {.show_progress = false});
        }).find("outputs") != std::string::npos);
}

TEST_CASE("fine_tune with length-grouped batches learns the task in the same number of steps, reproducibly") {
  const auto c = classifier_config();
  const auto train = synthetic_texts(500, 1), dev = synthetic_texts(200, 2);
  auto run = [&] {
    auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 11);
    const auto history = darkbert::fine_tune(model, train, 0, {.epochs = 4, .batch_size = 16, .learning_rate = 3e-3,
                                                               .seed = 5, .group_by_length = true, .show_progress = false});
    CHECK(history.steps == 4 * 32);  // ceil(500 / 16) per epoch, as with random batches
    return model;
  };
  const auto model = run();
  const auto after = darkbert::accuracy_metric(darkbert::predict(model, dev, 0), dev.labels);
  INFO("accuracy after " << after);
  CHECK(after > 0.95);
  CHECK(run().params().task_heads.classifier->out.weight == model.params().task_heads.classifier->out.weight);
}

TEST_CASE("fine_tune gives the same bits at one and two threads, grouped batches of short sentences too") {
  // The `--quick` study model's shape (2 x 64, 4 heads) and batches of 32 sentences of 6-16 tokens: products
  // such as the 64 x 64 weight gradients over 200-500 rows, which once split across two threads into blocks
  // that OpenBLAS summed in another order than the whole product (core/blas.hpp).
  auto c = darkbert::ModelConfig::bert_shape(2, 64, 4, 256, 30, 32);
  c.architecture = "BertForSequenceClassification";
  c.labels = {"no", "yes"};
  darkbert::LabelledTexts train = synthetic_texts(256, 7);
  for (std::size_t i = 0; i < train.size(); ++i) {  // stretch some sentences to up to 16 tokens
    auto& e = train.encodings[i];
    for (std::size_t extra = i % 6; extra > 0; --extra) e.ids.insert(e.ids.begin() + 1, 8);
    e.attention_mask.assign(e.ids.size(), 1);
    e.token_type_ids.assign(e.ids.size(), 0);
  }
  const int saved = omp_get_max_threads();
  for (const bool grouped : {false, true}) {
    CAPTURE(grouped);
    std::vector<float> weights[2];
    for (const int threads : {1, 2}) {
      omp_set_num_threads(threads);
      auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 3);
      darkbert::fine_tune(model, train, 0, {.epochs = 2, .batch_size = 32, .learning_rate = 1e-3, .seed = 2,
                                            .group_by_length = grouped, .show_progress = false});
      for (auto& slot : darkbert::parameter_slots(model.params(), c))
        weights[threads - 1].insert(weights[threads - 1].end(), slot.data, slot.data + slot.elements());
    }
    REQUIRE(weights[0].size() == weights[1].size());
    CHECK(std::memcmp(weights[0].data(), weights[1].data(), weights[0].size() * sizeof(float)) == 0);
  }
  omp_set_num_threads(saved);
}

TEST_CASE("predict scores every example in batches of like length and returns the scores in input order") {
  const auto c = classifier_config();
  const auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 4);
  const auto texts = synthetic_texts(70, 8);  // 5-10 tokens each, in no length order
  const auto eval = darkbert::evaluation_batches(texts, 16, 0, darkbert::token_types_for(c));
  CHECK(eval.batches.size() == 5);
  CHECK(eval.batches.front().length == 11);  // the longest first
  const auto predictions = darkbert::predict(model, texts, 0, 16);
  REQUIRE(predictions.size() == texts.size());
  darkbert::ForwardOptions<float> o;
  o.keep_attentions = false;
  o.keep_hidden_states = false;
  for (std::size_t i = 0; i < texts.size(); ++i) {  // each example alone: no padding at all
    CAPTURE(i);
    const std::size_t row[] = {i};
    const auto alone = model.forward(darkbert::batch_of(texts, row, 0, darkbert::token_types_for(c)), o);
    std::vector<double> own;
    darkbert::append_sequence_predictions(alone, own);
    CHECK(predictions[i] == own[0]);
  }
}

TEST_CASE("a frozen encoder stays bit-identical while the heads learn") {
  const auto c = classifier_config();
  auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 11);
  const auto encoder_before = model.params().blocks[0].qkv.weight;
  const auto embeddings_before = model.params().embeddings.word;
  const auto classifier_before = model.params().task_heads.classifier->out.weight;
  darkbert::fine_tune(model, synthetic_texts(64, 3), 0, {.epochs = 1, .batch_size = 16, .learning_rate = 1e-2,
                                                         .train_encoder = false, .seed = 1, .show_progress = false});
  CHECK(model.params().blocks[0].qkv.weight == encoder_before);
  CHECK(model.params().embeddings.word == embeddings_before);
  CHECK(model.params().task_heads.classifier->out.weight != classifier_before);
}

TEST_CASE("every family fine-tunes on pairs: token types reach only the models that have segment embeddings") {
  // The golden classifiers, and RoBERTa's encoder given a fresh classifier (one token type: only type 0).
  for (const std::string name : {"bert_seqcls3", "distilbert_seqcls", "gpt2_seqcls", "roberta_model"}) {
    CAPTURE(name);
    auto model = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / name);
    if (!model.params().task_heads.classifier) {
      auto c = model.config();
      c.architecture = "RobertaForSequenceClassification";
      c.labels = {"no", "yes"};
      model = model.with_task_heads(c, darkbert::TaskHeads::for_architecture(c), 7);
    }
    const auto& c = model.config();
    CHECK((darkbert::token_types_for(c) == darkbert::TokenTypes::keep) == (c.family == darkbert::Family::bert));
    const int pad = std::max(c.pad_token_id, 0);
    const int labels = static_cast<int>(model.params().task_heads.classifier->out.out());
    const auto train = fine_tune_pairs(384, labels, 1), dev = fine_tune_pairs(150, labels, 2);
    const auto batch = darkbert::batch_of(train, std::vector<std::size_t>{0, 1}, pad, darkbert::token_types_for(c));
    CHECK(batch.token_type_ids.empty() == (c.family != darkbert::Family::bert));
    const auto history = darkbert::fine_tune(model, train, pad, {.epochs = 8, .batch_size = 16, .learning_rate = 3e-3,
                                                                 .seed = 5, .show_progress = false});
    CHECK(history.epoch_loss.back() < history.epoch_loss.front());
    const double after = darkbert::accuracy_metric(darkbert::predict(model, dev, pad), dev.labels);
    INFO("dev accuracy " << after << ", majority " << dev.majority_rate() << ", epoch losses "
                         << history.epoch_loss.front() << " -> " << history.epoch_loss.back());
    CHECK(after > dev.majority_rate() + 0.2);
  }
}
