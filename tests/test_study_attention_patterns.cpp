// Tests for study/attention_patterns.hpp: patterns planted into a real forward of a golden fixture model
// (masking policies that replace chosen heads' maps by constructed ones) are labelled correctly by both
// classifiers, on a BERT and on a causal GPT-2; results save, load and merge exactly; a run is
// deterministic; block is never given on one-sentence inputs; several tasks make one Figure 2. With the GPT-2
// replication's classes and CNN, planted heads of the golden GPT-2 fixture are labelled correctly and the
// section writes the same files with that scheme's columns.
#include <doctest/doctest.h>

#include <algorithm>   // std::min, std::fill
#include <cmath>       // std::exp
#include <filesystem>  // std::filesystem::exists
#include <random>      // std::mt19937_64
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/attention_patterns.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"
#include "viz_test_support.hpp"

using darkbert::test::read_bytes;

using darkbert::Index;
using darkbert::PatternSite;
using darkbert::TokenAnnotation;
namespace study = darkbert::study;
using study::AttentionPattern;
using study::PatternClassifier;
using darkbert::test::shared_root;

namespace {

// Classifiers trained once per test binary on a small prototype set (a few seconds).
const study::PatternClassifiers& classifiers(bool causal) {
  auto train = [](bool c) {
    auto o = study::PatternClassifierOptions::quick();
    o.train_per_class = 60;
    o.held_out_per_class = 20;
    o.training.epochs = 10;
    o.seed = 11;
    return study::train_pattern_classifiers(c, o);
  };
  static const study::PatternClassifiers bidirectional = train(false);
  if (!causal) return bidirectional;
  static const study::PatternClassifiers causal_ones = train(true);
  return causal_ones;
}

// A constructed map, row by row: `row(i, keys, weights)` fills weights[0 .. keys) (any non-negative scale),
// normalised here over the allowed keys; padding keys and, causal, future keys stay 0.
template <class Row>
void plant(const PatternSite<float>& s, Row&& row) {
  const Index L = s.length;
  Index n = 0;
  while (n < L && s.key_mask[n]) ++n;
  std::vector<double> w(static_cast<std::size_t>(L));
  for (Index i = 0; i < L; ++i) {
    const Index keys = s.causal ? std::min(i + 1, n) : n;
    std::fill(w.begin(), w.end(), 0.0);
    row(std::min(i, n - 1), keys, w);
    double total = 0;
    for (Index j = 0; j < keys; ++j) total += w[static_cast<std::size_t>(j)];
    for (Index j = 0; j < L; ++j)
      s.map[i * L + j] = j < keys ? static_cast<float>(w[static_cast<std::size_t>(j)] / total) : 0.0f;
  }
}

// The planted heads: (layer, head) -> class, and the constructions (10% of every row uniform noise).
struct Planted {
  int layer, head;
  AttentionPattern pattern;
};

darkbert::MaskingPolicy<float> planting_policy(const study::TaskInputs& inputs, std::vector<Planted> planted) {
  return [&inputs, planted](const PatternSite<float>& s) {
    const auto& tokens = inputs.tokens[static_cast<std::size_t>(s.batch_index)];  // one batch holds every example
    AttentionPattern p = AttentionPattern::heterogeneous;
    for (const auto& x : planted)
      if (x.layer == s.layer && x.head == s.head) p = x.pattern;
    std::mt19937_64 rng(static_cast<std::uint64_t>(1000 * s.batch_index + 10 * s.layer + s.head));
    std::normal_distribution<double> z(0.0, 2.0);
    auto special = [&](Index j) { return tokens[static_cast<std::size_t>(j)].is_special || (s.causal && j == 0); };
    auto segment = [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment; };
    plant(s, [&](Index i, Index keys, std::vector<double>& w) {
      Index specials = 0;
      for (Index j = 0; j < keys; ++j) specials += special(j);
      const Index next = i + 1 < keys ? i + 1 : (i > 0 ? i - 1 : i);
      const Index previous = i > 0 ? i - 1 : i;
      for (Index j = 0; j < keys; ++j) {
        const double noise = 0.1 / static_cast<double>(keys);
        switch (p) {
          case AttentionPattern::vertical:  // on [CLS] and the [SEP]s
            w[static_cast<std::size_t>(j)] = noise + (special(j) ? 0.9 / static_cast<double>(specials) : 0.0);
            break;
          case AttentionPattern::diagonal:  // on the previous token
            w[static_cast<std::size_t>(j)] = noise + (j == previous ? 0.9 : 0.0);
            break;
          case AttentionPattern::vertical_diagonal:  // half on the specials, half on the next token
            w[static_cast<std::size_t>(j)] = noise + (special(j) ? 0.45 / static_cast<double>(specials) : 0.0) +
                                             (j == (s.causal ? previous : next) ? 0.45 : 0.0);
            break;
          case AttentionPattern::block: {  // evenly inside the own sentence
            Index own = 0;
            for (Index k = 0; k < keys; ++k) own += segment(k) == segment(i);
            w[static_cast<std::size_t>(j)] = noise + (segment(j) == segment(i) ? 0.9 / static_cast<double>(own) : 0.0);
            break;
          }
          case AttentionPattern::heterogeneous:  // a softmax of N(0, 2^2) logits
            w[static_cast<std::size_t>(j)] = std::exp(z(rng));
            break;
        }
      }
    });
  };
}

// Eight MRPC pairs, at most 40 tokens (the fixture's positions), one batch.
study::TaskInputs mrpc_inputs(const darkbert::Transformer<float>& model, const darkbert::Tokenizer& tokenizer,
                              darkbert::GlueTask task = darkbert::GlueTask::mrpc) {
  return study::load_task_inputs(shared_root(), task, tokenizer, model.config(),
                                 {.max_examples = 8, .seed = 2, .max_length = 40});
}

struct Fixture {
  darkbert::Transformer<float> model =
      darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model_real_vocab");
  darkbert::Tokenizer tokenizer =
      darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
};

const std::vector<Planted> bert_planted = {
    {0, 0, AttentionPattern::vertical},          {0, 1, AttentionPattern::diagonal},
    {0, 2, AttentionPattern::vertical_diagonal}, {0, 3, AttentionPattern::block},
    {1, 0, AttentionPattern::heterogeneous},     {1, 1, AttentionPattern::diagonal},
    {1, 2, AttentionPattern::heterogeneous}};  // layer 1 head 3 left as is

study::AttentionPatternResult planted_run(const Fixture& f, const study::TaskInputs& inputs) {
  darkbert::MaskingPolicies<float> policies;
  std::vector<darkbert::HeadRef> heads;
  for (const auto& p : bert_planted) heads.push_back({p.layer, p.head});
  policies.add(planting_policy(inputs, bert_planted), heads);
  auto forward = study::attention_only_options<float>();
  forward.policies = &policies;
  return study::attention_patterns(f.model, inputs, classifiers(false),
                                   {.model = "bert_model_real_vocab (planted)", .batch_size = inputs.size()}, forward);
}

// The replication's classifiers, trained once on a small causal prototype set (~20 s: the 256 x 256 CNN).
const study::PatternClassifiers& replication_classifiers() {
  static const study::PatternClassifiers c = [] {
    auto o = study::PatternClassifierOptions::quick(study::PatternClasses::replication);
    o.train_per_class = 60;
    o.held_out_per_class = 20;
    o.training.epochs = 10;
    o.seed = 11;
    return study::train_pattern_classifiers(true, o);
  }();
  return c;
}

// The replication's classes planted into chosen heads (10% of every row uniform noise).
struct PlantedReplication {
  int layer, head;
  study::ReplicationPattern pattern;
};

darkbert::MaskingPolicy<float> replication_planting_policy(const study::TaskInputs& inputs,
                                                           std::vector<PlantedReplication> planted) {
  using R = study::ReplicationPattern;
  return [&inputs, planted](const PatternSite<float>& s) {
    const auto& tokens = inputs.tokens[static_cast<std::size_t>(s.batch_index)];
    R p = R::overall;
    for (const auto& x : planted)
      if (x.layer == s.layer && x.head == s.head) p = x.pattern;
    std::mt19937_64 rng(static_cast<std::uint64_t>(1000 * s.batch_index + 10 * s.layer + s.head));
    std::normal_distribution<double> z(0.0, 2.0);
    auto segment = [&](Index j) { return tokens[static_cast<std::size_t>(j)].segment; };
    auto first_sentence = [&](Index j) { return segment(j) == 0 && !tokens[static_cast<std::size_t>(j)].is_special; };
    plant(s, [&](Index i, Index keys, std::vector<double>& w) {
      Index own = 0, first = 0;
      for (Index k = 0; k < keys; ++k) own += segment(k) == segment(i), first += first_sentence(k);
      for (Index j = 0; j < keys; ++j) {
        const double noise = 0.1 / static_cast<double>(keys);
        switch (p) {
          case R::diagonal:  // the previous token
            w[static_cast<std::size_t>(j)] = noise + (j == (i > 0 ? i - 1 : i) ? 0.9 : 0.0);
            break;
          case R::majority_first_sentence:  // evenly over the first sentence's tokens seen so far
            w[static_cast<std::size_t>(j)] =
                noise + (first == 0 ? (j == i ? 0.9 : 0.0) : (first_sentence(j) ? 0.9 / static_cast<double>(first) : 0.0));
            break;
          case R::block:  // evenly inside the own sentence
            w[static_cast<std::size_t>(j)] = noise + (segment(j) == segment(i) ? 0.9 / static_cast<double>(own) : 0.0);
            break;
          case R::overall:  // a softmax of N(0, 2^2) logits
            w[static_cast<std::size_t>(j)] = std::exp(z(rng));
            break;
        }
      }
    });
  };
}

// Hand-made pairs in the replication's layout, <|endoftext|> a.. <|endoftext|> b.., ids < 99.
study::TaskInputs gpt2_pairs(int count) {
  study::TaskInputs inputs;
  inputs.causal = true;
  inputs.provenance = std::to_string(count) + " hand-made GPT-2 pairs";
  for (int k = 0; k < count; ++k) {
    const int first = 8 + k, second = 9 + 2 * k, n = 2 + first + second;
    darkbert::Encoding e;
    std::vector<TokenAnnotation> tokens;
    for (int i = 0; i < n; ++i) {
      const bool sep = i == 0 || i == first + 1;
      e.ids.push_back(sep ? 98 : 1 + (7 * i + 3 * k) % 97);
      e.tokens.push_back(sep ? "<|endoftext|>" : "t");
      e.attention_mask.push_back(1);
      TokenAnnotation t;
      t.token = e.tokens.back();
      t.is_special = sep;
      t.segment = i <= first + 1 ? 0 : 1;
      tokens.push_back(t);
    }
    inputs.texts.encodings.push_back(e);
    inputs.texts.labels.push_back(0);
    inputs.tokens.push_back(tokens);
  }
  return inputs;
}

}  // namespace

