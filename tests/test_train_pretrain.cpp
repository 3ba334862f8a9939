// The pretraining loop on a few documents of the real held-out corpus with the real BERT vocabulary and
// a tiny model: the loss falls, and a run stopped after a checkpoint and resumed from it (model, optimizer
// and data position reloaded from disk) ends bit-identical to the run that never stopped.
#include <doctest/doctest.h>

#include <algorithm>  // std::max
#include <cmath>      // std::abs, std::log
#include <cstring>    // std::memcmp
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/train/pretrain.hpp"
#include "darkbert/train/training_checkpoint.hpp"
#include "test_support.hpp"

namespace {

struct Stop {};  // thrown from a callback: the loop ends as a kill would end it

struct Setup {
  darkbert::Tokenizer tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  darkbert::TokenizedCorpus corpus =
      darkbert::tokenize_corpus(darkbert::test::data_dir() / "corpus/heldout.txt", tokenizer, {.max_documents = 6});

  darkbert::Transformer<float> model() const {
    auto c = darkbert::ModelConfig::bert_shape(2, 16, 2, 32, 30522, 64);
    c.architecture = "BertForPreTraining";
    return darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 5);
  }
  darkbert::PretrainingTask task() const {
    return {darkbert::Family::bert, corpus, corpus, tokenizer, {.max_length = 32, .heldout_pairs = 24}, 9};
  }
};

const darkbert::PretrainOptions options{.batch_size = 4, .learning_rate = 5e-3, .warmup_steps = 3, .steps = 12,
                                        .eval_every = 0, .checkpoint_every = 4, .show_progress = false};

std::vector<float> all_parameters(darkbert::Transformer<float>& m) {
  std::vector<float> out;
  for (const auto& slot : darkbert::parameter_slots(m.params(), m.config())) {
    const darkbert::Index n = slot.elements();
    out.insert(out.end(), slot.data, slot.data + n);
  }
  return out;
}

