#pragma once
/// @file
/// BERT's WordPiece tokenizer, in the two reference flavours:
///  - BertFlavour::hf     Hugging Face BertTokenizer (slow, transformers 4.3x): the special-token strings
///                        [UNK] [SEP] [PAD] [CLS] [MASK] in the text stay single tokens, lower-casing one
///                        character at a time, every C* character dropped, NFC, 100 characters per word;
///  - BertFlavour::google google-research/bert tokenization.py FullTokenizer: no special-token splitting,
///                        whole-word str.lower() (word-final Σ -> ς), only Cc/Cf dropped, no NFC,
///                        200 characters per word.
/// Both: drop U+0000/U+FFFD/control characters, whitespace -> space, spaces around CJK ideographs, split on
/// whitespace, lower-case + strip accents (NFD, drop Mn) when uncased, split on punctuation, then greedy
/// longest-match-first WordPiece ("##" continuation); an over-long or unmatchable word becomes one [UNK].
/// Every piece keeps the byte span of the original text it came from (through lower-casing, NFC, NFD).
///
/// @code
/// WordPieceTokenizer wp("vocab/bert-base-uncased/vocab.txt");           // uncased, HF flavour
/// wp.tokenize("Unaffable café!")   // {"una", "##ffa", "##ble", "cafe", "!"}
/// std::vector<TokenPiece> pieces;  wp.tokenize("café", pieces);       // span {0, 5}: all of "café"
/// @endcode

#include <algorithm>    // std::min, std::max
#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <filesystem>   // std::filesystem::path
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/tokenizer/detail/text_files.hpp"
#include "darkbert/tokenizer/token_piece.hpp"
#include "darkbert/tokenizer/unicode.hpp"

namespace darkbert {

/// Whose BERT tokenizer to match: Hugging Face's slow BertTokenizer or Google's tokenization.py.
enum class BertFlavour { hf, google };

/// Settings of a WordPiece tokenizer (HF names in the comments).
struct WordPieceOptions {
  bool lowercase = true;               ///< do_lower_case
  std::optional<bool> strip_accents;   ///< unset: strip exactly when lower-casing (HF default; Google's rule)
  BertFlavour flavour = BertFlavour::hf;  ///<  whose rules to follow
  std::size_t max_chars_per_word = 0;  ///< 0: flavour default (hf 100, google 200); longer words -> [UNK]
  bool tokenize_chinese_chars = true;  ///< put spaces around CJK ideographs
};

namespace detail {

/// The special tokens HF keeps whole, in the order it tries them.
inline constexpr std::array<std::string_view, 5> bert_special_tokens = {"[UNK]", "[SEP]", "[PAD]", "[CLS]",
                                                                        "[MASK]"};

inline bool bert_is_whitespace(char32_t cp) {
  if (cp == U' ' || cp == U'\t' || cp == U'\n' || cp == U'\r') return true;
  return cp >= 0x80 && unicode::category(cp) == unicode::Category::Zs;
}

inline bool bert_is_control(char32_t cp, BertFlavour flavour) {
  if (cp == U'\t' || cp == U'\n' || cp == U'\r') return false;
  const unicode::Category c = unicode::category(cp);
  if (flavour == BertFlavour::hf) return unicode::major_class(c) == 'C';
  return c == unicode::Category::Cc || c == unicode::Category::Cf;
}

inline bool bert_is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return cp >= 0x80 && unicode::is_punctuation(cp);
}

/// The "CJK Unified Ideographs" blocks BERT treats as one word per character.
inline bool bert_is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
         (cp >= 0x2B820 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/// Smallest span covering all characters that came from the input (inserted characters have empty spans).
inline Span covering_span(std::span<const unicode::TextChar> chars) {
  Span s{0, 0};
  bool any = false;
  for (const auto& c : chars) {
    if (c.begin == c.end) continue;
    if (!any) {
      s = {c.begin, c.end};
      any = true;
    } else {
      s.begin = std::min<std::size_t>(s.begin, c.begin);
      s.end = std::max<std::size_t>(s.end, c.end);
    }
  }
  return s;
}

}  // namespace detail

/// BERT's WordPiece tokenizer: basic tokenization then greedy longest-match-first pieces.
/// @code
/// darkbert::WordPieceTokenizer wp("bert-base-uncased/vocab.txt");
/// std::vector<std::string> tokens = wp.tokenize("Unaffable!");   // {"una", "##ffa", "##ble", "!"}
/// @endcode
class WordPieceTokenizer {
 public:
  /// Loads vocab.txt: one token per line, id = 0-based line number (a trailing "\r" is ignored).
  /// Errors name the file and line: missing file, empty line, duplicate token, invalid UTF-8, no [UNK].
  explicit WordPieceTokenizer(const std::filesystem::path& vocab_txt, WordPieceOptions options = {})
      : options_(options) {
    const std::string data = detail::read_text_file(vocab_txt, "vocab file");
    std::vector<std::string> tokens;
    std::size_t start = 0;
    while (start < data.size()) {
      std::size_t end = data.find('\n', start);
      if (end == std::string::npos) end = data.size();
      std::string line = data.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      tokens.push_back(std::move(line));
      start = end + 1;
    }
    init(std::move(tokens), vocab_txt.string());
  }

