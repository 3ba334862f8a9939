// Sampled softmax: the candidate sets (every target, then drawn ids with offset -log π), the
// Horvitz–Thompson property that makes the offsets right, the forward over candidate decoder rows (loss and
// gradients against the full softmax and against a hand computation), and GPT-2 pretraining with it.
#include <doctest/doctest.h>

#include <algorithm>  // std::max, std::find
#include <cmath>      // std::exp, std::log, std::abs
#include <numeric>    // std::iota
#include <set>        // std::set
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/train/pretrain.hpp"
#include "darkbert/train/sampled_softmax.hpp"
#include "darkbert/train/training_step.hpp"
#include "test_support.hpp"

namespace {

using darkbert::Index;

const std::vector<std::int64_t> zipf_counts = [] {
  std::vector<std::int64_t> c(60);
  for (std::size_t j = 0; j < c.size(); ++j) c[j] = static_cast<std::int64_t>(1000 / (j + 1));  // ids 34+ have 0..28
  return c;
}();

darkbert::Transformer<double> tiny_gpt2(Index vocab) {
  auto c = darkbert::ModelConfig::gpt2_shape(2, 16, 2, 32, vocab, 16);
  c.architecture = "GPT2LMHeadModel";
  return darkbert::Transformer<double>::random(c, darkbert::TaskHeads::for_architecture(c), 3);
}

darkbert::Batch softmax_tiny_batch() {
  darkbert::Batch b;
  b.batch_size = 2, b.length = 6;
  b.input_ids = {5, 17, 3, 3, 40, 8, 1, 0, 59, 22, 13, 4};
  b.attention_mask.assign(12, 1);
  return b;
}

}  // namespace

TEST_CASE("a candidate set holds every target at offset 0, then drawn ids at -log of their inclusion probability") {
  darkbert::SampledSoftmax sampler(zipf_counts, 25);
  const std::vector<int> targets{7, darkbert::kernels::ignore_index, 3, 7, 55};
  darkbert::SampledCandidates s;
  sampler.draw(targets, 42, s);
  REQUIRE(s.rows.size() == s.offsets.size());
  CHECK(s.rows.size() > 3);
  CHECK(std::set<Index>(s.rows.begin(), s.rows.end()).size() == s.rows.size());  // no id twice
  // The targets come first, in order of appearance, and map back to their ids.
  CHECK(s.rows[0] == 7);
  CHECK(s.rows[1] == 3);
  CHECK(s.rows[2] == 55);
  CHECK(s.targets == std::vector<int>{0, darkbert::kernels::ignore_index, 1, 0, 2});
  for (std::size_t k = 0; k < s.rows.size(); ++k) {
    if (k < 3) CHECK(s.offsets[k] == 0);
    else CHECK(s.offsets[k] == doctest::Approx(-std::log(sampler.inclusion(s.rows[k]))).epsilon(1e-12));
  }
  // π_j = 1 - (1 - q_j)^draws with q ∝ (count + 1)^0.75.
  double total = 0;
  for (const auto c : zipf_counts) total += std::pow(static_cast<double>(c) + 1, 0.75);
  const double q0 = std::pow(1001.0, 0.75) / total;
  CHECK(sampler.inclusion(0) == doctest::Approx(1 - std::pow(1 - q0, 25)).epsilon(1e-12));

  // The same key draws the same set (a resumed run); another key another; state does not leak between draws.
  darkbert::SampledCandidates again, other;
  sampler.draw(targets, 43, other);
  sampler.draw(targets, 42, again);
  CHECK(again.rows == s.rows);
  CHECK(again.offsets == s.offsets);
  CHECK(other.rows != s.rows);

  CHECK(darkbert::test::message_of([&] { sampler.draw(std::vector<int>{60}, 1, s); }).find("target 60") != std::string::npos);
  CHECK(darkbert::test::message_of([&] { darkbert::SampledSoftmax(zipf_counts, 0); }).find("draws") != std::string::npos);
}

