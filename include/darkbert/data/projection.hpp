#pragma once
/// @file
/// Word <-> token projection: carries word-level labels (POS, subject/object, negation) and byte spans
/// (FrameNet targets and frame elements) onto the WordPiece / BPE tokens of an Encoding, through the byte
/// offsets every token keeps into its input text (tokenizer/encoding.hpp).
///
/// @code
/// auto words = darkbert::tokenize_words(text);                       // annotator words, byte spans
/// auto e = tokenizer.encode(text);
/// auto align = darkbert::align_words_to_tokens(e, darkbert::word_spans(words), /*sequence=*/0);
/// auto upos = darkbert::project_word_labels(align, word_upos, std::string("_"));   // one per token
/// auto range = darkbert::tokens_in_span(e, frame_element.span, 0);                 // [first, end)
/// @endcode
///
/// Rules
///  * A token belongs to the word its byte span overlaps most (ties: the earlier word). Tokens of other
///    sequences, special tokens, padding and tokens with an empty span belong to no word (-1). So a word's
///    tokens are contiguous; a token never belongs to two words. Example, BERT on "don't": the annotator has
///    do [0,2) + n't [2,5), BERT has don [0,3) ' [3,4) t [4,5): "don" -> do, "'" and "t" -> n't.
///  * Multi-piece words, PieceRule::all_pieces (default, what analysis/token_annotation.hpp expects): every
///    token of the word gets the word's label ("play ##ing" both VERB). PieceRule::first_piece: the first
///    token gets the label, the other pieces get the fill value (the usual rule for training taggers).
///  * A word no token belongs to (truncated away, or swallowed by a token that overlaps a neighbour more) has
///    an empty token range; its label reaches no token.
///  * Spans (FrameNet) map to all tokens of the sequence that overlap them, without going through words.
///  * Encodings made by encode_words (pre-split words) carry offsets inside each word, not into one text:
///    align those with align_by_word_ids, which uses Encoding::word_ids directly.

#include <algorithm>  // std::min, std::max
#include <cstddef>    // std::size_t
#include <span>       // std::span
#include <vector>     // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/data/word_tokenizer.hpp"
#include "darkbert/tokenizer/encoding.hpp"

