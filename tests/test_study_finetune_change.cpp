// Tests for study/finetune_change.hpp (§3.3, Figure 5): a model against itself, a model with one head's
// pattern replaced by a masking policy, a tiny fine-tune, a causal model; the per-layer ranking and the
// aggregation over seeds against hand-computed values; merging shares of examples; save/load round trips,
// the figures, and bad input named.
#include <doctest/doctest.h>

#include <algorithm>  // std::min
#include <cmath>      // std::abs, std::sqrt, std::isnan
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/study/finetune_change.hpp"
#include "darkbert/train/fine_tune.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

namespace {

namespace study = darkbert::study;
using darkbert::test::shared_root;

// Loaded once for the file (named for it: the unity build shares file scope with test_support's bert_tokenizer).
const darkbert::Tokenizer& finetune_change_tokenizer() {
  static const auto t = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  return t;
}

darkbert::Transformer<float> real_vocab_bert() {
  return darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model_real_vocab");
}

study::TaskInputs change_mrpc_inputs(const darkbert::ModelConfig& config, std::size_t n = 6) {
  return study::load_task_inputs(shared_root(), darkbert::GlueTask::mrpc, finetune_change_tokenizer(), config,
                                 {.max_examples = n, .seed = 1, .max_length = 40});
}

// A change measured by hand: 3 layers x 2 heads.
study::FineTuneChange change_by_hand(std::uint64_t seed, std::vector<double> cosines) {
  study::FineTuneChange c;
  c.task = "RTE", c.seed = seed, c.pretrained = "p", c.finetuned = "f" + std::to_string(seed), c.provenance = "by hand";
  c.cosine = darkbert::make_head_matrix<double>("cosine", 3, 2);
  for (int k = 0; k < 6; ++k) c.cosine(k / 2, k % 2) = cosines[static_cast<std::size_t>(k)];
  c.cosine.examples = 10;
  return c;
}

}  // namespace

TEST_CASE("measure_fine_tune_change: a model against itself has cosine 1 on every head") {
  const auto model = real_vocab_bert();
  const auto inputs = change_mrpc_inputs(model.config());
  const auto c = study::measure_fine_tune_change(model, model, inputs, {.seed = 3, .pretrained = "a", .finetuned = "a"});
  CHECK(c.task == "MRPC");
  CHECK(c.seed == 3);
  CHECK(c.examples() == 6);
  REQUIRE(c.layers() == 2);
  REQUIRE(c.heads() == 4);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) CHECK(c.cosine(l, h) == doctest::Approx(1.0).epsilon(1e-6));
  for (double d : c.layer_change()) CHECK(std::abs(d) < 1e-6);
}

TEST_CASE("measure_fine_tune_change: a head whose pattern a policy replaces changes, and only what it feeds") {
  const auto model = real_vocab_bert();
  const auto inputs = change_mrpc_inputs(model.config());
  // Last layer, head 2 made uniform: nothing else can change.
  darkbert::MaskingPolicies<float> last;
  last.add(darkbert::uniform_policy<float>(), {{1, 2}});
  const auto c = study::measure_fine_tune_change(model, model, inputs, {}, &last);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      CAPTURE(l);
      CAPTURE(h);
      if (l == 1 && h == 2) CHECK(c.cosine(l, h) < 0.99);
      else CHECK(c.cosine(l, h) == doctest::Approx(1.0).epsilon(1e-6));
    }
  CHECK(c.layers_by_change().front() == 1);
  // By hand: against the uniform map u (every entry 1/n), a map a whose n rows each sum to 1 has
  // a.u = n/n = 1 and |u| = 1, so cos(a, u) = 1/|a|; the section's value is its mean over the examples.
  double sum = 0;
  study::for_each_attention(model, inputs, [&](std::size_t, const darkbert::AttentionView<float>& v) {
    sum += 1.0 / std::sqrt(static_cast<double>(v.block(1, 2).squaredNorm()));
  });
  CHECK(c.cosine(1, 2) == doctest::Approx(sum / static_cast<double>(inputs.size())).epsilon(1e-5));

  // First layer, head 1: that head changes, and every head of the layer after it sees other inputs.
  darkbert::MaskingPolicies<float> first;
  first.add(darkbert::uniform_policy<float>(), {{0, 1}});
  const auto d = study::measure_fine_tune_change(model, model, inputs, {}, &first);
  CHECK(d.cosine(0, 1) < 0.99);
  for (int h : {0, 2, 3}) CHECK(d.cosine(0, h) == doctest::Approx(1.0).epsilon(1e-6));
  bool layer1_moved = false;
  for (int h = 0; h < 4; ++h) layer1_moved = layer1_moved || d.cosine(1, h) < 1.0 - 1e-6;
  CHECK(layer1_moved);
}

