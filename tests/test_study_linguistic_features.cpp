// Tests for study/linguistic_features.hpp: the §3.4 grids of a pretrained and a "fine-tuned" model (a
// second model of the same shape) against a hand computation of the paper's measure, the per-layer trend of
// [CLS] against [SEP], save/load/merge round trips and figures, a causal model whose missing [CLS] gives a
// NaN grid, and bad input named.
#include <doctest/doctest.h>

#include <cmath>       // std::isnan
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <limits>      // std::numeric_limits
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/linguistic_features.hpp"
#include "test_data_fixtures.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::Index;
using darkbert::test::message_of;
namespace study = darkbert::study;
using darkbert::test::shared_root;
using darkbert::test::bert_fixture;
using darkbert::test::gpt2_fixture;
using darkbert::test::is_png;

namespace {

// The paper's measure by plain loops: per example with a token of the class, per head, the largest over the
// class's tokens j of (sum over the queries that see j of a[i][j]) / n; the mean over those examples.
// With per_visible_query, the sum is divided by the number of queries that see j instead.
std::vector<double> hand_feature(const darkbert::Transformer<float>& model, const study::TaskInputs& in,
                                 const darkbert::TokenClass& cls, std::size_t& with, bool per_visible_query = false) {
  const auto& c = model.config();
  std::vector<double> sum(static_cast<std::size_t>(c.num_layers * c.num_heads), 0.0);
  with = 0;
  study::for_each_attention(model, in, [&](std::size_t e, const darkbert::AttentionView<float>& v) {
    const Index n = v.length();
    std::vector<Index> members;
    for (Index j = 0; j < n; ++j)
      if (cls(in.tokens[e][static_cast<std::size_t>(j)])) members.push_back(j);
    if (members.empty()) return;
    ++with;
    for (Index l = 0; l < c.num_layers; ++l)
      for (Index h = 0; h < c.num_heads; ++h) {
        double best = -1;
        for (Index j : members) {
          double received = 0, seen_by = 0;
          for (Index i = 0; i < n; ++i)
            if (v.visible(i, j)) received += v(l, h, i, j), ++seen_by;
          best = std::max(best, received / (per_visible_query ? seen_by : static_cast<double>(n)));
        }
        sum[static_cast<std::size_t>(l * c.num_heads + h)] += best;
      }
  });
  for (auto& s : sum) s = with ? s / static_cast<double>(with) : std::numeric_limits<double>::quiet_NaN();
  return sum;
}

}  // namespace

TEST_CASE("paper_features: the nine classes in the paper's order") {
  const auto f = study::paper_features();
  std::vector<std::string> names;
  for (const auto& c : f) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"[CLS]", "[SEP]", "punctuation", "noun", "verb", "pronoun", "subject",
                                          "object", "negation"});
  darkbert::TokenAnnotation cls{"[CLS]", true}, sep{"[SEP]", true}, noun{"cat", false, "NOUN"},
      name{"paris", false, "PROPN"}, verb{"sat", false, "VERB"}, aux{"was", false, "AUX"},
      subject{"cat", false, "NOUN", "nsubj"}, passive{"it", false, "PRON", "nsubj:pass"}, object{"mat", false, "NOUN", "obj"},
      comma{",", false, "PUNCT"}, neg{"not", false, "PART", "", true};
  CHECK(f[0](cls));
  CHECK_FALSE(f[0](sep));
  CHECK(f[1](sep));
  CHECK(f[2](comma));
  CHECK(f[3](noun));
  CHECK(f[3](name));
  CHECK(f[4](verb));
  CHECK_FALSE(f[4](aux));
  CHECK(f[5](passive));
  CHECK(f[6](subject));
  CHECK(f[6](passive));
  CHECK(f[7](object));
  CHECK_FALSE(f[7](subject));
  CHECK(f[8](neg));
  CHECK(study::detail::file_stem("[CLS]") == "cls");
  CHECK(study::detail::file_stem("STS-B") == "sts_b");
}

