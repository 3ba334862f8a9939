// train/grow_depth.hpp: a grown GPT-2 computes exactly what the shallow one did (its new blocks are the
// identity), a post-LN BERT is refused by name, and a growing pretraining run killed before or after it
// grows resumes to the same bytes as one that never stopped (train/pretraining_run.hpp); the learning rate
// warms up again after growing (train/pretrain.hpp).
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem
#include <random>      // std::mt19937_64
#include <sstream>     // std::ostringstream, std::istringstream
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/train/grow_depth.hpp"
#include "darkbert/train/pretraining_run.hpp"
#include "test_support.hpp"

using darkbert::test::read_bytes;

namespace {

namespace fs = std::filesystem;

// eval.csv without its wall-time and training-loss columns (the third and fourth: a resumed run averages
// the training loss over the steps since it resumed).
std::string eval_log_without_times(const fs::path& p) {
  std::istringstream in(read_bytes(p));
  std::string line, out;
  while (std::getline(in, line)) {
    std::size_t a = line.find(',');
    a = line.find(',', a + 1);
    const std::size_t b = line.find(',', line.find(',', a + 1) + 1);
    out += line.substr(0, a) + line.substr(b) + "\n";
  }
  return out;
}

struct StopRun {};  // thrown after a step: the run ends as a kill would end it

darkbert::PretrainRecipe growing_recipe() {
  auto r = darkbert::named_recipe("tiny", "gpt2");
  r.layers = 3, r.grow_from = 1, r.grow_fraction = 0.5, r.grow_warmup = 4;
  // Short windows and evaluations only at the start, the growth and the end: each is a full-softmax pass.
  r.seq = 32, r.steps = 16, r.max_documents = 20, r.probe_pairs = 4, r.eval_every = 0, r.checkpoint_every = 3;
  r.softmax_draws = 256, r.heldout_examples = 16;
  return r;
}

}  // namespace

TEST_CASE("a GPT-2 grown in depth gives the shallow model's outputs bit for bit") {
  const auto shallow = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / "gpt2_lm");
  const int layers = shallow.config().num_layers;
  const auto grown = darkbert::with_identity_blocks(shallow, layers + 3, 7);
  REQUIRE(grown.config().num_layers == layers + 3);
  CHECK(grown.params().blocks[0].qkv.weight == shallow.params().blocks[0].qkv.weight);
  const auto& added = grown.params().blocks.back();
  CHECK(added.attn_out.weight.isZero(0));
  CHECK(added.mlp_out.bias.isZero(0));
  CHECK_FALSE(added.qkv.weight.isZero(0));  // fresh random weights, so the new heads can learn
  CHECK_FALSE(added.mlp_in.weight.isZero(0));

  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> token(0, shallow.config().vocab_size - 1);
  std::vector<std::vector<int>> rows = {std::vector<int>(13), std::vector<int>(9)};
  for (auto& row : rows)
    for (auto& id : row) id = token(rng);
  const auto batch = darkbert::Batch::from_rows(rows, 0);
  const auto before = shallow.forward(batch);
  const auto after = grown.forward(batch);
  CHECK(after.token_logits == before.token_logits);
  CHECK(after.last_hidden_state == before.last_hidden_state);
  // The shallow blocks' maps are unchanged; the grown model has maps for its new blocks too.
  const auto per_layer = before.attentions.size() / layers;
  REQUIRE(after.attentions.size() == per_layer * (layers + 3));
  CHECK(std::equal(before.attentions.data(), before.attentions.data() + before.attentions.size(), after.attentions.data()));
}

TEST_CASE("growing is refused for post-LN models and for no more blocks than there are") {
  const auto bert = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / "bert_model");
  CHECK(darkbert::test::message_of([&] { darkbert::with_identity_blocks(bert, 4, 1); }).find(
            "(post-LN), so a new block cannot start as the identity") != std::string::npos);
  const auto gpt2 = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / "gpt2_lm");
  CHECK(darkbert::test::message_of([&] { darkbert::with_identity_blocks(gpt2, gpt2.config().num_layers, 1); }).find(
            "is not more than its") != std::string::npos);
  auto r = growing_recipe();
  r.arch = "bert", r.softmax_draws = 0;
  CHECK(darkbert::test::message_of([&] { r.validate(); }).find("grow_from is for gpt2 only") != std::string::npos);
  r = growing_recipe();
  r.grow_from = 3;
  CHECK(darkbert::test::message_of([&] { r.validate(); }).find("must be fewer blocks than layers") != std::string::npos);
  r = growing_recipe();
  r.grow_fraction = 1;
  CHECK(darkbert::test::message_of([&] { r.validate(); }).find("strictly between 0 and 1") != std::string::npos);
}

TEST_CASE("after growing, the learning rate warms up again from zero, then follows the schedule") {
  const darkbert::PretrainOptions o{.learning_rate = 1e-3, .warmup_steps = 10, .rewarm_at = 50, .rewarm_steps = 10};
  const darkbert::LinearSchedule schedule{.peak = 1e-3, .warmup_steps = 10, .total_steps = 100};
  CHECK(o.rate_at(49, 100) == schedule(49));
  CHECK(o.rate_at(50, 100) == 0.0);
  CHECK(o.rate_at(55, 100) == doctest::Approx(schedule(55) * 0.5));
  CHECK(o.rate_at(60, 100) == schedule(60));
}

TEST_CASE("a growing run killed before or after it grows resumes to the uninterrupted run's bytes") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), darkbert::test::scratch_dir("grow_cache"));
  const auto dir = darkbert::test::scratch_dir("grow_runs");
  const auto straight = darkbert::run_pretraining(root, {.out = dir / "straight", .recipe = growing_recipe(), .show_progress = false});
  CHECK(straight.state.step == 16);
  const auto model = darkbert::Transformer<float>::load(dir / "straight");
  CHECK(model.config().num_layers == 3);
  // Killed at step 7 (checkpoint at 6, growth at 8), resumed; killed again at step 11 (checkpoint at 9, grown).
  for (std::int64_t kill : {7, 11})
    CHECK_THROWS_AS(darkbert::run_pretraining(root, {.out = dir / "killed", .recipe = growing_recipe(), .resume = true,
                                                     .show_progress = false,
                                                     .after_step = [kill](const darkbert::PretrainState& s) {
                                                       if (s.step == kill) throw StopRun{};
                                                     }}),
                    StopRun);
  std::ostringstream log;
  darkbert::run_pretraining(root, {.out = dir / "killed", .recipe = growing_recipe(), .resume = true, .show_progress = false, .log = &log});
  CHECK(log.str().find("resuming") != std::string::npos);
  const auto logged = eval_log_without_times(dir / "straight" / "eval.csv");
  CHECK(logged.find("\n8,") != std::string::npos);  // scored at the growth step too
  CHECK(eval_log_without_times(dir / "killed" / "eval.csv") == logged);
  CHECK(read_bytes(dir / "killed" / "model.safetensors") == read_bytes(dir / "straight" / "model.safetensors"));
}
