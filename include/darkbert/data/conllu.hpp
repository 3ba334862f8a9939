#pragma once
/// @file
/// CoNLL-U (Universal Dependencies) files: sentences of words with UPOS, heads and relations, plus the
/// sentence comments (sent_id, text, newdoc/newpar), multi-word tokens ("don't" = do + n't) and empty nodes.
/// Reading then writing a valid file gives it back byte for byte.
///
/// @code
/// auto sentences = darkbert::read_conllu("ud/en_ewt-ud-dev.conllu");
/// for (const auto& s : sentences)
///   for (const auto& w : s.words) if (w.deprel == "nsubj") use(w.form, s.words[w.head - 1].form);
/// @endcode
///
/// Errors name the file and line: wrong column count, bad ID/HEAD, ids out of order, a multi-word range
/// that does not fit, a comment inside a sentence, a sentence longer than max_conllu_sentence_lines.

#include <charconv>     // std::from_chars
#include <cstddef>      // std::size_t
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ifstream, std::ofstream
#include <functional>   // std::function
#include <istream>      // std::istream
#include <ostream>      // std::ostream
#include <sstream>      // std::ostringstream
#include <string>       // std::string, std::getline
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"

namespace darkbert {

/// The most word lines (words, multi-word tokens and empty nodes) one CoNLL-U sentence may have. The longest
/// sentences of the UD treebanks have a few hundred words; a file whose "sentence" runs past this bound
/// (e.g. a 50 MB file without blank lines) is refused at the line that crosses it, before it costs memory
/// or annotation time.
inline constexpr std::size_t max_conllu_sentence_lines = 10000;

namespace detail {

/// The spaces that follow a token, from its MISC column: "" for SpaceAfter=No, the decoded value of
/// SpacesAfter= (`\s` space, `\t`, `\n`, `\r`, `\p` for |, `\\`, `\uXXXX`), else one space.
inline std::string spaces_after(std::string_view misc) {
  std::size_t start = 0;
  while (start <= misc.size()) {
    auto bar = misc.find('|', start);
    if (bar == std::string_view::npos) bar = misc.size();
    const auto item = misc.substr(start, bar - start);
    if (item == "SpaceAfter=No") return "";
    if (item.rfind("SpacesAfter=", 0) == 0) {
      const auto v = item.substr(12);
      std::string out;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '\\' || i + 1 == v.size()) {
          out.push_back(v[i]);
          continue;
        }
        const char c = v[++i];
        if (c == 's') out.push_back(' ');
        else if (c == 't') out.push_back('\t');
        else if (c == 'n') out.push_back('\n');
        else if (c == 'r') out.push_back('\r');
        else if (c == 'p') out.push_back('|');
        else if (c == 'u' && i + 4 < v.size()) {
          unsigned cp = 0;
          auto [end, ec] = std::from_chars(v.data() + i + 1, v.data() + i + 5, cp, 16);
          if (ec != std::errc() || end != v.data() + i + 5) {
            out += "\\u";
            continue;
          }
          i += 4;
          if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
        } else {
          out.push_back(c);
        }
      }
      return out;
    }
    start = bar + 1;
  }
  return " ";
}

}  // namespace detail

/// One syntactic word (an integer ID line). Columns are kept as text; "_" stays "_".
struct ConlluWord {
  int id = 0;  ///< 1-based position in the sentence
  /// @{
  /// columns FORM, LEMMA, UPOS, XPOS and FEATS
  std::string form, lemma, upos, xpos, feats;
  /// @}
  int head = -1;  ///< 0 = root, -1 = "_" (no tree)
  /// @{
  /// columns DEPREL, DEPS and MISC
  std::string deprel, deps, misc;
  /// @}

  /// False when MISC has SpaceAfter=No.
  bool space_after() const { return misc.find("SpaceAfter=No") == std::string::npos; }
  /// What follows the word in the text: "", " ", or the decoded SpacesAfter= value.
  std::string spaces_after() const { return detail::spaces_after(misc); }
};

