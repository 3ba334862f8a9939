#pragma once
/// @file
/// One token as the tokenizer models (WordPiece, byte-level BPE) produce it, before special tokens,
/// truncation and padding are applied by the Tokenizer facade.
///
/// @code
/// std::vector<TokenPiece> pieces;
/// wordpiece.tokenize("Café au lait", pieces);
/// pieces[0].token == "cafe", pieces[0].id == 7668, pieces[0].span == Span{0, 5}, pieces[0].word == 0
/// @endcode

#include <string>       // std::string
#include <vector>       // std::vector
#include <string_view>  // std::string_view

#include "darkbert/tokenizer/encoding.hpp"

namespace darkbert {

/// One token as a tokenizer produces it, before special tokens, truncation and padding are added.
struct TokenPiece {
  int id = 0;              ///< vocabulary id
  std::string_view token;  ///< token string; points into storage owned by the tokenizer (or a literal)
  Span span;               ///< byte span in the input text
  int word = 0;            ///< index of the pre-tokenizer unit (BERT basic token, GPT-2 regex chunk)
};

/// The token strings of some pieces, as owned strings.
inline std::vector<std::string> token_strings(const std::vector<TokenPiece>& pieces) {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (const auto& p : pieces) out.emplace_back(p.token);
  return out;
}

}  // namespace darkbert