// Trains `options` straight, and again stopped after step 6 (checkpoint at 4) and resumed from disk in
// fresh objects; the two must end bit-identical.
void check_resume_is_bit_identical(const Setup& s, const darkbert::PretrainOptions& options) {
  const auto dir = darkbert::test::scratch_dir("pretrain_resume") / "checkpoint";
  // Uninterrupted.
  auto straight = s.model();
  {
    auto task = s.task();
    darkbert::AdamW<float> optimizer(straight);
    darkbert::pretrain(straight, optimizer, task, options, {});
  }
  // Stopped after step 6 (checkpoint at 4), then resumed from the checkpoint in fresh objects.
  {
    auto model = s.model();
    auto task = s.task();
    darkbert::AdamW<float> optimizer(model);
    darkbert::PretrainCallbacks<float> callbacks;
    callbacks.checkpoint = [&](const darkbert::PretrainState& st) {
      darkbert::save_training_checkpoint(dir, model, optimizer, st.to_json());
    };
    callbacks.after_step = [](const darkbert::PretrainState& st) {
      if (st.step == 6) throw Stop{};
    };
    CHECK_THROWS_AS(darkbert::pretrain(model, optimizer, task, options, {}, callbacks), Stop);
  }
  // A kill between the two renames of the next save leaves only <dir>.old and a torn <dir>.tmp.
  std::filesystem::rename(dir, std::filesystem::path(dir.string() + ".old"));
  std::filesystem::create_directories(dir.string() + ".tmp");
  darkbert::test::write_file(std::filesystem::path(dir.string() + ".tmp") / "state.json", "{\"step\": ");
  auto [model, json] = darkbert::load_training_checkpoint<float>(dir);
  const auto state = darkbert::PretrainState::from_json(json, "state.json");
  CHECK(state.step == 4);
  darkbert::AdamW<float> optimizer(model);
  darkbert::restore_optimizer(dir, optimizer);
  CHECK(optimizer.steps() == 4);
  auto task = s.task();
  const auto end = darkbert::pretrain(model, optimizer, task, options, state);
  CHECK(end.step == 12);
  const auto a = all_parameters(straight), b = all_parameters(model);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("pretraining lowers the held-out masked-LM loss") {
  const Setup s;
  auto model = s.model();
  auto task = s.task();
  const auto before = task.evaluate(model);
  CHECK(before.loss == doctest::Approx(std::log(30522.0)).epsilon(0.05));  // a uniform guess at the start
  darkbert::AdamW<float> optimizer(model);
  auto o = options;
  o.steps = 200;
  o.checkpoint_every = 0;
  const auto state = darkbert::pretrain(model, optimizer, task, o, {});
  CHECK(state.step == 200);
  CHECK(state.tokens > 200 * 4 * 8);
  const auto after = task.evaluate(model);
  CHECK(after.loss < before.loss - 2.0);
  CHECK(after.next_sentence_accuracy >= 0);
}

TEST_CASE("a dropout warm-up ramps the probabilities from 0: its first step is a step without dropout") {
  auto o = options;
  o.dropout_warmup_steps = 4;
  CHECK(o.dropout_scale_at(0) == 0);
  CHECK(o.dropout_scale_at(1) == 0.25);
  CHECK(o.dropout_scale_at(3) == 0.75);
  CHECK(o.dropout_scale_at(4) == 1);
  CHECK(options.dropout_scale_at(0) == 1);  // no warm-up: full dropout from the start
  // A pass's masks carry the scaled probability, on their usual streams.
  const darkbert::TrainingPass<float> half{.dropout_scale = 0.5, .seed = 3, .step = 2};
  const darkbert::TrainingPass<float> full{.seed = 3, .step = 2};
  CHECK(half.mask(0.2, 5).p == doctest::Approx(0.1));
  CHECK(half.mask(0.2, 5).key == full.mask(0.2, 5).key);
  CHECK_FALSE(darkbert::TrainingPass<float>{.dropout_scale = 0}.mask(0.2, 5).active());

  const Setup s;
  auto train = [&](darkbert::PretrainOptions run) {
    auto model = s.model();
    auto task = s.task();
    darkbert::AdamW<float> optimizer(model);
    run.checkpoint_every = 0;
    darkbert::pretrain(model, optimizer, task, run, {});
    return all_parameters(model);
  };
  o.steps = 1;
  o.warmup_steps = 0;  // step 0 at the full rate (a warming rate starts at 0: no update to compare)
  auto off = o;
  off.dropout = false;
  off.dropout_warmup_steps = 0;
  auto no_warmup = off;
  no_warmup.dropout = true;
  const auto warmed = train(o), without = train(off), dropped = train(no_warmup);
  REQUIRE(warmed.size() == without.size());
  CHECK(std::memcmp(warmed.data(), without.data(), warmed.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(warmed.data(), dropped.data(), warmed.size() * sizeof(float)) != 0);  // the warm-up changed step 0
}

TEST_CASE("pretraining GPT-2 lowers the held-out causal-LM loss") {
  // GPT2LMHeadModel built from its architecture name (not from checkpoint tensors) has its LM head.
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto corpus = darkbert::tokenize_corpus(darkbert::test::data_dir() / "corpus/heldout.txt", tokenizer, {.max_documents = 6});
  auto c = darkbert::ModelConfig::gpt2_shape(2, 16, 2, 32, 50257, 64);
  c.architecture = "GPT2LMHeadModel";
  auto model = darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 5);
  darkbert::PretrainingTask task(darkbert::Family::gpt2, corpus, corpus, tokenizer, {.max_length = 32, .heldout_windows = 8}, 9);
  const auto before = task.evaluate(model);
  CHECK(before.tokens == 8 * 31);  // every next-token position of the 8 held-out windows
  CHECK(before.loss == doctest::Approx(std::log(50257.0)).epsilon(0.05));
  darkbert::AdamW<float> optimizer(model);
  auto o = options;
  o.steps = 100;
  o.checkpoint_every = 0;
  darkbert::pretrain(model, optimizer, task, o, {});
  CHECK(task.evaluate(model).loss < before.loss - 2.0);
}

TEST_CASE("GPT-2 can predict a seeded share of the positions; predicting all of them that way is the full loss") {
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto corpus = darkbert::tokenize_corpus(darkbert::test::data_dir() / "corpus/heldout.txt", tokenizer, {.max_documents = 6});
  const darkbert::PretrainingTaskOptions sampled{.max_length = 32, .heldout_windows = 8, .predicted_fraction = 0.25};
  darkbert::PretrainingTask task(darkbert::Family::gpt2, corpus, corpus, tokenizer, sampled, 9);
  const auto first = task.batch(0, 0, 8).positions;
  // About a quarter of the 8 x 31 positions that have a next token, never the last of a row.
  CHECK(static_cast<double>(first.size()) == doctest::Approx(0.25 * 8 * 31).epsilon(0.3));
  for (const auto& [b, i] : first) CHECK(i < 31);
  CHECK(task.batch(0, 0, 8).positions == first);  // drawn from (seed, epoch, example): a resume draws them again
  CHECK(task.batch(0, 8, 8).positions != first);
  darkbert::PretrainingTask other_seed(darkbert::Family::gpt2, corpus, corpus, tokenizer, sampled, 10);
  CHECK(other_seed.batch(0, 0, 8).positions != first);
  CHECK(darkbert::test::message_of([&] {
          darkbert::PretrainingTask(darkbert::Family::gpt2, corpus, corpus, tokenizer, {.predicted_fraction = 0}, 9);
        }).find("predicted_fraction") != std::string::npos);

  // Listing every position that has a next token gives the loss and gradients of the full causal LM.
  auto c = darkbert::ModelConfig::gpt2_shape(2, 16, 2, 32, 50257, 64);
  c.architecture = "GPT2LMHeadModel";
  const auto model = darkbert::Transformer<double>::random(c, darkbert::TaskHeads::for_architecture(c), 5);
  darkbert::PretrainingTask full(darkbert::Family::gpt2, corpus, corpus, tokenizer, {.max_length = 32}, 9);
  const auto b = full.batch(0, 0, 3);
  CHECK(b.positions.empty());
  std::vector<std::pair<darkbert::Index, darkbert::Index>> every;
  for (darkbert::Index row = 0; row < 3; ++row)
    for (darkbert::Index i = 0; i < 31; ++i) every.emplace_back(row, i);
  darkbert::TrainingStep<double> all_logits(model), listed(model);
  const darkbert::StepSettings no_dropout{.dropout = false};
  const double loss_all = all_logits.forward_backward(model, b.batch, b.labels, no_dropout);
  const double loss_listed = listed.forward_backward(model, b.batch, b.labels, no_dropout, every);
  CHECK(loss_listed == doctest::Approx(loss_all).epsilon(1e-12));
  const auto& g1 = all_logits.gradients().embeddings.word;
  const auto& g2 = listed.gradients().embeddings.word;
  double largest = 0, difference = 0;
  for (darkbert::Index k = 0; k < static_cast<darkbert::Index>(g1.size()); ++k) {
    largest = std::max(largest, std::abs(g1.data()[k]));
    difference = std::max(difference, std::abs(g1.data()[k] - g2.data()[k]));
  }
  CHECK(largest > 0);
  CHECK(difference <= 1e-12 * (1 + largest));
  // A listed position at the end of a row has no next token to predict.
  every.emplace_back(0, 31);
  CHECK(darkbert::test::message_of([&] { listed.forward_backward(model, b.batch, b.labels, no_dropout, every); })
            .find("last of its row") != std::string::npos);
}

TEST_CASE("a short phase trains on short examples first, then on max_length, each length in its own epochs") {
  auto o = options;
  o.short_length = 16;
  o.short_fraction = 0.5;
  CHECK(o.length_at(0, 0, 32) == 16);  // the schedule's length not known yet: the start
  CHECK(o.length_at(5, 12, 32) == 16);
  CHECK(o.length_at(6, 12, 32) == 32);
  CHECK(options.length_at(0, 12, 32) == 32);
  const Setup s;
  auto model = s.model();
  auto task = s.task();
  darkbert::AdamW<float> optimizer(model);
  std::vector<int> lengths;
  std::vector<std::int64_t> epochs;
  darkbert::PretrainCallbacks<float> callbacks;
  callbacks.after_step = [&](const darkbert::PretrainState& st) {
    lengths.push_back(st.length);
    epochs.push_back(st.epoch);
  };
  darkbert::pretrain(model, optimizer, task, o, {}, callbacks);
  CHECK(lengths == std::vector<int>{16, 16, 16, 16, 16, 16, 32, 32, 32, 32, 32, 32});
  CHECK(epochs[6] == epochs[5] + 1);
  const auto short_batch = task.batch(0, 0, 4, 16);
  CHECK(short_batch.batch.length <= 16);
  CHECK(darkbert::test::message_of([&] { task.batch(0, 0, 4, 40); }).find("40 tokens") != std::string::npos);
}

TEST_CASE("the task's masking rate applies to training batches, not to the held-out score") {
  const Setup s;
  darkbert::PretrainingTask usual = s.task();
  darkbert::PretrainingTask heavy(darkbert::Family::bert, s.corpus, s.corpus, s.tokenizer,
                                  {.max_length = 32, .heldout_pairs = 24, .masking = {.mask_prob = 0.3}}, 9);
  const auto few = usual.batch(0, 0, 8).positions.size(), many = heavy.batch(0, 0, 8).positions.size();
  CHECK(static_cast<double>(many) == doctest::Approx(2.0 * static_cast<double>(few)).epsilon(0.2));
  const auto model = s.model();
  CHECK(heavy.evaluate(model).tokens == usual.evaluate(model).tokens);
}

TEST_CASE("a run stopped after a checkpoint and resumed from disk ends bit-identical") {
  const Setup s;
  check_resume_is_bit_identical(s, options);
  auto with_short_phase = options;  // resumed at step 4 before the change of length at 6, and run across it
  with_short_phase.short_length = 16;
  with_short_phase.short_fraction = 0.5;
  check_resume_is_bit_identical(s, with_short_phase);

  const auto dir = darkbert::test::scratch_dir("pretrain_resume") / "checkpoint";

  CHECK(darkbert::test::message_of([&] { darkbert::load_training_checkpoint<float>(dir.parent_path() / "none"); })
            .find("no training checkpoint") != std::string::npos);
  CHECK(darkbert::test::message_of([] { darkbert::PretrainState::from_json({{"step", 3}}, "x/state.json"); })
            .find("x/state.json: not a pretraining state") == 0);
}

TEST_CASE("pretrain: the learning rate decays over the recipe's last share of the steps, at peak before; a share of 1 is the linear schedule") {
  // The pretraining loop's share of the steps: 1 keeps the linear schedule's every value.
  darkbert::PretrainOptions o{.learning_rate = 3e-3, .warmup_steps = 300};
  std::vector<double> before;
  for (std::int64_t step = 0; step <= 5500; step += 50) before.push_back(o.rate_at(step, 5500));
  o.decay_fraction = 0.3;  // decays over the last 1,650 of 5,500 steps
  CHECK(o.rate_at(3849, 5500) == 3e-3);
  CHECK(o.rate_at(4675, 5500) == doctest::Approx(1.5e-3));
  CHECK(o.rate_at(5500, 5500) == 0.0);
  CHECK(o.rate_at(100, 0) == doctest::Approx(1e-3));  // length not known yet: the warm-up alone
  o.decay_fraction = 1;
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(o.rate_at(static_cast<std::int64_t>(i) * 50, 5500) == before[i]);
}