  /// From an in-memory vocabulary (token i has id i); `source` names it in errors.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options, std::string source = "vocab")
      : options_(options) {
    init(std::move(vocab), source);
  }

  /// Appends the pieces of `text` (no special tokens added); word indices count basic tokens from 0.
  /// Throws darkbert::error naming the byte offset on invalid UTF-8.
  void tokenize(std::string_view text, std::vector<TokenPiece>& out) const {
    std::vector<unicode::TextChar> chars;
    unicode::decode_utf8(text, chars);
    Workspace ws;
    int word = 0;
    if (options_.flavour == BertFlavour::google) {
      basic_tokenize(chars, ws, word, out);
      return;
    }
    std::size_t segment = 0;
    for (std::size_t i = 0; i < chars.size();) {
      const int special = chars[i].cp == U'[' ? match_special(chars, i) : -1;
      if (special < 0) {
        ++i;
        continue;
      }
      basic_tokenize(std::span(chars).subspan(segment, i - segment), ws, word, out);
      const std::size_t len = detail::bert_special_tokens[static_cast<std::size_t>(special)].size();
      push_special(special, detail::covering_span(std::span(chars).subspan(i, len)), word++, out);
      i += len;
      segment = i;
    }
    basic_tokenize(std::span(chars).subspan(segment), ws, word, out);
  }

  /// The token strings of `text`, e.g. {"hello", ",", "world", "!"}.
  std::vector<std::string> tokenize(std::string_view text) const {
    std::vector<TokenPiece> pieces;
    tokenize(text, pieces);
    return token_strings(pieces);
  }

  /// Number of tokens in the vocabulary.
  std::size_t vocab_size() const { return id_to_token_.size(); }
  /// The id of a token, or nullopt if it is not in the vocabulary.
  std::optional<int> find(std::string_view token) const {
    const auto it = token_to_id_.find(token);
    if (it == token_to_id_.end()) return std::nullopt;
    return it->second;
  }
  /// The id of a token; [UNK]'s id for unknown tokens (as HF convert_tokens_to_ids).
  int token_to_id(std::string_view token) const { return find(token).value_or(unk_id_); }
  /// The token string of an id; throws naming the vocabulary if it is outside it.
  const std::string& id_to_token(int id) const {
    require(id >= 0 && static_cast<std::size_t>(id) < id_to_token_.size(), source_, ": token id ", id,
            " is outside the vocabulary (size ", id_to_token_.size(), ")");
    return id_to_token_[static_cast<std::size_t>(id)];
  }
  /// The id of [UNK].
  int unk_id() const { return unk_id_; }
  /// The id of [CLS], if present.
  std::optional<int> cls_id() const { return find("[CLS]"); }
  /// The id of [SEP], if present.
  std::optional<int> sep_id() const { return find("[SEP]"); }
  /// The id of [PAD], if present.
  std::optional<int> pad_id() const { return find("[PAD]"); }
  /// The id of [MASK], if present.
  std::optional<int> mask_id() const { return find("[MASK]"); }
  /// The settings it was built with.
  const WordPieceOptions& options() const { return options_; }
  /// Where the vocabulary came from (for error messages).
  const std::string& source() const { return source_; }
  /// Longest word split into pieces; longer words become [UNK].
  std::size_t max_chars_per_word() const { return max_chars_; }

