// Tests for study/disable_heads.hpp (§3.6): the sweep on golden classifiers (BERT, and GPT-2 as the causal
// model) against plain forward passes, the per-seed statistics and their aggregation against hand-computed
// values, save/load round trips, the figures, and bad input named.
#include <doctest/doctest.h>

#include <cmath>      // std::sqrt, std::abs
#include <random>     // std::mt19937_64
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/study/disable_heads.hpp"
#include "darkbert/train/fine_tune.hpp"  // predict
#include "test_support.hpp"

namespace {

namespace study = darkbert::study;

darkbert::Transformer<float> golden(const char* name) {
  return darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models" / name);
}

// Pairs [CLS] a [SEP] b [SEP] with ids inside every golden vocabulary (10..39; 2 and 3 as the specials,
// clear of GPT-2's padding id 98), labels 0..num_labels-1, or scores in [0, 5] when num_labels is 1.
darkbert::LabelledTexts synthetic_pairs(int n, int num_labels, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  darkbert::LabelledTexts t;
  t.num_labels = num_labels;
  t.regression = num_labels == 1;
  for (int i = 0; i < n; ++i) {
    darkbert::Encoding e;
    e.ids.push_back(2);
    for (int k = 0; k < 3 + static_cast<int>(rng() % 5); ++k) e.ids.push_back(10 + static_cast<int>(rng() % 30));
    e.ids.push_back(3);
    e.token_type_ids.assign(e.ids.size(), 0);
    for (int k = 0; k < 2 + static_cast<int>(rng() % 5); ++k) e.ids.push_back(10 + static_cast<int>(rng() % 30));
    e.ids.push_back(3);
    e.token_type_ids.resize(e.ids.size(), 1);
    e.attention_mask.assign(e.ids.size(), 1);
    t.encodings.push_back(e);
    t.labels.push_back(num_labels == 1 ? static_cast<double>(rng() % 501) / 100.0
                                       : static_cast<double>(rng() % static_cast<unsigned>(num_labels)));
  }
  return t;
}

// Sequence logits of one forward over all of `texts` in batches of 16, with `policies` (may be null).
std::vector<float> logits(const darkbert::Transformer<float>& model, const darkbert::LabelledTexts& texts, int pad,
                          const darkbert::MaskingPolicies<float>* policies) {
  std::vector<float> out;
  darkbert::ForwardOptions<float> o;
  o.keep_attentions = false;
  o.keep_hidden_states = false;
  o.policies = policies;
  for (const auto& batch : darkbert::sequential_batches(texts, 16, pad, darkbert::token_types_for(model.config()))) {
    const auto r = model.forward(batch, o);
    out.insert(out.end(), r.sequence_logits.begin(), r.sequence_logits.end());
  }
  return out;
}

// The task metric of `model` with `heads` disabled (uniform), from whole forward passes over the sweep's batches.
double score_with_disabled(const darkbert::Transformer<float>& model, const darkbert::LabelledTexts& texts, int pad,
                           darkbert::GlueMetric metric, std::vector<darkbert::HeadRef> heads) {
  darkbert::MaskingPolicies<float> policies;
  policies.add(darkbert::uniform_policy<float>(), std::move(heads));
  std::vector<double> predictions;
  darkbert::ForwardOptions<float> o;
  o.keep_attentions = false;
  o.keep_hidden_states = false;
  o.policies = &policies;
  // The sweep's batches: of like length, the labels in their order.
  const auto eval = darkbert::evaluation_batches(texts, 16, pad, darkbert::token_types_for(model.config()));
  for (const auto& batch : eval.batches) {
    const auto r = model.forward(batch, o);
    darkbert::append_sequence_predictions(r, predictions);
  }
  std::vector<double> labels;
  for (std::size_t i : eval.order) labels.push_back(texts.labels[i]);
  return darkbert::glue_metric_function(metric)(predictions, labels);
}

// A result built by hand: 3 layers x 2 heads.
study::DisableHeadsResult by_hand(std::uint64_t seed, double baseline, std::vector<double> heads, std::vector<double> layers) {
  study::DisableHeadsResult r;
  r.task = "RTE", r.metric = "accuracy", r.policy = "uniform", r.model = "m", r.provenance = "by hand";
  r.seed = seed, r.examples = 10, r.baseline = baseline;
  r.head_scores = darkbert::make_head_matrix<double>("head_scores", 3, 2);
  for (int k = 0; k < 6; ++k) r.head_scores(k / 2, k % 2) = heads[static_cast<std::size_t>(k)];
  r.layer_scores = darkbert::make_table<double>("layer_scores", "layer", {"0", "1", "2"}, "metric", {"accuracy"});
  for (int l = 0; l < 3; ++l) r.layer_scores(l, 0) = layers[static_cast<std::size_t>(l)];
  return r;
}

}  // namespace

