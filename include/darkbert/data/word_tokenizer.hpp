#pragma once
/// @file
/// English word tokenizer in the style of UD English EWT / the Penn Treebank, for annotating raw text (GLUE
/// inputs). Every word keeps its byte span in the input, so word labels can be projected onto WordPiece/BPE
/// tokens through Encoding::offsets (see projection.hpp).
///
/// @code
/// auto words = darkbert::tokenize_words("I don't think it's $2.50, Mr. Smith.");
/// // I | do | n't | think | it | 's | $ | 2.50 | , | Mr. | Smith | .
/// @endcode
///
/// Rules, applied to each whitespace-separated chunk:
///  1. Kept whole: URLs (scheme:// or www.), e-mail addresses, emoticons (:) :( :-) ;) :D :P <3), numbers
///     with inner . , : / - (2.50, 1,000, 10:30, 1/2, 555-1234), abbreviations (Mr. Dr. etc. e.g. U.S. and
///     any single letters with dots).
///  2. Leading opening punctuation is split off one character at a time: " ' ` ( [ { < “ ‘ « $ £ € ¿ ¡ *.
///  3. Trailing punctuation is split off: runs of . ! ? stay together ("...", "?!"), a final "." stays on a
///     listed abbreviation; also , ; : % ) ] } > " ' ” ’ » * and … .
///  4. Clitics become words: n't ('t after n), 's 'm 'd 'll 're 've (with ' or ’): don't = do n't,
///     can't = ca n't, won't = wo n't; cannot = can not, gonna = gon na, wanna = wan na, gotta = got ta,
///     and apostrophe-less dont/didnt/doesnt/isnt/cant/wont/... = do nt, ...
///  5. Inside a word, - / , : ; ! ? " ( ) [ ] and Unicode dashes are split off as words, except between two
///     digits (555-1234, 1/2, 1,000, 10:30); -- and longer dash runs stay one word.
/// Periods inside a word (U.S, 2.5, example.com) and & (AT&T) stay. Limitations: no sentence splitting, no
/// special handling of hashtags, and a listed abbreviation that ends a sentence keeps its period.
///
/// Work is linear in the text: the whole-chunk tests of rule 1 run only on chunks of at most
/// max_protected_bytes (longer ones are split by the punctuation rules alone), and a text that would give
/// more than max_sentence_words words is refused as soon as the tokenizer gets there.

#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <initializer_list>  // std::initializer_list (small string sets)
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"          // darkbert::fail (the word limit)
#include "darkbert/tokenizer/encoding.hpp"

