// Token annotations for the analysis: annotator labels projected onto a real BERT encoding of a pair.
#include <doctest/doctest.h>

#include <string>  // std::string

#include "darkbert/analysis/linguistic_tokens.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "test_data_fixtures.hpp"

TEST_CASE("annotate_example: every piece of a word carries its labels; special tokens none") {
  const auto tok = darkbert::Tokenizer::from_directory(darkbert::test::data_dir() / "vocab" / "bert-base-uncased");
  const auto& annotator = darkbert::test::small_annotator();
  const std::string a = "The committee didn't approve the unaffable plan.";
  const std::string b = "Nobody approved it.";
  const auto e = tok.encode_pair(a, b, {.max_length = 32, .padding = darkbert::Padding::max_length});
  const auto tokens = darkbert::annotate_example(annotator, e, a, b);
  std::size_t valid = 0;
  for (int m : e.attention_mask) valid += m;
  REQUIRE(tokens.size() == valid);
  std::string nouns, negations, subjects, objects, pieces_of_unaffable;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const auto& x = tokens[t];
    if (x.is_special) {
      CHECK(x.upos.empty());
      CHECK(x.deprel.empty());
      CHECK_FALSE(x.negation);
      continue;
    }
    CHECK_FALSE(x.upos.empty());  // every real token got its word's tag
    if (x.upos == "NOUN") nouns += x.token + " ";
    if (x.negation) negations += x.token + " ";
    if (x.deprel == "nsubj") subjects += x.token + " ";
    if (x.deprel == "obj") objects += x.token + " ";
    if (e.offsets[t].begin >= a.find("unaffable") && e.offsets[t].end <= a.find(" plan") && x.segment == 0)
      pieces_of_unaffable += x.upos + " ";
  }
  CHECK(negations == "' t nobody ");
  CHECK(nouns.find("committee") != std::string::npos);
  CHECK(nouns.find("plan") != std::string::npos);
  CHECK(subjects.find("committee") != std::string::npos);
  CHECK(subjects.find("nobody") != std::string::npos);
  CHECK(objects.find("plan") != std::string::npos);
  // "unaffable" is several WordPieces, all with the same tag.
  CHECK(tok.tokenize("unaffable").size() > 1);
  CHECK(pieces_of_unaffable.size() > 4);
  const auto first = pieces_of_unaffable.substr(0, pieces_of_unaffable.find(' ') + 1);
  std::string repeated;
  for (std::size_t k = 0; k < tok.tokenize("unaffable").size(); ++k) repeated += first;
  CHECK(pieces_of_unaffable == repeated);
}
