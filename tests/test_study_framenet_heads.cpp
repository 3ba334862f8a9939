// Tests for study/framenet_heads.hpp: the paper's FrameNet selection rule by rule on hand-built
// annotation sets, both selections' counts on the shared 200-LU sample (checked against an independent
// Python reading of the XML), the per-head score against a hand computation, a head planted by a masking
// policy found above the 99th percentile, the result's save/load round trip and figures, a causal model,
// and bad input named.
#include <doctest/doctest.h>

#include <algorithm>   // std::sort, std::fill
#include <cmath>       // std::isnan
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "darkbert/study/framenet_heads.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::Index;
using darkbert::test::message_of;
namespace study = darkbert::study;
using Verdict = study::PaperSelectionVerdict;
using darkbert::test::shared_root;
using darkbert::test::gpt2_fixture;
using darkbert::test::is_png;

namespace {

darkbert::Span span_of(const std::string& text, const std::string& words) {
  const auto b = text.find(words);
  REQUIRE(b != std::string::npos);
  return {b, b + words.size()};
}

// Emotion_directed-like: Experiencer and Stimulus form a core set; Topic is coreType Core in no core set;
// Degree is peripheral.
darkbert::FrameInfo test_frame() {
  darkbert::FrameInfo f;
  f.name = "Emotion_directed";
  f.elements = {{1, "Experiencer", "Exp", darkbert::CoreType::core},
                {2, "Stimulus", "Stim", darkbert::CoreType::core},
                {3, "Degree", "Degr", darkbert::CoreType::peripheral},
                {4, "Topic", "Top", darkbert::CoreType::core}};
  f.core_sets = {{"Experiencer", "Stimulus"}};
  return f;
}

struct Fe {
  std::string name, words;
  std::string itype = "";  // null instantiation (then the words are ignored)
  int rank = 1;
};

// The verdict of the paper's rules on `text` with these target words and frame elements.
study::PaperSelectionCheck check(const std::string& text, const std::vector<std::string>& targets, const std::vector<Fe>& fes,
                                 const study::PaperSelectionOptions& options = {}) {
  darkbert::LexicalUnit lu;
  lu.id = 7;
  lu.name = "agitated.a";
  lu.frame = "Emotion_directed";
  darkbert::FrameNetSentence s;
  s.id = 11;
  s.text = text;
  darkbert::FrameAnnotationSet set;
  set.id = 13;
  for (const auto& t : targets) set.target.push_back(span_of(text, t));
  for (const auto& f : fes) {
    darkbert::FrameElementSpan e;
    e.name = f.name;
    e.layer_rank = f.rank;
    e.null_instantiation = f.itype;
    if (f.itype.empty()) e.span = span_of(text, f.words);
    set.elements.push_back(e);
  }
  return study::check_paper_selection(lu, test_frame(), s, set, options);
}

// The mean over examples of the per-example maximum a[target][element] over the links' visible pairs, by
// plain loops over the maps (for comparison with LinkAttentionAccumulator).
template <class T>
std::vector<double> hand_scores(const darkbert::Transformer<T>& model, const study::FrameNetModelInputs& in,
                                std::size_t& counted) {
  const auto& c = model.config();
  std::vector<double> sum(static_cast<std::size_t>(c.num_layers * c.num_heads), 0.0);
  counted = 0;
  study::for_each_attention(model, in.inputs, [&](std::size_t i, const darkbert::AttentionView<T>& v) {
    std::vector<double> best(sum.size(), -1.0);
    for (const auto& link : in.links[i])
      for (Index q : link.from)
        for (Index k : link.to) {
          if (q == k || (v.causal() && k > q)) continue;
          for (Index l = 0; l < c.num_layers; ++l)
            for (Index h = 0; h < c.num_heads; ++h) {
              auto& b = best[static_cast<std::size_t>(l * c.num_heads + h)];
              b = std::max(b, static_cast<double>(v(l, h, q, k)));
            }
        }
    if (best[0] < 0) return;
    ++counted;
    for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += best[k];
  });
  for (auto& s : sum) s /= static_cast<double>(counted);
  return sum;
}

}  // namespace