/// A surface token that spans several words (ID "first-last"), e.g. "don't" over do + n't.
struct ConlluMultiwordToken {
  /// @{
  /// the first and last word IDs it spans
  int first = 0, last = 0;
  /// @}
  std::string form;  ///<  the surface form, e.g. "don't"
  std::string columns;  ///< the remaining 8 columns, tab-joined, kept verbatim (usually "_\t..._\tMISC")
  /// False when MISC has SpaceAfter=No.
  bool space_after() const { return columns.find("SpaceAfter=No") == std::string::npos; }
  /// What follows the token in the text: "", " ", or the decoded SpacesAfter= value.
  std::string spaces_after() const {
    const auto tab = columns.rfind('\t');
    return detail::spaces_after(tab == std::string::npos ? std::string_view(columns) : std::string_view(columns).substr(tab + 1));
  }
};

/// An empty node of the enhanced graph (ID "i.k"), kept verbatim; it follows word i.
struct ConlluEmptyNode {
  int after = 0;     ///< the integer part of the ID
  std::string line;  ///< the whole line, for writing back
};

/// One sentence of a CoNLL-U file, with everything needed to write it back byte for byte.
struct ConlluSentence {
  std::vector<std::string> comments;  ///< raw comment lines, "# " included, in file order
  std::string sent_id;                ///< from "# sent_id = ..."
  std::string text;                   ///< from "# text = ..."
  std::string document_id;            ///< id of the document this sentence belongs to (from # newdoc id)
  std::size_t document = 0;           ///< 0-based index of that document in the file
  bool starts_document = false;       ///< this sentence carries a "# newdoc" comment
  bool starts_paragraph = false;      ///< ... a "# newpar" comment
  std::vector<ConlluWord> words;  ///<  the syntactic words, in order
  std::vector<ConlluMultiwordToken> multiword_tokens;  ///<  tokens spanning several words
  std::vector<ConlluEmptyNode> empty_nodes;  ///<  enhanced-graph empty nodes
  std::size_t line = 0;               ///< 1-based line of the sentence's first line
};

namespace detail {

inline bool parse_int(std::string_view text, int& value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

inline std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      parts.push_back(line.substr(start));
      return parts;
    }
    parts.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

inline std::string comment_value(std::string_view comment, std::string_view key) {
  // "# key = value" (also "# key" without value, e.g. "# newdoc").
  std::string_view rest = comment.substr(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.substr(0, key.size()) != key) return {};
  rest.remove_prefix(key.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty() || rest.front() != '=') return {};
  rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return std::string(rest);
}

inline bool comment_has_key(std::string_view comment, std::string_view key) {
  std::string_view rest = comment.substr(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.substr(0, key.size()) != key) return false;
  rest.remove_prefix(key.size());
  return rest.empty() || rest.front() == ' ' || rest.front() == '=';
}

class ConlluParser {
 public:
  ConlluParser(std::string name, std::function<void(ConlluSentence&&)> sink) : name_(std::move(name)), sink_(std::move(sink)) {}