TEST_CASE("the offsets make the candidate sum an unbiased estimate of the full partition function") {
  // With logits z_j, Σ_{j∈S} exp(z_j) / π_j estimates Σ_j exp(z_j). Here z_j = sin(j): the mean over many
  // steps' sets comes to the exact sum.
  darkbert::SampledSoftmax sampler(zipf_counts, 20);
  const std::vector<int> targets{2, 9};
  double exact = 0;
  for (Index j = 0; j < 60; ++j) exact += std::exp(std::sin(static_cast<double>(j)));
  double mean = 0;
  const int steps = 20000;
  darkbert::SampledCandidates s;
  for (int k = 0; k < steps; ++k) {
    sampler.draw(targets, static_cast<std::uint64_t>(k) * 7919, s);
    for (std::size_t c = 0; c < s.rows.size(); ++c)
      mean += std::exp(std::sin(static_cast<double>(s.rows[c])) + s.offsets[c]) / steps;
  }
  CHECK(mean == doctest::Approx(exact).epsilon(0.02));
  // Without the offsets the rare ids are missed: the plain sum falls well short.
  double plain = 0;
  for (int k = 0; k < 200; ++k) {
    sampler.draw(targets, static_cast<std::uint64_t>(k) * 7919, s);
    for (const Index id : s.rows) plain += std::exp(std::sin(static_cast<double>(id))) / 200;
  }
  CHECK(plain < 0.8 * exact);
}

TEST_CASE("decoder rows: all of them in order is the full softmax; a subset is the loss over those columns") {
  const auto model = tiny_gpt2(60);
  const auto batch = softmax_tiny_batch();
  darkbert::TaskLabels labels;
  labels.tokens = batch.input_ids;
  const darkbert::StepSettings no_dropout{.dropout = false};

  // Every id, offset 0: loss and gradients of the full causal LM (the gather is an exact copy).
  darkbert::SampledCandidates all;
  all.rows.resize(60);
  std::iota(all.rows.begin(), all.rows.end(), Index{0});
  all.offsets.assign(60, 0.0);
  darkbert::TrainingStep<double> full(model), listed(model);
  const double loss_full = full.forward_backward(model, batch, labels, no_dropout);
  const double loss_listed = listed.forward_backward(model, batch, labels, no_dropout, {}, &all);
  CHECK(loss_listed == doctest::Approx(loss_full).epsilon(1e-13));
  const auto slots_full = darkbert::parameter_slots(full.gradients(), model.config());
  const auto slots_listed = darkbert::parameter_slots(listed.gradients(), model.config());
  REQUIRE(slots_full.size() == slots_listed.size());
  for (std::size_t k = 0; k < slots_full.size(); ++k) {
    double largest = 0, difference = 0;
    for (Index i = 0; i < slots_full[k].elements(); ++i) {
      largest = std::max(largest, std::abs(slots_full[k].data[i]));
      difference = std::max(difference, std::abs(slots_full[k].data[i] - slots_listed[k].data[i]));
    }
    INFO(slots_full[k].name);
    CHECK(difference <= 1e-12 * (1 + largest));
  }

  // A subset with offsets: the mean over the predicting positions of log Σ_k exp(z_rows[k] + o_k) − (z_t + o_t),
  // z from the inference forward's full logits.
  darkbert::SampledSoftmax sampler(zipf_counts, 12);
  darkbert::SampledCandidates some;
  sampler.draw(labels.tokens, 5, some);
  REQUIRE(some.rows.size() < 60);
  darkbert::TaskLabels columns;
  columns.tokens = some.targets;
  darkbert::TrainingStep<double> sampled(model);
  const double loss_sampled = sampled.forward_backward(model, batch, columns, no_dropout, {}, &some);
  darkbert::ForwardOptions<double> inference;
  const auto out = model.forward(batch, inference);
  double expected = 0;
  int count = 0;
  for (Index b = 0; b < 2; ++b)
    for (Index i = 0; i + 1 < 6; ++i) {
      const double* z = out.token_logits.data() + (b * 6 + i) * 60;
      double sum = 0;
      for (std::size_t k = 0; k < some.rows.size(); ++k) sum += std::exp(z[some.rows[k]] + some.offsets[k]);
      const auto t = static_cast<std::size_t>(some.targets[static_cast<std::size_t>(b * 6 + i + 1)]);
      expected += std::log(sum) - (z[some.rows[t]] + some.offsets[t]);
      ++count;
    }
  CHECK(loss_sampled == doctest::Approx(expected / count).epsilon(1e-12));

  // Its gradient on a word embedding against central differences (an id that is a candidate and an input).
  auto probe = model;
  auto& w = probe.params().embeddings.word;
  const Index id = 17, col = 5;
  const double g = sampled.gradients().embeddings.word(id, col);
  auto loss_at = [&](double value) {
    w(id, col) = value;
    darkbert::TrainingStep<double> step(probe);
    return step.forward_backward(probe, batch, columns, no_dropout, {}, &some);
  };
  const double x = w(id, col), h = 1e-5;
  const double numeric = (loss_at(x + h) - loss_at(x - h)) / (2 * h);
  CHECK(g == doctest::Approx(numeric).epsilon(1e-6));
}