TEST_CASE("the paper's rules, each accepting and rejecting") {
  const std::string text = "He said that she was agitated .";  // He 0 said 1 that 2 she 3 was 4 agitated 5 . 6
  const Fe experiencer{"Experiencer", "He"};
  auto selected = check(text, {"agitated"}, {experiencer});
  REQUIRE(selected.verdict == Verdict::selected);
  REQUIRE(selected.example);
  CHECK(selected.example->target_tokens == std::vector<std::size_t>{5});
  REQUIRE(selected.example->core_elements.size() == 1);
  CHECK(selected.example->core_elements[0].element == "Experiencer");
  CHECK(selected.example->core_elements[0].tokens == std::vector<std::size_t>{0});
  CHECK(selected.example->core_elements[0].distance == 5);
  CHECK(selected.example->lu_id == 7);
  CHECK(selected.example->sentence_id == 11);
  CHECK(selected.example->annotation_id == 13);

  // 1. At most 12 tokens.
  const std::string twelve = "He said that she was really very much quite extremely agitated .";
  const std::string thirteen = "He said that she was really very much quite so extremely agitated .";
  CHECK(check(twelve, {"agitated"}, {experiencer}).verdict == Verdict::selected);
  CHECK(check(thirteen, {"agitated"}, {experiencer}).verdict == Verdict::too_long);
  // 2. Exactly one target label, covering one token.
  CHECK(check(text, {}, {experiencer}).verdict == Verdict::not_one_target);
  CHECK(check(text, {"said", "agitated"}, {experiencer}).verdict == Verdict::not_one_target);
  CHECK(check(text, {"was agitated"}, {experiencer}).verdict == Verdict::target_not_one_token);
  // 3. Every frame element, core or not, at most 3 tokens.
  CHECK(check(text, {"agitated"}, {experiencer, {"Degree", "He said that"}}).verdict == Verdict::selected);
  CHECK(check(text, {"agitated"}, {experiencer, {"Degree", "He said that she"}}).verdict == Verdict::element_too_long);
  CHECK(check(text, {"agitated"}, {{"Experiencer", "He said that she"}}).verdict == Verdict::element_too_long);
  // 4. No frame-element token within +-2 tokens of the target ("she" is 2 away, "that" 3).
  CHECK(check(text, {"agitated"}, {experiencer, {"Degree", "that"}}).verdict == Verdict::selected);
  CHECK(check(text, {"agitated"}, {experiencer, {"Degree", "she"}}).verdict == Verdict::element_near_target);
  CHECK(check(text, {"agitated"}, {{"Experiencer", "was"}}).verdict == Verdict::element_near_target);
  CHECK(check(text, {"agitated"}, {experiencer, {"Degree", "she"}}, {.window = 1}).verdict == Verdict::selected);
  // ... frame elements that are not overt, or on a second FE layer, do not count.
  CHECK(check(text, {"agitated"}, {experiencer, {"Stimulus", "", "INI"}}).verdict == Verdict::selected);
  CHECK(check(text, {"agitated"}, {experiencer, {"Degree", "she", "", 2}}).verdict == Verdict::selected);
  // 5. At least one core element: a core-set member (the paper's code), or coreType Core (the other reading).
  CHECK(check(text, {"agitated"}, {{"Degree", "He"}}).verdict == Verdict::no_core_element);
  CHECK(check(text, {"agitated"}, {{"Topic", "He"}}).verdict == Verdict::no_core_element);
  const auto by_type = check(text, {"agitated"}, {{"Topic", "He"}}, {.core = study::CoreElements::core_type});
  CHECK(by_type.verdict == Verdict::selected);
  // Only core elements become links.
  const auto two = check(text, {"agitated"}, {experiencer, {"Degree", "that"}, {"Stimulus", "said"}});
  REQUIRE(two.example);
  CHECK(two.example->core_elements.size() == 2);
  CHECK(study::to_string(Verdict::element_near_target) == "element_near_target");
}