TEST_CASE("both classifiers label every planted head of a real BERT forward correctly") {
  const Fixture f;
  const auto inputs = mrpc_inputs(f.model, f.tokenizer);
  const auto r = planted_run(f, inputs);
  REQUIRE(r.examples == inputs.size());
  const auto& e = r.evaluation;
  MESSAGE("CNN held-out macro F1 ", e.cnn.macro_f1, " on ", e.held_out_set, "; agreement on the model's maps ",
          r.classifier_agreement().share);
  for (const auto& p : bert_planted) {
    CAPTURE(p.layer);
    CAPTURE(p.head);
    const int want = static_cast<int>(p.pattern);
    for (auto c : {PatternClassifier::rules, PatternClassifier::cnn}) {
      CAPTURE(c == PatternClassifier::cnn ? "cnn" : "rules");
      CHECK(r.scheme.names[static_cast<std::size_t>(r.majority(c, p.layer, p.head))] ==
            r.scheme.names[static_cast<std::size_t>(want)]);
      // On (nearly) every example, not just most: measured 8 of 8 everywhere but one random map of layer 1
      // head 2, which the CNN calls a block.
      CHECK(r.share(c, p.layer, p.head, want) >= 0.75);
    }
  }
  // Every map was counted once per classifier.
  std::uint64_t total = 0;
  for (auto n : r.cnn_counts) total += n;
  CHECK(total == inputs.size() * 8);
  // Kept example maps are ones both classifiers agree on, at most 4 per class, one per head and per example.
  for (std::size_t a = 0; a < r.example_maps.size(); ++a) {
    const auto& m = r.example_maps[a];
    CHECK(r.count(PatternClassifier::cnn, m.layer, m.head, m.label) > 0);
    CHECK(r.count(PatternClassifier::rules, m.layer, m.head, m.label) > 0);
    for (std::size_t b = 0; b < a; ++b)
      if (r.example_maps[b].label == m.label) {
        CHECK(r.example_maps[b].example != m.example);
        CHECK((r.example_maps[b].layer != m.layer || r.example_maps[b].head != m.head));
      }
  }
  CHECK(r.examples_full(static_cast<int>(AttentionPattern::diagonal)) == false);  // 2 diagonal heads < 4
}