namespace darkbert {

/// The most words tokenize_words returns for one text, and the most words the annotator labels in one
/// sentence (data/annotator.hpp). UD English EWT's longest sentence has 159 words and GLUE's longest texts a
/// few hundred; a longer "sentence" is refused with an error naming this limit, before the work it would
/// cost (the tagger builds about 40 feature strings per word).
inline constexpr std::size_t max_sentence_words = 10000;

/// The longest whitespace-separated chunk that rule 1 (URL, e-mail, number, abbreviation, clitic) is tried
/// on. Those tests read the whole chunk, and the punctuation rules peel a chunk one character at a time, so
/// without this bound a chunk of n punctuation marks would cost O(n^2).
inline constexpr std::size_t max_protected_bytes = 4096;

/// A word of the annotator's tokenizer and where it is in the input.
struct Word {
  std::string form;  ///< the bytes of the input covered by span
  Span span;         ///< half-open byte range in the input text
};

namespace detail {

inline bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline char lower_ascii_char(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = lower_ascii_char(c);
  return out;
}

/// Length in bytes of the UTF-8 sequence starting with byte c (1 for invalid bytes).
inline std::size_t utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

/// Length of the last UTF-8 character of s.
inline std::size_t last_char_length(std::string_view s) {
  std::size_t n = 1;
  while (n < s.size() && n < 4 && (static_cast<unsigned char>(s[s.size() - n]) & 0xC0) == 0x80) ++n;
  return n;
}

inline bool one_of(std::string_view ch, std::initializer_list<std::string_view> set) {
  for (auto s : set)
    if (ch == s) return true;
  return false;
}

inline constexpr std::array<std::string_view, 52> abbreviations = {
    "mr.",   "mrs.", "ms.",   "dr.",   "prof.", "st.",   "jr.",   "sr.",   "inc.",   "ltd.",   "co.",
    "corp.", "vs.",  "etc.",  "e.g.",  "i.e.",  "a.m.",  "p.m.",  "jan.",  "feb.",   "mar.",   "apr.",
    "jun.",  "jul.", "aug.",  "sep.",  "sept.", "oct.",  "nov.",  "dec.",  "no.",    "mt.",    "ft.",
    "gov.",  "gen.", "rep.",  "sen.",  "col.",  "lt.",   "sgt.",  "capt.", "approx.", "dept.", "est.",
    "fig.",  "vol.", "u.s.",  "u.k.",  "d.c.",  "ave.",  "blvd.", "cf."};

inline bool is_abbreviation(std::string_view word) {
  const auto lower = lower_ascii(word);
  for (auto a : abbreviations)
    if (lower == a) return true;
  // single letters with dots: U.S.A., A.
  if (word.size() >= 2 && word.back() == '.') {
    bool ok = true;
    for (std::size_t i = 0; i < word.size(); ++i)
      ok = ok && ((i % 2 == 0) ? is_ascii_alpha(word[i]) : word[i] == '.');
    if (ok && word.size() % 2 == 0) return true;
  }
  return false;
}

inline bool is_url_or_email(std::string_view w) {
  const auto lower = lower_ascii(w);
  if (lower.find("://") != std::string::npos || lower.rfind("www.", 0) == 0) return true;
  const auto at = w.find('@');
  if (at != std::string_view::npos && at > 0 && w.find('.', at) != std::string_view::npos &&
      w.find('.', at) + 1 < w.size())
    return true;
  return false;
}

inline bool is_emoticon(std::string_view w) {
  return one_of(w, {":)", ":(", ":-)", ":-(", ";)", ";-)", ":D", ":P", ":p", ":-D", ":-P", "<3", ":/", "(:", "):"});
}

/// 2.50  1,000  10:30  1/2/2004  555-1234  +1  (digits with single inner separators between digits)
inline bool is_number(std::string_view w) {
  std::size_t i = 0;
  if (!w.empty() && (w[0] == '+' || w[0] == '-')) i = 1;
  if (i >= w.size() || !is_ascii_digit(w[i])) return false;
  for (; i < w.size(); ++i) {
    const char c = w[i];
    if (is_ascii_digit(c)) continue;
    if ((c == '.' || c == ',' || c == ':' || c == '/' || c == '-') && i + 1 < w.size() && is_ascii_digit(w[i + 1]) &&
        is_ascii_digit(w[i - 1]))
      continue;
    return false;
  }
  return true;
}

/// A clitic standing alone, as in pre-tokenized text ("it 's", "do n't").
inline bool is_clitic(std::string_view w) {
  std::string lower = lower_ascii(w);
  if (lower.rfind("’", 0) == 0) lower.replace(0, std::string_view("’").size(), "'");
  if (lower == "n’t") lower = "n't";
  return one_of(lower, {"'s", "'m", "'d", "'ll", "'re", "'ve", "n't"});
}

inline bool is_protected(std::string_view w) {
  if (w.size() > max_protected_bytes) return false;  // keeps the peeling loop linear (see max_protected_bytes)
  return is_url_or_email(w) || is_emoticon(w) || is_number(w) || is_abbreviation(w) || is_clitic(w);
}

class WordSplitter {
 public:
  WordSplitter(std::string_view text, std::vector<Word>& out, std::size_t max_words)
      : text_(text), out_(out), max_words_(max_words) {}