TEST_CASE("both selections on the shared 200-LU sample, counted as an independent reading of the XML counts them") {
  const auto root = shared_root();
  const auto release = study::locate_framenet(root, study::FrameNetSource::sample);
  CHECK(release.kind == "200-LU sample");
  CHECK(release.version == "1.5");
  darkbert::FrameNet fn(release.dir);
  const auto s = study::select_framenet_sentences(fn, release);
  CHECK(s.release.lexical_units == 200);
  CHECK(s.release.frames == 131);
  CHECK(s.release.describe().find("FrameNet 1.5 200-LU sample (200 lexical units, 131 frames)") == 0);
  // README: darkbert's earlier selection gives 36 on the sample.
  CHECK(s.darkbert_count.annotation_sets == 36);
  CHECK(s.darkbert_count.sentences == 36);
  CHECK(s.darkbert_count.lexical_units == 26);
  // The paper's code: 3 sentences (core sets), 11 with coreType Core (tests/data-free Python check, same rules).
  CHECK(s.paper_count.annotation_sets == 3);
  CHECK(s.paper_count.sentences == 3);
  CHECK(s.paper_count.lexical_units == 3);
  CHECK(s.paper.size() == 3);
  CHECK(s.paper_core_type_count.annotation_sets == 11);
  CHECK(s.paper_core_type_count.lexical_units == 10);
  const std::map<std::string, std::size_t> verdicts = {
      {"element_near_target", 143}, {"element_too_long", 25}, {"no_core_element", 14}, {"not_one_target", 5},
      {"selected", 3},              {"target_not_one_token", 12}, {"too_long", 923}};
  CHECK(s.paper_verdicts == verdicts);
  for (const auto& ex : s.paper) {
    CHECK(ex.tokens.size() <= 12);
    CHECK(ex.target_tokens.size() == 1);
    for (const auto& c : ex.core_elements) CHECK(c.distance > 2);
  }
  CHECK_FALSE(s.figure);  // "He was becoming agitated" is not among the sample's 200 lexical units

  // automatic: the full release when the data root has one, else the sample (said in `kind`).
  const auto dir = darkbert::test::scratch_dir("study_framenet_locate");
  fs::create_directories(dir / "data" / "framenet");
  fs::create_directory_symlink(darkbert::test::data_dir() / "framenet" / "sample", dir / "data" / "framenet" / "sample");
  const auto only_sample = darkbert::DataRoot::single(dir / "data", dir / "cache");
  CHECK(study::locate_framenet(only_sample).kind == "200-LU sample");
  const auto msg = message_of([&] { study::locate_framenet(only_sample, study::FrameNetSource::full_release); });
  CHECK(msg.find("FrameNet full release") != std::string::npos);
  CHECK(msg.find((dir / "data").string()) != std::string::npos);
}