 private:
  struct Workspace {
    std::vector<unicode::TextChar> a, b, lowered, decomposed, word_chars;
    std::string bytes, key;
    std::vector<std::size_t> positions;
  };

  void init(std::vector<std::string> tokens, std::string source) {
    source_ = std::move(source);
    require(!tokens.empty(), source_, ": empty vocabulary");
    token_to_id_.reserve(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::string& t = tokens[i];
      if (t.empty()) fail(source_, ":", i + 1, ": empty token (every line must hold one token)");
      try {
        std::vector<unicode::TextChar> tmp;
        unicode::decode_utf8(t, tmp);
      } catch (const error& e) {
        fail(source_, ":", i + 1, ": ", e.what());
      }
      const auto [it, inserted] = token_to_id_.emplace(t, static_cast<int>(i));
      if (!inserted) fail(source_, ":", i + 1, ": duplicate token '", t, "' (first on line ", it->second + 1, ")");
      max_token_bytes_ = std::max(max_token_bytes_, t.size());
    }
    id_to_token_ = std::move(tokens);
    const auto unk = find("[UNK]");
    require(unk.has_value(), source_, ": no [UNK] token (WordPiece needs it for unknown words)");
    unk_id_ = *unk;
    max_chars_ = options_.max_chars_per_word != 0 ? options_.max_chars_per_word
                 : options_.flavour == BertFlavour::hf ? 100
                                                       : 200;
    strip_accents_ = options_.strip_accents.value_or(options_.lowercase);
  }

  /// Index of the special token starting at chars[i], or -1.
  static int match_special(const std::vector<unicode::TextChar>& chars, std::size_t i) {
    for (std::size_t s = 0; s < detail::bert_special_tokens.size(); ++s) {
      const std::string_view sp = detail::bert_special_tokens[s];
      if (i + sp.size() > chars.size()) continue;
      bool match = true;
      for (std::size_t k = 0; k < sp.size() && match; ++k)
        match = chars[i + k].cp == static_cast<char32_t>(static_cast<unsigned char>(sp[k]));
      if (match) return static_cast<int>(s);
    }
    return -1;
  }

  void push_special(int special, Span span, int word, std::vector<TokenPiece>& out) const {
    const std::string_view token = detail::bert_special_tokens[static_cast<std::size_t>(special)];
    out.push_back({token_to_id(token), token, span, word});
  }

  /// BasicTokenizer (+ WordPiece) on one segment free of special-token strings.
  void basic_tokenize(std::span<const unicode::TextChar> segment, Workspace& ws, int& word,
                      std::vector<TokenPiece>& out) const {
    const bool hf = options_.flavour == BertFlavour::hf;
    std::span<const unicode::TextChar> text = segment;
    if (hf && options_.lowercase) {  // HF lower-cases per character before basic tokenization
      unicode::lower_each(segment, ws.a);
      text = ws.a;
    }
    // clean: drop NUL, U+FFFD and control characters; whitespace -> space; spaces around CJK.
    ws.b.clear();
    for (const unicode::TextChar& c : text) {
      const char32_t cp = c.cp;
      if (cp == 0 || cp == 0xFFFD || detail::bert_is_control(cp, options_.flavour)) continue;
      if (detail::bert_is_whitespace(cp)) {
        ws.b.push_back({U' ', c.begin, c.end});
      } else if (options_.tokenize_chinese_chars && detail::bert_is_cjk(cp)) {
        ws.b.push_back({U' ', c.begin, c.begin});
        ws.b.push_back(c);
        ws.b.push_back({U' ', c.end, c.end});
      } else {
        ws.b.push_back(c);
      }
    }
    std::vector<unicode::TextChar>* normalized = &ws.b;
    if (hf) {
      unicode::nfc(ws.b, ws.a);
      normalized = &ws.a;
    }
    // split on whitespace (Python str.split()), then handle each word
    const std::vector<unicode::TextChar>& t = *normalized;
    std::size_t i = 0;
    while (i < t.size()) {
      if (unicode::is_python_space(t[i].cp)) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < t.size() && !unicode::is_python_space(t[j].cp)) ++j;
      const std::span<const unicode::TextChar> w(t.data() + i, j - i);
      i = j;
      if (hf) {  // never_split: a word that spells a special token (possible after cleaning) stays whole
        const int special = w.size() >= 5 && w[0].cp == U'[' ? match_special_exact(w) : -1;
        if (special >= 0) {
          push_special(special, detail::covering_span(w), word++, out);
          continue;
        }
      }
      std::span<const unicode::TextChar> cur = w;
      if (options_.lowercase) {
        unicode::lower_string(cur, ws.lowered);
        cur = ws.lowered;
      }
      if (strip_accents_) {
        unicode::nfd(cur, ws.decomposed);
        ws.word_chars.clear();
        for (const auto& c : ws.decomposed)
          if (c.cp < 0x300 || !unicode::is_nonspacing_mark(c.cp)) ws.word_chars.push_back(c);
        cur = ws.word_chars;
      }
      // split on punctuation: each punctuation character is a word of its own
      std::size_t start = 0;
      for (std::size_t k = 0; k < cur.size(); ++k) {
        if (!detail::bert_is_punctuation(cur[k].cp)) continue;
        if (k > start) wordpiece(cur.subspan(start, k - start), ws, word++, out);
        wordpiece(cur.subspan(k, 1), ws, word++, out);
        start = k + 1;
      }
      if (start < cur.size()) wordpiece(cur.subspan(start), ws, word++, out);
    }
  }

