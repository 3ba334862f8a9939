// Negation lexicon: the documented list, case and apostrophe variants, and words that are not negation.
#include <doctest/doctest.h>

#include <string>  // std::string

#include "darkbert/data/negation.hpp"
#include "darkbert/data/word_tokenizer.hpp"

TEST_CASE("the documented lexicon, whole words, any case, ’ read as '") {
  CHECK(darkbert::negation_lexicon.size() == 12);
  for (auto w : darkbert::negation_lexicon) {
    CHECK(darkbert::is_negation(w));
    std::string upper(w);
    for (auto& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    CHECK(darkbert::is_negation(upper));
  }
  CHECK(darkbert::is_negation("N'T"));
  CHECK(darkbert::is_negation("n’t"));
  CHECK(darkbert::is_negation("nt"));  // from "dont" = do + nt
  for (const char* w : {"note", "nothingness", "know", "now", "nob", "can", "with", "non", "", "'t", "not.", "un"})
    CHECK_FALSE(darkbert::is_negation(w));
}

TEST_CASE("negation words of tokenized text") {
  std::string found;
  for (const auto& w : darkbert::tokenize_words("I cannot say nobody didn't try; neither he nor she, without doubt."))
    if (darkbert::is_negation(w.form)) found += w.form + " ";
  CHECK(found == "not nobody n't neither nor without ");
}
