// train/pretraining_recipe.hpp: the named recipes, their validation (errors name the field), the JSON a
// run saves as run.json and reads back on resume, and the model configuration a recipe builds.
#include <doctest/doctest.h>

#include <string>  // std::string

#include <nlohmann/json.hpp>

#include "darkbert/train/pretraining_recipe.hpp"
#include "test_support.hpp"

using darkbert::named_recipe;
using darkbert::PretrainRecipe;
using darkbert::test::message_of;

TEST_CASE("the mini recipe: width 128, 4 heads; BERT 2 blocks at two lengths, GPT-2 4 blocks at 128 with a sampled softmax") {
  const auto bert = named_recipe("mini", "bert"), gpt2 = named_recipe("mini", "gpt2");
  CHECK(bert.layers == 2);
  CHECK(gpt2.layers == 4);
  for (const auto& r : {bert, gpt2}) {
    CHECK(r.hidden == 128);
    CHECK(r.heads == 4);
    CHECK(r.ff == 512);
    CHECK(r.seq == 128);
    CHECK(r.position_init == "sinusoidal");
    CHECK_NOTHROW(r.validate());
  }
  CHECK(bert.steps == 8700);
  CHECK(bert.lr == doctest::Approx(1e-3));
  CHECK(bert.short_seq == 32);
  CHECK(bert.softmax_draws == 0);
  CHECK(gpt2.arch == "gpt2");
  CHECK(gpt2.steps == 10000);
  CHECK(gpt2.short_fraction == 0);
  CHECK(gpt2.batch == 16);
  CHECK(gpt2.softmax_draws == 4096);
  const auto study = named_recipe("study", "bert");
  CHECK(study.layers == 6);
  CHECK(study.heads == 8);
  CHECK(study.hidden == 128);
  CHECK(study.dropout == 0.05);  // 0.1: no positional head; 0: no vertical head (docs/default-models.md)
  CHECK(study.short_fraction == 0.8);
  CHECK(study.steps == bert.steps);
  const auto study_gpt2 = named_recipe("study", "gpt2");
  CHECK(study_gpt2.layers == 12);
  CHECK(study_gpt2.heads == 4);
  CHECK(study_gpt2.softmax_draws == gpt2.softmax_draws);
  CHECK(study_gpt2.position_rms == 0.2);  // at mini's 0.06 the previous-token head grew slower
  CHECK(study_gpt2.attention_dropout == 0.2);
  CHECK(study_gpt2.dropout == gpt2.dropout);
  CHECK(study_gpt2.steps == 5500);
  CHECK(named_recipe("reference", "bert").minutes == 20);
  CHECK(named_recipe("reference", "bert").hidden == 256);
}

TEST_CASE("a recipe's errors name what is wrong") {
  CHECK(message_of([] { named_recipe("huge", "bert"); }) == "pretraining: unknown recipe 'huge' (study, mini, reference or tiny)");
  auto r = named_recipe("tiny", "bert");
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: give a number of steps or minutes");
  r.steps = 10;
  CHECK_NOTHROW(r.validate());
  r.short_seq = 100;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: the short phase's length (100) exceeds the sequence length (64)");
  r.short_seq = 0;
  r.arch = "t5";
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: arch is 't5' (bert or gpt2)");
  r.arch = "bert";
  r.batch = 0;
  CHECK(message_of([&] { r.validate(); }) ==
        "pretraining recipe: layers, hidden, heads, ff, seq and batch must be positive");
  r.batch = 32;
  r.batch_slices = 33;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: batch_slices (33) must lie between 1 and the batch (32)");
  r.batch_slices = 0;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: batch_slices (0) must lie between 1 and the batch (32)");
  r.batch_slices = 1;
  r.softmax_draws = 4096;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: softmax_draws (sampled softmax) is for gpt2 only");
  r.arch = "gpt2";
  CHECK_NOTHROW(r.validate());
  r.softmax_draws = -1;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: softmax_draws is negative");
  r.softmax_draws = 0;
  r.dropout_warmup = -1;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: dropout_warmup is negative");
  r.dropout_warmup = 0;
  for (double fraction : {0.0, -0.5, 1.5}) {
    r.decay_fraction = fraction;
    CHECK(message_of([&] { r.validate(); }).find("pretraining recipe: decay_fraction (") == 0);
  }
  r.decay_fraction = 0.3;
  CHECK_NOTHROW(r.validate());
  for (double beta2 : {0.0, 1.0, -0.1}) {
    r.adam_beta2 = beta2;
    CHECK(message_of([&] { r.validate(); }).find("pretraining recipe: adam_beta2 (") == 0);
  }
  r.adam_beta2 = 0.95;
  r.weight_decay = -0.01;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: weight_decay is negative");
  r.weight_decay = 0;
  CHECK_NOTHROW(r.validate());
  r.qk_init_std = 0;
  CHECK(message_of([&] { r.validate(); }) == "pretraining recipe: qk_init_std (0) must be positive");
  r.qk_init_std = 0.05;
  CHECK_NOTHROW(r.validate());
}