TEST_CASE("per-head score: the hand computation, and a planted head above the 99th percentile") {
  const auto model = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model_real_vocab");
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  const auto release = study::locate_framenet(shared_root(), study::FrameNetSource::sample);
  const auto selections = study::select_framenet_sentences(darkbert::FrameNet(release.dir), release);
  REQUIRE(selections.paper.size() == 3);
  const auto encoded = study::encode_framenet_examples(tokenizer, selections.paper, model.config(), 40);
  REQUIRE(encoded.inputs.size() == 3);
  CHECK(encoded.dropped == 0);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& e = encoded.inputs.texts.encodings[i];
    CHECK(e.tokens.front() == "[CLS]");
    for (const auto& link : encoded.links[i]) {
      CHECK_FALSE(link.from.empty());
      CHECK_FALSE(link.to.empty());
    }
  }

  const auto plain = study::run_framenet_heads(model, tokenizer, selections, {.max_length = 40, .model = "fixture"});
  CHECK(plain.scored == 3);
  CHECK(plain.skipped == 0);
  CHECK(plain.sampled == 3);
  CHECK(plain.paper.annotation_sets == 3);
  CHECK(plain.darkbert.annotation_sets == 36);
  std::size_t counted = 0;
  const auto expected = hand_scores(model, encoded, counted);
  CHECK(counted == 3);
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h) CHECK(plain.scores(l, h) == doctest::Approx(expected[static_cast<std::size_t>(l * 4 + h)]).epsilon(1e-6));
  // The threshold is numpy's linear 99th percentile of the 8 scores: 0.93 of the way from the 7th to the 8th.
  std::vector<double> sorted(expected);
  std::sort(sorted.begin(), sorted.end());
  CHECK(plain.threshold == doctest::Approx(sorted[6] + 0.93 * (sorted[7] - sorted[6])).epsilon(1e-6));
  REQUIRE(plain.top.size() == 1);
  CHECK(plain.top[0].value == doctest::Approx(sorted[7]).epsilon(1e-6));

  // Head 1:2 planted: every target row puts all its weight on the first piece of its first core element.
  // Batches of one example, so the policy's n-th call is the n-th sentence (then the figure sentence).
  std::size_t call = 0;
  darkbert::MaskingPolicies<float> planted;
  planted.add(
      [&](const darkbert::PatternSite<float>& s) {
        const std::size_t k = call++;
        if (k >= encoded.links.size()) return;
        const auto& link = encoded.links[k].front();
        for (Index q : link.from) {
          float* row = s.map + q * s.length;
          std::fill(row, row + s.length, 0.0f);
          row[link.to.front()] = 1.0f;
        }
      },
      {{1, 2}});
  auto forward = study::attention_only_options<float>();
  forward.policies = &planted;
  const auto r = study::run_framenet_heads(model, tokenizer, selections, {.max_length = 40, .batch_size = 1}, forward);
  CHECK(call == 4);
  CHECK(r.scores(1, 2) == 1.0);
  REQUIRE(r.top.size() == 1);
  CHECK(r.top[0].layer == 1);
  CHECK(r.top[0].head == 2);
  CHECK(r.top[0].value == 1.0);
  CHECK(r.threshold < 1.0);
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h)
      if (l != 1 || h != 2) CHECK(r.scores(l, h) == doctest::Approx(plain.scores(l, h)).epsilon(1e-6));

  // The figure: not in the sample, so encoded from its words; the planted head drawn first, then the next best.
  CHECK(r.figure.sentence == "He was becoming agitated .");
  CHECK(r.figure.source.find("not in this FrameNet") == 0);
  CHECK(r.figure.tokens == std::vector<std::string>{"[CLS]", "he", "was", "becoming", "agitated", ".", "[SEP]"});
  CHECK(r.figure.target == std::vector<Index>{4});
  CHECK(r.figure.core == std::vector<Index>{1});
  REQUIRE(r.figure.heads.size() == 2);
  CHECK(r.figure.heads[0].layer == 1);
  CHECK(r.figure.heads[0].head == 2);
  CHECK(r.figure.heads[0].above);
  CHECK_FALSE(r.figure.heads[1].above);
  CHECK(r.figure.maps.size() == 2u * 4u * 7u * 7u);
}

