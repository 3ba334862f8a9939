// Tests for study/token_relations.hpp: the query-to-category measure on hand-built maps, relation scores
// against the analysis accumulators, a planted verb -> subject head found as a candidate and a planted
// previous-token head found diagonal, the dependency-linked pairs of UD EWT, save/load round trips and
// figures (one task and the tasks x categories figure), a causal model, and bad input named.
#include <doctest/doctest.h>

#include <algorithm>   // std::fill
#include <cmath>       // std::isnan
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/token_relations.hpp"
#include "test_data_fixtures.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::Index;
using darkbert::test::message_of;
namespace study = darkbert::study;
using darkbert::test::shared_root;
using darkbert::test::bert_fixture;
using darkbert::test::bert_tokenizer;
using darkbert::test::gpt2_fixture;
using darkbert::test::is_png;

namespace {

study::TaskInputs task_inputs(darkbert::GlueTask task, const darkbert::Tokenizer& tokenizer,
                              const darkbert::ModelConfig& config, std::size_t n) {
  return study::load_task_inputs(shared_root(), task, tokenizer, config,
                                 {.max_examples = n, .seed = 1, .max_length = 40,
                                  .annotator = &darkbert::test::small_annotator()});
}

}  // namespace

TEST_CASE("QueryClassMaxAttention: the query's largest weight per category, on hand-built maps") {
  // One layer, one head, tokens [CLS] the cat [SEP]; row 0 (the [CLS] query) = 0.1 0.2 0.3 0.4.
  std::vector<double> maps = {0.1, 0.2, 0.3, 0.4,  //
                              0.7, 0.1, 0.1, 0.1,  //
                              0.25, 0.25, 0.25, 0.25,  //
                              0.0, 0.0, 0.5, 0.5};
  std::vector<darkbert::TokenAnnotation> tokens = {{"[CLS]", true}, {"the", false, "DET"}, {"cat", false, "NOUN"},
                                                   {"[SEP]", true}};
  const auto view = darkbert::AttentionView<double>::contiguous(maps.data(), 1, 1, 4, 4, false);
  const std::vector<darkbert::TokenClass> cats = {darkbert::token_class::cls_token(), darkbert::token_class::sep_token(),
                                                  darkbert::token_class::upos("NOUN"), darkbert::token_class::upos("VERB")};
  study::QueryClassMaxAttention<double> acc(1, 1, {}, cats);
  CHECK(acc.add(view, tokens));
  auto r = acc.result();
  CHECK(r[0](0, 0) == 0.1);  // [CLS] itself
  CHECK(r[1](0, 0) == 0.4);
  CHECK(r[2](0, 0) == 0.3);
  CHECK(std::isnan(r[3](0, 0)));  // no verb: the example does not count for it
  CHECK(acc.examples_with(3) == 0);
  // Another query rule: the last token.
  study::QueryClassMaxAttention<double> last(1, 1, {.position = study::CategoryQuery::Position::last_token}, cats);
  last.add(view, tokens);
  CHECK(last.result()[2](0, 0) == 0.5);
  // Causal: the query sees only keys up to itself.
  const auto causal = darkbert::AttentionView<double>::contiguous(maps.data(), 1, 1, 4, 4, true);
  study::QueryClassMaxAttention<double> first(1, 1, {}, cats);
  first.add(causal, tokens);
  CHECK(first.examples_with(1) == 0);  // [SEP] comes after the query
  CHECK(first.result()[0](0, 0) == 0.1);
  // No query token: skipped; merge adds the counts.
  std::vector<darkbert::TokenAnnotation> plain = {{"a"}, {"b"}, {"c"}, {"d"}};
  CHECK_FALSE(acc.add(view, plain));
  CHECK(acc.skipped() == 1);
  acc.merge(last);
  CHECK(acc.examples() == 2);
  CHECK(acc.result()[2](0, 0) == doctest::Approx(0.4));
}