namespace darkbert {

/// Which pieces of a multi-piece word get its label (see the rules at the top).
enum class PieceRule { all_pieces, first_piece };

/// A half-open range of token positions [begin, end).
struct TokenRange {
  /// @{
  /// first token and one past the last
  std::size_t begin = 0, end = 0;
  /// @}
  /// No token.
  bool empty() const { return begin >= end; }
  /// Number of tokens.
  std::size_t size() const { return empty() ? 0 : end - begin; }
  /// Same range.
  friend bool operator==(const TokenRange&, const TokenRange&) = default;
};

/// Which word each token belongs to, and which tokens each word has.
struct WordTokenAlignment {
  std::vector<int> word_of_token;         ///< [L] word index per token, -1 for none
  std::vector<TokenRange> tokens_of_word;  ///< [W] the tokens of each word (empty when none)
};

/// The byte spans of words, for align_words_to_tokens.
inline std::vector<Span> word_spans(const std::vector<Word>& words) {
  std::vector<Span> out;
  out.reserve(words.size());
  for (const auto& w : words) out.push_back(w.span);
  return out;
}

namespace detail {

inline void check_encoding(const Encoding& e, const char* what) {
  require(e.offsets.size() == e.size() && e.sequence_ids.size() == e.size(), what, ": encoding has ", e.size(),
          " ids but ", e.offsets.size(), " offsets and ", e.sequence_ids.size(), " sequence ids");
}

inline std::size_t overlap(Span a, Span b) {
  const std::size_t lo = std::max(a.begin, b.begin), hi = std::min(a.end, b.end);
  return hi > lo ? hi - lo : 0;
}

inline WordTokenAlignment ranges_from_owners(std::vector<int> owner, std::size_t n_words) {
  WordTokenAlignment a;
  a.word_of_token = std::move(owner);
  a.tokens_of_word.assign(n_words, TokenRange{});
  for (std::size_t t = 0; t < a.word_of_token.size(); ++t) {
    const int w = a.word_of_token[t];
    if (w < 0) continue;
    auto& r = a.tokens_of_word[static_cast<std::size_t>(w)];
    if (r.empty()) r = {t, t + 1};
    else r.end = t + 1;
  }
  return a;
}

}  // namespace detail

/// Aligns words given by byte spans in the text of `sequence` (0 = first text, 1 = second of a pair).
/// `spans` must be sorted and non-overlapping (as tokenize_words gives them).
inline WordTokenAlignment align_words_to_tokens(const Encoding& e, std::span<const Span> spans, int sequence = 0) {
  detail::check_encoding(e, "align_words_to_tokens");
  for (std::size_t w = 0; w < spans.size(); ++w) {
    require(spans[w].begin <= spans[w].end, "align_words_to_tokens: word ", w, " has a reversed span [",
            spans[w].begin, ", ", spans[w].end, ")");
    require(w == 0 || spans[w - 1].end <= spans[w].begin, "align_words_to_tokens: words ", w - 1, " and ", w,
            " overlap or are out of order");
  }
  std::vector<int> owner(e.size(), -1);
  std::size_t first = 0;  // first word that can still overlap (tokens come in text order)
  for (std::size_t t = 0; t < e.size(); ++t) {
    const Span o = e.offsets[t];
    if (e.sequence_ids[t] != sequence || o.end <= o.begin) continue;
    while (first < spans.size() && spans[first].end <= o.begin) ++first;
    std::size_t best = 0;
    int best_word = -1;
    for (std::size_t w = first; w < spans.size() && spans[w].begin < o.end; ++w) {
      const std::size_t ov = detail::overlap(o, spans[w]);
      if (ov > best) {
        best = ov;
        best_word = static_cast<int>(w);
      }
    }
    owner[t] = best_word;
  }
  return detail::ranges_from_owners(std::move(owner), spans.size());
}

/// Aligns through Encoding::word_ids (for encode_words encodings, whose words are the caller's words).
inline WordTokenAlignment align_by_word_ids(const Encoding& e, std::size_t n_words, int sequence = 0) {
  require(e.word_ids.size() == e.size() && e.sequence_ids.size() == e.size(), "align_by_word_ids: encoding has ",
          e.size(), " ids but ", e.word_ids.size(), " word ids and ", e.sequence_ids.size(), " sequence ids");
  std::vector<int> owner(e.size(), -1);
  for (std::size_t t = 0; t < e.size(); ++t) {
    if (e.sequence_ids[t] != sequence || e.word_ids[t] < 0) continue;
    require(static_cast<std::size_t>(e.word_ids[t]) < n_words, "align_by_word_ids: token ", t, " has word id ",
            e.word_ids[t], " but there are only ", n_words, " words");
    owner[t] = e.word_ids[t];
  }
  return detail::ranges_from_owners(std::move(owner), n_words);
}

/// One label per token from one label per word (see PieceRule); tokens of no word get `fill`.
/// @code
/// auto neg = project_word_labels(align, is_negation_per_word, 0);   // std::vector<int>
/// @endcode
template <class Label>
std::vector<Label> project_word_labels(const WordTokenAlignment& a, const std::vector<Label>& word_labels,
                                       const Label& fill, PieceRule rule = PieceRule::all_pieces) {
  require(word_labels.size() == a.tokens_of_word.size(), "project_word_labels: ", word_labels.size(),
          " labels for ", a.tokens_of_word.size(), " words");
  std::vector<Label> out(a.word_of_token.size(), fill);
  for (std::size_t t = 0; t < out.size(); ++t) {
    const int w = a.word_of_token[t];
    if (w < 0) continue;
    const auto& r = a.tokens_of_word[static_cast<std::size_t>(w)];
    if (rule == PieceRule::all_pieces || r.begin == t) out[t] = word_labels[static_cast<std::size_t>(w)];
  }
  return out;
}

/// The tokens of `sequence` whose byte spans overlap `span` (bytes of that sequence's text), as a range;
/// empty when none does (e.g. truncated away).
inline TokenRange tokens_in_span(const Encoding& e, Span span, int sequence = 0) {
  detail::check_encoding(e, "tokens_in_span");
  TokenRange r;
  bool found = false;
  for (std::size_t t = 0; t < e.size(); ++t) {
    if (e.sequence_ids[t] != sequence || detail::overlap(e.offsets[t], span) == 0) continue;
    if (!found) r.begin = t;
    r.end = t + 1;
    found = true;
  }
  return r;
}

/// The tokens of a word range [first_word, end_word) of an alignment (e.g. a FrameNet element given in
/// words), or an empty range when those words have no tokens.
inline TokenRange tokens_of_words(const WordTokenAlignment& a, std::size_t first_word, std::size_t end_word) {
  require(first_word <= end_word && end_word <= a.tokens_of_word.size(), "tokens_of_words: word range [",
          first_word, ", ", end_word, ") outside 0..", a.tokens_of_word.size());
  TokenRange r;
  bool found = false;
  for (std::size_t w = first_word; w < end_word; ++w) {
    const auto& t = a.tokens_of_word[w];
    if (t.empty()) continue;
    if (!found) r.begin = t.begin;
    r.end = t.end;
    found = true;
  }
  return r;
}

}  // namespace darkbert