TEST_CASE("a causal model: planted previous-token, first-token and second-sentence heads") {
  const auto model = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/gpt2_lm");
  REQUIRE(model.config().causal);
  // Hand-made inputs in the GPT-2 replication's layout: <|endoftext|> a.. <|endoftext|> b.. (ids < 99).
  study::TaskInputs inputs;
  inputs.causal = true;
  inputs.provenance = "six hand-made GPT-2 pairs";
  for (int k = 0; k < 6; ++k) {
    const int first = 8 + k, second = 9 + 2 * k, n = 2 + first + second;
    darkbert::Encoding e;
    std::vector<TokenAnnotation> tokens;
    for (int i = 0; i < n; ++i) {
      const bool sep = i == 0 || i == first + 1;
      e.ids.push_back(sep ? 98 : 1 + (7 * i + 3 * k) % 97);
      e.tokens.push_back(sep ? "<|endoftext|>" : "t");
      e.attention_mask.push_back(1);
      TokenAnnotation t;
      t.token = e.tokens.back();
      t.is_special = sep;
      t.segment = i <= first + 1 ? 0 : 1;
      tokens.push_back(t);
    }
    inputs.texts.encodings.push_back(e);
    inputs.texts.labels.push_back(0);
    inputs.tokens.push_back(tokens);
  }
  const std::vector<Planted> planted = {{0, 0, AttentionPattern::diagonal},
                                        {0, 1, AttentionPattern::vertical},
                                        {1, 0, AttentionPattern::block},
                                        {1, 1, AttentionPattern::vertical_diagonal},
                                        {2, 0, AttentionPattern::heterogeneous}};
  darkbert::MaskingPolicies<float> policies;
  std::vector<darkbert::HeadRef> heads;
  for (const auto& p : planted) heads.push_back({p.layer, p.head});
  policies.add(planting_policy(inputs, planted), heads);
  auto forward = study::attention_only_options<float>();
  forward.policies = &policies;
  const auto r = study::attention_patterns(model, inputs, classifiers(true), {.batch_size = inputs.size()}, forward);
  CHECK(r.causal);
  CHECK(r.evaluation.held_out_set.find("causal") != std::string::npos);
  for (const auto& p : planted) {
    CAPTURE(p.layer);
    CAPTURE(p.head);
    for (auto c : {PatternClassifier::rules, PatternClassifier::cnn}) {
      CAPTURE(c == PatternClassifier::cnn ? "cnn" : "rules");
      CHECK(r.majority(c, p.layer, p.head) == static_cast<int>(p.pattern));
    }
  }
}