TEST_CASE("relation scores are the accumulators'; planted verb -> subject and previous-token heads") {
  const auto model = bert_fixture();
  const auto tokenizer = bert_tokenizer();
  const auto inputs = task_inputs(darkbert::GlueTask::mrpc, tokenizer, model.config(), 10);
  const auto r = study::run_token_relations(model, inputs, {.model = "fixture"});
  CHECK(r.task == "MRPC");
  CHECK(r.examples == 10);
  CHECK(r.query_layer == 1);
  REQUIRE(r.relations.size() == 2);
  // The same numbers as the analysis accumulators on the same views.
  darkbert::HeadSummaryAccumulator<float> summary(2, 4);
  darkbert::ClassToClassAttention<float> v2s(2, 4, darkbert::token_class::upos("VERB"), darkbert::token_class::subject());
  study::for_each_attention(model, inputs, [&](std::size_t i, const darkbert::AttentionView<float>& v) {
    summary.add(v, inputs.tokens[i]);
    v2s.add(v, inputs.tokens[i]);
  });
  const auto ns = summary.result().neighbour_share;
  const auto vs = v2s.result();
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h) {
      CHECK(r.neighbour_share(l, h) == doctest::Approx(ns(l, h)));
      CHECK(r.relations[0].max(l, h) == doctest::Approx(vs.max(l, h)));
      CHECK((*r.relations[0].mass)(l, h) == doctest::Approx(vs.mass(l, h)));
    }
  CHECK(r.relations[0].examples == v2s.examples());
  // Shares of the [CLS] row sum to 1 in every head; the [CLS] category is the self weight.
  for (Index h = 0; h < 4; ++h) {
    double s = 0;
    for (const auto& m : r.query_share) s += m(1, h);
    CHECK(s == doctest::Approx(1.0));
  }
  CHECK(r.category_examples[0] == 10);

  // Planted: head 1:1 attends from every verb to the first subject of its example; head 0:3 from every token
  // to the previous one. Batches of one example, so the n-th call of the 1:1 policy is example n.
  std::size_t call = 0;
  darkbert::MaskingPolicies<float> planted;
  planted.add(
      [&](const darkbert::PatternSite<float>& s) {
        const auto& tokens = inputs.tokens[call++];
        const auto n = static_cast<Index>(tokens.size());
        const auto is_subject = darkbert::token_class::subject();
        const auto is_verb = darkbert::token_class::upos("VERB");
        for (Index i = 0; i < n; ++i) {
          if (!is_verb(tokens[static_cast<std::size_t>(i)])) continue;
          Index subject = -1;  // the first subject other than the verb itself
          for (Index j = 0; j < n && subject < 0; ++j)
            if (j != i && is_subject(tokens[static_cast<std::size_t>(j)])) subject = j;
          if (subject < 0) continue;
          float* row = s.map + i * s.length;
          std::fill(row, row + s.length, 0.0f);
          row[subject] = 1.0f;
        }
      },
      {{1, 1}});
  planted.add(
      [](const darkbert::PatternSite<float>& s) {
        for (Index i = 0; i < s.length; ++i) {
          float* row = s.map + i * s.length;
          std::fill(row, row + s.length, 0.0f);
          row[i > 0 ? i - 1 : 1] = 1.0f;
        }
      },
      {{0, 3}});
  auto forward = study::attention_only_options<float>();
  forward.policies = &planted;
  const auto p = study::run_token_relations(model, inputs, {.batch_size = 1}, nullptr, forward);
  CHECK(call == 10);
  CHECK(p.relations[0].max(1, 1) == 1.0);
  REQUIRE_FALSE(p.relations[0].candidates.empty());
  CHECK(p.relations[0].candidates[0].layer == 1);
  CHECK(p.relations[0].candidates[0].head == 1);
  CHECK_FALSE(p.relations[0].diagonal[0]);
  CHECK(p.neighbour_share(0, 3) > 0.9);
  CHECK(p.is_diagonal(0, 3));
  CHECK_FALSE(p.is_diagonal(1, 1));
  CHECK(p.diagonal_source == "neighbour_share >= 0.5");
  // A given diagonal set (e.g. from the §3.1 classifier) replaces the threshold.
  const auto given = study::run_token_relations(
      model, inputs, {.diagonal_heads = std::vector<std::pair<Index, Index>>{{1, 1}}, .diagonal_source = "classifier",
                      .batch_size = 1},
      nullptr, [&] {
        call = 0;
        return forward;
      }());
  CHECK(given.diagonal_source == "classifier");
  REQUIRE(given.diagonal.size() == 1);
  CHECK(given.relations[0].diagonal[0]);
  CHECK(given.relations[0].diagonal_candidates() >= 1);
}