TEST_CASE("disable_heads: disabling nothing is bit-identical to the plain forward; each head's score is its forward's") {
  const auto model = golden("bert_seqcls3");  // 2 layers x 4 heads, 3 labels (MNLI's)
  const auto texts = synthetic_pairs(40, 3, 1);
  const int pad = 0;
  const auto r = study::disable_heads(model, darkbert::GlueTask::mnli, texts, pad, "synthetic", {.naive_check = true});

  // No policy, and an empty policy set, give the same logits bit for bit; the sweep's baseline is their score.
  darkbert::MaskingPolicies<float> none;
  CHECK(logits(model, texts, pad, nullptr) == logits(model, texts, pad, &none));
  CHECK(r.baseline == darkbert::accuracy_metric(darkbert::predict(model, texts, pad, 16), texts.labels));
  CHECK(r.metric == "accuracy");
  CHECK(r.examples == 40);
  CHECK_FALSE(r.causal);
  REQUIRE(r.layers() == 2);
  REQUIRE(r.heads() == 4);

  // Disabling a head changes the output; the prefix-cached sweep scores it as a whole forward does.
  darkbert::MaskingPolicies<float> one;
  one.add(darkbert::uniform_policy<float>(), {{1, 2}});
  CHECK(logits(model, texts, pad, &one) != logits(model, texts, pad, nullptr));
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h)
      CHECK(r.head_scores(l, h) == score_with_disabled(model, texts, pad, darkbert::GlueMetric::accuracy, {{l, h}}));
    CHECK(r.layer_scores(l, 0) ==
          score_with_disabled(model, texts, pad, darkbert::GlueMetric::accuracy, {{l, darkbert::all_heads}}));
  }
  REQUIRE(r.naive_identical.has_value());
  CHECK(*r.naive_identical);
  CHECK(r.block_evaluations < r.naive_block_evaluations);
}

TEST_CASE("disable_heads: a regression task (STS-B, Pearson) and a causal model (GPT-2)") {
  const auto reg = golden("bert_seqreg");
  const auto scores = synthetic_pairs(32, 1, 2);
  const auto r = study::disable_heads(reg, darkbert::GlueTask::stsb, scores, 0, "synthetic");
  CHECK(r.metric == "pearson");
  // The sweep sums over the examples in its batches' order, predict's scores come in input order: the same
  // correlation to rounding.
  CHECK(r.baseline == doctest::Approx(darkbert::pearson_metric(darkbert::predict(reg, scores, 0, 16), scores.labels)).epsilon(1e-12));
  CHECK(r.head_scores(0, 1) == score_with_disabled(reg, scores, 0, darkbert::GlueMetric::pearson, {{0, 1}}));
  CHECK(r.head_scores(0, 1) != r.baseline);  // a Pearson correlation moves with any change of the outputs

  const auto gpt2 = golden("gpt2_seqcls");  // causal, 3 labels, pads with 98 and reads the last real token
  const auto texts = synthetic_pairs(40, 3, 3);
  const int pad = 98;
  const auto c = study::disable_heads(gpt2, darkbert::GlueTask::mnli, texts, pad, "synthetic", {.naive_check = true});
  CHECK(c.causal);
  darkbert::MaskingPolicies<float> none, one;
  one.add(darkbert::uniform_policy<float>(), {{0, 3}});
  CHECK(logits(gpt2, texts, pad, nullptr) == logits(gpt2, texts, pad, &none));
  CHECK(logits(gpt2, texts, pad, &one) != logits(gpt2, texts, pad, nullptr));
  CHECK(c.baseline == darkbert::accuracy_metric(darkbert::predict(gpt2, texts, pad, 16), texts.labels));
  CHECK(c.head_scores(0, 3) == score_with_disabled(gpt2, texts, pad, darkbert::GlueMetric::accuracy, {{0, 3}}));
  CHECK(*c.naive_identical);
  // A causal model's uniform head attends 1/(t+1) over the prefix: the first query sees only itself.
  darkbert::PatternSite<float> site{nullptr, 3, nullptr, true, 0, 0, 0};
  std::vector<float> map(9, 0.5f);
  const int mask[3] = {1, 1, 1};
  site.map = map.data();
  site.key_mask = mask;
  darkbert::uniform_policy<float>()(site);
  CHECK(map == std::vector<float>{1, 0, 0, 0.5f, 0.5f, 0, 1.f / 3, 1.f / 3, 1.f / 3});
}