  void emit(std::size_t b, std::size_t e) {
    if (b >= e) return;
    check_count(0);
    out_.push_back({std::string(text_.substr(b, e - b)), {b, e}});
  }

  /// Refuses the text once it has more words than allowed (`pending` words are waiting to be emitted).
  void check_count(std::size_t pending) const {
    if (out_.size() + pending >= max_words_)
      fail("tokenize_words: the text (", text_.size(), " bytes) has more than ", max_words_,
           " words (limit darkbert::max_sentence_words); annotate it sentence by sentence");
  }

  void chunk(std::size_t b, std::size_t e) {
    std::vector<std::pair<std::size_t, std::size_t>> suffixes;  // peeled from the end, in reverse order
    while (b < e) {
      std::string_view w = text_.substr(b, e - b);
      if (is_protected(w)) {
        // A URL or address followed by sentence punctuation: "see www.x.org," -> www.x.org ,
        if (w.size() > 1 && is_url_or_email(w) && std::string_view(",.;:!?)]}\"'").find(w.back()) != std::string_view::npos) {
          check_count(suffixes.size());
          suffixes.push_back({e - 1, e});
          --e;
          continue;
        }
        break;
      }
      // 2. leading opening punctuation
      const std::size_t first_len = utf8_length(static_cast<unsigned char>(w[0]));
      std::string_view first = w.substr(0, first_len);
      if (w.size() > first_len && one_of(first, {"\"", "'", "`", "(", "[", "{", "<", "“", "‘", "«", "$", "£", "€", "¿", "¡", "*"})) {
        emit(b, b + first_len);
        b += first_len;
        continue;
      }
      // 3. trailing punctuation
      if (w.size() > 1) {
        const char last = w.back();
        if (last == '.' || last == '!' || last == '?') {
          std::size_t k = w.size();
          while (k > 0 && (w[k - 1] == '.' || w[k - 1] == '!' || w[k - 1] == '?')) --k;
          if (k == 0) break;  // the whole chunk is a punctuation run
          if (w.size() - k == 1 && last == '.' && w.size() <= max_protected_bytes && is_abbreviation(w)) break;
          check_count(suffixes.size());
          suffixes.push_back({b + k, e});
          e = b + k;
          continue;
        }
        const std::size_t last_len = last_char_length(w);
        std::string_view lastc = w.substr(w.size() - last_len);
        if (w.size() > last_len &&
            one_of(lastc, {",", ";", ":", "%", ")", "]", "}", ">", "\"", "'", "”", "’", "»", "*", "…"})) {
          // keep the apostrophe of a clitic-free possessive? EWT splits it: parents' = parents '
          check_count(suffixes.size());
          suffixes.push_back({e - last_len, e});
          e -= last_len;
          continue;
        }
      }
      break;
    }
    if (b < e) core(b, e);
    for (auto it = suffixes.rbegin(); it != suffixes.rend(); ++it) emit(it->first, it->second);
  }