TEST_CASE("results save, load and merge exactly; a run is deterministic") {
  const Fixture f;
  const auto inputs = mrpc_inputs(f.model, f.tokenizer);
  const auto r = planted_run(f, inputs);
  const auto dir = darkbert::test::scratch_dir("attention_patterns_save");
  r.save(dir / "a");
  for (const char* name : {"attention_patterns.json", "head_classes.csv", "head_classes_rules.csv",
                           "class_proportions.csv", "class_proportions.json", "class_proportions.npy",
                           "classifier_agreement.csv", "example_maps.npy", "example_maps.csv", "class_proportions.png",
                           "class_proportions.svg", "example_maps_vertical.png", "example_maps_block.svg"})
    CHECK_MESSAGE(std::filesystem::exists(dir / "a" / name), name);
  const std::string csv = read_bytes(dir / "a" / "head_classes.csv");
  CHECK(csv.rfind(
            "layer,head,class,share_vertical,share_diagonal,share_vertical_diagonal,share_block,share_heterogeneous\n"
            "0,0,vertical,1,0,0,0,0\n",
            0) == 0);
  const auto texts = darkbert::test::text_set(darkbert::test::svg_texts(dir / "a" / "class_proportions.svg"));
  for (const char* t : {"CNN", "rules", "vertical + diagonal", "block", "classifier"})
    CHECK_MESSAGE(texts.count(t) == 1, t);

  const auto back = study::AttentionPatternResult::load(dir / "a");
  CHECK(back.cnn_counts == r.cnn_counts);
  CHECK(back.rule_counts == r.rule_counts);
  CHECK(back.agreement_counts == r.agreement_counts);
  CHECK(back.examples == r.examples);
  CHECK(back.example_maps.size() == r.example_maps.size());
  CHECK(back.example_maps.front().image == r.example_maps.front().image);
  CHECK(back.summary() == r.summary());
  back.save(dir / "b");
  CHECK(read_bytes(dir / "b" / "attention_patterns.json") == read_bytes(dir / "a" / "attention_patterns.json"));

  // The same run again: the same bits.
  planted_run(f, inputs).save(dir / "c");
  CHECK(read_bytes(dir / "c" / "attention_patterns.json") == read_bytes(dir / "a" / "attention_patterns.json"));
  CHECK(read_bytes(dir / "c" / "example_maps.npy") == read_bytes(dir / "a" / "example_maps.npy"));

  // Two shards of the examples, merged, count what one run counts.
  const auto& c = classifiers(false);
  study::AttentionPatternCounter<float> first(c, "MRPC", 2, 4, false), second(c, "MRPC", 2, 4, false),
      all(c, "MRPC", 2, 4, false);
  study::for_each_attention(f.model, inputs, [&](std::size_t i, const darkbert::AttentionView<float>& v) {
    (i < 3 ? first : second).add(i, v, inputs.tokens[i]);
    all.add(i, v, inputs.tokens[i]);
  });
  auto merged = first.result();
  merged.merge(second.result());
  CHECK(merged.cnn_counts == all.result().cnn_counts);
  CHECK(merged.rule_counts == all.result().rule_counts);
  CHECK(merged.examples == all.result().examples);
  auto other = r;
  other.task = "RTE";
  CHECK(darkbert::test::message_of([&] { merged.merge(other); }).find("cannot merge results of RTE") !=
        std::string::npos);
  CHECK(darkbert::test::message_of([&] { study::AttentionPatternResult::load(dir / "missing"); }) ==
        (dir / "missing" / "attention_patterns.json").string() + ": cannot open");
}