TEST_CASE("disable_heads on a task's evaluation examples (study/task_inputs.hpp) with a fine-tuned real-vocabulary model") {
  const auto base = golden("bert_model_real_vocab");
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  auto config = base.config();
  config.architecture = "BertForSequenceClassification";
  config.labels = {"not_equivalent", "equivalent"};
  const auto model = base.with_task_heads(config, darkbert::TaskHeads::for_architecture(config), 7);
  const auto inputs = study::load_task_inputs(darkbert::DataRoot::single(darkbert::test::data_dir()), darkbert::GlueTask::mrpc,
                                              tokenizer, model.config(), {.max_examples = 24, .seed = 2, .max_length = 40});
  const auto r = study::disable_heads(model, inputs, {.seed = 4, .model = "with_task_heads"});
  CHECK(r.task == "MRPC");
  CHECK(r.seed == 4);
  CHECK(r.examples == 24);
  CHECK(r.provenance.find("24 of 408") != std::string::npos);
  CHECK(r.baseline == darkbert::accuracy_metric(darkbert::predict(model, inputs.texts, inputs.pad_id, 16), inputs.texts.labels));
}

TEST_CASE("DisableHeadsResult: changes, the share of heads that help, a random head, extremes (by hand)") {
  // changes [[0.1, 0], [-0.1, 0.05], [-0.05, 0]] against a baseline of 0.5; layers [-0.2, 0.02, 0]
  const auto r = by_hand(1, 0.5, {0.6, 0.5, 0.4, 0.55, 0.45, 0.5}, {0.3, 0.52, 0.5});
  CHECK(r.share_helping() == doctest::Approx(2.0 / 6));
  CHECK(r.random_head_effect() == doctest::Approx(0.0));
  const auto change = r.head_change();
  CHECK(change(1, 0) == doctest::Approx(-0.1));
  const auto s = r.summary();
  CHECK(s["best_head"]["layer"] == 0);
  CHECK(s["best_head"]["head"] == 0);
  CHECK(s["worst_head"]["layer"] == 1);
  CHECK(s["worst_head"]["head"] == 0);
  CHECK(s["best_layer"]["layer"] == 1);
  CHECK(s["worst_layer"]["layer"] == 0);
  CHECK(s["worst_layer"]["change"].get<double>() == doctest::Approx(-0.2));
}