 private:
  /// 4. clitics and fused forms, then 5. inner punctuation.
  void core(std::size_t b, std::size_t e) {
    std::string_view w = text_.substr(b, e - b);
    if (is_protected(w)) {
      emit(b, e);
      return;
    }
    const auto lower = lower_ascii(w);
    struct Fused {
      std::string_view word;
      std::size_t split;
    };
    static constexpr std::array<Fused, 4> fused = {{{"cannot", 3}, {"gonna", 3}, {"wanna", 3}, {"gotta", 3}}};
    for (const auto& f : fused)
      if (lower == f.word) {
        emit(b, b + f.split);
        emit(b + f.split, e);
        return;
      }
    static constexpr std::array<std::string_view, 18> nt_stems = {
        "do", "does", "did", "is", "are", "was", "were", "have", "has", "had", "could", "would", "should", "ca",
        "wo", "ai", "must", "need"};
    if (lower.size() > 2 && lower.compare(lower.size() - 2, 2, "nt") == 0) {
      const auto stem = std::string_view(lower).substr(0, lower.size() - 2);
      for (auto s : nt_stems)
        if (stem == s) {
          emit(b, e - 2);
          emit(e - 2, e);
          return;
        }
    }
    // n't / n’t
    for (std::string_view apos : {std::string_view("'"), std::string_view("’")}) {
      std::string nt(1, 'n');
      nt += apos;
      nt += 't';
      if (lower.size() > nt.size() && lower.compare(lower.size() - nt.size(), nt.size(), nt) == 0 &&
          is_ascii_alpha(lower[lower.size() - nt.size() - 1])) {
        inner(b, e - nt.size());
        emit(e - nt.size(), e);
        return;
      }
      for (std::string_view clitic : {"s", "m", "d", "ll", "re", "ve"}) {
        std::string c(apos);
        c += clitic;
        if (lower.size() > c.size() && lower.compare(lower.size() - c.size(), c.size(), c) == 0) {
          inner(b, e - c.size());
          emit(e - c.size(), e);
          return;
        }
      }
    }
    inner(b, e);
  }

  void inner(std::size_t b, std::size_t e) {
    std::string_view w = text_.substr(b, e - b);
    if (is_protected(w)) {
      emit(b, e);
      return;
    }
    std::size_t start = b, i = b;
    while (i < e) {
      const std::size_t len = utf8_length(static_cast<unsigned char>(text_[i]));
      std::string_view ch = text_.substr(i, len);
      const bool digit_before = i > b && is_ascii_digit(text_[i - 1]);
      const bool digit_after = i + len < e && is_ascii_digit(text_[i + len]);
      bool split = false;
      if (ch == "-") {
        split = !(digit_before && digit_after);
        if (split && i + 1 < e && text_[i + 1] == '-') {  // a run of dashes is one word
          emit(start, i);
          std::size_t j = i;
          while (j < e && text_[j] == '-') ++j;
          emit(i, j);
          start = i = j;
          continue;
        }
      } else if (ch == "/" || ch == "," || ch == ":") {
        split = !(digit_before && digit_after);
      } else if (one_of(ch, {";", "!", "?", "\"", "(", ")", "[", "]", "–", "—", "“", "”"})) {
        split = true;
      }
      if (split) {
        emit(start, i);
        emit(i, i + len);
        start = i + len;
      }
      i += len;
    }
    emit(start, e);
  }

  std::string_view text_;
  std::vector<Word>& out_;
  std::size_t max_words_;
};

inline bool is_space_at(std::string_view text, std::size_t i, std::size_t& len) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
    len = 1;
    return true;
  }
  // U+00A0 no-break space, U+2000..U+200B spaces, U+3000 ideographic space
  if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xA0) {
    len = 2;
    return true;
  }
  if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
      static_cast<unsigned char>(text[i + 2]) <= 0x8B) {
    len = 3;
    return true;
  }
  if (c == 0xE3 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
      static_cast<unsigned char>(text[i + 2]) == 0x80) {
    len = 3;
    return true;
  }
  return false;
}

}  // namespace detail

/// Splits `text` into words with byte spans (see the rules at the top of this header). A text with more than
/// `max_words` words is refused (darkbert::error naming the limit) as soon as the count passes it.
inline std::vector<Word> tokenize_words(std::string_view text, std::size_t max_words = max_sentence_words) {
  std::vector<Word> words;
  detail::WordSplitter splitter(text, words, max_words);
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t len = 0;
    if (detail::is_space_at(text, i, len)) {
      i += len;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && !detail::is_space_at(text, j, len)) j += detail::utf8_length(static_cast<unsigned char>(text[j]));
    if (j > text.size()) j = text.size();
    splitter.chunk(i, j);
    i = j;
  }
  return words;
}

}  // namespace darkbert
