#pragma once
/// @file
/// What the analysis needs to know about each valid token of an example, and named token classes
/// (predicates over those annotations) such as "[SEP]", "punctuation", "NOUN" or "subject".
///
/// The data layer fills one TokenAnnotation per valid (non-padding) token, in token order. Word-level labels
/// (UPOS, dependency relation, negation) are copied onto every word piece of the word.
///
/// @code
/// std::vector<TokenAnnotation> tokens = annotations_from_encoding(encoding);  // token, special, word, segment
/// tokens[3].upos = "NOUN";                                                   // from the annotator
/// TokenClass nouns = token_class::upos("NOUN");
/// bool b = nouns(tokens[3]);                                                 // true
/// @endcode

#include <algorithm>   // std::all_of, std::find
#include <cctype>      // std::ispunct, std::tolower
#include <cstddef>     // std::size_t
#include <functional>  // std::function
#include <span>        // std::span
#include <string>      // std::string
#include <utility>     // std::move
#include <vector>      // std::vector

#include "darkbert/core/error.hpp"            // darkbert::fail, darkbert::require
#include "darkbert/core/matrix.hpp"           // darkbert::Index
#include "darkbert/tokenizer/encoding.hpp"    // darkbert::Encoding

namespace darkbert {

/// One token of an example. Only the fields a metric uses need to be filled.
struct TokenAnnotation {
  std::string token;        ///< the token string as the tokenizer wrote it: "[CLS]", "##ing", "Ġthe"
  bool is_special = false;  ///< added by the tokenizer or a separator: [CLS], [SEP], <s>, </s>, <|endoftext|>
  std::string upos;         ///< Universal POS tag of the token's word ("NOUN", "VERB", "PRON", "PUNCT"); "" unknown
  std::string deprel;       ///< dependency relation of the word ("nsubj", "nsubj:pass", "obj"); "" none / unknown
  bool negation = false;    ///< the word is a negation marker (the annotator's list: not, n't, no, never, ...)
  int word_index = -1;      ///< index of the word within its sequence (Encoding::word_ids); -1 special tokens
  int segment = 0;          ///< which input segment the token belongs to (token type id); drives "block" share
  bool is_first = false;    ///< the example's first token (tells GPT-2's <|endoftext|> BOS from its separator)
};

/// A named predicate over token annotations: the classes whose attention the paper measures.
/// @code
/// TokenClass sep = token_class::sep_token();
/// if (sep(tokens[j])) ...
/// @endcode
struct TokenClass {
  std::string name;  ///<  shown in tables, e.g. "[CLS]", "negation"
  std::function<bool(const TokenAnnotation&)> test;  ///<  whether a token belongs to the class

  /// Whether `t` belongs to the class.
  bool operator()(const TokenAnnotation& t) const { return test(t); }
};

namespace detail {
/// Token text without WordPiece "##" or GPT-2 "Ġ" (U+0120, UTF-8 C4 A0) / RoBERTa-style prefixes.
inline std::string strip_piece_marker(const std::string& token) {
  if (token.rfind("##", 0) == 0) return token.substr(2);
  if (token.rfind("\xC4\xA0", 0) == 0) return token.substr(2);
  return token;
}
inline std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace detail

/// Factories for the token classes used in the paper (§3.4, §3.5). All are pure functions of one annotation.
namespace token_class {

/// `[CLS]` (BERT), `<s>` (RoBERTa) or the `<|endoftext|>` that opens a GPT-2 input (its BOS), when marked
/// special: the token every input starts with.
inline TokenClass cls_token() {
  return {"[CLS]", [](const TokenAnnotation& t) {
            return t.is_special && (t.token == "[CLS]" || t.token == "<s>" || (t.token == "<|endoftext|>" && t.is_first));
          }};
}

/// `[SEP]` (BERT), `</s>` (RoBERTa) or an `<|endoftext|>` after the first token (GPT-2's separator), when
/// marked special.
inline TokenClass sep_token() {
  return {"[SEP]", [](const TokenAnnotation& t) {
            return t.is_special && (t.token == "[SEP]" || t.token == "</s>" || (t.token == "<|endoftext|>" && !t.is_first));
          }};
}

/// Any special token.
inline TokenClass special() {
  return {"special", [](const TokenAnnotation& t) { return t.is_special; }};
}

/// Punctuation: UPOS "PUNCT", or — when no UPOS is known — a non-special token made only of ASCII punctuation
/// (after removing a "##" / "Ġ" piece marker).
inline TokenClass punctuation() {
  return {"punctuation", [](const TokenAnnotation& t) {
            if (t.is_special) return false;
            if (!t.upos.empty()) return t.upos == "PUNCT";
            const std::string s = detail::strip_piece_marker(t.token);
            return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
              return std::ispunct(static_cast<unsigned char>(c)) != 0;
            });
          }};
}

/// Tokens of words with one UPOS tag: upos("NOUN"), upos("VERB"), upos("PRON").
inline TokenClass upos(std::string tag) {
  std::string name = "upos=" + tag;
  return {std::move(name), [tag = std::move(tag)](const TokenAnnotation& t) { return !t.is_special && t.upos == tag; }};
}

/// Tokens whose word has one of the given UPOS tags: upos_any("nominal", {"NOUN", "PROPN"}).
inline TokenClass upos_any(std::string name, std::vector<std::string> tags) {
  return {std::move(name), [tags = std::move(tags)](const TokenAnnotation& t) {
            return !t.is_special && std::find(tags.begin(), tags.end(), t.upos) != tags.end();
          }};
}

/// Tokens whose word has exactly this dependency relation: deprel("obj").
inline TokenClass deprel(std::string label) {
  std::string name = "deprel=" + label;
  return {std::move(name),
          [label = std::move(label)](const TokenAnnotation& t) { return !t.is_special && t.deprel == label; }};
}

/// Tokens whose word has one of the given dependency relations.
inline TokenClass deprel_any(std::string name, std::vector<std::string> labels) {
  return {std::move(name), [labels = std::move(labels)](const TokenAnnotation& t) {
            return !t.is_special && std::find(labels.begin(), labels.end(), t.deprel) != labels.end();
          }};
}

/// Subjects as the annotator labels them: nsubj and nsubj:pass.
inline TokenClass subject() { return deprel_any("subject", {"nsubj", "nsubj:pass"}); }
/// Direct objects: obj.
inline TokenClass object() { return deprel_any("object", {"obj"}); }

/// Tokens of words the annotator flagged as negation.
inline TokenClass negation() {
  return {"negation", [](const TokenAnnotation& t) { return !t.is_special && t.negation; }};
}

/// Tokens whose text (piece marker removed, optionally ASCII-lower-cased) is in a word list.
/// @code
/// word_list("negation words", {"not", "no", "never"})
/// @endcode
inline TokenClass word_list(std::string name, std::vector<std::string> words, bool ignore_case = true) {
  if (ignore_case)
    for (auto& w : words) w = detail::ascii_lower(w);
  return {std::move(name), [words = std::move(words), ignore_case](const TokenAnnotation& t) {
            if (t.is_special) return false;
            std::string s = detail::strip_piece_marker(t.token);
            if (ignore_case) s = detail::ascii_lower(std::move(s));
            return std::find(words.begin(), words.end(), s) != words.end();
          }};
}

/// Any other predicate, with a name for the result tables.
inline TokenClass custom(std::string name, std::function<bool(const TokenAnnotation&)> test) {
  require(static_cast<bool>(test), "token class '", name, "': predicate is empty");
  return {std::move(name), std::move(test)};
}

}  // namespace token_class