TEST_CASE("one-sentence inputs are never block; several tasks make one figure") {
  const Fixture f;
  const auto sst2 = mrpc_inputs(f.model, f.tokenizer, darkbert::GlueTask::sst2);
  const auto s = study::attention_patterns(f.model, sst2, classifiers(false));
  CHECK(s.task == "SST-2");
  const int block = static_cast<int>(AttentionPattern::block);
  CHECK(s.proportions(PatternClassifier::cnn)[static_cast<std::size_t>(block)] == 0.0);
  CHECK(s.proportions(PatternClassifier::rules)[static_cast<std::size_t>(block)] == 0.0);
  double sum = 0;
  for (double p : s.proportions()) sum += p;
  CHECK(sum == doctest::Approx(1.0));

  const auto m = study::attention_patterns(f.model, mrpc_inputs(f.model, f.tokenizer), classifiers(false));
  const auto dir = darkbert::test::scratch_dir("attention_patterns_tasks");
  const std::vector<std::pair<std::string, std::vector<double>>> by_task = {{m.task, m.proportions()},
                                                                            {s.task, s.proportions()}};
  const auto g = study::write_class_proportions_figure(dir / "figure2.svg", by_task, s.scheme);
  CHECK(g.segments.size() == 2);
  const auto texts = darkbert::test::text_set(darkbert::test::svg_texts(dir / "figure2.svg"));
  CHECK(texts.count("MRPC") == 1);
  CHECK(texts.count("SST-2") == 1);
  const auto table = study::class_proportions_table(by_task, s.scheme);
  CHECK(table.row_names == std::vector<std::string>{"MRPC", "SST-2"});
  CHECK(table(1, 3) == 0.0);
  CHECK(darkbert::test::message_of([&] {
          study::write_class_proportions_figure(dir / "bad.svg", {{"MRPC", {0.5, 0.5}}}, s.scheme);
        }).find("MRPC has 2 proportions for 5 classes") != std::string::npos);
}