TEST_CASE("aggregate_disable_heads: mean and sd per head and layer, shares and extremes over seeds (by hand)") {
  // Three seeds; head (0, 0) changes +0.1, +0.2, +0.3; head (1, 0) changes -0.1, -0.3, -0.2; the rest 0.
  std::vector<study::DisableHeadsResult> seeds = {
      by_hand(1, 0.5, {0.6, 0.5, 0.4, 0.5, 0.5, 0.5}, {0.4, 0.5, 0.6}),
      by_hand(2, 0.6, {0.8, 0.6, 0.3, 0.6, 0.6, 0.6}, {0.6, 0.6, 0.7}),
      by_hand(3, 0.4, {0.7, 0.4, 0.2, 0.4, 0.4, 0.41}, {0.2, 0.4, 0.5})};
  const auto a = study::aggregate_disable_heads(seeds);
  CHECK(a.seeds == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(a.head_change_mean(0, 0) == doctest::Approx(0.2));
  CHECK(a.head_change_sd(0, 0) == doctest::Approx(0.1));
  CHECK(a.head_change_mean(1, 0) == doctest::Approx(-0.2));
  CHECK(a.head_change_sd(1, 0) == doctest::Approx(0.1));
  CHECK(a.head_change_mean(2, 1) == doctest::Approx(0.01 / 3));
  CHECK(a.head_change_sd(0, 1) == doctest::Approx(0.0));
  // Layer 0: -0.1, 0, -0.2 -> mean -0.1, sd 0.1; layer 2: 0.1, 0.1, 0.1.
  CHECK(a.layer_change(0, 3) == doctest::Approx(-0.1));
  CHECK(a.layer_change(0, 4) == doctest::Approx(0.1));
  CHECK(a.layer_change(2, 3) == doctest::Approx(0.1));
  CHECK(a.layer_change(2, 4) == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(a.layer_change.col_names == std::vector<std::string>{"seed 1", "seed 2", "seed 3", "mean", "sd"});
  // Shares helping: 1/6, 1/6, 2/6; random head: 0/6, -0.1/6, 0.11/6; best gains 0.1, 0.2, 0.3.
  CHECK(a.share_helping[2] == doctest::Approx(2.0 / 6));
  CHECK(a.random_head_effect[1] == doctest::Approx(-0.1 / 6));
  REQUIRE(a.best_head_gain.size() == 3);
  CHECK(a.best_head_gain[0] == doctest::Approx(0.1));
  CHECK(a.best_head_gain[2] == doctest::Approx(0.3));
  const auto best = a.head_extreme(true), worst = a.head_extreme(false);
  CHECK(best.layer == 0);
  CHECK(best.head == 0);
  REQUIRE(best.per_seed.size() == 3);
  CHECK(best.per_seed[1] == doctest::Approx(0.2));
  CHECK(best.change.sd == doctest::Approx(0.1));
  CHECK(worst.layer == 1);
  CHECK(worst.head == 0);
  const auto best_layer = a.layer_extreme(true), worst_layer = a.layer_extreme(false);
  CHECK(best_layer.layer == 2);
  CHECK(best_layer.head == darkbert::all_heads);
  CHECK(worst_layer.layer == 0);
  CHECK(worst_layer.change.sd == doctest::Approx(0.1));
  const auto s = a.summary();
  CHECK(s["share_of_heads_helping"]["mean"].get<double>() == doctest::Approx(4.0 / 18));
  CHECK(s["best_single_head_gain_points"]["mean"].get<double>() == doctest::Approx(20.0));
  CHECK(s["best_single_head_gain_points"]["sd"].get<double>() == doctest::Approx(10.0));
  CHECK(s["baseline"]["mean"].get<double>() == doctest::Approx(0.5));

  // Bad input is named: nothing, mixed tasks, a seed twice.
  CHECK(darkbert::test::message_of([] { study::aggregate_disable_heads(std::vector<study::DisableHeadsResult>{}); })
            .find("no per-seed results") != std::string::npos);
  auto other = seeds;
  other[1].task = "MRPC";
  CHECK(darkbert::test::message_of([&] { study::aggregate_disable_heads(other); }).find("cannot aggregate MRPC") !=
        std::string::npos);
  other = seeds;
  other[1].examples = 12;
  CHECK(darkbert::test::message_of([&] { study::aggregate_disable_heads(other); }) ==
        "disable heads: RTE seed 2 was scored on 12 examples, seed 1 on 10; scores on different examples do not average");
  other = seeds;
  other[2].seed = 1;
  CHECK(darkbert::test::message_of([&] { study::aggregate_disable_heads(other); }).find("seed 1 appears twice") !=
        std::string::npos);
}

TEST_CASE("DisableHeadsResult and DisableHeadsAggregate: save/load round trips, seed folders, figures") {
  const auto dir = darkbert::test::scratch_dir("study_disable_heads_round_trip");
  const auto model = golden("bert_seqcls3");
  const auto texts = synthetic_pairs(24, 3, 5);
  std::vector<study::DisableHeadsResult> results;
  for (std::uint64_t seed : {1, 2}) {
    auto r = study::disable_heads(model, darkbert::GlueTask::mnli, texts, 0, "synthetic", {.seed = seed, .model = "golden"});
    r.baseline += 0.01 * static_cast<double>(seed);  // two seeds that differ
    r.save(study::seed_dir(dir / "MNLI", seed));
    results.push_back(r);
  }
  const auto back = study::DisableHeadsResult::load(study::seed_dir(dir / "MNLI", 2));
  CHECK(back.baseline == results[1].baseline);
  CHECK(back.head_scores.values == results[1].head_scores.values);
  CHECK(back.layer_scores.values == results[1].layer_scores.values);
  CHECK(back.summary() == results[1].summary());

  // The aggregate from the seed folders (as merged from several machines) equals the one from memory.
  const auto from_disk = study::aggregate_disable_heads(dir / "MNLI");
  const auto from_memory = study::aggregate_disable_heads(results);
  CHECK(from_disk.summary() == from_memory.summary());
  from_memory.save(dir / "MNLI");
  const auto loaded = study::DisableHeadsAggregate::load(dir / "MNLI");
  CHECK(loaded.summary() == from_memory.summary());
  CHECK(loaded.head_change_sd.values == from_memory.head_change_sd.values);
  for (const char* f : {"head_change.png", "head_change.svg", "layer_change.png", "layer_change.svg",
                        "head_change_mean.npy", "head_change_seed_2.csv", "layer_change.json", "disable_heads.json"})
    CHECK_MESSAGE(std::filesystem::exists(dir / "MNLI" / f), f);
  study::write_disable_heads_overview(dir, {loaded, loaded});
  CHECK(std::filesystem::exists(dir / "head_change_tasks.png"));
  CHECK(std::filesystem::exists(dir / "layer_change_tasks.svg"));

  // A damaged file is named.
  darkbert::test::write_file(study::seed_dir(dir / "MNLI", 2) / "head_scores.json", "{\"format\": 1}");
  CHECK(darkbert::test::message_of([&] { study::DisableHeadsResult::load(study::seed_dir(dir / "MNLI", 2)); })
            .find("head_scores.json") != std::string::npos);
  CHECK(darkbert::test::message_of([&] { study::DisableHeadsResult::load(dir / "missing"); })
            .find("disable_heads.json: cannot open") != std::string::npos);
}

TEST_CASE("disable_heads: bad input is named") {
  const auto texts = synthetic_pairs(8, 2, 6);
  const auto encoder = golden("bert_model");
  CHECK(darkbert::test::message_of([&] {
          study::disable_heads(encoder, darkbert::GlueTask::mrpc, texts, 0, "synthetic", {.model = "bert_model"});
        }).find("bert_model: the model has no sequence classification head") != std::string::npos);
  const auto three = golden("bert_seqcls3");
  CHECK(darkbert::test::message_of([&] {
          study::disable_heads(three, darkbert::GlueTask::mrpc, texts, 0, "synthetic", {.model = "seqcls3"});
        }) == "seqcls3: the classifier has 3 outputs but MRPC needs 2 labels");
  CHECK(darkbert::test::message_of([&] {
          study::disable_heads(three, darkbert::GlueTask::mnli, synthetic_pairs(8, 3, 6), 0, "synthetic", {.policy = "half"});
        }).find("unknown disabling policy 'half'") != std::string::npos);
  CHECK(darkbert::test::message_of([&] {
          study::disable_heads(three, darkbert::GlueTask::mnli, darkbert::LabelledTexts{}, 0, "synthetic");
        }).find("MNLI: no examples") != std::string::npos);
}