/// Builds the annotations of the valid tokens of an encoding (token string, special flag, word index, segment).
/// POS, dependency and negation fields stay empty for the annotator to fill. Special = added by the tokenizer
/// (sequence id -1 on a non-padding token) or one of `special_tokens` (e.g. "<|endoftext|>" typed in a text).
/// Segment = token type id when present, else the sequence id (special tokens keep the previous token's segment).
/// Requires right padding: the attention mask must be 1...1 0...0.
/// @code
/// auto tokens = annotations_from_encoding(tokenizer.encode_pair(a, b, opts));
/// @endcode
inline std::vector<TokenAnnotation> annotations_from_encoding(
    const Encoding& e, const std::vector<std::string>& special_tokens = {"[CLS]", "[SEP]", "[MASK]", "<s>", "</s>",
                                                                          "<|endoftext|>"}) {
  const std::size_t L = e.size();
  require(e.tokens.size() == L, "annotations_from_encoding: ", e.tokens.size(), " token strings for ", L, " ids");
  auto check_size = [&](const std::vector<int>& v, const char* field) {
    require(v.empty() || v.size() == L, "annotations_from_encoding: ", field, " has ", v.size(), " entries for ", L,
            " ids");
  };
  check_size(e.attention_mask, "attention_mask");
  check_size(e.token_type_ids, "token_type_ids");
  check_size(e.sequence_ids, "sequence_ids");
  check_size(e.word_ids, "word_ids");

  std::size_t n = L;
  if (!e.attention_mask.empty()) {
    n = 0;
    while (n < L && e.attention_mask[n] == 1) ++n;
    for (std::size_t i = n; i < L; ++i)
      require(e.attention_mask[i] == 0, "annotations_from_encoding: attention_mask[", i, "] = ", e.attention_mask[i],
              " after padding started at ", n, "; darkbert expects right padding (1...1 0...0)");
  }

  std::vector<TokenAnnotation> out(n);
  int segment = 0;
  for (std::size_t i = 0; i < n; ++i) {
    TokenAnnotation& a = out[i];
    a.token = e.tokens[i];
    const bool added = !e.sequence_ids.empty() && e.sequence_ids[i] < 0;
    a.is_special =
        added || std::find(special_tokens.begin(), special_tokens.end(), a.token) != special_tokens.end();
    a.word_index = e.word_ids.empty() ? -1 : e.word_ids[i];
    a.is_first = i == 0;
    if (!e.token_type_ids.empty()) {
      segment = e.token_type_ids[i];
    } else if (!e.sequence_ids.empty() && e.sequence_ids[i] >= 0) {
      segment = e.sequence_ids[i];
    }
    a.segment = segment;
  }
  return out;
}

namespace detail {
/// Metrics accept annotations for the n valid tokens or for all L padded positions; only the first n are used.
template <class View>
void require_annotations(const View& view, std::span<const TokenAnnotation> tokens, const char* what) {
  const auto count = static_cast<Index>(tokens.size());
  require(count == view.length() || count == view.padded_length(), what, ": ", count,
          " token annotations for an example of valid length ", view.length(), " (padded ", view.padded_length(),
          "); pass one annotation per valid token");
}
}  // namespace detail

}  // namespace darkbert