TEST_CASE("the replication's classes and CNN on the GPT-2 fixture: planted heads, the scheme's columns") {
  using R = study::ReplicationPattern;
  const auto model = darkbert::test::gpt2_fixture();
  REQUIRE(model.config().causal);
  const auto& c = replication_classifiers();
  CHECK(c.scheme == study::replication_pattern_scheme());
  CHECK(c.cnn.options().architecture == study::PatternCnnArchitecture::replication);
  CHECK(c.rule_description.rfind("ReplicationPatternRules: diagonal 0.5", 0) == 0);
  MESSAGE("replication CNN held-out macro F1 ", c.evaluation.cnn.macro_f1, " on ", c.evaluation.held_out_set);
  CHECK(c.evaluation.cnn.macro_f1 >= 0.8);

  const auto inputs = gpt2_pairs(6);
  const std::vector<PlantedReplication> planted = {
      {0, 0, R::diagonal}, {0, 1, R::majority_first_sentence}, {1, 0, R::block}, {2, 0, R::overall}};
  darkbert::MaskingPolicies<float> policies;
  std::vector<darkbert::HeadRef> heads;
  for (const auto& p : planted) heads.push_back({p.layer, p.head});
  policies.add(replication_planting_policy(inputs, planted), heads);
  auto forward = study::attention_only_options<float>();
  forward.policies = &policies;
  const auto r = study::attention_patterns(model, inputs, c, {.model = "gpt2 fixture (planted)", .batch_size = 6}, forward);
  CHECK(r.scheme == study::replication_pattern_scheme());
  CHECK(r.examples == 6);
  for (const auto& p : planted) {
    CAPTURE(p.layer);
    CAPTURE(p.head);
    for (auto k : {PatternClassifier::rules, PatternClassifier::cnn}) {
      CAPTURE(k == PatternClassifier::cnn ? "cnn" : "rules");
      CHECK(r.majority(k, p.layer, p.head) == static_cast<int>(p.pattern));
    }
  }

  const auto dir = darkbert::test::scratch_dir("attention_patterns_replication");
  r.save(dir);
  CHECK(read_bytes(dir / "head_classes.csv")
            .rfind("layer,head,class,share_diagonal,share_block,share_overall,share_majority_first_sentence\n"
                   "0,0,diagonal,1,0,0,0\n0,1,majority_first_sentence,0,0,0,1\n",
                   0) == 0);
  CHECK(read_bytes(dir / "class_proportions.csv").find("majority_first_sentence") != std::string::npos);
  const std::string classes = read_bytes(dir / "pattern_classes.md");
  CHECK(classes.find("# Attention-pattern classes (gpt2_replication)") == 0);
  for (const auto& d : r.scheme.definitions) CHECK(classes.find(d) != std::string::npos);
  const auto texts = darkbert::test::text_set(darkbert::test::svg_texts(dir / "class_proportions.svg"));
  for (const char* t : {"diagonal (D)", "block (B)", "overall (O)", "majority in sentence 1 (M1)"})
    CHECK_MESSAGE(texts.count(t) == 1, t);
  const auto back = study::AttentionPatternResult::load(dir);
  CHECK(back.scheme == r.scheme);
  CHECK(back.summary() == r.summary());

  // A real task through the GPT-2 tokenizer: every map counted, proportions over the four classes.
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto mrpc = study::load_task_inputs(shared_root(), darkbert::GlueTask::mrpc, tokenizer, model.config(),
                                            {.max_examples = 4, .seed = 2, .max_length = 40});
  const auto m = study::attention_patterns(model, mrpc, c);
  CHECK(m.task == "MRPC");
  CHECK(m.proportions().size() == 4);
  double sum = 0;
  for (double p : m.proportions()) sum += p;
  CHECK(sum == doctest::Approx(1.0));
  const auto figure = dir / "figure2_replication.svg";
  study::write_class_proportions_figure(figure, {{m.task, m.proportions()}}, m.scheme);
  CHECK(std::filesystem::exists(figure));
}