TEST_CASE("measure_fine_tune_change: a tiny fine-tune of BERT and of a causal GPT-2") {
  const auto root = shared_root();
  // BERT: the real-vocabulary encoder turned into an MRPC classifier and trained a few steps.
  const auto base = real_vocab_bert();
  auto config = base.config();
  config.architecture = "BertForSequenceClassification";
  config.labels = {"not_equivalent", "equivalent"};
  auto tuned = base.with_task_heads(config, darkbert::TaskHeads::for_architecture(config), 1);
  const auto train = study::load_task_inputs(root, darkbert::GlueTask::mrpc, finetune_change_tokenizer(), config,
                                             {.max_examples = 32, .seed = 9, .max_length = 40});
  darkbert::fine_tune(tuned, train.texts, finetune_change_tokenizer().pad_id(),
                      {.epochs = 2, .batch_size = 8, .learning_rate = 1e-2, .seed = 1, .show_progress = false});
  const auto inputs = change_mrpc_inputs(config);
  const auto c = study::measure_fine_tune_change(base, tuned, inputs, {.seed = 1});
  double lowest = 1;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      CHECK(c.cosine(l, h) > 0.0);
      CHECK(c.cosine(l, h) <= 1.0 + 1e-6);
      lowest = std::min(lowest, c.cosine(l, h));
    }
  CHECK(lowest < 0.999);
  CHECK_FALSE(c.causal);

  // GPT-2 (causal): a random model with GPT-2's vocabulary against a fine-tuned copy, and against itself.
  const auto gpt2_tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  auto g = darkbert::ModelConfig::gpt2_shape(2, 16, 4, 32, 50257, 64);
  g.architecture = "GPT2ForSequenceClassification";
  g.labels = {"not_equivalent", "equivalent"};
  g.pad_token_id = gpt2_tokenizer.pad_id();
  auto gpt2 = darkbert::Transformer<float>::random(g, darkbert::TaskHeads::for_architecture(g), 5);
  // N(0, 0.02) weights give near-uniform maps; larger queries and keys give peaked ones, as a trained model has.
  for (auto& block : gpt2.params().blocks) block.qkv.weight.topRows(2 * g.hidden_size) *= 40.0f;
  auto gpt2_tuned = gpt2;
  const auto gtrain = study::load_task_inputs(root, darkbert::GlueTask::mrpc, gpt2_tokenizer, g,
                                              {.max_examples = 32, .seed = 9, .max_length = 40});
  darkbert::fine_tune(gpt2_tuned, gtrain.texts, gpt2_tokenizer.pad_id(),
                      {.epochs = 2, .batch_size = 8, .learning_rate = 1e-2, .seed = 1, .show_progress = false});
  const auto ginputs = study::load_task_inputs(root, darkbert::GlueTask::mrpc, gpt2_tokenizer, g,
                                               {.max_examples = 6, .seed = 1, .max_length = 40});
  REQUIRE(ginputs.causal);
  const auto same = study::measure_fine_tune_change(gpt2, gpt2, ginputs);
  const auto moved = study::measure_fine_tune_change(gpt2, gpt2_tuned, ginputs, {.seed = 2});
  CHECK(same.causal);
  double lowest_gpt2 = 1;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      CHECK(same.cosine(l, h) == doctest::Approx(1.0).epsilon(1e-6));
      lowest_gpt2 = std::min(lowest_gpt2, moved.cosine(l, h));
    }
  CHECK(lowest_gpt2 < 0.999);
  // A causal head made uniform (1/(t+1) over the visible prefix) moves; its neighbour in the last layer does not.
  darkbert::MaskingPolicies<float> uniform;
  uniform.add(darkbert::uniform_policy<float>(), {{1, 0}});
  const auto u = study::measure_fine_tune_change(gpt2, gpt2, ginputs, {}, &uniform);
  CHECK(u.cosine(1, 0) < 0.999);
  CHECK(u.cosine(1, 1) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("FineTuneChange: per-layer change and its ranking; merging shares of the examples") {
  const auto c = change_by_hand(1, {1, 1, 0.9, 0.9, 0.5, 0.7});
  const auto change = c.layer_change();
  CHECK(change[0] == doctest::Approx(0.0));
  CHECK(change[1] == doctest::Approx(0.1));
  CHECK(change[2] == doctest::Approx(0.4));
  CHECK(c.layers_by_change() == std::vector<int>{2, 1, 0});
  CHECK(c.summary()["last_two_layers_change_most"] == true);
  CHECK(change_by_hand(1, {0.5, 0.5, 0.9, 0.9, 1, 1}).summary()["last_two_layers_change_most"] == false);

  // Two halves of the examples merged = the whole.
  const auto model = real_vocab_bert();
  const auto all = change_mrpc_inputs(model.config(), 6);
  darkbert::MaskingPolicies<float> policy;
  policy.add(darkbert::uniform_policy<float>(), {{0, 2}});
  auto half = [&](std::size_t first) {
    auto part = all;
    part.texts.encodings.assign(all.texts.encodings.begin() + static_cast<long>(first),
                                all.texts.encodings.begin() + static_cast<long>(first + 3));
    part.texts.labels.assign(all.texts.labels.begin() + static_cast<long>(first),
                             all.texts.labels.begin() + static_cast<long>(first + 3));
    return study::measure_fine_tune_change(model, model, part, {}, &policy);
  };
  auto merged = half(0);
  merged.merge(half(3));
  const auto whole = study::measure_fine_tune_change(model, model, all, {}, &policy);
  CHECK(merged.examples() == 6);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) CHECK(merged.cosine(l, h) == doctest::Approx(whole.cosine(l, h)).epsilon(1e-6));
  auto other = change_by_hand(2, {1, 1, 1, 1, 1, 1});
  CHECK(darkbert::test::message_of([&] { merged.merge(other); }).find("cannot merge RTE seed 2 into MRPC seed 0") !=
        std::string::npos);
}