  void line(std::string_view text) {
    ++line_no_;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty()) {
      finish();
      return;
    }
    if (!open_) start();
    if (text.front() == '#') {
      if (!current_.words.empty() || !current_.multiword_tokens.empty())
        fail(name_, ":", line_no_, ": comment line inside a sentence (comments must come before the first word)");
      current_.comments.emplace_back(text);
      if (comment_has_key(text, "newdoc")) {
        current_.starts_document = true;
        current_.document_id = comment_value(text, "newdoc id");
        if (emitted_ > 0) ++document_;
        document_id_ = current_.document_id;
      } else if (comment_has_key(text, "newpar")) {
        current_.starts_paragraph = true;
      } else if (comment_has_key(text, "sent_id")) {
        current_.sent_id = comment_value(text, "sent_id");
      } else if (comment_has_key(text, "text")) {
        current_.text = comment_value(text, "text");
      }
      return;
    }
    if (current_.words.size() + current_.multiword_tokens.size() + current_.empty_nodes.size() >=
        max_conllu_sentence_lines)
      fail(name_, ":", line_no_, ": the sentence starting at line ", current_.line, " has more than ",
           max_conllu_sentence_lines, " word lines (limit darkbert::max_conllu_sentence_lines); sentences are "
           "separated by blank lines");
    auto cols = split_tabs(text);
    if (cols.size() != 10)
      fail(name_, ":", line_no_, ": expected 10 tab-separated columns, got ", cols.size());
    std::string_view id = cols[0];
    const auto n = static_cast<int>(current_.words.size());
    if (auto dash = id.find('-'); dash != std::string_view::npos) {
      ConlluMultiwordToken t;
      if (!parse_int(id.substr(0, dash), t.first) || !parse_int(id.substr(dash + 1), t.last))
        fail(name_, ":", line_no_, ": bad multi-word token ID '", id, "'");
      if (t.first != n + 1 || t.last < t.first)
        fail(name_, ":", line_no_, ": multi-word token range ", id, " must start at the next word (", n + 1,
             ") and not end before it");
      if (pending_range_end_ > n)
        fail(name_, ":", line_no_, ": multi-word token ", id, " overlaps the previous one");
      pending_range_end_ = t.last;
      pending_range_line_ = line_no_;
      t.form = std::string(cols[1]);
      for (std::size_t k = 2; k < 10; ++k) {
        if (k > 2) t.columns += '\t';
        t.columns += cols[k];
      }
      current_.multiword_tokens.push_back(std::move(t));
      return;
    }
    if (auto dot = id.find('.'); dot != std::string_view::npos) {
      int after = 0, sub = 0;
      if (!parse_int(id.substr(0, dot), after) || !parse_int(id.substr(dot + 1), sub) || after != n || sub < 1)
        fail(name_, ":", line_no_, ": empty node ID '", id, "' must be ", n, ".k and follow word ", n);
      current_.empty_nodes.push_back({after, std::string(text)});
      return;
    }
    ConlluWord w;
    if (!parse_int(id, w.id)) fail(name_, ":", line_no_, ": bad word ID '", id, "'");
    if (w.id != n + 1) fail(name_, ":", line_no_, ": word ID ", w.id, " out of order (expected ", n + 1, ")");
    if (!current_.empty_nodes.empty() && current_.empty_nodes.back().after == n + 1)
      fail(name_, ":", line_no_, ": word ", w.id, " comes after its own empty node");
    w.form = std::string(cols[1]);
    w.lemma = std::string(cols[2]);
    w.upos = std::string(cols[3]);
    w.xpos = std::string(cols[4]);
    w.feats = std::string(cols[5]);
    if (cols[6] != "_") {
      if (!parse_int(cols[6], w.head) || w.head < 0)
        fail(name_, ":", line_no_, ": bad HEAD '", cols[6], "' (expected a word number or _)");
    }
    w.deprel = std::string(cols[7]);
    w.deps = std::string(cols[8]);
    w.misc = std::string(cols[9]);
    current_.words.push_back(std::move(w));
  }

  void finish() {
    if (!open_) return;
    open_ = false;
    auto& s = current_;
    if (s.words.empty()) fail(name_, ":", s.line, ": sentence without words");
    const int n = static_cast<int>(s.words.size());
    if (pending_range_end_ > n)
      fail(name_, ":", pending_range_line_, ": multi-word token ends at word ", pending_range_end_,
           " but the sentence has ", n, " words");
    for (const auto& w : s.words)
      if (w.head > n)
        fail(name_, ":", s.line, ": word ", w.id, " has HEAD ", w.head, " but the sentence has ", n, " words");
    if (!s.starts_document) s.document_id = document_id_;
    s.document = document_;
    ++emitted_;
    sink_(std::move(s));
  }

 private:
  void start() {
    current_ = ConlluSentence{};
    current_.line = line_no_;
    pending_range_end_ = 0;
    open_ = true;
  }

  std::string name_;
  std::function<void(ConlluSentence&&)> sink_;
  ConlluSentence current_;
  std::size_t line_no_ = 0;
  bool open_ = false;
  int pending_range_end_ = 0;
  std::size_t pending_range_line_ = 0;
  std::size_t document_ = 0;
  std::size_t emitted_ = 0;
  std::string document_id_;
};

}  // namespace detail

/// Streams the sentences of a CoNLL-U file to `callback` (constant memory for any file size).
inline void for_each_conllu_sentence(std::istream& in, const std::string& name,
                                     const std::function<void(ConlluSentence&&)>& callback) {
  detail::ConlluParser parser(name, callback);
  std::string line;
  while (std::getline(in, line)) parser.line(line);
  require(!in.bad(), name, ": read error");
  parser.finish();
}