TEST_CASE("pretrained and fine-tuned grids are the paper's measure, feature by feature") {
  const auto pre = bert_fixture();
  const auto fine = darkbert::Transformer<float>::random(pre.config(), darkbert::TaskHeads::for_architecture(pre.config()), 3);
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  const auto& annotator = darkbert::test::small_annotator();
  const auto inputs = study::load_task_inputs(shared_root(), darkbert::GlueTask::mrpc, tokenizer, pre.config(),
                                              {.max_examples = 12, .seed = 1, .max_length = 40, .annotator = &annotator});
  REQUIRE(inputs.size() == 12);
  const auto r = study::run_linguistic_features(pre, &fine, inputs,
                                                {.batch_size = 5, .pretrained_model = "pre", .finetuned_model = "fine"});
  CHECK(r.task == "MRPC");
  CHECK(r.examples == 12);
  CHECK(r.has_finetuned());
  CHECK(r.pretrained_model == "pre");
  CHECK(r.finetuned_model == "fine");
  REQUIRE(r.features.size() == 9);
  const auto features = study::paper_features();
  std::size_t nouns_seen = 0;
  for (std::size_t f = 0; f < features.size(); ++f) {
    CAPTURE(features[f].name);
    std::size_t with = 0, with_fine = 0;
    const auto expected = hand_feature(pre, inputs, features[f], with);
    const auto expected_fine = hand_feature(fine, inputs, features[f], with_fine);
    CHECK(r.examples_with[f] == with);
    CHECK(with == with_fine);
    if (with == 0) continue;
    for (Index l = 0; l < 2; ++l)
      for (Index h = 0; h < 4; ++h) {
        const auto k = static_cast<std::size_t>(l * 4 + h);
        CHECK(r.pretrained[f](l, h) == doctest::Approx(expected[k]).epsilon(1e-5));
        CHECK(r.finetuned[f](l, h) == doctest::Approx(expected_fine[k]).epsilon(1e-5));
        CHECK(r.difference(f)(l, h) == doctest::Approx(expected_fine[k] - expected[k]).epsilon(1e-5));
      }
    if (features[f].name == "noun") nouns_seen = with;
  }
  CHECK(r.examples_with[0] == 12);  // every MRPC pair has [CLS] and two [SEP]
  CHECK(r.examples_with[1] == 12);
  CHECK(nouns_seen > 6);
  // Without the fine-tuned model: the pretrained grids alone, identical (in the same batches: the BLAS
  // path's products may sum in another order for another batch shape).
  const auto alone = study::run_linguistic_features(pre, nullptr, inputs, {.batch_size = 5});
  CHECK_FALSE(alone.has_finetuned());
  for (std::size_t f = 0; f < 9; ++f) CHECK(alone.pretrained[f].values == r.pretrained[f].values);
  CHECK(message_of([&] { alone.difference(0); }) == "linguistic features: no fine-tuned model was measured");

  // The trend table: per layer the mean over heads of [CLS] and [SEP], both models.
  const auto t = r.layer_trend();
  CHECK(t.col_names == std::vector<std::string>{"[CLS] pretrained", "[CLS] fine-tuned", "[SEP] pretrained", "[SEP] fine-tuned"});
  for (Index l = 0; l < 2; ++l) {
    double cls = 0, sep = 0;
    for (Index h = 0; h < 4; ++h) cls += r.pretrained[0](l, h) / 4, sep += r.finetuned[1](l, h) / 4;
    CHECK(t(l, 0) == doctest::Approx(cls));
    CHECK(t(l, 3) == doctest::Approx(sep));
  }

  // Save, load, merge, figures.
  const auto dir = darkbert::test::scratch_dir("study_features");
  r.save(dir / "MRPC");
  const auto back = study::LinguisticFeaturesResult::load(dir / "MRPC");
  CHECK(back.summary() == r.summary());
  for (std::size_t f = 0; f < 9; ++f) {
    CHECK(back.pretrained[f].values == r.pretrained[f].values);
    CHECK(back.finetuned[f].values == r.finetuned[f].values);
  }
  for (const char* file : {"pretrained_cls.csv", "finetuned_negation.npy", "difference_sep.json", "layer_trend.csv",
                           "linguistic_features.json"})
    CHECK(fs::is_regular_file(dir / "MRPC" / file));
  auto twice = back;
  twice.merge(back);
  CHECK(twice.examples == 24);
  CHECK(twice.examples_with[0] == 24);
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h) CHECK(twice.finetuned[3](l, h) == doctest::Approx(r.finetuned[3](l, h)));
  study::write_linguistic_feature_figures(back, dir / "figures");
  for (const char* stem : {"features_mrpc", "features_mrpc_difference", "features_mrpc_trend"}) {
    CHECK(is_png(dir / "figures" / (std::string(stem) + ".png")));
    CHECK(fs::file_size(dir / "figures" / (std::string(stem) + ".svg")) > 1000);
  }
}