TEST_CASE("aggregate_fine_tune_change: mean and sd per head and per layer over seeds (by hand)") {
  const std::vector<study::FineTuneChange> seeds = {change_by_hand(1, {1, 1, 0.9, 0.9, 0.5, 0.7}),
                                                    change_by_hand(2, {1, 0.8, 0.8, 0.9, 0.6, 0.6}),
                                                    change_by_hand(3, {0.9, 1, 1, 0.7, 0.4, 0.8})};
  const auto a = study::aggregate_fine_tune_change(seeds);
  CHECK(a.seeds == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(a.cosine_mean(0, 1) == doctest::Approx(2.8 / 3));
  CHECK(a.cosine_sd(0, 1) == doctest::Approx(0.1154700538));
  CHECK(a.cosine_sd(2, 0) == doctest::Approx(0.1));
  // Layer change per seed: [0, 0.1, 0.4], [0.1, 0.15, 0.4], [0.05, 0.15, 0.4].
  const auto mean = a.layer_change_mean(), sd = a.layer_change_sd();
  CHECK(mean[0] == doctest::Approx(0.05));
  CHECK(sd[0] == doctest::Approx(0.05));
  CHECK(mean[1] == doctest::Approx(0.4 / 3));
  CHECK(sd[1] == doctest::Approx(0.0288675135));
  CHECK(mean[2] == doctest::Approx(0.4));
  CHECK(a.layer_change(1, 1) == doctest::Approx(0.15));  // seed 2's column
  CHECK(a.layers_by_change() == std::vector<int>{2, 1, 0});
  CHECK(a.last_two_change_most());
  const auto s = a.summary();
  CHECK(s["most_changed_layers"] == nlohmann::json::array({2, 1}));
  CHECK(s["seeds_where_last_two_change_most"] == 3);

  // One seed: sd is NaN (not 0), and says so in the files.
  const auto one = study::aggregate_fine_tune_change({seeds[0]});
  CHECK(std::isnan(one.cosine_sd(0, 0)));
  CHECK(one.summary()["layer_change_sd"][0] == "nan");

  CHECK(darkbert::test::message_of([] { study::aggregate_fine_tune_change(std::vector<study::FineTuneChange>{}); })
            .find("no per-seed results") != std::string::npos);
  auto mixed = seeds;
  mixed[2].task = "MRPC";
  CHECK(darkbert::test::message_of([&] { study::aggregate_fine_tune_change(mixed); }).find("cannot aggregate MRPC with RTE") !=
        std::string::npos);
  auto fewer = seeds;
  fewer[1].cosine.examples = 4;
  CHECK(darkbert::test::message_of([&] { study::aggregate_fine_tune_change(fewer); }).find("seed 2 was measured on 4 examples") !=
        std::string::npos);
  auto twice = seeds;
  twice[1].seed = 3;
  CHECK(darkbert::test::message_of([&] { study::aggregate_fine_tune_change(twice); }).find("seed 3 appears twice") !=
        std::string::npos);
}

TEST_CASE("FineTuneChange and its aggregate: save/load round trips, seed folders, Figure 5, bad files named") {
  const auto dir = darkbert::test::scratch_dir("study_finetune_change_round_trip");
  const std::vector<study::FineTuneChange> seeds = {change_by_hand(1, {1, 1, 0.9, 0.9, 0.5, 0.7}),
                                                    change_by_hand(2, {1, 0.8, 0.8, 0.9, 0.6, 0.6})};
  for (const auto& c : seeds) c.save(study::seed_dir(dir / "RTE", c.seed));
  const auto back = study::FineTuneChange::load(study::seed_dir(dir / "RTE", 2));
  CHECK(back.cosine.values == seeds[1].cosine.values);
  CHECK(back.summary() == seeds[1].summary());
  CHECK(std::filesystem::exists(study::seed_dir(dir / "RTE", 2) / "cosine.npy"));

  const auto a = study::aggregate_fine_tune_change(dir / "RTE");
  CHECK(a.summary() == study::aggregate_fine_tune_change(seeds).summary());
  a.save(dir / "RTE");
  const auto loaded = study::FineTuneChangeAggregate::load(dir / "RTE");
  CHECK(loaded.summary() == a.summary());
  CHECK(loaded.cosine_mean.values == a.cosine_mean.values);
  for (const char* f : {"cosine.png", "cosine.svg", "cosine_mean.csv", "cosine_sd.npy", "layer_change.json"})
    CHECK_MESSAGE(std::filesystem::exists(dir / "RTE" / f), f);
  auto other = loaded;
  other.task = "MRPC";
  study::write_fine_tune_change_overview(dir, {loaded, other});
  for (const char* f : {"fine_tune_change_tasks.png", "fine_tune_change_tasks.svg", "layer_change_tasks.png"})
    CHECK_MESSAGE(std::filesystem::exists(dir / f), f);

  CHECK(darkbert::test::message_of([&] { study::FineTuneChange::load(dir / "none"); })
            .find("fine_tune_change.json: cannot open") != std::string::npos);
  darkbert::test::write_file(study::seed_dir(dir / "RTE", 1) / "fine_tune_change.json", "{\"task\": \"RTE\"}");
  CHECK(darkbert::test::message_of([&] { study::FineTuneChange::load(study::seed_dir(dir / "RTE", 1)); })
            .find("fine_tune_change.json: key 'seed' missing") != std::string::npos);
  const auto small = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model");
  const auto model = real_vocab_bert();
  CHECK(darkbert::test::message_of([&] {
          study::measure_fine_tune_change(model, small, change_mrpc_inputs(model.config(), 2));
        }).find("differ in shape") != std::string::npos);
}