  int match_special_exact(std::span<const unicode::TextChar> w) const {
    for (std::size_t s = 0; s < detail::bert_special_tokens.size(); ++s) {
      const std::string_view sp = detail::bert_special_tokens[s];
      if (sp.size() != w.size()) continue;
      bool match = true;
      for (std::size_t k = 0; k < sp.size() && match; ++k)
        match = w[k].cp == static_cast<char32_t>(static_cast<unsigned char>(sp[k]));
      if (match) return static_cast<int>(s);
    }
    return -1;
  }

  /// Greedy longest-match-first WordPiece of one basic token.
  void wordpiece(std::span<const unicode::TextChar> w, Workspace& ws, int word, std::vector<TokenPiece>& out) const {
    const std::string_view unk = id_to_token_[static_cast<std::size_t>(unk_id_)];
    if (w.size() > max_chars_) {
      out.push_back({unk_id_, unk, detail::covering_span(w), word});
      return;
    }
    ws.bytes.clear();
    ws.positions.clear();
    for (const auto& c : w) {
      ws.positions.push_back(ws.bytes.size());
      unicode::append_utf8(ws.bytes, c.cp);
    }
    ws.positions.push_back(ws.bytes.size());
    const std::size_t n = w.size();
    const std::size_t mark = out.size();
    std::size_t start = 0;
    while (start < n) {
      std::size_t end = n;
      int found = -1;
      for (; end > start; --end) {
        const std::size_t len = ws.positions[end] - ws.positions[start];
        const std::string_view piece(ws.bytes.data() + ws.positions[start], len);
        std::string_view key = piece;
        if (start > 0) {
          if (len + 2 > max_token_bytes_) continue;
          ws.key.assign("##");
          ws.key.append(piece);
          key = ws.key;
        } else if (len > max_token_bytes_) {
          continue;
        }
        const auto it = token_to_id_.find(key);
        if (it != token_to_id_.end()) {
          found = it->second;
          break;
        }
      }
      if (found < 0) {  // an unmatchable remainder makes the whole word [UNK]
        out.resize(mark);
        out.push_back({unk_id_, unk, detail::covering_span(w), word});
        return;
      }
      out.push_back({found, id_to_token_[static_cast<std::size_t>(found)],
                     detail::covering_span(w.subspan(start, end - start)), word});
      start = end;
    }
  }

  WordPieceOptions options_;
  std::string source_;
  std::vector<std::string> id_to_token_;
  detail::StringMap<int> token_to_id_;
  std::size_t max_token_bytes_ = 0;
  std::size_t max_chars_ = 100;
  bool strip_accents_ = true;
  int unk_id_ = 0;
};

}  // namespace darkbert