TEST_CASE("the [CLS] -> [SEP] trend in the summary: peak layers and the slope of their difference") {
  study::LinguisticFeaturesResult r;
  r.task = "MRPC";
  r.features = {"[CLS]", "[SEP]"};
  r.examples_with = {5, 5};
  r.examples = 5;
  auto cls = darkbert::make_head_matrix<double>("pretrained_cls", 3, 2);
  auto sep = darkbert::make_head_matrix<double>("pretrained_sep", 3, 2);
  const double c[3] = {0.6, 0.4, 0.2}, s[3] = {0.1, 0.3, 0.5};
  for (Index l = 0; l < 3; ++l)
    for (Index h = 0; h < 2; ++h) cls(l, h) = c[l], sep(l, h) = s[l];
  r.pretrained = {cls, sep};
  const auto j = r.summary();
  CHECK(j["layer_trend"]["[CLS] pretrained"]["peak_layer"] == 0);
  CHECK(j["layer_trend"]["[SEP] pretrained"]["peak_layer"] == 2);
  CHECK(j["layer_trend"]["[CLS] pretrained"]["slope_per_layer"].get<double>() == doctest::Approx(-0.2));
  CHECK(j["layer_trend"]["[SEP] minus [CLS] pretrained"]["slope_per_layer"].get<double>() == doctest::Approx(0.4));
  CHECK(j["features"][1]["pretrained"]["max"]["layer"] == 2);
  CHECK(j["features"][1]["pretrained"]["mean"].get<double>() == doctest::Approx(0.3));
  CHECK_FALSE(j.contains("finetuned"));
  CHECK(message_of([&] { r.feature_index("verb"); }) == "linguistic features: no feature 'verb' (have [CLS], [SEP])");
}

TEST_CASE("a causal model (gpt2_lm): visible queries only; a feature no example has is a NaN grid") {
  const auto model = gpt2_fixture();
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto inputs = study::load_task_inputs(shared_root(), darkbert::GlueTask::sst2, tokenizer, model.config(),
                                              {.max_examples = 6, .seed = 2, .max_length = 40,
                                               .annotator = &darkbert::test::small_annotator()});
  const auto r = study::run_linguistic_features(model, nullptr, inputs);
  CHECK(r.causal);
  CHECK(r.examples_with[0] == 6);  // [CLS]'s counterpart: the <|endoftext|> BOS of every input
  CHECK(r.examples_with[1] == 0);  // no separator in single sentences
  for (Index l = 0; l < 3; ++l)
    for (Index h = 0; h < 4; ++h) CHECK(std::isnan(r.pretrained[1](l, h)));
  const auto features = study::paper_features();
  std::size_t with = 0;
  const auto expected = hand_feature(model, inputs, features[3], with);  // nouns
  REQUIRE(with > 0);
  CHECK(r.examples_with[3] == with);
  for (Index l = 0; l < 3; ++l)
    for (Index h = 0; h < 4; ++h)
      CHECK(r.pretrained[3](l, h) == doctest::Approx(expected[static_cast<std::size_t>(l * 4 + h)]).epsilon(1e-5));
  // Another family's classes are arguments: here the first token stands in for [CLS].
  auto first_word = darkbert::token_class::custom("first word", [](const darkbert::TokenAnnotation& t) {
    return t.word_index == 0 && t.segment == 0;
  });
  const auto own = study::run_linguistic_features(model, nullptr, inputs, {.features = {first_word}, .trend = {}});
  CHECK(own.examples_with[0] == 6);
  const auto dir = darkbert::test::scratch_dir("study_features_causal");
  r.save(dir);
  const auto back = study::LinguisticFeaturesResult::load(dir);
  CHECK(back.causal);
  CHECK(std::isnan(back.pretrained[1](0, 0)));
  study::write_linguistic_feature_figures(back, dir);
  CHECK(is_png(dir / "features_sst_2.png"));
}