/// Reads CoNLL-U from a stream; errors name `name` and the line.
inline std::vector<ConlluSentence> read_conllu(std::istream& in, const std::string& name) {
  std::vector<ConlluSentence> out;
  for_each_conllu_sentence(in, name, [&](ConlluSentence&& s) { out.push_back(std::move(s)); });
  return out;
}

/// Reads a CoNLL-U file.
/// @code
/// auto sentences = darkbert::read_conllu(darkbert::data_file("ud/en_ewt-ud-dev.conllu"));
/// @endcode
inline std::vector<ConlluSentence> read_conllu(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  require(static_cast<bool>(in), file.string(), ": cannot open for reading");
  return read_conllu(in, file.string());
}

/// Writes sentences in CoNLL-U order: comments, then for each word its multi-word token line (if one starts
/// there), the word, then its empty nodes; a blank line ends each sentence.
inline void write_conllu(std::ostream& out, const std::vector<ConlluSentence>& sentences) {
  for (const auto& s : sentences) {
    for (const auto& c : s.comments) out << c << '\n';
    std::size_t m = 0, e = 0;
    for (const auto& w : s.words) {
      while (m < s.multiword_tokens.size() && s.multiword_tokens[m].first == w.id) {
        const auto& t = s.multiword_tokens[m++];
        out << t.first << '-' << t.last << '\t' << t.form << '\t' << t.columns << '\n';
      }
      out << w.id << '\t' << w.form << '\t' << w.lemma << '\t' << w.upos << '\t' << w.xpos << '\t' << w.feats << '\t';
      if (w.head < 0)
        out << '_';
      else
        out << w.head;
      out << '\t' << w.deprel << '\t' << w.deps << '\t' << w.misc << '\n';
      while (e < s.empty_nodes.size() && s.empty_nodes[e].after == w.id) out << s.empty_nodes[e++].line << '\n';
    }
    out << '\n';
  }
}

/// Crash-safe: the file is replaced only once the whole text is on disk (core/atomic_file.hpp).
inline void write_conllu(const std::filesystem::path& file, const std::vector<ConlluSentence>& sentences) {
  std::ostringstream text;
  write_conllu(text, sentences);
  write_file_atomically(file, text.view());
}

/// Surface tokens of a sentence: multi-word tokens as one token, other words as themselves. Each entry is
/// {form, first word index, last word index (0-based, inclusive), space after}.
struct ConlluSurfaceToken {
  std::string form;  ///<  the surface form
  /// @{
  /// indices into ConlluSentence::words of its first and last word
  std::size_t first_word = 0, last_word = 0;
  /// @}
  bool space_after = true;  ///<  whether a space follows in the text
  std::string spaces_after = " ";  ///< what follows in the text (SpaceAfter=No: "", SpacesAfter=...)
};

/// The sentence as written: multiword tokens as one token, other words as themselves.
inline std::vector<ConlluSurfaceToken> surface_tokens(const ConlluSentence& s) {
  std::vector<ConlluSurfaceToken> out;
  std::size_t m = 0;
  for (std::size_t i = 0; i < s.words.size();) {
    if (m < s.multiword_tokens.size() && s.multiword_tokens[m].first == static_cast<int>(i) + 1) {
      const auto& t = s.multiword_tokens[m++];
      out.push_back({t.form, i, static_cast<std::size_t>(t.last - 1), t.space_after(), t.spaces_after()});
      i = static_cast<std::size_t>(t.last);
      continue;
    }
    out.push_back({s.words[i].form, i, i, s.words[i].space_after(), s.words[i].spaces_after()});
    ++i;
  }
  return out;
}

/// The sentence text rebuilt from its surface tokens and their MISC spacing (SpaceAfter=No, SpacesAfter=);
/// equals "# text" in UD releases.
inline std::string text_from_tokens(const ConlluSentence& s) {
  std::string text;
  const auto tokens = surface_tokens(s);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    text += tokens[i].form;
    if (i + 1 < tokens.size()) text += tokens[i].spaces_after;
  }
  return text;
}

}  // namespace darkbert
