// Word <-> token projection: hand-made encodings for every rule, then the real bert-base-uncased and GPT-2
// tokenizers on GLUE text and FrameNet spans.
#include <doctest/doctest.h>

#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/data/framenet.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/data/negation.hpp"
#include "darkbert/data/projection.hpp"
#include "darkbert/data/word_tokenizer.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "test_support.hpp"

using darkbert::Encoding;
using darkbert::Span;
using darkbert::TokenRange;
using darkbert::test::message_of;

namespace {

// [CLS] don ' t play ##ing [SEP] it [SEP] [PAD]   for "don't playing" + "it"
Encoding hand_made() {
  Encoding e;
  e.tokens = {"[CLS]", "don", "'", "t", "play", "##ing", "[SEP]", "it", "[SEP]", "[PAD]"};
  e.ids.assign(e.tokens.size(), 0);
  e.sequence_ids = {-1, 0, 0, 0, 0, 0, -1, 1, -1, -1};
  e.word_ids = {-1, 0, 1, 2, 3, 3, -1, 0, -1, -1};
  e.offsets = {{0, 0}, {0, 3}, {3, 4}, {4, 5}, {6, 10}, {10, 13}, {0, 0}, {0, 2}, {0, 0}, {0, 0}};
  return e;
}

std::string strip(const std::string& token) {
  if (token.rfind("##", 0) == 0) return token.substr(2);
  if (token.rfind("\xC4\xA0", 0) == 0) return token.substr(2);  // GPT-2 "Ġ"
  return token;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

}  // namespace

TEST_CASE("alignment by byte overlap: most overlap wins, pieces stay with their word, other sequences ignored") {
  const auto e = hand_made();
  const auto words = darkbert::tokenize_words("don't playing");  // do | n't | playing
  REQUIRE(words.size() == 3);
  const auto a = darkbert::align_words_to_tokens(e, darkbert::word_spans(words), 0);
  CHECK(a.word_of_token == std::vector<int>{-1, 0, 1, 1, 2, 2, -1, -1, -1, -1});
  CHECK(a.tokens_of_word[0] == TokenRange{1, 2});
  CHECK(a.tokens_of_word[1] == TokenRange{2, 4});
  CHECK(a.tokens_of_word[2] == TokenRange{4, 6});
  const auto b = darkbert::align_words_to_tokens(e, std::vector<Span>{{0, 2}}, 1);
  CHECK(b.word_of_token == std::vector<int>{-1, -1, -1, -1, -1, -1, -1, 0, -1, -1});
}

TEST_CASE("label projection: all pieces or first piece, fill elsewhere") {
  const auto e = hand_made();
  const auto a = darkbert::align_words_to_tokens(e, std::vector<Span>{{0, 2}, {2, 5}, {6, 13}}, 0);
  const std::vector<std::string> upos = {"AUX", "PART", "VERB"};
  CHECK(darkbert::project_word_labels(a, upos, std::string("-")) ==
        std::vector<std::string>{"-", "AUX", "PART", "PART", "VERB", "VERB", "-", "-", "-", "-"});
  CHECK(darkbert::project_word_labels(a, upos, std::string("-"), darkbert::PieceRule::first_piece) ==
        std::vector<std::string>{"-", "AUX", "PART", "-", "VERB", "-", "-", "-", "-", "-"});
  const std::vector<int> neg = {0, 1, 0};
  CHECK(darkbert::project_word_labels(a, neg, 0) == std::vector<int>{0, 0, 1, 1, 0, 0, 0, 0, 0, 0});
  CHECK(message_of([&] { darkbert::project_word_labels(a, std::vector<int>{1}, 0); }).find("1 labels for 3 words") !=
        std::string::npos);
}

TEST_CASE("spans and word ranges to token ranges; words without tokens; word_ids alignment") {
  const auto e = hand_made();
  CHECK(darkbert::tokens_in_span(e, {6, 13}, 0) == TokenRange{4, 6});
  CHECK(darkbert::tokens_in_span(e, {2, 5}, 0) == TokenRange{1, 4});  // "n't" touches "don" too
  CHECK(darkbert::tokens_in_span(e, {0, 2}, 1) == TokenRange{7, 8});
  CHECK(darkbert::tokens_in_span(e, {20, 30}, 0).empty());             // e.g. truncated away
  // A word beyond the encoding (truncated) has no tokens and its label reaches none.
  const auto a = darkbert::align_words_to_tokens(e, std::vector<Span>{{0, 5}, {6, 13}, {14, 20}}, 0);
  CHECK(a.tokens_of_word[2].empty());
  CHECK(darkbert::tokens_of_words(a, 1, 3) == TokenRange{4, 6});
  CHECK(darkbert::tokens_of_words(a, 2, 3).empty());
  const auto w = darkbert::align_by_word_ids(e, 4, 0);
  CHECK(w.tokens_of_word[3] == TokenRange{4, 6});
  CHECK(message_of([&] { darkbert::align_by_word_ids(e, 2, 0); }).find("word id 2 but there are only 2 words") !=
        std::string::npos);
  CHECK(message_of([&] { darkbert::align_words_to_tokens(e, std::vector<Span>{{0, 5}, {3, 8}}, 0); }).find("overlap") !=
        std::string::npos);
  Encoding broken = e;
  broken.offsets.pop_back();
  CHECK(message_of([&] { darkbert::tokens_in_span(broken, {0, 1}, 0); }).find("9 offsets") != std::string::npos);
}

TEST_CASE("real tokenizers on GLUE pairs: every word's tokens spell the word; clitics; negation") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), "/nonexistent-cache");
  const auto mrpc = darkbert::load_glue(root, darkbert::GlueTask::mrpc, "dev", {.max_rows = 50});
  for (const char* vocab : {"bert-base-uncased", "gpt2"}) {
    INFO(vocab);
    const auto tok = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab" / vocab);
    const bool bert = std::string(vocab) == "bert-base-uncased";
    std::size_t words_checked = 0, exact = 0, swallowed = 0;
    for (const auto& ex : mrpc.examples) {
      const auto e = tok.encode_pair(ex.text_a, ex.text_b);
      for (int seq : {0, 1}) {
        const std::string& text = seq == 0 ? ex.text_a : ex.text_b;
        const auto words = darkbert::tokenize_words(text);
        const auto a = darkbert::align_words_to_tokens(e, darkbert::word_spans(words), seq);
        for (std::size_t w = 0; w < words.size(); ++w) {
          const auto r = a.tokens_of_word[w];
          if (r.empty()) {
            // Only when a neighbour owns the token that covers it (GPT-2 merges ," and ." into one token).
            ++swallowed;
            const auto covering = darkbert::tokens_in_span(e, words[w].span, seq);
            REQUIRE_FALSE(covering.empty());
            CHECK(a.word_of_token[covering.begin] != static_cast<int>(w));
            continue;
          }
          std::string spelled;
          for (std::size_t t = r.begin; t < r.end; ++t) spelled += strip(e.tokens[t]);
          ++words_checked;
          // Words split inside a tokenizer token (do|n't vs don|'|t) cannot be spelled exactly.
          exact += (bert ? lower(spelled) == lower(words[w].form) : spelled == words[w].form);
        }
      }
    }
    CHECK(words_checked > 1000);
    if (bert) CHECK(swallowed == 0);
    CHECK(swallowed < words_checked / 100);
    CHECK(exact > 0.97 * static_cast<double>(words_checked));

    // "doesn't": do|n't against BERT doesn|'|t or GPT-2 Ġdoesn|'t.
    const std::string text = "He doesn't fit.";
    const auto words = darkbert::tokenize_words(text);
    const auto e = tok.encode(text);
    const auto a = darkbert::align_words_to_tokens(e, darkbert::word_spans(words), 0);
    std::vector<int> neg;
    for (const auto& w : words) neg.push_back(darkbert::is_negation(w.form));
    const auto per_token = darkbert::project_word_labels(a, neg, 0);
    std::string negated;
    for (std::size_t t = 0; t < e.size(); ++t)
      if (per_token[t]) negated += strip(e.tokens[t]);
    CHECK(negated == "'t");  // BERT ' + t, GPT-2 't
  }
}