TEST_CASE("a causal model's separator, also per query that can see it (the replication's sentence boundary)") {
  const auto model = gpt2_fixture();
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto inputs = study::load_task_inputs(shared_root(), darkbert::GlueTask::mrpc, tokenizer, model.config(),
                                              {.max_examples = 5, .seed = 3, .max_length = 40,
                                               .annotator = &darkbert::test::small_annotator()});
  const auto r = study::run_linguistic_features(model, nullptr, inputs);
  REQUIRE(r.features.size() == 10);  // the paper's nine, then the separator per visible query
  CHECK(r.features[9] == study::separator_per_visible_query_name);
  CHECK(r.normalisations[1] == darkbert::ReceivedNormalisation::sequence_length);
  CHECK(r.normalisations[9] == darkbert::ReceivedNormalisation::visible_queries);
  CHECK(r.examples_with[9] == 5);
  std::size_t with = 0;
  const auto expected = hand_feature(model, inputs, darkbert::token_class::sep_token(), with, true);
  CHECK(with == 5);
  bool larger = true;  // fewer queries than n see the separator, so the same sum divided by fewer is larger
  for (Index l = 0; l < 3; ++l)
    for (Index h = 0; h < 4; ++h) {
      CHECK(r.pretrained[9](l, h) == doctest::Approx(expected[static_cast<std::size_t>(l * 4 + h)]).epsilon(1e-5));
      larger = larger && r.pretrained[9](l, h) > r.pretrained[1](l, h);
    }
  CHECK(larger);
  // It survives a round trip and a merge, and is left out when not asked for.
  const auto dir = darkbert::test::scratch_dir("study_features_boundary");
  r.save(dir);
  auto back = study::LinguisticFeaturesResult::load(dir);
  CHECK(back.normalisations == r.normalisations);
  back.merge(r);
  CHECK(back.examples_with[9] == 10);
  CHECK(back.pretrained[9](2, 3) == doctest::Approx(r.pretrained[9](2, 3)));
  auto plain = study::run_linguistic_features(model, nullptr, inputs, {.separator_per_visible_query = false});
  CHECK(plain.features.size() == 9);
  CHECK(message_of([&] { plain.merge(r); }) == "linguistic features: cannot merge results over different features");
}

TEST_CASE("bad input is named") {
  const auto pre = bert_fixture();
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  auto inputs = study::load_task_inputs(shared_root(), darkbert::GlueTask::rte, tokenizer, pre.config(),
                                        {.max_examples = 3, .seed = 1, .max_length = 40,
                                         .annotator = &darkbert::test::small_annotator()});
  CHECK(message_of([&] { study::run_linguistic_features(pre, nullptr, inputs, {.features = {}}); }) ==
        "run_linguistic_features: no features to measure");
  const auto gpt = gpt2_fixture();
  CHECK(message_of([&] { study::run_linguistic_features(pre, &gpt, inputs); }).find("differ in shape") !=
        std::string::npos);
  const auto r = study::run_linguistic_features(pre, nullptr, inputs);
  auto fewer = inputs;
  fewer.tokens.pop_back();
  CHECK(message_of([&] { study::run_linguistic_features(pre, nullptr, fewer); }) ==
        "run_linguistic_features: 2 token annotations for 3 examples");

  const auto dir = darkbert::test::scratch_dir("study_features_bad");
  CHECK(message_of([&] { study::LinguisticFeaturesResult::load(dir); }).find((dir / "linguistic_features.json").string() +
                                                                              ": cannot open") == 0);
  r.save(dir);
  auto small = darkbert::make_head_matrix<double>("pretrained_cls", 1, 1);
  darkbert::write_json(small, dir / "pretrained_cls.json");
  CHECK(message_of([&] { study::LinguisticFeaturesResult::load(dir); }) ==
        (dir / "pretrained_cls.json").string() + ": table is 1 x 1, expected 2 x 4 (" +
            (dir / "linguistic_features.json").string() + ")");
  auto j = r.summary();
  j["normalisation"] = "per_token";
  darkbert::test::write_file(dir / "linguistic_features.json", j.dump());
  CHECK(message_of([&] { study::LinguisticFeaturesResult::load(dir); }).find("normalisation 'per_token'") !=
        std::string::npos);
  auto other = r;
  other.task = "MRPC";
  auto copy = r;
  CHECK(message_of([&] { copy.merge(other); }) == "linguistic features: cannot merge task MRPC into RTE");
}
