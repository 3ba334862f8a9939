// Token classes pick exactly the tokens the paper's features mean, and annotations_from_encoding turns a
// tokenizer Encoding into per-token annotations (special flags, segments, word indices), refusing left padding.

#include <doctest/doctest.h>

#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/analysis/token_annotation.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;
using darkbert::test::tok;

TEST_CASE("special-token classes") {
  const auto cls = token_class::cls_token();
  const auto sep = token_class::sep_token();
  const auto special = token_class::special();
  CHECK(cls.name == "[CLS]");
  CHECK(cls(tok("[CLS]", true)));
  CHECK(cls(tok("<s>", true)));             // RoBERTa
  CHECK_FALSE(cls(tok("[CLS]", false)));    // the text "[CLS]" that the tokenizer did not mark special
  CHECK_FALSE(cls(tok("[SEP]", true)));
  CHECK(sep(tok("[SEP]", true)));
  CHECK(sep(tok("</s>", true)));
  CHECK(sep(tok("<|endoftext|>", true)));   // GPT-2 separator
  auto bos = tok("<|endoftext|>", true);
  bos.is_first = true;                      // GPT-2's BOS: the start token, not a separator
  CHECK(cls(bos));
  CHECK_FALSE(sep(bos));
  CHECK_FALSE(cls(tok("<|endoftext|>", true)));
  CHECK_FALSE(sep(tok("[CLS]", true)));
  CHECK(special(tok("[MASK]", true)));
  CHECK_FALSE(special(tok("cat")));
}

TEST_CASE("punctuation: UPOS when known, otherwise an all-ASCII-punctuation token") {
  const auto punct = token_class::punctuation();
  CHECK(punct(tok(",", false, "PUNCT")));
  CHECK_FALSE(punct(tok(",", false, "SYM")));  // the annotator's tag wins
  CHECK(punct(tok("...")));
  CHECK(punct(tok("\xC4\xA0,")));              // GPT-2 "Ġ," (space + comma)
  CHECK(punct(tok("##.")));
  CHECK_FALSE(punct(tok("a.")));
  CHECK_FALSE(punct(tok("##")));               // the marker alone is no punctuation
  CHECK_FALSE(punct(tok("[SEP]", true)));      // special tokens never count
}

TEST_CASE("POS, dependency, negation and word-list classes") {
  const auto noun = token_class::upos("NOUN");
  CHECK(noun.name == "upos=NOUN");
  CHECK(noun(tok("##s", false, "NOUN")));  // every piece of a noun
  CHECK_FALSE(noun(tok("cat", false, "PROPN")));
  CHECK_FALSE(noun(tok("[CLS]", true, "NOUN")));
  const auto nominal = token_class::upos_any("nominal", {"NOUN", "PROPN"});
  CHECK(nominal(tok("Paris", false, "PROPN")));
  CHECK_FALSE(nominal(tok("runs", false, "VERB")));

  CHECK(token_class::deprel("nsubj")(tok("cat", false, "NOUN", "nsubj")));
  CHECK_FALSE(token_class::deprel("nsubj")(tok("cat", false, "NOUN", "nsubj:pass")));  // exact label
  const auto subject = token_class::subject();
  CHECK(subject(tok("cat", false, "NOUN", "nsubj")));
  CHECK(subject(tok("cat", false, "NOUN", "nsubj:pass")));
  CHECK_FALSE(subject(tok("cat", false, "NOUN", "obj")));
  CHECK(token_class::object()(tok("dogs", false, "NOUN", "obj")));
  CHECK(token_class::negation()(tok("n't", false, "PART", "advmod", true)));
  CHECK_FALSE(token_class::negation()(tok("not", false, "PART", "advmod", false)));  // only the annotator's flag

  const auto neg_words = token_class::word_list("negation words", {"Not", "never"});
  CHECK(neg_words(tok("not")));
  CHECK(neg_words(tok("NEVER")));
  CHECK(neg_words(tok("\xC4\xA0not")));  // GPT-2 "Ġnot"
  CHECK(neg_words(tok("##never")));
  CHECK_FALSE(neg_words(tok("nothing")));
  const auto exact = token_class::word_list("case", {"Not"}, false);
  CHECK(exact(tok("Not")));
  CHECK_FALSE(exact(tok("not")));

  const auto longer = token_class::custom("long", [](const TokenAnnotation& t) { return t.token.size() > 3; });
  CHECK(longer(tok("long")));
  CHECK_FALSE(longer(tok("cat")));
  CHECK(message_of([] { token_class::custom("empty", {}); }) == "token class 'empty': predicate is empty");
}