TEST_CASE("a recipe survives its JSON (run.json), and a run.json from before a field existed takes its default") {
  auto r = named_recipe("mini", "gpt2");
  r.predicted_fraction = 0.25;
  r.softmax_draws = 4096;
  r.seed = 7;
  r.heldout_examples = 32;
  r.batch_slices = 2;
  r.weights_seed = 3;
  r.data_seed = 4;
  r.dropout_warmup = 1000;
  r.decay_fraction = 0.3;
  r.adam_beta2 = 0.95;
  r.weight_decay = 0.1;
  r.qk_init_std = 0.05;
  const auto back = nlohmann::json(r).get<PretrainRecipe>();
  CHECK(nlohmann::json(back) == nlohmann::json(r));
  auto old = nlohmann::json(r);
  old.erase("steps");
  old.erase("predicted_fraction");
  old.erase("softmax_draws");
  old.erase("heldout_examples");
  old.erase("batch_slices");
  old.erase("weights_seed");
  old.erase("data_seed");
  old.erase("dropout_warmup");
  old.erase("decay_fraction");
  old.erase("adam_beta2");
  old.erase("weight_decay");
  old.erase("qk_init_std");
  const auto read = old.get<PretrainRecipe>();
  CHECK(read.steps == 0);
  CHECK(read.predicted_fraction == 1);
  CHECK(read.softmax_draws == 0);
  CHECK(read.heldout_examples == 0);  // the task's default held-out size
  CHECK(read.batch_slices == 1);       // the whole batch at once
  CHECK(read.dropout_warmup == 0);     // full dropout from the first step
  CHECK(back.dropout_warmup == 1000);
  CHECK(read.decay_fraction == 1);     // the linear schedule
  CHECK(back.decay_fraction == 0.3);
  CHECK(read.adam_beta2 == 0.999);  // AdamW as before the fields existed
  CHECK(read.weight_decay == 0.01);
  CHECK(back.adam_beta2 == 0.95);
  CHECK(back.weight_decay == 0.1);
  CHECK(read.qk_init_std == 0.02);  // the model's own draw, as before the field existed
  CHECK(back.qk_init_std == 0.05);
  CHECK(read.seed == 7);
  CHECK(read.initial_weights_seed() == 7);  // the weights from --seed, as before the field existed
  CHECK(read.task_seed() == 7);
  CHECK(back.initial_weights_seed() == 3);
  CHECK(back.task_seed() == 4);
  CHECK(back.seed == 7);
}

TEST_CASE("recipe_config: the recipe's shape, the real vocabulary, at least 128 positions, its dropout") {
  auto r = named_recipe("tiny", "bert");
  r.dropout = 0.05;
  const auto c = darkbert::recipe_config(r);
  CHECK(c.architecture == "BertForPreTraining");
  CHECK(c.num_layers == 2);
  CHECK(c.hidden_size == 64);
  CHECK(c.vocab_size == 30522);
  CHECK(c.max_sequence_length() == 128);
  CHECK(c.hidden_dropout == doctest::Approx(0.05));
  const auto g = darkbert::recipe_config(named_recipe("mini", "gpt2"));
  CHECK(g.architecture == "GPT2LMHeadModel");
  CHECK(g.vocab_size == 50257);
}