TEST_CASE("dependency-linked verb -> subject pairs from UD EWT's gold trees") {
  const auto model = bert_fixture();
  const auto tokenizer = bert_tokenizer();
  const auto ud = study::ud_verb_subject_inputs(shared_root(), tokenizer, model.config(),
                                                {.max_sentences = 40, .seed = 3, .max_length = 40});
  REQUIRE(ud.inputs.size() > 10);
  CHECK(ud.inputs.size() <= 40);
  CHECK(ud.source.find("of 40 sampled (seed 3) of 2001") != std::string::npos);
  for (std::size_t i = 0; i < ud.inputs.size(); ++i)
    for (const auto& link : ud.links[i]) {
      REQUIRE_FALSE(link.from.empty());
      REQUIRE_FALSE(link.to.empty());
      CHECK(ud.inputs.tokens[i][static_cast<std::size_t>(link.from.front())].upos == "VERB");
      const auto& rel = ud.inputs.tokens[i][static_cast<std::size_t>(link.to.front())].deprel;
      CHECK((rel == "nsubj" || rel == "nsubj:pass"));
    }
  const auto inputs = task_inputs(darkbert::GlueTask::rte, tokenizer, model.config(), 6);
  const auto r = study::run_token_relations(model, inputs, {}, &ud);
  REQUIRE(r.relations.size() == 3);
  const auto& linked = r.relations[2];
  CHECK(linked.name == "verb -> subject (UD dependency links)");
  CHECK_FALSE(linked.mass);
  CHECK(linked.examples == ud.inputs.size());
  darkbert::LinkAttentionAccumulator<float> acc(2, 4);
  study::for_each_attention(model, ud.inputs, [&](std::size_t i, const darkbert::AttentionView<float>& v) {
    acc.add(v, ud.links[i]);
  });
  const auto expected = acc.result();
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h) CHECK(linked.max(l, h) == doctest::Approx(expected(l, h)));

  // Save and load keep everything; the figures of one task and of several.
  const auto dir = darkbert::test::scratch_dir("study_relations");
  r.save(dir / "RTE");
  const auto back = study::TokenRelationsResult::load(dir / "RTE");
  CHECK(back.summary() == r.summary());
  CHECK(back.relations[2].max.values == linked.max.values);
  CHECK(back.query_share.size() == r.query_share.size());
  // Merging a result with itself keeps every mean and doubles the counts.
  auto twice = back;
  twice.merge(back);
  CHECK(twice.examples == 2 * r.examples);
  CHECK(twice.relations[2].examples == 2 * linked.examples);
  CHECK(twice.category_examples[3] == 2 * r.category_examples[3]);
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h) {
      CHECK(twice.relations[0].max(l, h) == doctest::Approx(r.relations[0].max(l, h)));
      CHECK(twice.query_max[3](l, h) == doctest::Approx(r.query_max[3](l, h)));
      CHECK(twice.neighbour_share(l, h) == doctest::Approx(r.neighbour_share(l, h)));
    }
  CHECK(twice.relations[0].candidates.size() == r.relations[0].candidates.size());
  auto other_task = back;
  other_task.task = "MRPC";
  CHECK(message_of([&] { twice.merge(other_task); }) == "token relations: cannot merge task MRPC into RTE");
  study::write_token_relation_figures(back, dir / "figures");
  for (const char* stem : {"verb_subject_max_rte", "pronoun_noun_max_rte", "verb_subject_ud_dependency_links_max_rte",
                           "neighbour_share_rte", "cls_categories_rte"})
    CHECK(is_png(dir / "figures" / (std::string(stem) + ".png")));
  const auto sst = study::run_token_relations(model, task_inputs(darkbert::GlueTask::sst2, tokenizer, model.config(), 6));
  study::write_cls_category_figure({back, sst}, dir / "figures");
  CHECK(is_png(dir / "figures" / "cls_categories.png"));
  const auto table = darkbert::read_json_table<double>(dir / "figures" / "cls_categories.json");
  CHECK(table.row_names == std::vector<std::string>{"RTE", "SST-2"});
  const auto means = sst.query_layer_means();
  CHECK(table(1, 1) == doctest::Approx(means[1]));
}

