// POS tagger: accuracy of a small model on all of UD EWT dev, determinism, the two-pass structure, passes
// trained from interned feature ids against passes trained from the strings, the tag lexicon, and input
// errors. (The full model's accuracy is measured by `darkbert annotate --score`.)
#include <doctest/doctest.h>

#include <algorithm>  // std::sort, std::unique
#include <sstream>    // std::ostringstream
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/data/pos_tagger.hpp"
#include "test_data_fixtures.hpp"

using darkbert::test::message_of;

namespace {

struct Columns {
  std::vector<std::vector<std::string>> words, tags;
};

Columns columns(const std::vector<darkbert::ConlluSentence>& sentences) {
  Columns c;
  for (const auto& s : sentences) {
    std::vector<std::string> w, t;
    for (const auto& x : s.words) {
      w.push_back(x.form);
      t.push_back(x.upos);
    }
    c.words.push_back(std::move(w));
    c.tags.push_back(std::move(t));
  }
  return c;
}

double accuracy(const darkbert::PosTagger& tagger, const Columns& gold) {
  std::size_t ok = 0, n = 0;
  for (std::size_t s = 0; s < gold.words.size(); ++s) {
    const auto p = tagger.tag(gold.words[s]);
    REQUIRE(p.size() == gold.words[s].size());
    for (std::size_t i = 0; i < p.size(); ++i) ok += p[i] == gold.tags[s][i];
    n += p.size();
  }
  return static_cast<double>(ok) / static_cast<double>(n);
}

}  // namespace

TEST_CASE("a single-pass tagger trained on 1000 sentences tags EWT dev well; training is deterministic") {
  auto train = columns(darkbert::test::ewt_train_head());
  train.words.resize(1000);
  train.tags.resize(1000);
  const auto dev = columns(darkbert::test::ewt_dev());
  const darkbert::TaggerTrainOptions options{.iterations = 3, .folds = 0, .seed = 1};
  const auto a = darkbert::PosTagger::train(train.words, train.tags, options);
  CHECK_FALSE(a.second_pass().has_value());
  const double acc = accuracy(a, dev);
  MESSAGE("single pass, 1000 training sentences: UPOS accuracy on EWT dev ", acc);
  CHECK(acc > 0.88);
  const auto b = darkbert::PosTagger::train(train.words, train.tags, options);
  for (std::size_t s = 0; s < 200; ++s) CHECK(a.tag(dev.words[s]) == b.tag(dev.words[s]));
  const auto c = darkbert::PosTagger::train(train.words, train.tags, {.iterations = 3, .folds = 0, .seed = 2});
  std::size_t differ = 0;
  for (std::size_t s = 0; s < 200; ++s) differ += a.tag(dev.words[s]) != c.tag(dev.words[s]);
  CHECK(differ > 0);  // the seed matters (training order)
  CHECK(a.tag({}).empty());
}

TEST_CASE("the two-pass tagger (the fixture) uses its second pass and beats chance by far") {
  const auto& tagger = darkbert::test::small_annotator().tagger();
  REQUIRE(tagger.second_pass().has_value());
  CHECK(tagger.second_pass()->uses_right_tags());
  CHECK(tagger.first_pass().model().classes().size() == 17);
  CHECK(accuracy(tagger, columns(darkbert::test::ewt_dev())) > 0.90);
}

TEST_CASE("jackknifed tags: one sequence per training sentence, none seen by the model that made it") {
  const auto train = columns(darkbert::test::ewt_train_head());
  std::vector<std::vector<std::string>> head_words(train.words.begin(), train.words.begin() + 300);
  std::vector<std::vector<std::string>> head_tags(train.tags.begin(), train.tags.begin() + 300);
  std::vector<std::vector<std::string>> jackknifed;
  darkbert::PosTagger::train(head_words, head_tags, {.iterations = 2, .folds = 3, .seed = 5}, &jackknifed);
  REQUIRE(jackknifed.size() == 300);
  std::size_t ok = 0, n = 0;
  for (std::size_t s = 0; s < 300; ++s) {
    REQUIRE(jackknifed[s].size() == head_words[s].size());
    for (std::size_t i = 0; i < jackknifed[s].size(); ++i) ok += jackknifed[s][i] == head_tags[s][i];
    n += jackknifed[s].size();
  }
  // Tags of unseen sentences from 200-sentence models: clearly imperfect, clearly better than chance.
  const double acc = static_cast<double>(ok) / static_cast<double>(n);
  CHECK(acc > 0.6);
  CHECK(acc < 0.97);
}