TEST_CASE("FrameNet spans onto BERT tokens: target and core elements of the selected sample sentences") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), "/nonexistent-cache");
  darkbert::FrameNet fn(darkbert::framenet_sample_dir(root));
  const auto picked = darkbert::select_framenet_examples(fn);
  REQUIRE(picked.size() == 36);
  const auto tok = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab" / "bert-base-uncased");
  for (const auto& ex : picked) {
    const auto e = tok.encode(ex.text);
    for (const auto& span : ex.target) {
      const auto r = darkbert::tokens_in_span(e, span, 0);
      REQUIRE_FALSE(r.empty());
      std::string spelled;
      for (std::size_t t = r.begin; t < r.end; ++t) spelled += strip(e.tokens[t]);
      std::string want;
      for (char c : ex.text.substr(span.begin, span.end - span.begin))
        if (c != ' ') want.push_back(c);
      INFO(ex.text);
      CHECK(spelled == lower(want));  // ASCII sample sentences: uncased pieces spell the span
    }
    for (const auto& link : ex.core_elements) {
      const auto r = darkbert::tokens_in_span(e, link.span, 0);
      CHECK_FALSE(r.empty());
      CHECK(e.offsets[r.begin].begin >= link.span.begin);
      CHECK(e.offsets[r.end - 1].end <= link.span.end);
    }
  }
}