TEST_CASE("a causal model (gpt2_lm): the query is a choice, categories only see visible keys") {
  const auto model = gpt2_fixture();
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto inputs = task_inputs(darkbert::GlueTask::mrpc, tokenizer, model.config(), 6);
  auto categories = study::paper_features();
  const auto r = study::run_token_relations(model, inputs, {.query = study::CategoryQuery::for_model(model.config())});
  CHECK(r.causal);
  CHECK(r.query == "last token");  // what GPT-2's classifier reads
  CHECK(r.query_examples == 6);
  CHECK(r.query_layer == 2);
  CHECK(r.category_examples[0] == 6);  // [CLS]'s counterpart: the <|endoftext|> BOS of every pair
  CHECK(r.category_examples[1] == 6);  // [SEP]'s: the <|endoftext|> between the sentences
  CHECK(r.category_examples[3] > 0);   // nouns
  // The first token sees only itself: all its attention is on itself, whatever the head.
  const auto first = study::run_token_relations(
      model, inputs,
      {.query = {.position = study::CategoryQuery::Position::first_token, .name = "first token"},
       .categories = {darkbert::token_class::custom("any", [](const darkbert::TokenAnnotation&) { return true; })}});
  for (Index h = 0; h < 4; ++h) CHECK(first.query_max[0](2, h) == doctest::Approx(1.0));
  const auto dir = darkbert::test::scratch_dir("study_relations_causal");
  r.save(dir);
  CHECK(study::TokenRelationsResult::load(dir).summary() == r.summary());
  study::write_token_relation_figures(r, dir);
  CHECK(is_png(dir / "last_token_categories_mrpc.png"));
}

TEST_CASE("token relations: bad input is named") {
  const auto model = bert_fixture();
  const auto tokenizer = bert_tokenizer();
  const auto inputs = task_inputs(darkbert::GlueTask::sst2, tokenizer, model.config(), 3);
  CHECK(message_of([&] { study::run_token_relations(model, inputs, {.query_layer = 2}); }) ==
        "run_token_relations: query layer 2 is outside [0, 2)");
  CHECK(message_of([&] {
          study::run_token_relations(model, inputs, {.diagonal_heads = std::vector<std::pair<Index, Index>>{{0, 4}}});
        }) == "run_token_relations: diagonal head 0:4 is outside 2 x 4");
  CHECK(message_of([&] { study::run_token_relations(model, inputs, {.candidate_percentile = 101}); }) ==
        "run_token_relations: candidate percentile 101 is outside [0, 100]");
  const auto dir = darkbert::test::scratch_dir("study_relations_bad");
  CHECK(message_of([&] { study::TokenRelationsResult::load(dir); }).find("token_relations.json: cannot open") !=
        std::string::npos);
  const auto r = study::run_token_relations(model, inputs);
  r.save(dir);
  auto j = r.summary();
  j["query"]["layer"] = 7;
  darkbert::test::write_file(dir / "token_relations.json", j.dump());
  CHECK(message_of([&] { study::TokenRelationsResult::load(dir); }) ==
        (dir / "token_relations.json").string() + ": query layer 7 is outside [0, 2)");
  fs::remove(dir / "neighbour_share.json");
  CHECK(message_of([&] { study::TokenRelationsResult::load(dir); }).find("neighbour_share.json: cannot open") !=
        std::string::npos);
  CHECK(message_of([&] { study::write_cls_category_figure({}, dir); }) == "write_cls_category_figure: no results");
  const auto nodata = darkbert::DataRoot::single(dir / "none", dir / "cache");
  CHECK(message_of([&] { study::ud_verb_subject_inputs(nodata, tokenizer, model.config()); })
            .find("UD English EWT dev") != std::string::npos);
}