TEST_CASE("FrameNetHeadsResult: save, load, merge, figures; bad folders named") {
  const auto model = darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model_real_vocab");
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/bert-base-uncased");
  const auto release = study::locate_framenet(shared_root(), study::FrameNetSource::sample);
  const auto selections = study::select_framenet_sentences(darkbert::FrameNet(release.dir), release);
  const auto r = study::run_framenet_heads(model, tokenizer, selections, {.seed = 5, .max_length = 40, .model = "m"});
  const auto dir = darkbert::test::scratch_dir("study_framenet_save");
  r.save(dir / "result");
  const auto back = study::FrameNetHeadsResult::load(dir / "result");
  CHECK(back.summary() == r.summary());
  CHECK(back.scores.values == r.scores.values);
  CHECK(back.figure.maps == r.figure.maps);
  CHECK(back.threshold == r.threshold);
  const auto j = r.summary();
  CHECK(j["selection"]["paper_code"]["count"]["annotation_sets"] == 3);
  CHECK(j["selection"]["darkbert_earlier"]["count"]["annotation_sets"] == 36);
  CHECK(j["selection"]["paper_code"]["paper_reported"] == 473);
  CHECK(j["framenet"]["kind"] == "200-LU sample");
  CHECK(j["top_heads"].size() == r.top.size());
  for (const char* f : {"framenet_heads.json", "framenet_max_attention.csv", "framenet_max_attention.npy",
                        "framenet_figure_maps.npy"})
    CHECK(fs::is_regular_file(dir / "result" / f));

  // Merging a run with itself keeps the means and doubles the counts.
  auto twice = back;
  twice.merge(back);
  CHECK(twice.scored == 2 * r.scored);
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 4; ++h) CHECK(twice.scores(l, h) == doctest::Approx(r.scores(l, h)));

  study::write_framenet_figures(back, dir / "figures");
  const std::vector<std::string> stems = {"framenet_heads", "framenet_example_all_heads",
                                          "framenet_example_L" + std::to_string(r.figure.heads[0].layer) + "_H" +
                                              std::to_string(r.figure.heads[0].head)};
  for (const auto& stem : stems) {
    CHECK(is_png(dir / "figures" / (stem + ".png")));
    CHECK(fs::file_size(dir / "figures" / (stem + ".svg")) > 1000);
  }

  // Bad folders.
  CHECK(message_of([&] { study::FrameNetHeadsResult::load(dir / "missing"); })
            .find((dir / "missing" / "framenet_heads.json").string() + ": cannot open") == 0);
  auto text = r.summary();
  text["format"] = "something-else";
  darkbert::test::write_file(dir / "bad" / "framenet_heads.json", text.dump());
  CHECK(message_of([&] { study::FrameNetHeadsResult::load(dir / "bad"); }).find("expected \"darkbert-framenet-heads/1\"") !=
        std::string::npos);
  text = r.summary();
  text.erase("model");
  darkbert::test::write_file(dir / "bad" / "framenet_heads.json", text.dump());
  CHECK(message_of([&] { study::FrameNetHeadsResult::load(dir / "bad"); }) ==
        (dir / "bad" / "framenet_heads.json").string() + ": key 'model' missing");
  darkbert::test::write_file(dir / "bad" / "framenet_heads.json", "{not json");
  CHECK(message_of([&] { study::FrameNetHeadsResult::load(dir / "bad"); }).find("not valid JSON") != std::string::npos);
  fs::copy_file(dir / "result" / "framenet_heads.json", dir / "bad" / "framenet_heads.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(dir / "result" / "framenet_max_attention.json", dir / "bad" / "framenet_max_attention.json");
  darkbert::write_npy(dir / "bad" / "framenet_figure_maps.npy", xt::xtensor<double, 2>::from_shape({2, 2}));
  CHECK(message_of([&] { study::FrameNetHeadsResult::load(dir / "bad"); })
            .find((dir / "bad" / "framenet_figure_maps.npy").string() + ": expected [2, 4, 7, 7] figure maps") == 0);
  CHECK(message_of([] { study::figure_example_from_fields({.text = "He was calm .", .target = "agitated"}); }) ==
        "figure sentence 'He was calm .': its target 'agitated' is not one of its whitespace tokens");
}

TEST_CASE("a causal model (gpt2_lm): only visible pairs count, the figure is lower-triangular") {
  const auto model = gpt2_fixture();
  const auto tokenizer = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab/gpt2");
  const auto release = study::locate_framenet(shared_root(), study::FrameNetSource::sample);
  const auto selections = study::select_framenet_sentences(darkbert::FrameNet(release.dir), release);
  const auto r = study::run_framenet_heads(model, tokenizer, selections, {.max_length = 40});
  CHECK(r.causal);
  const auto encoded = study::encode_framenet_examples(tokenizer, selections.paper, model.config(), 40);
  std::size_t counted = 0;
  const auto expected = hand_scores(model, encoded, counted);
  CHECK(r.scored == counted);
  CHECK(r.scored + r.skipped == 3);
  CHECK(r.scored > 0);  // at least one of the sample's sentences has a core element before its target
  if (counted > 0)
    for (Index l = 0; l < 3; ++l)
      for (Index h = 0; h < 4; ++h)
        CHECK(r.scores(l, h) == doctest::Approx(expected[static_cast<std::size_t>(l * 4 + h)]).epsilon(1e-6));
  // "He was becoming agitated .": "He" comes before "agitated", so the pair is visible.
  CHECK(r.figure.tokens.front() == "He");
  CHECK(r.figure.core == std::vector<Index>{0});
  const auto n = static_cast<Index>(r.figure.tokens.size());
  for (Index l = 0; l < 3; ++l)
    for (Index h = 0; h < 4; ++h) {
      const auto m = r.figure.map(l, h);
      for (Index i = 0; i < n; ++i)
        for (Index j = i + 1; j < n; ++j) CHECK(m(i, j) == 0.0);
    }
  const auto dir = darkbert::test::scratch_dir("study_framenet_causal");
  r.save(dir);
  CHECK(study::FrameNetHeadsResult::load(dir).causal);
  study::write_framenet_figures(r, dir);
  CHECK(is_png(dir / "framenet_heads.png"));
}