TEST_CASE("annotations_from_encoding: BERT sentence pair with padding") {
  Encoding e;
  e.tokens = {"[CLS]", "the", "cat", "[SEP]", "it", "[SEP]", "[PAD]", "[PAD]"};
  e.ids = {101, 1996, 4937, 102, 2009, 102, 0, 0};
  e.token_type_ids = {0, 0, 0, 0, 1, 1, 0, 0};
  e.attention_mask = {1, 1, 1, 1, 1, 1, 0, 0};
  e.sequence_ids = {-1, 0, 0, -1, 1, -1, -1, -1};
  e.word_ids = {-1, 0, 1, -1, 0, -1, -1, -1};
  const auto a = annotations_from_encoding(e);
  REQUIRE(a.size() == 6);  // padding dropped
  const bool special[] = {true, false, false, true, false, true};
  const int segment[] = {0, 0, 0, 0, 1, 1};
  const int word[] = {-1, 0, 1, -1, 0, -1};
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(a[i].token == e.tokens[i]);
    CHECK(a[i].is_special == special[i]);
    CHECK(a[i].segment == segment[i]);
    CHECK(a[i].word_index == word[i]);
    CHECK(a[i].upos.empty());
  }
}

TEST_CASE("annotations_from_encoding: GPT-2 text with <|endoftext|> as separator, no token types") {
  Encoding e;
  e.tokens = {"Hi", "<|endoftext|>", "\xC4\xA0there"};
  e.ids = {17250, 50256, 612};
  e.attention_mask = {1, 1, 1};
  e.sequence_ids = {0, 0, 0};
  e.word_ids = {0, 1, 2};
  const auto a = annotations_from_encoding(e);
  REQUIRE(a.size() == 3);
  CHECK_FALSE(a[0].is_special);
  CHECK(a[1].is_special);  // from the special-token list
  CHECK_FALSE(a[2].is_special);
  CHECK(a[2].segment == 0);
  CHECK(a[0].is_first);
  CHECK_FALSE(a[1].is_first);

  // The replication's inputs (EncodeOptions::end_of_text_boundaries): the BOS is [CLS]'s counterpart, the
  // second <|endoftext|> [SEP]'s.
  Encoding g;
  g.tokens = {"<|endoftext|>", "Hi", "<|endoftext|>", "Bye"};
  g.ids = {50256, 17250, 50256, 33};
  g.sequence_ids = {-1, 0, -1, 1};
  g.token_type_ids = {0, 0, 0, 1};
  const auto r = annotations_from_encoding(g);
  REQUIRE(r.size() == 4);
  CHECK(token_class::cls_token()(r[0]));
  CHECK_FALSE(token_class::sep_token()(r[0]));
  CHECK(token_class::sep_token()(r[2]));
  CHECK_FALSE(token_class::cls_token()(r[2]));

  // Without a mask every token is valid; sequence ids give the segment, added specials keep the previous one.
  Encoding f;
  f.tokens = {"a", "</s>", "b"};
  f.ids = {1, 2, 3};
  f.sequence_ids = {0, -1, 1};
  const auto b = annotations_from_encoding(f);
  REQUIRE(b.size() == 3);
  CHECK(b[1].is_special);
  CHECK(b[1].segment == 0);
  CHECK(b[2].segment == 1);
}

TEST_CASE("annotations_from_encoding refuses left padding and inconsistent fields") {
  Encoding e;
  e.tokens = {"[PAD]", "[CLS]", "a"};
  e.ids = {0, 101, 1037};
  e.attention_mask = {0, 1, 1};
  CHECK(message_of([&] { annotations_from_encoding(e); }) ==
        "annotations_from_encoding: attention_mask[1] = 1 after padding started at 0; darkbert expects right padding "
        "(1...1 0...0)");
  e.attention_mask = {1, 1};
  CHECK(message_of([&] { annotations_from_encoding(e); }) ==
        "annotations_from_encoding: attention_mask has 2 entries for 3 ids");
  e.attention_mask.clear();
  e.tokens.pop_back();
  CHECK(message_of([&] { annotations_from_encoding(e); }) == "annotations_from_encoding: 2 token strings for 3 ids");
}