TEST_CASE("decoder rows are refused for a decoder with a bias, and with a wrong number of offsets") {
  auto c = darkbert::ModelConfig::bert_shape(1, 16, 2, 32, 60, 16);
  c.architecture = "BertForMaskedLM";
  const auto bert = darkbert::Transformer<double>::random(c, darkbert::TaskHeads::for_architecture(c), 3);
  darkbert::ForwardOptions<double> o;
  o.decoder_rows = {1, 2};
  o.decoder_offsets = {0, 0};
  auto batch = softmax_tiny_batch();
  CHECK(darkbert::test::message_of([&] { bert.forward(batch, o); }).find("bias-free") != std::string::npos);
  const auto gpt2 = tiny_gpt2(60);
  o.decoder_offsets = {0};
  CHECK(darkbert::test::message_of([&] { gpt2.forward(batch, o); }).find("1 decoder_offsets") != std::string::npos);
}

TEST_CASE("GPT-2 pretraining with a sampled softmax: labels are columns of the step's candidates, and the loss falls") {
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto corpus = darkbert::tokenize_corpus(darkbert::test::data_dir() / "corpus/heldout.txt", tokenizer, {.max_documents = 6});
  const darkbert::PretrainingTaskOptions sampled{.max_length = 32, .heldout_windows = 8, .softmax_draws = 512};
  darkbert::PretrainingTask task(darkbert::Family::gpt2, corpus, corpus, tokenizer, sampled, 9);
  darkbert::PretrainingTask plain(darkbert::Family::gpt2, corpus, corpus, tokenizer, {.max_length = 32}, 9);
  const auto b = task.batch(0, 0, 8);
  REQUIRE(b.candidates != nullptr);
  const auto ids = plain.batch(0, 0, 8).labels.tokens;
  const auto& cand = *b.candidates;
  REQUIRE(b.labels.tokens.size() == ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) CHECK(cand.rows[static_cast<std::size_t>(b.labels.tokens[k])] == ids[k]);
  CHECK(cand.rows.size() < 50257 / 10);
  const auto first_rows = cand.rows;
  CHECK(task.batch(0, 0, 8).candidates->rows == first_rows);  // keyed by (seed, epoch, offset): a resume draws the same
  CHECK(task.batch(0, 8, 8).candidates->rows != first_rows);
  CHECK(darkbert::test::message_of([&] {
          darkbert::PretrainingTask(darkbert::Family::bert, corpus, corpus, tokenizer, {.softmax_draws = 8}, 9);
        }).find("GPT-2") != std::string::npos);

  auto c = darkbert::ModelConfig::gpt2_shape(2, 16, 2, 32, 50257, 64);
  c.architecture = "GPT2LMHeadModel";
  auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 5);
  const auto before = task.evaluate(model);  // always the full softmax
  CHECK(before.tokens == 8 * 31);
  darkbert::AdamW<float> optimizer(model);
  darkbert::pretrain(model, optimizer, task,
                     {.batch_size = 4, .learning_rate = 5e-3, .warmup_steps = 3, .steps = 100, .eval_every = 0,
                      .checkpoint_every = 0, .show_progress = false},
                     {});
  CHECK(task.evaluate(model).loss < before.loss - 2.0);
}
