#pragma once
/// @file
/// Negation words for the paper's "attention to negation tokens" feature (sec. 4.3).
///
/// @code
/// darkbert::is_negation("n't")   -> true
/// darkbert::is_negation("Never") -> true
/// @endcode
///
/// The lexicon (matched on the whole word, case-insensitively, with ’ read as '):
/// @code
/// not, n't, no, never, nothing, nobody, none, neither, nor, nowhere, cannot, without
/// @endcode
/// plus the apostrophe-less clitic "nt" (what tokenize_words splits from "dont", "didnt", ...) and the
/// typographic "n’t". "cannot" matters only for text that was not word-tokenized: tokenize_words splits it
/// into can + not. Words are not lemmatized: "nothing's" is split into nothing + 's first.

#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <string>       // std::string
#include <string_view>  // std::string_view

namespace darkbert {

/// The negation words of §3.4 (lower case; "n't" as UD EWT splits it).
inline constexpr std::array<std::string_view, 12> negation_lexicon = {
    "not", "n't", "no", "never", "nothing", "nobody", "none", "neither", "nor", "nowhere", "cannot", "without"};

/// Whether `word` (any case) is in negation_lexicon: `is_negation("Never")` is true.
inline bool is_negation(std::string_view word) {
  std::string lower;
  lower.reserve(word.size());
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (word.substr(i, 3) == "\xE2\x80\x99") {  // ’ (U+2019) -> '
      lower.push_back('\'');
      i += 2;
      continue;
    }
    const char c = word[i];
    lower.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c);
  }
  if (lower == "nt") return true;
  for (auto w : negation_lexicon)
    if (lower == w) return true;
  return false;
}

}  // namespace darkbert