TEST_CASE("passes trained from the first pass's interned features equal passes trained from the strings") {
  using darkbert::detail::GreedyTagger;
  auto c = columns(darkbert::test::ewt_train_head());
  c.words.resize(300);
  c.tags.resize(300);
  std::vector<std::string> classes;
  std::vector<std::vector<std::string>> lows(c.words.size());
  for (std::size_t s = 0; s < c.words.size(); ++s) {
    classes.insert(classes.end(), c.tags[s].begin(), c.tags[s].end());
    for (const auto& w : c.words[s]) lows[s].push_back(darkbert::detail::lower_word(w));
  }
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  const auto lexicon = darkbert::TagLexicon::build(lows, c.tags);
  const auto saved = [](const GreedyTagger& t) {
    std::ostringstream out;
    t.model().save(out);
    return out.str();
  };
  std::vector<std::size_t> all, rest, held_out;
  for (std::size_t s = 0; s < c.words.size(); ++s) {
    all.push_back(s);
    (s % 3 == 0 ? held_out : rest).push_back(s);
  }
  darkbert::detail::InternedFeatures interned;
  const auto first = GreedyTagger::train(c.words, c.tags, all, classes, lexicon, nullptr, 2, 7, nullptr, nullptr, &interned.ids);
  interned.names = &first.model();
  REQUIRE(interned.ids.size() == c.words.size());

  // A fold: the same model file, feature for feature, and the same tags on the sentences it did not see.
  std::vector<int> to_own;
  const auto from_strings = GreedyTagger::train(c.words, c.tags, rest, classes, lexicon, nullptr, 2, 11);
  const auto from_ids = GreedyTagger::train(c.words, c.tags, rest, classes, lexicon, nullptr, 2, 11, &interned, &to_own);
  CHECK(saved(from_ids) == saved(from_strings));
  CHECK(from_ids.model().num_features() == from_strings.model().num_features());
  std::vector<std::vector<std::string>> right(c.words.size());
  std::size_t unseen = 0;
  for (std::size_t s : held_out) {
    right[s] = from_strings.tag(c.words[s], lexicon, nullptr);
    CHECK(from_ids.tag_interned(c.words[s], interned.ids[s], to_own) == right[s]);
    for (const auto& word_ids : interned.ids[s])
      for (int g : word_ids) unseen += to_own[static_cast<std::size_t>(g)] < 0;
  }
  CHECK(unseen > 0);  // the held-out sentences have features the fold never saw: the -1 path is exercised
  for (std::size_t s : rest) right[s] = first.tag(c.words[s], lexicon, nullptr);

  // A second pass (right tags appended to the static features): the same model file.
  const auto second_strings = GreedyTagger::train(c.words, c.tags, all, classes, lexicon, &right, 2, 13);
  const auto second_ids = GreedyTagger::train(c.words, c.tags, all, classes, lexicon, &right, 2, 13, &interned);
  CHECK(saved(second_ids) == saved(second_strings));
}

TEST_CASE("tag lexicon: frequent words get the tags seen with them, rare words '?'") {
  const std::vector<std::vector<std::string>> words = {{"that", "that", "that", "dog"}, {"that", "dog", "dog"}};
  const std::vector<std::vector<std::string>> tags = {{"DET", "PRON", "SCONJ", "NOUN"}, {"DET", "NOUN", "NOUN"}};
  const auto lex = darkbert::TagLexicon::build(words, tags);
  CHECK(lex.ambiguity_class("that") == "DET|PRON|SCONJ");
  CHECK(lex.ambiguity_class("dog") == "NOUN");
  CHECK(lex.ambiguity_class("cat") == "?");
}

TEST_CASE("input errors") {
  CHECK(message_of([] { darkbert::PosTagger::train({{"a"}}, {}); }).find("1 sentences but 0 tag sequences") !=
        std::string::npos);
  CHECK(message_of([] { darkbert::PosTagger::train({{"a", "b"}}, {{"X"}}); }).find("sentence 0 has 2 words but 1 tags") !=
        std::string::npos);
  CHECK(message_of([] { darkbert::PosTagger::train({{"a"}}, {{"X"}}, {.folds = 1}); }).find("folds") != std::string::npos);
  CHECK(message_of([] { darkbert::PosTagger().tag({"a"}); }).find("not trained") != std::string::npos);
}
